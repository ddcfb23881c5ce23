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
  const isa::Dtype f32 = isa::Dtype::Fp32, i32 = isa::Dtype::Int32;
  for (uint64_t b = 0; b < t.blocks; ++b)
    in_vector_pieces(t.rows, [&](uint64_t r0, uint64_t n) {
      code("  " + emit::li(reg(1), int64_t(t.base + b * t.block_bytes + r0 * R_ * 4)));
      vec_wait(emit::vec_affine(ub_reg(1), ub_reg(1), n, f32, emit::Param{to_int}));
      vec_wait(emit::vec_clamp(ub_reg(1), ub_reg(1), n, f32, emit::Param{range}));
      vec_wait(emit::vec_cvt(ub_reg(1), ub_reg(1), n, f32, i32));
      vec_wait(emit::vec_cvt(ub_reg(1), ub_reg(1), n, i32, f32));
      vec_wait(emit::vec_affine(ub_reg(1), ub_reg(1), n, f32, emit::Param{back}));
    });
  from_fp32_twin(t, y);
  add_bound(layer, 0, 0);
  define(op.getOutput(), y);
}

}  // namespace vtpu::compiler::codegen
