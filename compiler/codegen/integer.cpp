// Integer tensors: int32 rows, casts (docs/compiler.md, "Integer inputs and outputs").
#include "codegen_internal.h"

namespace vtpu::compiler::codegen {

// An activation of int32 rows (4-byte lanes, blocked like any other).
Act Codegen::int32_act(const std::vector<int64_t>& shape, const std::string& what, bool temporary) {
  Act a;
  a.shape = shape;
  a.features = uint64_t(shape.back());
  a.rows = numel(shape) / a.features;
  a.blocks = ceil_div(a.features, R_);
  a.block_bytes = align_up(a.rows * R_ * 4, block_align_);
  a.base = ub_take(a.bytes(), what, temporary || output_high_);
  return a;
}

// The output of a layer: int32 rows for an i32 result, else the activation dtype's.
Act Codegen::out_act(Value v, const std::string& what) { return is_int32(v) ? int32_act(shape_of(v), what) : new_act(shape_of(v), what); }

// Blocked-layout DMA of rows of `esz`-byte elements between HBM (row-major) and UB.
void Codegen::load_rows(const Act& a, uint64_t hbm, uint64_t esz) {
  for (uint64_t b = 0; b < a.blocks; ++b) {
    uint64_t fw = std::min<uint64_t>(R_, a.features - b * R_);
    std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}]", fw * esz, hbm + b * R_ * esz,
                                         a.base + b * a.block_bytes, a.rows, a.features * esz, R_ * esz));
    if (fw < R_) clear(a.base + b * a.block_bytes, a.block_bytes);
    code("  " + emit::dma_load(emit::Desc{d}, hbm_base(hbm), reg(0), emit::flag(1)));
    code("  " + emit::wait(emit::flag(1)));
  }
}

void Codegen::store_rows(const Act& a, uint64_t hbm, uint64_t esz) {
  for (uint64_t b = 0; b < a.blocks; ++b) {
    uint64_t fw = std::min<uint64_t>(R_, a.features - b * R_);
    std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}]", fw * esz, a.base + b * a.block_bytes,
                                         hbm + b * R_ * esz, a.rows, R_ * esz, a.features * esz));
    code("  " + emit::dma_store(emit::Desc{d}, reg(0), hbm_base(hbm), emit::flag(1)));
    code("  " + emit::wait(emit::flag(1)));
  }
}

// int32 -> activation (an integer model input: loaded from HBM, then vec.cvt; INT8
// through fp32 rows scaled to the calibrated scale), or activation -> int32 (rounded
// half to even) for an integer model output.
void Codegen::gen_cast(tpu::CastOp op) {
  std::string layer = op.getLayer().str();
  tag(layer);
  Value in = op.getInput(), out = op.getOutput();
  if (is_int32(in) == is_int32(out)) {
    define(out, act(in));
    uses_[in.getAsOpaquePointer()]++;  // the alias keeps the buffer
    return;
  }
  if (is_int32(in)) {
    Act src;
    bool loaded = false;
    if (auto it = int_hbm_.find(in.getAsOpaquePointer()); it != int_hbm_.end()) {
      src = int32_act(shape_of(in), fmt::format("the int32 rows of '{}'", layer), true);
      load_rows(src, it->second, 4);
      loaded = true;
    } else {
      src = act(in);
    }
    Act y = new_act(shape_of(out), fmt::format("the output of '{}'", layer));
    std::string p = q8_ ? new_param(fmt::format("scale=[{}] bias=[0]", 1.0 / double(scale(out)))) : "";
    for (uint64_t b = 0; b < y.blocks; ++b) {
      code(bundle({emit::li(reg(1), int64_t(src.base + b * src.block_bytes)), emit::li(reg(2), int64_t(y.base + b * y.block_bytes))}));
      if (!q8_) {
        vec_wait(emit::vec_cvt(ub_reg(2), ub_reg(1), y.rows, isa::Dtype::Int32, isa::Dtype::Bf16));
        continue;
      }
      if (!loaded) throw InternalError("an int32 activation converted in place");
      vec_wait(emit::vec_cvt(ub_reg(1), ub_reg(1), y.rows, isa::Dtype::Int32, isa::Dtype::Fp32));
      vec_wait(emit::vec_affine(ub_reg(1), ub_reg(1), y.rows, isa::Dtype::Fp32, emit::Param{p}));
      vec_wait(emit::vec_cvt(ub_reg(2), ub_reg(1), y.rows, isa::Dtype::Fp32, isa::Dtype::Int8));
    }
    if (loaded) ub_.release(src.base);
    add_bound(layer, 0, numel(shape_of(in)) * 4);
    define(out, y);
    return;
  }
  const Act& x = act(in);
  Act y = int32_act(shape_of(out), fmt::format("the output of '{}'", layer));
  std::string p = q8_ ? new_param(fmt::format("scale=[{}] bias=[0]", double(scale(in)))) : "";
  for (uint64_t b = 0; b < y.blocks; ++b) {
    code(bundle({emit::li(reg(1), int64_t(x.base + b * x.block_bytes)), emit::li(reg(2), int64_t(y.base + b * y.block_bytes))}));
    if (!q8_) {
      vec_wait(emit::vec_cvt(ub_reg(2), ub_reg(1), y.rows, isa::Dtype::Bf16, isa::Dtype::Int32));
      continue;
    }
    vec_wait(emit::vec_cvt(ub_reg(2), ub_reg(1), y.rows, isa::Dtype::Int8, isa::Dtype::Fp32));
    vec_wait(emit::vec_affine(ub_reg(2), ub_reg(2), y.rows, isa::Dtype::Fp32, emit::Param{p}));
    vec_wait(emit::vec_cvt(ub_reg(2), ub_reg(2), y.rows, isa::Dtype::Fp32, isa::Dtype::Int32));
  }
  add_bound(layer, 0, 0);
  define(out, y);
}

}  // namespace vtpu::compiler::codegen
