// RUN: vtpu-opt --pass-pipeline='builtin.module(func.func(tpu-cancel-transposes))' %s | FileCheck %s

// A transpose to NCHW and back to NHWC is the identity: both go.
// CHECK-LABEL: func.func @pair
// CHECK-NOT: tosa.transpose
// CHECK: return %arg0
func.func @pair(%arg0: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %p1 = "tosa.const"() {value = dense<[0, 3, 1, 2]> : tensor<4xi32>} : () -> tensor<4xi32>
  %p2 = "tosa.const"() {value = dense<[0, 2, 3, 1]> : tensor<4xi32>} : () -> tensor<4xi32>
  %0 = tosa.transpose %arg0, %p1 : (tensor<1x4x4x8xf32>, tensor<4xi32>) -> tensor<1x8x4x4xf32>
  %1 = tosa.transpose %0, %p2 : (tensor<1x8x4x4xf32>, tensor<4xi32>) -> tensor<1x4x4x8xf32>
  return %1 : tensor<1x4x4x8xf32>
}

// Two transposes that do not cancel stay.
// CHECK-LABEL: func.func @keep
// CHECK-COUNT-2: tosa.transpose
func.func @keep(%arg0: tensor<1x4x4x8xf32>) -> tensor<8x4x1x4xf32> {
  %p1 = "tosa.const"() {value = dense<[0, 3, 1, 2]> : tensor<4xi32>} : () -> tensor<4xi32>
  %p2 = "tosa.const"() {value = dense<[1, 2, 0, 3]> : tensor<4xi32>} : () -> tensor<4xi32>
  %0 = tosa.transpose %arg0, %p1 : (tensor<1x4x4x8xf32>, tensor<4xi32>) -> tensor<1x8x4x4xf32>
  %1 = tosa.transpose %0, %p2 : (tensor<1x8x4x4xf32>, tensor<4xi32>) -> tensor<8x4x1x4xf32>
  return %1 : tensor<8x4x1x4xf32>
}
