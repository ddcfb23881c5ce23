// Transcendental functions as fixed sequences of fp32 operations (docs/numerics.md,
// "Transcendental functions"). Each algorithm is a template over the arithmetic (host FPU
// or soft-float) so tests can prove both give the same bits. Constants are given as bit
// patterns so that no compiler or host conversion is involved.
#include "vtpu/numerics/transcendental.h"

#include <array>
#include <memory>
#include <mutex>
#include <string>

#include "arith.h"
#include "vtpu/numerics/float.h"
#include "vtpu/support/error.h"

namespace vtpu::numerics {
namespace {

constexpr uint32_t kSign = 0x80000000u;
constexpr uint32_t kOne = 0x3F800000u;   // 1.0
constexpr uint32_t kTwo = 0x40000000u;   // 2.0
constexpr uint32_t kHalf = 0x3F000000u;  // 0.5

// exp
constexpr uint32_t kExpHi = 0x42B20000u;      // 89.0: above, the result is +inf
constexpr uint32_t kExpLo = 0xC2D00000u;      // -104.0: below, the result is +0
constexpr uint32_t kLog2e = 0x3FB8AA3Bu;      // 1.44269502 = 1/ln 2
constexpr uint32_t kRoundMagic = 0x4B400000u; // 1.5 * 2^23: x + M - M rounds x to an integer (RNE)
constexpr uint32_t kLn2Hi = 0x3F318000u;      // 0.693359375 (10 significant bits: n * kLn2Hi is exact)
constexpr uint32_t kLn2Lo = 0xB95E8083u;      // ln 2 - kLn2Hi = -2.12194442e-4
// 1/k! for k = 2..7 (Taylor series of exp; truncation error < 0.07 ulp on |r| <= ln2/2)
constexpr uint32_t kExpC[] = {0x3F000000u, 0x3E2AAAABu, 0x3D2AAAABu,
                              0x3C088889u, 0x3AB60B61u, 0x39500D01u};

// tanh: Taylor coefficients of x^3, x^5, ..., x^19 (Bernoulli numbers), used for |x| < 0.5
constexpr uint32_t kTanhSmall = 0x3F000000u;  // 0.5
constexpr uint32_t kTanhC[] = {0xBEAAAAABu, 0x3E088889u, 0xBD5D0DD1u, 0x3CB327A4u, 0xBC11371Bu,
                               0x3B6B69E8u, 0xBABED1B2u, 0x3A1AAC12u, 0xB97ABEBCu};

// erf for |x| < 1: x * sum c_n x^2n with c_n = 2/sqrt(pi) * (-1)^n / (n! (2n+1)), n = 0..11
// (computed in double from the exact fractions, then rounded to fp32).
constexpr uint32_t kErfC[] = {0x3F906EBBu, 0xBEC093A3u, 0x3DE71791u, 0xBCDC1672u,
                              0x3BAB2DE7u, 0xBA6016DAu, 0x38FCD193u, 0xB77A692Eu,
                              0x35DCF365u, 0xB42FBA17u, 0x327E62B9u, 0xB0A8EB8Cu};

// erfc(y) = exp(-y^2) * G(1/y) / y, G(t) = y erfc(y) exp(y^2), fitted by least squares
// (relative error, mpmath reference) as polynomials in s = 1/y - mid on three intervals of
// 1/y: [1, 2.5] (y in [0.4, 1], used by gelu only), [0.5, 1] and [0.105, 0.5] (y <= 9.52).
constexpr uint32_t kErfMaxX = 0x40800000u;    // 4.0: erf rounds to +-1 beyond
constexpr uint32_t kGeluTailU = 0x3ECCCCCDu;  // 0.4: gelu(x < 0) uses the erfc form from here
constexpr uint32_t kGeluMaxU = 0x41180000u;   // 9.5: |gelu| < 2^-126 for x < -13.4
constexpr uint32_t kVeltkamp = 0x45800800u;   // 4097 = 2^12 + 1: splits 24 bits into 12 + 12
constexpr uint32_t kGMidInner = 0x3FE00000u;  // 1.75
constexpr uint32_t kGInner[] = {0x3EA9EED2u, 0xBDD2E2FBu, 0x3CE9A3ACu, 0xBBCA7376u, 0x39C71B51u,
                                0x3A29994Bu, 0xBA0A8CDAu, 0x39A3B49Du, 0xB94DFBEBu, 0x38A879DFu};
constexpr uint32_t kGMidNear = 0x3F400000u;  // 0.75
constexpr uint32_t kGNear[] = {0x3EEFB53Cu, 0xBE2D2390u, 0x3C9E8120u, 0x3D2508E1u,
                               0xBD4EF7CFu, 0x3D1AC86Au, 0xBC87915Cu, 0xBAE20798u};
constexpr uint32_t kGMidFar = 0x3E9AE148u;  // 0.3025
constexpr uint32_t kGFar[] = {0x3F0A925Eu, 0xBE0A858Eu, 0xBE093F33u, 0x3E543E64u,
                              0xBDAA0BE4u, 0xBE1F3360u, 0x3EA36A4Bu, 0xBE490A28u};
constexpr uint32_t kInvSqrt2 = 0x3F3504F3u;  // 0.707106769

// log: x = 2^k m with m in (sqrt(1/2), sqrt 2], f = m - 1 (exact), s = f / (2 + f), and
// log(1 + f) = 2 atanh(s) = f - f^2/2 + s (f^2/2 + R(s^2)), R(z) = z (2/3 + 2/5 z + ... + 2/11 z^4)
// (Taylor; truncation below 0.03 ulp for |s| <= 0.1716).
constexpr uint32_t kSqrt2 = 0x3FB504F3u;  // 1.41421354: mantissas above it are halved
constexpr uint32_t kNegInf = 0xFF800000u;
constexpr uint32_t kLogC[] = {0x3F2AAAABu, 0x3ECCCCCDu, 0x3E924925u, 0x3E638E39u, 0x3E3A2E8Cu};

// Magnitude comparison of non-NaN values' absolute bit patterns is integer comparison.
constexpr uint32_t mag(uint32_t x) { return x & 0x7FFFFFFFu; }
// Ordered "less than" of two non-NaN values (both signs), exact and host-independent.
constexpr bool less(uint32_t a, uint32_t b) {
  const auto key = [](uint32_t x) -> int64_t {
    return (x & kSign) ? -static_cast<int64_t>(x & 0x7FFFFFFFu) - 1 : static_cast<int64_t>(x);
  };
  return key(a) < key(b);
}

template <class A>
struct Algo {
  // Horner: c[N-1], then p = p * s + c[i] down to c[0].
  template <size_t N>
  static uint32_t horner(const uint32_t (&c)[N], uint32_t s) {
    uint32_t p = c[N - 1];
    for (size_t i = N - 1; i-- > 0;) p = A::add(A::mul(p, s), c[i]);
    return p;
  }

