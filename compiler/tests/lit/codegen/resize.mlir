// RUN: vtpu-translate --tpu-to-asm --config=tiny-8x8 %s | FileCheck %s

// A nearest 2x upsampling (docs/compiler.md): integer upsampling of a row is one two-level
// copy (each of the 2 source pixels 2 times: source stride 0, then 16 bytes), one per
// output row, output rows 0 and 1 both reading input row 0.
// CHECK: .desc [[UP:d[0-9]+]] bytes=16 dim=[2, 0, 16] dim=[2, 16, 32]
// CHECK: .tag "up"
// CHECK: li r1, 0 ||
// CHECK-NEXT: dma.copy desc=[[UP]]
// CHECK: li r1, 0 ||
// CHECK-NEXT: dma.copy desc=[[UP]]
// CHECK: li r1, 32 ||
// CHECK-NEXT: dma.copy desc=[[UP]]
// CHECK: li r1, 32 ||
// CHECK-NEXT: dma.copy desc=[[UP]]
// CHECK-NOT: dma.copy
// CHECK: .tag "output up"
func.func @main(%x: tensor<1x2x2x8xf32> {vtpu.name = "x"}) -> (tensor<1x4x4x8xf32> {vtpu.name = "up"}) {
  %up = tpu.resize_nearest %x {cols = array<i64: 0, 0, 1, 1>, layer = "up", rows = array<i64: 0, 0, 1, 1>} : (tensor<1x2x2x8xf32>) -> tensor<1x4x4x8xf32>
  return %up : tensor<1x4x4x8xf32>
}
