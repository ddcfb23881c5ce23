// RUN: vtpu-translate --tpu-to-asm %s | FileCheck %s

// A convolution's padded copy (conv.cpp) on an image so wide that its border rows are longer
// than the zeros kept in HBM (1 MiB, kZeroHbmBytes): 3 rows of 1406 pixels of 256 bytes
// (bf16, 128 lanes on tpu-v4-core) = 1,079,808 bytes above the image and as many below. Each
// run of rows is zeroed in pieces of at most 1 MiB (clear_frame); one load of 1,079,808
// bytes would read past the zeros, into what HBM holds next (here the input itself).
// CHECK: .desc [[TOP:d[0-9]+]] bytes=1048576 src_off=0 dst_off=[[AT:[0-9]+]]{{$}}
// CHECK-NEXT: .desc [[TOP_REST:d[0-9]+]] bytes=31232 src_off=0 dst_off=
// CHECK-NEXT: .desc [[BOTTOM:d[0-9]+]] bytes=1048576 src_off=0 dst_off=
// CHECK-NEXT: .desc [[BOTTOM_REST:d[0-9]+]] bytes=31232 src_off=0 dst_off=
// CHECK-NOT: bytes=1079808
// CHECK: .tag "c"
// CHECK-NEXT: dma.load desc=[[TOP]]
// CHECK-NEXT: dma.load desc=[[TOP_REST]]
// CHECK-NEXT: dma.load desc=[[BOTTOM]]
// CHECK-NEXT: dma.load desc=[[BOTTOM_REST]]
func.func @main(%x: tensor<1x2x1400x8xf32> {vtpu.name = "x"}) -> (tensor<1x1x700x8xf32> {vtpu.name = "y"}) {
  %w = "tosa.const"() {value = dense<0.5> : tensor<7x7x8x8xf32>} : () -> tensor<7x7x8x8xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<8xf32>} : () -> tensor<8xf32>
  %0 = tpu.conv2d %x, %w, %b {clamp_max = 6.0 : f64, clamp_min = 0.0 : f64, dilation = array<i64: 1, 1>, groups = 1 : i64, layer = "c", pad = array<i64: 3, 3, 3, 3>, stride = array<i64: 2, 2>} : (tensor<1x2x1400x8xf32>, tensor<7x7x8x8xf32>, tensor<8xf32>) -> tensor<1x1x700x8xf32>
  return %0 : tensor<1x1x700x8xf32>
}
