// Fake quantization (QuantizeLinear kept dequantized) (docs/compiler.md, "Code generation").
#include "codegen_internal.h"

namespace vtpu::compiler::codegen {

// QuantizeLinear kept dequantized, in fp32 rows: x / s, clamp to the integer range, round
// half to even (through int32), times s (INT8: straight into the output's scale; when
// that is s, the int8 codes are the model's integers).
void Codegen::gen_fake_quant(tpu::FakeQuantOp op) {
  std::string layer = op.getLayer().str();
  tag(layer);
  const Act& x = act(op.getInput());
  Act y = new_act(shape_of(op.getOutput()), fmt::format("the output of '{}'", layer));
  double s = op.getScale().convertToDouble();
  std::optional<double> in_scale;
  if (q8_) in_scale = scale(op.getInput());
  Act t = fp32_twin(x, layer, "quantization rows", true, in_scale);
  std::string to_int = new_param(fmt::format("scale=[{}]", 1.0 / s));
  std::string range = new_param(fmt::format("min={} max={}", op.getLo().convertToDouble(), op.getHi().convertToDouble()));
  std::string back = new_param(fmt::format("scale=[{}]", q8_ ? s / double(scale(op.getOutput())) : s));
  for (uint64_t b = 0; b < t.blocks; ++b) {
    code(fmt::format("  li r1, {}", t.base + b * t.block_bytes));
    vec_wait(fmt::format("vec.affine dst=ub[r1+0] a=ub[r1+0] rows={} dt=fp32 param={}", t.rows, to_int));
    vec_wait(fmt::format("vec.clamp dst=ub[r1+0] a=ub[r1+0] rows={} dt=fp32 param={}", t.rows, range));
    vec_wait(fmt::format("vec.cvt dst=ub[r1+0] a=ub[r1+0] rows={} dt=fp32 odt=int32", t.rows));
    vec_wait(fmt::format("vec.cvt dst=ub[r1+0] a=ub[r1+0] rows={} dt=int32 odt=fp32", t.rows));
    vec_wait(fmt::format("vec.affine dst=ub[r1+0] a=ub[r1+0] rows={} dt=fp32 param={}", t.rows, back));
  }
  from_fp32_twin(t, y);
  add_bound(layer, 0, 0);
  define(op.getOutput(), y);
}

}  // namespace vtpu::compiler::codegen
