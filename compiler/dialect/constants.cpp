// Float constants in the IR (dialect/constants.h).
#include "dialect/constants.h"

#include <fmt/format.h>

#include <atomic>
#include <memory>
#include <string>

#include "mlir/IR/BuiltinAttributes.h"
#include "vtpu/support/error.h"

namespace vtpu::tpu {

namespace {

using F32Blob = mlir::DenseF32ResourceElementsAttr;

// Blob keys are unique in the process: the blob manager's insertion retries a taken key with
// counters from 1 up, which would cost quadratic time over a model's weights.
std::string next_blob_key() {
  static std::atomic<uint64_t> next{0};
  return fmt::format("vtpu_f32_{}", next++);
}

llvm::ArrayRef<float> blob_values(F32Blob a) {
  std::optional<llvm::ArrayRef<float>> v = a.tryGetAsArrayRef();
  if (!v || int64_t(v->size()) != a.getNumElements())
    throw InternalError(fmt::format("constant '{}' read after it was freed (dialect/constants.h)",
                                    a.getRawHandle().getKey().str()));
  return *v;
}

using BlobEntry = mlir::DialectResourceBlobManager::BlobEntry;

// Calls f with the blob of each of op's attributes that is one.
template <class F>
void for_each_blob(mlir::Operation* op, F f) {
  for (mlir::NamedAttribute na : op->getAttrs())
    if (auto r = mlir::dyn_cast<F32Blob>(na.getValue())) f(r.getRawHandle().getResource());
}

// Frees the blobs in `blobs` that no op under `root` but `skip` refers to (a clone may share one).
void free_unreferenced(mlir::Operation* root, std::set<BlobEntry*>& blobs, mlir::Operation* skip = nullptr) {
  if (blobs.empty()) return;
  root->walk([&](mlir::Operation* op) {
    if (op != skip) for_each_blob(op, [&](BlobEntry* e) { blobs.erase(e); });
  });
  for (BlobEntry* e : blobs) e->setBlob(mlir::AsmResourceBlob());
}

}  // namespace

mlir::ElementsAttr f32_elements(mlir::RankedTensorType type, std::vector<float> data) {
  if (type.getNumElements() < kBlobElements) return mlir::cast<mlir::ElementsAttr>(mlir::DenseElementsAttr::get(type, llvm::ArrayRef<float>(data)));
  auto owned = std::make_unique<std::vector<float>>(std::move(data));
  llvm::ArrayRef<char> bytes(reinterpret_cast<const char*>(owned->data()), owned->size() * sizeof(float));
  mlir::AsmResourceBlob blob(
      bytes, alignof(float), [owned = std::move(owned)](void*, size_t, size_t) mutable { owned.reset(); },
      /*dataIsMutable=*/false);
  return mlir::cast<mlir::ElementsAttr>(F32Blob::get(type, next_blob_key(), std::move(blob)));
}

bool is_f32_elements(mlir::Attribute a) {
  if (auto d = mlir::dyn_cast_or_null<mlir::DenseElementsAttr>(a)) return d.getElementType().isF32();
  return bool(mlir::dyn_cast_or_null<F32Blob>(a));
}

std::optional<llvm::ArrayRef<float>> float_view(mlir::Attribute a) {
  if (auto r = mlir::dyn_cast<F32Blob>(a)) return blob_values(r);
  auto d = mlir::dyn_cast<mlir::DenseElementsAttr>(a);
  if (!d || !d.getElementType().isF32() || d.isSplat()) return std::nullopt;
  llvm::ArrayRef<char> raw = d.getRawData();  // little-endian fp32 values
  return llvm::ArrayRef<float>(reinterpret_cast<const float*>(raw.data()), size_t(d.getNumElements()));
}

FloatData float_data(mlir::Attribute a) {
  FloatData r;
  if (auto in_place = float_view(a)) r.values = *in_place;
  else r.values = r.held = float_values(a);
  return r;
}

std::vector<float> float_values(mlir::Attribute a) {
  if (auto v = float_view(a)) return {v->begin(), v->end()};
  auto d = mlir::dyn_cast<mlir::DenseElementsAttr>(a);
  if (!d) throw InternalError("float_values: not a dense constant");
  size_t n = size_t(d.getNumElements());
  if (d.isSplat() && d.getElementType().isF32()) return std::vector<float>(n, d.getSplatValue<float>());
  return {d.getValues<float>().begin(), d.getValues<float>().end()};
}

void ConstantEraser::erase(mlir::Operation* op) {
  for_each_blob(op, [&](BlobEntry* e) { erased_.insert(e); });
  op->erase();
}

void ConstantEraser::release(mlir::Operation* root) {
  free_unreferenced(root, erased_);
  erased_.clear();
}

void release_consumed(mlir::Operation* root, mlir::Value v, mlir::Operation* reader) {
  mlir::Operation* def = v.getDefiningOp();
  if (!def || !v.hasOneUse() || *v.getUsers().begin() != reader) return;
  std::set<BlobEntry*> mine;
  for_each_blob(def, [&](BlobEntry* e) { mine.insert(e); });
  free_unreferenced(root, mine, def);
}

void erase_constants(mlir::Operation* root, llvm::ArrayRef<mlir::Operation*> ops) {
  ConstantEraser eraser;
  for (mlir::Operation* op : ops) eraser.erase(op);
  eraser.release(root);
}

}  // namespace vtpu::tpu
