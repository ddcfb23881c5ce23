// vtpu-opt: mlir-opt with the tpu dialect and the compiler's passes, for lit tests.
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "plan.h"
#include "tpu_dialect.h"

int main(int argc, char** argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::func::FuncDialect, mlir::tosa::TosaDialect, vtpu::tpu::TpuDialect>();
  vtpu::tpu::registerPasses();
  vtpu::compiler::codegen::register_codegen_passes();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "vtpu optimizer driver\n", registry));
}
