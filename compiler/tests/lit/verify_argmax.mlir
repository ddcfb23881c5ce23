// RUN: not vtpu-opt %s 2>&1 | FileCheck %s

// tpu.argmax gives one i32 index per row of its input; a result of another size is rejected
// when parsed.
// CHECK: 'tpu.argmax' op the output needs one element per input row (3), not 4
func.func @bad(%arg0: tensor<3x5xf32>) -> tensor<4xi32> {
  %0 = tpu.argmax %arg0 {layer = "a"} : (tensor<3x5xf32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}
