// RUN: not vtpu-opt %s 2>&1 | FileCheck %s

// tpu.conv2d's weight holds CI / groups input channels: a weight that does not match the
// grouping is rejected when parsed, not miscompiled.
// CHECK: 'tpu.conv2d' op weight has 2 channels per group, the input 4 in 4 groups
func.func @bad(%arg0: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %w = "tosa.const"() {value = dense<1.0> : tensor<1x1x2x4xf32>} : () -> tensor<1x1x2x4xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = tpu.conv2d %arg0, %w, %b {clamp_max = 1.0 : f64, clamp_min = 0.0 : f64, dilation = array<i64: 1, 1>, groups = 4 : i64, layer = "c", pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x4xf32>, tensor<1x1x2x4xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  return %0 : tensor<1x4x4x4xf32>
}
