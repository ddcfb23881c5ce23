#pragma once
// Float constants in the IR: how the compiler makes, reads and frees them.
//
// A model's weights are most of what the compiler touches (ResNet-50: 94 MB of fp32, made
// three times over: the importer's OHWI, the batch-norm fold's scaled copy, the lowering's
// HWIO). A DenseElementsAttr copies its data, hashes all of it to unique it, and lives as
// long as the MLIRContext, so each of those sets stayed in memory to the end. Large
// constants are therefore made as resource blobs (`dense_resource`) that own the vector
// they were made from: no copy, no hash, and freed by erase_constants when a pass replaces
// them. Small ones stay DenseElementsAttr (uniqued, printed in full; lit tests write them).
// docs/compiler.md, "Compile time".
#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "llvm/ADT/ArrayRef.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Operation.h"

namespace vtpu::tpu {

// fp32 constants of at least this many elements (64 KiB) are made as resource blobs.
inline constexpr int64_t kBlobElements = 16384;

// An fp32 constant of `type` holding `data` (row-major): a resource blob that takes over the
// vector when large, else a DenseElementsAttr (a splat when all values are equal).
mlir::ElementsAttr f32_elements(mlir::RankedTensorType type, std::vector<float> data);

// Whether `a` is an fp32 constant f32_elements can have made (dense or a resource blob).
bool is_f32_elements(mlir::Attribute a);

// The values of a float constant as fp32, in row-major order (a splat repeated). The one
// reader of constants' values: an fp32 tensor's bytes are copied at once, not element by
// element. Any float type is accepted from a DenseElementsAttr; a resource must be fp32.
std::vector<float> float_values(mlir::Attribute a);

// The values of an fp32 constant in place, without a copy; nullopt for a splat or another
// element type (use float_values). Valid while the constant is.
std::optional<llvm::ArrayRef<float>> float_view(mlir::Attribute a);

// A constant's values for reading: in place where there is an array to read (float_view),
// else a copy held here (a splat). Move-only: `values` points into the constant or `held`.
struct FloatData {
  std::vector<float> held;
  llvm::ArrayRef<float> values;
  FloatData() = default;
  FloatData(FloatData&&) = default;
  FloatData& operator=(FloatData&&) = default;
  FloatData(const FloatData&) = delete;
  FloatData& operator=(const FloatData&) = delete;
};
FloatData float_data(mlir::Attribute a);

// Erases ops that have no uses left (constants, or the reshapes over them), and then frees
// the blobs of theirs that no op still refers to (a clone may share one).
class ConstantEraser {
 public:
  void erase(mlir::Operation* op);
  // Frees the blobs of the ops erased so far that no op under `root` refers to.
  void release(mlir::Operation* root);

 private:
  std::set<mlir::DialectResourceBlobManager::BlobEntry*> erased_;
};

// ConstantEraser on `ops`, then release(root).
void erase_constants(mlir::Operation* root, llvm::ArrayRef<mlir::Operation*> ops);

// Frees the blob of the constant `v` now, before its op is erased, when `v`'s only reader is
// `reader` (a layer being replaced, which will not read it again) and no other op under
// `root` refers to the blob: a pass that turns each layer's weights into new ones then reuses
// the memory for the next layer's. Reading it afterwards is an InternalError.
void release_consumed(mlir::Operation* root, mlir::Value v, mlir::Operation* reader);

}  // namespace vtpu::tpu
