// RUN: vtpu-translate --tpu-to-asm --config=tiny-8x8 %s | FileCheck %s

// Attention's scores, scale, softmax and context (docs/compiler.md, "Transformers"): the
// batch matmuls' right-hand sides go to HBM and come back through the weight FIFO; the
// scale and softmax run in the scores' epilogues straight from the fp32 accumulators
// (scale, -inf on the 4 padding lanes, row max, subtract, exp, row sum, reciprocal,
// multiply, convert), and the context's matmuls join the stream, each after the softmax
// of its rows.
// CHECK: .vparam [[SCALE:p[0-9]+]] scale=[0.30000001192092896, 0.30000001192092896, 0.30000001192092896, 0.30000001192092896, 0, 0, 0, 0]
// CHECK: .tag "scores"
// CHECK: dma.store
// CHECK: dma.wfifo
// CHECK: mxu.matmul mxu=0 src=r0+0 dst=r0+0 rows=4 dtype=bf16 swap=1 flag=f2
// CHECK: vec.affine dst=acc[r0+0] a=acc[r0+0] rows=4 dt=fp32 param=[[SCALE]]
// CHECK: vec.add dst=acc[r0+0] a=acc[r0+0] b=ub[{{.*}}] rows=4 dt=fp32 bcast=1
// CHECK: vec.rmax {{.*}} a=acc[r0+0]
// CHECK: vec.sub dst=acc[r0+0]
// CHECK: vec.exp dst=acc[r0+0]
// CHECK: vec.rsum {{.*}} a=acc[r0+0]
// CHECK: vec.recip
// CHECK: vec.mul dst=acc[r0+0]
// CHECK: vec.cvt dst=ub[r0+[[P:[0-9]+]]] a=acc[r0+0] rows=4 dt=fp32 odt=bf16
// CHECK: mxu.matmul mxu=0 src=r0+[[P]] dst=r0+8 rows=4 dtype=bf16 swap=1
// No layers of their own for the scale and the softmax.
// CHECK-NOT: .tag "scale"
// CHECK-NOT: .tag "softmax"
// CHECK-NOT: .tag "context"
// CHECK: .tag "output y"
func.func @main(%q: tensor<2x4x8xf32> {vtpu.name = "q"}, %k: tensor<2x8x4xf32> {vtpu.name = "k"}, %v: tensor<2x4x8xf32> {vtpu.name = "v"}) -> (tensor<2x4x8xf32> {vtpu.name = "y"}) {
  %sc = "tosa.const"() {value = dense<0.3> : tensor<4xf32>} : () -> tensor<4xf32>
  %z = "tosa.const"() {value = dense<0.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %s = tpu.batch_matmul %q, %k {layer = "scores"} : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %a = tpu.affine %s, %sc, %z {layer = "scale"} : (tensor<2x4x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x4xf32>
  %p = tpu.softmax %a {layer = "softmax"} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %y = tpu.batch_matmul %p, %v {layer = "context"} : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}
