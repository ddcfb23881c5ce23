// The one pipeline (pipeline/pipeline.h) and the public entry points that run it:
// compile_onnx, model_inputs and reference_outputs (vtpu/compiler/compiler.h).
#include "pipeline/pipeline.h"

#include <fmt/format.h>

#include <cmath>

#include "import.h"
#include "target_limits.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "transforms/passes.h"

namespace vtpu::compiler {

void load_dialects(mlir::MLIRContext& ctx) {
  ctx.loadDialect<mlir::func::FuncDialect, mlir::tosa::TosaDialect, tpu::TpuDialect>();
}

void build_tosa_to_tpu_pipeline(mlir::OpPassManager& pm) {
  pm.addNestedPass<mlir::func::FuncOp>(tpu::createChannelShufflePass());
  pm.addNestedPass<mlir::func::FuncOp>(tpu::createCancelTransposesPass());
  pm.addNestedPass<mlir::func::FuncOp>(tpu::createFoldBatchNormPass());
  pm.addNestedPass<mlir::func::FuncOp>(tpu::createLowerTosaToTpuPass());
}

Frontend::Frontend(const std::filesystem::path& model, const CompileOptions& options) : model_(model), options_(options) {
  ctx_.disableMultithreading();  // passes report errors as C++ exceptions
  load_dialects(ctx_);
  handler_ = std::make_unique<mlir::ScopedDiagnosticHandler>(&ctx_, [this](mlir::Diagnostic& d) {
    diagnostics_ += d.str() + "\n";
    return mlir::success();
  });
}

mlir::ModuleOp Frontend::import() {
  module_ = import_onnx(ctx_, model_, options_);
  return *module_;
}

void Frontend::lower() {
  mlir::PassManager pm(&ctx_);
  build_tosa_to_tpu_pipeline(pm);
  if (mlir::failed(pm.run(*module_))) {
    // Diagnostics read "loc: error: node 'x': ..."; keep the message part.
    std::string msg = diagnostics_;
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    throw CompileError(fmt::format("{}: {}", model_.string(), msg));
  }
}

std::string layer_of(mlir::Operation* op) {
  auto a = op->getAttrOfType<mlir::StringAttr>("layer");
  return a ? a.str() : op->getName().getStringRef().str();
}

std::string print_ir(mlir::ModuleOp m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  // Weights are elided: a dense constant as dense_resource<__elided__>, a resource blob
  // (dialect/constants.h) by its name, its data left out of the dialect_resources section.
  m.print(os, mlir::OpPrintingFlags().elideLargeElementsAttrs(16).elideLargeResourceString(64));
  return s;
}

std::vector<RefTensor> named_inputs(mlir::func::FuncOp fn, const std::map<std::string, std::vector<float>>& given,
                                    const char* missing, const char* wrong_size) {
  std::vector<RefTensor> in;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    std::string name = fn.getArgAttrOfType<mlir::StringAttr>(i, tpu::kNameAttr).str();
    auto t = mlir::cast<mlir::RankedTensorType>(fn.getArgument(i).getType());
    auto it = given.find(name);
    if (it == given.end()) throw UserError(fmt::format(fmt::runtime(missing), name));
    if (int64_t(it->second.size()) != t.getNumElements())
      throw UserError(fmt::format(fmt::runtime(wrong_size), name, it->second.size(), t.getNumElements()));
    in.push_back({{t.getShape().begin(), t.getShape().end()}, it->second});
  }
  return in;
}

void check_emit_stage(const CompileOptions& options) {
  if (!options.emit_mlir_stage.empty() && options.emit_mlir_stage != "tosa" && options.emit_mlir_stage != "tpu")
    throw UserError(fmt::format("--emit-mlir '{}': the stages are tosa and tpu", options.emit_mlir_stage));
}

std::map<const void*, float> int8_scales(Frontend& front, const std::filesystem::path& model, const CompileOptions& options,
                                         const std::function<void(double)>& step) {
  return options.calibration_scales.empty() ? calibrate(front.module(), options, step)
                                            : given_scales(front.main(), options.calibration_scales, model);
}

