// NCHW <-> NHWC moves keep every element exactly, whatever its type and however many there
// are (integer outputs were once moved through float positions, inexact past 2^24).
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>

#include "vtpu/support/layout.h"

namespace vtpu {
namespace {

TEST(Layout, MovesAreInversesAndPlaceEachElement) {
  const std::vector<int64_t> nchw = {2, 3, 4, 5}, nhwc = {2, 4, 5, 3};
  std::vector<int32_t> x(2 * 3 * 4 * 5);
  std::iota(x.begin(), x.end(), 0);
  std::vector<int32_t> y = nchw_to_nhwc(x, nchw);
  // Element (n, c, h, w) of the NCHW tensor lands at ((n * H + h) * W + w) * C + c.
  EXPECT_EQ(y[((1 * 4 + 2) * 5 + 3) * 3 + 1], ((1 * 3 + 1) * 4 + 2) * 5 + 3);
  EXPECT_EQ(nhwc_to_nchw(y, nhwc), x);
  std::vector<float> f(x.begin(), x.end());
  EXPECT_EQ(nhwc_to_nchw(nchw_to_nhwc(f, nchw), nhwc), f);
}

TEST(Layout, IntegersPastTwoToThe24StayExact) {
  // 1 x 4100 x 4100 x 1 elements: 16.8 M, past float's exact integers.
  const std::vector<int64_t> nhwc = {1, 4100, 4100, 1};
  std::vector<int32_t> x(size_t(4100) * 4100);
  std::iota(x.begin(), x.end(), 0);
  std::vector<int32_t> y = nhwc_to_nchw(x, nhwc);  // one channel: the same order
  ASSERT_EQ(y.size(), x.size());
  EXPECT_EQ(y.back(), int32_t(x.size() - 1));
  EXPECT_EQ(y[(1u << 24) + 1], int32_t((1u << 24) + 1));
  EXPECT_EQ(y, x);
}

}  // namespace
}  // namespace vtpu
