#pragma once
// The code-generation planner (pass tpu-plan-codegen, compiler/codegen/Passes.td): the
// decisions that look past one op, recorded on the tpu ops as attributes before emission,
// so each generator reads its op's attributes instead of searching the IR, and lit tests
// can check them (compiler/tests/lit/codegen/plan_*.mlir). docs/compiler.md, "Pipeline".
//
// The planner decides what may be done together from the IR and the config alone; the
// emitter then checks, at its turn, what only it knows (whether scratch buffers fit the
// unified buffer, whether an operand is still there) and, where it declines, removes the
// attributes, so the IR after code generation says what was done.
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Operation.h"
#include "vtpu/config/config.h"

namespace vtpu::compiler::codegen {

// Matmuls reading one activation that run as one stream of blocks (gen_matmul_stream),
// and the reshapes between them that alias it: i64, the stream's number; the first op
// with a number generates them all.
inline constexpr const char* kStreamAttr = "tpu.stream";
// An op whose epilogues (or whose own steps) do other ops too: i64, its number, which
// those ops name in kFusedIntoAttr; kEpilogueAttr says what it does with them:
//   "elementwise" (tpu.matmul, tpu.batch_matmul): one unary, affine or add after it
//   "chain"       (tpu.matmul): a chain of elementwise ops, each link in tpu.slot's buffer
//   "scale"       (tpu.matmul): attention's power-of-two 1/sqrt(d), applied to the queries
//   "softmax"     (tpu.batch_matmul): attention's (scale and) softmax on the scores
//   "affine"      (tpu.layernorm): the gamma/beta step after it
inline constexpr const char* kIdAttr = "tpu.id";
inline constexpr const char* kEpilogueAttr = "tpu.epilogue";
// i64: the number of the op that does this one; kRoleAttr (str) says as what: "elementwise",
// "link", "scale", "softmax-scale", "softmax", "ln-affine", "layernorm" (the layer norm of a
// matmul's output plus a fused residual, whose fp32 rows the matmul's epilogues convert).
inline constexpr const char* kFusedIntoAttr = "tpu.fused_into";
inline constexpr const char* kRoleAttr = "tpu.role";
// i64: a chain link's buffer: 0 the matmul's output, 1 a scratch buffer.
inline constexpr const char* kSlotAttr = "tpu.slot";

// Plans each function of `module` (the compiler's is @main) for `cfg` (INT8 when `int8`,
// else bf16). Idempotent: the attributes of an earlier plan are replaced.
void plan_codegen(mlir::ModuleOp module, const config::Config& cfg, bool int8);

// Removes op's planner attributes (the emitter declined what they say).
void drop_plan(mlir::Operation* op);

// Registers tpu-plan-codegen (for vtpu-opt).
void register_codegen_passes();

}  // namespace vtpu::compiler::codegen