CompileResult compile_onnx(const std::filesystem::path& model, const config::Config& cfg, const CompileOptions& options) {
  check_emit_stage(options);
  check_config_for_compiler(cfg);
  // CompileOptions::progress: each stage spans its usual share of the whole compile
  // (docs/compiler.md, "Progress"); calibration and code generation report their steps.
  bool calibrating = options.precision == Precision::Int8 && options.calibration_scales.empty();
  const double lowered = 0.10, calibrated = calibrating ? 0.55 : lowered;
  auto report = [&options](const std::string& stage, double lo, double hi) {
    return [&options, stage, lo, hi](double done) {
      if (options.progress) options.progress(stage, lo + (hi - lo) * done);
    };
  };
  Frontend front(model, options);
  std::string mlir_text;
  report("import", 0, 0)(0);
  front.import();
  if (options.emit_mlir_stage == "tosa") mlir_text = print_ir(front.module());
  report("lower", 0.05, 0.05)(0);
  front.lower();
  if (options.emit_mlir_stage == "tpu") mlir_text = print_ir(front.module());
  std::map<const void*, float> scales;
  std::vector<float> ordered;  // the scales in value_order, as CompileResult carries them (INT8)
  if (options.precision == Precision::Int8) {
    check_inputs_fit(front.module(), cfg, options, chunkable_batch(front.main()));
    scales = int8_scales(front, model, options, report("calibrate", lowered, calibrated));
    ordered = scales_in_order(front.main(), scales);
  }
  CompileOptions generating = options;
  generating.progress = [step = report("codegen", calibrated, 1.0)](const std::string&, double done) { step(done); };
  report("codegen", calibrated, calibrated)(0);
  CompileResult r = generate_or_split(front.module(), model, cfg, options, generating, scales, ordered);
  r.mlir = std::move(mlir_text);
  r.calibration_scales = std::move(ordered);
  return r;
}

namespace {

// The program with the model's transposed convolutions in phases through HBM
// (phases_through_hbm) and everything else as generate_program places it, on a copy of
// `module`; nothing when the model has none or the copy does not fit the unified buffer.
// The banded programs of a smaller buffer have them in phases: so has a buffer that holds
// every image, whose cycles would otherwise rise above a smaller one's.
std::optional<CompileResult> whole_in_phases(mlir::ModuleOp module, const std::filesystem::path& model,
                                             const config::Config& cfg, const CompileOptions& options,
                                             const CompileOptions& generating, const std::vector<float>& ordered) {
  bool spread = false;
  module.walk([&](tpu::ZeroInsertOp) { spread = true; });
  if (!spread) return std::nullopt;
  mlir::OwningOpRef<mlir::ModuleOp> copy = module.clone();
  auto fn = copy->lookupSymbol<mlir::func::FuncOp>("main");
  const bool int8 = options.precision == Precision::Int8;
  std::map<const void*, float> scales;
  if (int8) scales = given_scales(fn, ordered, model);
  if (!phases_through_hbm(fn, cfg, int8, scales)) return std::nullopt;
  try {
    return generate_program(*copy, cfg, generating, scales);
  } catch (const DoesNotFitError& e) {
    if (e.key() != "core.unified_buffer.bytes") throw;
    return std::nullopt;
  }
}

// The whole program, else the batch in chunks or the images in row bands.
CompileResult whole_chunks_or_bands(mlir::ModuleOp module, const std::filesystem::path& model, const config::Config& cfg,
                                    const CompileOptions& options, const CompileOptions& generating,
                                    const std::map<const void*, float>& scales, const std::vector<float>& ordered) {
  if (auto r = whole_in_phases(module, model, cfg, options, generating, ordered)) return std::move(*r);
  try {
    return generate_program(module, cfg, generating, scales);
  } catch (const DoesNotFitError& e) {
    // The whole batch does not fit the unified buffer: in chunks, if its samples stay apart.
    auto fn = module.lookupSymbol<mlir::func::FuncOp>("main");
    const int64_t batch = batch_of(fn);
    if (e.key() != "core.unified_buffer.bytes") throw;
    bool bands = has_images(fn);
    if (why_samples_mix(fn, batch).empty()) return compile_in_chunks(model, cfg, options, generating, batch, ordered, e, bands);
    if (bands) return compile_in_bands(model, cfg, options, generating, batch, ordered, e);  // one sample, or samples that mix
    throw;
  }
}

}  // namespace

