// Tensor parallelism (docs/compiler.md, "Tensor parallelism"): which matmuls split over the
// chips and how, decided here on the tpu dialect; every chip's program is @main with its
// share of the split weights, the row-parallel matmuls marked for code generation to
// all-reduce (vtpu.all_reduce, codegen/tensor_parallel.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
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

using codegen::shape_of;

// Where the split falls in a value: dimension `dim` holds `outer` x `units` x `inner`
// elements in row-major order; each chip computes `share` of the units (the value's shape then
// has outer x share x inner there).
struct Axis {
  size_t dim = 0;
  int64_t inner = 1;
};

// A group: matmuls split by output columns (`columns`: one, or attention's query, key and
// value), the ops between them and `rows` (every op there acts on a share of the units as on
// all of them), and the row-parallel matmul `rows` whose input's last dimension carries the
// units. `units` units of `unit` columns in the column-parallel matmuls' outputs.
struct Group {
  std::vector<tpu::MatmulOp> columns;
  std::vector<mlir::Operation*> between;  // in program order
  tpu::MatmulOp rows;
  int64_t units = 0, unit = 1;
  std::map<const void*, Axis> axis;  // of every value of the group, by Value::getAsOpaquePointer
};

int64_t suffix(const std::vector<int64_t>& s, size_t from) {
  int64_t p = 1;
  for (size_t i = from; i < s.size(); ++i) p *= s[i];
  return p;
}

// The axis of a reshape's output for an input axis `a` of `units` units: the units' flat
// stride block [st, st x units) must lie inside one output dimension.
std::optional<Axis> through_reshape(const std::vector<int64_t>& in, const std::vector<int64_t>& out, Axis a, int64_t units) {
  const int64_t st = a.inner * suffix(in, a.dim + 1);
  for (size_t j = 0; j < out.size(); ++j) {
    int64_t sj = suffix(out, j + 1), span = sj * out[j];
    if (st % sj == 0 && span % (st * units) == 0) return Axis{j, st / sj};
  }
  return std::nullopt;
}

// Propagates the axes from the column-parallel matmuls' outputs (last dimension, `unit`
// columns a unit) through `between` to the row-parallel matmul's input; false if an op does
// not act on a share of the units as on all of them.
bool propagate(Group& g) {
  g.axis.clear();
  for (tpu::MatmulOp m : g.columns) g.axis[m.getOutput().getAsOpaquePointer()] = {shape_of(m.getOutput()).size() - 1, g.unit};
  auto axis_of = [&](Value v) -> const Axis* {
    auto it = g.axis.find(v.getAsOpaquePointer());
    return it == g.axis.end() ? nullptr : &it->second;
  };
  for (mlir::Operation* op : g.between) {
    Value out = op->getResult(0);
    const size_t last = shape_of(out).size() - 1;
    std::optional<Axis> a;
    if (auto r = mlir::dyn_cast<tpu::ReshapeOp>(op)) {
      if (const Axis* x = axis_of(r.getInput())) a = through_reshape(shape_of(r.getInput()), shape_of(out), *x, g.units);
    } else if (auto t = mlir::dyn_cast<tpu::TransposeOp>(op)) {
      if (const Axis* x = axis_of(t.getInput()))
        for (size_t k = 0; k < t.getPerm().size(); ++k)
          if (size_t(t.getPerm()[k]) == x->dim) a = Axis{k, x->inner};
    } else if (auto bm = mlir::dyn_cast<tpu::BatchMatmulOp>(op)) {
      const Axis *l = axis_of(bm.getLhs()), *r = axis_of(bm.getRhs());
      if (l && r && l->dim == 0 && r->dim == 0 && l->inner == r->inner) a = *l;
    } else if (mlir::isa<tpu::SoftmaxOp>(op)) {  // per row of the last dimension
      if (const Axis* x = axis_of(op->getOperand(0)); x && x->dim != last) a = *x;
    } else if (mlir::isa<tpu::AffineOp>(op)) {  // per channel: along the units, its constants are cut too
      if (const Axis* x = axis_of(op->getOperand(0)); x && (x->dim != last || shape_of(out)[last] == g.units * x->inner)) a = *x;
    } else if (mlir::isa<tpu::UnaryOp, tpu::ClampOp>(op)) {
      if (const Axis* x = axis_of(op->getOperand(0))) a = *x;
    } else if (mlir::isa<tpu::BinaryOp, tpu::AddOp>(op)) {  // elementwise on two values of the group, split alike
      const Axis *l = axis_of(op->getOperand(0)), *r = axis_of(op->getOperand(1));
      if (l && r && l->dim == r->dim && l->inner == r->inner) a = *l;
    }
    if (!a) return false;
    g.axis[out.getAsOpaquePointer()] = *a;
  }
  const Axis* in = axis_of(g.rows.getInput());
  return in && in->dim == shape_of(g.rows.getInput()).size() - 1;
}

