// RUN: vtpu-opt --pass-pipeline='builtin.module(func.func(tpu-lower-tosa))' %s | FileCheck %s

// An int32 model output made by a matmul (MatMulInteger): the tpu.cast to i32 folds into
// the matmul, which then writes int32 rows from its accumulators; the integer input's cast
// to the activation domain stays.
// CHECK-LABEL: func.func @matmul_integer
// CHECK: %[[A:.*]] = tpu.cast %arg0 {layer = "input a"} : (tensor<2x3xi32>) -> tensor<2x3xf32>
// CHECK: tpu.matmul %[[A]], {{.*}} -> tensor<2x4xi32>
// CHECK-NOT: tpu.cast
// CHECK: return
func.func @matmul_integer(%arg0: tensor<2x3xi32>) -> tensor<2x4xi32> {
  %a = tpu.cast %arg0 {layer = "input a"} : (tensor<2x3xi32>) -> tensor<2x3xf32>
  %w = "tosa.const"() {value = dense<1.0> : tensor<4x3xf32>} : () -> tensor<4x3xf32> loc("mmi")
  %b = "tosa.const"() {value = dense<0.0> : tensor<4xf32>} : () -> tensor<4xf32> loc("mmi")
  %0 = tosa.fully_connected %a, %w, %b : (tensor<2x3xf32>, tensor<4x3xf32>, tensor<4xf32>) -> tensor<2x4xf32> loc("mmi")
  %1 = tpu.cast %0 {layer = "output y"} : (tensor<2x4xf32>) -> tensor<2x4xi32>
  return %1 : tensor<2x4xi32>
}

// A result that other layers read too keeps its activation dtype; the output is a cast.
// CHECK-LABEL: func.func @shared_result
// CHECK: %[[M:.*]] = tpu.matmul {{.*}} -> tensor<2x4xf32>
// CHECK: tpu.cast %[[M]] {layer = "output y"} : (tensor<2x4xf32>) -> tensor<2x4xi32>
func.func @shared_result(%arg0: tensor<2x3xf32>) -> (tensor<2x4xi32>, tensor<2x4xf32>) {
  %w = "tosa.const"() {value = dense<1.0> : tensor<4x3xf32>} : () -> tensor<4x3xf32> loc("mm")
  %b = "tosa.const"() {value = dense<0.0> : tensor<4xf32>} : () -> tensor<4xf32> loc("mm")
  %0 = tosa.fully_connected %arg0, %w, %b : (tensor<2x3xf32>, tensor<4x3xf32>, tensor<4xf32>) -> tensor<2x4xf32> loc("mm")
  %1 = tpu.cast %0 {layer = "output y"} : (tensor<2x4xf32>) -> tensor<2x4xi32>
  %2 = tosa.sigmoid %0 : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("sig")
  return %1, %2 : tensor<2x4xi32>, tensor<2x4xf32>
}
