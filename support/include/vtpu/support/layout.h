#pragma once
// The two layouts of a 4-D image: ONNX models see NCHW, the chip stores NHWC (pixels x
// channels). Shared by the runtime, the node-test runner and the compiler's tests. And the
// blocked fill the compiler's weight transposes share.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace vtpu {

inline std::vector<int64_t> nchw_shape_of(const std::vector<int64_t>& nhwc) { return {nhwc[0], nhwc[3], nhwc[1], nhwc[2]}; }

// Values of an NCHW tensor of shape `nchw`, in NHWC order (any element type).
template <typename T>
std::vector<T> nchw_to_nhwc(const std::vector<T>& x, const std::vector<int64_t>& nchw) {
  int64_t N = nchw[0], C = nchw[1], H = nchw[2], W = nchw[3];
  std::vector<T> y(x.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) y[size_t(((n * H + h) * W + w) * C + c)] = x[size_t(((n * C + c) * H + h) * W + w)];
  return y;
}

// Values of an NHWC tensor of shape `nhwc`, in NCHW order (any element type).
template <typename T>
std::vector<T> nhwc_to_nchw(const std::vector<T>& x, const std::vector<int64_t>& nhwc) {
  int64_t N = nhwc[0], H = nhwc[1], W = nhwc[2], C = nhwc[3];
  std::vector<T> y(x.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t w = 0; w < W; ++w)
        for (int64_t c = 0; c < C; ++c) y[size_t(((n * C + c) * H + h) * W + w)] = x[size_t(((n * H + h) * W + w) * C + c)];
  return y;
}

// A row-major [rows, cols] matrix whose element (i, j) is value(i, j), filled in 32 x 32
// blocks, each written row by row: how the compiler transposes large weight matrices (walking
// a source down its columns, a 2048 x 1000 MatMul weight or ResNet-50's 100 MB of conv
// weights, missed the cache on every element).
template <class V>
std::vector<float> blocked_matrix(int64_t rows, int64_t cols, V value) {
  std::vector<float> m(size_t(rows * cols));
  constexpr int64_t kBlock = 32;
  for (int64_t i0 = 0; i0 < rows; i0 += kBlock)
    for (int64_t j0 = 0; j0 < cols; j0 += kBlock)
      for (int64_t i = i0; i < std::min(rows, i0 + kBlock); ++i)
        for (int64_t j = j0; j < std::min(cols, j0 + kBlock); ++j) m[size_t(i * cols + j)] = value(i, j);
  return m;
}

}  // namespace vtpu
