#pragma once
// The shared fixture of the compiler's end-to-end tests (compiler/tests/test_*.cpp, one file
// per op family): models built in C++ are compiled for each preset and precision, run on the
// simulator and compared with a plain fp32 forward pass written here from the ONNX operator
// definitions (bf16 tolerance).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "vtpu/models/onnx_builder.h"
#include "vtpu/compiler/compiler.h"
#include "vtpu/numerics/float.h"
#include "vtpu/sim/simulator.h"
#include "vtpu/support/child_process.h"
#include "vtpu/support/layout.h"


namespace vtpu::compiler {

using testing::OnnxBuilder;
using Vec = std::vector<float>;

// ---- fp32 reference (NCHW, as ONNX defines it) ----
inline Vec gemm(const Vec& x, int64_t M, int64_t K, const Vec& w, int64_t N, const Vec& b, bool transB) {
  Vec y(size_t(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = b.empty() ? 0 : b[size_t(j)];
      for (int64_t k = 0; k < K; ++k) s += double(x[size_t(i * K + k)]) * w[size_t(transB ? j * K + k : k * N + j)];
      y[size_t(i * N + j)] = float(s);
    }
  return y;
}
inline Vec relu(Vec x) {
  for (auto& v : x) v = std::max(v, 0.0f);
  return x;
}
inline Vec softmax_rows(const Vec& x, int64_t M, int64_t N) {
  Vec y(x.size());
  for (int64_t i = 0; i < M; ++i) {
    double m = -1e30, s = 0;
    for (int64_t j = 0; j < N; ++j) m = std::max(m, double(x[size_t(i * N + j)]));
    for (int64_t j = 0; j < N; ++j) s += std::exp(double(x[size_t(i * N + j)]) - m);
    for (int64_t j = 0; j < N; ++j) y[size_t(i * N + j)] = float(std::exp(double(x[size_t(i * N + j)]) - m) / s);
  }
  return y;
}
// Grouped convolution, x [C, H, W] (batch 1), w [CO, C / groups, K, K]; square stride and pads.
inline Vec conv_grouped(const Vec& x, int64_t C, int64_t H, int64_t W, const Vec& w, const Vec& b, int64_t CO, int64_t K,
                 int64_t stride, int64_t pad, int64_t groups, int64_t& OH, int64_t& OW) {
  OH = (H + 2 * pad - K) / stride + 1, OW = (W + 2 * pad - K) / stride + 1;
  int64_t Cg = C / groups, COg = CO / groups;
  Vec y(size_t(CO * OH * OW));
  for (int64_t o = 0; o < CO; ++o)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox) {
        double s = b[size_t(o)];
        for (int64_t i = 0; i < Cg; ++i)
          for (int64_t ky = 0; ky < K; ++ky)
            for (int64_t kx = 0; kx < K; ++kx) {
              int64_t iy = oy * stride + ky - pad, ix = ox * stride + kx - pad, c = o / COg * Cg + i;
              if (iy < 0 || ix < 0 || iy >= H || ix >= W) continue;
              s += double(x[size_t((c * H + iy) * W + ix)]) * w[size_t(((o * Cg + i) * K + ky) * K + kx)];
            }
        y[size_t((o * OH + oy) * OW + ox)] = float(s);
      }
  return y;
}
// x [C, H, W] (batch 1), w [CO, C, KH, KW], stride 1.
inline Vec conv(const Vec& x, int64_t C, int64_t H, int64_t W, const Vec& w, const Vec& b, int64_t CO, int64_t K, int64_t pad, int64_t& OH, int64_t& OW) {
  return conv_grouped(x, C, H, W, w, b, CO, K, 1, pad, 1, OH, OW);
}
// Convolution of a batch, x [N, C, H, W], w [CO, C, KH, KW]: strides, dilations and pads
// (top, left, bottom, right) per axis, as ONNX's Conv defines them.
struct ConvGeom {
  int64_t kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
};
inline Vec conv_nchw(const Vec& x, int64_t N, int64_t C, int64_t H, int64_t W, const Vec& w, const Vec& b, int64_t CO, const ConvGeom& g,
              int64_t& OH, int64_t& OW) {
  OH = (H + g.pt + g.pb - (g.dh * (g.kh - 1) + 1)) / g.sh + 1, OW = (W + g.pl + g.pr - (g.dw * (g.kw - 1) + 1)) / g.sw + 1;
  Vec y(size_t(N * CO * OH * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < CO; ++o)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          double s = b[size_t(o)];
          for (int64_t c = 0; c < C; ++c)
            for (int64_t ky = 0; ky < g.kh; ++ky)
              for (int64_t kx = 0; kx < g.kw; ++kx) {
                int64_t iy = oy * g.sh + ky * g.dh - g.pt, ix = ox * g.sw + kx * g.dw - g.pl;
                if (iy < 0 || ix < 0 || iy >= H || ix >= W) continue;
                s += double(x[size_t(((n * C + c) * H + iy) * W + ix)]) * w[size_t(((o * C + c) * g.kh + ky) * g.kw + kx)];
              }
          y[size_t(((n * CO + o) * OH + oy) * OW + ox)] = float(s);
        }
  return y;
}
inline Vec maxpool2(const Vec& x, int64_t C, int64_t H, int64_t W) {
  Vec y(size_t(C * (H / 2) * (W / 2)));
  for (int64_t c = 0; c < C; ++c)
    for (int64_t oy = 0; oy < H / 2; ++oy)
      for (int64_t ox = 0; ox < W / 2; ++ox) {
        float m = -INFINITY;
        for (int dy = 0; dy < 2; ++dy)
          for (int dx = 0; dx < 2; ++dx) m = std::max(m, x[size_t((c * H + oy * 2 + dy) * W + ox * 2 + dx)]);
        y[size_t((c * (H / 2) + oy) * (W / 2) + ox)] = m;
      }
  return y;
}

// A 3x3 convolution with pads 1 (H and W kept) of `in` into `out`, seeded weights `w_name`
// [co, ci, 3, 3] and bias `b_name`; returns the weights and bias for the reference.
inline std::pair<const Vec&, const Vec&> conv3x3(OnnxBuilder& m, const std::string& name, const std::string& in, const std::string& out,
                                          int64_t ci, int64_t co, float w_scale, float b_scale, const std::string& w_name,
                                          const std::string& b_name) {
  const Vec& w = m.init(w_name, {co, ci, 3, 3}, w_scale);
  const Vec& b = m.init(b_name, {co}, b_scale);
  auto* c = m.node("Conv", name, {in, w_name, b_name}, {out});
  OnnxBuilder::attr(c, "pads", std::vector<int64_t>{1, 1, 1, 1});
  OnnxBuilder::attr(c, "kernel_shape", std::vector<int64_t>{3, 3});
  return {w, b};
}

// Seeded test inputs: n values k / divisor for integers k uniform in [-1000, 1000].
inline Vec uniform_values(size_t n, unsigned seed, float divisor) {
  std::mt19937 rng(seed);
  Vec v(n);
  for (auto& x : v) x = float(int(rng() % 2001) - 1000) / divisor;
  return v;
}

inline std::vector<uint8_t> to_bf16(const Vec& v) {
  std::vector<uint8_t> b(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t h = numerics::f32_to_bf16(numerics::f32_bits(v[i]));
    std::memcpy(&b[i * 2], &h, 2);
  }
  return b;
}
inline Vec from_bf16(const std::string& bytes) {
  Vec v(bytes.size() / 2);
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, bytes.data() + i * 2, 2);
    v[i] = numerics::f32_from_bits(uint32_t(h) << 16);
  }
  return v;
}

