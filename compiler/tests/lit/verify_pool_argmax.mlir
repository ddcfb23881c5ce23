// RUN: not vtpu-opt %s --split-input-file 2>&1 | FileCheck %s

// tpu.pool_argmax (MaxPool's Indices) gives i32 indices of the pool's output shape; other
// results are rejected when parsed.
// CHECK: 'tpu.pool_argmax' op indices must be i32
func.func @float_indices(%arg0: tensor<1x5x5x3xf32>) -> tensor<1x3x3x3xf32> {
  %0 = tpu.pool_argmax %arg0 {kernel = array<i64: 3, 3>, layer = "p", pad = array<i64: 1, 1, 1, 1>, storage_order = 0 : i64, stride = array<i64: 2, 2>} : (tensor<1x5x5x3xf32>) -> tensor<1x3x3x3xf32>
  return %0 : tensor<1x3x3x3xf32>
}

// -----

// CHECK: 'tpu.pool_argmax' op output width 2 should be 3
func.func @wrong_width(%arg0: tensor<1x5x5x3xf32>) -> tensor<1x3x2x3xi32> {
  %0 = tpu.pool_argmax %arg0 {kernel = array<i64: 3, 3>, layer = "p", pad = array<i64: 1, 1, 1, 1>, storage_order = 0 : i64, stride = array<i64: 2, 2>} : (tensor<1x5x5x3xf32>) -> tensor<1x3x2x3xi32>
  return %0 : tensor<1x3x2x3xi32>
}
