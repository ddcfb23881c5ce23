// RUN: vtpu-opt --pass-pipeline='builtin.module(func.func(tpu-lower-tosa))' %s | FileCheck %s

// A matmul of two activations (attention's Q K^T) becomes tpu.batch_matmul.
// CHECK-LABEL: func.func @batch
// CHECK: tpu.batch_matmul %arg0, %arg1 {layer = "qk"} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
// CHECK-NOT: tosa.matmul
func.func @batch(%arg0: tensor<2x3x4xf32>, %arg1: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = tosa.matmul %arg0, %arg1 : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32> loc("qk")
  return %0 : tensor<2x3x5xf32>
}

// Two matmuls of one weight constant (an unrolled LSTM's recurrent weights) share one
// [K, N] constant, made once at the top of the function.
// CHECK-LABEL: func.func @shared
// CHECK: %[[W:.*]] = "tosa.const"() <{value = dense<{{\[\[}}1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>}>
// CHECK-NOT: tensor<2x2xf32>}>
// CHECK: %[[A:.*]] = tpu.matmul %arg0, %[[W]]
// CHECK: tpu.matmul %[[A]], %[[W]]
func.func @shared(%arg0: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %w = "tosa.const"() {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<2xf32>} : () -> tensor<2xf32>
  %0 = tosa.fully_connected %arg0, %w, %b : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<3x2xf32> loc("step0")
  %1 = tosa.fully_connected %0, %w, %b : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<3x2xf32> loc("step1")
  return %1 : tensor<3x2xf32>
}

// A Flatten of an NHWC image (transpose to NCHW, reshape) before a matmul moves no data:
// the matmul's weight rows take NHWC order. Image [1, 1, 2, 2] (H = 1, W = 2, C = 2): NHWC
// flat index (w, c) holds NCHW index c * 2 + w, so weight rows 0, 2, 1, 3 of the [K, N]
// matrix [[1], [2], [3], [4]].
// CHECK-LABEL: func.func @flatten
// CHECK: %[[W:.*]] = "tosa.const"() <{value = dense<{{\[\[}}1.000000e+00], [3.000000e+00], [2.000000e+00], [4.000000e+00]]> : tensor<4x1xf32>}>
// CHECK: %[[F:.*]] = tpu.reshape %arg0 {layer = "flat"} : (tensor<1x1x2x2xf32>) -> tensor<1x4xf32>
// CHECK: tpu.matmul %[[F]], %[[W]]
// CHECK-NOT: tosa.transpose
// CHECK-NOT: tosa.reshape
func.func @flatten(%arg0: tensor<1x1x2x2xf32>) -> tensor<1x1xf32> {
  %p = "tosa.const"() {value = dense<[0, 3, 1, 2]> : tensor<4xi32>} : () -> tensor<4xi32>
  %0 = tosa.transpose %arg0, %p : (tensor<1x1x2x2xf32>, tensor<4xi32>) -> tensor<1x2x1x2xf32> loc("nchw")
  %1 = tosa.reshape %0 {new_shape = array<i64: 1, 4>} : (tensor<1x2x1x2xf32>) -> tensor<1x4xf32> loc("flat")
  %w = "tosa.const"() {value = dense<[[1.0, 2.0, 3.0, 4.0]]> : tensor<1x4xf32>} : () -> tensor<1x4xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %2 = tosa.fully_connected %1, %w, %b : (tensor<1x4xf32>, tensor<1x4xf32>, tensor<1xf32>) -> tensor<1x1xf32> loc("fc")
  return %2 : tensor<1x1xf32>
}
