// RUN: vtpu-translate --tpu-to-asm --config=tiny-8x8 %s | FileCheck %s

// Layer normalization and softmax in fp32 rows (docs/compiler.md, "Transformers"), here
// over 12 features: two lane blocks, the second with 4 padding lanes.
// Layer norm: the blocks added, one vec.rsum (every lane gets the row's sum), times 1/12
// for the mean; the padding lanes of the partial block masked back to zero after the mean
// is taken out; the squares summed alike, 1/12 and epsilon, rsqrt, one rounding to bf16.
// CHECK: .vparam [[MEAN:p[0-9]+]] scale=[0.08333333333333333]{{$}}
// CHECK: .vparam [[VAR:p[0-9]+]] scale=[0.08333333333333333] bias=[1e-05]
// CHECK: .tag "ln"
// CHECK-COUNT-2: vec.cvt {{.*}} rows=4 dt=bf16 odt=fp32
// CHECK: vec.add dst=ub[r0+[[PART:[0-9]+]]]
// CHECK: vec.rsum dst=ub[r0+[[SUM:[0-9]+]]] a=ub[r0+[[PART]]] rows=4 dt=fp32 odt=fp32
// CHECK: vec.affine dst=ub[r0+[[SUM]]] a=ub[r0+[[SUM]]] rows=4 dt=fp32 param=[[MEAN]]
// CHECK-COUNT-2: vec.sub {{.*}} b=ub[r0+[[SUM]]] rows=4 dt=fp32
// CHECK: vec.mul {{.*}} rows=4 dt=fp32 bcast=1
// CHECK: vec.rsum dst=ub[r0+[[SUM]]]
// CHECK: vec.affine dst=ub[r0+[[SUM]]] a=ub[r0+[[SUM]]] rows=4 dt=fp32 param=[[VAR]]
// CHECK: vec.rsqrt dst=ub[r0+[[SUM]]]
// CHECK: vec.cvt {{.*}} dt=fp32 odt=bf16
// CHECK: vec.cvt {{.*}} dt=fp32 odt=bf16
// Softmax: per block the row max (the partial block plus a -inf mask on its padding
// lanes, so padding never wins), exp of the difference, row sums, one reciprocal.
// CHECK: .tag "sm"
// CHECK: vec.rmax
// CHECK: vec.add {{.*}} dt=fp32 bcast=1
// CHECK: vec.rmax
// CHECK: vec.max
// CHECK: vec.exp
// CHECK: vec.rsum
// CHECK: vec.exp
// CHECK: vec.rsum
// CHECK: vec.add
// CHECK: vec.recip
// CHECK-NOT: vec.recip
// Log-softmax: the exponentials go to a spare row (x - max is kept), one vec.log of the
// sums, the difference taken; the partial block's padding lanes are set back to 0 by a max
// with the inverse mask (the result is never positive).
// CHECK: .tag "lsm"
// CHECK: vec.rmax
// CHECK: li r7, [[EXPS:[0-9]+]]
// CHECK-NEXT: vec.exp dst=ub[r7+0] a=ub[r2+0]
// CHECK: vec.rsum {{.*}} a=ub[r7+0]
// CHECK: vec.log
// CHECK-NOT: vec.recip
// CHECK: vec.sub
// CHECK: vec.sub
// CHECK-NEXT: wait {{.*}} || li r4
// CHECK-NEXT: vec.max {{.*}} dt=fp32 bcast=1
// CHECK: .tag "output ln"
func.func @main(%a: tensor<4x12xf32> {vtpu.name = "a"}) -> (tensor<4x12xf32> {vtpu.name = "ln"}, tensor<4x12xf32> {vtpu.name = "sm"}, tensor<4x12xf32> {vtpu.name = "lsm"}) {
  %0 = tpu.layernorm %a {epsilon = 1.0e-5 : f64, layer = "ln"} : (tensor<4x12xf32>) -> tensor<4x12xf32>
  %1 = tpu.softmax %a {layer = "sm"} : (tensor<4x12xf32>) -> tensor<4x12xf32>
  %2 = tpu.softmax %a {layer = "lsm", log} : (tensor<4x12xf32>) -> tensor<4x12xf32>
  return %0, %1, %2 : tensor<4x12xf32>, tensor<4x12xf32>, tensor<4x12xf32>
}
