// The packed first convolution (few input channels, read from HBM) (docs/compiler.md, "Code generation").
#include "codegen_internal.h"

namespace vtpu::compiler::codegen {

// A convolution whose input has few channels can read it packed: each matmul row then
// covers the KW taps of one kernel row side by side (K = KW x channels rounded to a
// word), instead of one tap per matmul with the channels padded to R lanes.
bool Codegen::packable(tpu::Conv2DOp op) const {
  auto xs = shape_of(op.getInput()), ws = shape_of(op.getWeight());
  uint64_t CIp = align_up(uint64_t(xs[3]), std::max<uint64_t>(1, 4 / esz_));
  return op.getGroups() == 1 && op.getDilation()[1] == 1 && uint64_t(ws[1]) * CIp <= R_ && uint64_t(xs[3]) * 4 <= R_;
}

void Codegen::gen_conv_packed(tpu::Conv2DOp op, uint64_t hbm) {
  std::string layer = op.getLayer().str();
  auto xs = shape_of(op.getInput()), ws = shape_of(op.getWeight()), ys = shape_of(op.getOutput());
  uint64_t N = uint64_t(xs[0]), H = uint64_t(xs[1]), W = uint64_t(xs[2]), CI = uint64_t(xs[3]);
  uint64_t KH = uint64_t(ws[0]), KW = uint64_t(ws[1]), CO = uint64_t(ws[3]), OH = uint64_t(ys[1]), OW = uint64_t(ys[2]);
  auto stride = op.getStride(), pad = op.getPad(), dil = op.getDilation();
  uint64_t sh = uint64_t(stride[0]), sw = uint64_t(stride[1]), dh = uint64_t(dil[0]);
  uint64_t pt = uint64_t(pad[0]), pb = uint64_t(pad[1]), pl = uint64_t(pad[2]), pr = uint64_t(pad[3]);
  uint64_t Hp = H + pt + pb, Wp = W + pl + pr, CIp = align_up(CI, std::max<uint64_t>(1, 4 / esz_));
  uint64_t pix = CIp * esz_;
  // Two output pixels per matmul row (as in gen_conv_wide): with the output channels in at
  // most half the columns, a matmul row covering the KW + sw taps of pixels x and x + 1
  // computes both (columns [0, C/2) and [C/2, C)); its rows then spread into the output
  // (their padding lanes holding the other pixel: only for convolutions, or a pool whose
  // readers are all convolutions, which never read past their input's channels).
  uint64_t span = KW;
  bool two_px = R_ == C_ && CO * 2 <= C_ && OW % 2 == 0 && !int_out_ && N > 1 && (KW + sw) * CIp * 2 <= R_ &&
                padding_lanes_unread(op.getOutput());
  if (two_px) span = KW + sw;
  // Kernel rows stacked in one matmul row: as many as the array's R rows hold (see below).
  uint64_t S = std::max<uint64_t>(1, std::min<uint64_t>(KH, R_ / (span * CIp)));
  // The packed, zero-padded image (+ one row of slack: a matmul reads R lanes per row):
  // all images, or with stacking one at a time (each is copied into its stacked form
  // before the next is loaded).
  uint64_t bytes = (S > 1 ? 1 : N) * Hp * Wp * pix + R_ * esz_;
  uint64_t xq = ub_take(bytes, fmt::format("the packed input of '{}'", layer));
  clear(xq, bytes);
  // Image rows [h0, h1) of image n into the packed image at `at`: the instruction.
  auto load_rows = [&](uint64_t n, uint64_t at, uint64_t h0, uint64_t h1, int flag) {
    std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}] dim=[{}, {}, {}]", CI * esz_,
                                         hbm + (n * H + h0) * W * CI * esz_, at + ((pt + h0) * Wp + pl) * pix, W, CI * esz_,
                                         pix, h1 - h0, W * CI * esz_, Wp * pix));
    return fmt::format("  dma.load desc={} src=r0 dst=r0 flag=f{}\n", d, flag);
  };
  auto load_image = [&](uint64_t n, uint64_t at) {
    code_ += load_rows(n, at, 0, H, 1);
    code("  wait f1");
  };
  for (uint64_t n = 0; S == 1 && n < N; ++n) load_image(n, xq + n * Hp * Wp * pix);
  auto w = const_floats(op.getWeight(), layer), bias = const_floats(op.getBias(), layer);
  // A pool that is the output's only use (ResNet-50's max pool after conv1) runs image by
  // image along the next image's matmuls, as run_blocks' background work on the vector
  // unit the epilogues leave free (with stacking, where its output fits beside this one).
  // The output then only needs two images' rows: image n goes to slot n % 2 while the pool
  // reads image n - 1 from the other (ResNet-50 at batch 8: 3.2 MB instead of 12.8 MB).
  std::optional<tpu::PoolOp> pool;
  Act py, y;
  if (S > 1 && N > 1 && !int_out_ && op.getOutput().hasOneUse())
    if (auto p = mlir::dyn_cast<tpu::PoolOp>(*op.getOutput().getUsers().begin())) {
      auto ps = shape_of(p.getOutput());
      uint64_t c = uint64_t(ps.back()), need = align_up(numel(ps) / c * R_ * esz_, 64) * ceil_div(c, R_);
      y = new_act({2, int64_t(OH), int64_t(OW), int64_t(CO)}, fmt::format("the output of '{}'", layer));
      if (need <= ub_.largest_free()) {
        bool high = output_high_;
        output_high_ = y.base + y.bytes() / 2 < ub_.capacity() / 2;  // where gen_pool would put it
        py = new_act(ps, fmt::format("the output of '{}'", p.getLayer().str()));
        output_high_ = high;
        fused_pools_[p.getOperation()] = py;
        pool = p;
      } else {
        ub_.release(y.base);
      }
    }
  if (!pool) y = out_act(op.getOutput(), fmt::format("the output of '{}'", layer));
  // The output row (image n's row oy is row n * OH + oy) that y's first row holds.
  auto first_row = [&](uint64_t n) { return pool ? (n - n % 2) * OH : 0; };
  std::vector<double> acc_scale;
  if (q8_) {
    QWeights qw = quantize(w, KH * KW * CI, CO);
    w = std::move(qw.q);
    for (double s2 : qw.s) acc_scale.push_back(s2 * scale(op.getInput()));
  }
  uint64_t bias_ub = kNoBias;
  std::vector<std::string> eps;
  if (two_px) {
    auto [b2, ep2] = two_pixel_params(bias, acc_scale, CO, op);
    bias_ub = b2, eps = {ep2};
  } else {
    bias_ub = bias_rows(bias, acc_scale);
    eps = epilogue_params(CO, acc_scale, q8_ ? scale(op.getOutput()) : 1.0, op.getClampMin().convertToDouble(),
                         op.getClampMax().convertToDouble());
  }
  // Kernel rows stacked in one matmul row: as many as the array's R rows hold (KW x CIp
  // each), so ResNet-50's conv1 on a 128-row array runs 2 matmuls per output row, not 7.
  // Stacking reads a copy of the image whose pixel (j, x) holds the channels of padded
  // rows j*rs + s*dh, s < S, side by side (one 4-byte-aligned copy per s, built in the
  // unified buffer from the packed image); rs = the stride when the stack's height is a
  // multiple of it, so only the rows output rows start on are kept.
  uint64_t G = ceil_div(KH, S), zp = S * pix, nbs = ceil_div(CO, C_), K = span * S * CIp, per_row = two_px ? OW / 2 : OW;
  uint64_t rs = S > 1 && (S * dh) % sh == 0 ? sh : 1;
  uint64_t ZH = S > 1 ? ((OH - 1) * sh + (G - 1) * S * dh) / rs + 1 : 0, zbytes = ZH * Wp * zp + R_ * esz_;
  uint64_t zb = S > 1 ? ub_take(zbytes, fmt::format("the row-stacked input of '{}'", layer)) : 0;
  if (S > 1) clear(zb, zbytes);  // rows past the image stay zero for every image
  // One tile per kernel-row group g: row k = (dx * S + s) * CIp + c holds
  // w[g * S + s][dx][c][:] (zero for c >= CI and past the last kernel row).
  // Two pixels: row k = (dx' * S + s) * CIp + c (dx' < KW + sw) holds tap dx' of pixel x in
  // column co and tap dx' - sw of pixel x + 1 in column C/2 + co.
  std::map<std::pair<uint64_t, uint64_t>, TileRef> tiles;
  uint64_t cols = two_px ? C_ : CO;
  for (uint64_t g = 0; g < G; ++g) {
    std::vector<float> t(K * cols, 0.0f);
    for (uint64_t s = 0; s < S && g * S + s < KH; ++s)
      for (uint64_t o = 0; o < (two_px ? 2 : 1); ++o)
        for (uint64_t dx = 0; dx < KW; ++dx)
          for (uint64_t c = 0; c < CI; ++c)
            for (uint64_t co = 0; co < CO; ++co)
              t[(((dx + o * sw) * S + s) * CIp + c) * cols + o * (C_ / 2) + co] = w[(((g * S + s) * KW + dx) * CI + c) * CO + co];
    for (uint64_t nb = 0; nb < nbs; ++nb) tiles[{g, nb}] = weight_tile(t, K, cols, 0, nb);
  }
  uint64_t rows_per_chunk = conv_row_chunk(S > 1 ? OH : N * OH, per_row, nbs);
  // Two pixels: an image's two-pixel rows, spread into the output after its matmuls (+ a
  // row of slack: the second spreading copy reads half a row past the last).
  uint64_t qbytes = two_px ? OH * per_row * C_ * esz_ + R_ * esz_ : 0;
  uint64_t q2 = two_px ? ub_take(qbytes, fmt::format("the two-pixel output of '{}'", layer)) : 0;
  if (two_px) clear(q2, qbytes);
  // In flight on kSpread until the next image's matmuls (whose epilogues reuse the
  // two-pixel rows, and whose background pool reads this image) start.
  const int kSpread = 50;
  auto spread = [&](uint64_t n) {
    uint64_t row = C_ * esz_, at = y.base + (n * OH - first_row(n)) * OW * row;
    for (uint64_t h = 0; h < 2; ++h)
      code(fmt::format("  dma.copy desc={} src=r0 dst=r0 flag=f{}",
                       new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}]", row, q2 + h * (C_ / 2) * esz_,
                                            at + h * row, OH * per_row, row, 2 * row)),
                       kSpread));
  };
  // Output rows [q0, q1): without stacking all images at once from the packed image, with
  // it one image at a time from its stacked copy.
  auto run_rows = [&](uint64_t q0, uint64_t q1, uint64_t zb, uint64_t row0, std::vector<std::pair<std::string, double>> transfers,
                      std::vector<std::pair<std::string, uint64_t>> background) {
    std::vector<Block> blocks;
    for (uint64_t nb = 0; nb < nbs; ++nb)
      for (uint64_t r0 = q0; r0 < q1; r0 += rows_per_chunk) {
        uint64_t r1 = std::min(q1, r0 + rows_per_chunk);
        Block b;
        for (uint64_t g = 0; g < G; ++g) {
          TileGroup tg{tiles[{g, nb}], {}};
          for (uint64_t r = r0; r < r1; ++r) {
            uint64_t n = r / OH, oy = r % OH;
            uint64_t src = S > 1 ? zb + (oy * sh + g * S * dh) / rs * Wp * zp : xq + ((n * Hp + oy * sh + g * dh) * Wp) * pix;
            tg.steps.push_back({src, per_row, (two_px ? 2 : 1) * sw * zp, (r - r0) * per_row, g > 0});
          }
          b.groups.push_back(std::move(tg));
        }
        uint64_t rows = (r1 - r0) * per_row;
        uint64_t out = two_px ? q2 + (r0 - q0) * per_row * C_ * esz_ : y.base + nb * y.block_bytes + (r0 - row0) * OW * C_ * out_esz_;
        uint64_t bias_row = bias_at(bias_ub, nb);
        std::string ep = eps[nb];
        b.epilogue = [this, rows, bias_row, ep, out](uint32_t m, uint64_t acc_row) { return epilogue(m, acc_row, rows, bias_row, ep, out); };
        blocks.push_back(std::move(b));
      }
    run_blocks(blocks, true, std::nullopt, std::move(background), {}, std::move(transfers));  // constant weights: the prologue hoists
  };
  // With room (after the pool's output) for a second packed image, image n + 1 loads from
  // HBM while image n's matmuls run (one request per pixel: about 3,000 cycles for a
  // 224 x 224 image on tpu-v4-core) and only its stacking copies wait between images.
  uint64_t xq2 = 0;
  if (S > 1 && N > 1 && ub_.largest_free() >= bytes + (1 << 16)) {
    xq2 = ub_take(bytes, fmt::format("the packed input of '{}'", layer));
    clear(xq2, bytes);
  }
  // The copies that stack a packed image, on `flag`, and their count.
  auto stack_copies = [&](uint64_t from, uint64_t to, int flag) {
    std::string text;
    uint64_t copies = 0;
    for (uint64_t s = 0; s < S && s * dh < Hp; ++s, ++copies) {
      uint64_t rows = std::min(ZH, ceil_div(Hp - s * dh, rs));
      std::string d = new_desc(fmt::format("bytes={} dim=[{}, {}, {}] dim=[{}, {}, {}]", pix, Wp, pix, zp, rows, rs * Wp * pix, Wp * zp));
      text += fmt::format("  li r1, {} || li r2, {}\n", from + s * dh * Wp * pix, to + s * pix);
      text += fmt::format("  dma.copy desc={} src=r1 dst=r2 flag=f{}\n", d, flag);
    }
    return std::make_pair(text, copies);
  };
  auto stack = [&](uint64_t from, uint64_t to) {
    auto [text, copies] = stack_copies(from, to, 1);
    code_ += text;
    code(fmt::format("  wait f1, {}", copies));
  };
  // With room for a second stacked copy too, image n + 1 is also stacked during image n's
  // matmuls (once its load is done): the next image's matmuls then start at once.
  uint64_t zb2 = 0;
  if (xq2 && ub_.largest_free() >= zbytes + (1 << 16)) {
    zb2 = ub_take(zbytes, fmt::format("the row-stacked input of '{}'", layer));
    clear(zb2, zbytes);
  }
  if (S == 1) run_rows(0, N * OH, zb, 0, {}, {});
  // The next image's load goes in pieces of a few rows spread over the steps of this one's
  // matmuls (each pixel is a request of its own: one long transfer would hold up the weight
  // loads queued behind it; 24 pieces measured best for ResNet-50 at batch 8), its stacking
  // after the last matmul is issued (waiting for the load then stalls no matmul).
  const int kLoaded = 48, kStacked = 49;
  uint64_t pieces = std::min<uint64_t>(H, 24), stacked = 0;
  if (xq2) load_image(0, xq);
  if (zb2) stack(xq, zb);
  for (uint64_t n = 0; S > 1 && n < N; ++n) {
    uint64_t packed = xq2 && n % 2 ? xq2 : xq, other = packed == xq ? xq2 : xq;
    uint64_t z = zb2 && n % 2 ? zb2 : zb;
    // run_blocks has waited for every matmul of the previous image: its stacked copy is free.
    if (!xq2) {
      load_image(n, xq);
      stack(xq, zb);
    } else if (!zb2) {
      if (n > 0) code(fmt::format("  wait f{}, {}", kLoaded, pieces));
      stack(packed, zb);
    } else if (n > 0) {
      code(fmt::format("  wait f{}, {}", kStacked, stacked));
    }
    if (two_px && n > 0) code(fmt::format("  wait f{}, 2", kSpread));
    std::vector<std::pair<std::string, double>> next;
    for (uint64_t i = 0; xq2 && n + 1 < N && i < pieces; ++i)  // into the other packed image, free now
      next.push_back({load_rows(n + 1, other, i * H / pieces, (i + 1) * H / pieces, kLoaded), double(i + 1) / double(pieces)});
    if (zb2 && n + 1 < N) {
      auto [text, copies] = stack_copies(other, z == zb ? zb2 : zb, kStacked);
      next.push_back({fmt::format("  wait f{}, {}\n", kLoaded, pieces) + text, 1.0});
      stacked = copies;
    }
    run_rows(n * OH, (n + 1) * OH, z, first_row(n), std::move(next),
             pool && n > 0 ? pool_ops(*pool, y, py, int64_t(n) - 1, int64_t(n), first_row(n - 1) / OH)
                           : std::vector<std::pair<std::string, uint64_t>>{});
    if (two_px) spread(n);
    if (two_px && n + 1 == N) code(fmt::format("  wait f{}, 2", kSpread));
  }
  if (pool)
    for (auto& [text, occ] : pool_ops(*pool, y, py, int64_t(N) - 1, int64_t(N), first_row(N - 1) / OH)) {
      code_ += text.replace(text.find("{flag}"), 6, "f20");
      code("  wait f20");
    }
  ub_.release(bias_ub);
  ub_.release(xq);
  if (S > 1) ub_.release(zb);
  if (xq2) ub_.release(xq2);
  if (zb2) ub_.release(zb2);
  if (two_px) ub_.release(q2);
  add_bound(layer, N * OH * OW * KH * KW * CI * CO, KH * KW * CI * CO * esz_ + N * H * W * CI * esz_);
  define(op.getOutput(), y);
}

}  // namespace vtpu::compiler::codegen
