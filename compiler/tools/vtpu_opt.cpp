// vtpu-opt: mlir-opt with the tpu dialect and the compiler's passes, for lit tests.
#include "dialect/tpu_dialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "pipeline/pipeline.h"
#include "plan.h"
#include "transforms/passes.h"

int main(int argc, char** argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::func::FuncDialect, mlir::tosa::TosaDialect, vtpu::tpu::TpuDialect>();
  vtpu::tpu::registerTpuPasses();
  mlir::PassPipelineRegistration<>("tpu-pipeline", "The compiler's passes from the importer's TOSA to the tpu dialect",
                                   [](mlir::OpPassManager& pm) { vtpu::compiler::build_tosa_to_tpu_pipeline(pm); });
  vtpu::compiler::codegen::register_codegen_passes();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "vtpu optimizer driver\n", registry));
}
