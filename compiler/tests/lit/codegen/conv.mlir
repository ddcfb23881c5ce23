// RUN: vtpu-translate --tpu-to-asm --config=tiny-8x8 %s | FileCheck %s

// A "same" 3x3 convolution (stride 1, pads 1) on a 4x4 image of 8 channels, 8x8 array
// (docs/compiler.md, "Code generation"): no padded copy; each tap is one matmul per output
// row over the input pixels it reaches. The centre tap reaches every output pixel and goes
// first, initializing the accumulators (no acc=1); the other taps add, clipped: tap (0, 0)
// reaches output rows 1..3 and columns 1..3 (rows=3 from accumulator row 4*oy + 1). No
// bias rows (all zero), so the epilogue is the ReLU6 clamp and the conversion.
// CHECK: .vparam [[RELU6:p[0-9]+]] min=0 max=6
// CHECK: .tag "c"
// CHECK: mxu.matmul mxu=0 src=r0+0 dst=r0+0 rows=4 dtype=bf16 swap=1 ||
// CHECK-NEXT: mxu.matmul mxu=0 src=r0+64 dst=r0+4 rows=4 dtype=bf16{{$}}
// CHECK-NEXT: mxu.matmul mxu=0 src=r0+128 dst=r0+8 rows=4 dtype=bf16{{$}}
// CHECK-NEXT: mxu.matmul mxu=0 src=r0+192 dst=r0+12 rows=4 dtype=bf16{{( \|\| li r16, [0-9]+)?$}}
// CHECK: mxu.matmul mxu=0 src=r0+0 dst=r0+5 rows=3 dtype=bf16 acc=1 swap=1
// 9 taps: 7 more weight swaps.
// CHECK-COUNT-7: acc=1 swap=1
// CHECK-NOT: swap=1
// CHECK: flag=f2
// CHECK-NEXT: wait f2
// CHECK-NOT: vec.add
// CHECK-NEXT: vec.clamp dst=acc[r0+0] a=acc[r0+0] rows=16 dt=fp32 param=[[RELU6]]
// CHECK: vec.cvt {{.*}} a=acc[r0+0] rows=16 dt=fp32 odt=bf16
func.func @main(%x: tensor<1x4x4x8xf32> {vtpu.name = "x"}) -> (tensor<1x4x4x8xf32> {vtpu.name = "y"}) {
  %w = "tosa.const"() {value = dense<0.5> : tensor<3x3x8x8xf32>} : () -> tensor<3x3x8x8xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<8xf32>} : () -> tensor<8xf32>
  %0 = tpu.conv2d %x, %w, %b {clamp_max = 6.0 : f64, clamp_min = 0.0 : f64, dilation = array<i64: 1, 1>, groups = 1 : i64, layer = "c", pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x4x4x8xf32>, tensor<3x3x8x8xf32>, tensor<8xf32>) -> tensor<1x4x4x8xf32>
  return %0 : tensor<1x4x4x8xf32>
}
