// Resizes and the zero insertion of transposed convolutions (docs/compiler.md, "Code generation").
#include "codegen_internal.h"

namespace vtpu::compiler::codegen {

// The spread-out image of a transposed convolution: cleared, then each input image row
// copied in one DMA whose destination steps `stride` pixels.
void Codegen::gen_zero_insert(tpu::ZeroInsertOp op) {
  std::string layer = op.getLayer().str();
  if (op->hasAttr(tpu::kInPlaceAttr)) {  // its convolution runs in phases (pipeline/band_subpixel.cpp): a row of its own, no work
    own_rows_.insert(band_key(layer, "zero_insert"));
    return add_bound(layer, 0, 0);
  }
  tag(layer);
  const Act& x = act(op.getInput());
  Act y = new_act(shape_of(op.getOutput()), fmt::format("the spread input of '{}'", layer));
  clear(y.base, y.bytes());
  uint64_t N = uint64_t(x.shape[0]), H = uint64_t(x.shape[1]), W = uint64_t(x.shape[2]);
  uint64_t OH = uint64_t(y.shape[1]), OW = uint64_t(y.shape[2]), px = R_ * esz_;
  auto st = op.getStride(), pd = op.getPad();
  std::string shape = W > 1 ? fmt::format("bytes={} dim=[{}, {}, {}]", px, W, px, uint64_t(st[1]) * px) : fmt::format("bytes={}", px);
  for (uint64_t b = 0; b < x.blocks; ++b)
    for (uint64_t n = 0; n < N; ++n)
      for (uint64_t iy = 0; iy < H; ++iy) {
        uint64_t src = x.base + b * x.block_bytes + (n * H + iy) * W * px;
        uint64_t dst = y.base + b * y.block_bytes + ((n * OH + uint64_t(pd[0]) + iy * uint64_t(st[0])) * OW + uint64_t(pd[2])) * px;
        ub_copy(src, dst, shape);
      }
  add_bound(layer, 0, 0);
  define(op.getOutput(), y);
}

// Nearest-neighbour resize as unified-buffer copies of pixel rows (R lanes each), per output
// image row and lane block: runs of output pixels whose sources repeat (upsampling: source
// step 0) or advance by one pixel, and the common integer upsampling (each source pixel f
// times) as one two-level copy of the whole row.
void Codegen::gen_resize(tpu::ResizeNearestOp op) {
  std::string layer = op.getLayer().str();
  tag(layer);
  const Act& x = act(op.getInput());
  Act y = new_act(shape_of(op.getOutput()), fmt::format("the output of '{}'", layer));
  uint64_t N = uint64_t(x.shape[0]), H = uint64_t(x.shape[1]), W = uint64_t(x.shape[2]);
  uint64_t OH = uint64_t(y.shape[1]), OW = uint64_t(y.shape[2]), px = R_ * esz_;
  auto rows = op.getRows(), cols = op.getCols();
  // Integer upsampling of the row: cols[o] = o / f and OW = W * f.
  uint64_t f = OW % W == 0 ? OW / W : 0;
  for (uint64_t o = 0; f && o < OW; ++o)
    if (uint64_t(cols[o]) != o / f) f = 0;
  std::vector<std::pair<uint64_t, std::string>> runs;  // (first output pixel, copy shape)
  if (f) {
    runs.push_back({0, fmt::format("bytes={} dim=[{}, 0, {}] dim=[{}, {}, {}]", px, f, px, W, px, f * px)});
  } else {
    for (uint64_t o = 0; o < OW;) {
      uint64_t len = 1;
      int64_t step = o + 1 < OW ? cols[o + 1] - cols[o] : 0;
      if (step != 0 && step != 1) step = 0;
      while (o + len < OW && cols[o + len] - cols[o + len - 1] == step) ++len;
      runs.push_back({o, len > 1 ? fmt::format("bytes={} dim=[{}, {}, {}]", px, len, uint64_t(step) * px, px)
                                 : fmt::format("bytes={}", px)});
      o += len;
    }
  }
  for (uint64_t b = 0; b < x.blocks; ++b)
    for (uint64_t n = 0; n < N; ++n)
      for (uint64_t oy = 0; oy < OH; ++oy)
        for (const auto& [o, shape] : runs) {
          uint64_t src = x.base + b * x.block_bytes + ((n * H + uint64_t(rows[oy])) * W + uint64_t(cols[o])) * px;
          uint64_t dst = y.base + b * y.block_bytes + ((n * OH + oy) * OW + o) * px;
          ub_copy(src, dst, shape);
        }
  add_bound(layer, 0, 0);
  define(op.getOutput(), y);
}

}  // namespace vtpu::compiler::codegen
