// ModelCompiler (vtpu/compiler/compiler.h): the front half of compile_onnx once, code
// generation once per config. Code generation records its plan on the IR it is given
// (plan.cpp), so each config gets a copy of the lowered module, its INT8 scales carried over
// in value_order as between any two compiles of one model.

#include "import.h"
#include "pipeline/pipeline.h"
#include "target_limits.h"

namespace vtpu::compiler {

struct ModelCompiler::State {
  State(const std::filesystem::path& m, const CompileOptions& o) : model(m), options(o), front(m, o) {}
  std::filesystem::path model;
  CompileOptions options;
  Frontend front;
  std::string mlir;            // the IR after options.emit_mlir_stage
  bool calibrated = false;     // INT8: `ordered` holds the model's scales
  std::vector<float> ordered;  // in value_order of the lowered module
};

ModelCompiler::ModelCompiler(const std::filesystem::path& model, const CompileOptions& options) {
  check_emit_stage(options);
  state_ = std::make_unique<State>(model, options);
  state_->options.progress = nullptr;
  State& s = *state_;
  s.front.import();
  if (options.emit_mlir_stage == "tosa") s.mlir = print_ir(s.front.module());
  s.front.lower();
  if (options.emit_mlir_stage == "tpu") s.mlir = print_ir(s.front.module());
}

ModelCompiler::~ModelCompiler() = default;

CompileResult ModelCompiler::compile(const config::Config& cfg) {
  State& s = *state_;
  check_config_for_compiler(cfg);
  const bool int8 = s.options.precision == Precision::Int8;
  if (int8) {
    check_inputs_fit(s.front.module(), cfg, s.options, chunkable_batch(s.front.main()));
    if (!s.calibrated) {
      s.ordered = scales_in_order(s.front.main(), int8_scales(s.front, s.model, s.options));
      s.calibrated = true;
    }
  }
  mlir::OwningOpRef<mlir::ModuleOp> copy = s.front.module().clone();
  std::map<const void*, float> scales;
  if (int8) scales = given_scales(copy->lookupSymbol<mlir::func::FuncOp>("main"), s.ordered, s.model);
  CompileResult r = generate_or_split(*copy, s.model, cfg, s.options, s.options, scales, s.ordered);
  r.mlir = s.mlir;
  r.calibration_scales = s.ordered;
  return r;
}

}  // namespace vtpu::compiler
