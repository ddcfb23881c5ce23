// INT8 calibration methods (compiler/pipeline/ranges.h): each method's range on
// distributions whose answer is known, and the histogram's widening as larger values come.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "pipeline/ranges.h"

namespace vtpu::compiler {
namespace {

// 100,000 values uniform in [-1, 1] and one outlier at 100, in batches whose largest value
// grows (the histogram widens three times on the way).
MagnitudeHistogram uniform_with_outlier() {
  MagnitudeHistogram h;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(10000);
  for (int b = 0; b < 10; ++b) {
    for (float& v : x) v = u(rng) * (b < 5 ? 0.1f : 1.0f);
    h.add(x.data(), x.size());
  }
  float outlier = -100.0f, bad[2] = {NAN, INFINITY};
  h.add(&outlier, 1);
  h.add(bad, 2);
  return h;
}

TEST(CalibrationRanges, MaxIsTheLargestMagnitudeAsBefore) {
  MagnitudeHistogram h = uniform_with_outlier();
  EXPECT_EQ(h.range(CalibrationMethod::Max, 99.99), INFINITY);  // the max method never skipped a value
  MagnitudeHistogram g;
  std::vector<float> x{0.5f, -3.0f, 2.0f};
  g.add(x.data(), x.size());
  EXPECT_EQ(g.range(CalibrationMethod::Max, 99.99), 3.0f);
}

TEST(CalibrationRanges, PercentileLeavesOutliersOut) {
  MagnitudeHistogram h = uniform_with_outlier();
  // Half the values lie in [-0.1, 0.1], half in [-1, 1]: 90% of the magnitudes are below
  // 0.1 + 0.8 (50% + 40% of the wide half), 99.99% below about 1.
  EXPECT_NEAR(h.percentile(90), 0.82f, 0.1f);
  EXPECT_NEAR(h.range(CalibrationMethod::Percentile, 99.99), 1.0f, 0.1f);
  EXPECT_NEAR(h.percentile(100), 100.0f, 0.1f);  // every value: the outlier's bin
  EXPECT_LE(h.percentile(50), 0.15f);
}

TEST(CalibrationRanges, EntropyClipsARareOutlierButNotTheBulk) {
  MagnitudeHistogram h = uniform_with_outlier();
  float t = h.range(CalibrationMethod::Entropy, 99.99);
  EXPECT_GT(t, 0.5f);   // the wide half's values stay inside
  EXPECT_LT(t, 10.0f);  // the outlier at 100 is clipped
  // A bell keeps (nearly) its whole tail: 128 levels over it lose little, clipping more. A
  // heavy tail (Laplace: its largest of 200,000 values twelve times the typical one) is
  // clipped, near where ACIQ (Banner et al. 2019) puts the 8-bit optimum for Laplace, 9.9.
  std::mt19937 rng(5);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::exponential_distribution<float> ex(1.0f);
  std::vector<float> x(200000), y(200000);
  for (float& v : x) v = g(rng);
  for (float& v : y) v = ex(rng) * (rng() % 2 ? 1.0f : -1.0f);
  MagnitudeHistogram n, l;
  n.add(x.data(), x.size());
  l.add(y.data(), y.size());
  EXPECT_GT(n.entropy(), 2.5f);
  EXPECT_LE(n.entropy(), n.max());
  EXPECT_GT(l.entropy(), 8.0f);
  EXPECT_LT(l.entropy(), l.max() - 0.25f) << l.max();
}

TEST(CalibrationRanges, EmptyOrZeroGivesTheMaximum) {
  MagnitudeHistogram h;
  EXPECT_EQ(h.range(CalibrationMethod::Entropy, 99.99), 0.0f);
  std::vector<float> z(10, 0.0f);
  h.add(z.data(), z.size());
  EXPECT_EQ(h.range(CalibrationMethod::Percentile, 50), 0.0f);
  EXPECT_EQ(h.range(CalibrationMethod::Entropy, 50), 0.0f);
}

}  // namespace
}  // namespace vtpu::compiler
