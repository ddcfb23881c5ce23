// Two output pixels per matmul row (docs/compiler.md, "Code generation").
#include "codegen_internal.h"

namespace vtpu::compiler::codegen {

// Whether every reader of v (through a pool) reads at most its channels' lanes: a
// convolution, whose weight tiles have no rows past its input channels.
bool padding_lanes_unread(Value v) {
  if (v.use_empty()) return false;
  for (mlir::Operation* u : v.getUsers()) {
    if (auto p = mlir::dyn_cast<tpu::PoolOp>(u); p && v.hasOneUse()) return padding_lanes_unread(p.getOutput());
    auto c = mlir::dyn_cast<tpu::Conv2DOp>(u);
    if (!c || c.getInput() != v) return false;
  }
  return true;
}

// Bias rows and epilogue parameters of two-pixel rows: channel c of the first pixel in
// lane c, of the second in lane C/2 + c.
std::pair<uint64_t, std::string> Codegen::two_pixel_params(const std::vector<float>& bias, const std::vector<double>& acc_scale,
                                                  uint64_t CO, tpu::Conv2DOp op) {
  uint64_t C2 = C_ / 2;
  std::vector<float> bias2(C_, 0.0f);
  std::vector<double> acc2(q8_ ? C_ : 0, 0.0);
  for (uint64_t c = 0; c < C2; ++c) {
    uint64_t ch = std::min(c, CO - 1);  // unused lanes: any valid scale
    if (c < CO) bias2[c] = bias2[C2 + c] = bias[c];
    if (q8_) acc2[c] = acc2[C2 + c] = acc_scale[ch];
  }
  return {bias_rows(bias2, acc2), epilogue_params(C_, acc2, q8_ ? scale(op.getOutput()) : 1.0, op.getClampMin().convertToDouble(),
                                                  op.getClampMax().convertToDouble())[0]};
}

// A 3x3 "same" convolution on exactly R/2 input channels to at most C/2 output channels
// (ResNet-50's 64-channel layers on a 128x128 array) computes two output pixels per
// matmul row: a copy of the input holds, in entry e of each image row, pixel e - 1 in
// lanes [0, R/2) and pixel e in lanes [R/2, R) (zeros past the row's ends), so the row
// read at entry 2i + t covers input pixels 2i + t - 1 and 2i + t; a tile per (kernel row,
// t in {0, 2}) has output pixel 2i's weights in columns [0, C/2) and pixel 2i + 1's in
// [C/2, C). Each kernel row then takes 2 matmuls of W/2 rows instead of 3 of W (or the
// tap stacks' 2 of W with two rows a stack): K and N are both full. The epilogue writes these two-pixel rows,
// and two copies spread them into the output's rows (their padding lanes hold the other
// pixel, which the consumers, convolutions reading R/2 channels, never read).
bool wide_conv(tpu::Conv2DOp op, const config::Config& cfg, uint64_t esz) {
  if (uint64_t(shape_of(op.getOutput())[2]) > acc_region(cfg)) return false;  // a row wider than a region: by taps
  auto xs = shape_of(op.getInput()), ws = shape_of(op.getWeight());
  uint64_t R = cfg.core.mxu.rows, C = cfg.core.mxu.cols;
  if (R != C || R % 2 || is_int32(op.getOutput()) || op.getGroups() != 1 || ws[0] != 3 || ws[1] != 3 || uint64_t(xs[3]) * 2 != R ||
      uint64_t(ws[3]) * 2 > C || xs[2] % 2 || xs[1] < 2 || (uint64_t(xs[3]) * esz) % cfg.core.unified_buffer.alignment_bytes)
    return false;
  auto st = op.getStride(), pad = op.getPad(), dil = op.getDilation();
  if (st[0] != 1 || st[1] != 1 || dil[0] != 1 || dil[1] != 1 || pad[0] != 1 || pad[1] != 1 || pad[2] != 1 || pad[3] != 1)
    return false;
  return padding_lanes_unread(op.getOutput());
}

void Codegen::gen_conv_wide(tpu::Conv2DOp op) {
  std::string layer = op.getLayer().str();
  const Act& x = act(op.getInput());
  auto xs = x.shape, ys = shape_of(op.getOutput());
  uint64_t N = uint64_t(xs[0]), H = uint64_t(xs[1]), W = uint64_t(xs[2]), CI = uint64_t(xs[3]), CO = uint64_t(ys[3]);
  uint64_t R2 = R_ / 2, C2 = C_ / 2, px = R_ * esz_, E = W + 1, half = W / 2;
  // The two-pixel copy: N * H rows of E entries. Lower halves: pixel e - 1 (zero at e = 0);
  // upper halves: pixel e (zero at e = W). All four transfers write disjoint bytes.
  uint64_t P = ub_take(N * H * E * px, fmt::format("the two-pixel input of '{}'", layer));
  auto copy = [&](uint64_t src, uint64_t dst) {
    code("  " + emit::dma_copy(emit::Desc{new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}] dim=[{}, {}, {}]",
                                                                CI * esz_, src, dst, W, px, px, N * H, W * px, E * px))},
                               reg(0), reg(0), emit::flag(1)));
  };
  copy(x.base, P + px);
  copy(x.base, P + R2 * esz_);
  for (uint64_t at : {P, P + W * px + R2 * esz_})
    code("  " + emit::dma_load(emit::Desc{new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, 0, {}]", CI * esz_,
                                                                zero_hbm_, at, N * H, E * px))},
                               reg(0), reg(0), emit::flag(1)));
  code("  " + emit::wait(emit::flag(1), 4));
  auto w = const_floats(op.getWeight(), layer), bias = const_floats(op.getBias(), layer);
  std::vector<double> acc_scale;
  if (q8_) {
    for (double s : quantize(w, 9 * CI, CO)) acc_scale.push_back(s * scale(op.getInput()));
  }
  auto [bias_ub, ep] = two_pixel_params(bias, acc_scale, CO, op);
  auto tap = [&](uint64_t dy, uint64_t dx, uint64_t ci, uint64_t co) { return w[((dy * 3 + dx) * CI + ci) * CO + co]; };
  std::map<std::pair<uint64_t, uint64_t>, TileRef> tiles;  // (kernel row, t)
  for (uint64_t dy = 0; dy < 3; ++dy)
    for (uint64_t t : {0, 2}) {
      // Lower half: input pixel 2i + t - 1, upper half: 2i + t; output pixel 2i = taps
      // dx = pixel - 2i + 1, output pixel 2i + 1 = taps dx = pixel - 2i.
      std::vector<float> m(R_ * C_, 0.0f);
      for (uint64_t h = 0; h < 2; ++h) {
        int64_t p = int64_t(t) - 1 + int64_t(h);  // input pixel - 2i
        for (int64_t o = 0; o < 2; ++o) {
          int64_t dx = p - o + 1;
          if (dx < 0 || dx > 2) continue;
          for (uint64_t ci = 0; ci < CI; ++ci)
            for (uint64_t co = 0; co < CO; ++co) m[(h * R2 + ci) * C_ + uint64_t(o) * C2 + co] = tap(dy, uint64_t(dx), ci, co);
        }
      }
      tiles[{dy, t}] = weight_tile(m, R_, C_, 0, 0);
    }
  uint64_t rows_out = N * H;  // output rows (of W pixels, W / 2 matmul rows)
  Act q = new_act({int64_t(rows_out * half), int64_t(C_)}, fmt::format("the two-pixel output of '{}'", layer), true);
  uint64_t chunk = conv_row_chunk(rows_out, half, 1);
  std::vector<Block> blocks;
  for (uint64_t r0 = 0; r0 < rows_out; r0 += chunk) {
    uint64_t r1 = std::min(rows_out, r0 + chunk);
    Block b;
    bool first = true;
    for (uint64_t dy : {1, 0, 2})  // the centre row reaches every output row: it initializes them
      for (uint64_t t : {0, 2}) {
        TileGroup g{tiles[{dy, t}], {}};
        for (uint64_t r = r0; r < r1; ++r) {
          int64_t iy = int64_t(r % H) + int64_t(dy) - 1;
          if (iy < 0 || iy >= int64_t(H)) continue;
          g.steps.push_back({P + ((r / H * H + uint64_t(iy)) * E + t) * px, half, 2 * px, (r - r0) * half, !first});
        }
        first = false;
        if (!g.steps.empty()) b.groups.push_back(std::move(g));
      }
    uint64_t rows = (r1 - r0) * half, out = q.base + r0 * half * C_ * esz_, bias_row = bias_at(bias_ub, 0);
    b.epilogue = [this, rows, bias_row, ep, out](uint32_t m, uint64_t acc_row) { return epilogue(m, acc_row, rows, bias_row, ep, out); };
    blocks.push_back(std::move(b));
  }
  run_blocks(blocks, true);
  ub_.release(P);
  ub_.release(bias_ub);
  // Pixel 2i's row takes the two-pixel row's lanes [0, C/2), pixel 2i + 1's its lanes
  // [C/2, C). INT8: the output's padding lanes get the bias lanes (bias_lanes_row), which
  // the 1x1 convolutions reading it add their bias through (planned: tpu.bias_lanes).
  Act y = out_act(op.getOutput(), fmt::format("the output of '{}'", layer));
  uint64_t n = rows_out * half, row = C_ * esz_, pattern = q8_ ? bias_lanes_row(C2) : 0;
  for (uint64_t h = 0; h < 2; ++h)
    code("  " + emit::dma_copy(emit::Desc{new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}]", C2 * esz_,
                                                                q.base + h * C2 * esz_, y.base + h * row, n, row, 2 * row))},
                               reg(0), reg(0), emit::flag(1)));
  if (q8_)
    code("  " + emit::dma_copy(emit::Desc{new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, 0, {}]", C2, pattern + C2,
                                                                y.base + C2, 2 * n, row))},
                               reg(0), reg(0), emit::flag(1)));
  code("  " + emit::wait(emit::flag(1), q8_ ? 3 : 2));
  ub_.release(q.base);
  // Compulsory HBM bytes: the layer's weights once (its six two-pixel tiles hold them).
  add_bound(layer, conv_useful_macs(op), 9 * CI * CO * esz_);
  define(op.getOutput(), y);
}

}  // namespace vtpu::compiler::codegen
