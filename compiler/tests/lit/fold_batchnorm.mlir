// RUN: vtpu-opt --pass-pipeline='builtin.module(func.func(tpu-fold-batchnorm))' %s | FileCheck %s

// x * s + t per channel after a conv folds into the conv: weights scaled per output
// channel (2 and 3), bias = b * s + t = (1*2+10, 1*3+20).
// CHECK-LABEL: func.func @bn
// CHECK-NOT: tosa.mul
// CHECK-NOT: tosa.add
// CHECK-DAG: dense<{{\[\[\[\[}}2.000000e+00]]], {{\[\[\[}}3.000000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK-DAG: dense<[1.200000e+01, 2.300000e+01]> : tensor<2xf32>
// CHECK: tosa.conv2d
func.func @bn(%arg0: tensor<1x4x4x1xf32>) -> tensor<1x4x4x2xf32> {
  %w = "tosa.const"() {value = dense<1.0> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
  %b = "tosa.const"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<2xf32>
  %s = "tosa.const"() {value = dense<[[[[2.0, 3.0]]]]> : tensor<1x1x1x2xf32>} : () -> tensor<1x1x1x2xf32>
  %t = "tosa.const"() {value = dense<[[[[10.0, 20.0]]]]> : tensor<1x1x1x2xf32>} : () -> tensor<1x1x1x2xf32>
  %0 = tosa.conv2d %arg0, %w, %b {dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x1xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x4x4x2xf32>
  %1 = tosa.mul %0, %s {shift = 0 : i8} : (tensor<1x4x4x2xf32>, tensor<1x1x1x2xf32>) -> tensor<1x4x4x2xf32>
  %2 = tosa.add %1, %t : (tensor<1x4x4x2xf32>, tensor<1x1x1x2xf32>) -> tensor<1x4x4x2xf32>
  return %2 : tensor<1x4x4x2xf32>
}
// The folded constants replace the old ones, which are gone.
// CHECK-NOT: dense<1.000000e+00>

// A depthwise conv's weights [KH, KW, C, M] carry the output channel (c * M + m) last:
// with C = 2, M = 1 the scale alternates along the last dimension.
// CHECK-LABEL: func.func @bn_depthwise
// CHECK-NOT: tosa.mul
// CHECK-DAG: dense<{{\[\[\[\[}}2.000000e+00], [3.000000e+00]], {{\[\[}}4.000000e+00], [6.000000e+00]]]]> : tensor<1x2x2x1xf32>
// CHECK-DAG: dense<[2.000000e+00, 3.000000e+00]> : tensor<2xf32>
// CHECK: tosa.depthwise_conv2d
func.func @bn_depthwise(%arg0: tensor<1x4x4x2xf32>) -> tensor<1x4x3x2xf32> {
  %w = "tosa.const"() {value = dense<[[[[1.0], [1.0]], [[2.0], [2.0]]]]> : tensor<1x2x2x1xf32>} : () -> tensor<1x2x2x1xf32>
  %b = "tosa.const"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<2xf32>
  %s = "tosa.const"() {value = dense<[[[[2.0, 3.0]]]]> : tensor<1x1x1x2xf32>} : () -> tensor<1x1x1x2xf32>
  %0 = tosa.depthwise_conv2d %arg0, %w, %b {dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<1x2x2x1xf32>, tensor<2xf32>) -> tensor<1x4x3x2xf32>
  %1 = tosa.mul %0, %s {shift = 0 : i8} : (tensor<1x4x3x2xf32>, tensor<1x1x1x2xf32>) -> tensor<1x4x3x2xf32>
  return %1 : tensor<1x4x3x2xf32>
}
