// Post-training INT8 calibration (docs/compiler.md, "INT8"): the fp32 reference interpreter
// runs on the calibration samples (given, or seeded random ones), and every activation gets
// a symmetric per-tensor scale range / 127, shared by the activations that must agree; the
// range is max|x|, or a percentile of |x|, or the entropy method's threshold (ranges.h).
#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <random>
#include <set>

#include "dialect/tpu_dialect.h"
#include "pipeline/pipeline.h"
#include "pipeline/ranges.h"

namespace vtpu::compiler {
namespace {

// How many seeded random batches to run: enough for `calibration_samples` rows, and no more
// than the plain-loop interpreter does in a few billion MACs.
int random_runs(mlir::func::FuncOp fn, const CompileOptions& options) {
  // Each run is a whole batch: calibrate on at least calibration_samples rows of the batch.
  int64_t batch = 1;
  if (fn.getNumArguments()) batch = std::max<int64_t>(1, mlir::cast<mlir::RankedTensorType>(fn.getArgument(0).getType()).getShape()[0]);
  int runs = int(std::max<int64_t>(1, (options.calibration_samples + batch - 1) / batch));
  // The reference interpreter is plain loops: keep calibration to a few billion MACs.
  double macs = 0;
  fn.walk([&](mlir::Operation* op) {
    auto numel = [](mlir::Value v) { return double(mlir::cast<mlir::RankedTensorType>(v.getType()).getNumElements()); };
    if (auto m = mlir::dyn_cast<tpu::MatmulOp>(op))
      macs += numel(m.getOutput()) * double(mlir::cast<mlir::RankedTensorType>(m.getWeight().getType()).getShape()[0]);
    if (auto bm = mlir::dyn_cast<tpu::BatchMatmulOp>(op))
      macs += numel(bm.getOutput()) * double(mlir::cast<mlir::RankedTensorType>(bm.getLhs().getType()).getShape()[2]);
    if (auto c = mlir::dyn_cast<tpu::Conv2DOp>(op)) {
      auto ws = mlir::cast<mlir::RankedTensorType>(c.getWeight().getType()).getShape();
      macs += numel(c.getOutput()) * double(ws[0] * ws[1] * ws[2]);
    }
  });
  return std::max(1, std::min(runs, int(8e9 / std::max(1.0, macs))));
}

// The samples: the given ones, or `random_runs` seeded batches uniform in [-1, 1] (integer
// inputs: integers of their range; token ids: rows of the table they index).
std::vector<std::vector<RefTensor>> samples(mlir::func::FuncOp fn, const CompileOptions& options) {
  std::vector<std::vector<RefTensor>> r;
  for (const auto& given : options.calibration)
    r.push_back(named_inputs(fn, given, "calibration sample lacks input '{}'", "calibration input '{}' has {} values, the model needs {}"));
  std::mt19937_64 rng(options.seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  int runs = random_runs(fn, options);
  for (int s = 0; options.calibration.empty() && s < runs; ++s) {
    std::vector<RefTensor> in;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      auto t = mlir::cast<mlir::RankedTensorType>(fn.getArgument(i).getType());
      RefTensor x{{t.getShape().begin(), t.getShape().end()}, std::vector<float>(size_t(t.getNumElements()))};
      if (auto lo = fn.getArgAttrOfType<mlir::IntegerAttr>(i, tpu::kIntLoAttr)) {
        auto hi = fn.getArgAttrOfType<mlir::IntegerAttr>(i, tpu::kIntHiAttr);
        std::uniform_int_distribution<int64_t> ui(lo.getInt(), hi ? hi.getInt() : lo.getInt());
        for (auto& v : x.data) v = float(ui(rng));
      } else {
        for (auto& v : x.data) v = u(rng);
      }
      in.push_back(std::move(x));
    }
    r.push_back(std::move(in));
  }
  return r;
}

// The largest |x| of xs, NaN left out: as a loop over std::max(m, |x|), in 16 partial maxima
// that the compiler can keep in vector registers (the maximum does not depend on the order).
float max_magnitude(const std::vector<float>& xs) {
  constexpr size_t kLanes = 16;
  float part[kLanes] = {};
  size_t n = xs.size(), i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (size_t k = 0; k < kLanes; ++k) part[k] = std::max(part[k], std::fabs(xs[i + k]));
  float m = 0;
  for (; i < n; ++i) m = std::max(m, std::fabs(xs[i]));
  for (float p : part) m = std::max(m, p);
  return m;
}

// Every activation's range over the samples: its largest magnitude, or what the method
// makes of its histogram (ranges.h). `step` hears the share of the runs done after each.
std::map<const void*, float> ranges(mlir::func::FuncOp fn, const std::vector<std::vector<RefTensor>>& runs,
                                    const CompileOptions& options, const std::function<void(double)>& step) {
  std::map<const void*, float> maxabs;
  std::map<const void*, MagnitudeHistogram> hist;
  const bool max_only = options.calibration_method == CalibrationMethod::Max;
  for (size_t s = 0; s < runs.size(); ++s) {
    const auto& in = runs[s];
    evaluate_reference(fn, in, [&](const void* v, const RefTensor& t) {
      if (!max_only) return hist[v].add(t.data.data(), t.data.size());
      float& m = maxabs[v];
      m = std::max(m, max_magnitude(t.data));
    });
    if (step) step(double(s + 1) / double(runs.size()));
  }
  for (const auto& [v, h] : hist) maxabs[v] = h.range(options.calibration_method, options.calibration_percentile);
  return maxabs;
}

// The scales from the ranges.
std::map<const void*, float> shared_scales(mlir::func::FuncOp fn, const std::map<const void*, float>& maxabs) {
  // Activations that must share one scale, as classes of a union-find:
  // - pools, reshapes, broadcasts, transposes, slices (...) pass int8 values through without
  //   rescaling, so their output keeps the input's scale (an average pool's smaller range
  //   would otherwise be misread);
  // - matmuls of one weight constant (an unrolled LSTM's or GRU's recurrent matmuls, one per
  //   time step) take inputs of one scale and give outputs of one scale, as a quantized
  //   recurrent layer has one scale for its state: their requantization parameters are then
  //   the same at every step instead of one set per step (4096 at most per program);
  // - a concat and each input it is the only reader of that a convolution or matmul
  //   produces (an Inception module's branches), as TFLite and TensorRT quantize concats:
  //   the producer then requantizes its int32 sums straight to the concat's scale and the
  //   concat only copies, instead of rescaling the input (a vector pass over every row and
  //   a second rounding). Not an input computed at its own scale by int8 arithmetic (an
  //   Add rescales its operands to its output's scale: a coarser one rounds them coarser;
  //   Silero VAD's spectrogram lost accuracy so), nor one that already shares a scale with
  //   others (it would coarsen them all), nor where a quantized model fixes a scale.
  std::map<const void*, const void*> parent;
  std::function<const void*(const void*)> find = [&](const void* v) -> const void* {
    auto it = parent.find(v);
    if (it == parent.end() || it->second == v) return v;
    return it->second = find(it->second);
  };
  auto unite = [&](mlir::Value a, mlir::Value b) {
    const void *ra = find(a.getAsOpaquePointer()), *rb = find(b.getAsOpaquePointer());
    if (ra != rb) parent[rb] = ra;
  };
  std::map<const void*, tpu::MatmulOp> first_of_weight;
  std::map<const void*, float> fixed;  // a quantized model's own scales
  for (mlir::Operation& op : fn.getBody().front()) {
    // A quantized model's own scale, where its integer range fits int8 (int8, or uint8
    // with zero point 128): the program then holds exactly the model's integers.
    if (auto fq = mlir::dyn_cast<tpu::FakeQuantOp>(op); fq && fq.getLo().convertToDouble() >= -128 &&
                                                      fq.getHi().convertToDouble() <= 127)
      fixed[fq.getOutput().getAsOpaquePointer()] = float(fq.getScale().convertToDouble());
    // An int32 result (an integer model output) holds the integers themselves.
    if (op.getNumResults() && mlir::cast<mlir::RankedTensorType>(op.getResult(0).getType()).getElementType().isInteger(32))
      fixed[op.getResult(0).getAsOpaquePointer()] = 1.0f;
    if (mlir::isa<tpu::PoolOp, tpu::ReshapeOp, tpu::BroadcastOp, tpu::TransposeOp, tpu::SliceOp, tpu::ResizeNearestOp, tpu::ZeroInsertOp>(op))
      unite(op.getOperand(0), op.getResult(0));
    if (auto mm = mlir::dyn_cast<tpu::MatmulOp>(op)) {
      auto [it, first] = first_of_weight.emplace(mm.getWeight().getAsOpaquePointer(), mm);
      if (!first) unite(it->second.getInput(), mm.getInput()), unite(it->second.getOutput(), mm.getOutput());
    }
  }
  std::set<const void*> grouped;  // values that share a scale with another so far
  for (const auto& [v, p] : parent)
    if (v != p) grouped.insert(v), grouped.insert(find(v));
  for (mlir::Operation& op : fn.getBody().front())
    if (auto cat = mlir::dyn_cast<tpu::ConcatOp>(op); cat && !fixed.count(cat.getOutput().getAsOpaquePointer()))
      for (mlir::Value in : cat.getInputs()) {
        const void* v = in.getAsOpaquePointer();
        bool requantized = in.getDefiningOp<tpu::Conv2DOp>() || in.getDefiningOp<tpu::MatmulOp>();
        if (requantized && in.hasOneUse() && !fixed.count(v) && !grouped.count(v)) unite(cat.getOutput(), in);
      }
  std::map<const void*, float> class_max, class_fixed;
  for (const auto& [v, m] : maxabs) {
    float& c = class_max[find(v)];
    c = std::max(c, m);
  }
  for (const auto& [v, s] : fixed) class_fixed.emplace(find(v), s);
  std::map<const void*, float> scales;
  for (const auto& [v, m] : maxabs) {
    const void* root = find(v);
    auto f = class_fixed.find(root);
    float cm = class_max[root];
    scales[v] = f != class_fixed.end() ? f->second : cm > 0 ? cm / 127.0f : 1.0f;
  }
  return scales;
}

}  // namespace

std::vector<const void*> value_order(mlir::func::FuncOp fn) {
  std::vector<const void*> order;
  for (mlir::Value a : fn.getArguments()) order.push_back(a.getAsOpaquePointer());
  fn.walk([&](mlir::Operation* op) {
    for (mlir::Value r : op->getResults()) order.push_back(r.getAsOpaquePointer());
  });
  return order;
}

std::vector<float> scales_in_order(mlir::func::FuncOp fn, const std::map<const void*, float>& scales) {
  std::vector<float> ordered;
  for (const void* v : value_order(fn)) {
    auto it = scales.find(v);
    ordered.push_back(it == scales.end() ? std::nanf("") : it->second);
  }
  return ordered;
}

std::map<const void*, float> given_scales(mlir::func::FuncOp fn, const std::vector<float>& ordered,
                                          const std::filesystem::path& model) {
  std::vector<const void*> order = value_order(fn);
  if (ordered.size() != order.size())
    throw UserError(fmt::format("{}: the calibration scales given are for another model ({} values, this one has {})",
                                model.string(), ordered.size(), order.size()));
  std::map<const void*, float> scales;
  for (size_t i = 0; i < order.size(); ++i)
    if (!std::isnan(ordered[i])) scales[order[i]] = ordered[i];
  return scales;
}

std::map<const void*, float> calibrate(mlir::ModuleOp module, const CompileOptions& options,
                                       const std::function<void(double)>& step) {
  auto fn = module.lookupSymbol<mlir::func::FuncOp>("main");
  if (!(options.calibration_percentile > 0 && options.calibration_percentile <= 100))
    throw UserError(fmt::format("--calibration-percentile {}: give a percentage above 0 and at most 100",
                                options.calibration_percentile));
  return shared_scales(fn, ranges(fn, samples(fn, options), options, step));
}

std::map<const void*, float> scales_by_value(mlir::func::FuncOp fn, const std::vector<float>& ordered,
                                             const std::filesystem::path& model, int64_t batch, int64_t whole_batch) {
  std::vector<const void*> order = value_order(fn);
  if (order.size() != ordered.size())
    throw InternalError(fmt::format("{}: the model at batch {} has {} values, at batch {} {}", model.string(), batch,
                                    order.size(), whole_batch, ordered.size()));
  std::map<const void*, float> by_value;
  for (size_t i = 0; i < order.size(); ++i)
    if (!std::isnan(ordered[i])) by_value[order[i]] = ordered[i];
  return by_value;
}

}  // namespace vtpu::compiler
