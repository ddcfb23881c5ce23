// RUN: not vtpu-opt %s --split-input-file 2>&1 | FileCheck %s

// Layout ops move elements, never invent or drop them: a concat's inputs add up to its
// output along the axis, a slice's window lies inside its input, a reshape keeps the count.
// CHECK: 'tpu.concat' op inputs add up to 5 along axis 1, the output has 6
func.func @concat(%arg0: tensor<2x2xf32>, %arg1: tensor<2x3xf32>) -> tensor<2x6xf32> {
  %0 = tpu.concat %arg0, %arg1 {axis = 1 : i64, layer = "c"} : (tensor<2x2xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

// CHECK: 'tpu.concat' op inputs must match the output but along axis 1
func.func @concat_rows(%arg0: tensor<2x2xf32>, %arg1: tensor<3x3xf32>) -> tensor<2x5xf32> {
  %0 = tpu.concat %arg0, %arg1 {axis = 1 : i64, layer = "c"} : (tensor<2x2xf32>, tensor<3x3xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// CHECK: 'tpu.slice' op window [3, 6) of dimension 1 is outside [0, 5)
func.func @slice(%arg0: tensor<2x5xf32>) -> tensor<2x3xf32> {
  %0 = tpu.slice %arg0 {layer = "s", start = array<i64: 0, 3>} : (tensor<2x5xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK: 'tpu.reshape' op changes the number of elements
func.func @reshape(%arg0: tensor<2x5xf32>) -> tensor<3x3xf32> {
  %0 = tpu.reshape %arg0 {layer = "r"} : (tensor<2x5xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}