inline const isa::TensorInfo& tensor(const isa::Program& p, const std::string& name) {
  for (const auto& t : p.tensors)
    if (t.name == name) return t;
  throw std::runtime_error("no tensor " + name);
}
// Values -> the program's input bytes (bf16, or int8 quantized with the tensor's scale).
inline std::vector<uint8_t> encode(const isa::Program& p, const std::string& name, const Vec& v) {
  const auto& t = tensor(p, name);
  if (t.dtype == isa::Dtype::Bf16) return to_bf16(v);
  if (t.dtype == isa::Dtype::Fp32) {  // float inputs read only by softmaxes
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  }
  if (t.dtype == isa::Dtype::Int32) {  // integer inputs (token ids, uint8 codes)
    std::vector<uint8_t> b(v.size() * 4);
    for (size_t i = 0; i < v.size(); ++i) {
      int32_t x = int32_t(v[i]);
      std::memcpy(&b[i * 4], &x, 4);
    }
    return b;
  }
  std::vector<uint8_t> b(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    b[i] = uint8_t(int8_t(std::clamp<double>(std::nearbyint(v[i] / t.quant_scale) + t.zero_point, -128, 127)));
  return b;
}
inline Vec decode(const isa::Program& p, const std::string& name, const std::string& bytes) {
  const auto& t = tensor(p, name);
  if (t.dtype == isa::Dtype::Bf16) return from_bf16(bytes);
  if (t.dtype == isa::Dtype::Int32) {
    Vec v(bytes.size() / 4);
    for (size_t i = 0; i < v.size(); ++i) {
      int32_t x;
      std::memcpy(&x, bytes.data() + i * 4, 4);
      v[i] = float(x);
    }
    return v;
  }
  Vec v(bytes.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = float((int8_t(bytes[i]) - t.zero_point) * t.quant_scale);
  return v;
}

// Simulates in a child process (one SystemC simulation per process); returns the output bytes.
inline std::string simulate(const config::Config& cfg, const isa::Program& p, const std::map<std::string, std::vector<uint8_t>>& in,
                     const std::string& out) {
  return run_in_child(
      [&] {
        auto res = sim::simulate(cfg, p, in);
        const auto& o = res.outputs.at(out);
        return "OK" + std::string(o.begin(), o.end());
      },
      [](const std::exception& e) { return std::string("ERR") + e.what(); }, "ERRchild crashed");
}

// A simulation's total cycles and one output's bytes, or its error (in a child process).
struct SimRun {
  uint64_t cycles = 0;
  std::string output;
  std::string error;
};

inline SimRun run_program(const config::Config& cfg, const isa::Program& p, const std::map<std::string, std::vector<uint8_t>>& in,
                const std::string& out) {
  std::string got = run_in_child(
      [&] {
        auto res = sim::simulate(cfg, p, in);
        const auto& o = res.outputs.at(out);
        std::string r = "OK";
        r.append(reinterpret_cast<const char*>(&res.stats.total_cycles), 8);
        return r + std::string(o.begin(), o.end());
      },
      [](const std::exception& e) { return std::string("ER") + e.what(); }, "ERthe simulation crashed");
  SimRun r;
  if (got.substr(0, 2) != "OK") {
    r.error = got.substr(2);
    return r;
  }
  std::memcpy(&r.cycles, got.data() + 2, 8);
  r.output = got.substr(10);
  return r;
}

// The program's only tensor of `role`.
inline const isa::TensorInfo& only(const isa::Program& p, isa::TensorRole role) {
  const isa::TensorInfo* found = nullptr;
  for (const auto& t : p.tensors)
    if (t.role == role) {
      EXPECT_EQ(found, nullptr) << "more than one tensor of that role";
      found = &t;
    }
  if (!found) throw std::runtime_error("no tensor of that role");
  return *found;
}

inline void expect_close(const Vec& got, const Vec& want, double rel) {
  ASSERT_EQ(got.size(), want.size());
  double mx = 0;
  for (float w : want) mx = std::max(mx, double(std::fabs(w)));
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], rel * mx + 1e-3) << "element " << i;
}

