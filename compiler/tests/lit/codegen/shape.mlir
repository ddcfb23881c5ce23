// RUN: vtpu-translate --tpu-to-asm --config=tiny-8x8 %s | FileCheck %s

// Layout ops as unified-buffer DMA copies (docs/compiler.md, "Code generation"); a row of
// 8 bf16 lanes is 16 bytes, of fp32 32 bytes.
// A transpose that moves the last dimension gathers 4-byte elements: fp32 copies of input
// and output, one gather per lane run (output row (b, c) takes lane c of the 3 rows of
// batch b: 3 elements 32 bytes apart, 8 rows), then converted back to bf16.
// CHECK: .desc [[GATHER:d[0-9]+]] bytes=4 dim=[3, 32, 4] dim=[8, 4, 32]
// A concat along rows: each input as runs of whole rows, 2 batches apart (a's 3 rows then
// b's 1 row in every 4-row output batch).
// CHECK: .desc [[CAT_A:d[0-9]+]] bytes=48 dim=[2, 48, 64]
// CHECK: .desc [[CAT_B:d[0-9]+]] bytes=16 dim=[2, 16, 64]
// A slice of rows 1..2 of each batch: one copy of 2 rows per batch.
// CHECK: .desc [[SLICE:d[0-9]+]] bytes=32{{$}}
// A broadcast along rows repeats a row with a source stride of 0.
// CHECK: .desc [[BCAST:d[0-9]+]] bytes=16 dim=[3, 0, 16]
// CHECK: .tag "tr"
// CHECK: vec.cvt {{.*}} rows=6 dt=bf16 odt=fp32
// CHECK: dma.copy desc=[[GATHER]]
// CHECK: dma.copy desc=[[GATHER]]
// CHECK: vec.cvt {{.*}} rows=16 dt=fp32 odt=bf16
// CHECK: .tag "cat"
// CHECK: dma.copy desc=[[CAT_A]]
// CHECK: dma.copy desc=[[CAT_B]]
// CHECK: .tag "sl"
// CHECK: li r1, 16 ||
// CHECK-NEXT: dma.copy desc=[[SLICE]]
// CHECK: li r1, 64 ||
// CHECK-NEXT: dma.copy desc=[[SLICE]]
// CHECK: .tag "bc"
// CHECK-COUNT-2: dma.copy desc=[[BCAST]]
func.func @main(%a: tensor<2x3x8xf32> {vtpu.name = "a"}, %b: tensor<2x1x8xf32> {vtpu.name = "b"}) -> (tensor<2x8x3xf32> {vtpu.name = "t"}, tensor<2x4x8xf32> {vtpu.name = "c"}, tensor<2x2x8xf32> {vtpu.name = "s"}, tensor<2x3x8xf32> {vtpu.name = "bc"}) {
  %t = tpu.transpose %a {layer = "tr", perm = array<i64: 0, 2, 1>} : (tensor<2x3x8xf32>) -> tensor<2x8x3xf32>
  %c = tpu.concat %a, %b {axis = 1 : i64, layer = "cat"} : (tensor<2x3x8xf32>, tensor<2x1x8xf32>) -> tensor<2x4x8xf32>
  %s = tpu.slice %a {layer = "sl", start = array<i64: 0, 1, 0>} : (tensor<2x3x8xf32>) -> tensor<2x2x8xf32>
  %bc = tpu.broadcast %b {layer = "bc"} : (tensor<2x1x8xf32>) -> tensor<2x3x8xf32>
  return %t, %c, %s, %bc : tensor<2x8x3xf32>, tensor<2x4x8xf32>, tensor<2x2x8xf32>, tensor<2x3x8xf32>
}
