#pragma once
// Small questions about the tpu-dialect IR that the planner (plan.cpp) and the emitter both
// ask; defined once, in plan.cpp, or for one op family in that family's file.
#include <cstdint>
#include <optional>
#include <vector>

#include "mlir/IR/Value.h"
#include "dialect/tpu_dialect.h"
#include "vtpu/config/config.h"

namespace vtpu::compiler::codegen {

std::vector<int64_t> shape_of(mlir::Value v);
uint64_t numel(const std::vector<int64_t>& shape);
bool is_int32(mlir::Value v);  // an integer tensor (int32 rows)

// v, or what it becomes through reshapes that are each its only user and keep the last
// dimension (so the blocked layout's rows stay the same: aliases, no data moves).
mlir::Value through_row_reshapes(mlir::Value v);

// The head split reshape of `v` (v's only user) when attention's head split and transpose
// ([B, S, H*d] -> [B, S, H, d] -> [B, H, S, d]) feed only batch matmuls (through reshapes
// that keep the rows) and heads never straddle lane blocks of `lanes` (d a multiple or a
// divisor of it): the batch matmuls can read the heads in place (attention.cpp).
std::optional<tpu::ReshapeOp> head_view_split(mlir::Value v, uint64_t lanes);

// The batch-matmul right-hand side v becomes through reshapes that keep the rows (its only
// use chain), when it goes nowhere else (nor to that batch matmul's left-hand side).
std::optional<mlir::Value> rhs_target(mlir::Value v);

// A convolution's sizes: NHWC input [N, H, W, CI], weights [KH, KW, CIg = CI / G, CO],
// output [N, OH, OW, CO]; stride (sh, sw), dilation (dh, dw), pads (pt, pb, pl, pr).
struct ConvShape {
  uint64_t N = 0, H = 0, W = 0, CI = 0, KH = 0, KW = 0, CIg = 0, CO = 0, OH = 0, OW = 0, G = 1;
  uint64_t sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pb = 0, pl = 0, pr = 0;
  uint64_t Hp() const { return H + pt + pb; }  // the padded image's
  uint64_t Wp() const { return W + pl + pr; }
  // A "same" convolution: stride and dilation 1, an odd kernel, centred pads.
  bool same() const {
    return sh == 1 && sw == 1 && dh == 1 && dw == 1 && KH % 2 == 1 && KW % 2 == 1 && pt == (KH - 1) / 2 && pb == pt &&
           pl == (KW - 1) / 2 && pr == pl;
  }
};
ConvShape conv_shape(tpu::Conv2DOp op);  // conv.cpp

// Useful MACs (docs/reports.md) of convolutions (conv.cpp). Along one axis of an input, the
// positions holding a pixel: first + i * step for i in [0, n) (step 1 and first 0 for an
// image; a transposed convolution's spread input has zeros between).
struct PixelAxis {
  uint64_t first = 0, step = 1, n = 0;
};
// Where a transposed convolution's spread (tpu.zero_insert) puts its input's pixels.
std::pair<PixelAxis, PixelAxis> spread_axes(tpu::ZeroInsertOp z);
// Taps on a pixel of output positions [o0, o1) of a window of `k` taps, `stride`, `dil`, the
// input padded by `before`.
uint64_t taps_on_pixels(uint64_t o0, uint64_t o1, const PixelAxis& a, uint64_t k, uint64_t stride, uint64_t before, uint64_t dil);

// How a convolution is generated, for `cfg` with `esz`-byte elements: packed from HBM
// (conv_packed.cpp: packable, and packed_input for the model input only such convolutions
// read, packed_view for a band of its rows), two output pixels per matmul row
// (conv_wide.cpp: wide_conv, padding_lanes_unread), else by taps (conv.cpp). The first two keep to output rows that fit an accumulator region
// (`acc_region` pixels: half the accumulator rows); wider rows go by taps, in column pieces.
inline uint64_t acc_region(const config::Config& cfg) { return cfg.core.accumulators.rows / 2; }
// The table functions whose value at 0 (the padding lanes' value) is not finite.
inline bool infinite_at_zero(const std::string& fn) { return fn == "log" || fn == "recip" || fn == "rsqrt"; }
bool packable(tpu::Conv2DOp op, uint64_t R, uint64_t esz, uint64_t acc_region);
bool packed_input(mlir::Value arg, uint64_t R, uint64_t esz, uint64_t acc_region);
bool packed_view(mlir::Value v, uint64_t R, uint64_t esz, uint64_t acc_region);
bool padding_lanes_unread(mlir::Value v);
bool wide_conv(tpu::Conv2DOp op, const config::Config& cfg, uint64_t esz);

// A packed convolution's matmul rows (conv_packed.cpp), for `cfg` with `esz`-byte elements:
// its input channels rounded to a word (CIp), the taps side by side in a row (span), two
// output pixels per row (two_px), kernel rows stacked in a row (S); and for INT8, the image
// pixels one row of the placement matmul spreads into packed pixels (placed: C / CIp, so a
// row of its output is C lanes of whole pixels; 0 where that does not work).
struct PackedRows {
  uint64_t CIp = 0, span = 0, S = 1, placed = 0;
  bool two_px = false;
};
PackedRows packed_rows(tpu::Conv2DOp op, const config::Config& cfg, uint64_t esz);

}  // namespace vtpu::compiler::codegen
