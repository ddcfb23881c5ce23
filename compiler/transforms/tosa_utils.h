#pragma once
// Internal to compiler/transforms: what the passes ask of TOSA IR (constants seen through the
// reshapes and transposes the importer adds, single users, per-channel operands) and how they
// report what they cannot handle.
#include <optional>
#include <string>
#include <vector>

#include "dialect/tpu_dialect.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Builders.h"
#include "vtpu/compiler/compiler.h"

namespace vtpu::tpu {

// The ONNX node name an op carries as its location (the program's tag), or its op name.
std::string layer_name(mlir::Operation* op);

// Throws the CompileError "node '<layer>': what".
[[noreturn]] void fail(mlir::Operation* op, const std::string& what);

// The f32 attribute of a tosa.const (dense or a resource blob, dialect/constants.h), or null. Looks through the reshapes the importer adds
// for ONNX broadcasting, and through transposes that cannot reorder the data (at most one
// dimension above 1), so `x + bias[C]` is seen as a constant operand.
mlir::ElementsAttr const_attr(mlir::Value v);

// The float data of const_attr(v), or nullopt.
std::optional<std::vector<float>> const_data(mlir::Value v);

// True if v is a tosa.const seen through any reshapes and transposes (weights in the making).
bool is_constant(mlir::Value v);

// An f32 tosa.const of `shape` holding `data` (tpu::f32_elements: a large one takes the vector over).
mlir::Value make_const(mlir::OpBuilder& b, mlir::Location loc, const std::vector<int64_t>& shape, std::vector<float> data);

// A transpose's constant permutation (empty when it is not constant).
std::vector<int32_t> perm_of(mlir::tosa::TransposeOp t);

// The one user of v, or null.
mlir::Operation* single_user(mlir::Value v);

// A constant operand of a binary op that broadcasts one value per channel (last dim).
std::optional<std::vector<float>> per_channel_const(mlir::Operation* op, mlir::Value from, int64_t channels);

// [top, bottom, left, right] if v is a tosa.pad with zeros of an NHWC tensor's H and W only.
std::optional<std::vector<int64_t>> zero_spatial_pad(mlir::Value v);

// A tosa.clamp's float bounds, +-infinity where it clamps at the float range (ReLU's max).
std::pair<double, double> clamp_bounds(mlir::tosa::ClampOp c);

// Passes report what they cannot handle as an error diagnostic on the function and fail, so
// vtpu-opt prints it and the compiler turns it into a CompileError.
template <typename Body, typename Fail>
void guarded(mlir::Operation* op, Body&& body, Fail&& signal_failure) {
  try {
    body();
  } catch (const compiler::CompileError& e) {
    op->emitError(e.what());
    signal_failure();
  }
}

}  // namespace vtpu::tpu
