// RUN: vtpu-translate --tpu-to-asm --config=tiny-8x8 %s | FileCheck %s

// An embedding lookup by run-time ids (docs/compiler.md, "Embedding lookups"): the ids land
// one per row in lane 0, vec.rsum spreads each over its row as fp32, a negative id gets V
// added (min(max(-V id, 0), V), V = 10), e = id - lane; each block of R = 8 table rows is
// the one-hot 1 - min(e^2, 1), converted to bf16, times the table's tile on the MXU; e
// moves on by -R for the next block. V = 10 rows: 2 row blocks, 2 matmuls accumulating.
// CHECK: .vparam [[NEGV:p[0-9]+]] scale=[-10] bias=[0]
// CHECK: .vparam [[CLAMPV:p[0-9]+]] min=0 max=10
// CHECK: .vparam [[MAX1:p[0-9]+]] max=1
// CHECK: .vparam [[ONEMINUS:p[0-9]+]] scale=[-1] bias=[1]
// CHECK: .vparam [[NEXT:p[0-9]+]] scale=[1] bias=[-8]
// CHECK: .tag "emb"
// CHECK: vec.rsum {{.*}} rows=3 dt=int32 odt=fp32
// CHECK: vec.affine {{.*}} param=[[NEGV]]
// CHECK: vec.clamp {{.*}} param=[[CLAMPV]]
// CHECK: vec.add
// CHECK: vec.sub {{.*}} bcast=1
// CHECK: vec.mul dst=ub[r3+0] a=ub[r2+0] b=ub[r2+0] rows=3 dt=fp32
// CHECK: vec.clamp {{.*}} param=[[MAX1]]
// CHECK: vec.cvt {{.*}} dt=fp32 odt=bf16
// CHECK: vec.affine {{.*}} dt=bf16 param=[[ONEMINUS]]
// CHECK: vec.affine {{.*}} param=[[NEXT]]
// CHECK: mxu.matmul mxu=0 src=r0+[[HOT:[0-9]+]] dst=r0+0 rows=3 dtype=bf16 swap=1 ||
// CHECK: mxu.matmul mxu=0 src=r0+{{[0-9]+}} dst=r0+0 rows=3 dtype=bf16 acc=1 swap=1 flag=f2
// CHECK-NOT: mxu.matmul
// CHECK: vec.cvt {{.*}} a=acc[r0+0] rows=3 dt=fp32 odt=bf16
func.func @main(%ids: tensor<3xi32> {vtpu.name = "ids"}) -> (tensor<3x8xf32> {vtpu.name = "y"}) {
  %t = "tosa.const"() {value = dense<0.5> : tensor<10x8xf32>} : () -> tensor<10x8xf32>
  %0 = tpu.embedding %ids, %t {layer = "emb"} : (tensor<3xi32>, tensor<10x8xf32>) -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}
