// MagnitudeHistogram (ranges.h): the calibration methods' ranges from one histogram.
#include "pipeline/ranges.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace vtpu::compiler {

void MagnitudeHistogram::add(const float* x, size_t n) {
  float top = 0;
  for (size_t i = 0; i < n; ++i)
    if (std::isfinite(x[i])) top = std::max(top, std::fabs(x[i]));
  for (size_t i = 0; i < n; ++i) max_ = std::max(max_, std::fabs(x[i]));  // as the max method always did
  if (top > 0 && width_ == 0) width_ = double(top) / kBins;
  while (width_ > 0 && double(top) > width_ * kBins) {  // widen: merge pairs of bins
    for (size_t b = 0; b < kBins / 2; ++b) bins_[b] = bins_[2 * b] + bins_[2 * b + 1];
    std::fill(bins_.begin() + kBins / 2, bins_.end(), 0);
    width_ *= 2;
  }
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) continue;
    size_t b = width_ > 0 ? size_t(double(std::fabs(x[i])) / width_) : 0;
    ++bins_[std::min(b, kBins - 1)];
    ++count_;
  }
}

float MagnitudeHistogram::percentile(double percent) const {
  if (!count_ || width_ == 0) return max_;
  const double want = double(count_) * percent / 100.0;
  uint64_t seen = 0;
  for (size_t b = 0; b < kBins; ++b) {
    seen += bins_[b];
    if (double(seen) >= want) return float(std::min(double(max_), double(b + 1) * width_));
  }
  return max_;
}

float MagnitudeHistogram::entropy() const {
  if (!count_ || width_ == 0) return max_;
  constexpr size_t kLevels = 128;  // int8's magnitudes 0..127
  // Bins coarse enough to hold 16 values each on average: a sparse histogram's divergences
  // are noise. Fewer than 16 values per level at 128 bins: too few to choose from, the max.
  size_t nb = kBins;
  while (nb > kLevels && double(count_) / double(nb) < 16) nb /= 2;
  if (double(count_) / double(nb) < 16) return max_;
  const size_t merge = kBins / nb;
  std::vector<double> h(nb, 0);
  for (size_t b = 0; b < kBins; ++b) h[b / merge] += double(bins_[b]);
  // The histogram up to its last nonzero bin: thresholds beyond clip nothing.
  size_t used = nb;
  while (used > kLevels && h[used - 1] == 0) --used;
  double best = std::numeric_limits<double>::infinity();
  size_t best_i = used;
  std::vector<double> p, q;
  const size_t stride = std::max<size_t>(1, nb / 256);
  for (size_t i = kLevels; i <= used; i += stride) {
    // P: the first i bins, the clipped values counted in the last; Q: each of the 128 levels'
    // count spread evenly over the nonzero bins it covers.
    p.assign(h.begin(), h.begin() + long(i));
    for (size_t b = i; b < nb; ++b) p[i - 1] += h[b];
    q.assign(i, 0);
    for (size_t l = 0; l < kLevels; ++l) {
      size_t lo = l * i / kLevels, hi = (l + 1) * i / kLevels;
      double total = 0, nonzero = 0;
      for (size_t b = lo; b < hi; ++b) total += h[b], nonzero += h[b] > 0 ? 1 : 0;
      for (size_t b = lo; b < hi; ++b) q[b] = h[b] > 0 && nonzero > 0 ? total / nonzero : 0;
    }
    double ps = 0, qs = 0;
    for (size_t b = 0; b < i; ++b) ps += p[b], qs += q[b];
    double kl = 0;
    for (size_t b = 0; b < i; ++b) {
      if (p[b] == 0) continue;
      double pb = p[b] / ps, qb = q[b] > 0 ? q[b] / qs : 1e-12;  // a clipped count where Q has none
      kl += pb * std::log(pb / qb);
    }
    if (kl < best) best = kl, best_i = i;
  }
  return float(std::min(double(max_), (double(best_i) + 0.5) * width_ * double(merge)));
}

float MagnitudeHistogram::range(CalibrationMethod method, double percent) const {
  switch (method) {
    case CalibrationMethod::Max: return max_;
    case CalibrationMethod::Percentile: return percentile(percent);
    case CalibrationMethod::Entropy: return entropy();
  }
  return max_;
}

}  // namespace vtpu::compiler
