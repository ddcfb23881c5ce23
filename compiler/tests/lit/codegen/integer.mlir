// RUN: vtpu-translate --tpu-to-asm --config=tiny-8x8 %s | FileCheck %s

// Integer tensors (docs/compiler.md, "Integer inputs and outputs"): an integer input stays
// in HBM as int32 and its tpu.cast loads the rows and converts them (int32 -> bf16); an
// integer output is a cast rounding to int32, stored as int32 rows (4-byte lanes: 32-byte
// rows).
// CHECK: .tensor "i" role=input dtype=int32 shape=[2, 8]
// CHECK: .tensor "o" role=output dtype=int32 shape=[2, 8]
// CHECK-NOT: .tag "input i"
// CHECK: .tag "in"
// CHECK-NEXT: dma.load
// CHECK: vec.cvt {{.*}} rows=2 dt=int32 odt=bf16
// CHECK: .tag "out"
// CHECK: vec.cvt {{.*}} rows=2 dt=bf16 odt=int32
// CHECK: .tag "output o"
func.func @main(%i: tensor<2x8xi32> {vtpu.name = "i"}) -> (tensor<2x8xi32> {vtpu.name = "o"}) {
  %c = tpu.cast %i {layer = "in"} : (tensor<2x8xi32>) -> tensor<2x8xf32>
  %o = tpu.cast %c {layer = "out"} : (tensor<2x8xf32>) -> tensor<2x8xi32>
  return %o : tensor<2x8xi32>
}
