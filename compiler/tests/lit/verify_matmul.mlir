// RUN: not vtpu-opt %s --split-input-file 2>&1 | FileCheck %s

// tpu.matmul reads rows of K features against a [K, N] weight and writes rows of N: shapes
// that do not chain are rejected when parsed, not miscompiled.
// CHECK: 'tpu.matmul' op input rows of 3 features and output rows of 4 do not match the weight [2, 4]
func.func @k_mismatch(%arg0: tensor<5x3xf32>) -> tensor<5x4xf32> {
  %w = "tosa.const"() {value = dense<1.0> : tensor<2x4xf32>} : () -> tensor<2x4xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = tpu.matmul %arg0, %w, %b {clamp_max = 1.0 : f64, clamp_min = 0.0 : f64, layer = "m"} : (tensor<5x3xf32>, tensor<2x4xf32>, tensor<4xf32>) -> tensor<5x4xf32>
  return %0 : tensor<5x4xf32>
}

// -----

// CHECK: 'tpu.matmul' op output rows differ from the input's
func.func @rows(%arg0: tensor<5x2xf32>) -> tensor<6x4xf32> {
  %w = "tosa.const"() {value = dense<1.0> : tensor<2x4xf32>} : () -> tensor<2x4xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = tpu.matmul %arg0, %w, %b {clamp_max = 1.0 : f64, clamp_min = 0.0 : f64, layer = "m"} : (tensor<5x2xf32>, tensor<2x4xf32>, tensor<4xf32>) -> tensor<6x4xf32>
  return %0 : tensor<6x4xf32>
}

// -----

// CHECK: 'tpu.matmul' op bias needs 4 values
func.func @bias(%arg0: tensor<5x2xf32>) -> tensor<5x4xf32> {
  %w = "tosa.const"() {value = dense<1.0> : tensor<2x4xf32>} : () -> tensor<2x4xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<3xf32>} : () -> tensor<3xf32>
  %0 = tpu.matmul %arg0, %w, %b {clamp_max = 1.0 : f64, clamp_min = 0.0 : f64, layer = "m"} : (tensor<5x2xf32>, tensor<2x4xf32>, tensor<3xf32>) -> tensor<5x4xf32>
  return %0 : tensor<5x4xf32>
}

// -----

// The ids of an embedding lookup are int32 rows; its output is one table row per id.
// CHECK: 'tpu.embedding' op the output must be [ids, D] = [3, 8] for a [V, D] table
func.func @embedding(%arg0: tensor<3xi32>) -> tensor<3x4xf32> {
  %t = "tosa.const"() {value = dense<1.0> : tensor<10x8xf32>} : () -> tensor<10x8xf32>
  %0 = tpu.embedding %arg0, %t {layer = "e"} : (tensor<3xi32>, tensor<10x8xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
