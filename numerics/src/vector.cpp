// Vector-unit arithmetic on rows (docs/numerics.md, "Vector unit").
#include "vtpu/numerics/vector.h"

#include <cstring>
#include <string>

#include "arith.h"
#include "vtpu/numerics/convert.h"
#include "vtpu/numerics/float.h"
#include "vtpu/support/error.h"

namespace vtpu::numerics {
namespace {

using detail::HostArith;
using detail::SoftArith;

int64_t saturate(NumType t, int64_t v) {
  const int64_t lo = int_type_min(t), hi = int_type_max(t);
  return v < lo ? lo : (v > hi ? hi : v);
}

// ------------------------------------------------------------------ integers

int64_t int_binary(BinaryOp op, NumType t, int64_t a, int64_t b) {
  if (t == NumType::Int32) {  // modulo 2^32
    const uint32_t ua = static_cast<uint32_t>(a), ub = static_cast<uint32_t>(b);
    switch (op) {
      case BinaryOp::Add: return static_cast<int32_t>(ua + ub);
      case BinaryOp::Sub: return static_cast<int32_t>(ua - ub);
      case BinaryOp::Mul: return static_cast<int32_t>(ua * ub);
      case BinaryOp::Max: return a > b ? a : b;
      case BinaryOp::Min: return a < b ? a : b;
    }
  }
  switch (op) {  // narrow types saturate
    case BinaryOp::Add: return saturate(t, a + b);
    case BinaryOp::Sub: return saturate(t, a - b);
    case BinaryOp::Mul: return saturate(t, a * b);
    case BinaryOp::Max: return a > b ? a : b;
    case BinaryOp::Min: return a < b ? a : b;
  }
  return 0;
}

void int_binary_row(BinaryOp op, NumType dt, const void* a, const void* b, void* dst, size_t n) {
  if (dt == NumType::Int32 && op == BinaryOp::Add) {  // the accumulator's common case
    const auto* x = static_cast<const uint32_t*>(a);
    const auto* y = static_cast<const uint32_t*>(b);
    auto* d = static_cast<uint32_t*>(dst);
    for (size_t i = 0; i < n; ++i) d[i] = x[i] + y[i];
    return;
  }
  for (size_t i = 0; i < n; ++i)
    store_int(dt, dst, i, int_binary(op, dt, load_int(dt, a, i), load_int(dt, b, i)));
}

// ------------------------------------------------------------------ floats

template <class A, BinaryOp OP>
uint32_t f32_op(uint32_t x, uint32_t y) {
  if constexpr (OP == BinaryOp::Add) return A::add(x, y);
  if constexpr (OP == BinaryOp::Sub) return A::sub(x, y);
  if constexpr (OP == BinaryOp::Mul) return A::mul(x, y);
  if constexpr (OP == BinaryOp::Max) return sf::max(x, y);
  if constexpr (OP == BinaryOp::Min) return sf::min(x, y);
  return 0;
}

// Raw loads: the arithmetic applies DAZ itself (sf:: in software, MXCSR.DAZ on the host).
inline uint32_t raw_f32(NumType t, const void* row, size_t i) {
  if (t == NumType::Bf16) return bf16_to_f32_bits(static_cast<const uint16_t*>(row)[i]);
  uint32_t v;
  std::memcpy(&v, static_cast<const char*>(row) + 4 * i, 4);
  return v;
}

template <class A, BinaryOp OP>
void float_binary_typed(NumType dt, const void* a, const void* b, void* dst, size_t n) {
  if (dt == NumType::Fp32) {
    const auto* x = static_cast<const uint32_t*>(a);
    const auto* y = static_cast<const uint32_t*>(b);
    auto* d = static_cast<uint32_t*>(dst);
    for (size_t i = 0; i < n; ++i) d[i] = f32_canonical(f32_op<A, OP>(x[i], y[i]));
  } else {
    const auto* x = static_cast<const uint16_t*>(a);
    const auto* y = static_cast<const uint16_t*>(b);
    auto* d = static_cast<uint16_t*>(dst);
    for (size_t i = 0; i < n; ++i)
      d[i] = f32_to_bf16(f32_op<A, OP>(bf16_to_f32_bits(x[i]), bf16_to_f32_bits(y[i])));
  }
}

template <class A>
void float_binary(BinaryOp op, NumType dt, const void* a, const void* b, void* dst, size_t n) {
  switch (op) {
    case BinaryOp::Add: return float_binary_typed<A, BinaryOp::Add>(dt, a, b, dst, n);
    case BinaryOp::Sub: return float_binary_typed<A, BinaryOp::Sub>(dt, a, b, dst, n);
    case BinaryOp::Mul: return float_binary_typed<A, BinaryOp::Mul>(dt, a, b, dst, n);
    case BinaryOp::Max: return float_binary_typed<A, BinaryOp::Max>(dt, a, b, dst, n);
    case BinaryOp::Min: return float_binary_typed<A, BinaryOp::Min>(dt, a, b, dst, n);
  }
}

[[gnu::noinline]] void host_float_binary(BinaryOp op, NumType dt, const void* a, const void* b,
                                         void* dst, size_t n) {
  float_binary<HostArith>(op, dt, a, b, dst, n);
}

float scale_at(std::span<const float> v, size_t lane, float dflt) {
  if (v.empty()) return dflt;
  return v.size() == 1 ? v[0] : v[lane];
}

void check_lanes(std::span<const float> v, size_t n, const char* what) {
  if (v.size() > 1 && v.size() < n)
    throw UserError(std::string(what) + " has " + std::to_string(v.size()) +
                    " values; give 1 or one per lane (" + std::to_string(n) + ")");
}

template <class A>
void affine_impl(NumType dt, const void* a, void* dst, size_t n, std::span<const float> scale,
                 std::span<const float> bias) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t s = f32_bits(scale_at(scale, i, 1.0f)), c = f32_bits(scale_at(bias, i, 0.0f));
    if (is_float_type(dt)) {
      store_f32(dt, dst, i, A::add(A::mul(raw_f32(dt, a, i), s), c));
    } else {
      const uint32_t x = int_to_f32_rounded(load_int(dt, a, i));
      const uint32_t r = A::add(A::mul(x, s), c);
      store_int(dt, dst, i, f32_to_int_rne_sat(r, int_type_min(dt), int_type_max(dt)));
    }
  }
}

