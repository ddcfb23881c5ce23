// Reference semantics of tpu.conv2d and tpu.zero_insert.
#include <algorithm>

#include "reference/interpreter.h"

namespace vtpu::compiler::reference {

using mlir::Value;
using tpu::shape_of;

namespace {

// One group: kConvPixels neighbouring output pixels of row (nn, oy) from ox0 at a time, so that
// each weight row is read once for all of them (a deep layer's weights do not stay in cache from
// one pixel to the next). Each output's sum runs over taps and input channels in the same order
// as one pixel at a time, so the values are the same.
VTPU_REFERENCE_KERNEL void conv_pixels(const RefTensor& x, const float* w, const std::vector<float>& b, int64_t KH, int64_t KW,
                                       int64_t CO, llvm::ArrayRef<int64_t> st, llvm::ArrayRef<int64_t> pad,
                                       llvm::ArrayRef<int64_t> dil, int64_t nn, int64_t oy, int64_t ox0, int64_t P, double* a) {
  int64_t H = x.shape[1], W = x.shape[2], CI = x.shape[3];
  for (int64_t p = 0; p < P; ++p)
    for (int64_t co = 0; co < CO; ++co) a[p * CO + co] = b[size_t(co)];
  for (int64_t ky = 0; ky < KH; ++ky)
    for (int64_t kx = 0; kx < KW; ++kx) {
      int64_t iy = oy * st[0] + ky * dil[0] - pad[0];
      if (iy < 0 || iy >= H) continue;
      const float* xr[kConvPixels] = {};
      for (int64_t p = 0; p < P; ++p) {
        int64_t ix = (ox0 + p) * st[1] + kx * dil[1] - pad[2];
        if (ix >= 0 && ix < W) xr[p] = x.data.data() + ((nn * H + iy) * W + ix) * CI;
      }
      for (int64_t i = 0; i < CI; ++i) {
        const float* wr = w + ((ky * KW + kx) * CI + i) * CO;
        for (int64_t p = 0; p < P; ++p) {
          if (!xr[p]) continue;
          double xv = xr[p][i];
          if (xv == 0.0) continue;  // zero inputs (most of a ReLU's output) add nothing
          double* ap = a + p * CO;
          for (int64_t co = 0; co < CO; ++co) ap[co] += xv * wr[co];
        }
      }
    }
}

// y = clamp(conv(x, w) + b) of an NHWC x with w [KH, KW, CI / groups, CO], in double, for the
// output rows [row0, row1) of all images (row nn * OH + oy): one group through conv_pixels,
// several one pixel at a time here.
VTPU_REFERENCE_KERNEL void conv_reference(const RefTensor& x, const float* w, const std::vector<float>& b,
                                          const std::vector<int64_t>& ws, int64_t groups, llvm::ArrayRef<int64_t> st,
                                          llvm::ArrayRef<int64_t> pad, llvm::ArrayRef<int64_t> dil, double lo, double hi,
                                          int64_t row0, int64_t row1, RefTensor& y) {
  int64_t H = x.shape[1], W = x.shape[2], CI = x.shape[3];
  int64_t KH = ws[0], KW = ws[1], CO = ws[3], OH = y.shape[1], OW = y.shape[2];
  int64_t CIg = ws[2], COg = CO / groups;  // per group
  if (CIg == CI && avx512_kernels()) return conv_rows_avx512(x, w, b, KH, KW, st, pad, dil, lo, hi, row0, row1, y);
  std::vector<double> acc(static_cast<size_t>(CO * kConvPixels));
  double* a = acc.data();
  if (CIg == CI) {  // one group
    for (int64_t row = row0; row < row1; ++row)
      for (int64_t nn = row / OH, oy = row % OH, ox0 = 0; ox0 < OW; ox0 += kConvPixels) {
        int64_t P = std::min(kConvPixels, OW - ox0);
        conv_pixels(x, w, b, KH, KW, CO, st, pad, dil, nn, oy, ox0, P, a);
        for (int64_t p = 0; p < P; ++p)
          for (int64_t co = 0; co < CO; ++co)
            y.data[size_t(((nn * OH + oy) * OW + ox0 + p) * CO + co)] = clampf(a[p * CO + co], lo, hi);
      }
    return;
  }
  for (int64_t row = row0; row < row1; ++row)
    for (int64_t nn = row / OH, oy = row % OH, ox = 0; ox < OW; ++ox) {
      for (int64_t co = 0; co < CO; ++co) a[co] = b[size_t(co)];
      for (int64_t ky = 0; ky < KH; ++ky)
        for (int64_t kx = 0; kx < KW; ++kx) {
          int64_t iy = oy * st[0] + ky * dil[0] - pad[0], ix = ox * st[1] + kx * dil[1] - pad[2];
          if (iy < 0 || ix < 0 || iy >= H || ix >= W) continue;
          const float* xr = x.data.data() + ((nn * H + iy) * W + ix) * CI;
          for (int64_t i = 0; i < CIg; ++i) {
            const float* wr = w + ((ky * KW + kx) * CIg + i) * CO;
            for (int64_t co = 0; co < CO; ++co) a[co] += double(xr[co / COg * CIg + i]) * wr[co];
          }
        }
      for (int64_t co = 0; co < CO; ++co) y.data[size_t(((nn * OH + oy) * OW + ox) * CO + co)] = clampf(a[co], lo, hi);
    }
}

}  // namespace

void eval(tpu::Conv2DOp c, const Env& env, RefTensor& y) {
  auto ws = shape_of(c.getWeight());
  const RefTensor& x = env.get(c.getInput());
  tpu::FloatData w = const_view(c.getWeight());
  std::vector<float> b = consts(c.getBias());
  double lo = c.getClampMin().convertToDouble(), hi = c.getClampMax().convertToDouble();
  int64_t rows = y.shape[0] * y.shape[1];  // output rows of all images, split across threads
  double macs_per_row = double(y.shape[2] * ws[0] * ws[1] * ws[2] * ws[3]);
  parallel_for(rows, macs_per_row, [&](int64_t row0, int64_t row1) {
    conv_reference(x, w.values.data(), b, ws, c.getGroups(), c.getStride(), c.getPad(), c.getDilation(), lo, hi, row0, row1, y);
  });
}

void eval(tpu::ZeroInsertOp zi, const Env& env, RefTensor& y) {
  const RefTensor& x = env.get(zi.getInput());
  int64_t N = x.shape[0], H = x.shape[1], W = x.shape[2], C = x.shape[3], OH = y.shape[1], OW = y.shape[2];
  auto st = zi.getStride(), pd = zi.getPad();
  for (int64_t nn = 0; nn < N; ++nn)
    for (int64_t iy = 0; iy < H; ++iy)
      for (int64_t ix = 0; ix < W; ++ix)
        for (int64_t c = 0; c < C; ++c)
          y.data[size_t(((nn * OH + pd[0] + iy * st[0]) * OW + pd[2] + ix * st[1]) * C + c)] = x.data[size_t(((nn * H + iy) * W + ix) * C + c)];
}

}  // namespace vtpu::compiler::reference
