// RUN: vtpu-translate --tpu-to-asm --config=tiny-8x8 %s | FileCheck %s

// QuantizeLinear kept dequantized (docs/compiler.md, "INT8"): in fp32 rows x / s (s =
// 1/8), clamp to [-128, 127], round half to even through int32, times s, then bf16.
// CHECK: .vparam [[DIV:p[0-9]+]] scale=[8]
// CHECK: .vparam [[RANGE:p[0-9]+]] min=-128 max=127
// CHECK: .vparam [[MUL:p[0-9]+]] scale=[0.125]
// CHECK: .tag "q"
// CHECK: vec.cvt {{.*}} dt=bf16 odt=fp32
// CHECK: vec.affine {{.*}} param=[[DIV]]
// CHECK: vec.clamp {{.*}} param=[[RANGE]]
// CHECK: vec.cvt {{.*}} dt=fp32 odt=int32
// CHECK: vec.cvt {{.*}} dt=int32 odt=fp32
// CHECK: vec.affine {{.*}} param=[[MUL]]
// CHECK: vec.cvt {{.*}} dt=fp32 odt=bf16
func.func @main(%x: tensor<1x2x2x8xf32> {vtpu.name = "x"}) -> (tensor<1x2x2x8xf32> {vtpu.name = "fq"}) {
  %fq = tpu.fake_quant %x {hi = 127.0 : f64, layer = "q", lo = -128.0 : f64, scale = 0.125 : f64} : (tensor<1x2x2x8xf32>) -> tensor<1x2x2x8xf32>
  return %fq : tensor<1x2x2x8xf32>
}