[[gnu::noinline]] void host_affine(NumType dt, const void* a, void* dst, size_t n,
                                   std::span<const float> scale, std::span<const float> bias) {
  affine_impl<HostArith>(dt, a, dst, n, scale, bias);
}

template <class A>
void avgpool_impl(NumType dt, std::span<const void* const> rows, void* dst, size_t n,
                  std::span<const float> scale) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t s = f32_bits(scale_at(scale, i, 1.0f));
    if (is_float_type(dt)) {
      uint32_t sum = raw_f32(dt, rows[0], i);
      for (size_t r = 1; r < rows.size(); ++r) sum = A::add(sum, raw_f32(dt, rows[r], i));
      // A one-row window still goes through the multiply, which applies DAZ.
      store_f32(dt, dst, i, A::mul(sum, s));
    } else {
      uint32_t sum = 0;  // int32, modulo 2^32
      for (size_t r = 0; r < rows.size(); ++r) sum += static_cast<uint32_t>(load_int(dt, rows[r], i));
      const uint32_t x = int_to_f32_rounded(static_cast<int32_t>(sum));
      store_int(dt, dst, i, f32_to_int_rne_sat(A::mul(x, s), int_type_min(dt), int_type_max(dt)));
    }
  }
}

[[gnu::noinline]] void host_avgpool(NumType dt, std::span<const void* const> rows, void* dst,
                                    size_t n, std::span<const float> scale) {
  avgpool_impl<HostArith>(dt, rows, dst, n, scale);
}

// Writes an fp32 (float dt) or int64 (integer dt) accumulator to every lane as type odt.
void broadcast_result(bool from_float, uint32_t fbits, int64_t ival, NumType odt, void* dst, size_t n) {
  if (n == 0) return;
  if (from_float) {
    const uint32_t one[1] = {fbits};
    convert_element(NumType::Fp32, one, 0, odt, dst, 0);
  } else {
    const int32_t one[1] = {static_cast<int32_t>(ival)};
    convert_element(NumType::Int32, one, 0, odt, dst, 0);
  }
  const size_t sz = num_type_size(odt);
  for (size_t i = 1; i < n; ++i) std::memcpy(static_cast<char*>(dst) + i * sz, dst, sz);
}

template <class A>
void rsum_impl(NumType dt, const void* a, NumType odt, void* dst, size_t n) {
  if (n == 0) return;
  if (is_float_type(dt)) {
    uint32_t sum = raw_f32(dt, a, 0);
    for (size_t i = 1; i < n; ++i) sum = A::add(sum, raw_f32(dt, a, i));
    broadcast_result(true, f32_canonical(sum), 0, odt, dst, n);
  } else {
    uint32_t sum = 0;
    for (size_t i = 0; i < n; ++i) sum += static_cast<uint32_t>(load_int(dt, a, i));
    broadcast_result(false, 0, static_cast<int32_t>(sum), odt, dst, n);
  }
}

[[gnu::noinline]] void host_rsum(NumType dt, const void* a, NumType odt, void* dst, size_t n) {
  rsum_impl<HostArith>(dt, a, odt, dst, n);
}

void require_window(std::span<const void* const> rows, const char* what) {
  if (rows.empty()) throw UserError(std::string(what) + ": the pooling window is empty (window=[...])");
}

}  // namespace

