// vtpu-translate: tpu-dialect MLIR -> vtpu assembly (--tpu-to-asm), the code generator run
// on its own for lit + FileCheck tests (compiler/tests/lit/codegen). The input's func @main
// names its arguments and results with vtpu.name, as the importer does.
#include "codegen.h"
#include "llvm/Support/CommandLine.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "dialect/tpu_dialect.h"
#include "vtpu/config/config.h"

static llvm::cl::opt<std::string> config_opt("config", llvm::cl::desc("preset name or YAML file (default tpu-v4-core)"),
                                             llvm::cl::init("tpu-v4-core"));
static llvm::cl::opt<std::string> dtype_opt("dtype", llvm::cl::desc("bf16 or int8 (default bf16)"), llvm::cl::init("bf16"));
static llvm::cl::opt<double> scale_opt("int8-scale",
                                       llvm::cl::desc("INT8: the scale of every activation, in place of calibration (default 1/32)"),
                                       llvm::cl::init(1.0 / 32));

int main(int argc, char** argv) {
  mlir::TranslateFromMLIRRegistration to_asm(
      "tpu-to-asm", "tpu dialect to vtpu assembly (compiler/codegen)",
      [](mlir::ModuleOp module, llvm::raw_ostream& os) -> mlir::LogicalResult {
        try {
          if (dtype_opt != "bf16" && dtype_opt != "int8")
            return module.emitError() << "--dtype must be bf16 or int8, not '" << dtype_opt << "'";
          vtpu::compiler::CompileOptions options;
          options.precision = dtype_opt == "int8" ? vtpu::compiler::Precision::Int8 : vtpu::compiler::Precision::Bf16;
          std::map<const void*, float> scales;
          if (dtype_opt == "int8")
            module.walk([&](mlir::Operation* op) {
              for (mlir::Value v : op->getResults()) scales[v.getAsOpaquePointer()] = float(scale_opt);
              for (mlir::Region& r : op->getRegions())
                for (mlir::Block& b : r)
                  for (mlir::Value v : b.getArguments()) scales[v.getAsOpaquePointer()] = float(scale_opt);
            });
          auto result = vtpu::compiler::generate_program(module, vtpu::config::resolve(config_opt), options, scales);
          os << result.assembly;
          return mlir::success();
        } catch (const std::exception& e) {
          return module.emitError() << e.what();
        }
      },
      [](mlir::DialectRegistry& registry) {
        registry.insert<mlir::func::FuncDialect, mlir::tosa::TosaDialect, vtpu::tpu::TpuDialect>();
      });
  return mlir::failed(mlir::mlirTranslateMain(argc, argv, "vtpu translator\n")) ? 1 : 0;
}
