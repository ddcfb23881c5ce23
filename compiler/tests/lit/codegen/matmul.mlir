// RUN: vtpu-translate --tpu-to-asm --config=tiny-8x8 %s | FileCheck %s
// RUN: vtpu-translate --tpu-to-asm --config=tiny-8x8 --dtype=int8 --int8-scale=0.0625 %s | FileCheck %s --check-prefix=INT8

// tpu.matmul on one 8x8 array (docs/compiler.md, "Code generation"): the weight tile goes
// into the MXU's FIFO and shadow registers before the first matmul, which swaps it in; the
// epilogue adds the bias row (fp32, broadcast over the rows), clamps (ReLU: min=0) and
// converts the accumulators to bf16; the GELU, the matmul's only user, runs as one more
// epilogue phase (no layer of its own).
// CHECK: .vparam [[RELU:p[0-9]+]] min=0
// CHECK: dma.wfifo desc={{d[0-9]+}} src=r16 mxu=0
// CHECK-NEXT: mxu.wload mxu=0
// CHECK: .tag "fc"
// CHECK: mxu.matmul mxu=0 src=r0+0 dst=r0+0 rows=4 dtype=bf16 swap=1 flag=f2
// CHECK-NEXT: wait f2
// CHECK-NEXT: vec.add dst=acc[r0+0] a=acc[r0+0] b=ub[{{.*}}] rows=4 dt=fp32 bcast=1 flag=f4
// CHECK: vec.clamp dst=acc[r0+0] a=acc[r0+0] rows=4 dt=fp32 param=[[RELU]] flag=f4
// CHECK: vec.cvt dst=ub[r0+[[Y:[0-9]+]]] a=acc[r0+0] rows=4 dt=fp32 odt=bf16 flag=f4
// CHECK: vec.gelu dst=ub[r0+[[Y]]] a=ub[r0+[[Y]]] rows=4 dt=bf16 flag=f4
// CHECK-NOT: .tag "gelu"
// CHECK: .tag "output y"

// In INT8, int32 sums plus the int32 bias, then one RESCALE per lane to the output's scale,
// in one pass (vec.addrescale, the bias row broadcast): input scale 1/16 x weight scale
// (0.5 / 127) / output scale 1/16 = 0.5 / 127, as TOSA's m * 2^-shift with m in [2^30,
// 2^31): shift 38, m = round(2^37 / 127) = 1082196484; ReLU as its lower bound 0. The GELU
// is not fused into INT8 epilogues: it runs in fp32 rows.
// INT8: .vparam [[RQ:p[0-9]+]] mult=[1082196484, 1082196484, 1082196484, 1082196484, 1082196484, 1082196484, 1082196484, 1082196484] shift=[38, 38, 38, 38, 38, 38, 38, 38] min=0
// INT8-NOT: vec.add
// INT8: vec.addrescale dst=ub[{{.*}}] a=acc[r0+0] b=ub[{{.*}}] rows=4 param=[[RQ]] bcast=1
// INT8-NOT: vec.rescale
// INT8: .tag "gelu"
// INT8: vec.gelu {{.*}} dt=fp32
func.func @main(%x: tensor<4x8xf32> {vtpu.name = "x"}) -> (tensor<4x8xf32> {vtpu.name = "y"}) {
  %w = "tosa.const"() {value = dense<0.5> : tensor<8x8xf32>} : () -> tensor<8x8xf32>
  %b = "tosa.const"() {value = dense<0.25> : tensor<8xf32>} : () -> tensor<8xf32>
  %0 = tpu.matmul %x, %w, %b {clamp_max = 0x7FF0000000000000 : f64, clamp_min = 0.0 : f64, layer = "fc"} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = tpu.unary %0 {fn = "gelu", layer = "gelu"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
