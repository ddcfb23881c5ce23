// Pipeline parallelism (docs/compiler.md, "Pipeline stages"): the model cut into consecutive
// stages, one per chip, each compiled as a program of its own whose first input arrives from
// the chip before it over ICI and whose output goes to the chip after it
// (codegen/stage_links.cpp), the batch flowing through them in micro-batches (the chunk loop
// of codegen/batch_chunks.cpp).
//
// Where to cut: after an op of @main at which exactly one value computed so far is still
// needed later (model inputs, which a stage may read as its own, and constants aside), so that
// one tensor crosses; and only at a value the single-chip program stores as it is, so that
// every stage computes what the single-chip run does: a value read by several ops, or by one
// matmul or convolution (an elementwise op, a pool or a layer norm after it could be done in
// its producer's epilogue, rounding once where the cut would round twice). Among those, the
// cuts that make the slowest stage least slow by an estimate of each op's cycles (MACs over
// the MXUs, result rows through the vector unit), by dynamic programming.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <set>

#include "codegen/codegen.h"
#include "dialect/attr_names.h"
#include "dialect/tpu_dialect.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/IRMapping.h"
#include "pipeline/pipeline.h"
#include "target_limits.h"
#include "vtpu/config/timing.h"

namespace vtpu::compiler {
namespace {

using mlir::Value;

int64_t numel(Value v) { return mlir::cast<mlir::RankedTensorType>(v.getType()).getNumElements(); }

// The op's estimated cycles on one chip of cfg for a pass over n samples: its MACs over all
// MXUs or its weights' loading (from HBM and shifted into the arrays, once per pass),
// whichever takes longer, plus its result's rows through the vector unit. `per_sample`:
// at a batch of `batch`.
struct OpCost {
  double macs = 0, weights = 0, rows = 0;  // per sample: array cycles, vector rows; per pass: weight cycles
  double at(double n) const { return std::max(macs * n, weights) + rows * n; }
};

OpCost op_cost(mlir::Operation* op, const config::Config& cfg, int64_t batch, unsigned esz) {
  const auto& mxu = cfg.core.mxu;
  const double array = double(mxu.rows) * mxu.cols * mxu.count;
  const double hbm_bytes_per_cycle = config::hbm_bytes_per_cycle(cfg);
  double macs = 0, out = op->getNumResults() ? double(numel(op->getResult(0))) : 0;
  auto last_dim = [](Value v) {
    auto t = mlir::cast<mlir::RankedTensorType>(v.getType());
    return t.getRank() ? double(t.getShape().back()) : 1.0;
  };
  Value weight;
  if (auto m = mlir::dyn_cast<tpu::MatmulOp>(op)) macs = out * last_dim(m.getInput()), weight = m.getWeight();
  else if (auto b = mlir::dyn_cast<tpu::BatchMatmulOp>(op)) macs = out * last_dim(b.getLhs());
  else if (auto c = mlir::dyn_cast<tpu::Conv2DOp>(op))  // per output: KH x KW x input channels of its group
    macs = out * double(numel(c.getWeight())) / last_dim(c.getOutput()), weight = c.getWeight();
  OpCost c;
  c.macs = macs / array / double(batch);
  c.rows = out / double(mxu.cols) / double(batch);
  if (weight) {
    double w = double(numel(weight)), tiles = std::ceil(w / (double(mxu.rows) * mxu.cols));
    c.weights = std::max(tiles * mxu.weight_shift_cycles / mxu.count, w * esz / hbm_bytes_per_cycle);
  }
  return c;
}

// Whether the single-chip program stores v as it is (see the top of the file).
bool stored_as_is(Value v) {
  auto single = [](mlir::Operation* u) {
    while (auto r = mlir::dyn_cast<tpu::ReshapeOp>(u)) {
      if (!r.getOutput().hasOneUse()) return true;
      u = *r.getOutput().getUsers().begin();
    }
    return mlir::isa<tpu::MatmulOp, tpu::BatchMatmulOp, tpu::Conv2DOp>(u);
  };
  if (v.use_empty()) return false;
  if (!v.hasOneUse()) {
    for (mlir::Operation* u : v.getUsers())  // a float read only by softmaxes is read as fp32
      if (!mlir::isa<tpu::SoftmaxOp>(u)) return true;
    return false;
  }
  return single(*v.getUsers().begin());
}

}  // namespace

std::vector<mlir::Operation*> ops_of(mlir::func::FuncOp fn) {
  std::vector<mlir::Operation*> ops;
  for (mlir::Operation& op : fn.getBody().front())
    if (!mlir::isa<mlir::tosa::ConstOp, mlir::func::ReturnOp>(op)) ops.push_back(&op);
  return ops;
}

// A place the model may be cut: after ops[at], where `value` alone crosses.
std::vector<Cut> cuts_of(const std::vector<mlir::Operation*>& ops) {
  std::map<mlir::Operation*, size_t> index;
  for (size_t i = 0; i < ops.size(); ++i) index[ops[i]] = i;
  // Every value computed by ops: live from its op to its last reader (the return: past the end).
  std::map<size_t, std::vector<Value>> ends;
  for (size_t i = 0; i < ops.size(); ++i)
    for (Value r : ops[i]->getResults()) {
      size_t last = i;
      for (mlir::Operation* u : r.getUsers()) last = std::max(last, index.count(u) ? index[u] : ops.size());
      if (last > i) ends[last].push_back(r);
    }
  std::vector<Cut> cuts;
  std::map<const void*, size_t> live;  // value -> its op's index
  for (size_t i = 0; i + 1 < ops.size(); ++i) {
    for (Value r : ops[i]->getResults())
      if (!r.use_empty()) live[r.getAsOpaquePointer()] = i;
    if (auto e = ends.find(i); e != ends.end())
      for (Value r : e->second) live.erase(r.getAsOpaquePointer());
    if (live.size() != 1) continue;
    Value v = Value::getFromOpaquePointer(live.begin()->first);
    auto t = mlir::cast<mlir::RankedTensorType>(v.getType());
    if (!t.getRank() || !stored_as_is(v)) continue;
    cuts.push_back({i, v, live.begin()->second, mlir::cast<mlir::OpResult>(v).getResultNumber()});
  }
  return cuts;
}

namespace {

// The cuts that minimise the slowest stage's cost: `stages - 1` of `cuts`, each stage
// computing its own output (a cut's value is defined after the cut before it).
std::vector<size_t> best_cuts(const std::vector<Cut>& cuts, const std::vector<double>& prefix, size_t stages,
                              double* slowest) {
  const size_t K = cuts.size();
  const double inf = std::numeric_limits<double>::infinity();
  auto upto = [&](size_t k) { return prefix[cuts[k].at + 1]; };  // the cost of ops [0, cut k]
  // best[s][k]: the slowest of s + 1 stages whose last ends at cut k; from[s][k] its cut before.
  std::vector<std::vector<double>> best(stages - 1, std::vector<double>(K, inf));
  std::vector<std::vector<size_t>> from(stages - 1, std::vector<size_t>(K, 0));
  for (size_t k = 0; k < K; ++k) best[0][k] = upto(k);
  for (size_t s = 1; s + 1 < stages; ++s)
    for (size_t k = 0; k < K; ++k)
      for (size_t j = 0; j < k; ++j) {
        if (best[s - 1][j] == inf || cuts[k].defined <= cuts[j].at) continue;
        double w = std::max(best[s - 1][j], upto(k) - upto(j));
        if (w < best[s][k]) best[s][k] = w, from[s][k] = j;
      }
  double total = prefix.back(), end = inf;
  size_t last = K;
  for (size_t k = 0; k < K; ++k) {
    if (best[stages - 2][k] == inf) continue;
    double w = std::max(best[stages - 2][k], total - upto(k));
    if (w < end) end = w, last = k;
  }
  if (last == K) return {};
  *slowest = end;
  std::vector<size_t> chosen(stages - 1);
  for (size_t s = stages - 1; s-- > 0;) chosen[s] = last, last = from[s][last];
  return chosen;
}

// Where to cut, and into how many micro-batches: for each count in `counts` (dividing the
// batch), the cuts that make the slowest stage's pass least slow, and of those the count with
// the least estimated time, (micro-batches + stages - 1) passes of the slowest stage: more
// micro-batches fill the pipeline sooner but load every stage's weights once more each.
struct StagePlan {
  int64_t micro_batches = 1;
  std::vector<Cut> cuts;
  std::vector<size_t> chosen;  // indices into cuts, one per stage but the last
  std::vector<double> prefix;  // estimated cycles of ops [0, i) in one pass of a micro-batch
};

StagePlan plan_stages(const std::vector<mlir::Operation*>& ops, const config::Config& cfg, int64_t batch, unsigned esz,
                      size_t stages, const std::vector<int64_t>& counts) {
  StagePlan best;
  best.cuts = cuts_of(ops);
  // The search is stages x cuts^2 per count: a model with more places than kMostCuts keeps
  // kMostCuts of them, evenly spread (its stages then balance a little less finely).
  constexpr size_t kMostCuts = 400;
  if (best.cuts.size() > kMostCuts) {
    std::vector<Cut> kept;
    for (size_t i = 0; i < kMostCuts; ++i) kept.push_back(best.cuts[i * best.cuts.size() / kMostCuts]);
    best.cuts = std::move(kept);
  }
  if (best.cuts.size() + 1 < stages) return best;
  std::vector<OpCost> cost;
  for (mlir::Operation* op : ops) cost.push_back(op_cost(op, cfg, batch, esz));
  double least = std::numeric_limits<double>::infinity();
  for (int64_t m : counts) {
    std::vector<double> prefix{0};
    for (const OpCost& c : cost) prefix.push_back(prefix.back() + c.at(double(batch / m)));
    double slowest = 0;
    std::vector<size_t> chosen = best_cuts(best.cuts, prefix, stages, &slowest);
    double time = double(m + int64_t(stages) - 1) * slowest;
    if (!chosen.empty() && time < least)
      least = time, best.micro_batches = m, best.chosen = std::move(chosen), best.prefix = std::move(prefix);
  }
  return best;
}

}  // namespace

// Stage `s` of the module: ops after cut `a` (none: from the start) up to cut `b` (none: to
// the return), the value of `a` as an argument named `in`, the value of `b` returned as
// `out`. INT8 scales carried over to the clone's values.
mlir::OwningOpRef<mlir::ModuleOp> stage_module(mlir::ModuleOp whole, const Cut* a, const Cut* b, const std::string& in,
                                               const std::string& out, const std::map<const void*, float>& scales,
                                               std::map<const void*, float>& stage_scales) {
  mlir::IRMapping map;
  mlir::OwningOpRef<mlir::ModuleOp> m(mlir::cast<mlir::ModuleOp>(whole->clone(map)));
  auto fn = m->lookupSymbol<mlir::func::FuncOp>("main");
  mlir::MLIRContext* ctx = m->getContext();
  mlir::Block& body = fn.getBody().front();
  if (a) {
    Value v = map.lookup(a->value);
    auto attrs = mlir::DictionaryAttr::get(ctx, {mlir::NamedAttribute(mlir::StringAttr::get(ctx, tpu::kNameAttr),
                                                                      mlir::StringAttr::get(ctx, in))});
    mlir::BlockArgument arg = body.addArgument(v.getType(), v.getLoc());
    v.replaceAllUsesWith(arg);
    std::vector<mlir::DictionaryAttr> arg_attrs;
    for (unsigned i = 0; i + 1 < body.getNumArguments(); ++i) arg_attrs.push_back(fn.getArgAttrDict(i));
    arg_attrs.push_back(attrs);
    fn.setType(mlir::FunctionType::get(ctx, body.getArgumentTypes(), fn.getResultTypes()));
    fn.setAllArgAttrs(llvm::ArrayRef<mlir::DictionaryAttr>(arg_attrs));
  }
  if (b) {
    auto ret = mlir::cast<mlir::func::ReturnOp>(body.getTerminator());
    Value v = map.lookup(b->value);
    ret->setOperands(v);
    fn.setType(mlir::FunctionType::get(ctx, body.getArgumentTypes(), {v.getType()}));
    std::vector<mlir::DictionaryAttr> result_attrs{mlir::DictionaryAttr::get(
        ctx, {mlir::NamedAttribute(mlir::StringAttr::get(ctx, tpu::kNameAttr), mlir::StringAttr::get(ctx, out))})};
    fn.setAllResultAttrs(llvm::ArrayRef<mlir::DictionaryAttr>(result_attrs));
  }
  // The other stages' ops: unread once the cut's value is an argument and the return reads
  // this stage's; erased last reader first.
  std::vector<mlir::Operation*> ops;
  for (mlir::Operation& op : body) ops.push_back(&op);
  for (size_t i = ops.size(); i-- > 0;)
    if (!mlir::isa<mlir::func::ReturnOp>(ops[i]) && ops[i]->use_empty()) ops[i]->erase();
  llvm::BitVector unread(body.getNumArguments());
  for (unsigned i = 0; i < body.getNumArguments(); ++i)
    if (body.getArgument(i).use_empty()) unread.set(i);
  fn.eraseArguments(unread);
  // Scales: every value of the stage that was a value of the whole, and the new argument.
  std::set<const void*> alive;
  for (Value arg : body.getArguments()) alive.insert(arg.getAsOpaquePointer());
  fn.walk([&](mlir::Operation* op) {
    for (Value r : op->getResults()) alive.insert(r.getAsOpaquePointer());
  });
  for (const auto& [p, s] : scales) {
    Value mine = map.lookupOrNull(Value::getFromOpaquePointer(p));
    if (mine && alive.count(mine.getAsOpaquePointer())) stage_scales[mine.getAsOpaquePointer()] = s;
  }
  if (a && scales.count(a->value.getAsOpaquePointer()))
    for (unsigned i = 0; i < body.getNumArguments(); ++i)
      if (fn.getArgAttrOfType<mlir::StringAttr>(i, tpu::kNameAttr).str() == in)
        stage_scales[body.getArgument(i).getAsOpaquePointer()] = scales.at(a->value.getAsOpaquePointer());
  return m;
}

namespace {

// @main as a stage: it receives its first input (or not), sends its output to `chip` at HBM
// address `addr` (chip -1: it is the last), and runs once per micro-batch.
void mark_stage(mlir::func::FuncOp fn, bool receive, int64_t chip, int64_t addr, int64_t micro_batches) {
  mlir::MLIRContext* ctx = fn->getContext();
  auto i64 = [&](int64_t v) { return mlir::IntegerAttr::get(mlir::IntegerType::get(ctx, 64), v); };
  if (micro_batches > 1) fn->setAttr(tpu::kBatchChunksAttr, i64(micro_batches));
  fn->setAttr(tpu::kStageLinkAttr,
              mlir::DictionaryAttr::get(ctx, {{mlir::StringAttr::get(ctx, "receive"), mlir::BoolAttr::get(ctx, receive)},
                                              {mlir::StringAttr::get(ctx, "send_chip"), i64(chip)},
                                              {mlir::StringAttr::get(ctx, "send_addr"), i64(addr)}}));
}

const isa::TensorInfo* tensor_named(const isa::Program& p, const std::string& name, isa::TensorRole role) {
  for (const auto& t : p.tensors)
    if (t.name == name && t.role == role) return &t;
  return nullptr;
}

}  // namespace

Pipeline compile_stages(const std::filesystem::path& model, const config::Config& cfg, const CompileOptions& options,
                        const StageOptions& so) {
  const size_t S = so.chips.size();
  if (S < 2) throw UserError("a pipeline needs two stages or more");
  check_config_for_compiler(cfg);
  // The whole batch: its size, whether it may run in micro-batches, (INT8) its scales, and
  // the plan.
  Pipeline pipe;
  Frontend whole(model, options);
  whole.import();
  whole.lower();
  auto wfn = whole.main();
  if (wfn->hasAttr(tpu::kEmptyTensorsAttr))
    throw UserError(fmt::format("{}: the model has empty (0-element) inputs or outputs, which a pipeline does not place; "
                                "run it on one chip",
                                model.string()));
  auto first = wfn.getNumArguments() ? mlir::cast<mlir::RankedTensorType>(wfn.getArgument(0).getType()) : nullptr;
  const int64_t batch = pipe.batch = first && first.getRank() ? first.getShape()[0] : 1;
  const std::string why = why_samples_mix(wfn, batch);
  std::vector<int64_t> counts{1};
  if (so.micro_batches < 0 || (so.micro_batches && batch % so.micro_batches))
    throw UserError(fmt::format("--micro-batches {}: the batch of {} does not divide into {} equal micro-batches; give "
                                "a divisor of {}",
                                so.micro_batches, batch, so.micro_batches, batch));
  if (so.micro_batches > 1 && !why.empty())
    throw UserError(fmt::format("{}: the batch cannot flow through the stages in micro-batches ({}); give "
                                "--micro-batches 1",
                                model.string(), why));
  // Candidates: up to 4 micro-batches per stage (beyond, the pipeline fills at most 1.25 x
  // sooner and every one more loads the weights again).
  if (so.micro_batches) counts = {so.micro_batches};
  else if (why.empty())
    for (int64_t m = 2; m <= batch && m <= 4 * int64_t(S); ++m)
      if (batch % m == 0) counts.push_back(m);
  if (!so.micro_batches && !why.empty() && batch > 1) pipe.whole_batch_why = why;
  std::vector<float> ordered = options.calibration_scales;
  if (options.precision == Precision::Int8 && ordered.empty()) ordered = scales_in_order(wfn, calibrate(whole.module(), options));
  std::vector<mlir::Operation*> wops = ops_of(wfn);
  StagePlan plan = plan_stages(wops, cfg, batch, options.precision == Precision::Int8 ? 1 : 2, S, counts);
  if (plan.chosen.empty())
    throw UserError(fmt::format("{}: the model can be cut into at most {} pipeline stages (it has {} places where one "
                                "tensor alone goes from one layer to the rest), fewer than the {} chips of '{}'; use a "
                                "config of fewer chips, or --parallel data",
                                model.string(), plan.cuts.size() + 1, plan.cuts.size(), S, cfg.name));
  pipe.micro_batches = plan.micro_batches;
  const std::vector<double>& prefix = plan.prefix;

  // The micro-batch's model (the whole one when there is one micro-batch), the whole
  // batch's scales on its values, and the cuts at the same ops.
  const int64_t micro = batch / pipe.micro_batches;
  std::unique_ptr<Frontend> part;
  if (micro != batch) {
    CompileOptions o = options;
    o.batch = micro;
    o.calibration.clear();
    o.calibration_scales = ordered;
    o.progress = nullptr;
    part = std::make_unique<Frontend>(model, o);
    part->import();
    part->lower();
  }
  Frontend& front = part ? *part : whole;
  auto fn = front.main();
  std::map<const void*, float> scales;
  if (options.precision == Precision::Int8) scales = scales_by_value(fn, ordered, model, micro, batch);
  std::vector<mlir::Operation*> ops = ops_of(fn);
  if (ops.size() != wops.size())
    throw InternalError(fmt::format("{}: the model has {} ops at batch {}, {} at batch {}", model.string(), ops.size(), micro,
                                    wops.size(), batch));
  std::vector<Cut> cuts = plan.cuts;
  for (Cut& c : cuts) c.value = ops[c.defined]->getResult(c.result);
  const std::vector<size_t>& chosen = plan.chosen;

  // The stages, last first: each sends to the input tensor of the one after it.
  std::set<std::string> names;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) names.insert(fn.getArgAttrOfType<mlir::StringAttr>(i, tpu::kNameAttr).str());
  std::vector<std::string> tensor(S - 1);
  for (size_t s = 0; s + 1 < S; ++s) {
    std::string n = layer_of(cuts[chosen[s]].value.getDefiningOp());
    while (names.count(n)) n += "'";
    names.insert(tensor[s] = n);
  }
  CompileOptions generating = options;
  generating.progress = nullptr;
  std::vector<Stage>& stages = pipe.stages;
  stages.resize(S);
  for (size_t s = S; s-- > 0;) {
    const Cut* a = s ? &cuts[chosen[s - 1]] : nullptr;
    const Cut* b = s + 1 < S ? &cuts[chosen[s]] : nullptr;
    Stage& st = stages[s];
    st.chip = so.chips[s];
    st.input = a ? tensor[s - 1] : "";
    st.output = b ? tensor[s] : "";
    size_t first = a ? a->at + 1 : 0, last = b ? b->at : ops.size() - 1;
    st.first_layer = layer_of(ops[first]), st.last_layer = layer_of(ops[last]);
    st.cost = (prefix[last + 1] - prefix[first]) / std::max(prefix.back(), 1e-30);
    std::map<const void*, float> stage_scales;
    auto m = stage_module(front.module(), a, b, st.input, st.output, scales, stage_scales);
    const isa::TensorInfo* next = b ? tensor_named(stages[s + 1].result.program, st.output, isa::TensorRole::Input) : nullptr;
    if (b && !next) throw InternalError(fmt::format("stage {} declares no input '{}'", s + 1, st.output));
    mark_stage(m->lookupSymbol<mlir::func::FuncOp>("main"), a, b ? int64_t(so.chips[s + 1]) : -1,
               next ? int64_t(next->hbm_addr) : 0, pipe.micro_batches);
    try {
      st.result = generate_program(*m, cfg, generating, stage_scales);
    } catch (const DoesNotFitError& e) {
      throw DoesNotFitError(e.key(), e.needed(), e.available(),
                            fmt::format("{} (pipeline stage {} of {}, layers {} .. {}, in micro-batches of {}{})", e.what(),
                                        s + 1, S, st.first_layer, st.last_layer, micro,
                                        micro > 1 ? "; more --micro-batches make them smaller" : ""));
    }
    if (b) {  // what this stage sends is what the next one reads
      const isa::TensorInfo* mine = tensor_named(st.result.program, st.output, isa::TensorRole::Output);
      if (!mine || mine->dtype != next->dtype || mine->shape != next->shape || mine->quant_scale != next->quant_scale)
        throw InternalError(fmt::format("pipeline stages {} and {} disagree on tensor '{}'", s + 1, s + 2, st.output));
    }
    st.result.calibration_scales = ordered;
    scale_bounds(st.result.bounds, pipe.micro_batches, batch, micro);  // its code runs once per micro-batch
  }
  return pipe;
}

}  // namespace vtpu::compiler
