// RUN: vtpu-opt --pass-pipeline='builtin.module(func.func(tpu-lower-tosa))' %s | FileCheck %s

// A reshape of an activation is a tpu.reshape; a reshape of a constant stays for its user
// and goes once unused.
// CHECK-LABEL: func.func @reshape
// CHECK: tpu.reshape %arg0 {layer = "r"} : (tensor<2x6xf32>) -> tensor<3x4xf32>
// CHECK-NOT: tosa.reshape
func.func @reshape(%arg0: tensor<2x6xf32>) -> tensor<3x4xf32> {
  %0 = tosa.reshape %arg0 {new_shape = array<i64: 3, 4>} : (tensor<2x6xf32>) -> tensor<3x4xf32> loc("r")
  return %0 : tensor<3x4xf32>
}

// A max pool is tpu.pool "max" with TOSA's window.
// CHECK-LABEL: func.func @max_pool
// CHECK: tpu.pool %arg0 {kernel = array<i64: 2, 2>, kind = "max", layer = "mp", pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>}
func.func @max_pool(%arg0: tensor<1x4x4x3xf32>) -> tensor<1x2x2x3xf32> {
  %0 = tosa.max_pool2d %arg0 {kernel = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x4x4x3xf32>) -> tensor<1x2x2x3xf32> loc("mp")
  return %0 : tensor<1x2x2x3xf32>
}

// An image's NCHW transpose and flatten that no matmul reads move data: tpu.transpose, then
// tpu.reshape of its result (only before a matmul does the order fold into weights).
// CHECK-LABEL: func.func @flatten_not_matmul
// CHECK: %[[T:.*]] = tpu.transpose %arg0 {layer = "nchw", perm = array<i64: 0, 3, 1, 2>}
// CHECK: %[[R:.*]] = tpu.reshape %[[T]] {layer = "flat"}
// CHECK: tpu.unary %[[R]] {fn = "sigmoid", layer = "s"}
func.func @flatten_not_matmul(%arg0: tensor<1x1x2x2xf32>) -> tensor<1x4xf32> {
  %p = "tosa.const"() {value = dense<[0, 3, 1, 2]> : tensor<4xi32>} : () -> tensor<4xi32>
  %0 = tosa.transpose %arg0, %p : (tensor<1x1x2x2xf32>, tensor<4xi32>) -> tensor<1x2x1x2xf32> loc("nchw")
  %1 = tosa.reshape %0 {new_shape = array<i64: 1, 4>} : (tensor<1x2x1x2xf32>) -> tensor<1x4xf32> loc("flat")
  %2 = tosa.sigmoid %1 : (tensor<1x4xf32>) -> tensor<1x4xf32> loc("s")
  return %2 : tensor<1x4xf32>
}