  static uint32_t exp(uint32_t x) {
    x = f32_daz(x);
    if (f32_is_nan(x)) return kF32QNaN;
    if (mag(x) == 0) return kOne;
    if (less(kExpHi, x)) return kF32Inf;  // includes +inf
    if (less(x, kExpLo)) return 0;        // includes -inf
    // x = n ln2 + r, |r| <= ln2/2 (Cody-Waite: n * kLn2Hi and x - n * kLn2Hi are exact).
    const uint32_t t = A::mul(x, kLog2e);
    const uint32_t nf = A::sub(A::add(t, kRoundMagic), kRoundMagic);
    uint32_t r = A::sub(x, A::mul(nf, kLn2Hi));
    r = A::sub(r, A::mul(nf, kLn2Lo));
    // exp(r) = 1 + (r + r^2 * (1/2 + r/6 + ... + r^5/7!))
    const uint32_t q = horner(kExpC, r);
    const uint32_t p = A::add(kOne, A::add(r, A::mul(A::mul(r, r), q)));
    // Scale by 2^n by adding n to the exponent field: exact, or past the range.
    const int n = nf_to_int(nf);
    const int e = static_cast<int>((p >> 23) & 0xFFu) + n;
    if (e >= 0xFF) return kF32Inf;
    if (e <= 0) return 0;  // FTZ
    return (p & 0x807FFFFFu) | (static_cast<uint32_t>(e) << 23);
  }

