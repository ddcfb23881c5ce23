// RUN: not vtpu-opt %s --split-input-file 2>&1 | FileCheck %s

// An affine step scales and shifts each channel (the last dimension) by one value.
// CHECK: 'tpu.affine' op scale and bias need one value per channel (4)
func.func @affine(%arg0: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %s = "tosa.const"() {value = dense<2.0> : tensor<3xf32>} : () -> tensor<3xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = tpu.affine %arg0, %s, %b {layer = "a"} : (tensor<2x4xf32>, tensor<3xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// tpu.cast moves integer program tensors (i32) into the activation domain or back.
// CHECK: 'tpu.cast' op casts between i32 and the activation type, one way or the other
func.func @cast(%arg0: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0 = tpu.cast %arg0 {layer = "c"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
