// Where the samples of a batch lie in each value (docs/compiler.md, "Batches larger than the
// unified buffer"): the second look why_samples_mix takes at a model its first rules refuse.
// Those rules want every value to be whole samples along its first dimension; a recurrent
// layer's importer (import/recurrent.cpp) makes time-major values instead ([T * B, H] rows:
// step t's B samples at rows t*B...), whose transposes, slices and concats along the first
// dimension they refuse, though no op mixes two samples. Here each value carries where the
// sample index is: along one axis whose extent is outer x B x inner, the sample of coordinate
// x is (x / inner) % B. Ops move that axis (transpose, reshape), keep it (elementwise ops,
// matmuls with constant weights, slices and concats of whole outer blocks) or mix samples
// (anything else, which ends the look). The model may run in chunks when every output has
// its samples whole along its first dimension, as every input has.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

#include "dialect/tpu_dialect.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "pipeline/pipeline.h"

namespace vtpu::compiler {
namespace {

using mlir::Value;

// Along dimension `axis` (extent outer x B x inner), the sample of coordinate x is (x / inner) % B.
struct Samples {
  size_t axis = 0;
  int64_t outer = 1, inner = 1;
  bool operator==(const Samples& o) const { return axis == o.axis && outer == o.outer && inner == o.inner; }
};

std::vector<int64_t> dims(Value v) { return tpu::shape_of(v); }

int64_t product(const std::vector<int64_t>& d, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= d[i];
  return p;
}

class SampleLayout {
 public:
  explicit SampleLayout(int64_t batch) : B_(batch) {}

  // "" when the samples stay apart in every op, else why not.
  std::string run(mlir::func::FuncOp fn) {
    for (mlir::BlockArgument a : fn.getArguments()) {
      if (dims(a).empty() || dims(a)[0] != B_) return "an input does not have the batch as its first dimension";
      at_[a.getAsOpaquePointer()] = Samples{};
    }
    for (mlir::Operation& op : fn.getBody().front()) {
      std::string why = visit(&op);
      if (!why.empty()) return fmt::format("{} (at '{}')", why, layer(&op));
    }
    return "";
  }

 private:
  static std::string layer(mlir::Operation* op) {
    auto l = op->getAttrOfType<mlir::StringAttr>("layer");
    return l ? l.str() : op->getName().getStringRef().str();
  }

  static bool constant(Value v) { return v.getDefiningOp<mlir::tosa::ConstOp>() != nullptr; }

  std::optional<Samples> of(Value v) const {
    auto it = at_.find(v.getAsOpaquePointer());
    return it == at_.end() ? std::nullopt : std::optional<Samples>(it->second);
  }

  // Whether a constant operand of an elementwise op on `out` (`s`) is the same for every
  // sample: its dimension aligned with the samples' axis (from the right) is 1 or absent.
  static bool same_for_every_sample(Value c, const std::vector<int64_t>& out, const Samples& s) {
    std::vector<int64_t> d = dims(c);
    const size_t lead = out.size() - s.axis;  // dimensions from the samples' axis to the last
    return d.size() < lead || d[d.size() - lead] == 1;
  }

  std::string visit(mlir::Operation* op) {
    if (mlir::isa<mlir::tosa::ConstOp>(op)) return "";
    if (auto ret = mlir::dyn_cast<mlir::func::ReturnOp>(op)) {
      for (Value v : ret.getOperands()) {
        auto s = of(v);
        if (!s || s->axis != 0 || s->outer != 1 || s->inner != 1)
          return "an output does not have one sample per row of its first dimension";
      }
      return "";
    }
    if (op->getNumResults() != 1) return "an op with other than one result";
    Value out = op->getResult(0);
    std::optional<Samples> s = elementwise(op);
    if (!s) s = moved(op);
    if (!s) return fmt::format("{} may mix samples", op->getName().getStringRef().str());
    at_[out.getAsOpaquePointer()] = *s;
    return "";
  }