CompileResult generate_or_split(mlir::ModuleOp module, const std::filesystem::path& model, const config::Config& cfg,
                                const CompileOptions& options, const CompileOptions& generating,
                                const std::map<const void*, float>& scales, const std::vector<float>& ordered) {
  try {
    return whole_chunks_or_bands(module, model, cfg, options, generating, scales, ordered);
  } catch (const DoesNotFitError& e) {
    // Last, lane blocks on the unified buffer's rows (CompileOptions::compact_ub_blocks):
    // only when they save a quarter of one sample's values' bytes (a small array's values of
    // one or a few rows per sample), on a new import (the first attempts planned `module`).
    // When that does not fit either, its error is the one given (the most lenient layout's
    // limit; HBM when it got that far).
    if (e.key() != "core.unified_buffer.bytes" || generating.compact_ub_blocks) throw;
    CompileOptions compact = generating;
    compact.compact_ub_blocks = true;
    const int64_t batch = batch_of(module.lookupSymbol<mlir::func::FuncOp>("main"));
    if (ub_block_alignment(cfg, compact) >= ub_block_alignment(cfg, generating) ||
        4 * values_bytes(module, cfg, compact, batch) > 3 * values_bytes(module, cfg, generating, batch))
      throw;
    try {
      Frontend front(model, options);
      front.import();
      front.lower();
      std::map<const void*, float> by_value;
      if (options.precision == Precision::Int8) by_value = given_scales(front.main(), ordered, model);
      return whole_chunks_or_bands(front.module(), model, cfg, options, compact, by_value, ordered);
    } catch (const DoesNotFitError&) {
      throw;  // the most lenient layout's limit (HBM, or the buffer for one sample, or a table in chunks)
    } catch (const CompileError&) {
      throw e;
    }
  }
}

std::vector<ModelInput> model_inputs(const std::filesystem::path& model, const CompileOptions& options) {
  // What the importer makes of the graph's inputs is the authority (batch, layout, types).
  Frontend front(model, options);
  front.import();
  auto fn = front.main();
  std::vector<ModelInput> r;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    auto t = mlir::cast<mlir::RankedTensorType>(fn.getArgument(i).getType());
    r.push_back({fn.getArgAttrOfType<mlir::StringAttr>(i, tpu::kNameAttr).str(),
                 {t.getShape().begin(), t.getShape().end()},
                 bool(fn.getArgAttr(i, tpu::kNhwcAttr)),
                 bool(fn.getArgAttr(i, tpu::kIntLoAttr))});
  }
  return r;
}

std::map<std::string, std::vector<float>> reference_outputs(const std::filesystem::path& model,
                                                            const std::map<std::string, std::vector<float>>& inputs,
                                                            const CompileOptions& options) {
  Frontend front(model, options);
  front.import();
  front.lower();
  auto fn = front.main();
  auto outs = evaluate_reference(fn, named_inputs(fn, inputs, "reference run: no data for input '{}'",
                                                  "reference run: input '{}' has {} values, needs {}"));
  std::map<std::string, std::vector<float>> r;
  for (unsigned i = 0; i < outs.size(); ++i)
    r[fn.getResultAttrOfType<mlir::StringAttr>(i, tpu::kNameAttr).str()] = std::move(outs[i].data);
  return r;
}

}  // namespace vtpu::compiler
