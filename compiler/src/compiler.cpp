// The compiler pipeline: import, TOSA-level passes, lowering to tpu, code generation.
#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <random>

#include "import.h"
#include "target_limits.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "tpu_dialect.h"

namespace vtpu::compiler {

void load_dialects(mlir::MLIRContext& ctx) {
  ctx.loadDialect<mlir::func::FuncDialect, mlir::tosa::TosaDialect, tpu::TpuDialect>();
}

namespace {
// The IR for people to read: weight constants (more than 16 values) are elided, or
// ResNet-50's IR would be 100 MB of hex.
std::string print(mlir::ModuleOp m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, mlir::OpPrintingFlags().elideLargeElementsAttrs(16));
  return s;
}
// Post-training calibration: run the fp32 reference on the samples and give every
// activation a symmetric per-tensor scale max|x| / 127.
std::map<const void*, float> calibrate(mlir::ModuleOp module, const CompileOptions& options) {
  auto fn = module.lookupSymbol<mlir::func::FuncOp>("main");
  std::vector<std::vector<RefTensor>> samples;
  for (const auto& given : options.calibration) {
    std::vector<RefTensor> in;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      std::string name = fn.getArgAttrOfType<mlir::StringAttr>(i, "vtpu.name").str();
      auto t = mlir::cast<mlir::RankedTensorType>(fn.getArgument(i).getType());
      RefTensor r{{t.getShape().begin(), t.getShape().end()}, {}};
      auto it = given.find(name);
      if (it == given.end()) throw UserError(fmt::format("calibration sample lacks input '{}'", name));
      r.data = it->second;
      if (int64_t(r.data.size()) != t.getNumElements())
        throw UserError(fmt::format("calibration input '{}' has {} values, the model needs {}", name, r.data.size(),
                                    t.getNumElements()));
      in.push_back(std::move(r));
    }
    samples.push_back(std::move(in));
  }
  std::mt19937_64 rng(options.seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
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
  runs = std::max(1, std::min(runs, int(8e9 / std::max(1.0, macs))));
  for (int s = 0; options.calibration.empty() && s < runs; ++s) {
    std::vector<RefTensor> in;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      auto t = mlir::cast<mlir::RankedTensorType>(fn.getArgument(i).getType());
      RefTensor r{{t.getShape().begin(), t.getShape().end()}, std::vector<float>(size_t(t.getNumElements()))};
      if (auto lo = fn.getArgAttrOfType<mlir::IntegerAttr>(i, "vtpu.int_lo")) {
        // Integer inputs: integers of their range (token ids: rows of the table they index).
        auto hi = fn.getArgAttrOfType<mlir::IntegerAttr>(i, "vtpu.int_hi");
        std::uniform_int_distribution<int64_t> ui(lo.getInt(), hi ? hi.getInt() : lo.getInt());
        for (auto& x : r.data) x = float(ui(rng));
      } else {
        for (auto& x : r.data) x = u(rng);
      }
      in.push_back(std::move(r));
    }
    samples.push_back(std::move(in));
  }
  std::map<const void*, float> maxabs;
  for (const auto& in : samples) {
    std::map<const void*, RefTensor> all;
    evaluate_reference(fn, in, &all);
    for (const auto& [v, t] : all) {
      float& m = maxabs[v];
      for (float x : t.data) m = std::max(m, std::fabs(x));
    }
  }
  // Activations that must share one scale, as classes of a union-find:
  // - pools, reshapes, broadcasts, transposes, slices (...) pass int8 values through without
  //   rescaling, so their output keeps the input's scale (an average pool's smaller range
  //   would otherwise be misread);
  // - matmuls of one weight constant (an unrolled LSTM's or GRU's recurrent matmuls, one per
  //   time step) take inputs of one scale and give outputs of one scale, as a quantized
  //   recurrent layer has one scale for its state: their requantization parameters are then
  //   the same at every step instead of one set per step (4096 at most per program).
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

// The module's values in a fixed order (the arguments of main, then every op's results in
// walk order), the order calibration scales travel in between compiles of one model.
std::vector<const void*> value_order(mlir::ModuleOp module) {
  auto fn = module.lookupSymbol<mlir::func::FuncOp>("main");
  std::vector<const void*> order;
  for (mlir::Value a : fn.getArguments()) order.push_back(a.getAsOpaquePointer());
  fn.walk([&](mlir::Operation* op) {
    for (mlir::Value r : op->getResults()) order.push_back(r.getAsOpaquePointer());
  });
  return order;
}

}  // namespace

