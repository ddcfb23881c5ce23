// MXU and vector-unit arithmetic over whole operations, on the bit-exact kernels of
// numerics/. Timing lives in machine.cpp; this file only moves and computes values.
#include "compute.h"

#include <fmt/format.h>

#include <cstring>

#include "machine.h"
#include "vtpu/numerics/convert.h"
#include "vtpu/numerics/float.h"
#include "vtpu/numerics/mxu.h"
#include "vtpu/numerics/rescale.h"
#include "vtpu/numerics/transcendental.h"
#include "vtpu/numerics/vector.h"

namespace vtpu::sim::detail {

namespace nm = vtpu::numerics;
using isa::Dtype;

namespace {

nm::NumType nt(Dtype d) { return nm::NumType(uint8_t(d)); }

std::optional<nm::Transcendental> transcendental_of(std::string_view m) {
  if (m == "vec.exp") return nm::Transcendental::Exp;
  if (m == "vec.tanh") return nm::Transcendental::Tanh;
  if (m == "vec.sigmoid") return nm::Transcendental::Sigmoid;
  if (m == "vec.gelu") return nm::Transcendental::Gelu;
  if (m == "vec.erf") return nm::Transcendental::Erf;
  if (m == "vec.recip") return nm::Transcendental::Recip;
  if (m == "vec.rsqrt") return nm::Transcendental::Rsqrt;
  if (m == "vec.log") return nm::Transcendental::Log;
  return std::nullopt;
}

std::optional<nm::BinaryOp> binary_of(std::string_view m) {
  if (m == "vec.add") return nm::BinaryOp::Add;
  if (m == "vec.sub") return nm::BinaryOp::Sub;
  if (m == "vec.mul") return nm::BinaryOp::Mul;
  if (m == "vec.max") return nm::BinaryOp::Max;
  if (m == "vec.min") return nm::BinaryOp::Min;
  return std::nullopt;
}

nm::RescaleParams rescale_params(const isa::VectorParams& p) {
  nm::RescaleParams r;
  r.multiplier = p.multiplier;
  r.shift = p.shift;
  r.input_zp = p.input_zp;
  r.output_zp = p.output_zp;
  r.double_round = p.double_round;
  r.min = p.min;
  r.max = p.max;
  return r;
}

bool lane_count_ok(size_t n, uint32_t W) { return n == 0 || n == 1 || n == W; }

}  // namespace

void matmul_compute(Dtype dtype, const uint8_t* a, size_t lda, const Tile& w, uint32_t* acc, size_t ldacc, size_t B,
                    uint32_t C, bool accumulate) {
  if (dtype == Dtype::Int8) {
    nm::matmul_tile_int8(reinterpret_cast<const int8_t*>(a), lda, reinterpret_cast<const int8_t*>(w.data.data()), w.n,
                         reinterpret_cast<int32_t*>(acc), ldacc, B, w.k, w.n, accumulate);
    if (!accumulate)
      for (size_t b = 0; b < B; ++b) std::fill(acc + b * ldacc + w.n, acc + b * ldacc + C, 0u);
    return;
  }
  nm::matmul_tile_bf16(reinterpret_cast<const uint16_t*>(a), lda, reinterpret_cast<const uint16_t*>(w.data.data()),
                       w.n, reinterpret_cast<float*>(acc), ldacc, B, w.k, w.n, accumulate);
  // Columns past the tile get a +0 partial sum: written as +0, or added under the policy.
  for (size_t b = 0; b < B; ++b)
    for (size_t n = w.n; n < C; ++n) {
      uint32_t& x = acc[b * ldacc + n];
      x = accumulate ? nm::sf::add(x, 0u) : 0u;
    }
}

std::string vector_check(const isa::OpDef& def, Dtype dt, Dtype odt, const isa::VectorParams* param, uint32_t W) {
  std::string_view m = def.mnemonic;
  auto name = [](Dtype d) { return isa::dtype_name(d); };
  if (transcendental_of(m) && dt != Dtype::Fp32 && dt != Dtype::Bf16)
    return fmt::format("{} computes on fp32 or bf16, not dt={}; convert with vec.cvt first", m, name(dt));
  if (m == "vec.addrescale" && dt != Dtype::Int32)
    return fmt::format("vec.addrescale adds int32 rows, not dt={}; rescale other types with vec.rescale", name(dt));
  if (m == "vec.rescale" || m == "vec.addrescale") {
    try {
      nm::validate_rescale(rescale_params(*param), nt(dt), nt(odt), W,
                           fmt::format("vec.rescale with .vparam '{}'", param->name).c_str());
    } catch (const UserError& e) {
      return e.what();
    }
    return {};
  }
  if (m == "vec.affine" && (!lane_count_ok(param->scale.size(), W) || !lane_count_ok(param->bias.size(), W)))
    return fmt::format(".vparam '{}' gives {} scale and {} bias values; vec.affine needs 1 or {} (one per lane)",
                       param->name, param->scale.size(), param->bias.size(), W);
  if (def.op_class == isa::OpClass::VecPool) {
    if (param->window.empty())
      return fmt::format(".vparam '{}' has an empty window; {} needs window=[...] byte offsets", param->name, m);
    if (m == "vec.avgpool" && !lane_count_ok(param->scale.size(), W))
      return fmt::format(".vparam '{}' gives {} scale values; vec.avgpool needs 1 or {}", param->name,
                         param->scale.size(), W);
  }
  if (m == "vec.rsum" && !nm::is_float_type(nt(dt)) && dt != Dtype::Int32 && dt != Dtype::Int8 &&
      dt != Dtype::Int16 && dt != Dtype::Uint8)
    return fmt::format("vec.rsum cannot sum {}", name(dt));
  return {};
}

void vector_compute(const isa::OpDef& def, const VecOperand& dst, const VecOperand& a, const VecOperand& b,
                    bool bcast, size_t rows, uint32_t W, const isa::VectorParams* param) {
  std::string_view m = def.mnemonic;
  nm::NumType dt = nt(a.dtype), odt = nt(dst.dtype);
  std::vector<uint8_t> sum(m == "vec.addrescale" ? size_t(W) * 4 : 0);  // vec.addrescale's a + b, int32
  for (size_t i = 0; i < rows; ++i) {
    const uint8_t* pa = a.ptr + i * a.row_bytes;
    const uint8_t* pb = b.ptr ? b.ptr + (bcast ? 0 : i * b.row_bytes) : nullptr;
    uint8_t* pd = dst.ptr + i * dst.row_bytes;
    if (auto op = binary_of(m)) nm::binary_row(*op, dt, pa, pb, pd, W);
    else if (auto fn = transcendental_of(m)) nm::transcendental_row(*fn, dt, pa, pd, W);
    else if (m == "vec.copy") nm::copy_row(dt, pa, pd, W);
    else if (m == "vec.relu") nm::relu_row(dt, pa, pd, W);
    else if (m == "vec.clamp") nm::clamp_row(dt, pa, pd, W, param->min, param->max);
    else if (m == "vec.affine") nm::affine_row(dt, pa, pd, W, param->scale, param->bias);
    else if (m == "vec.rescale") nm::rescale_row(dt, pa, odt, pd, W, rescale_params(*param));
    else if (m == "vec.addrescale") {
      nm::binary_row(nm::BinaryOp::Add, dt, pa, pb, sum.data(), W);
      nm::rescale_row(dt, sum.data(), odt, pd, W, rescale_params(*param));
    }
    else if (m == "vec.cvt") nm::convert_row(dt, pa, odt, pd, W);
    else if (m == "vec.rsum") nm::rsum_row(dt, pa, odt, pd, W);
    else if (m == "vec.rmax") nm::rmax_row(dt, pa, pd, W);
    else if (m == "vec.maxpool" || m == "vec.avgpool") {
      size_t step = param->pool_stride ? size_t(param->pool_stride) : a.row_bytes;
      std::vector<const void*> win;
      win.reserve(param->window.size());
      for (int32_t off : param->window) win.push_back(a.ptr + i * step + off);
      if (m == "vec.maxpool") nm::maxpool_row(dt, win, pd, W);
      else nm::avgpool_row(dt, win, pd, W, param->scale);
    } else {
      throw InternalError(fmt::format("vector operation {} has no arithmetic", m));
    }
  }
}

}  // namespace vtpu::sim::detail