// The group whose row-parallel matmul is `r`: what its input comes from, back to matmuls,
// through ops that only the group reads; or why there is none.
std::optional<Group> group_of(tpu::MatmulOp r, uint32_t chips, const std::set<mlir::Operation*>& taken, std::string& why) {
  Group g;
  g.rows = r;
  std::set<mlir::Operation*> in{r};
  std::vector<Value> work{r.getInput()};
  while (!work.empty()) {
    Value v = work.back();
    work.pop_back();
    mlir::Operation* d = v.getDefiningOp();
    if (!d) return why = "its input comes (through elementwise and attention ops) from a model input", std::nullopt;
    if (in.count(d)) continue;
    if (mlir::isa<mlir::tosa::ConstOp>(d)) continue;
    in.insert(d);
    if (auto m = mlir::dyn_cast<tpu::MatmulOp>(d)) {
      if (taken.count(m))
        return why = fmt::format("its input comes from {}, which another group splits", layer_of(m)), std::nullopt;
      g.columns.push_back(m);
      continue;
    }
    if (!mlir::isa<tpu::ReshapeOp, tpu::TransposeOp, tpu::BatchMatmulOp, tpu::SoftmaxOp, tpu::AffineOp, tpu::UnaryOp, tpu::ClampOp,
                   tpu::BinaryOp, tpu::AddOp>(d))
      return why = fmt::format("{} ({}) lies between it and the matmuls before it", layer_of(d), d->getName().getStringRef().str()),
             std::nullopt;
    g.between.push_back(d);
    for (Value o : d->getOperands()) work.push_back(o);
  }
  if (g.columns.empty()) return why = "no matmul before it", std::nullopt;
  // Only the group reads what the group makes.
  for (mlir::Operation* op : in)
    if (op != r.getOperation())
      for (mlir::Operation* u : op->getResult(0).getUsers())
        if (!in.count(u)) return why = fmt::format("{} is also read by {}", layer_of(op), layer_of(u)), std::nullopt;
  std::sort(g.between.begin(), g.between.end(), [](mlir::Operation* a, mlir::Operation* b) { return a->isBeforeInBlock(b); });
  std::sort(g.columns.begin(), g.columns.end(), [](tpu::MatmulOp a, tpu::MatmulOp b) { return a->isBeforeInBlock(b); });
  const int64_t N = shape_of(g.columns[0].getWeight())[1];
  for (tpu::MatmulOp m : g.columns)
    if (shape_of(m.getWeight())[1] != N || codegen::is_int32(m.getOutput()))
      return why = "the matmuls before it differ in width or have integer outputs", std::nullopt;
  if (codegen::is_int32(r.getOutput())) return why = "an integer output", std::nullopt;
  // The finest units the ops between keep apart: single columns (an MLP block), else heads.
  for (int64_t unit = 1; unit <= N; ++unit) {
    if (N % unit || N / unit < int64_t(chips)) continue;
    g.unit = unit, g.units = N / unit;
    if (propagate(g)) return g;
  }
  return why = fmt::format("its {} columns do not split into {} shares that the ops between keep apart", N, chips), std::nullopt;
}

