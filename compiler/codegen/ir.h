#pragma once
// Small questions about the tpu-dialect IR that the planner (plan.cpp) and the emitter both
// ask; defined once, in plan.cpp.
#include <cstdint>
#include <optional>
#include <vector>

#include "mlir/IR/Value.h"
#include "dialect/tpu_dialect.h"

namespace vtpu::compiler::codegen {

std::vector<int64_t> shape_of(mlir::Value v);
uint64_t numel(const std::vector<int64_t>& shape);
bool is_int32(mlir::Value v);  // an integer tensor (int32 rows)

// v, or what it becomes through reshapes that are each its only user and keep the last
// dimension (so the blocked layout's rows stay the same: aliases, no data moves).
mlir::Value through_row_reshapes(mlir::Value v);

// The head split reshape of `v` (v's only user) when attention's head split and transpose
// ([B, S, H*d] -> [B, S, H, d] -> [B, H, S, d]) feed only batch matmuls (through reshapes
// that keep the rows) and heads never straddle lane blocks of `lanes` (d a multiple or a
// divisor of it): the batch matmuls can read the heads in place (attention.cpp).
std::optional<tpu::ReshapeOp> head_view_split(mlir::Value v, uint64_t lanes);

}  // namespace vtpu::compiler::codegen
