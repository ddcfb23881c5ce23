// The packed first convolution (few input channels, read from HBM) (docs/compiler.md, "Code generation").
#include "codegen_internal.h"

namespace vtpu::compiler::codegen {

// A convolution whose input has few channels can read it packed: each matmul row then
// covers the KW taps of one kernel row side by side (K = KW x channels rounded to a
// word), instead of one tap per matmul with the channels padded to R lanes. Its output rows
// fit an accumulator region (wider ones go by taps, in column pieces: conv.cpp).
bool packable(tpu::Conv2DOp op, uint64_t R, uint64_t esz, uint64_t acc_region) {
  if (uint64_t(shape_of(op.getOutput())[2]) > acc_region) return false;
  auto xs = shape_of(op.getInput()), ws = shape_of(op.getWeight());
  uint64_t CIp = align_up(uint64_t(xs[3]), std::max<uint64_t>(1, 4 / esz));
  return op.getGroups() == 1 && op.getDilation()[1] == 1 && uint64_t(ws[1]) * CIp <= R && uint64_t(xs[3]) * 4 <= R;
}

// An image with few channels that only convolutions read stays in HBM: those
// convolutions load it packed (see gen_conv_packed) instead of R lanes per pixel.
bool packed_input(Value arg, uint64_t R, uint64_t esz, uint64_t acc_region) {
  bool packed = !arg.use_empty();
  for (mlir::Operation* u : arg.getUsers()) {
    auto c = mlir::dyn_cast<tpu::Conv2DOp>(u);
    packed &= c && packable(c, R, esz, acc_region);
  }
  return packed;
}

// A band of a model input's rows in HBM (tpu.load_rows along the rows, every channel) that
// only such convolutions read: they read the band from HBM as packed_input's convolutions
// read the whole image, and the load moves nothing (codegen/bands.cpp). A convolution in row
// bands (compiler/pipeline/bands.cpp) so keeps the packed form its whole layer has, each band
// loading its weight tiles once, instead of one tap per matmul with the channels padded to
// R lanes: ResNet-50's conv1 on a 1 MiB buffer.
bool packed_view(Value v, uint64_t R, uint64_t esz, uint64_t acc_region) {
  auto load = v.getDefiningOp<tpu::LoadRowsOp>();
  if (!load || !mlir::isa<mlir::BlockArgument>(load.getInput()) || is_int32(load.getInput())) return false;
  auto in = shape_of(load.getInput()), out = shape_of(v);
  if (load.getAxis() != 1 || load.getChannelStart() != 0 || in.size() != 4 || in[0] != 1 || out.back() != in.back()) return false;
  return packed_input(v, R, esz, acc_region);
}

PackedRows packed_rows(tpu::Conv2DOp op, const config::Config& cfg, uint64_t esz) {
  ConvShape c = conv_shape(op);
  uint64_t R = cfg.core.mxu.rows, C = cfg.core.mxu.cols;
  PackedRows p;
  p.CIp = align_up(c.CI, std::max<uint64_t>(1, 4 / esz));
  // Two output pixels per matmul row (as in gen_conv_wide): with the output channels in at
  // most half the columns, a matmul row covering the KW + sw taps of pixels x and x + 1
  // computes both (columns [0, C/2) and [C/2, C)); its rows then spread into the output
  // (their padding lanes holding the other pixel: only for convolutions, or a pool whose
  // readers are all convolutions, which never read past their input's channels).
  p.span = c.KW;
  p.two_px = R == C && c.CO * 2 <= C && c.OW % 2 == 0 && !is_int32(op.getOutput()) && c.N > 1 &&
             (c.KW + c.sw) * p.CIp * 2 <= R && padding_lanes_unread(op.getOutput());
  // ... and only where that is faster: half the matmul rows (each taking KW + sw taps, so
  // perhaps more kernel-row groups), against two copies of an image's two-pixel rows through
  // the unified buffer's DMA port (docs/microarch.md, dma.copy) before the next image's
  // matmuls. CNN1's first layer on tpu-v1: 9,800 rows + 39,200 copy cycles per image
  // against 19,600 rows.
  if (p.two_px) {
    auto groups = [&](uint64_t span) { return ceil_div(c.KH, std::max<uint64_t>(1, std::min<uint64_t>(c.KH, R / (span * p.CIp)))); };
    uint64_t px = c.OH * c.OW, nm = cfg.core.mxu.count;
    uint64_t one = ceil_div(px * groups(c.KW), nm);
    uint64_t two = ceil_div(px / 2 * groups(c.KW + c.sw), nm) + 4 * ceil_div(px / 2 * C * esz, cfg.core.unified_buffer.row_bytes);
    p.two_px = two < one;
  }
  if (p.two_px) p.span = c.KW + c.sw;
  // Kernel rows stacked in one matmul row: as many as the array's R rows hold (see stacking()).
  p.S = std::max<uint64_t>(1, std::min<uint64_t>(c.KH, R / (p.span * p.CIp)));
  // INT8: a row of the placement matmul takes P = C / CIp pixels as they lie in HBM (CI x P
  // lanes) and makes their packed form (C lanes); each row must start on an aligned word.
  if (esz == 1 && C % p.CIp == 0) {
    uint64_t P = C / p.CIp;
    if (c.CI * P <= R && (c.CI * P * esz) % cfg.core.unified_buffer.alignment_bytes == 0) p.placed = P;
  }
  return p;
}

// The packed convolution's steps; its locals are members (see gen_conv_packed).
class PackedConv {
 public:
  PackedConv(Codegen& cg, tpu::Conv2DOp op, uint64_t hbm)
      : cg_(cg), op_(op), hbm_(hbm), layer_(op.getLayer().str()), c_(conv_shape(op)), R_(cg.R_), C_(cg.C_), esz_(cg.esz_) {
    PackedRows rows = packed_rows(op, cg.cfg_, esz_);
    CIp_ = rows.CIp, span_ = rows.span, S_ = rows.S, two_px_ = rows.two_px;
    pix_ = CIp_ * esz_;
    if (auto p = op->getAttrOfType<mlir::IntegerAttr>(kPlacedPixelsAttr)) P_ = uint64_t(p.getInt());
  }

