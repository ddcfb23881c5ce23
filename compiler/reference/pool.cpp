// Reference semantics of tpu.pool and tpu.pool_argmax.
#include <limits>

#include "reference/interpreter.h"

namespace vtpu::compiler::reference {

using mlir::Value;
using tpu::shape_of;

void eval(tpu::PoolOp p, const Env& env, RefTensor& y) {
  const RefTensor& x = env.get(p.getInput());
  int64_t N = x.shape[0], H = x.shape[1], W = x.shape[2], C = x.shape[3], OH = y.shape[1], OW = y.shape[2];
  auto k = p.getKernel(), st = p.getStride(), pad = p.getPad();
  bool mx = p.getKind() == "max", count_pad = !mx && p.getCountIncludePad();
  std::vector<int64_t> dil{1, 1};
  if (auto d = p.getDilation()) dil = {(*d)[0], (*d)[1]};
  for (int64_t nn = 0; nn < N; ++nn)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox)
        for (int64_t c = 0; c < C; ++c) {
          double acc = mx ? -std::numeric_limits<double>::infinity() : 0.0;
          int64_t count = 0;
          for (int64_t ky = 0; ky < k[0]; ++ky)
            for (int64_t kx = 0; kx < k[1]; ++kx) {
              int64_t iy = oy * st[0] + ky * dil[0] - pad[0], ix = ox * st[1] + kx * dil[1] - pad[2];
              // Padding is skipped, except that count_include_pad averages count it as zeros.
              bool outside = iy < 0 || ix < 0 || iy >= H || ix >= W;
              if (outside && !count_pad) continue;
              double v = outside ? 0.0 : x.data[size_t(((nn * H + iy) * W + ix) * C + c)];
              acc = mx ? std::max(acc, v) : acc + v;
              ++count;
            }
          y.data[size_t(((nn * OH + oy) * OW + ox) * C + c)] = float(mx ? acc : acc / double(count));
        }
}

void eval(tpu::PoolArgmaxOp am, const Env& env, RefTensor& y) {
  const RefTensor& x = env.get(am.getInput());
  int64_t N = x.shape[0], H = x.shape[1], W = x.shape[2], C = x.shape[3], OH = y.shape[1], OW = y.shape[2];
  auto k = am.getKernel(), st = am.getStride(), pad = am.getPad();
  bool column_major = am.getStorageOrder() == 1;
  for (int64_t nn = 0; nn < N; ++nn)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox)
        for (int64_t c = 0; c < C; ++c) {
          float best = -std::numeric_limits<float>::infinity();
          int64_t at = -1;
          for (int64_t ky = 0; ky < k[0]; ++ky)
            for (int64_t kx = 0; kx < k[1]; ++kx) {
              int64_t iy = oy * st[0] + ky - pad[0], ix = ox * st[1] + kx - pad[2];
              if (iy < 0 || ix < 0 || iy >= H || ix >= W) continue;
              float v = x.data[size_t(((nn * H + iy) * W + ix) * C + c)];
              int64_t idx = (nn * C + c) * H * W + (column_major ? ix * H + iy : iy * W + ix);
              if (at < 0 || v > best || (v == best && idx < at)) best = v, at = idx;
            }
          y.data[size_t(((nn * OH + oy) * OW + ox) * C + c)] = float(at);
        }
}

}  // namespace vtpu::compiler::reference
