// RUN: vtpu-translate --tpu-to-asm --config=tiny-8x8 %s | FileCheck %s
// RUN: vtpu-translate --tpu-to-asm --config=tiny-8x8 --dtype=int8 --int8-scale=0.03125 %s | FileCheck %s --check-prefix=INT8

// Elementwise ops as vector instructions over each lane block's rows (docs/compiler.md).
// bf16: one instruction each (an add's clamp a second), in place where the op is its
// operand's last user.
// CHECK: .vparam [[RELU:p[0-9]+]] min=0
// CHECK: .vparam [[AFF:p[0-9]+]] scale=[2, 2, 2, 2, 2, 2, 2, 2] bias=[1, 1, 1, 1, 1, 1, 1, 1]
// CHECK: .vparam [[RELU6:p[0-9]+]] min=0 max=6
// CHECK: .tag "add"
// CHECK: vec.add dst=ub[r3+0] a=ub[r1+0] b=ub[r2+0] rows=4 dt=bf16
// CHECK: vec.clamp dst=ub[r3+0] a=ub[r3+0] rows=4 dt=bf16 param=[[RELU]]
// CHECK: .tag "mul"
// CHECK: vec.mul dst=ub[r3+0] a=ub[r1+0] b=ub[r2+0] rows=4 dt=bf16
// CHECK: .tag "sig"
// CHECK: vec.sigmoid {{.*}} rows=4 dt=bf16
// CHECK: .tag "aff"
// CHECK: vec.affine {{.*}} rows=4 dt=bf16 param=[[AFF]]
// CHECK: .tag "relu6"
// CHECK: vec.clamp {{.*}} rows=4 dt=bf16 param=[[RELU6]]

// INT8 with every scale 1/32 (docs/compiler.md, "INT8"): an add rescales both operands to
// the output's scale (here by 1) and adds with saturation; a product of codes needs
// s_a s_b / s_y = 1/32, in fp32 rows; a table function runs in fp32 (x 1/32 in, x 32
// out); the affine folds the scales into its constants (2 x + 1 / (1/32) = 2 x + 32); a
// clamp is a RESCALE by 1 (2^30 x 2^-30) bounded by 0 and min(127, 6 / (1/32)) = 127.
// INT8: .vparam [[ONE:p[0-9]+]] scale=[1]
// INT8: .vparam [[S:p[0-9]+]] scale=[0.03125]
// INT8: .vparam [[INV:p[0-9]+]] scale=[32]
// INT8: .vparam [[AFF:p[0-9]+]] scale=[2, 2, 2, 2, 2, 2, 2, 2] bias=[32, 32, 32, 32, 32, 32, 32, 32]
// INT8: .vparam [[RQ:p[0-9]+]] mult=[1073741824] shift=[30] min=0 max=127
// INT8: .tag "add"
// INT8: vec.affine {{.*}} dt=int8 param=[[ONE]]
// INT8: vec.affine {{.*}} dt=int8 param=[[ONE]]
// INT8: vec.add {{.*}} dt=int8
// INT8: .tag "mul"
// INT8: vec.mul {{.*}} dt=fp32
// INT8-NEXT: wait f3
// INT8-NEXT: vec.affine {{.*}} dt=fp32 param=[[S]]
// INT8: .tag "sig"
// INT8: vec.affine {{.*}} dt=fp32 param=[[S]]
// INT8: vec.sigmoid {{.*}} dt=fp32
// INT8: vec.affine {{.*}} dt=fp32 param=[[INV]]
// INT8: .tag "aff"
// INT8: vec.affine {{.*}} dt=int8 param=[[AFF]]
// INT8: .tag "relu6"
// INT8: vec.rescale {{.*}} param=[[RQ]] dt=int8 odt=int8
func.func @main(%a: tensor<4x8xf32> {vtpu.name = "a"}, %b: tensor<4x8xf32> {vtpu.name = "b"}) -> (tensor<4x8xf32> {vtpu.name = "y"}) {
  %s = "tosa.const"() {value = dense<2.0> : tensor<8xf32>} : () -> tensor<8xf32>
  %t = "tosa.const"() {value = dense<1.0> : tensor<8xf32>} : () -> tensor<8xf32>
  %0 = tpu.add %a, %b {clamp_max = 0x7FF0000000000000 : f64, clamp_min = 0.0 : f64, layer = "add"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = tpu.binary %0, %b {kind = "mul", layer = "mul"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = tpu.unary %1 {fn = "sigmoid", layer = "sig"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = tpu.affine %2, %s, %t {layer = "aff"} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %4 = tpu.clamp %3 {clamp_max = 6.0 : f64, clamp_min = 0.0 : f64, layer = "relu6"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}
