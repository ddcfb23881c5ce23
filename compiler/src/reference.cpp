// An fp32 interpreter of the tpu dialect: the reference the INT8 calibration measures
// activation ranges with, and what `vtpu run --check` compares the chip's outputs against.
// Plain loops in double-accumulated float, written from the ops' definitions.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "import.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "dialect/tpu_dialect.h"

namespace vtpu::compiler {
namespace {

using mlir::Value;
using tpu::shape_of;

std::vector<float> consts(Value v) {
  auto c = v.getDefiningOp<mlir::tosa::ConstOp>();
  if (!c) throw InternalError("reference: expected a constant");
  std::vector<float> out;
  for (float f : mlir::cast<mlir::DenseElementsAttr>(c.getValue()).getValues<float>()) out.push_back(f);
  return out;
}

float clampf(double x, double lo, double hi) { return float(std::min(std::max(x, lo), hi)); }


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

std::vector<RefTensor> evaluate_reference(mlir::func::FuncOp fn, const std::vector<RefTensor>& inputs,
                                          std::map<const void*, RefTensor>* all) {
  std::map<const void*, RefTensor> env;
  if (inputs.size() != fn.getNumArguments()) throw InternalError("reference: wrong number of inputs");
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) env[fn.getArgument(i).getAsOpaquePointer()] = inputs[i];
  auto get = [&](Value v) -> const RefTensor& { return env.at(v.getAsOpaquePointer()); };
  std::vector<RefTensor> outs;
  for (mlir::Operation& op : fn.getBody().front()) {
    if (mlir::isa<mlir::tosa::ConstOp>(op)) continue;
    if (auto ret = mlir::dyn_cast<mlir::func::ReturnOp>(op)) {
      for (Value v : ret.getOperands()) {
        if (auto c = v.getDefiningOp<mlir::tosa::ConstOp>()) {  // a constant output
          RefTensor t;
          t.shape = shape_of(v);
          auto attr = mlir::cast<mlir::DenseElementsAttr>(c.getValue());
          if (attr.getElementType().isInteger(32))
            for (int32_t x : attr.getValues<int32_t>()) t.data.push_back(float(x));
          else
            t.data = consts(v);
          outs.push_back(t);
          continue;
        }
        outs.push_back(get(v));
      }
      break;
    }
    RefTensor y;
    y.shape = shape_of(op.getResult(0));
    size_t n = 1;
    for (int64_t d : y.shape) n *= size_t(d);
    y.data.assign(n, 0.0f);
    if (auto m = mlir::dyn_cast<tpu::MatmulOp>(op)) {
      const RefTensor& x = get(m.getInput());
      auto w = consts(m.getWeight()), b = consts(m.getBias());
      int64_t K = shape_of(m.getWeight())[0], N = shape_of(m.getWeight())[1], M = int64_t(x.data.size()) / K;
      double lo = m.getClampMin().convertToDouble(), hi = m.getClampMax().convertToDouble();
      // i-k-j order so the inner loop runs over contiguous weights (vectorizes).
      std::vector<double> acc(static_cast<size_t>(N));
      for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < N; ++j) acc[size_t(j)] = b[size_t(j)];
        for (int64_t k = 0; k < K; ++k) {
          double xv = x.data[size_t(i * K + k)];
          const float* wr = w.data() + k * N;
          for (int64_t j = 0; j < N; ++j) acc[size_t(j)] += xv * wr[j];
        }
        for (int64_t j = 0; j < N; ++j) y.data[size_t(i * N + j)] = clampf(acc[size_t(j)], lo, hi);
      }
    } else if (auto ca = mlir::dyn_cast<tpu::CastOp>(op)) {
      // Integers are carried as floats; to an integer tensor they round (half to even).
      const RefTensor& x = get(ca.getInput());
      bool to_int = mlir::cast<mlir::RankedTensorType>(ca.getOutput().getType()).getElementType().isInteger(32);
      for (size_t i = 0; i < n; ++i) y.data[i] = to_int ? std::nearbyint(x.data[i]) : x.data[i];
    } else if (auto em = mlir::dyn_cast<tpu::EmbeddingOp>(op)) {
      // Row ids[i] of the table; negative ids count from the end, others outside give zeros.
      const RefTensor& ids = get(em.getIds());
      auto table = consts(em.getTable());
      int64_t V = shape_of(em.getTable())[0], D = shape_of(em.getTable())[1];
      for (size_t i = 0; i < ids.data.size(); ++i) {
        int64_t id = int64_t(ids.data[i]);
        if (id < 0) id += V;
        if (id < 0 || id >= V) continue;
        std::copy(table.begin() + id * D, table.begin() + (id + 1) * D, y.data.begin() + int64_t(i) * D);
      }
    } else if (auto zi = mlir::dyn_cast<tpu::ZeroInsertOp>(op)) {
      const RefTensor& x = get(zi.getInput());
      int64_t N = x.shape[0], H = x.shape[1], W = x.shape[2], C = x.shape[3], OH = y.shape[1], OW = y.shape[2];
      auto st = zi.getStride(), pd = zi.getPad();
      for (int64_t nn = 0; nn < N; ++nn)
        for (int64_t iy = 0; iy < H; ++iy)
          for (int64_t ix = 0; ix < W; ++ix)
            for (int64_t c = 0; c < C; ++c)
              y.data[size_t(((nn * OH + pd[0] + iy * st[0]) * OW + pd[2] + ix * st[1]) * C + c)] = x.data[size_t(((nn * H + iy) * W + ix) * C + c)];
    } else if (auto rz = mlir::dyn_cast<tpu::ResizeNearestOp>(op)) {
      const RefTensor& x = get(rz.getInput());
      int64_t N = x.shape[0], H = x.shape[1], W = x.shape[2], C = x.shape[3], OH = y.shape[1], OW = y.shape[2];
      auto rows = rz.getRows(), cols = rz.getCols();
      for (int64_t nn = 0; nn < N; ++nn)
        for (int64_t oy = 0; oy < OH; ++oy)
          for (int64_t ox = 0; ox < OW; ++ox)
            for (int64_t c = 0; c < C; ++c)
              y.data[size_t(((nn * OH + oy) * OW + ox) * C + c)] = x.data[size_t(((nn * H + rows[size_t(oy)]) * W + cols[size_t(ox)]) * C + c)];
    } else if (auto fq = mlir::dyn_cast<tpu::FakeQuantOp>(op)) {
      const RefTensor& x = get(fq.getInput());
      float sc = float(fq.getScale().convertToDouble()), lo = float(fq.getLo().convertToDouble()), hi = float(fq.getHi().convertToDouble());
      for (size_t i = 0; i < n; ++i) y.data[i] = sc * std::nearbyint(std::clamp(x.data[i] / sc, lo, hi));
    } else if (auto k = mlir::dyn_cast<tpu::ConstantOp>(op)) {
      size_t i = 0;
      for (float v : mlir::cast<mlir::DenseElementsAttr>(k.getValue()).getValues<float>()) y.data[i++] = v;
    } else if (auto ln = mlir::dyn_cast<tpu::LayerNormOp>(op)) {
      const RefTensor& x = get(ln.getInput());
      size_t D = size_t(x.shape.back()), rows = x.data.size() / D;
      double eps = ln.getEpsilon().convertToDouble();
      for (size_t i = 0; i < rows; ++i) {
        const float* xr = x.data.data() + i * D;
        double mean = 0, var = 0;
        for (size_t j = 0; j < D; ++j) mean += xr[j];
        mean /= double(D);
        for (size_t j = 0; j < D; ++j) var += (xr[j] - mean) * (xr[j] - mean);
        double inv = 1.0 / std::sqrt(var / double(D) + eps);
        for (size_t j = 0; j < D; ++j) y.data[i * D + j] = float((xr[j] - mean) * inv);
      }
    } else if (auto bm = mlir::dyn_cast<tpu::BatchMatmulOp>(op)) {
      const RefTensor& a = get(bm.getLhs());
      const RefTensor& w = get(bm.getRhs());
      int64_t B = a.shape[0], M = a.shape[1], K = a.shape[2], N = w.shape[2];
      std::vector<double> acc(static_cast<size_t>(N));
      for (int64_t bi = 0; bi < B; ++bi)
        for (int64_t i = 0; i < M; ++i) {
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t k = 0; k < K; ++k) {
            double xv = a.data[size_t((bi * M + i) * K + k)];
            const float* wr = w.data.data() + (bi * K + k) * N;
            for (int64_t j = 0; j < N; ++j) acc[size_t(j)] += xv * wr[j];
          }
          for (int64_t j = 0; j < N; ++j) y.data[size_t((bi * M + i) * N + j)] = float(acc[size_t(j)]);
        }
    } else if (auto c = mlir::dyn_cast<tpu::Conv2DOp>(op)) {
      auto ws = shape_of(c.getWeight());
      conv_reference(get(c.getInput()), consts(c.getWeight()), consts(c.getBias()), ws, c.getGroups(), c.getStride(), c.getPad(),
                     c.getDilation(), c.getClampMin().convertToDouble(), c.getClampMax().convertToDouble(), y);
    } else if (auto p = mlir::dyn_cast<tpu::PoolOp>(op)) {
      const RefTensor& x = get(p.getInput());
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
    } else if (auto ax = mlir::dyn_cast<tpu::ArgMaxOp>(op)) {
      const RefTensor& x = get(ax.getInput());
      size_t K = size_t(x.shape.back()), rows = x.data.size() / K;
      for (size_t r = 0; r < rows; ++r) {
        size_t at = 0;
        for (size_t k = 1; k < K; ++k) {
          float v = x.data[r * K + k], best = x.data[r * K + at];
          bool better = ax.getMin() ? v < best : v > best;
          if (better || (ax.getLast() && v == best)) at = k;
        }
        y.data[r] = float(at);
      }
    } else if (auto am = mlir::dyn_cast<tpu::PoolArgmaxOp>(op)) {
      const RefTensor& x = get(am.getInput());
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
    } else if (auto a = mlir::dyn_cast<tpu::AddOp>(op)) {
      const RefTensor &l = get(a.getLhs()), &r = get(a.getRhs());
      double lo = a.getClampMin().convertToDouble(), hi = a.getClampMax().convertToDouble();
      for (size_t i = 0; i < n; ++i) y.data[i] = clampf(double(l.data[i]) + r.data[i], lo, hi);
    } else if (auto sl = mlir::dyn_cast<tpu::SliceOp>(op)) {
      const RefTensor& x = get(sl.getInput());
      auto start = sl.getStart();
      size_t r = x.shape.size();
      for (size_t i = 0; i < n; ++i) {
        size_t rem = i, src = 0, stride = 1;
        for (size_t d = r; d-- > 0;) {
          size_t idx = rem % size_t(y.shape[d]) + size_t(start[d]);
          rem /= size_t(y.shape[d]);
          src += idx * stride;
          stride *= size_t(x.shape[d]);
        }
        y.data[i] = x.data[src];
      }
    } else if (auto cc = mlir::dyn_cast<tpu::ConcatOp>(op)) {
      size_t axis = size_t(cc.getAxis()), outer = 1, inner = 1;
      for (size_t d = 0; d < axis; ++d) outer *= size_t(y.shape[d]);
      for (size_t d = axis + 1; d < y.shape.size(); ++d) inner *= size_t(y.shape[d]);
      size_t off = 0, out_chunk = size_t(y.shape[axis]) * inner;
      for (Value v : cc.getInputs()) {
        const RefTensor& x = get(v);
        size_t chunk = size_t(x.shape[axis]) * inner;
        for (size_t o = 0; o < outer; ++o)
          for (size_t i = 0; i < chunk; ++i) y.data[o * out_chunk + off + i] = x.data[o * chunk + i];
        off += chunk;
      }
    } else if (auto tp = mlir::dyn_cast<tpu::TransposeOp>(op)) {
      const RefTensor& x = get(tp.getInput());
      auto perm = tp.getPerm();
      size_t r = x.shape.size();
      std::vector<size_t> in_stride(r, 1);
      for (size_t d = r - 1; d-- > 0;) in_stride[d] = in_stride[d + 1] * size_t(x.shape[d + 1]);
      for (size_t i = 0; i < n; ++i) {
        size_t rem = i, src = 0;
        for (size_t k = r; k-- > 0;) {
          size_t idx = rem % size_t(y.shape[k]);
          rem /= size_t(y.shape[k]);
          src += idx * in_stride[size_t(perm[k])];
        }
        y.data[i] = x.data[src];
      }
    } else if (auto bc = mlir::dyn_cast<tpu::BroadcastOp>(op)) {
      const RefTensor& x = get(bc.getInput());
      for (size_t i = 0; i < n; ++i) {
        size_t rem = i, src = 0, stride = 1;
        for (size_t d = y.shape.size(); d-- > 0;) {
          size_t idx = rem % size_t(y.shape[d]);
          rem /= size_t(y.shape[d]);
          if (x.shape[d] != 1) src += idx * stride;
          stride *= size_t(x.shape[d]);
        }
        y.data[i] = x.data[src];
      }
    } else if (auto bo = mlir::dyn_cast<tpu::BinaryOp>(op)) {
      const RefTensor &l = get(bo.getLhs()), &r = get(bo.getRhs());
      std::string k = bo.getKind().str();
      for (size_t i = 0; i < n; ++i) {
        double a = l.data[i], c = r.data[i];
        y.data[i] = float(k == "sub"   ? a - c
                          : k == "mul" ? a * c
                          : k == "div" ? (c == 0 ? 0.0 : std::trunc(a / c))
                          : k == "max" ? std::max(a, c)
                                       : std::min(a, c));
      }
    } else if (auto cl = mlir::dyn_cast<tpu::ClampOp>(op)) {
      const RefTensor& x = get(cl.getInput());
      double lo = cl.getClampMin().convertToDouble(), hi = cl.getClampMax().convertToDouble();
      for (size_t i = 0; i < n; ++i) y.data[i] = clampf(x.data[i], lo, hi);
    } else if (auto s = mlir::dyn_cast<tpu::SoftmaxOp>(op)) {
      RefTensor x = get(s.getInput());
      size_t F = size_t(y.shape.back());
      if (s.getMask()) {  // [M, F], repeated over the rows' leading dimensions
        auto mk = consts(s.getMask());
        size_t M = mk.size() / F;
        for (size_t i = 0; i < n; ++i) x.data[i] += mk[(i / F) % M * F + i % F];
      }
      for (size_t r = 0; r < n / F; ++r) {
        double m = -std::numeric_limits<double>::infinity(), sum = 0;
        for (size_t j = 0; j < F; ++j) m = std::max(m, double(x.data[r * F + j]));
        for (size_t j = 0; j < F; ++j) sum += std::exp(double(x.data[r * F + j]) - m);
        for (size_t j = 0; j < F; ++j) y.data[r * F + j] = float(std::exp(double(x.data[r * F + j]) - m) / sum);
      }
    } else if (auto un = mlir::dyn_cast<tpu::UnaryOp>(op)) {
      const RefTensor& x = get(un.getInput());
      std::string fn = un.getFn().str();
      for (size_t i = 0; i < n; ++i) {
        double v = x.data[i];
        double r;
        if (fn == "sigmoid") r = 1.0 / (1.0 + std::exp(-v));
        else if (fn == "tanh") r = std::tanh(v);
        else if (fn == "erf") r = std::erf(v);
        else if (fn == "exp") r = std::exp(v);
        else if (fn == "recip") r = 1.0 / v;
        else if (fn == "rsqrt") r = 1.0 / std::sqrt(v);
        else if (fn == "gelu") r = 0.5 * v * (1.0 + std::erf(v * M_SQRT1_2));
        else throw CompileError(fmt::format("tpu.unary: unknown function '{}'", fn));
        y.data[i] = float(r);
      }
    } else if (auto af = mlir::dyn_cast<tpu::AffineOp>(op)) {
      const RefTensor& x = get(af.getInput());
      auto sc = consts(af.getScale()), bi = consts(af.getBias());
      size_t C = sc.size();
      for (size_t i = 0; i < n; ++i) y.data[i] = float(double(x.data[i]) * sc[i % C] + bi[i % C]);
    } else if (auto rs = mlir::dyn_cast<tpu::ReshapeOp>(op)) {
      y.data = get(rs.getInput()).data;  // every tpu.reshape reinterprets row-major data
    } else {
      throw InternalError(fmt::format("reference: no semantics for {}", op.getName().getStringRef().str()));
    }
    env[op.getResult(0).getAsOpaquePointer()] = std::move(y);
  }
  if (all) *all = std::move(env);
  return outs;
}

}  // namespace vtpu::compiler
