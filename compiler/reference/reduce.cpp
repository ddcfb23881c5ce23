// Reference semantics of tpu.argmax.
#include "reference/interpreter.h"

namespace vtpu::compiler::reference {

using mlir::Value;
using tpu::shape_of;

void eval(tpu::ArgMaxOp ax, const Env& env, RefTensor& y) {
  const RefTensor& x = env.get(ax.getInput());
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
}

}  // namespace vtpu::compiler::reference