// Chip c's units of a group of `units`: [first, first + count), as even as they come.
std::pair<int64_t, int64_t> share_of(int64_t units, uint32_t chips, uint32_t c) {
  int64_t a = units * int64_t(c) / int64_t(chips), b = units * int64_t(c + 1) / int64_t(chips);
  return {a, b - a};
}

mlir::RankedTensorType with_dim(Value v, size_t dim, int64_t size) {
  auto t = mlir::cast<mlir::RankedTensorType>(v.getType());
  std::vector<int64_t> s(t.getShape().begin(), t.getShape().end());
  s[dim] = size;
  return mlir::RankedTensorType::get(s, t.getElementType());
}

// A constant of `values` in `shape` standing for operand `index` of `user`.
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

// Chip `c`'s share of group `g` (ops of the chip's clone; `axis` by the clone's values).
void split_group(Group g, uint32_t chips, uint32_t c) {
  const auto [first, count] = share_of(g.units, chips, c);
  const int64_t n0 = first * g.unit, n = count * g.unit;
  for (tpu::MatmulOp m : g.columns) {  // columns [n0, n0 + n) of the weights and bias
    auto ws = shape_of(m.getWeight());
    const int64_t K = ws[0], N = ws[1];
    tpu::FloatData w = tpu::float_data(m.getWeight().getDefiningOp<mlir::tosa::ConstOp>().getValue());
    std::vector<float> share(size_t(K * n));
    for (int64_t k = 0; k < K; ++k) std::copy_n(w.values.data() + k * N + n0, n, share.begin() + k * n);
    std::vector<float> bias = tpu::float_values(m.getBias().getDefiningOp<mlir::tosa::ConstOp>().getValue());
    replace_constant(m, 1, {K, n}, std::move(share));
    replace_constant(m, 2, {n}, std::vector<float>(bias.begin() + n0, bias.begin() + n0 + n));
  }
  // Every value of the group: its split dimension holds the chip's units.
  auto resize = [&](Value v) {
    const Axis& a = g.axis.at(v.getAsOpaquePointer());
    int64_t size = shape_of(v)[a.dim];
    v.setType(with_dim(v, a.dim, size / g.units * count));
  };
  for (tpu::MatmulOp m : g.columns) resize(m.getOutput());
  for (mlir::Operation* op : g.between) {
    // A per-channel step along the units: the chip's channels of its scale and bias.
    if (auto af = mlir::dyn_cast<tpu::AffineOp>(op)) {
      const Axis& a = g.axis.at(af.getOutput().getAsOpaquePointer());
      if (a.dim == shape_of(af.getOutput()).size() - 1) {
        const int64_t c0 = first * a.inner, cn = count * a.inner;
        for (unsigned i : {1u, 2u}) {
          std::vector<float> v = tpu::float_values(op->getOperand(i).getDefiningOp<mlir::tosa::ConstOp>().getValue());
          replace_constant(op, i, {cn}, std::vector<float>(v.begin() + c0, v.begin() + c0 + cn));
        }
      }
    }
    resize(op->getResult(0));
  }
  // Rows: the chip's units of the input's last dimension (marked by mark_all_reduced).
  const Axis& in = g.axis.at(g.rows.getInput().getAsOpaquePointer());
  const int64_t P = shape_of(g.rows.getWeight())[1], r0 = first * in.inner, rn = count * in.inner;
  tpu::FloatData w = tpu::float_data(g.rows.getWeight().getDefiningOp<mlir::tosa::ConstOp>().getValue());
  std::vector<float> share(w.values.begin() + r0 * P, w.values.begin() + (r0 + rn) * P);
  replace_constant(g.rows, 1, {rn, P}, std::move(share));
}