  // An integral fp32 value with |v| < 2^23 as an int (bit manipulation only).
  static int nf_to_int(uint32_t v) {
    if (mag(v) == 0) return 0;
    const int e = static_cast<int>((v >> 23) & 0xFFu) - 127;
    const int m = static_cast<int>((v & 0x007FFFFFu) | 0x00800000u) >> (23 - e);
    return (v & kSign) ? -m : m;
  }

  static uint32_t tanh(uint32_t x) {
    x = f32_daz(x);
    if (f32_is_nan(x)) return kF32QNaN;
    if (mag(x) == 0) return x;
    if (mag(x) < kTanhSmall) {  // x + x * x^2 * P(x^2)
      const uint32_t x2 = A::mul(x, x);
      return A::add(x, A::mul(x, A::mul(x2, horner(kTanhC, x2))));
    }
    // |tanh x| = 1 - 2 / (exp(2|x|) + 1); exp overflow gives exactly 1.
    const uint32_t ax = mag(x);
    const uint32_t e = exp(A::add(ax, ax));
    const uint32_t r = A::sub(kOne, A::div(kTwo, A::add(e, kOne)));
    return r | (x & kSign);
  }

  static uint32_t sigmoid(uint32_t x) {
    x = f32_daz(x);
    if (f32_is_nan(x)) return kF32QNaN;
    return A::div(kOne, A::add(kOne, exp(x ^ kSign)));
  }

  // erf(u) for |u| < 1.
  static uint32_t erf_small(uint32_t u) {
    const uint32_t u2 = A::mul(u, u);
    return A::mul(u, horner(kErfC, u2));
  }

  // exp(-(hi + lo)) * G(1/y) = y erfc(y), with hi + lo = y^2 exactly, 0.4 <= y <= 9.5.
  static uint32_t gauss_tail(uint32_t y, uint32_t hi, uint32_t lo) {
    const uint32_t t = A::div(kOne, y);
    uint32_t g;
    if (!less(t, kOne)) {
      g = horner(kGInner, A::sub(t, kGMidInner));
    } else if (!less(t, kHalf)) {
      g = horner(kGNear, A::sub(t, kGMidNear));
    } else {
      g = horner(kGFar, A::sub(t, kGMidFar));
    }
    // exp(-hi - lo) = exp(-hi) * (1 - lo) to well below an ulp (|lo| < 2^-18).
    const uint32_t e = A::mul(exp(hi ^ kSign), A::sub(kOne, lo));
    return A::mul(e, g);
  }

  // y * y = hi + lo exactly (Dekker's product with Veltkamp's split; y >= 1, no overflow).
  static void square(uint32_t y, uint32_t& hi, uint32_t& lo) {
    const uint32_t c = A::mul(y, kVeltkamp);
    const uint32_t yh = A::sub(c, A::sub(c, y));
    const uint32_t yl = A::sub(y, yh);
    hi = A::mul(y, y);
    lo = A::add(A::add(A::sub(A::mul(yh, yh), hi), A::mul(A::add(yh, yh), yl)), A::mul(yl, yl));
  }

  static uint32_t erf(uint32_t x) {
    x = f32_daz(x);
    if (f32_is_nan(x)) return kF32QNaN;
    const uint32_t ax = mag(x);
    if (ax < kOne) return erf_small(x);
    if (less(kErfMaxX, ax)) return kOne | (x & kSign);  // erfc(4) < 2^-25: erf rounds to +-1
    uint32_t hi, lo;
    square(ax, hi, lo);
    const uint32_t erfc = A::div(gauss_tail(ax, hi, lo), ax);
    return A::sub(kOne, erfc) | (x & kSign);
  }

