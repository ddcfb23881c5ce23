// RUN: vtpu-opt --pass-pipeline='builtin.module(func.func(tpu-channel-shuffle))' %s | FileCheck %s

// ShuffleNet's shuffle of 6 channels in 2 groups (an NCHW view [1, 2, 3, H, W], the group axes
// swapped, a view back) becomes a 1x1 convolution by the permutation matrix: output channel k
// reads input channel (k mod 2) * 3 + k / 2, i.e. 0 3 1 4 2 5; then the transpose to NCHW its
// user expects.
// CHECK-LABEL: func.func @shuffle
// CHECK-NOT: tosa.reshape
// CHECK-DAG: dense<{{\[\[\[\[}}1.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]]], {{\[\[\[}}0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00, 0.000000e+00]]], {{\[\[\[}}0.000000e+00, 1.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]]], {{\[\[\[}}0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00]]], {{\[\[\[}}0.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]]], {{\[\[\[}}0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00]]]]> : tensor<6x1x1x6xf32>
// CHECK: %[[Y:.*]] = tosa.conv2d %arg0
// CHECK-SAME: (tensor<1x4x4x6xf32>, tensor<6x1x1x6xf32>, tensor<6xf32>) -> tensor<1x4x4x6xf32>
// CHECK: tosa.transpose %[[Y]]
// CHECK-SAME: -> tensor<1x6x4x4xf32>
func.func @shuffle(%arg0: tensor<1x4x4x6xf32>) -> tensor<1x6x4x4xf32> {
  %p1 = "tosa.const"() {value = dense<[0, 3, 1, 2]> : tensor<4xi32>} : () -> tensor<4xi32>
  %0 = tosa.transpose %arg0, %p1 : (tensor<1x4x4x6xf32>, tensor<4xi32>) -> tensor<1x6x4x4xf32>
  %1 = tosa.reshape %0 {new_shape = array<i64: 1, 2, 3, 4, 4>} : (tensor<1x6x4x4xf32>) -> tensor<1x2x3x4x4xf32>
  %p2 = "tosa.const"() {value = dense<[0, 2, 1, 3, 4]> : tensor<5xi32>} : () -> tensor<5xi32>
  %2 = tosa.transpose %1, %p2 : (tensor<1x2x3x4x4xf32>, tensor<5xi32>) -> tensor<1x3x2x4x4xf32>
  %3 = tosa.reshape %2 {new_shape = array<i64: 1, 6, 4, 4>} : (tensor<1x3x2x4x4xf32>) -> tensor<1x6x4x4xf32>
  return %3 : tensor<1x6x4x4xf32>
}

// Another view (the groups not swapped back) is not a shuffle: it stays.
// CHECK-LABEL: func.func @other
// CHECK-NOT: tosa.conv2d
// CHECK: tosa.reshape
func.func @other(%arg0: tensor<1x4x4x6xf32>) -> tensor<1x2x3x4x4xf32> {
  %p1 = "tosa.const"() {value = dense<[0, 3, 1, 2]> : tensor<4xi32>} : () -> tensor<4xi32>
  %0 = tosa.transpose %arg0, %p1 : (tensor<1x4x4x6xf32>, tensor<4xi32>) -> tensor<1x6x4x4xf32>
  %1 = tosa.reshape %0 {new_shape = array<i64: 1, 2, 3, 4, 4>} : (tensor<1x6x4x4xf32>) -> tensor<1x2x3x4x4xf32>
  return %1 : tensor<1x2x3x4x4xf32>
}