CompileResult compile_onnx(const std::filesystem::path& model, const config::Config& cfg, const CompileOptions& options) {
  if (!options.emit_mlir_stage.empty() && options.emit_mlir_stage != "tosa" && options.emit_mlir_stage != "tpu")
    throw UserError(fmt::format("--emit-mlir '{}': the stages are tosa and tpu", options.emit_mlir_stage));
  check_config_for_compiler(cfg);
  mlir::MLIRContext ctx;
  ctx.disableMultithreading();  // passes report errors as C++ exceptions
  load_dialects(ctx);
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic& d) {
    diagnostics += d.str() + "\n";
    return mlir::success();
  });

  auto module = import_onnx(ctx, model, options);
  std::string mlir_text;
  if (options.emit_mlir_stage == "tosa") mlir_text = print(*module);

  mlir::PassManager pm(&ctx);
  pm.addNestedPass<mlir::func::FuncOp>(tpu::createCancelTransposesPass());
  pm.addNestedPass<mlir::func::FuncOp>(tpu::createFoldBatchNormPass());
  pm.addNestedPass<mlir::func::FuncOp>(tpu::createLowerTosaToTpuPass());
  if (mlir::failed(pm.run(*module))) {
    // Diagnostics read "loc: error: node 'x': ..."; keep the message part.
    std::string msg = diagnostics;
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    throw CompileError(fmt::format("{}: {}", model.string(), msg));
  }
  if (options.emit_mlir_stage == "tpu") mlir_text = print(*module);

  std::map<const void*, float> scales;
  std::vector<const void*> order;
  if (options.precision == Precision::Int8) {
    check_inputs_fit(*module, cfg, options);
    order = value_order(*module);
    if (options.calibration_scales.empty()) {
      scales = calibrate(*module, options);
    } else if (options.calibration_scales.size() != order.size()) {
      throw UserError(fmt::format("{}: the calibration scales given are for another model ({} values, this one has {})",
                                  model.string(), options.calibration_scales.size(), order.size()));
    } else {
      for (size_t i = 0; i < order.size(); ++i)
        if (!std::isnan(options.calibration_scales[i])) scales[order[i]] = options.calibration_scales[i];
    }
  }
  CompileResult r = generate_program(*module, cfg, options, scales);
  check_program_for_config(r.program, cfg);
  r.mlir = std::move(mlir_text);
  for (const void* v : order) {
    auto it = scales.find(v);
    r.calibration_scales.push_back(it == scales.end() ? std::nanf("") : it->second);
  }
  return r;
}

std::vector<ModelInput> model_inputs(const std::filesystem::path& model, const CompileOptions& options) {
  // What the importer makes of the graph's inputs is the authority (batch, layout, types).
  mlir::MLIRContext ctx;
  ctx.disableMultithreading();
  load_dialects(ctx);
  auto module = import_onnx(ctx, model, options);
  auto fn = module->lookupSymbol<mlir::func::FuncOp>("main");
  std::vector<ModelInput> r;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    auto t = mlir::cast<mlir::RankedTensorType>(fn.getArgument(i).getType());
    r.push_back({fn.getArgAttrOfType<mlir::StringAttr>(i, "vtpu.name").str(),
                 {t.getShape().begin(), t.getShape().end()},
                 bool(fn.getArgAttr(i, "vtpu.nhwc")),
                 bool(fn.getArgAttr(i, "vtpu.int_lo"))});
  }
  return r;
}

}  // namespace vtpu::compiler

namespace vtpu::compiler {

std::map<std::string, std::vector<float>> reference_outputs(const std::filesystem::path& model,
                                                            const std::map<std::string, std::vector<float>>& inputs,
                                                            const CompileOptions& options) {
  mlir::MLIRContext ctx;
  ctx.disableMultithreading();
  load_dialects(ctx);
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic& d) {
    diagnostics += d.str() + "\n";
    return mlir::success();
  });
  auto module = import_onnx(ctx, model, options);
  mlir::PassManager pm(&ctx);
  pm.addNestedPass<mlir::func::FuncOp>(tpu::createCancelTransposesPass());
  pm.addNestedPass<mlir::func::FuncOp>(tpu::createFoldBatchNormPass());
  pm.addNestedPass<mlir::func::FuncOp>(tpu::createLowerTosaToTpuPass());
  if (mlir::failed(pm.run(*module))) throw CompileError(fmt::format("{}: {}", model.string(), diagnostics));
  auto fn = module->lookupSymbol<mlir::func::FuncOp>("main");
  std::vector<RefTensor> in;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    std::string name = fn.getArgAttrOfType<mlir::StringAttr>(i, "vtpu.name").str();
    auto t = mlir::cast<mlir::RankedTensorType>(fn.getArgument(i).getType());
    auto it = inputs.find(name);
    if (it == inputs.end()) throw UserError(fmt::format("reference run: no data for input '{}'", name));
    if (int64_t(it->second.size()) != t.getNumElements())
      throw UserError(fmt::format("reference run: input '{}' has {} values, needs {}", name, it->second.size(), t.getNumElements()));
    in.push_back({{t.getShape().begin(), t.getShape().end()}, it->second});
  }
  auto outs = evaluate_reference(fn, in);
  std::map<std::string, std::vector<float>> r;
  for (unsigned i = 0; i < outs.size(); ++i)
    r[fn.getResultAttrOfType<mlir::StringAttr>(i, "vtpu.name").str()] = std::move(outs[i].data);
  return r;
}

}  // namespace vtpu::compiler
