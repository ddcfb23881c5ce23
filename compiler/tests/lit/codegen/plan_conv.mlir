// RUN: vtpu-opt --tpu-plan-codegen='config=tiny-8x8 dtype=bf16' %s | FileCheck %s --check-prefixes=CHECK,BF16
// RUN: vtpu-opt --tpu-plan-codegen='config=tiny-8x8 dtype=int8' %s | FileCheck %s --check-prefixes=CHECK,INT8

// What the code-generation planner decides around tpu.conv2d (compiler/codegen/plan.cpp),
// on an 8x8 array.

// Tap stacks: a "same" 3x3 convolution on 4 channels (at most R/2) that is its input's last
// reader: its matmul rows take kernel rows dy and dy + 1 together (8 lanes hold two groups
// of 4 channels).
// CHECK-LABEL: func.func @pairs
// CHECK: tpu.conv2d {{.*}}tpu.tap_rows = 2
func.func @pairs(%x: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %w = "tosa.const"() {value = dense<0.5> : tensor<3x3x4x4xf32>} : () -> tensor<3x3x4x4xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = tpu.conv2d %x, %w, %b {clamp_max = 6.0 : f64, clamp_min = 0.0 : f64, dilation = array<i64: 1, 1>, groups = 1 : i64, layer = "c", pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x4x4x4xf32>, tensor<3x3x4x4xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}

// On 2 channels (of a computed image: a model input of so few channels is read packed
// from HBM), 8 lanes hold all three kernel rows (bf16: each group of 2 channels starts on a
// 4-byte word); INT8 groups of 2 bytes do not, so no stacks.
// CHECK-LABEL: func.func @stack_of_three
// BF16: tpu.conv2d {{.*}}tpu.tap_rows = 3
// INT8-NOT: tpu.tap_rows
// CHECK: return
func.func @stack_of_three(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32> {
  %w = "tosa.const"() {value = dense<0.5> : tensor<3x3x2x2xf32>} : () -> tensor<3x3x2x2xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<2xf32>} : () -> tensor<2xf32>
  %e = tpu.unary %x {fn = "exp", layer = "e"} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %0 = tpu.conv2d %e, %w, %b {clamp_max = 6.0 : f64, clamp_min = 0.0 : f64, dilation = array<i64: 1, 1>, groups = 1 : i64, layer = "c", pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<3x3x2x2xf32>, tensor<2xf32>) -> tensor<1x4x4x2xf32>
  return %0 : tensor<1x4x4x2xf32>
}

// The input is read again after the convolution (the stacks' copies would overwrite its
// padding lanes while they are still needed): no stacks.
// CHECK-LABEL: func.func @input_read_later
// CHECK-NOT: tpu.tap_rows
// CHECK: return
func.func @input_read_later(%x: tensor<1x4x4x4xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) {
  %w = "tosa.const"() {value = dense<0.5> : tensor<3x3x4x4xf32>} : () -> tensor<3x3x4x4xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = tpu.conv2d %x, %w, %b {clamp_max = 6.0 : f64, clamp_min = 0.0 : f64, dilation = array<i64: 1, 1>, groups = 1 : i64, layer = "c", pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x4x4x4xf32>, tensor<3x3x4x4xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  %1 = tpu.unary %x {fn = "exp", layer = "e"} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %0, %1 : tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>
}

// 8 input channels fill a matmul row's K already: no stacks.
// CHECK-LABEL: func.func @wide_input
// CHECK-NOT: tpu.tap_rows
// CHECK: return
func.func @wide_input(%x: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %w = "tosa.const"() {value = dense<0.5> : tensor<3x3x8x8xf32>} : () -> tensor<3x3x8x8xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<8xf32>} : () -> tensor<8xf32>
  %0 = tpu.conv2d %x, %w, %b {clamp_max = 6.0 : f64, clamp_min = 0.0 : f64, dilation = array<i64: 1, 1>, groups = 1 : i64, layer = "c", pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x4x4x8xf32>, tensor<3x3x8x8xf32>, tensor<8xf32>) -> tensor<1x4x4x8xf32>
  return %0 : tensor<1x4x4x8xf32>
}

// A convolution read only by convolutions computes two output pixels per matmul row
// instead (conv_wide.cpp): no stacks for it; the one after it (whose output is returned)
// has them.
// CHECK-LABEL: func.func @two_pixels
// CHECK: tpu.conv2d {{.*}}layer = "c1"{{.*}}tpu.conv_form = "two-pixel"
// CHECK-NOT: tpu.tap_rows
// CHECK: tpu.conv2d {{.*}}layer = "c2"{{.*}}tpu.tap_rows
func.func @two_pixels(%x: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %w = "tosa.const"() {value = dense<0.5> : tensor<3x3x4x4xf32>} : () -> tensor<3x3x4x4xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = tpu.conv2d %x, %w, %b {clamp_max = 6.0 : f64, clamp_min = 0.0 : f64, dilation = array<i64: 1, 1>, groups = 1 : i64, layer = "c1", pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x4x4x4xf32>, tensor<3x3x4x4xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  %1 = tpu.conv2d %0, %w, %b {clamp_max = 6.0 : f64, clamp_min = 0.0 : f64, dilation = array<i64: 1, 1>, groups = 1 : i64, layer = "c2", pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x4x4x4xf32>, tensor<3x3x4x4xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  return %1 : tensor<1x4x4x4xf32>
}

// A residual add: the convolution's output is only the add's operand, and the add's other
// operand (a model input) is read by nothing after the convolution but the add: the add
// runs in the convolution's epilogues, its sum written over that operand. (Its matmuls,
// 9 taps per output block, outlast the one MXU's epilogues.)
// CHECK-LABEL: func.func @residual
// CHECK: tpu.conv2d {{.*}}tpu.epilogue = "residual-add", tpu.id = [[ID:[0-9]+]] : i64
// CHECK: tpu.add {{.*}}tpu.fused_into = [[ID]] : i64, tpu.role = "residual-add"
func.func @residual(%x: tensor<1x4x4x8xf32>, %res: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %w = "tosa.const"() {value = dense<0.5> : tensor<3x3x8x8xf32>} : () -> tensor<3x3x8x8xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<8xf32>} : () -> tensor<8xf32>
  %0 = tpu.conv2d %x, %w, %b {clamp_max = 0x7FF0000000000000 : f64, clamp_min = 0xFFF0000000000000 : f64, dilation = array<i64: 1, 1>, groups = 1 : i64, layer = "c", pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x4x4x8xf32>, tensor<3x3x8x8xf32>, tensor<8xf32>) -> tensor<1x4x4x8xf32>
  %1 = tpu.add %res, %0 {clamp_max = 6.0 : f64, clamp_min = 0.0 : f64, layer = "res"} : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %1 : tensor<1x4x4x8xf32>
}

// The convolution's output has a second user: it must be written out, not only summed.
// CHECK-LABEL: func.func @second_user
// CHECK-NOT: tpu.epilogue
// CHECK-NOT: tpu.fused_into
// CHECK: return
func.func @second_user(%x: tensor<1x4x4x8xf32>, %res: tensor<1x4x4x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) {
  %w = "tosa.const"() {value = dense<0.5> : tensor<3x3x8x8xf32>} : () -> tensor<3x3x8x8xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<8xf32>} : () -> tensor<8xf32>
  %0 = tpu.conv2d %x, %w, %b {clamp_max = 0x7FF0000000000000 : f64, clamp_min = 0xFFF0000000000000 : f64, dilation = array<i64: 1, 1>, groups = 1 : i64, layer = "c", pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x4x4x8xf32>, tensor<3x3x8x8xf32>, tensor<8xf32>) -> tensor<1x4x4x8xf32>
  %1 = tpu.add %res, %0 {clamp_max = 6.0 : f64, clamp_min = 0.0 : f64, layer = "res"} : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %0, %1 : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>
}

// The add's other operand is read again after the convolution (by another op before the
// add): the sum may not be written over it.
// CHECK-LABEL: func.func @operand_read_later
// CHECK-NOT: tpu.epilogue
// CHECK-NOT: tpu.fused_into
// CHECK: return
func.func @operand_read_later(%x: tensor<1x4x4x8xf32>, %res: tensor<1x4x4x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) {
  %w = "tosa.const"() {value = dense<0.5> : tensor<3x3x8x8xf32>} : () -> tensor<3x3x8x8xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<8xf32>} : () -> tensor<8xf32>
  %0 = tpu.conv2d %x, %w, %b {clamp_max = 0x7FF0000000000000 : f64, clamp_min = 0xFFF0000000000000 : f64, dilation = array<i64: 1, 1>, groups = 1 : i64, layer = "c", pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x4x4x8xf32>, tensor<3x3x8x8xf32>, tensor<8xf32>) -> tensor<1x4x4x8xf32>
  %1 = tpu.unary %res {fn = "exp", layer = "e"} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %2 = tpu.add %res, %0 {clamp_max = 6.0 : f64, clamp_min = 0.0 : f64, layer = "res"} : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %1, %2 : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>
}

