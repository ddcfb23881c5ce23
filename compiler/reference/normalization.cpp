// Reference semantics of tpu.layernorm and tpu.softmax.
#include <cmath>
#include <limits>

#include "reference/interpreter.h"

namespace vtpu::compiler::reference {

using mlir::Value;
using tpu::shape_of;

void eval(tpu::LayerNormOp ln, const Env& env, RefTensor& y) {
  const RefTensor& x = env.get(ln.getInput());
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
}

void eval(tpu::SoftmaxOp s, const Env& env, RefTensor& y) {
  size_t n = y.data.size();
  RefTensor x = env.get(s.getInput());
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
    for (size_t j = 0; j < F; ++j) {
      double d = double(x.data[r * F + j]) - m;
      y.data[r * F + j] = float(s.getLog() ? d - std::log(sum) : std::exp(d) / sum);
    }
  }
}

}  // namespace vtpu::compiler::reference
