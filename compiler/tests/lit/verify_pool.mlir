// RUN: not vtpu-opt %s --split-input-file 2>&1 | FileCheck %s

// tpu.pool's output size follows from its window: (in + pads - (dilation (kernel - 1) + 1)) /
// stride + 1 on H and W.
// CHECK: 'tpu.pool' op output height 3 should be 2
func.func @height(%arg0: tensor<1x5x5x3xf32>) -> tensor<1x3x2x3xf32> {
  %0 = tpu.pool %arg0 {kernel = array<i64: 3, 3>, kind = "max", layer = "p", pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x5x5x3xf32>) -> tensor<1x3x2x3xf32>
  return %0 : tensor<1x3x2x3xf32>
}

// -----

// CHECK: 'tpu.pool' op output width 2 should be 1
func.func @dilated(%arg0: tensor<1x5x5x3xf32>) -> tensor<1x1x2x3xf32> {
  %0 = tpu.pool %arg0 {dilation = array<i64: 2, 2>, kernel = array<i64: 3, 3>, kind = "max", layer = "p", pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x5x5x3xf32>) -> tensor<1x1x2x3xf32>
  return %0 : tensor<1x1x2x3xf32>
}

// -----

// CHECK: 'tpu.pool' op kind 'min' is not max or avg
func.func @kind(%arg0: tensor<1x4x4x3xf32>) -> tensor<1x2x2x3xf32> {
  %0 = tpu.pool %arg0 {kernel = array<i64: 2, 2>, kind = "min", layer = "p", pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x4x4x3xf32>) -> tensor<1x2x2x3xf32>
  return %0 : tensor<1x2x2x3xf32>
}
