// Reference semantics of the layout ops: tpu.slice, concat, transpose, broadcast, reshape and
// resize_nearest.
#include "reference/interpreter.h"

namespace vtpu::compiler::reference {

using mlir::Value;
using tpu::shape_of;

void eval(tpu::SliceOp sl, const Env& env, RefTensor& y) {
  size_t n = y.data.size();
  const RefTensor& x = env.get(sl.getInput());
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
}

void eval(tpu::ConcatOp cc, const Env& env, RefTensor& y) {
  size_t axis = size_t(cc.getAxis()), outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= size_t(y.shape[d]);
  for (size_t d = axis + 1; d < y.shape.size(); ++d) inner *= size_t(y.shape[d]);
  size_t off = 0, out_chunk = size_t(y.shape[axis]) * inner;
  for (Value v : cc.getInputs()) {
    const RefTensor& x = env.get(v);
    size_t chunk = size_t(x.shape[axis]) * inner;
    for (size_t o = 0; o < outer; ++o)
      for (size_t i = 0; i < chunk; ++i) y.data[o * out_chunk + off + i] = x.data[o * chunk + i];
    off += chunk;
  }
}

void eval(tpu::TransposeOp tp, const Env& env, RefTensor& y) {
  size_t n = y.data.size();
  const RefTensor& x = env.get(tp.getInput());
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
}

void eval(tpu::BroadcastOp bc, const Env& env, RefTensor& y) {
  size_t n = y.data.size();
  const RefTensor& x = env.get(bc.getInput());
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
}

void eval(tpu::ReshapeOp rs, const Env& env, RefTensor& y) {
  y.data = env.get(rs.getInput()).data;  // every tpu.reshape reinterprets row-major data
}

void eval(tpu::ResizeNearestOp rz, const Env& env, RefTensor& y) {
  const RefTensor& x = env.get(rz.getInput());
  int64_t N = x.shape[0], H = x.shape[1], W = x.shape[2], C = x.shape[3], OH = y.shape[1], OW = y.shape[2];
  auto rows = rz.getRows(), cols = rz.getCols();
  for (int64_t nn = 0; nn < N; ++nn)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox)
        for (int64_t c = 0; c < C; ++c)
          y.data[size_t(((nn * OH + oy) * OW + ox) * C + c)] = x.data[size_t(((nn * H + rows[size_t(oy)]) * W + cols[size_t(ox)]) * C + c)];
}

}  // namespace vtpu::compiler::reference
