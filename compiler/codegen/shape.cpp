// Layout ops: broadcast, slice, concat, transpose, reshape (docs/compiler.md, "Code generation").
#include "codegen_internal.h"

namespace vtpu::compiler::codegen {

// Rows of the output copied from the input's rows by DMA inside the unified buffer: a run
// of output rows reads either consecutive input rows (one contiguous copy) or the same row
// again (a copy with source stride 0). Lanes never move, so each block is copied alike.
void Codegen::gen_broadcast(tpu::BroadcastOp op) {
  std::string layer = op.getLayer().str();
  tag(layer);
  const Act& x = act(op.getInput());
  auto ys = shape_of(op.getOutput());
  Act y = new_act(ys, fmt::format("the output of '{}'", layer));
  struct Run {
    uint64_t dst, src, count;
    int64_t step;
  };
  std::vector<Run> runs;
  size_t nd = ys.size() - 1;  // row dimensions
  for (uint64_t r = 0; r < y.rows; ++r) {
    uint64_t rem = r, src = 0, stride = 1;
    for (size_t d = nd; d-- > 0;) {
      uint64_t idx = rem % uint64_t(ys[d]);
      rem /= uint64_t(ys[d]);
      if (x.shape[d] != 1) src += idx * stride;
      stride *= uint64_t(x.shape[d]);
    }
    if (!runs.empty()) {
      Run& b = runs.back();
      if (b.count == 1 && (src == b.src || src == b.src + 1)) {
        b.step = int64_t(src - b.src), b.count = 2;
        continue;
      }
      if (b.count > 1 && int64_t(src) == int64_t(b.src) + b.step * int64_t(b.count)) {
        ++b.count;
        continue;
      }
    }
    runs.push_back({r, src, 1, 1});
  }
  uint64_t rowb = R_ * esz_;
  for (uint64_t blk = 0; blk < y.blocks; ++blk)
    for (const Run& run : runs) {
      uint64_t so = x.base + blk * x.block_bytes + run.src * rowb, dof = y.base + blk * y.block_bytes + run.dst * rowb;
      ub_copy(so, dof, run.step == 1 ? fmt::format("bytes={}", run.count * rowb)
                                     : fmt::format("bytes={} dim=[{}, 0, {}]", rowb, run.count, rowb));
    }
  add_bound(layer, 0, 0);
  define(op.getOutput(), y);
}

// Slice by unified-buffer DMA: runs of output rows read consecutive input rows; whole rows
// when the lanes are kept, else lane columns of fp32 copies (as in gen_concat).
void Codegen::gen_slice(tpu::SliceOp op) {
  std::string layer = op.getLayer().str();
  if (op->hasAttr(tpu::kInPlaceAttr)) return add_bound(layer, 0, 0);  // its readers load its channels (bands.cpp)
  tag(layer);
  const Act& x = act(op.getInput());
  auto ys = shape_of(op.getOutput());
  auto start = op.getStart();
  Act y = new_act(ys, fmt::format("the output of '{}'", layer));
  size_t r = ys.size();
  struct Run {
    uint64_t dst, src, count;
  };
  std::vector<Run> runs;
  for (uint64_t row = 0; row < y.rows; ++row) {
    uint64_t rem = row, src = 0, stride = 1;
    for (size_t d = r - 1; d-- > 0;) {
      uint64_t idx = rem % uint64_t(ys[d]) + uint64_t(start[d]);
      rem /= uint64_t(ys[d]);
      src += idx * stride;
      stride *= uint64_t(x.shape[d]);
    }
    if (!runs.empty() && runs.back().src + runs.back().count == src) ++runs.back().count;
    else runs.push_back({row, src, 1});
  }
  uint64_t lane0 = uint64_t(start[r - 1]);
  // Whole lane blocks: the slice starts on a block and each of its blocks is full or ends
  // where the input's last (partial) block ends, so the padding lanes copied are the input's.
  if (lane0 % R_ == 0 && (y.features % R_ == 0 || lane0 + y.features == x.features)) {
    uint64_t rowb = R_ * esz_, first = lane0 / R_;
    for (uint64_t blk = 0; blk < y.blocks; ++blk)
      for (const Run& run : runs)
        ub_copy(x.base + (first + blk) * x.block_bytes + run.src * rowb, y.base + blk * y.block_bytes + run.dst * rowb,
                fmt::format("bytes={}", run.count * rowb));
  } else if (lane_words({lane0})) {  // runs of lanes in the activations' own type
    zero_padding_lanes(y);
    for (const Run& run : runs) copy_lanes(x, lane0, run.src, y, 0, run.dst, y.features, run.count, esz_);
    copies_wait();
  } else {
    require_fp32_lane_moves(layer, "a Slice of the last dimension copies");
    Act xt = fp32_twin(x, layer, "slice copies", true), yt = fp32_twin(y, layer, "slice copies", false);
    for (const Run& run : runs) copy_lanes(xt, lane0, run.src, yt, 0, run.dst, y.features, run.count, 4);
    copies_wait();
    ub_.release(xt.base);
    from_fp32_twin(yt, y);
  }
  add_bound(layer, 0, 0);
  define(op.getOutput(), y);
}

// Concat by unified-buffer DMA. Along a row dimension each input lands as runs of whole
// rows; along the lanes, whole lane blocks when every input fills its blocks, else runs of
// lanes (copy_lanes): in the activations' own type when every input starts on a
// unified-buffer word, else in fp32 copies. INT8 inputs are first rescaled to the output's
// scale.
void Codegen::gen_concat(tpu::ConcatOp op) {
  std::string layer = op.getLayer().str();
  tag(layer);
  auto ys = shape_of(op.getOutput());
  Act y = new_act(ys, fmt::format("the output of '{}'", layer));
  size_t r = ys.size(), axis = size_t(op.getAxis());
  bool lanes = axis == r - 1;
  bool blockwise = true;
  std::vector<uint64_t> starts;  // each input's first lane in the output
  for (uint64_t at = 0; Value v : op.getInputs()) {
    blockwise &= act(v).features % R_ == 0;
    starts.push_back(at);
    at += act(v).features;
  }
  bool columns = lanes && !blockwise, twins = columns && !lane_words(starts);
  if (twins) require_fp32_lane_moves(layer, "a Concat along unaligned lanes copies");
  else if (columns) zero_padding_lanes(y);
  uint64_t rowb = R_ * esz_;
  Act yt = twins ? fp32_twin(y, layer, "concat copy", false) : y;
  uint64_t outer = 1, inner = 1;  // row counts around the axis (row dimensions only)
  for (size_t d = 0; d < axis && d + 1 < r; ++d) outer *= uint64_t(ys[d]);
  for (size_t d = axis + 1; d + 1 < r; ++d) inner *= uint64_t(ys[d]);
  uint64_t off = 0;
  for (Value v : op.getInputs()) {
    Act x = act(v);
    uint64_t xtmp = 0;
    double rs = q8_ ? double(scale(v)) / double(scale(op.getOutput())) : 1.0;
    if (twins) {  // fp32 copy of the input, rescaled for INT8
      Act xt = fp32_twin(x, layer, "concat copy", true, q8_ ? std::optional<double>(rs) : std::nullopt);
      copy_lanes(xt, 0, 0, yt, off, 0, x.features, y.rows, 4);
      copies_wait();
      ub_.release(xt.base);
      off += x.features;
      continue;
    }
    if (q8_ && rs != 1.0) {  // rescale into a temporary with the input's layout
      std::optional<uint64_t> t = ub_take(x.bytes(), fmt::format("a rescaled input of '{}'", layer));
      std::string p = new_param(fmt::format("scale=[{}]", rs));
      for (uint64_t blk = 0; blk < x.blocks; ++blk) {
        code(bundle({emit::li(reg(1), int64_t(x.base + blk * x.block_bytes)), emit::li(reg(2), int64_t(*t + blk * x.block_bytes))}));
        vec_wait(emit::vec_affine(ub_reg(2), ub_reg(1), x.rows, isa::Dtype::Int8, emit::Param{p}));
      }
      xtmp = *t;
      x.base = *t;
    }
    if (columns) {  // runs of lanes
      copy_lanes(x, 0, 0, y, off, 0, x.features, y.rows, esz_);
      copies_wait();
      off += x.features;
    } else if (lanes) {  // whole lane blocks
      for (uint64_t blk = 0; blk < x.blocks; ++blk)
        ub_copy(x.base + blk * x.block_bytes, y.base + (off / R_ + blk) * y.block_bytes, fmt::format("bytes={}", x.rows * rowb));
      off += x.features;
    } else {  // runs of rows: `outer` runs of this input's rows, placed after the earlier inputs'
      uint64_t chunk = uint64_t(x.shape[axis]) * inner, out_chunk = uint64_t(ys[axis]) * inner;
      for (uint64_t blk = 0; blk < y.blocks; ++blk)
        ub_copy(x.base + blk * x.block_bytes, y.base + blk * y.block_bytes + off * inner * rowb,
                fmt::format("bytes={} dim=[{}, {}, {}]", chunk * rowb, outer, chunk * rowb, out_chunk * rowb));
      off += uint64_t(x.shape[axis]);
    }
    if (xtmp) ub_.release(xtmp);
  }
  if (twins) from_fp32_twin(yt, y);
  add_bound(layer, 0, 0);
  define(op.getOutput(), y);
}

// Whether lane runs starting at each of `starts` (and at every lane block) begin on
// unified-buffer words in the activations' own type, so DMA can move them as they are.
bool Codegen::lane_words(const std::vector<uint64_t>& starts) const {
  uint64_t al = cfg_.core.unified_buffer.alignment_bytes;
  for (uint64_t s : starts)
    if (s * esz_ % al) return false;
  return true;
}

// Lanes [from, from + lanes) of x's rows [xr, xr + rows) to lanes [to, to + lanes) of y's
// rows [yr, yr + rows): one copy per run of lanes inside one lane block of each, `esz` bytes
// a lane (the activations' own, or 4 in fp32 twins); not waited for (copies_wait).
void Codegen::copy_lanes(const Act& x, uint64_t from, uint64_t xr, const Act& y, uint64_t to, uint64_t yr, uint64_t lanes,
                         uint64_t rows, uint64_t esz) {
  uint64_t rowb = R_ * esz;
  for (uint64_t c = 0; c < lanes;) {
    uint64_t s = from + c, d = to + c, n = std::min({R_ - s % R_, R_ - d % R_, lanes - c});
    ub_copy_async(x.base + s / R_ * x.block_bytes + xr * rowb + s % R_ * esz,
                  y.base + d / R_ * y.block_bytes + yr * rowb + d % R_ * esz,
                  rows > 1 ? fmt::format("bytes={} dim=[{}, {}, {}]", n * esz, rows, rowb, rowb) : fmt::format("bytes={}", n * esz));
    c += n;
  }
}

// The padding lanes of `a`'s last lane block, when partial, set to zero before lane copies
// fill the others: copied from a row of zeros (source stride 0), cheaper than as many short
// rows loaded from HBM. From the unified-buffer word the first padding lane is in: the
// copies then overwrite the valid lanes before it.
void Codegen::zero_padding_lanes(const Act& a) {
  uint64_t used = a.features % R_, rowb = R_ * esz_;
  if (!used || !a.rows) return;
  uint64_t from = used * esz_ / cfg_.core.unified_buffer.alignment_bytes * cfg_.core.unified_buffer.alignment_bytes;
  uint64_t zero = ub_take(rowb, "a row of zeros");
  clear(zero, rowb);
  ub_copy(zero, a.base + (a.blocks - 1) * a.block_bytes + from, fmt::format("bytes={} dim=[{}, 0, {}]", rowb - from, a.rows, rowb));
  ub_.release(zero);
}

void Codegen::gen_transpose(tpu::TransposeOp op) {
  if (heads(op) == "merge") return merge_heads(op);  // planned (plan.cpp, heads)
  std::string layer = op.getLayer().str();
  tag(layer);
  const Act& x0 = act(op.getInput());
  auto ys = shape_of(op.getOutput());
  auto perm = op.getPerm();
  Act y0 = new_act(ys, fmt::format("the output of '{}'", layer));
  size_t r = ys.size();
  std::vector<uint64_t> row_stride(r, 0);  // input rows per step of each row dimension
  for (size_t d = r - 1, s = 1; d-- > 0;) row_stride[d] = s, s *= uint64_t(x0.shape[d]);
  size_t lane_src = size_t(perm[r - 1]);  // input dimension that becomes the lanes
  bool gather = lane_src != r - 1;
  uint64_t esz = gather ? 4 : esz_;
  // Gathers go through fp32 twins of input and output. When both would not fit the free
  // unified buffer at once and the leading dimension stays in place (attention's K^T
  // [B, H, S, d] -> [B, H, d, S]), they go a range of leading slices at a time.
  uint64_t nl = uint64_t(ys[0]), per_chunk = nl;
  if (gather && perm[0] == 0) {
    auto twin_bytes = [&](uint64_t c) {
      return x0.blocks * align_up(x0.rows / nl * c * R_ * 4, block_align_) + y0.blocks * align_up(y0.rows / nl * c * R_ * 4, block_align_);
    };
    while (per_chunk > 1 && twin_bytes(per_chunk) > ub_.largest_free()) per_chunk = (per_chunk + 1) / 2;
  }
  for (uint64_t l0 = 0; l0 < nl; l0 += per_chunk) {
    uint64_t nc = std::min(per_chunk, nl - l0);
    Act xv = x0, yv = y0;  // the chunk's leading slices (all of them unless chunked)
    if (nc < nl) {
      xv.rows = x0.rows / nl * nc, xv.base = x0.base + l0 * (x0.rows / nl) * R_ * esz_;
      yv.rows = y0.rows / nl * nc, yv.base = y0.base + l0 * (y0.rows / nl) * R_ * esz_;
    }
    ys[0] = int64_t(nc);
    Act x = xv, y = yv;
    if (gather) {
      require_fp32_lane_moves(layer, "a transpose that moves the last dimension gathers");
      x = fp32_twin(xv, layer, "transpose copies", true);
      y = fp32_twin(yv, layer, "transpose copies", false);
    }
    uint64_t rowb = R_ * esz;
    std::vector<uint64_t> o(r, 0);
    // Output rows go in runs along the innermost row dimension (r - 2): one copy moves a
    // run, its rows stepping through the input by a whole row stride, or (when that
    // dimension was the input's last) by one lane within a lane block.
    size_t inner = r - 2;
    bool lane_steps = size_t(perm[inner]) == r - 1;
    uint64_t inner_len = uint64_t(ys[inner]);
    if (!gather && r >= 3) {
      // Rows only move: a second dimension of runs, along the longest other row dimension,
      // so a head split or merge ([B, S, H, d] <-> [B, H, S, d]) is one copy per batch.
      size_t k2 = 0;
      for (size_t k = 0; k < inner; ++k)
        if (ys[k] > ys[k2]) k2 = k;
      uint64_t dst_k2 = rowb;
      for (size_t j = k2 + 1; j + 1 < r; ++j) dst_k2 *= uint64_t(ys[j]);
      std::string shape_tail = fmt::format(" dim=[{}, {}, {}] dim=[{}, {}, {}]", inner_len, row_stride[size_t(perm[inner])] * rowb,
                                           rowb, ys[k2], row_stride[size_t(perm[k2])] * rowb, dst_k2);
      for (uint64_t row = 0; row < y.rows; row += inner_len) {
        uint64_t rem = row;
        for (size_t k = r - 1; k-- > 0;) o[k] = rem % uint64_t(ys[k]), rem /= uint64_t(ys[k]);
        if (o[k2] != 0) continue;
        uint64_t in_row = 0;
        for (size_t k = 0; k + 1 < r; ++k) in_row += o[k] * row_stride[size_t(perm[k])];
        for (uint64_t blk = 0; blk < y.blocks; ++blk) {
          uint64_t cnt = std::min<uint64_t>(R_, y.features - blk * R_);
          ub_copy_async(x.base + blk * x.block_bytes + in_row * rowb, y.base + blk * y.block_bytes + row * rowb,
                        fmt::format("bytes={}{}", cnt * esz, shape_tail));
        }
      }
      copies_wait();
      add_bound(layer, 0, 0);
      define(op.getOutput(), y0);
      return;
    }
    for (uint64_t row = 0; row < y.rows;) {
      uint64_t rem = row;
      for (size_t k = r - 1; k-- > 0;) o[k] = rem % uint64_t(ys[k]), rem /= uint64_t(ys[k]);
      // The input element at output lane 0: input index i[perm[k]] = o[k].
      uint64_t in_row = 0, in_lane = 0;
      for (size_t k = 0; k + 1 < r; ++k) {
        if (size_t(perm[k]) == r - 1) in_lane = o[k];
        else in_row += o[k] * row_stride[size_t(perm[k])];
      }
      uint64_t run = inner_len - o[inner];
      if (lane_steps) run = std::min(run, R_ - in_lane % R_);
      uint64_t step = lane_steps ? esz : row_stride[size_t(perm[inner])] * rowb;
      for (uint64_t blk = 0; blk < y.blocks; ++blk) {
        uint64_t first = blk * R_, cnt = std::min<uint64_t>(R_, y.features - first);
        uint64_t dst = y.base + blk * y.block_bytes + row * rowb;
        std::string rows_dim = run > 1 ? fmt::format(" dim=[{}, {}, {}]", run, step, rowb) : "";
        if (!gather) {
          ub_copy_async(x.base + blk * x.block_bytes + in_row * rowb, dst, fmt::format("bytes={}{}", cnt * esz, rows_dim));
        } else {
          uint64_t src = x.base + (in_lane / R_) * x.block_bytes + (in_row + first * row_stride[lane_src]) * rowb +
                         (in_lane % R_) * esz;
          ub_copy_async(src, dst, fmt::format("bytes={} dim=[{}, {}, {}]{}", esz, cnt, row_stride[lane_src] * rowb, esz, rows_dim));
        }
      }
      row += run;
    }
    copies_wait();
    if (gather) {
      ub_.release(x.base);
      from_fp32_twin(y, yv);
    }
  }
  add_bound(layer, 0, 0);
  define(op.getOutput(), y0);
}

// A reshape that only regroups the last dimension (attention's [S, H*d] <-> [S, H, d]):
// row-major order is kept, so with y's rows a split of x's (b = y.features dividing
// x.features) output row (r, j) is x row r's lanes [j*b, j*b + b), and a merge is the
// reverse. Unified-buffer copies of lane runs, one per run for all rows at once; nothing
// when some run would not start on a unified-buffer word (then it goes through HBM).
std::optional<Act> Codegen::split_or_merge_rows(const Act& x, const std::vector<int64_t>& ys, const std::string& layer,
                                       bool clear_padding) {
  uint64_t yf = uint64_t(ys.back()), align = cfg_.core.unified_buffer.alignment_bytes;
  bool split = yf < x.features && x.features % yf == 0, merge = yf > x.features && yf % x.features == 0;
  if (!split && !merge) return std::nullopt;
  uint64_t b = split ? yf : x.features, a = split ? x.features / yf : yf / x.features;
  struct Run {
    uint64_t j, wide_lane, narrow_lane, lanes;  // narrow row j of a wide row, lanes [wide_lane, +lanes)
  };
  std::vector<Run> runs;
  for (uint64_t j = 0; j < a; ++j)
    for (uint64_t o = 0; o < b;) {
      uint64_t L = j * b + o, n = std::min({R_ - L % R_, R_ - o % R_, b - o});
      if ((L % R_) * esz_ % align || (o % R_) * esz_ % align) return std::nullopt;
      runs.push_back({j, L, o, n});
      o += n;
    }
  Act y = new_act(ys, fmt::format("the output of '{}'", layer));
  if (y.features % R_ && clear_padding) clear(y.base + (y.blocks - 1) * y.block_bytes, y.block_bytes);
  const Act& wide = split ? x : y;
  const Act& narrow = split ? y : x;
  uint64_t wide_stride = R_ * esz_, narrow_stride = a * R_ * esz_;
  for (const Run& r : runs) {
    uint64_t wide_at = wide.base + (r.wide_lane / R_) * wide.block_bytes + (r.wide_lane % R_) * esz_;
    uint64_t narrow_at =
        narrow.base + (r.narrow_lane / R_) * narrow.block_bytes + r.j * R_ * esz_ + (r.narrow_lane % R_) * esz_;
    std::string shape = fmt::format("bytes={} dim=[{}, {}, {}]", r.lanes * esz_, wide.rows, split ? wide_stride : narrow_stride,
                                    split ? narrow_stride : wide_stride);
    if (split) ub_copy_async(wide_at, narrow_at, shape);
    else ub_copy_async(narrow_at, wide_at, shape);
  }
  copies_wait();
  add_bound(layer, 0, 0);
  return y;
}

void Codegen::gen_reshape(tpu::ReshapeOp op) {
  if (gen_hbm_reshape(op)) return;  // an image in HBM seen in another shape (bands.cpp)
  std::string layer = op.getLayer().str();
  const Act& x = act(op.getInput());
  auto ys = shape_of(op.getOutput());
  if (uint64_t(ys.back()) == x.features) {  // same rows x features: an alias
    Act y = x;
    y.shape = ys;
    y.rows = numel(ys) / y.features;
    define(op.getOutput(), y);  // release() frees the shared base when neither is used
    if (const HeadView* hv = view_of(op.getInput())) views_[op.getOutput().getAsOpaquePointer()] = *hv;
    return;
  }
  tag(layer);
  if (heads(op) == "view") return make_head_view(op, x);  // planned (plan.cpp, heads)
  if (heads(op) == "transpose") return make_head_transpose(op, x);
  // The lowering only reshapes an image to 2-D for a matmul that expects NHWC order.
  uint64_t lanes_per_word = std::max<uint64_t>(1, cfg_.core.unified_buffer.alignment_bytes / esz_);
  bool image_flatten = x.shape.size() == 4 && ys.size() == 2 && uint64_t(ys[0]) == uint64_t(x.shape[0]) &&
                       x.features % lanes_per_word == 0;
  if (!image_flatten) {
    // Transposes copy only the valid lanes of their input, so a head split feeding them
    // need not clear its padding lanes (a load of zeros as large as the output block).
    bool only_transposes = !op.getOutput().use_empty();
    for (mlir::Operation* u : op.getOutput().getUsers()) only_transposes &= mlir::isa<tpu::TransposeOp>(u);
    if (auto y = split_or_merge_rows(x, ys, layer, !only_transposes)) return define(op.getOutput(), *y);
    // Any other reshape: through HBM, stored row-major and reloaded in the new shape.
    uint64_t scratch = hbm_alloc(x.rows * x.features * esz_);
    store_act(x, scratch);
    Act y = new_act(ys, fmt::format("the output of '{}'", layer));
    load_act(y, scratch);
    add_bound(layer, 0, 2 * x.rows * x.features * esz_);
    define(op.getOutput(), y);
    return;
  }
  // Flatten an NHWC image [N, H, W, C] to [N, H*W*C]: row n gathers its pixels' channels.
  Act y = new_act(ys, fmt::format("the output of '{}'", layer));
  clear(y.base, y.bytes());
  uint64_t P = uint64_t(x.shape[1] * x.shape[2]), Cc = x.features, N = uint64_t(x.shape[0]);
  for (uint64_t n = 0; n < N; ++n)
    for (uint64_t b = 0; b < x.blocks; ++b) {
      uint64_t fw = std::min<uint64_t>(R_, Cc - b * R_);
      // Element (p, c) of image n goes to flat index p*C + c: block (p*C + c) / R, lane % R.
      // Rows of the flat tensor are images, so within a block element i sits at lane i % R
      // of row n: the whole flat row is contiguous only per block; copy pixel by pixel
      // when a pixel's channels straddle blocks.
      for (uint64_t p = 0; p < P; ++p) {
        uint64_t flat = p * Cc + b * R_;
        uint64_t yb = flat / R_, lane = flat % R_;
        uint64_t src = x.base + b * x.block_bytes + (n * P + p) * R_ * esz_;
        uint64_t first = std::min(fw, R_ - lane);
        uint64_t dst = y.base + yb * y.block_bytes + n * R_ * esz_ + lane * esz_;
        copy_bytes(src, dst, first * esz_);
        if (first < fw) copy_bytes(src + first * esz_, y.base + (yb + 1) * y.block_bytes + n * R_ * esz_, (fw - first) * esz_);
      }
    }
  add_bound(layer, 0, 0);
  define(op.getOutput(), y);
}

void Codegen::copy_bytes(uint64_t src, uint64_t dst, uint64_t bytes) {
  uint64_t al = cfg_.core.unified_buffer.alignment_bytes;
  if (src % al || dst % al)
    throw CompileError(fmt::format("a flatten needs unaligned unified-buffer copies (alignment {}); channel counts "
                                   "should be multiples of {}",
                                   al, al / esz_));
  std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={}", bytes, src, dst));
  code("  " + emit::dma_copy(emit::Desc{d}, reg(0), reg(0), emit::flag(1)));
  code("  " + emit::wait(emit::flag(1)));
}

}  // namespace vtpu::compiler::codegen