  void run() {
    load_input();
    output();
    weights();
    stacking();
    make_tiles();
    buffers();
    if (S_ == 1) run_rows(0, c_.N * c_.OH, zb_, 0, {}, {});
    // The next image's load goes in pieces of a few rows spread over the steps of this one's
    // matmuls (each pixel is a request of its own: one long transfer would hold up the weight
    // loads queued behind it; 24 pieces measured best for ResNet-50 at batch 8), its stacking
    // after the last matmul is issued (waiting for the load then stalls no matmul).
    pieces_ = std::min<uint64_t>(c_.H, 24);
    if (placed_ && S_ > 1) {
      first_placed_image();
    } else {
      if (xq2_) load_image(0, xq_);
      if (zb2_) stack(xq_, zb_);
    }
    for (uint64_t n = 0; S_ > 1 && n < c_.N; ++n) run_image(n);
    finish();
  }

 private:
  // The packed, zero-padded image (+ one row of slack: a matmul reads R lanes per row):
  // all images, or with stacking one at a time (each is copied into its stacked form
  // before the next is loaded).
  void load_input() {
    bytes_ = (S_ > 1 ? 1 : c_.N) * c_.Hp() * c_.Wp() * pix_ + R_ * esz_;
    w_ = const_floats(op_.getWeight(), layer_), bias_ = const_floats(op_.getBias(), layer_);
    placed_ = P_ > 0 && placement_fits();
    if (placed_) take_placement_buffers();
    if (placed_ && S_ > 1) return;  // stacked straight from the spread image (stack_flat_copies)
    xq_ = cg_.ub_take(bytes_, fmt::format("the packed input of '{}'", layer_)), has_xq_ = true;
    uint64_t image = c_.Hp() * c_.Wp() * pix_;
    if (placed_) {  // the spread images' copies write the rest
      uint64_t loads = 0;
      for (uint64_t n = 0; n < c_.N; ++n)
        cg_.clear_frame(xq_ + n * image, c_.Hp(), c_.Wp(), c_.pt, c_.pb, c_.pl, c_.pr, pix_, cg_.zero_hbm_, &loads);
      clear_slack(xq_ + c_.N * image, loads);
    } else {
      cg_.clear(xq_, bytes_);
    }
    if (S_ > 1) return;
    if (!placed_) {
      for (uint64_t n = 0; n < c_.N; ++n) load_image(n, xq_ + n * image);
      return;
    }
    for (uint64_t n = 0; n < c_.N; ++n) {
      load_raw(n, 1, 1, true);
      place();
      uint64_t at = xq_ + n * image + (c_.pt * c_.Wp() + c_.pl) * pix_;
      std::string d = cg_.new_desc(fmt::format("bytes={} dim=[{}, {}, {}]", c_.W * pix_, c_.H, c_.W * pix_, c_.Wp() * pix_));
      cg_.code(bundle({emit::li(reg(1), int64_t(fq_)), emit::li(reg(2), int64_t(at))}));
      cg_.code("  " + emit::dma_copy(emit::Desc{d}, reg(1), reg(2), emit::flag(1)));
      cg_.code("  " + emit::wait(emit::flag(1)));
    }
    cg_.ub_.release(fq_), cg_.ub_.release(rq_);
  }

