#pragma once
// An activation's magnitudes over the INT8 calibration runs, and the range its scale maps to
// 127 by each calibration method (docs/compiler.md, "INT8": calibration methods). Plain C++,
// no MLIR: calibration.cpp feeds it the reference interpreter's values.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "vtpu/compiler/compiler.h"

namespace vtpu::compiler {

// A histogram of |x| over kBins equal bins from 0, whose bins widen (pairs merged, the width
// doubled) when a larger value comes, so it needs no first pass for the maximum.
class MagnitudeHistogram {
 public:
  static constexpr size_t kBins = 2048;
  void add(const float* x, size_t n);
  float max() const { return max_; }
  // The magnitude below which `percent` of the finite values lie (the upper edge of the bin
  // where the count reaches it).
  float percentile(double percent) const;
  // The threshold whose 128-level quantization of the clipped distribution loses the least
  // information (the smallest Kullback-Leibler divergence; NVIDIA's entropy calibration).
  float entropy() const;
  // The method's range; never above max(), and max() when the histogram is empty.
  float range(CalibrationMethod method, double percent) const;

 private:
  double width_ = 0;  // of a bin; 0 until a nonzero value comes
  std::vector<uint64_t> bins_ = std::vector<uint64_t>(kBins);
  uint64_t count_ = 0;
  float max_ = 0;
};

}  // namespace vtpu::compiler