  // gelu(x) = x * Phi(x) = x/2 * (1 + erf(x / sqrt 2)).
  static uint32_t gelu(uint32_t x) {
    x = f32_daz(x);
    if (f32_is_nan(x)) return kF32QNaN;
    if (x == (kSign | kF32Inf)) return kSign;  // the limit: -0
    const bool neg = x & kSign;
    const uint32_t ax = mag(x);
    const uint32_t u = A::mul(ax, kInvSqrt2);
    if (u < (neg ? kGeluTailU : kOne)) {
      // 1 - erf(u) >= 0.57 here: no harmful cancellation.
      const uint32_t e = erf_small(u);
      const uint32_t phi = A::mul(kHalf, neg ? A::sub(kOne, e) : A::add(kOne, e));
      return A::mul(x, phi);
    }
    if (less(kGeluMaxU, u)) return neg ? kSign : x;  // Phi rounds to 0 or 1
    // u^2 = x^2 / 2, exactly: square |x|, then halve both parts.
    uint32_t hi, lo;
    square(ax, hi, lo);
    hi = A::mul(hi, kHalf);
    lo = A::mul(lo, kHalf);
    const uint32_t tail = gauss_tail(u, hi, lo);  // u * erfc(u)
    if (neg) {
      // x * erfc(u) / 2 = -|x| / (2u) * tail = -tail / sqrt 2: no division, and no
      // intermediate underflow before the final result.
      return A::mul(tail, kInvSqrt2) | kSign;
    }
    const uint32_t erfc = A::div(tail, u);
    return A::mul(x, A::sub(kOne, A::mul(kHalf, erfc)));
  }

  // An integer with |k| < 2^24 as fp32 (exact; bit manipulation only).
  static uint32_t int_to_f32(int k) {
    if (k == 0) return 0;
    const uint32_t a = static_cast<uint32_t>(k < 0 ? -k : k);
    int e = 31;
    while (!(a >> e)) --e;  // a in [2^e, 2^(e+1))
    const uint32_t m = (a << (23 - e)) & 0x007FFFFFu;
    return (k < 0 ? kSign : 0u) | (static_cast<uint32_t>(127 + e) << 23) | m;
  }

  // log(x) = k ln2 + log(1 + f), k ln2 in two parts (kLn2Hi has 10 significant bits, so
  // k * kLn2Hi is exact for |k| <= 2^14), added last as fdlibm does.
  static uint32_t log(uint32_t x) {
    x = f32_daz(x);
    if (f32_is_nan(x)) return kF32QNaN;
    if (mag(x) == 0) return kNegInf;  // denormals read as 0
    if (x & kSign) return kF32QNaN;
    if (x == kF32Inf) return kF32Inf;
    int k = static_cast<int>(x >> 23) - 127;
    uint32_t m = (x & 0x007FFFFFu) | kOne;  // [1, 2)
    if (m > kSqrt2) {
      m -= 0x00800000u;  // halved: (sqrt(1/2), 1)
      ++k;
    }
    const uint32_t f = A::sub(m, kOne);
    const uint32_t s = A::div(f, A::add(kTwo, f));
    const uint32_t z = A::mul(s, s);
    const uint32_t r = A::mul(z, horner(kLogC, z));
    const uint32_t hfsq = A::mul(kHalf, A::mul(f, f));
    const uint32_t kf = int_to_f32(k);
    // f - (hfsq - (s (hfsq + R) + k ln2_lo)), then + k ln2_hi
    const uint32_t lo = A::add(A::mul(s, A::add(hfsq, r)), A::mul(kf, kLn2Lo));
    return A::add(A::mul(kf, kLn2Hi), A::sub(f, A::sub(hfsq, lo)));
  }