  // The placement (kPlacedPixelsAttr): image n as it lies in HBM (H x W x CI bytes, in a few
  // long requests) into rq_; a matmul row of P of its pixels (CI x P lanes) times a 0/1 tile
  // puts each pixel's channels at lanes [p x CIp, p x CIp + CI) of C (INT8, exact: one product
  // of 1 per output, RESCALE by 1), so the flat image fq_ holds the packed pixels back to back;
  // DMA copies then place its rows in the padded (or the row-stacked) image. Against one
  // request per 3-byte pixel: CNN1's 280 x 280 image on tpu-v1 loads in about 5K cycles
  // instead of 133K.
  uint64_t place_rows() const { return ceil_div(c_.H * c_.W, P_); }
  uint64_t raw_bytes() const { return (place_rows() - 1) * P_ * c_.CI * esz_ + R_ * esz_; }
  uint64_t flat_bytes() const { return place_rows() * C_ * esz_; }
  // Room for both beside what the per-pixel load needs (its packed image), else that load.
  bool placement_fits() const { return cg_.ub_.largest_free() >= raw_bytes() + flat_bytes() + bytes_; }
  void take_placement_buffers() {
    rq_ = cg_.ub_take(raw_bytes(), fmt::format("the loaded input of '{}'", layer_));
    fq_ = cg_.ub_take(flat_bytes(), fmt::format("the spread input of '{}'", layer_));
    uint64_t K = c_.CI * P_;
    std::vector<float> t(K * C_, 0.0f);
    for (uint64_t p = 0; p < P_; ++p)
      for (uint64_t c = 0; c < c_.CI; ++c) t[(p * c_.CI + c) * C_ + p * CIp_ + c] = 1.0f;
    place_tile_ = cg_.weight_tile(t, K, C_, 0, 0);
    place_ep_ = cg_.epilogue_params(C_, std::vector<double>(C_, 1.0), 1.0, -INFINITY, INFINITY)[0];
  }
  // Image n into rq_ in `pieces` requests on `flag` (waited when `wait`); or the pieces as
  // transfers beside a stream of matmuls.
  std::vector<std::pair<std::string, double>> raw_pieces(uint64_t n, uint64_t pieces, int flag) {
    uint64_t T = c_.H * c_.W * c_.CI * esz_;
    std::vector<std::pair<std::string, double>> out;
    for (uint64_t i = 0; i < pieces; ++i) {
      uint64_t a = i == 0 ? 0 : i * T / pieces / 64 * 64, b = i + 1 == pieces ? T : (i + 1) * T / pieces / 64 * 64;
      std::string d = cg_.new_desc(fmt::format("bytes={} src_off={} dst_off={}", b - a, hbm_ + n * T + a, rq_ + a));
      out.push_back({"  " + emit::dma_load(emit::Desc{d}, cg_.hbm_base(hbm_), reg(0), emit::flag(flag)) + "\n", double(i + 1) / double(pieces)});
    }
    return out;
  }
  uint64_t raw_piece_count() const { return std::max<uint64_t>(1, std::min<uint64_t>(24, c_.H * c_.W * c_.CI * esz_ / 64)); }
  void load_raw(uint64_t n, uint64_t pieces, int flag, bool wait) {
    for (auto& [text, f] : raw_pieces(n, pieces, flag)) cg_.code_ += text;
    if (wait) cg_.code("  " + emit::wait(emit::flag(flag), pieces));
  }
  // rq_ -> fq_ by the placement matmul (all its epilogues done on return).
  void place() {
    std::vector<Block> blocks;
    uint64_t rows = place_rows(), chunk = cg_.row_chunk(rows, 1), in = P_ * c_.CI * esz_;
    bool int_out = cg_.int_out_;
    cg_.int_out_ = false;  // the spread image is INT8 whatever the convolution writes
    for (uint64_t r0 = 0; r0 < rows; r0 += chunk) {
      uint64_t r1 = std::min(rows, r0 + chunk), n = r1 - r0, out = fq_ + r0 * C_ * esz_;
      Block b;
      b.groups.push_back({place_tile_, {{rq_ + r0 * in, n, in, 0, false}}});
      Codegen* cg = &cg_;
      std::string ep = place_ep_;
      b.epilogue = [cg, n, ep, out](uint32_t m, uint64_t acc_row) { return cg->epilogue(m, acc_row, n, Codegen::kNoBias, ep, out); };
      blocks.push_back(std::move(b));
    }
    cg_.run_blocks(blocks, true);
    cg_.int_out_ = int_out;
  }