struct E2EParam {
  std::string preset;
  Precision precision;
};
inline void PrintTo(const E2EParam& p, std::ostream* os) { *os << p.preset << (p.precision == Precision::Int8 ? " int8" : " bf16"); }
class CompileE2E : public ::testing::TestWithParam<E2EParam> {
 protected:
  std::string preset() const { return GetParam().preset; }
  bool int8() const { return GetParam().precision == Precision::Int8; }
  CompileOptions options() const {
    CompileOptions o;
    o.precision = GetParam().precision;
    return o;
  }
  // bf16 rounds inputs, weights and outputs; int8 quantizes them (8 bits per tensor).
  double tolerance(double bf16) const { return int8() ? 4 * bf16 : bf16; }
  std::string id() const { return preset() + (int8() ? "_int8" : "_bf16"); }
  // Applied to the preset before compile_and_run compiles and simulates, when set.
  std::function<void(config::Config&)> tweak_config;
  // Compiles the model for this preset and precision (INT8 calibrated on `inputs`), runs it
  // on the simulator and returns output `out` as floats; a failed run fails the test.
  // Images go in and come out as the program stores them (NHWC), or with `nchw` as the
  // model sees them.
  Vec compile_and_run(const std::string& path, const std::map<std::string, Vec>& inputs, const std::string& out = "y",
                      bool nchw = false) {
    config::Config cfg = config::load_preset(preset());
    if (tweak_config) tweak_config(cfg);
    CompileOptions opt = options();
    opt.calibration = {inputs};
    CompileResult r = compile_onnx(path, cfg, opt);
    std::map<std::string, Vec> stored = inputs;  // in the program's layout
    if (nchw) {
      for (auto& [name, v] : stored)
        if (tensor(r.program, name).nhwc) v = nchw_to_nhwc(v, nchw_shape_of(tensor(r.program, name).shape));
      // Calibration samples are in the program's layout too: compile again with those.
      opt.calibration = {stored};
      r = compile_onnx(path, cfg, opt);
    }
    std::map<std::string, std::vector<uint8_t>> encoded;
    for (const auto& [name, v] : stored) encoded[name] = encode(r.program, name, v);
    std::string got = simulate(cfg, r.program, encoded, out);
    if (got.substr(0, 2) != "OK") {
      ADD_FAILURE() << got;
      return {};
    }
    Vec y = decode(r.program, out, got.substr(2));
    return nchw && tensor(r.program, out).nhwc ? nhwc_to_nchw(y, tensor(r.program, out).shape) : y;
  }
};

}  // namespace vtpu::compiler
