// RUN: vtpu-opt --tpu-plan-codegen='config=tiny-8x8 dtype=bf16' %S/attention.mlir | FileCheck %s
// RUN: vtpu-opt --tpu-plan-codegen='config=tiny-8x8 dtype=bf16' %s | FileCheck %s --check-prefix=LAYOUT

// The planner's view of attention.mlir: the scale and the softmax run in the scores' batch
// matmul's epilogues (the scale is not a power of two, so it stays there), and the context
// (its right-hand side a model input, there at the scores' turn) joins the scores' stream.
// CHECK: tpu.batch_matmul {{.*}}layer = "scores", tpu.epilogue = "softmax", tpu.id = [[S:[0-9]+]] : i64
// CHECK: tpu.affine {{.*}}tpu.fused_into = [[S]] : i64, tpu.role = "softmax-scale"
// CHECK: tpu.softmax {{.*}}tpu.fused_into = [[S]] : i64, tpu.role = "softmax"
// CHECK: tpu.batch_matmul {{.*}}layer = "context", tpu.fused_into = [[S]] : i64, tpu.role = "context"
// CHECK-NOT: tpu.epilogue

// Attention's layout on an 8x8 array (H = 2 heads of d = 4 lanes; the three projections
// are one stream): the queries' and the values' head splits are views read in place (the
// queries', a left-hand side, because a float matmul's output has a row of room after it);
// the keys' split and transpose to [B, H, d, S] is a head transpose; the context's heads
// merge in one pass. The second op of each pair has nothing to generate at its turn. The
// keys' and values' transposed heads reach the batch matmuls' right-hand sides, so their
// splits may store them early; so may the reshapes after them (the emitter drops those,
// stored already).
// LAYOUT-LABEL: func.func @heads
// LAYOUT: tpu.reshape {{.*}}layer = "q_split", tpu.heads = "view"}
// LAYOUT: tpu.transpose {{.*}}layer = "q_heads", perm = array<i64: 0, 2, 1, 3>, tpu.heads = "view"}
// LAYOUT: tpu.reshape {{.*}}layer = "q3"} :
// LAYOUT: tpu.reshape {{.*}}layer = "k_split", tpu.early_store, tpu.heads = "transpose"}
// LAYOUT: tpu.transpose {{.*}}layer = "k_heads", perm = array<i64: 0, 2, 3, 1>, tpu.heads = "transpose"}
// LAYOUT: tpu.reshape {{.*}}layer = "k3", tpu.early_store}
// LAYOUT: tpu.reshape {{.*}}layer = "v_split", tpu.early_store, tpu.heads = "view"}
// LAYOUT: tpu.transpose {{.*}}layer = "v_heads", perm = array<i64: 0, 2, 1, 3>, tpu.heads = "view"}
// LAYOUT: tpu.reshape {{.*}}layer = "v3", tpu.early_store}
// LAYOUT: tpu.batch_matmul {{.*}}layer = "scores", tpu.epilogue = "softmax", tpu.id = [[S:[0-9]+]] : i64
// LAYOUT: tpu.batch_matmul {{.*}}layer = "context", tpu.fused_into = [[S]] : i64, tpu.role = "context"}
// LAYOUT: tpu.reshape {{.*}}layer = "c4"} :
// LAYOUT: tpu.transpose {{.*}}layer = "merge", perm = array<i64: 0, 2, 1, 3>, tpu.heads = "merge"}
// LAYOUT: tpu.reshape {{.*}}layer = "merged", tpu.heads = "merge"}
func.func @heads(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %w = "tosa.const"() {value = dense<0.5> : tensor<8x8xf32>} : () -> tensor<8x8xf32>
  %b = "tosa.const"() {value = dense<0.0> : tensor<8xf32>} : () -> tensor<8xf32>
  %q = tpu.matmul %x, %w, %b {clamp_max = 0x7FF0000000000000 : f64, clamp_min = 0xFFF0000000000000 : f64, layer = "q"} : (tensor<1x4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %k = tpu.matmul %x, %w, %b {clamp_max = 0x7FF0000000000000 : f64, clamp_min = 0xFFF0000000000000 : f64, layer = "k"} : (tensor<1x4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %v = tpu.matmul %x, %w, %b {clamp_max = 0x7FF0000000000000 : f64, clamp_min = 0xFFF0000000000000 : f64, layer = "v"} : (tensor<1x4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %q4 = tpu.reshape %q {layer = "q_split"} : (tensor<1x4x8xf32>) -> tensor<1x4x2x4xf32>
  %qt = tpu.transpose %q4 {layer = "q_heads", perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %q3 = tpu.reshape %qt {layer = "q3"} : (tensor<1x2x4x4xf32>) -> tensor<2x4x4xf32>
  %k4 = tpu.reshape %k {layer = "k_split"} : (tensor<1x4x8xf32>) -> tensor<1x4x2x4xf32>
  %kt = tpu.transpose %k4 {layer = "k_heads", perm = array<i64: 0, 2, 3, 1>} : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %k3 = tpu.reshape %kt {layer = "k3"} : (tensor<1x2x4x4xf32>) -> tensor<2x4x4xf32>
  %v4 = tpu.reshape %v {layer = "v_split"} : (tensor<1x4x8xf32>) -> tensor<1x4x2x4xf32>
  %vt = tpu.transpose %v4 {layer = "v_heads", perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %v3 = tpu.reshape %vt {layer = "v3"} : (tensor<1x2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = tpu.batch_matmul %q3, %k3 {layer = "scores"} : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %p = tpu.softmax %s {layer = "softmax"} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %c = tpu.batch_matmul %p, %v3 {layer = "context"} : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %c4 = tpu.reshape %c {layer = "c4"} : (tensor<2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %ct = tpu.transpose %c4 {layer = "merge", perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x4xf32>) -> tensor<1x4x2x4xf32>
  %y = tpu.reshape %ct {layer = "merged"} : (tensor<1x4x2x4xf32>) -> tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}

// A head split of a model input (no row of room after it) read as a left-hand side: no view,
// the split and transpose move data. As a right-hand side it is a view, which its split
// may store early (or, where it did not, the reshape after it); the queries, a left-hand
// side, are not stored.
// LAYOUT-LABEL: func.func @no_room
// LAYOUT: tpu.reshape {{.*}}layer = "q_split"} :
// LAYOUT: tpu.transpose {{.*}}layer = "q_heads", perm = array<i64: 0, 2, 1, 3>} :
// LAYOUT: tpu.reshape {{.*}}layer = "q3"} :
// LAYOUT: tpu.reshape {{.*}}layer = "k_split", tpu.early_store, tpu.heads = "view"}
// LAYOUT: tpu.transpose {{.*}}layer = "k_heads", perm = array<i64: 0, 2, 1, 3>, tpu.heads = "view"}
// LAYOUT: tpu.reshape {{.*}}layer = "k3", tpu.early_store}
func.func @no_room(%q: tensor<1x4x8xf32>, %k: tensor<1x4x8xf32>) -> tensor<2x4x4xf32> {
  %q4 = tpu.reshape %q {layer = "q_split"} : (tensor<1x4x8xf32>) -> tensor<1x4x2x4xf32>
  %qt = tpu.transpose %q4 {layer = "q_heads", perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %q3 = tpu.reshape %qt {layer = "q3"} : (tensor<1x2x4x4xf32>) -> tensor<2x4x4xf32>
  %k4 = tpu.reshape %k {layer = "k_split"} : (tensor<1x4x8xf32>) -> tensor<1x4x2x4xf32>
  %kt = tpu.transpose %k4 {layer = "k_heads", perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %k3 = tpu.reshape %kt {layer = "k3"} : (tensor<1x2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = tpu.batch_matmul %q3, %k3 {layer = "scores"} : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %s : tensor<2x4x4xf32>
}

// The context's right-hand side is computed after the scores: it is not there at their
// turn, so the context does not join their stream (the softmax still runs in their
// epilogues). That value may go to HBM early; the keys, also an output, may not.
// LAYOUT-LABEL: func.func @late_value
// LAYOUT: tpu.unary {{.*}}layer = "k2"} :
// LAYOUT: tpu.batch_matmul {{.*}}layer = "scores", tpu.epilogue = "softmax"
// LAYOUT: tpu.unary {{.*}}layer = "v2", tpu.early_store}
// LAYOUT: tpu.batch_matmul {{.*}}layer = "context"} :
func.func @late_value(%q: tensor<2x4x4xf32>, %k: tensor<2x4x4xf32>, %v: tensor<2x4x4xf32>) -> (tensor<2x4x4xf32>, tensor<2x4x4xf32>) {
  %k2 = tpu.unary %k {fn = "exp", layer = "k2"} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = tpu.batch_matmul %q, %k2 {layer = "scores"} : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %p = tpu.softmax %s {layer = "softmax"} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %v2 = tpu.unary %v {fn = "exp", layer = "v2"} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %c = tpu.batch_matmul %p, %v2 {layer = "context"} : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %c, %k2 : tensor<2x4x4xf32>, tensor<2x4x4xf32>
}

// The transposed heads are also an output: they must be made, so no merge.
// LAYOUT-LABEL: func.func @no_merge
// LAYOUT-NOT: tpu.heads
// LAYOUT: return
func.func @no_merge(%c: tensor<1x2x4x4xf32>) -> (tensor<1x4x8xf32>, tensor<1x4x2x4xf32>) {
  %ct = tpu.transpose %c {layer = "merge", perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x4xf32>) -> tensor<1x4x2x4xf32>
  %y = tpu.reshape %ct {layer = "merged"} : (tensor<1x4x2x4xf32>) -> tensor<1x4x8xf32>
  return %y, %ct : tensor<1x4x8xf32>, tensor<1x4x2x4xf32>
}
