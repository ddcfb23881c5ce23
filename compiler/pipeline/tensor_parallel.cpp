// Tensor parallelism (docs/compiler.md, "Tensor parallelism"): which matmuls split over the
// chips and how, decided here on the tpu dialect; every chip's program is @main with its
// share of the split weights, the row-parallel matmuls marked for code generation to
// all-reduce (vtpu.all_reduce, codegen/tensor_parallel.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "codegen/codegen.h"
#include "codegen/ir.h"
#include "dialect/attr_names.h"
#include "dialect/constants.h"
#include "dialect/tpu_dialect.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/IRMapping.h"
#include "pipeline/pipeline.h"
#include "target_limits.h"

namespace vtpu::compiler {
namespace {

using mlir::Value;

std::string layer_name(mlir::Operation* op) {
  auto a = op->getAttrOfType<mlir::StringAttr>("layer");
  return a ? a.str() : op->getName().getStringRef().str();
}

std::vector<int64_t> dims(Value v) {
  auto t = mlir::cast<mlir::RankedTensorType>(v.getType());
  return {t.getShape().begin(), t.getShape().end()};
}

// A pair: `first` (column-parallel), the elementwise ops on its output, `second` (row-parallel).
struct Pair {
  tpu::MatmulOp first, second;
  std::vector<mlir::Operation*> between;
};

// Ops that act on each element alone, so that they run on a share of the columns as they do
// on all of them.
bool per_element(mlir::Operation* op) { return mlir::isa<tpu::UnaryOp, tpu::ClampOp>(op); }

// The pairs, first to last, each matmul in one pair at most; `whole` says why the other
// matmuls are not split.
std::vector<Pair> find_pairs(mlir::func::FuncOp fn, uint32_t chips, std::vector<std::string>& whole) {
  std::vector<Pair> pairs;
  std::set<mlir::Operation*> taken;
  fn.walk([&](tpu::MatmulOp a) {
    if (taken.count(a)) return;
    Pair p{a, {}, {}};
    Value v = a.getOutput();
    while (v.hasOneUse() && per_element(*v.getUsers().begin()) && dims((*v.getUsers().begin())->getResult(0)) == dims(v)) {
      p.between.push_back(*v.getUsers().begin());
      v = p.between.back()->getResult(0);
    }
    auto b = v.hasOneUse() ? mlir::dyn_cast<tpu::MatmulOp>(*v.getUsers().begin()) : tpu::MatmulOp();
    if (!b || b.getInput() != v || taken.count(b)) {
      whole.push_back(fmt::format("{}: no matmul reads its output alone (through elementwise ops) to pair with", layer_name(a)));
      return;
    }
    const int64_t N = dims(a.getWeight())[1];
    if (codegen::is_int32(a.getOutput()) || codegen::is_int32(b.getOutput())) {
      whole.push_back(fmt::format("{} and {}: integer outputs", layer_name(a), layer_name(b)));
      return;
    }
    if (N % int64_t(chips)) {
      whole.push_back(fmt::format("{} and {}: {} columns do not split evenly over {} chips", layer_name(a), layer_name(b), N, chips));
      return;
    }
    p.second = b;
    taken.insert(a), taken.insert(b);
    pairs.push_back(std::move(p));
  });
  return pairs;
}

mlir::RankedTensorType with_last(Value v, int64_t last) {
  auto t = mlir::cast<mlir::RankedTensorType>(v.getType());
  std::vector<int64_t> s(t.getShape().begin(), t.getShape().end());
  s.back() = last;
  return mlir::RankedTensorType::get(s, t.getElementType());
}

// A constant of `values` in `shape` before `at`, standing for operand `index` of `user`.
void replace_constant(mlir::Operation* user, unsigned index, std::vector<int64_t> shape, std::vector<float> values) {
  mlir::OpBuilder b(user);
  auto type = mlir::RankedTensorType::get(shape, b.getF32Type());
  auto c = b.create<mlir::tosa::ConstOp>(user->getLoc(), type, tpu::f32_elements(type, std::move(values)));
  mlir::Operation* old = user->getOperand(index).getDefiningOp();
  user->setOperand(index, c.getResult());
  // Erased without freeing its data, which the whole model's module and the other chips'
  // clones share.
  if (old && old->use_empty()) old->erase();
}

// Chip `c`'s share of pair `p` (ops of the chip's clone).
void split_pair(Pair p, uint32_t chips, uint32_t c, bool int8) {
  // First: columns [c N / chips, (c + 1) N / chips) of the weights and bias.
  auto ws = dims(p.first.getWeight());
  const int64_t K = ws[0], N = ws[1], n = N / chips, n0 = int64_t(c) * n;
  {
    tpu::FloatData w = tpu::float_data(p.first.getWeight().getDefiningOp<mlir::tosa::ConstOp>().getValue());
    std::vector<float> share(size_t(K * n));
    for (int64_t k = 0; k < K; ++k)
      std::copy_n(w.values.data() + k * N + n0, n, share.begin() + k * n);
    std::vector<float> bias = tpu::float_values(p.first.getBias().getDefiningOp<mlir::tosa::ConstOp>().getValue());
    std::vector<float> bshare(bias.begin() + n0, bias.begin() + n0 + n);
    replace_constant(p.first, 1, {K, n}, std::move(share));
    replace_constant(p.first, 2, {n}, std::move(bshare));
  }
  p.first.getOutput().setType(with_last(p.first.getOutput(), n));
  for (mlir::Operation* op : p.between) op->getResult(0).setType(with_last(op->getResult(0), n));
  // Second: rows [c N / chips, ...) of its weights; INT8 with the whole columns' maxima.
  auto ws2 = dims(p.second.getWeight());
  const int64_t P = ws2[1];
  tpu::FloatData w = tpu::float_data(p.second.getWeight().getDefiningOp<mlir::tosa::ConstOp>().getValue());
  mlir::MLIRContext* ctx = p.second->getContext();
  if (int8) {
    std::vector<double> absmax(size_t(P), 0.0);
    for (int64_t k = 0; k < N; ++k)
      for (int64_t j = 0; j < P; ++j)
        absmax[size_t(j)] = std::max(absmax[size_t(j)], double(std::fabs(w.values[size_t(k * P + j)])));
    p.second->setAttr(tpu::kWeightAbsmaxAttr, mlir::DenseF64ArrayAttr::get(ctx, absmax));
  }
  std::vector<float> share(w.values.begin() + n0 * P, w.values.begin() + (n0 + n) * P);
  replace_constant(p.second, 1, {n, P}, std::move(share));
  p.second->setAttr(tpu::kAllReduceAttr, mlir::IntegerAttr::get(mlir::IntegerType::get(ctx, 64), int64_t(chips)));
}

}  // namespace

TensorParallel compile_tensor_parallel(const std::filesystem::path& model, const config::Config& cfg, const CompileOptions& options) {
  check_config_for_compiler(cfg);
  const uint32_t chips = cfg.system.chips;
  if (chips < 2) throw UserError(fmt::format("config '{}' has one chip: tensor parallelism needs several", cfg.name));
  const bool int8 = options.precision == Precision::Int8;
  Frontend front(model, options);
  front.import();
  front.lower();
  auto fn = front.main();
  std::vector<float> ordered = options.calibration_scales;
  if (int8 && ordered.empty()) {
    std::map<const void*, float> by_value = calibrate(front.module(), options);
    for (const void* v : value_order(fn)) {
      auto it = by_value.find(v);
      ordered.push_back(it == by_value.end() ? std::nanf("") : it->second);
    }
  }
  std::map<const void*, float> scales;
  if (int8) {
    std::vector<const void*> order = value_order(fn);
    if (order.size() != ordered.size())
      throw UserError(fmt::format("{}: the calibration scales given are for another model ({} values, this one has {})",
                                  model.string(), ordered.size(), order.size()));
    for (size_t i = 0; i < order.size(); ++i)
      if (!std::isnan(ordered[i])) scales[order[i]] = ordered[i];
  }
  TensorParallel tp;
  std::vector<Pair> pairs = find_pairs(fn, chips, tp.whole);
  if (pairs.empty())
    throw UserError(fmt::format("{}: no pair of matmuls to split over chips (a matmul whose output only an elementwise op "
                                "chain and another matmul read, with columns that divide by {}); --parallel data or "
                                "pipeline split other models",
                                model.string(), chips));
  for (Pair& p : pairs) tp.splits.push_back({layer_name(p.first), layer_name(p.second), dims(p.first.getWeight())[1]});
  CompileOptions generating = options;
  generating.progress = nullptr;
  for (uint32_t c = 0; c < chips; ++c) {
    mlir::IRMapping map;
    mlir::OwningOpRef<mlir::ModuleOp> m(mlir::cast<mlir::ModuleOp>(front.module()->clone(map)));
    auto cfn = m->lookupSymbol<mlir::func::FuncOp>("main");
    cfn->setAttr(tpu::kChipAttr, mlir::IntegerAttr::get(mlir::IntegerType::get(m->getContext(), 64), int64_t(c)));
    for (Pair& p : pairs) {
      Pair q{mlir::cast<tpu::MatmulOp>(map.lookup(p.first.getOperation())), mlir::cast<tpu::MatmulOp>(map.lookup(p.second.getOperation())), {}};
      for (mlir::Operation* op : p.between) q.between.push_back(map.lookup(op));
      split_pair(q, chips, c, int8);
    }
    std::map<const void*, float> mine;
    for (const auto& [v, s] : scales)
      if (Value to = map.lookupOrNull(Value::getFromOpaquePointer(v))) mine[to.getAsOpaquePointer()] = s;
    CompileResult r = generate_program(*m, cfg, generating, mine);
    r.calibration_scales = ordered;
    tp.programs.push_back(std::move(r));
  }
  return tp;
}

}  // namespace vtpu::compiler
