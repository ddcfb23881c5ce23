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

// A slice of channels between a transpose to NCHW and one back (a split of an image's
// channels): the slice takes the NHWC image, both transposes go.
// CHECK-LABEL: func.func @slice_between
// CHECK-NOT: tosa.transpose
// CHECK: %[[S:.*]] = tosa.slice %arg0 {size = array<i64: 1, 4, 4, 3>, start = array<i64: 0, 0, 0, 5>}
// CHECK: return %[[S]]
func.func @slice_between(%arg0: tensor<1x4x4x8xf32>) -> tensor<1x4x4x3xf32> {
  %p1 = "tosa.const"() {value = dense<[0, 3, 1, 2]> : tensor<4xi32>} : () -> tensor<4xi32>
  %p2 = "tosa.const"() {value = dense<[0, 2, 3, 1]> : tensor<4xi32>} : () -> tensor<4xi32>
  %0 = tosa.transpose %arg0, %p1 : (tensor<1x4x4x8xf32>, tensor<4xi32>) -> tensor<1x8x4x4xf32>
  %1 = tosa.slice %0 {size = array<i64: 1, 3, 4, 4>, start = array<i64: 0, 5, 0, 0>} : (tensor<1x8x4x4xf32>) -> tensor<1x3x4x4xf32>
  %2 = tosa.transpose %1, %p2 : (tensor<1x3x4x4xf32>, tensor<4xi32>) -> tensor<1x4x4x3xf32>
  return %2 : tensor<1x4x4x3xf32>
}

// A slice read in NCHW order stays between its transposes.
// CHECK-LABEL: func.func @slice_kept
// CHECK: tosa.transpose
// CHECK: tosa.slice
func.func @slice_kept(%arg0: tensor<1x4x4x8xf32>) -> tensor<1x3x4x4xf32> {
  %p1 = "tosa.const"() {value = dense<[0, 3, 1, 2]> : tensor<4xi32>} : () -> tensor<4xi32>
  %0 = tosa.transpose %arg0, %p1 : (tensor<1x4x4x8xf32>, tensor<4xi32>) -> tensor<1x8x4x4xf32>
  %1 = tosa.slice %0 {size = array<i64: 1, 3, 4, 4>, start = array<i64: 0, 5, 0, 0>} : (tensor<1x8x4x4xf32>) -> tensor<1x3x4x4xf32>
  return %1 : tensor<1x3x4x4xf32>
}
