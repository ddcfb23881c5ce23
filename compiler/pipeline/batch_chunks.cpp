// A batch larger than the unified buffer holds (docs/compiler.md, "Batches larger than the
// unified buffer"): when code generation of the whole batch runs out of unified buffer, the
// model is compiled again for the largest chunk of the batch that fits, and the program runs
// that chunk's code once per chunk over consecutive slices of the inputs and outputs
// (codegen/batch_chunks.cpp). A limit of the chip costs time (weights are loaded once per
// chunk) instead of failing. Only when the samples stay apart in every op (samples_apart):
// otherwise the whole batch's error stands (why_samples_mix says why).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "codegen/codegen.h"
#include "dialect/attr_names.h"
#include "dialect/tpu_dialect.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "pipeline/pipeline.h"

namespace vtpu::compiler {
namespace {

int64_t dim0(mlir::Value v) {
  auto t = mlir::cast<mlir::RankedTensorType>(v.getType());
  return t.getRank() ? t.getShape()[0] : -1;
}

}  // namespace

void scale_bounds(std::vector<LayerBound>& bounds, int64_t passes, int64_t batch, int64_t chunk) {
  for (LayerBound& b : bounds) {
    // Useful MACs are the batch's (the padding rows of an uneven last pass make none); the
    // work and traffic are every pass's.
    b.macs = uint64_t(std::llround(double(b.macs) * double(batch) / double(chunk)));
    for (uint64_t* f : {&b.hbm_bytes, &b.weight_tiles, &b.compute_cycles, &b.memory_cycles, &b.weight_path_cycles})
      *f *= uint64_t(passes);
    if (!b.shape.empty()) b.shape[0] = b.shape[0] / chunk * batch;
  }
}

int64_t batch_of(mlir::func::FuncOp fn) { return fn.getNumArguments() ? std::max<int64_t>(dim0(fn.getArgument(0)), 0) : 0; }

int64_t chunkable_batch(mlir::func::FuncOp fn) {
  const int64_t batch = batch_of(fn);
  return batch > 1 && why_samples_mix(fn, batch).empty() ? batch : 0;
}

int64_t mark_chunks(mlir::func::FuncOp fn, int64_t batch, int64_t chunk) {
  const int64_t passes = (batch + chunk - 1) / chunk;
  auto i64 = [&](int64_t v) { return mlir::IntegerAttr::get(mlir::IntegerType::get(fn->getContext(), 64), v); };
  if (passes > 1) fn->setAttr(tpu::kBatchChunksAttr, i64(passes));
  if (passes * chunk != batch) fn->setAttr(tpu::kBatchWholeAttr, i64(batch));  // the last pass's rows past the batch: padding
  return passes;
}

std::string why_samples_mix(mlir::func::FuncOp fn, int64_t batch) {
  if (batch < 2) return "the batch is 1";
  if (fn->hasAttr(tpu::kEmptyTensorsAttr)) return "the model has empty inputs or outputs";
  for (mlir::BlockArgument a : fn.getArguments())
    if (dim0(a) != batch) return fmt::format("an input's first dimension is {}, not the batch", dim0(a));
  std::string why;
  fn.walk([&](mlir::Operation* op) {
    if (!why.empty() || mlir::isa<mlir::func::FuncOp>(op) || mlir::isa<mlir::tosa::ConstOp>(op)) return;
    std::string name = op->getName().getStringRef().str();
    if (auto ret = mlir::dyn_cast<mlir::func::ReturnOp>(op)) {
      for (mlir::Value v : ret.getOperands())
        if (v.getDefiningOp<mlir::tosa::ConstOp>() || dim0(v) != batch)
          why = "an output is a constant or does not have the batch as its first dimension";
      return;
    }
    // Every value is a block of rows per sample, in sample order: a first dimension that the
    // batch divides, and no op that moves rows between samples.
    for (mlir::Value r : op->getResults())
      if (dim0(r) < 1 || dim0(r) % batch)
        why = fmt::format("{} makes a value whose first dimension ({}) the batch does not divide", name, dim0(r));
    if (auto t = mlir::dyn_cast<tpu::TransposeOp>(op); t && t.getPerm()[0] != 0)
      why = "a transpose moves the batch dimension";
    if (auto c = mlir::dyn_cast<tpu::ConcatOp>(op); c && c.getAxis() == 0) why = "a concat joins along the batch dimension";
    if (auto s = mlir::dyn_cast<tpu::SliceOp>(op); s && (s.getStart()[0] != 0 || dim0(s.getOutput()) != dim0(s.getInput())))
      why = "a slice cuts the batch dimension";
    if (auto b = mlir::dyn_cast<tpu::BroadcastOp>(op); b && dim0(b.getInput()) != dim0(b.getOutput()))
      why = "a broadcast repeats along the batch dimension";
    if (mlir::isa<tpu::PoolArgmaxOp>(op)) why = "MaxPool's indices count over the whole batch";
  });
  // Values whose samples are not whole along their first dimension (time-major rows of a
  // recurrent layer) may still keep them apart.
  if (!why.empty() && why_samples_mix_by_layout(fn, batch).empty()) return "";
  return why;
}

namespace {

// An instruction-set limit the chunks' program meets (a recurrent model's vector parameters):
// the whole batch's error stands, with this one as the reason.
DoesNotFitError limit_in_chunks(const DoesNotFitError& whole, int64_t passes, int64_t n, const CompileError& e) {
  return DoesNotFitError(whole.key(), whole.needed(), whole.available(),
                         fmt::format("{} (in {} chunks of {}: {})", whole.what(), passes, n, e.what()));
}

// One attempt: the model compiled for chunks of n (n = batch: the whole batch), with images
// too large for the unified buffer in row bands through HBM when `band_budget` is given
// (bands.cpp); nothing when it does not fit the unified buffer either (`error` says why).
std::optional<CompileResult> chunks_of(const std::filesystem::path& model, const config::Config& cfg,
                                       const CompileOptions& options, const CompileOptions& generating, int64_t batch,
                                       int64_t n, const std::vector<float>& scales, const DoesNotFitError& whole,
                                       std::string& error, uint64_t band_budget = 0, bool* too_long = nullptr,
                                       bool channels = false) {
  CompileOptions o = options;
  if (n != batch) o.batch = n;
  o.calibration.clear();
  o.calibration_scales = scales;
  Frontend front(model, o);
  try {
    front.import();
    front.lower();
  } catch (const CompileError&) {
    throw whole;  // a model that cannot be imported at a smaller batch (a constant with the batch in its shape)
  }
  mlir::func::FuncOp fn = front.main();
  const int64_t passes = mark_chunks(fn, batch, n);
  std::map<const void*, float> by_value;
  if (options.precision == Precision::Int8) by_value = scales_by_value(fn, scales, model, n, batch);
  if (band_budget && !split_into_bands(fn, cfg, options.precision == Precision::Int8, band_budget, by_value, channels)) {
    error = "no layer runs in row bands";
    return std::nullopt;
  }
  try {
    CompileResult r = generate_program(front.module(), cfg, generating, by_value);
    r.calibration_scales = scales;
    scale_bounds(r.bounds, passes, batch, n);  // the whole batch's: each layer's code runs once per chunk
    return r;
  } catch (const CompileError& e) {
    auto* fit = dynamic_cast<const DoesNotFitError*>(&e);
    if (fit && fit->key() == "core.unified_buffer.bytes") {  // a smaller chunk or band budget may fit
      error = e.what();
      return std::nullopt;
    }
    if (!band_budget) {
      if (fit && n != batch)  // another limit, met only once the batch is cut
        throw DoesNotFitError(fit->key(), fit->needed(), fit->available(),
                              fmt::format("{} (the batch of {} does not fit the unified buffer whole; this is with it "
                                          "in {} chunks of {})",
                                          e.what(), batch, passes, n));
      if (!fit && n != batch) throw limit_in_chunks(whole, passes, n, e);
      throw;
    }
    // In bands: too long a program (smaller bands would only be longer), or another of the
    // chip's limits (HBM, an output row longer than the accumulators hold), which smaller
    // bands do not change. The unified buffer's error stands, with this one as the reason.
    error = e.what();
    if (too_long) *too_long = true;
    return std::nullopt;
  }
}

// Why row bands did not help, for the end of the error: `error` (the last attempt's) unless
// it is the whole's own, which the bands left as it was.
std::string no_bands(const DoesNotFitError& whole, const std::string& error) {
  if (error == whole.what()) return "row bands through HBM leave that tensor whole";
  return error == "no layer runs in row bands" ? "no layer of the model runs in row bands through HBM"
                                               : "nor in row bands through HBM: " + error;
}

// Chunks of n with images in row bands, the budget of a band halved until it fits (or the
// bands are as small as they go, or the program too long: smaller bands would only be
// longer); then, when no band of rows fitted, with bands of channels too (split_into_bands),
// so that a model that fits in rows keeps that program.
std::optional<CompileResult> in_bands(const std::filesystem::path& model, const config::Config& cfg,
                                      const CompileOptions& options, const CompileOptions& generating, int64_t batch,
                                      int64_t n, const std::vector<float>& scales, const DoesNotFitError& whole,
                                      std::string& error) {
  for (bool channels : {false, true}) {
    bool too_long = false;
    std::string last;
    for (uint64_t budget = cfg.core.unified_buffer.bytes / 2, tries = 0; tries < 7 && !too_long; budget /= 2, ++tries) {
      if (auto r = chunks_of(model, cfg, options, generating, batch, n, scales, whole, error, budget, &too_long, channels)) return r;
      if (tries && error == last) break;  // the same op fails the same way: a smaller budget does not reach it
      last = error;
    }
  }
  return std::nullopt;
}

// A tail at the whole batch (docs/compiler.md, "Batches larger than the unified buffer"):
// where the batch runs in chunks of n, the model's last layers whose values hold one row per
// sample (a classifier's fully connected layers after a global pool) need little of the
// unified buffer at the whole batch, and run once after the chunk loop, reading the chunks'
// result from HBM: their weights are loaded once instead of once per chunk. The cut is the
// earliest place (cuts_of) with a matmul after it, only such layers after it, and no model
// input read there.
std::optional<size_t> tail_cut(const std::vector<mlir::Operation*>& ops, const std::vector<Cut>& cuts, int64_t n) {
  auto one_row = [n](mlir::Value v) {
    auto t = mlir::cast<mlir::RankedTensorType>(v.getType());
    return t.getRank() && t.getShape()[0] == n && t.getNumElements() == n * t.getShape().back();
  };
  // From the end: the first op that is not such a layer, and the last matmul.
  size_t first = ops.size(), last_matmul = 0;
  for (; first > 0; --first) {
    mlir::Operation* op = ops[first - 1];
    bool ok = true;
    for (mlir::Value r : op->getResults()) ok &= one_row(r);
    for (mlir::Value v : op->getOperands()) ok &= !mlir::isa<mlir::BlockArgument>(v);
    if (!ok) break;
    if (!last_matmul && mlir::isa<tpu::MatmulOp>(op)) last_matmul = first;  // its index + 1
  }
  for (size_t i = 0; i < cuts.size(); ++i)  // the tail must hold a matmul
    if (cuts[i].at + 1 >= first && cuts[i].at + 1 < last_matmul && one_row(cuts[i].value) &&
        mlir::isa<mlir::FloatType>(mlir::cast<mlir::RankedTensorType>(cuts[i].value.getType()).getElementType()))
      return i;
  return std::nullopt;
}

// The model in chunks of n (`passes` of them) with its tail at the whole batch, or nothing
// when it has no tail or the tail does not fit.
std::optional<CompileResult> with_tail(const std::filesystem::path& model, const config::Config& cfg,
                                       const CompileOptions& options, const CompileOptions& generating, int64_t batch,
                                       int64_t n, const std::vector<float>& scales) {
  CompileOptions o = options;
  o.calibration.clear();
  o.calibration_scales = scales;
  o.batch = n;
  Frontend part(model, o);
  o.batch = batch;
  Frontend whole(model, o);
  try {
    part.import(), part.lower();
    whole.import(), whole.lower();
  } catch (const CompileError&) {
    return std::nullopt;
  }
  std::vector<mlir::Operation*> pops = ops_of(part.main()), wops = ops_of(whole.main());
  std::vector<Cut> cuts = cuts_of(pops);
  std::optional<size_t> at = tail_cut(pops, cuts, n);
  if (!at || pops.size() != wops.size()) return std::nullopt;
  Cut c = cuts[*at], cw = c;
  cw.value = wops[c.defined]->getResult(c.result);
  auto fn = part.main();
  const int64_t passes = mark_chunks(fn, batch, n);
  std::string name = layer_of(c.value.getDefiningOp()) + " (to the whole batch)";
  fn->setAttr(tpu::kTailInputAttr, mlir::StringAttr::get(fn->getContext(), name));
  std::map<const void*, float> part_scales, whole_scales, scales_of_both;
  if (options.precision == Precision::Int8) {
    part_scales = scales_by_value(part.main(), scales, model, n, batch);
    whole_scales = scales_by_value(whole.main(), scales, model, batch, batch);
  }
  auto head = stage_module(part.module(), nullptr, &c, "", name, part_scales, scales_of_both);
  auto tail = stage_module(whole.module(), &cw, nullptr, name, "", whole_scales, scales_of_both);
  std::set<std::string> tail_layers;
  for (size_t i = c.at + 1; i < wops.size(); ++i) tail_layers.insert(layer_of(wops[i]));
  CompileResult r;
  try {
    r = generate_program(*head, *tail, cfg, generating, scales_of_both);
  } catch (const DoesNotFitError&) {
    return std::nullopt;
  }
  r.calibration_scales = scales;
  // The chunks' bounds scaled to the batch (their code runs once per chunk); the tail's are
  // the whole batch's already.
  std::vector<LayerBound> chunked, once;
  for (LayerBound& b : r.bounds) (tail_layers.count(b.layer) ? once : chunked).push_back(std::move(b));
  scale_bounds(chunked, passes, batch, n);
  r.bounds = std::move(chunked);
  for (LayerBound& b : once) r.bounds.push_back(std::move(b));
  return r;
}

}  // namespace

CompileResult compile_in_bands(const std::filesystem::path& model, const config::Config& cfg, const CompileOptions& options,
                               const CompileOptions& generating, int64_t batch, const std::vector<float>& scales,
                               const DoesNotFitError& whole) {
  std::string error;
  if (auto r = in_bands(model, cfg, options, generating, batch, batch, scales, whole, error)) return std::move(*r);
  throw DoesNotFitError(whole.key(), whole.needed(), whole.available(), fmt::format("{} ({})", whole.what(), no_bands(whole, error)));
}

CompileResult compile_in_chunks(const std::filesystem::path& model, const config::Config& cfg, const CompileOptions& options,
                                const CompileOptions& generating, int64_t batch, const std::vector<float>& scales,
                                const DoesNotFitError& whole, bool bands) {
  // The largest chunk that fits, among the divisors of the batch below it, by bisection: the
  // unified buffer a chunk needs grows with its size.
  std::vector<int64_t> sizes;
  for (int64_t n = 1; n < batch; ++n)
    if (batch % n == 0) sizes.push_back(n);
  std::optional<CompileResult> best;
  int64_t best_n = 0, fails_from = batch;  // the smallest chunk known not to fit
  std::string error;
  // A chunk no smaller than one that did not fit is not compiled again (each attempt imports
  // the model anew: CNN1 at batch 32 tried chunks of 3 three times and of 4 twice). The
  // attempts' programs are assembled only once one is kept (finish): mlp0 on tiny-4x4 fits
  // at five chunk sizes on the way, each 2.5M bundles.
  CompileOptions searching = generating;
  searching.defer_assembly = true;
  auto attempt = [&](int64_t n) -> std::optional<CompileResult> {
    if (n >= fails_from) return std::nullopt;
    auto r = chunks_of(model, cfg, options, searching, batch, n, scales, whole, error);
    if (!r) fails_from = n;
    return r;
  };
  // The last attempt, in compact lane blocks (generate_or_split), first with one sample: a
  // model that does not fit so is refused after one compile instead of a bisection's. The
  // bisection then keeps that program rather than compiling it again when it comes back to
  // one sample (lstm0 on tiny-8x8 compiled it twice, 35 s each).
  if (generating.compact_ub_blocks && !sizes.empty()) {
    if ((best = attempt(sizes[0]))) best_n = sizes[0];
    else sizes.clear();
  }
  for (size_t lo = 0, hi = sizes.size(); lo < hi;) {
    size_t mid = (lo + hi) / 2;
    if (sizes[mid] == best_n) {
      lo = mid + 1;
    } else if (auto r = attempt(sizes[mid])) {
      best = std::move(r), best_n = sizes[mid];
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (!best) {
    // One sample at a time does not fit either: one at a time, in row bands.
    if (!bands) error = "no layer runs in row bands";
    else if (auto r = in_bands(model, cfg, options, generating, batch, 1, scales, whole, error)) return std::move(*r);
    throw DoesNotFitError(whole.key(), whole.needed(), whole.available(),
                          fmt::format("{} (one sample at a time does not fit either; {})", whole.what(),
                                      no_bands(whole, error)));
  }
  // Fewer passes with chunks that do not divide the batch (a prime batch: chunks of one
  // otherwise): the fewest passes p whose chunk ceil(batch / p) fits, the last pass padded.
  // Tried only below the divisors' count of passes, so a batch the divisors serve as well
  // keeps their program.
  int64_t chunk = best_n;
  for (int64_t lo = 1, hi = batch / best_n - 1; lo <= hi;) {
    int64_t p = (lo + hi) / 2, n = (batch + p - 1) / p;
    if (auto r = attempt(n)) {
      best = std::move(r);
      chunk = n;
      hi = p - 1;
    } else {
      lo = p + 1;
    }
  }
  if (auto r = with_tail(model, cfg, options, generating, batch, chunk, scales)) return std::move(*r);
  // The kept program assembled; an instruction-set limit the assembler finds is reported as
  // chunks_of reports one met while generating.
  try {
    assemble_program(*best, cfg, false);
  } catch (const CompileError& e) {
    throw limit_in_chunks(whole, (batch + chunk - 1) / chunk, chunk, e);
  }
  return std::move(*best);
}

}  // namespace vtpu::compiler