void binary_row(BinaryOp op, NumType dt, const void* a, const void* b, void* dst, size_t n) {
  if (!is_float_type(dt)) return int_binary_row(op, dt, a, b, dst, n);
  HostFpScope fp;
  host_float_binary(op, dt, a, b, dst, n);
}

void copy_row(NumType dt, const void* a, void* dst, size_t n) {
  std::memmove(dst, a, n * num_type_size(dt));
}

void relu_row(NumType dt, const void* a, void* dst, size_t n) {
  if (!is_float_type(dt)) {
    for (size_t i = 0; i < n; ++i) {
      const int64_t v = load_int(dt, a, i);
      store_int(dt, dst, i, v > 0 ? v : 0);
    }
    return;
  }
  for (size_t i = 0; i < n; ++i) store_f32(dt, dst, i, sf::max(raw_f32(dt, a, i), 0u));
}

void clamp_row(NumType dt, const void* a, void* dst, size_t n, double min, double max) {
  if (!is_float_type(dt)) {
    const IntBounds b = int_clamp_bounds(dt, min, max);
    for (size_t i = 0; i < n; ++i) {
      int64_t v = load_int(dt, a, i);
      if (v < b.lo) v = b.lo;
      if (v > b.hi) v = b.hi;
      store_int(dt, dst, i, v);
    }
    return;
  }
  const uint32_t lo = f64_to_f32(min), hi = f64_to_f32(max);
  for (size_t i = 0; i < n; ++i) store_f32(dt, dst, i, sf::min(sf::max(raw_f32(dt, a, i), lo), hi));
}

void affine_row(NumType dt, const void* a, void* dst, size_t n, std::span<const float> scale,
                std::span<const float> bias) {
  check_lanes(scale, n, "scale");
  check_lanes(bias, n, "bias");
  HostFpScope fp;
  host_affine(dt, a, dst, n, scale, bias);
}

void maxpool_row(NumType dt, std::span<const void* const> rows, void* dst, size_t n) {
  require_window(rows, "vec.maxpool");
  for (size_t i = 0; i < n; ++i) {
    if (is_float_type(dt)) {
      uint32_t m = f32_canonical(raw_f32(dt, rows[0], i));
      for (size_t r = 1; r < rows.size(); ++r) m = sf::max(m, raw_f32(dt, rows[r], i));
      store_f32(dt, dst, i, m);
    } else {
      int64_t m = load_int(dt, rows[0], i);
      for (size_t r = 1; r < rows.size(); ++r) {
        const int64_t v = load_int(dt, rows[r], i);
        if (v > m) m = v;
      }
      store_int(dt, dst, i, m);
    }
  }
}

void avgpool_row(NumType dt, std::span<const void* const> rows, void* dst, size_t n,
                 std::span<const float> scale) {
  require_window(rows, "vec.avgpool");
  check_lanes(scale, n, "scale");
  HostFpScope fp;
  host_avgpool(dt, rows, dst, n, scale);
}

void rsum_row(NumType dt, const void* a, NumType odt, void* dst, size_t n) {
  HostFpScope fp;
  host_rsum(dt, a, odt, dst, n);
}

void rmax_row(NumType dt, const void* a, void* dst, size_t n) {
  if (n == 0) return;
  if (is_float_type(dt)) {
    uint32_t m = f32_canonical(raw_f32(dt, a, 0));
    for (size_t i = 1; i < n; ++i) m = sf::max(m, raw_f32(dt, a, i));
    store_f32(dt, dst, 0, m);
  } else {
    int64_t m = load_int(dt, a, 0);
    for (size_t i = 1; i < n; ++i) {
      const int64_t v = load_int(dt, a, i);
      if (v > m) m = v;
    }
    store_int(dt, dst, 0, m);
  }
  const size_t sz = num_type_size(dt);
  for (size_t i = 1; i < n; ++i) std::memcpy(static_cast<char*>(dst) + i * sz, dst, sz);
}

namespace ref {

void binary_row(BinaryOp op, NumType dt, const void* a, const void* b, void* dst, size_t n) {
  if (!is_float_type(dt)) return int_binary_row(op, dt, a, b, dst, n);
  float_binary<SoftArith>(op, dt, a, b, dst, n);
}

void affine_row(NumType dt, const void* a, void* dst, size_t n, std::span<const float> scale,
                std::span<const float> bias) {
  affine_impl<SoftArith>(dt, a, dst, n, scale, bias);
}

void avgpool_row(NumType dt, std::span<const void* const> rows, void* dst, size_t n,
                 std::span<const float> scale) {
  require_window(rows, "vec.avgpool");
  avgpool_impl<SoftArith>(dt, rows, dst, n, scale);
}

void rsum_row(NumType dt, const void* a, NumType odt, void* dst, size_t n) {
  rsum_impl<SoftArith>(dt, a, odt, dst, n);
}

}  // namespace ref

}  // namespace vtpu::numerics
