// Reference semantics of tpu.matmul, tpu.batch_matmul and tpu.embedding.
#include <algorithm>

#include "reference/interpreter.h"

namespace vtpu::compiler::reference {

using mlir::Value;
using tpu::shape_of;

namespace {

// y = clamp(x w + b) of x [M, K] and w [K, N], in double; i-k-j order so the inner loop runs
// over contiguous weights (vectorizes).
VTPU_REFERENCE_KERNEL void matmul_reference(const float* x, const float* w, const float* b, int64_t M, int64_t K, int64_t N,
                                            double lo, double hi, float* y) {
  std::vector<double> acc(static_cast<size_t>(N));
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) acc[size_t(j)] = b[j];
    for (int64_t k = 0; k < K; ++k) {
      double xv = x[i * K + k];
      const float* wr = w + k * N;
      for (int64_t j = 0; j < N; ++j) acc[size_t(j)] += xv * wr[j];
    }
    for (int64_t j = 0; j < N; ++j) y[i * N + j] = clampf(acc[size_t(j)], lo, hi);
  }
}

}  // namespace

void eval(tpu::MatmulOp m, const Env& env, RefTensor& y) {
  const RefTensor& x = env.get(m.getInput());
  tpu::FloatData w = const_view(m.getWeight());
  std::vector<float> b = consts(m.getBias());
  int64_t K = shape_of(m.getWeight())[0], N = shape_of(m.getWeight())[1], M = int64_t(x.data.size()) / K;
  double lo = m.getClampMin().convertToDouble(), hi = m.getClampMax().convertToDouble();
  parallel_for(M, double(K * N), [&](int64_t i0, int64_t i1) {  // rows split across threads
    matmul_reference(x.data.data() + i0 * K, w.values.data(), b.data(), i1 - i0, K, N, lo, hi, y.data.data() + i0 * N);
  });
}

void eval(tpu::BatchMatmulOp bm, const Env& env, RefTensor& y) {
  const RefTensor& a = env.get(bm.getLhs());
  const RefTensor& w = env.get(bm.getRhs());
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
}

void eval(tpu::EmbeddingOp em, const Env& env, RefTensor& y) {
  // Row ids[i] of the table; negative ids count from the end, others outside give zeros.
  const RefTensor& ids = env.get(em.getIds());
  auto table = consts(em.getTable());
  int64_t V = shape_of(em.getTable())[0], D = shape_of(em.getTable())[1];
  for (size_t i = 0; i < ids.data.size(); ++i) {
    int64_t id = int64_t(ids.data[i]);
    if (id < 0) id += V;
    if (id < 0 || id >= V) continue;
    std::copy(table.begin() + id * D, table.begin() + (id + 1) * D, y.data.begin() + int64_t(i) * D);
  }
}

}  // namespace vtpu::compiler::reference
