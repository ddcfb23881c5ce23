// RUN: not vtpu-opt %s 2>&1 | FileCheck %s

// tpu.unary names a vector-unit table function; anything else is rejected when parsed,
// before codegen could emit an instruction the ISA does not have.
// CHECK: 'tpu.unary' op fn 'softplus' is not a vector-unit table function
func.func @bad(%arg0: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = tpu.unary %arg0 {fn = "softplus", layer = "l"} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}
