// RUN: vtpu-translate --tpu-to-asm --config=tiny-8x8 %s | FileCheck %s

// Pools run vec.maxpool/avgpool windows on the unpadded input, one instruction per run of
// output pixels with the same clipped window (docs/compiler.md). A pixel is 16 bytes (8
// bf16 lanes), an image row of 4 pixels 64 bytes.
// 2x2 max pool, stride 2: window = the pixels (0,0), (0,1), (1,0), (1,1); each output row
// is one instruction of 2 pixels stepping 2 input pixels (32 bytes).
// CHECK: .vparam [[MP:p[0-9]+]] window=[0, 16, 64, 80] pool_stride=32
// 3x3 average pool, pads 1, count_include_pad 0: a window divides by the pixels it
// covers (ONNX): a corner 4, an edge 6, the interior 9.
// CHECK: .vparam [[CORNER:p[0-9]+]] window=[0, 16, 64, 80] pool_stride=16 scale=[0.25]
// CHECK: .vparam [[EDGE:p[0-9]+]] window=[0, 16, 32, 64, 80, 96] pool_stride=16 scale=[0.16666666666666666]
// CHECK: .vparam [[INNER:p[0-9]+]] window=[0, 16, 32, 64, 80, 96, 128, 144, 160] pool_stride=16 scale=[0.1111111111111111]
// CHECK: .tag "mp"
// CHECK: vec.maxpool {{.*}} rows=2 dt=bf16 param=[[MP]]
// CHECK: vec.maxpool {{.*}} rows=2 dt=bf16 param=[[MP]]
// CHECK-NOT: vec.maxpool
// CHECK: .tag "ap"
// CHECK: vec.avgpool {{.*}} rows=1 dt=bf16 param=[[CORNER]]
// CHECK: vec.avgpool {{.*}} rows=2 dt=bf16 param=[[EDGE]]
// CHECK: vec.avgpool {{.*}} rows=2 dt=bf16 param=[[INNER]]
func.func @main(%x: tensor<1x4x4x8xf32> {vtpu.name = "x"}) -> (tensor<1x2x2x8xf32> {vtpu.name = "m"}, tensor<1x4x4x8xf32> {vtpu.name = "a"}) {
  %0 = tpu.pool %x {kernel = array<i64: 2, 2>, kind = "max", layer = "mp", pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x4x4x8xf32>) -> tensor<1x2x2x8xf32>
  %1 = tpu.pool %x {kernel = array<i64: 3, 3>, kind = "avg", layer = "ap", pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %0, %1 : tensor<1x2x2x8xf32>, tensor<1x4x4x8xf32>
}