// A 1x1 convolution on one lane block: one matmul per output block, shorter than the
// epilogues beside it, so the add runs after it.
// CHECK-LABEL: func.func @too_short
// CHECK-NOT: tpu.epilogue
// CHECK-NOT: tpu.fused_into
// CHECK: return
func.func @too_short(%x: tensor<1x4x4x8xf32>, %res: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %w = "tosa.const"() {value = dense<0.5> : tensor<1x1x8x8xf32>} : () -> tensor<1x1x8x8xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<8xf32>} : () -> tensor<8xf32>
  %0 = tpu.conv2d %x, %w, %b {clamp_max = 0x7FF0000000000000 : f64, clamp_min = 0xFFF0000000000000 : f64, dilation = array<i64: 1, 1>, groups = 1 : i64, layer = "c", pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x8xf32>, tensor<1x1x8x8xf32>, tensor<8xf32>) -> tensor<1x4x4x8xf32>
  %1 = tpu.add %res, %0 {clamp_max = 6.0 : f64, clamp_min = 0.0 : f64, layer = "res"} : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %1 : tensor<1x4x4x8xf32>
}

// In INT8 a two-pixel convolution's output holds the bias lanes' constants in its padding
// lanes from lane 4 (C/2) on, so the 1x1 convolution reading its 4 channels adds its bias
// on the MXU through weight rows at those lanes. bf16 has no bias lanes.
// CHECK-LABEL: func.func @bias_lanes
// CHECK: tpu.conv2d {{.*}}layer = "c1"
// CHECK-NOT: tpu.bias_lanes
// INT8: tpu.conv2d {{.*}}layer = "c2"{{.*}}tpu.bias_lanes = 4 : i64
// BF16-NOT: tpu.bias_lanes
// CHECK: return
func.func @bias_lanes(%x: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %w = "tosa.const"() {value = dense<0.5> : tensor<3x3x4x4xf32>} : () -> tensor<3x3x4x4xf32>
  %w1 = "tosa.const"() {value = dense<0.25> : tensor<1x1x4x4xf32>} : () -> tensor<1x1x4x4xf32>
  %b = "tosa.const"() {value = dense<1.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = tpu.conv2d %x, %w, %b {clamp_max = 6.0 : f64, clamp_min = 0.0 : f64, dilation = array<i64: 1, 1>, groups = 1 : i64, layer = "c1", pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x4x4x4xf32>, tensor<3x3x4x4xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  %1 = tpu.conv2d %0, %w1, %b {clamp_max = 6.0 : f64, clamp_min = 0.0 : f64, dilation = array<i64: 1, 1>, groups = 1 : i64, layer = "c2", pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x4xf32>, tensor<1x1x4x4xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  return %1 : tensor<1x4x4x4xf32>
}

// A model input of few channels (at most R/4, and KW times its channels rounded up to 4
// bytes at most R) that only convolutions read stays in HBM, and they load it packed
// (conv_packed.cpp): planned "packed", so neither tap stacks nor a residual add.
// In INT8 its image is loaded as it lies and spread into packed pixels by a placement
// matmul, C / 4 = 2 of its pixels (4 bytes) per matmul row (tpu.placed_pixels); bf16 loads
// per pixel.
// CHECK-LABEL: func.func @packed
// CHECK: tpu.conv2d {{.*}}layer = "p"{{.*}}tpu.conv_form = "packed"
// INT8-SAME: tpu.placed_pixels = 2
// BF16-NOT: tpu.placed_pixels
// CHECK-NOT: tpu.tap_rows
// CHECK: return
func.func @packed(%x: tensor<1x8x8x2xf32>) -> tensor<1x8x8x8xf32> {
  %w = "tosa.const"() {value = dense<0.5> : tensor<1x1x2x8xf32>} : () -> tensor<1x1x2x8xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<8xf32>} : () -> tensor<8xf32>
  %0 = tpu.conv2d %x, %w, %b {clamp_max = 6.0 : f64, clamp_min = 0.0 : f64, dilation = array<i64: 1, 1>, groups = 1 : i64, layer = "p", pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x8x8x2xf32>, tensor<1x1x2x8xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  return %0 : tensor<1x8x8x8xf32>
}

// A max pool that is the only use of a packed convolution's output, the convolution
// stacking kernel rows (3x1 on one channel: three kernel rows in a matmul row) over two
// images: the pool runs image by image beside its matmuls (conv_packed.cpp), role "pool".
// CHECK-LABEL: func.func @pool_beside
// CHECK: tpu.conv2d {{.*}}layer = "p"{{.*}}tpu.conv_form = "packed", tpu.epilogue = "pool", tpu.id = [[ID:[0-9]+]] : i64
// CHECK: tpu.pool {{.*}}layer = "mp"{{.*}}tpu.fused_into = [[ID]] : i64, tpu.role = "pool"
func.func @pool_beside(%x: tensor<2x8x8x1xf32>) -> tensor<2x4x4x8xf32> {
  %w = "tosa.const"() {value = dense<0.5> : tensor<3x1x1x8xf32>} : () -> tensor<3x1x1x8xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<8xf32>} : () -> tensor<8xf32>
  %0 = tpu.conv2d %x, %w, %b {clamp_max = 6.0 : f64, clamp_min = 0.0 : f64, dilation = array<i64: 1, 1>, groups = 1 : i64, layer = "p", pad = array<i64: 1, 1, 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x8x8x1xf32>, tensor<3x1x1x8xf32>, tensor<8xf32>) -> tensor<2x8x8x8xf32>
  %1 = tpu.pool %0 {kernel = array<i64: 2, 2>, kind = "max", layer = "mp", pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<2x8x8x8xf32>) -> tensor<2x4x4x8xf32>
  return %1 : tensor<2x4x4x8xf32>
}

// One image: nothing to overlap the pool with (its output is not a two-image ring), so
// the pool runs on its own.
// CHECK-LABEL: func.func @one_image
// CHECK: tpu.conv2d {{.*}}tpu.conv_form = "packed"}
// CHECK-NOT: tpu.role
// CHECK: return
func.func @one_image(%x: tensor<1x8x8x1xf32>) -> tensor<1x4x4x8xf32> {
  %w = "tosa.const"() {value = dense<0.5> : tensor<3x1x1x8xf32>} : () -> tensor<3x1x1x8xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<8xf32>} : () -> tensor<8xf32>
  %0 = tpu.conv2d %x, %w, %b {clamp_max = 6.0 : f64, clamp_min = 0.0 : f64, dilation = array<i64: 1, 1>, groups = 1 : i64, layer = "p", pad = array<i64: 1, 1, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x8x8x1xf32>, tensor<3x1x1x8xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  %1 = tpu.pool %0 {kernel = array<i64: 2, 2>, kind = "max", layer = "mp", pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x8x8x8xf32>) -> tensor<1x4x4x8xf32>
  return %1 : tensor<1x4x4x8xf32>
}
