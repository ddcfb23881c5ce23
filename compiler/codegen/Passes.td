// The code generator's passes (compiler/codegen; the frontend's are in compiler/transforms).
include "mlir/Pass/PassBase.td"

def PlanCodegen : Pass<"tpu-plan-codegen", "mlir::ModuleOp"> {
  let summary = "Record code generation's decisions that look past one op as attributes";
  let description = [{
    Marks the matmuls that run as one stream of blocks (tpu.stream) and the ops that run in
    another op's epilogues (tpu.id and tpu.epilogue on the op that does them, tpu.fused_into
    and tpu.role on them, a convolution's residual add among them; tpu.slot for a chain
    link's buffer), the convolutions whose matmul rows take two kernel rows
    (tpu.tap_pairs) and those that add their bias through bias lanes (tpu.bias_lanes), for
    the chip of `config` in `dtype` (compiler/codegen/plan.h). Code generation runs it first; vtpu-opt runs it
    alone, so lit tests check what it decides.
  }];
  let options = [
    Option<"config", "config", "std::string", /*default=*/"\"tpu-v4-core\"", "preset name or YAML file">,
    Option<"dtype", "dtype", "std::string", /*default=*/"\"bf16\"", "bf16 or int8">,
  ];
}
