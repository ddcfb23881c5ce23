// RUN: vtpu-opt --tpu-plan-codegen='config=tiny-8x8 dtype=bf16' %S/attention.mlir | FileCheck %s

// The planner's view of attention.mlir: the scale and the softmax run in the scores' batch
// matmul's epilogues (the scale is not a power of two, so it stays there).
// CHECK: tpu.batch_matmul {{.*}}layer = "scores", tpu.epilogue = "softmax", tpu.id = [[S:[0-9]+]] : i64
// CHECK: tpu.affine {{.*}}tpu.fused_into = [[S]] : i64, tpu.role = "softmax-scale"
// CHECK: tpu.softmax {{.*}}tpu.fused_into = [[S]] : i64, tpu.role = "softmax"
// CHECK: tpu.batch_matmul {{.*}}layer = "context"
// CHECK-NOT: tpu.epilogue