  static uint32_t recip(uint32_t x) { return A::div(kOne, x); }
  static uint32_t rsqrt(uint32_t x) { return A::div(kOne, A::sqrt(x)); }

  static uint32_t eval(Transcendental f, uint32_t x) {
    uint32_t r = 0;
    switch (f) {
      case Transcendental::Exp: r = exp(x); break;
      case Transcendental::Tanh: r = tanh(x); break;
      case Transcendental::Sigmoid: r = sigmoid(x); break;
      case Transcendental::Gelu: r = gelu(x); break;
      case Transcendental::Erf: r = erf(x); break;
      case Transcendental::Recip: r = recip(x); break;
      case Transcendental::Rsqrt: r = rsqrt(x); break;
      case Transcendental::Log: r = log(x); break;
    }
    return f32_canonical(r);
  }
};

using HostAlgo = Algo<detail::HostArith>;
using SoftAlgo = Algo<detail::SoftArith>;

[[gnu::noinline]] uint32_t host_eval(Transcendental f, uint32_t x) { return HostAlgo::eval(f, x); }

[[gnu::noinline]] void host_row_f32(Transcendental f, const uint32_t* a, uint32_t* d, size_t n) {
  for (size_t i = 0; i < n; ++i) d[i] = HostAlgo::eval(f, a[i]);
}

[[gnu::noinline]] void build_table(Transcendental f, uint16_t* t) {
  for (uint32_t h = 0; h < 65536; ++h) t[h] = f32_to_bf16(HostAlgo::eval(f, h << 16));
}

constexpr size_t kNumFuncs = std::size(kAllTranscendentals);

const uint16_t* table_for(Transcendental f) {
  static std::once_flag once[kNumFuncs];
  static std::unique_ptr<uint16_t[]> tables[kNumFuncs];
  const size_t i = static_cast<size_t>(f);
  std::call_once(once[i], [&] {
    auto t = std::make_unique<uint16_t[]>(65536);
    HostFpScope fp;
    build_table(f, t.get());
    tables[i] = std::move(t);
  });
  return tables[i].get();
}

}  // namespace

std::string_view transcendental_name(Transcendental f) {
  switch (f) {
    case Transcendental::Exp: return "exp";
    case Transcendental::Tanh: return "tanh";
    case Transcendental::Sigmoid: return "sigmoid";
    case Transcendental::Gelu: return "gelu";
    case Transcendental::Erf: return "erf";
    case Transcendental::Recip: return "recip";
    case Transcendental::Rsqrt: return "rsqrt";
    case Transcendental::Log: return "log";
  }
  return "?";
}

uint32_t eval_f32(Transcendental f, uint32_t x) {
  HostFpScope fp;
  return host_eval(f, x);
}

uint16_t eval_bf16(Transcendental f, uint16_t x) { return table_for(f)[x]; }

std::span<const uint16_t, 65536> bf16_table(Transcendental f) {
  return std::span<const uint16_t, 65536>(table_for(f), 65536);
}

void transcendental_row(Transcendental f, NumType dt, const void* a, void* dst, size_t n) {
  if (dt == NumType::Bf16) {
    const uint16_t* t = table_for(f);
    const auto* s = static_cast<const uint16_t*>(a);
    auto* d = static_cast<uint16_t*>(dst);
    for (size_t i = 0; i < n; ++i) d[i] = t[s[i]];
    return;
  }
  if (dt != NumType::Fp32)
    throw UserError("vec." + std::string(transcendental_name(f)) + ": dtype " +
                    std::string(num_type_name(dt)) + " is not supported; use bf16 or fp32");
  HostFpScope fp;
  host_row_f32(f, static_cast<const uint32_t*>(a), static_cast<uint32_t*>(dst), n);
}

namespace ref {
uint32_t eval_f32(Transcendental f, uint32_t x) { return SoftAlgo::eval(f, x); }
}  // namespace ref

}  // namespace vtpu::numerics
