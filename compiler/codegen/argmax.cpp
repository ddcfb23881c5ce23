// Index searches: ArgMax/ArgMin and MaxPool's Indices (docs/compiler.md, "Code generation").
#include "codegen_internal.h"

namespace vtpu::compiler::codegen {

// MaxPool's Indices in fp32 rows (exact integers below 2^24). Tap t = (i, j) of every
// window is gathered from the input by vec.maxpool with a one-row window (strided rows),
// its out-of-image positions left at -3e38. Pass 1: M = the maximum over taps. Pass 2:
// best = min over taps of min((M - tap) * 2^200, 1) * 2^30 + off_t, so a tap equal to the
// maximum offers its offset off_t = (i - pad_top) * W + (j - pad_left) and any other tap
// at least 2^30 - 2^24; the smallest offset among equal maxima wins. Finally the index is
// best + n*C*H*W + c*H*W + oh*sh*W + ow*sw: the row part loaded per output row into lane 0
// and spread over the lanes by vec.rsum, the lane part c*H*W a per-lane bias.
// storage_order 1 swaps the roles of H and W in the offsets.
// The offer both index searches make (gen_argmax, gen_pool_argmax), in fp32 rows: v =
// min((M - v) * 2^200, 1) * 2^30 + bias, so where v equals the maximum M it offers the
// bias (an index: one value, or one per lane) and elsewhere at least 2^30 - 2^24. v and M
// are unified-buffer addresses ("rN+0", the operands ub[rN+0]); M - v is never negative.
void Codegen::index_offer(const std::string& v, const std::string& m, uint64_t rows, const std::string& bias) {
  const emit::Mem V = ub_ref(v), Mx = ub_ref(m);
  const isa::Dtype f32 = isa::Dtype::Fp32;
  std::string huge = new_param(fmt::format("scale=[{}]", std::ldexp(1.0, 100)));
  vec_wait(emit::vec_sub(V, Mx, V, rows, f32));
  vec_wait(emit::vec_affine(V, V, rows, f32, emit::Param{huge}));  // twice: 2^200
  vec_wait(emit::vec_affine(V, V, rows, f32, emit::Param{huge}));
  vec_wait(emit::vec_clamp(V, V, rows, f32, emit::Param{clamp_param(0.0, 1.0)}));
  vec_wait(emit::vec_affine(V, V, rows, f32,
                            emit::Param{new_param(fmt::format("scale=[{}] bias=[{}]", std::ldexp(1.0, 30), bias))}));
}

// ArgMax/ArgMin of each row, in fp32 rows: v = x (or -x for a minimum), padding lanes
// -inf; M = the row maximum (vec.rmax per block, then the blocks' maximum); each lane
// offers min((M - v) * 2^200, 1) * 2^30 + its index (K - 1 - index for the last of equal
// values), so only lanes equal to the maximum offer their index, and the row minimum of
// the offers (-rmax of their negation) is the answer. Row r's index is stored to HBM as
// element r and loaded back as the output's int32 rows.
void Codegen::gen_argmax(tpu::ArgMaxOp op) {
  std::string layer = op.getLayer().str();
  tag(layer);
  const Act& x = act(op.getInput());
  uint64_t K = x.features, rows = x.rows, row32 = R_ * 4;
  if (K >= (uint64_t(1) << 24)) throw CompileError(fmt::format("node '{}': ArgMax over {} values exceeds 2^24", layer, K));
  Act v = fp32_twin(x, layer, "values", true, q8_ ? std::optional<double>(scale(op.getInput())) : std::nullopt);
  uint64_t span = align_up(rows * row32, block_align_);
  uint64_t work = ub_take(3 * span + x.blocks * row32, fmt::format("the fp32 work rows of '{}'", layer));
  uint64_t mx = work, tmp = work + span, best = work + 2 * span, masks = work + 3 * span;
  std::vector<uint8_t> mask(x.blocks * row32);
  for (uint64_t b = 0; b < x.blocks; ++b)
    for (uint64_t l = 0; l < R_; ++l) {
      float f = b * R_ + l < K ? 0.0f : -std::numeric_limits<float>::infinity();
      std::memcpy(&mask[b * row32 + l * 4], &f, 4);
    }
  load_constant(std::move(mask), masks);
  std::string neg = new_param("scale=[-1]");
  const isa::Dtype f32 = isa::Dtype::Fp32;
  auto blk = [&](uint64_t b) { return v.base + b * v.block_bytes; };
  for (uint64_t b = 0; b < x.blocks; ++b) {
    code(bundle({emit::li(reg(1), int64_t(blk(b))), emit::li(reg(2), int64_t(masks + b * row32))}));
    if (op.getMin()) vec_wait(emit::vec_affine(ub_reg(1), ub_reg(1), rows, f32, emit::Param{neg}));
    vec_wait(emit::vec_add(ub_reg(1), ub_reg(1), ub_reg(2), rows, f32, std::optional<bool>(true)));
    code(bundle({emit::li(reg(3), int64_t(b == 0 ? mx : tmp)), emit::li(reg(4), int64_t(mx))}));
    vec_wait(emit::vec_rmax(ub_reg(3), ub_reg(1), rows, f32));
    if (b) vec_wait(emit::vec_max(ub_reg(4), ub_reg(4), ub_reg(3), rows, f32));
  }
  for (uint64_t b = 0; b < x.blocks; ++b) {
    std::vector<double> lane(R_);
    for (uint64_t l = 0; l < R_; ++l) {
      double idx = double(std::min<uint64_t>(b * R_ + l, K - 1));
      lane[l] = op.getLast() ? double(K - 1) - idx : idx;
    }
    code(bundle({emit::li(reg(1), int64_t(blk(b))), emit::li(reg(4), int64_t(mx))}));
    code(bundle({emit::li(reg(3), int64_t(b == 0 ? best : tmp)), emit::li(reg(5), int64_t(best))}));
    index_offer("r1+0", "r4+0", rows, fmt::format("{}", fmt::join(lane, ", ")));
    vec_wait(emit::vec_affine(ub_reg(1), ub_reg(1), rows, f32, emit::Param{neg}));
    vec_wait(emit::vec_rmax(ub_reg(3), ub_reg(1), rows, f32));  // -(row minimum)
    if (b) vec_wait(emit::vec_max(ub_reg(5), ub_reg(5), ub_reg(3), rows, f32));
  }
  // best = -(index), or -(K - 1 - index) for the last of equal values.
  std::string back = op.getLast() ? new_param(fmt::format("scale=[1] bias=[{}]", double(K - 1))) : neg;
  code("  " + emit::li(reg(5), int64_t(best)));
  vec_wait(emit::vec_affine(ub_reg(5), ub_reg(5), rows, f32, emit::Param{back}));
  vec_wait(emit::vec_cvt(ub_reg(5), ub_reg(5), rows, f32, isa::Dtype::Int32));
  uint64_t hbm = hbm_alloc(rows * 4);
  std::string d = new_desc(fmt::format("bytes=4 src_off={} dst_off={} dim=[{}, {}, 4]", best, hbm, rows, row32));
  code("  " + emit::dma_store(emit::Desc{d}, reg(0), reg(0), emit::flag(1)));
  code("  " + emit::wait(emit::flag(1)));
  auto ys = shape_of(op.getOutput());
  if (ys.empty()) ys = {1};  // a scalar: one row of one
  Act y = int32_act(ys, fmt::format("the output of '{}'", layer));
  load_rows(y, hbm, 4);
  ub_.release(work);
  ub_.release(v.base);
  add_bound(layer, 0, 0);
  define(op.getOutput(), y);
}

void Codegen::gen_pool_argmax(tpu::PoolArgmaxOp op) {
  std::string layer = op.getLayer().str();
  tag(layer);
  const Act& x = act(op.getInput());
  auto zs = shape_of(op.getOutput());
  int64_t N = x.shape[0], H = x.shape[1], W = x.shape[2], C = x.shape[3], OH = zs[1], OW = zs[2];
  auto k = op.getKernel(), st = op.getStride(), pad = op.getPad();
  bool column_major = op.getStorageOrder() == 1;
  Act z = int32_act(zs, fmt::format("the output of '{}'", layer));
  Act X = fp32_twin(x, layer, "input", true, q8_ ? std::optional<double>(scale(op.getInput())) : std::nullopt);
  Act M = fp32_twin(z, layer, "maximum", false), T = fp32_twin(z, layer, "tap", false), B = fp32_twin(z, layer, "best", false);
  uint64_t row32 = R_ * 4, rows = z.rows;
  std::string fill_low = new_param("scale=[0] bias=[-3e38]"), fill_high = new_param("scale=[0] bias=[3e38]"),
              gather = new_param(fmt::format("window=[0] pool_stride={}", uint64_t(st[1]) * row32));
  const isa::Dtype f32 = isa::Dtype::Fp32;
  auto at = [&](const Act& a, uint64_t b, uint64_t row) { return a.base + b * a.block_bytes + row * row32; };
  // T = tap (i, j) of every window, block b.
  auto gather_tap = [&](uint64_t b, int64_t i, int64_t j) {
    const emit::Mem t = ub_ref(addr_ref(at(T, b, 0), 1));
    vec_wait(emit::vec_affine(t, t, rows, f32, emit::Param{fill_low}));
    int64_t lo = std::max<int64_t>(0, (pad[2] - j + st[1] - 1) / st[1]);
    int64_t hi = std::min<int64_t>(OW, (W - 1 + pad[2] - j) / st[1] + 1);
    if (W - 1 + pad[2] - j < 0 || lo >= hi) return;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t oh = 0; oh < OH; ++oh) {
        int64_t h = oh * st[0] + i - pad[0];
        if (h < 0 || h >= H) continue;
        uint64_t src = at(X, b, uint64_t((n * H + h) * W + lo * st[1] + j - pad[2])), dst = at(T, b, uint64_t((n * OH + oh) * OW + lo));
        code(bundle({emit::li(reg(1), int64_t(src)), emit::li(reg(2), int64_t(dst))}));
        vec_wait(emit::vec_maxpool(ub_reg(2), ub_reg(1), uint64_t(hi - lo), f32, emit::Param{gather}));
      }
  };
  for (uint64_t b = 0; b < z.blocks; ++b) {
    code(bundle({emit::li(reg(3), int64_t(at(M, b, 0))), emit::li(reg(4), int64_t(at(T, b, 0)))}));
    code("  " + emit::li(reg(5), int64_t(at(B, b, 0))));
    vec_wait(emit::vec_affine(ub_reg(3), ub_reg(3), rows, f32, emit::Param{fill_low}));
    for (int64_t i = 0; i < k[0]; ++i)
      for (int64_t j = 0; j < k[1]; ++j) {
        gather_tap(b, i, j);
        vec_wait(emit::vec_max(ub_reg(3), ub_reg(3), ub_reg(4), rows, f32));
      }
    vec_wait(emit::vec_affine(ub_reg(5), ub_reg(5), rows, f32, emit::Param{fill_high}));
    for (int64_t i = 0; i < k[0]; ++i)
      for (int64_t j = 0; j < k[1]; ++j) {
        gather_tap(b, i, j);
        int64_t off = column_major ? (j - pad[2]) * H + (i - pad[0]) : (i - pad[0]) * W + (j - pad[2]);
        index_offer("r4+0", "r3+0", rows, std::to_string(off));
        vec_wait(emit::vec_min(ub_reg(5), ub_reg(5), ub_reg(4), rows, f32));
      }
  }
  // The row part of each output row's index, spread over the lanes (into T, block 0).
  std::vector<uint8_t> row_part(rows * 4);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        float v = float(n * C * H * W + (column_major ? ow * st[1] * H + oh * st[0] : oh * st[0] * W + ow * st[1]));
        std::memcpy(&row_part[size_t((n * OH + oh) * OW + ow) * 4], &v, 4);
      }
  clear(T.base, T.block_bytes);
  std::string d = new_desc(fmt::format("bytes=4 src_off={} dst_off={} dim=[{}, 4, {}]", hbm_const(std::move(row_part)), T.base, rows, row32));
  code("  " + emit::dma_load(emit::Desc{d}, reg(0), reg(0), emit::flag(1)));
  code("  " + emit::wait(emit::flag(1)));
  code("  " + emit::li(reg(4), int64_t(T.base)));
  vec_wait(emit::vec_rsum(ub_reg(4), ub_reg(4), rows, f32, f32));
  for (uint64_t b = 0; b < z.blocks; ++b) {
    std::vector<double> lane(R_);
    for (uint64_t l = 0; l < R_; ++l) lane[l] = double(std::min<uint64_t>(b * R_ + l, uint64_t(C - 1)) * uint64_t(H * W));
    code(bundle({emit::li(reg(5), int64_t(at(B, b, 0))), emit::li(reg(6), int64_t(z.base + b * z.block_bytes))}));
    vec_wait(emit::vec_add(ub_reg(5), ub_reg(5), ub_reg(4), rows, f32));
    vec_wait(emit::vec_affine(ub_reg(5), ub_reg(5), rows, f32,
                              emit::Param{new_param(fmt::format("scale=[1] bias=[{}]", fmt::join(lane, ", ")))}));
    vec_wait(emit::vec_cvt(ub_reg(6), ub_reg(5), rows, f32, isa::Dtype::Int32));
  }
  for (const Act* t : {&X, &M, &T, &B}) ub_.release(t->base);
  add_bound(layer, 0, 0);
  define(op.getOutput(), z);
}

}  // namespace vtpu::compiler::codegen