  // Image rows [h0, h1) of image n into the packed image at `at`: the instruction.
  std::string load_rows(uint64_t n, uint64_t at, uint64_t h0, uint64_t h1, int flag) {
    uint64_t H = c_.H, W = c_.W, CI = c_.CI;
    std::string d = cg_.new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}] dim=[{}, {}, {}]", CI * esz_,
                                             hbm_ + (n * H + h0) * W * CI * esz_, at + ((c_.pt + h0) * c_.Wp() + c_.pl) * pix_, W,
                                             CI * esz_, pix_, h1 - h0, W * CI * esz_, c_.Wp() * pix_));
    return "  " + emit::dma_load(emit::Desc{d}, cg_.hbm_base(hbm_), reg(0), emit::flag(flag)) + "\n";
  }
  void load_image(uint64_t n, uint64_t at) {
    cg_.code_ += load_rows(n, at, 0, c_.H, 1);
    cg_.code("  " + emit::wait(emit::flag(1)));
  }

  // A pool that is the output's only use (ResNet-50's max pool after conv1; planned: role
  // "pool") runs image by image along the next image's matmuls, as run_blocks' background
  // work on the vector unit the epilogues leave free (declined where its output does not fit
  // beside this one). The output then only needs two images' rows: image n goes to slot
  // n % 2 while the pool reads image n - 1 from the other (ResNet-50 at batch 8: 3.2 MB
  // instead of 12.8 MB).
  void output() {
    if (auto planned = cg_.planned(op_, "pool"); !planned.empty()) {
      auto p = mlir::cast<tpu::PoolOp>(planned[0]);
      auto ps = shape_of(p.getOutput());
      uint64_t need = cg_.act_bytes(ps);
      y_ = cg_.new_act({2, int64_t(c_.OH), int64_t(c_.OW), int64_t(c_.CO)}, fmt::format("the output of '{}'", layer_));
      if (need <= cg_.ub_.largest_free()) {
        bool high = cg_.output_high_;
        cg_.output_high_ = y_.base + y_.bytes() / 2 < cg_.ub_.capacity() / 2;  // where gen_pool would put it
        py_ = cg_.new_act(ps, fmt::format("the output of '{}'", p.getLayer().str()));
        cg_.output_high_ = high;
        cg_.fused_pools_[p.getOperation()] = py_;
        pool_ = p;
      } else {
        cg_.ub_.release(y_.base);
        cg_.decline(op_, "pool");
      }
    }
    if (!pool_) y_ = cg_.out_act(op_.getOutput(), fmt::format("the output of '{}'", layer_));
  }
  // The output row (image n's row oy is row n * OH + oy) that y's first row holds.
  uint64_t first_row(uint64_t n) const { return pool_ ? (n - n % 2) * c_.OH : 0; }

  void weights() {
    if (cg_.q8_) {
      for (double s2 : Codegen::quantize(w_, c_.KH * c_.KW * c_.CI, c_.CO)) acc_scale_.push_back(s2 * cg_.scale(op_.getInput()));
    }
    if (two_px_) {
      auto [b2, ep2] = cg_.two_pixel_params(bias_, acc_scale_, c_.CO, op_);
      bias_ub_ = b2, eps_ = {ep2};
    } else {
      bias_ub_ = cg_.bias_rows(bias_, acc_scale_);
      eps_ = cg_.epilogue_params(c_.CO, acc_scale_, cg_.q8_ ? cg_.scale(op_.getOutput()) : 1.0, op_.getClampMin().convertToDouble(),
                                 op_.getClampMax().convertToDouble());
    }
  }

  // Kernel rows stacked in one matmul row: as many as the array's R rows hold (KW x CIp
  // each), so ResNet-50's conv1 on a 128-row array runs 2 matmuls per output row, not 7.
  // Stacking reads a copy of the image whose pixel (j, x) holds the channels of padded
  // rows j*rs + s*dh, s < S, side by side (one 4-byte-aligned copy per s, built in the
  // unified buffer from the packed image); rs = the stride when the stack's height is a
  // multiple of it, so only the rows output rows start on are kept.
  void stacking() {
    G_ = ceil_div(c_.KH, S_), zp_ = S_ * pix_, nbs_ = ceil_div(c_.CO, C_), K_ = span_ * S_ * CIp_;
    per_row_ = two_px_ ? c_.OW / 2 : c_.OW;
    rs_ = S_ > 1 && (S_ * c_.dh) % c_.sh == 0 ? c_.sh : 1;
    ZH_ = S_ > 1 ? ((c_.OH - 1) * c_.sh + (G_ - 1) * S_ * c_.dh) / rs_ + 1 : 0, zbytes_ = ZH_ * c_.Wp() * zp_ + R_ * esz_;
    zb_ = S_ > 1 ? cg_.ub_take(zbytes_, fmt::format("the row-stacked input of '{}'", layer_)) : 0;
    if (S_ > 1 && placed_) clear_stack(zb_);
    else if (S_ > 1) cg_.clear(zb_, zbytes_);  // rows past the image stay zero for every image
  }

  // One tile per kernel-row group g: row k = (dx * S + s) * CIp + c holds
  // w[g * S + s][dx][c][:] (zero for c >= CI and past the last kernel row).
  // Two pixels: row k = (dx' * S + s) * CIp + c (dx' < KW + sw) holds tap dx' of pixel x in
  // column co and tap dx' - sw of pixel x + 1 in column C/2 + co.
  void make_tiles() {
    uint64_t cols = two_px_ ? C_ : c_.CO, KW = c_.KW, CI = c_.CI, CO = c_.CO;
    for (uint64_t g = 0; g < G_; ++g) {
      std::vector<float> t(K_ * cols, 0.0f);
      for (uint64_t s = 0; s < S_ && g * S_ + s < c_.KH; ++s)
        for (uint64_t o = 0; o < (two_px_ ? 2 : 1); ++o)
          for (uint64_t dx = 0; dx < KW; ++dx)
            for (uint64_t c = 0; c < CI; ++c)
              for (uint64_t co = 0; co < CO; ++co)
                t[(((dx + o * c_.sw) * S_ + s) * CIp_ + c) * cols + o * (C_ / 2) + co] = w_[(((g * S_ + s) * KW + dx) * CI + c) * CO + co];
      for (uint64_t nb = 0; nb < nbs_; ++nb) tiles_[{g, nb}] = cg_.weight_tile(t, K_, cols, 0, nb);
    }
    rows_per_chunk_ = cg_.conv_row_chunk(S_ > 1 ? c_.OH : c_.N * c_.OH, per_row_, nbs_);
  }

  void buffers() {
    // Two pixels: an image's two-pixel rows, spread into the output after its matmuls (+ a
    // row of slack: the second spreading copy reads half a row past the last).
    uint64_t qbytes = two_px_ ? c_.OH * per_row_ * C_ * esz_ + R_ * esz_ : 0;
    q2_ = two_px_ ? cg_.ub_take(qbytes, fmt::format("the two-pixel output of '{}'", layer_)) : 0;
    if (two_px_) cg_.clear(q2_, qbytes);
    // With room (after the pool's output) for a second packed image, image n + 1 loads from
    // HBM while image n's matmuls run (one request per pixel: about 3,000 cycles for a
    // 224 x 224 image on tpu-v4-core) and only its stacking copies wait between images.
    if (!placed_ && S_ > 1 && c_.N > 1 && cg_.ub_.largest_free() >= bytes_ + (1 << 16)) {
      xq2_ = cg_.ub_take(bytes_, fmt::format("the packed input of '{}'", layer_));
      cg_.clear(xq2_, bytes_);
    }
    // With room for a second stacked copy too, image n + 1 is also stacked during image n's
    // matmuls (once its load is done): the next image's matmuls then start at once. Placed,
    // image n + 1 is placed before image n's matmuls and stacked beside them.
    if ((xq2_ || (placed_ && S_ > 1 && c_.N > 1)) && cg_.ub_.largest_free() >= zbytes_ + (1 << 16)) {
      zb2_ = cg_.ub_take(zbytes_, fmt::format("the row-stacked input of '{}'", layer_));
      if (placed_) clear_stack(zb2_);
      else cg_.clear(zb2_, zbytes_);
    }
  }

  // In flight on the spread flag until the next image's matmuls (whose epilogues reuse the
  // two-pixel rows, and whose background pool reads this image) start.
  void spread(uint64_t n) {
    uint64_t row = C_ * esz_, at = y_.base + (n * c_.OH - first_row(n)) * c_.OW * row;
    for (uint64_t h = 0; h < 2; ++h)
      cg_.code("  " + emit::dma_copy(emit::Desc{cg_.new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}]", row,
                                                                        q2_ + h * (C_ / 2) * esz_, at + h * row, c_.OH * per_row_,
                                                                        row, 2 * row))},
                                     reg(0), reg(0), emit::flag(cg_.flags_.spread)));
  }

  // Output rows [q0, q1): without stacking all images at once from the packed image, with
  // it one image at a time from its stacked copy at zb.
  void run_rows(uint64_t q0, uint64_t q1, uint64_t zb, uint64_t row0, std::vector<std::pair<std::string, double>> transfers,
                std::vector<std::pair<std::string, uint64_t>> background) {
    uint64_t OH = c_.OH, Hp = c_.Hp(), Wp = c_.Wp();
    std::vector<Block> blocks;
    for (uint64_t nb = 0; nb < nbs_; ++nb)
      for (uint64_t r0 = q0; r0 < q1; r0 += rows_per_chunk_) {
        uint64_t r1 = std::min(q1, r0 + rows_per_chunk_);
        Block b;
        for (uint64_t g = 0; g < G_; ++g) {
          TileGroup tg{tiles_[{g, nb}], {}};
          for (uint64_t r = r0; r < r1; ++r) {
            uint64_t n = r / OH, oy = r % OH;
            uint64_t src = S_ > 1 ? zb + (oy * c_.sh + g * S_ * c_.dh) / rs_ * Wp * zp_ : xq_ + ((n * Hp + oy * c_.sh + g * c_.dh) * Wp) * pix_;
            tg.steps.push_back({src, per_row_, (two_px_ ? 2 : 1) * c_.sw * zp_, (r - r0) * per_row_, g > 0});
          }
          b.groups.push_back(std::move(tg));
        }
        uint64_t rows = (r1 - r0) * per_row_;
        uint64_t out = two_px_ ? q2_ + (r0 - q0) * per_row_ * C_ * esz_ : y_.base + nb * y_.block_bytes + (r0 - row0) * c_.OW * C_ * cg_.out_esz_;
        uint64_t bias_row = cg_.bias_at(bias_ub_, nb);
        std::string ep = eps_[nb];
        Codegen* cg = &cg_;
        b.epilogue = [cg, rows, bias_row, ep, out](uint32_t m, uint64_t acc_row) { return cg->epilogue(m, acc_row, rows, bias_row, ep, out); };
        blocks.push_back(std::move(b));
      }
    cg_.run_blocks(blocks, true, std::nullopt, std::move(background), {}, std::move(transfers));  // constant weights: the prologue hoists
  }

  // The copies that stack a packed image, on `flag`, and their count.
  std::pair<std::string, uint64_t> stack_copies(uint64_t from, uint64_t to, int flag) {
    std::string text;
    uint64_t copies = 0, Hp = c_.Hp(), Wp = c_.Wp();
    for (uint64_t s = 0; s < S_ && s * c_.dh < Hp; ++s, ++copies) {
      uint64_t rows = std::min(ZH_, ceil_div(Hp - s * c_.dh, rs_));
      std::string d =
          cg_.new_desc(fmt::format("bytes={} dim=[{}, {}, {}] dim=[{}, {}, {}]", pix_, Wp, pix_, zp_, rows, rs_ * Wp * pix_, Wp * zp_));
      text += bundle({emit::li(reg(1), int64_t(from + s * c_.dh * Wp * pix_)), emit::li(reg(2), int64_t(to + s * pix_))}) + "\n";
      text += "  " + emit::dma_copy(emit::Desc{d}, reg(1), reg(2), emit::flag(flag)) + "\n";
    }
    return std::make_pair(text, copies);
  }
  void stack(uint64_t from, uint64_t to) {
    auto [text, copies] = stack_copies(from, to, 1);
    cg_.code_ += text;
    cg_.code("  " + emit::wait(emit::flag(1), copies));
  }

  // The copies that stack the spread image fq_ (stack_copies' rows, read from the image's
  // own rows: the stacked copy's padding stays zero), on `flag`, and their count.
  // The stacked rows [j0, j1) whose slot s holds an image row (j0 * rs + s * dh - pt on).
  std::pair<int64_t, int64_t> stack_rows(uint64_t s) const {
    int64_t H = int64_t(c_.H), rs = int64_t(rs_), off = int64_t(s * c_.dh) - int64_t(c_.pt);
    int64_t j0 = off >= 0 ? 0 : (-off + rs - 1) / rs;
    int64_t j1 = H - 1 - off < 0 ? 0 : std::min<int64_t>(int64_t(ZH_), (H - 1 - off) / rs + 1);
    return {j0, std::max(j0, j1)};
  }
  std::pair<std::string, uint64_t> stack_flat_copies(uint64_t to, int flag) {
    std::string text;
    uint64_t copies = 0, W = c_.W, Wp = c_.Wp();
    int64_t rs = int64_t(rs_);
    for (uint64_t s = 0; s < S_; ++s) {
      auto [j0, j1] = stack_rows(s);
      if (j1 <= j0) continue;
      uint64_t h0 = uint64_t(j0 * rs + int64_t(s * c_.dh) - int64_t(c_.pt));
      std::string d = cg_.new_desc(
          fmt::format("bytes={} dim=[{}, {}, {}] dim=[{}, {}, {}]", pix_, W, pix_, zp_, j1 - j0, uint64_t(rs) * W * pix_, Wp * zp_));
      text += bundle({emit::li(reg(1), int64_t(fq_ + h0 * W * pix_)), emit::li(reg(2), int64_t(to + (uint64_t(j0) * Wp + c_.pl) * zp_ + s * pix_))}) + "\n";
      text += "  " + emit::dma_copy(emit::Desc{d}, reg(1), reg(2), emit::flag(flag)) + "\n";
      ++copies;
    }
    return std::make_pair(text, copies);
  }
  // Zero what stack_flat_copies never writes in a stacked copy (once per layer): the rows
  // above and below those every slot's copy writes, the padding columns between, the slack
  // row; the whole copy if some slot has no image row. (An HBM load of zeros runs at memory
  // speed: the whole of CNN1's stacked copy takes 19.5K cycles on tpu-v1, its border 1.2K.)
  void clear_stack(uint64_t zb) {
    int64_t top = 0, bottom = int64_t(ZH_);
    for (uint64_t s = 0; s < S_; ++s) {
      auto [j0, j1] = stack_rows(s);
      top = std::max(top, j0), bottom = std::min(bottom, j1);
    }
    uint64_t row = c_.Wp() * zp_;
    if (top >= bottom) return cg_.clear(zb, zbytes_);
    uint64_t loads = 0;
    cg_.clear_frame(zb, ZH_, c_.Wp(), uint64_t(top), ZH_ - uint64_t(bottom), c_.pl, c_.pr, zp_, cg_.zero_hbm_, &loads);
    clear_slack(zb + ZH_ * row, loads);
  }
  // The slack row after a buffer, zeroed beside `loads` zeroing loads on f1; waits for all.
  void clear_slack(uint64_t at, uint64_t loads) {
    std::string d = cg_.new_desc(fmt::format("bytes={} src_off={} dst_off={}", R_ * esz_, cg_.zero_hbm_, at));
    cg_.code("  " + emit::dma_load({d}, reg(0), reg(0), emit::flag(1)));
    cg_.code("  " + emit::wait(emit::flag(1), loads + 1));
  }
  // The loaded image placed, and stacked into zb (waited).
  void place_and_stack(uint64_t zb) {
    place();
    auto [text, copies] = stack_flat_copies(zb, 1);
    cg_.code_ += text;
    cg_.code("  " + emit::wait(emit::flag(1), copies));
  }
  // Image 0 placed and stacked; with a second stacked copy, image 1's load under way.
  void first_placed_image() {
    load_raw(0, raw_piece_count(), 1, true);
    place_and_stack(zb_);
    if (zb2_ && c_.N > 1) load_raw(1, raw_piece_count(), cg_.flags_.loaded, false);
  }
  // Before image n's matmuls (placed): without a second stacked copy, image n (loaded beside
  // image n - 1's matmuls) placed and stacked; with one, image n + 1 placed now (it loaded
  // beside image n - 1's matmuls) and stacked beside image n's, image n + 2 loading there too.
  // Returns the stacked copy image n's matmuls read, and the transfers beside them.
  std::pair<uint64_t, std::vector<std::pair<std::string, double>>> prepare_placed(uint64_t n) {
    uint64_t N = c_.N, pieces = raw_piece_count();
    std::vector<std::pair<std::string, double>> next;
    if (!zb2_) {
      if (n > 0) {
        cg_.code("  " + emit::wait(emit::flag(cg_.flags_.loaded), pieces));
        place_and_stack(zb_);
      }
      if (n + 1 < N) next = raw_pieces(n + 1, pieces, cg_.flags_.loaded);
      return {zb_, next};
    }
    uint64_t z = n % 2 ? zb2_ : zb_, other = n % 2 ? zb_ : zb2_;
    if (n > 0) cg_.code("  " + emit::wait(emit::flag(cg_.flags_.stacked), stacked_));  // fq_ is free
    if (n + 1 < N) {
      cg_.code("  " + emit::wait(emit::flag(cg_.flags_.loaded), pieces));
      place();
      auto [text, copies] = stack_flat_copies(other, cg_.flags_.stacked);
      next.push_back({text, 0.0});
      stacked_ = copies;
      if (n + 2 < N) {
        auto raw = raw_pieces(n + 2, pieces, cg_.flags_.loaded);  // rq_ is free: image n + 1 is placed
        next.insert(next.end(), raw.begin(), raw.end());
      }
    }
    return {z, next};
  }

  // Image n's matmuls from its stacked copy, with the next image's load and stacking (and
  // the pool of the previous image) beside them.
  void run_image(uint64_t n) {
    uint64_t N = c_.N, OH = c_.OH;
    auto [z, next] = placed_ ? prepare_placed(n) : prepare_packed(n);
    if (two_px_ && n > 0) cg_.code("  " + emit::wait(emit::flag(cg_.flags_.spread), 2));
    run_rows(n * OH, (n + 1) * OH, z, first_row(n), std::move(next),
             pool_ && n > 0 ? cg_.pool_ops(*pool_, y_, py_, int64_t(n) - 1, int64_t(n), first_row(n - 1) / OH)
                            : std::vector<std::pair<std::string, uint64_t>>{});
    if (two_px_) spread(n);
    if (two_px_ && n + 1 == N) cg_.code("  " + emit::wait(emit::flag(cg_.flags_.spread), 2));
  }

  // Before image n's matmuls (loaded per pixel): its load and stacking, or the next image's
  // load (and stacking) as transfers beside them.
  std::pair<uint64_t, std::vector<std::pair<std::string, double>>> prepare_packed(uint64_t n) {
    uint64_t N = c_.N, H = c_.H;
    uint64_t packed = xq2_ && n % 2 ? xq2_ : xq_, other = packed == xq_ ? xq2_ : xq_;
    uint64_t z = zb2_ && n % 2 ? zb2_ : zb_;
    // run_blocks has waited for every matmul of the previous image: its stacked copy is free.
    if (!xq2_) {
      load_image(n, xq_);
      stack(xq_, zb_);
    } else if (!zb2_) {
      if (n > 0) cg_.code("  " + emit::wait(emit::flag(cg_.flags_.loaded), pieces_));
      stack(packed, zb_);
    } else if (n > 0) {
      cg_.code("  " + emit::wait(emit::flag(cg_.flags_.stacked), stacked_));
    }
    std::vector<std::pair<std::string, double>> next;
    for (uint64_t i = 0; xq2_ && n + 1 < N && i < pieces_; ++i)  // into the other packed image, free now
      next.push_back({load_rows(n + 1, other, i * H / pieces_, (i + 1) * H / pieces_, cg_.flags_.loaded), double(i + 1) / double(pieces_)});
    if (zb2_ && n + 1 < N) {
      auto [text, copies] = stack_copies(other, z == zb_ ? zb2_ : zb_, cg_.flags_.stacked);
      next.push_back({"  " + emit::wait(emit::flag(cg_.flags_.loaded), pieces_) + "\n" + text, 1.0});
      stacked_ = copies;
    }
    return {z, next};
  }

  void finish() {
    uint64_t N = c_.N;
    if (pool_)
      for (auto& [text, occ] : cg_.pool_ops(*pool_, y_, py_, int64_t(N) - 1, int64_t(N), first_row(N - 1) / c_.OH)) {
        cg_.code_ += with_flag(text, cg_.flags_.vector);
        cg_.code("  " + emit::wait(emit::flag(cg_.flags_.vector)));
      }
    cg_.ub_.release(bias_ub_);
    if (has_xq_) cg_.ub_.release(xq_);
    if (placed_ && S_ > 1) cg_.ub_.release(fq_), cg_.ub_.release(rq_);
    if (S_ > 1) cg_.ub_.release(zb_);
    if (xq2_) cg_.ub_.release(xq2_);
    if (zb2_) cg_.ub_.release(zb2_);
    if (two_px_) cg_.ub_.release(q2_);
    cg_.add_bound(layer_, conv_useful_macs(op_), c_.KH * c_.KW * c_.CI * c_.CO * esz_ + N * c_.H * c_.W * c_.CI * esz_);
    cg_.define(op_.getOutput(), y_);
  }

  Codegen& cg_;
  tpu::Conv2DOp op_;
  uint64_t hbm_;  // the model input, in HBM
  std::string layer_;
  ConvShape c_;
  uint64_t R_, C_, esz_;
  uint64_t CIp_ = 0, pix_ = 0, span_ = 0, S_ = 1;  // channels rounded to a word, a pixel's bytes, taps per row, stacked rows
  bool two_px_ = false;
  uint64_t bytes_ = 0, xq_ = 0, xq2_ = 0;  // packed images
  bool has_xq_ = false;
  uint64_t P_ = 0, rq_ = 0, fq_ = 0;  // the placement: pixels per row, the loaded and the spread image
  bool placed_ = false;
  TileRef place_tile_;
  std::string place_ep_;
  std::vector<float> w_, bias_;
  std::vector<double> acc_scale_;
  std::optional<tpu::PoolOp> pool_;
  Act py_, y_;
  uint64_t bias_ub_ = Codegen::kNoBias;
  std::vector<std::string> eps_;
  uint64_t G_ = 0, zp_ = 0, nbs_ = 0, K_ = 0, per_row_ = 0, rs_ = 1, ZH_ = 0, zbytes_ = 0, zb_ = 0, zb2_ = 0;  // stacking
  std::map<std::pair<uint64_t, uint64_t>, TileRef> tiles_;
  uint64_t rows_per_chunk_ = 0, q2_ = 0, pieces_ = 0, stacked_ = 0;
};

void Codegen::gen_conv_packed(tpu::Conv2DOp op, uint64_t hbm) { PackedConv(*this, op, hbm).run(); }

}  // namespace vtpu::compiler::codegen
