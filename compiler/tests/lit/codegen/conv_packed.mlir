// RUN: vtpu-translate --tpu-to-asm --config=tiny-16x16 --dtype=int8 %s | FileCheck %s

// The packed first convolution (conv_packed.cpp) with its image placed (tpu.placed_pixels,
// INT8): each 6x5 image of 2 channels is loaded from HBM as it lies (60 bytes, one request)
// and spread into packed 4-byte pixels by a matmul whose 0/1 tile takes 4 pixels (8 lanes)
// per row and writes their channels at lanes 4p, 4p + 1 of 16: ceil(30 / 4) = 8 rows of
// stride 8, RESCALE by exactly 1 (multiplier 2^30, shift 30, no bounds). DMA copies then put
// the spread rows where the convolution reads them.
// CHECK: .vparam [[ONE:p[0-9]+]] mult=[{{(1073741824, )+}}1073741824] shift=[{{(30, )+}}30]{{$}}
//
// "pa", 3x3 on a 16-row array (no kernel rows stacked): every image into the padded packed
// image of both. Only its border is zeroed (top and bottom rows, then the left and right
// columns as strided rows of one request each), and the spread rows are copied inside it
// (rows of 5 pixels to rows of 7).
// CHECK: .desc [[RAW0:d[0-9]+]] bytes=60 src_off=1048576 dst_off=[[RAW:[0-9]+]]{{$}}
// CHECK: .desc [[INTO_PADDED:d[0-9]+]] bytes=20 dim=[6, 20, 28]{{$}}
// CHECK: .desc [[RAW1:d[0-9]+]] bytes=60 src_off=1048636 dst_off=[[RAW]]{{$}}
//
// "pb", 3x1 with pads 1, 1: all three kernel rows stacked (12 bytes a pixel). The first
// slot holds image rows 0..4 from stacked row 1 on, the second rows 0..5, the third rows
// 1..5 (a copy each, 4-byte pixels into 12-byte ones).
// CHECK: .desc [[SHORT:d[0-9]+]] bytes=4 dim=[5, 4, 12] dim=[5, 20, 60]{{$}}
// CHECK: .desc [[FULL:d[0-9]+]] bytes=4 dim=[5, 4, 12] dim=[6, 20, 60]{{$}}
//
// CHECK: .tag "pa"
// CHECK: wait f1, 9
// CHECK-NEXT: dma.load desc=[[RAW0]]
// CHECK-NEXT: wait f1, 1
// CHECK-NEXT: mxu.matmul mxu=0 src=r0+[[RAW]] dst=r0+0 rows=8 dtype=int8 stride=8 swap=1 flag=f2
// CHECK: vec.rescale dst=ub[r0+[[FLAT:[0-9]+]]] a=acc[r0+0] rows=8 param=[[ONE]]
// CHECK: li r1, [[FLAT]] ||
// CHECK-NEXT: dma.copy desc=[[INTO_PADDED]]
// CHECK: dma.load desc=[[RAW1]]
// CHECK: mxu.matmul mxu=0 src=r0+[[RAW]] dst=r0+0 rows=8 dtype=int8 stride=8 swap=1 flag=f2
// CHECK: dma.copy desc=[[INTO_PADDED]]
// The convolution: a matmul row per output pixel, 4 bytes apart.
// CHECK: mxu.matmul mxu=0 src=r0+{{[0-9]+}} dst=r0+0 rows=5 dtype=int8 stride=4 swap=1
//
// Two images: image 1 is placed before image 0's matmuls and stacked beside them (f6),
// which then wait for nothing but their weights.
// CHECK: .tag "pb"
// CHECK: mxu.matmul mxu=0 src=r0+[[RAW]] dst=r0+0 rows=8 dtype=int8 stride=8 swap=1 flag=f2
// CHECK: dma.copy desc=[[SHORT]] src=r1 dst=r2 flag=f1
// CHECK-NEXT: li r1
// CHECK-NEXT: dma.copy desc=[[FULL]] src=r1 dst=r2 flag=f1
// CHECK-NEXT: li r1
// CHECK-NEXT: dma.copy desc=[[SHORT]] src=r1 dst=r2 flag=f1
// CHECK-NEXT: wait f1, 3
// CHECK: mxu.matmul mxu=0 src=r0+[[RAW]] dst=r0+0 rows=8 dtype=int8 stride=8 swap=1 flag=f2
// CHECK-COUNT-3: dma.copy {{.*}}flag=f6
// CHECK-NEXT: mxu.matmul {{.*}}rows=5 dtype=int8 stride=12 swap=1
// CHECK: wait f6, 3
// CHECK-NEXT: mxu.matmul {{.*}}rows=5 dtype=int8 stride=12 swap=1
// CHECK: halt
func.func @main(%a: tensor<2x6x5x2xf32> {vtpu.name = "a"}, %b: tensor<2x6x5x2xf32> {vtpu.name = "b"}) -> (tensor<2x6x5x8xf32> {vtpu.name = "ya"}, tensor<2x6x5x8xf32> {vtpu.name = "yb"}) {
  %w = "tosa.const"() {value = dense<0.5> : tensor<3x3x2x8xf32>} : () -> tensor<3x3x2x8xf32>
  %w2 = "tosa.const"() {value = dense<0.5> : tensor<3x1x2x8xf32>} : () -> tensor<3x1x2x8xf32>
  %c = "tosa.const"() {value = dense<0.25> : tensor<8xf32>} : () -> tensor<8xf32>
  %0 = tpu.conv2d %a, %w, %c {clamp_max = 6.0 : f64, clamp_min = 0.0 : f64, dilation = array<i64: 1, 1>, groups = 1 : i64, layer = "pa", pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>, tpu.conv_form = "packed", tpu.placed_pixels = 4 : i64} : (tensor<2x6x5x2xf32>, tensor<3x3x2x8xf32>, tensor<8xf32>) -> tensor<2x6x5x8xf32>
  %1 = tpu.conv2d %b, %w2, %c {clamp_max = 6.0 : f64, clamp_min = 0.0 : f64, dilation = array<i64: 1, 1>, groups = 1 : i64, layer = "pb", pad = array<i64: 1, 1, 0, 0>, stride = array<i64: 1, 1>, tpu.conv_form = "packed", tpu.placed_pixels = 4 : i64} : (tensor<2x6x5x2xf32>, tensor<3x1x2x8xf32>, tensor<8xf32>) -> tensor<2x6x5x8xf32>
  return %0, %1 : tensor<2x6x5x8xf32>, tensor<2x6x5x8xf32>
}
