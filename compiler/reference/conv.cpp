// Reference semantics of tpu.conv2d and tpu.zero_insert.
#include "reference/interpreter.h"

namespace vtpu::compiler::reference {

using mlir::Value;
using tpu::shape_of;

namespace {

// y = clamp(conv(x, w) + b) of an NHWC x with w [KH, KW, CI / groups, CO], in double. A
// function of its own so the compiler optimizes its loops alone; zero inputs (most of a
// ReLU's output) add nothing and are skipped.
__attribute__((noinline)) void conv_reference(const RefTensor& x, const std::vector<float>& w, const std::vector<float>& b,
                                              const std::vector<int64_t>& ws, int64_t groups, llvm::ArrayRef<int64_t> st,
                                              llvm::ArrayRef<int64_t> pad, llvm::ArrayRef<int64_t> dil, double lo, double hi,
                                              RefTensor& y) {
  int64_t N = x.shape[0], H = x.shape[1], W = x.shape[2], CI = x.shape[3];
  int64_t KH = ws[0], KW = ws[1], CO = ws[3], OH = y.shape[1], OW = y.shape[2];
  int64_t CIg = ws[2], COg = CO / groups;  // per group
  std::vector<double> acc(static_cast<size_t>(CO));
  double* a = acc.data();
  for (int64_t nn = 0; nn < N; ++nn)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox) {
        for (int64_t co = 0; co < CO; ++co) a[co] = b[size_t(co)];
        for (int64_t ky = 0; ky < KH; ++ky)
          for (int64_t kx = 0; kx < KW; ++kx) {
            int64_t iy = oy * st[0] + ky * dil[0] - pad[0], ix = ox * st[1] + kx * dil[1] - pad[2];
            if (iy < 0 || ix < 0 || iy >= H || ix >= W) continue;
            const float* xr = x.data.data() + ((nn * H + iy) * W + ix) * CI;
            for (int64_t i = 0; i < CIg; ++i) {
              const float* wr = w.data() + ((ky * KW + kx) * CIg + i) * CO;
              if (CIg == CI) {  // one group: every output reads input channel i
                double xv = xr[i];
                if (xv == 0.0) continue;
                for (int64_t co = 0; co < CO; ++co) a[co] += xv * wr[co];
              } else {
                for (int64_t co = 0; co < CO; ++co) a[co] += double(xr[co / COg * CIg + i]) * wr[co];
              }
            }
          }
        for (int64_t co = 0; co < CO; ++co) y.data[size_t(((nn * OH + oy) * OW + ox) * CO + co)] = clampf(a[co], lo, hi);
      }
}

}  // namespace

void eval(tpu::Conv2DOp c, const Env& env, RefTensor& y) {
  auto ws = shape_of(c.getWeight());
  conv_reference(env.get(c.getInput()), consts(c.getWeight()), consts(c.getBias()), ws, c.getGroups(), c.getStride(), c.getPad(),
                 c.getDilation(), c.getClampMin().convertToDouble(), c.getClampMax().convertToDouble(), y);
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