  // Elementwise ops on activations of the output's shape (constants the same for every
  // sample), and matmuls with constant weights whose rows hold the samples: the samples where
  // their activation operands (all alike) have them.
  std::optional<Samples> elementwise(mlir::Operation* op) {
    if (!mlir::isa<tpu::AddOp, tpu::BinaryOp, tpu::UnaryOp, tpu::AffineOp, tpu::ClampOp, tpu::MatmulOp>(op)) return std::nullopt;
    const std::vector<int64_t> out = dims(op->getResult(0));
    if (auto m = mlir::dyn_cast<tpu::MatmulOp>(op)) {  // rows of K features, the samples not along K
      auto s = of(m.getInput());
      std::vector<int64_t> rows = dims(m.getInput());
      if (!s || !constant(m.getWeight()) || !constant(m.getBias()) || s->axis + 1 >= rows.size()) return std::nullopt;
      rows.back() = out.back();  // its rows of N features, which the output may shape otherwise
      return reshaped(*s, rows, out);
    }
    std::optional<Samples> s;
    for (Value v : op->getOperands()) {
      if (constant(v)) continue;
      auto sv = of(v);
      if (!sv || (s && !(*s == *sv)) || dims(v) != out) return std::nullopt;
      s = sv;
    }
    if (!s) return std::nullopt;
    for (Value v : op->getOperands())
      if (constant(v) && !same_for_every_sample(v, out, *s)) return std::nullopt;
    return s;
  }

  // Ops that move elements: the samples' axis where they put it, when they keep samples whole.
  std::optional<Samples> moved(mlir::Operation* op) {
    if (auto t = mlir::dyn_cast<tpu::TransposeOp>(op)) {
      auto s = of(t.getInput());
      if (!s) return std::nullopt;
      auto perm = t.getPerm();
      for (size_t j = 0; j < perm.size(); ++j)
        if (size_t(perm[j]) == s->axis) return Samples{j, s->outer, s->inner};
      return std::nullopt;
    }
    if (auto r = mlir::dyn_cast<tpu::ReshapeOp>(op)) {
      auto s = of(r.getInput());
      return s ? reshaped(*s, dims(r.getInput()), dims(r.getOutput())) : std::nullopt;
    }
    if (auto sl = mlir::dyn_cast<tpu::SliceOp>(op)) return sliced(sl);
    if (auto c = mlir::dyn_cast<tpu::ConcatOp>(op)) return joined(c);
    return std::nullopt;
  }

  // Row-major: the flat index is ((p * outer + o) * B + b) * inner * S + (i * S + s) for the
  // prefix p before the axis and the suffix s after it (S elements), so the samples are a
  // factor of the flat index with O = P * outer blocks before them and I = inner * S
  // elements each; in the new shape they lie along the axis whose prefix divides O and
  // whose suffix divides I.
  std::optional<Samples> reshaped(const Samples& s, const std::vector<int64_t>& in, const std::vector<int64_t>& out) const {
    const int64_t O = product(in, 0, s.axis) * s.outer, I = s.inner * product(in, s.axis + 1, in.size());
    for (size_t a = 0; a < out.size(); ++a) {
      const int64_t pre = product(out, 0, a), post = product(out, a + 1, out.size());
      if (O % pre || I % post) continue;
      const int64_t outer = O / pre, inner = I / post;
      if (outer * B_ * inner == out[a]) return Samples{a, outer, inner};
    }
    return std::nullopt;
  }

  // A window that cuts the samples' axis only between whole blocks of B x inner.
  std::optional<Samples> sliced(tpu::SliceOp sl) {
    auto s = of(sl.getInput());
    if (!s) return std::nullopt;
    std::vector<int64_t> in = dims(sl.getInput()), out = dims(sl.getOutput());
    const int64_t block = B_ * s->inner, start = sl.getStart()[s->axis];
    if (out[s->axis] == in[s->axis]) return s;
    if (start % block || out[s->axis] % block) return std::nullopt;
    return Samples{s->axis, out[s->axis] / block, s->inner};
  }

  // Activations alike joined along another axis, or whole blocks joined along the samples' axis.
  std::optional<Samples> joined(tpu::ConcatOp c) {
    std::optional<Samples> s;
    int64_t outer = 0;
    for (Value v : c.getInputs()) {
      auto sv = of(v);
      if (!sv || (s && (sv->axis != s->axis || sv->inner != s->inner))) return std::nullopt;
      if (size_t(c.getAxis()) != sv->axis && s && !(*s == *sv)) return std::nullopt;
      s = sv;
      outer += sv->outer;
    }
    if (!s) return std::nullopt;
    if (size_t(c.getAxis()) == s->axis) s->outer = outer;
    return s;
  }

  int64_t B_;
  std::map<const void*, Samples> at_;
};

}  // namespace

std::string why_samples_mix_by_layout(mlir::func::FuncOp fn, int64_t batch) { return SampleLayout(batch).run(fn); }

}  // namespace vtpu::compiler
