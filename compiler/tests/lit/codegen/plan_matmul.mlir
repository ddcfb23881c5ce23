// RUN: vtpu-opt --tpu-plan-codegen='config=tpu-v4-core dtype=bf16' %s | FileCheck %s
// RUN: vtpu-opt --tpu-plan-codegen='config=tpu-v4-core dtype=int8' %s | FileCheck %s --check-prefix=INT8

// What the code-generation planner decides around tpu.matmul (compiler/codegen/plan.cpp).
// INT8 fuses nothing into epilogues (its epilogues requantize), streams stay.
// INT8-NOT: tpu.epilogue
// INT8-NOT: tpu.fused_into

// Two matmuls reading one activation (attention's query and key projections), with a
// reshape of it between them that keeps its rows: one stream, generated at the first.
// CHECK-LABEL: func.func @stream
// CHECK: tpu.matmul {{.*}}tpu.stream = 0 : i64
// CHECK: tpu.reshape {{.*}}tpu.stream = 0 : i64
// CHECK: tpu.matmul {{.*}}tpu.stream = 0 : i64
// CHECK-NOT: tpu.stream
// CHECK: return
// INT8-LABEL: func.func @stream
// INT8: tpu.matmul {{.*}}tpu.stream = 0 : i64
func.func @stream(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<2x2x8xf32>, tensor<4x8xf32>) {
  %w = "tosa.const"() {value = dense<0.5> : tensor<8x8xf32>} : () -> tensor<8x8xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<8xf32>} : () -> tensor<8xf32>
  %q = tpu.matmul %x, %w, %b {clamp_max = 0x7FF0000000000000 : f64, clamp_min = 0xFFF0000000000000 : f64, layer = "q"} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %r = tpu.reshape %x {layer = "r"} : (tensor<4x8xf32>) -> tensor<2x2x8xf32>
  %k = tpu.matmul %x, %w, %b {clamp_max = 0x7FF0000000000000 : f64, clamp_min = 0xFFF0000000000000 : f64, layer = "k"} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %q, %r, %k : tensor<4x8xf32>, tensor<2x2x8xf32>, tensor<4x8xf32>
}

// A table function that is the matmul's only user runs in its epilogues.
// CHECK-LABEL: func.func @gelu
// CHECK: tpu.matmul {{.*}}tpu.epilogue = "elementwise", tpu.id = [[ID:[0-9]+]] : i64
// CHECK: tpu.unary {{.*}}tpu.fused_into = [[ID]] : i64, tpu.role = "elementwise"
func.func @gelu(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w = "tosa.const"() {value = dense<0.5> : tensor<8x8xf32>} : () -> tensor<8x8xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<8xf32>} : () -> tensor<8xf32>
  %0 = tpu.matmul %x, %w, %b {clamp_max = 0x7FF0000000000000 : f64, clamp_min = 0xFFF0000000000000 : f64, layer = "fc"} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = tpu.unary %0 {fn = "gelu", layer = "gelu"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// GPT-2's tanh GELU as a chain: every link reads the matmul's output or earlier links.
// h*h needs h later, so it goes to the scratch buffer (slot 1); the last link ends in the
// output's buffer (slot 0).
// CHECK-LABEL: func.func @chain
// CHECK: tpu.matmul {{.*}}tpu.epilogue = "chain", tpu.id = [[ID:[0-9]+]] : i64
// CHECK: tpu.binary {{.*}}kind = "mul"{{.*}}tpu.fused_into = [[ID]] : i64, tpu.role = "link", tpu.slot = 1 : i64
// CHECK: tpu.unary {{.*}}tpu.fused_into = [[ID]] : i64, tpu.role = "link", tpu.slot = 1 : i64
// CHECK: tpu.binary {{.*}}kind = "mul"{{.*}}tpu.fused_into = [[ID]] : i64, tpu.role = "link", tpu.slot = 0 : i64
func.func @chain(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w = "tosa.const"() {value = dense<0.5> : tensor<8x8xf32>} : () -> tensor<8x8xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<8xf32>} : () -> tensor<8xf32>
  %h = tpu.matmul %x, %w, %b {clamp_max = 0x7FF0000000000000 : f64, clamp_min = 0xFFF0000000000000 : f64, layer = "fc"} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %0 = tpu.binary %h, %h {kind = "mul", layer = "sq"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = tpu.unary %0 {fn = "tanh", layer = "t"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = tpu.binary %1, %h {kind = "mul", layer = "m"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// BERT's post-norm: the residual add (its other operand a model input, in the unified
// buffer before the matmul) runs in the epilogues, which also convert the sum to fp32 for
// the layer norm; the layer norm applies the gamma/beta step after it.
// CHECK-LABEL: func.func @post_norm
// CHECK: tpu.matmul {{.*}}tpu.epilogue = "elementwise", tpu.id = [[MM:[0-9]+]] : i64
// CHECK: tpu.add {{.*}}tpu.fused_into = [[MM]] : i64, tpu.role = "elementwise"
// CHECK: tpu.layernorm {{.*}}tpu.epilogue = "affine", tpu.fused_into = [[MM]] : i64, tpu.id = [[LN:[0-9]+]] : i64, tpu.role = "layernorm"
// CHECK: tpu.affine {{.*}}tpu.fused_into = [[LN]] : i64, tpu.role = "ln-affine"
func.func @post_norm(%x: tensor<4x8xf32>, %res: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w = "tosa.const"() {value = dense<0.5> : tensor<8x8xf32>} : () -> tensor<8x8xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<8xf32>} : () -> tensor<8xf32>
  %g = "tosa.const"() {value = dense<2.0> : tensor<8xf32>} : () -> tensor<8xf32>
  %0 = tpu.matmul %x, %w, %b {clamp_max = 0x7FF0000000000000 : f64, clamp_min = 0xFFF0000000000000 : f64, layer = "fc"} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = tpu.add %0, %res {clamp_max = 0x7FF0000000000000 : f64, clamp_min = 0xFFF0000000000000 : f64, layer = "res"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = tpu.layernorm %1 {epsilon = 1.0e-5 : f64, layer = "ln"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = tpu.affine %2, %g, %b {layer = "gamma"} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}

// An add whose other operand is computed after the matmul is not in the unified buffer
// when the matmul's epilogues run: nothing fused.
// CHECK-LABEL: func.func @late_operand
// CHECK-NOT: tpu.epilogue
// CHECK: return
func.func @late_operand(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w = "tosa.const"() {value = dense<0.5> : tensor<8x8xf32>} : () -> tensor<8x8xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<8xf32>} : () -> tensor<8xf32>
  %0 = tpu.matmul %x, %w, %b {clamp_max = 0x7FF0000000000000 : f64, clamp_min = 0xFFF0000000000000 : f64, layer = "fc"} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = tpu.unary %x {fn = "exp", layer = "e"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = tpu.add %0, %1 {clamp_max = 0x7FF0000000000000 : f64, clamp_min = 0xFFF0000000000000 : f64, layer = "res"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}