// A group's row-parallel matmul, once in the whole module before it is cloned per chip:
// all-reduced over `chips`, and in INT8 with its whole columns' largest |weight|.
void mark_all_reduced(const Group& g, uint32_t chips, bool int8) {
  tpu::MatmulOp rows = g.rows;
  mlir::MLIRContext* ctx = rows->getContext();
  rows->setAttr(tpu::kAllReduceAttr, mlir::IntegerAttr::get(mlir::IntegerType::get(ctx, 64), int64_t(chips)));
  if (!int8) return;
  auto ws = shape_of(rows.getWeight());
  const int64_t K = ws[0], P = ws[1];
  tpu::FloatData w = tpu::float_data(rows.getWeight().getDefiningOp<mlir::tosa::ConstOp>().getValue());
  std::vector<double> absmax(size_t(P), 0.0);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < P; ++j) absmax[size_t(j)] = std::max(absmax[size_t(j)], double(std::fabs(w.values[size_t(k * P + j)])));
  rows->setAttr(tpu::kWeightAbsmaxAttr, mlir::DenseF64ArrayAttr::get(ctx, absmax));
}

// The group in chip's clone `map` of the whole module.
Group mapped(Group g, mlir::IRMapping& map) {
  Group m;
  m.units = g.units, m.unit = g.unit;
  for (tpu::MatmulOp col : g.columns) m.columns.push_back(mlir::cast<tpu::MatmulOp>(map.lookup(col.getOperation())));
  for (mlir::Operation* op : g.between) m.between.push_back(map.lookup(op));
  m.rows = mlir::cast<tpu::MatmulOp>(map.lookup(g.rows.getOperation()));
  for (const auto& [v, a] : g.axis) m.axis[map.lookup(Value::getFromOpaquePointer(v)).getAsOpaquePointer()] = a;
  return m;
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
  if (int8 && ordered.empty()) ordered = scales_in_order(fn, calibrate(front.module(), options));
  std::map<const void*, float> scales;
  if (int8) scales = given_scales(fn, ordered, model);
  TensorParallel tp;
  // Groups, row-parallel matmul by row-parallel matmul in program order, each matmul in one
  // group at most; the matmuls in none, and why.
  std::vector<Group> groups;
  std::set<mlir::Operation*> taken;
  std::map<mlir::Operation*, std::string> why_not;
  fn.walk([&](tpu::MatmulOp r) {
    std::string why;
    if (taken.count(r)) return;
    if (auto g = group_of(r, chips, taken, why)) {
      for (tpu::MatmulOp m : g->columns) taken.insert(m), why_not.erase(m);
      taken.insert(r);
      groups.push_back(std::move(*g));
    } else {
      why_not[r] = why;
    }
  });
  fn.walk([&](tpu::MatmulOp m) {
    if (!taken.count(m)) tp.whole.push_back(fmt::format("{}: {}", layer_of(m), why_not.count(m) ? why_not[m] : "not split"));
  });
  if (groups.empty())
    throw UserError(fmt::format("{}: no matmuls to split over chips (a matmul whose output, through elementwise or "
                                "attention ops that nothing else reads, only another matmul reads); --parallel data or "
                                "pipeline split other models",
                                model.string()));
  for (Group& g : groups) {
    std::vector<std::string> names;
    for (tpu::MatmulOp m : g.columns) names.push_back(layer_of(m));
    tp.splits.push_back({fmt::format("{}", fmt::join(names, ", ")), layer_of(g.rows), g.units, g.unit == 1 ? "columns" : "heads"});
    mark_all_reduced(g, chips, int8);  // the same on every chip: before the clones
  }
  CompileOptions generating = options;
  generating.progress = nullptr;
  for (uint32_t c = 0; c < chips; ++c) {
    mlir::IRMapping map;
    mlir::OwningOpRef<mlir::ModuleOp> m(mlir::cast<mlir::ModuleOp>(front.module()->clone(map)));
    auto cfn = m->lookupSymbol<mlir::func::FuncOp>("main");
    cfn->setAttr(tpu::kChipAttr, mlir::IntegerAttr::get(mlir::IntegerType::get(m->getContext(), 64), int64_t(c)));
    for (Group& g : groups) split_group(mapped(g, map), chips, c);
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
