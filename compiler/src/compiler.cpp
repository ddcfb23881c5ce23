// The compiler pipeline: import, TOSA-level passes, lowering to tpu, code generation.
#include <fmt/format.h>

#include "import.h"
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
std::string print(mlir::ModuleOp m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os);
  return s;
}
}  // namespace

CompileResult compile_onnx(const std::filesystem::path& model, const config::Config& cfg, const CompileOptions& options) {
  if (!options.emit_mlir_stage.empty() && options.emit_mlir_stage != "tosa" && options.emit_mlir_stage != "tpu")
    throw UserError(fmt::format("--emit-mlir '{}': the stages are tosa and tpu", options.emit_mlir_stage));
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

  CompileResult r = generate_program(*module, cfg, options);
  r.mlir = std::move(mlir_text);
  return r;
}

}  // namespace vtpu::compiler
