// compiler::config_fingerprint covers exactly the config values code generation reads, and
// INT8 calibration scales carry over between configs (docs/sweeps.md, "Making a point cheap"):
// - every schema key is perturbed alone; when the fingerprint stays, each test model's
//   program must stay byte-identical (apart from its config stamp) — the list is complete;
// - the keys the fingerprint covers are written down here, apart from the code, and must
//   change it;
// - a compile given another config's calibration gives the program a fresh compile gives.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <unistd.h>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "vtpu/compiler/compiler.h"
#include "vtpu/config/schema.h"
#include "vtpu/models/onnx_builder.h"
#include "vtpu/models/zoo.h"

namespace vtpu::compiler {
namespace {

using testing::OnnxBuilder;

// One encoder layer of a small transformer (sequence 16, hidden 32, 2 heads, FFN 64): layer
// norm, attention with softmax, residuals, GELU; with lenet5 (convolutions, pools, Gemm) the
// code paths that read the config.
std::filesystem::path tiny_transformer() {
  OnnxBuilder m(17, 3);
  const int64_t S = 16, D = 32, H = 2, F = 64, d = D / H;
  m.input("x", {1, S, D});
  auto linear = [&](const std::string& n, const std::string& x, int64_t in, int64_t out) {
    m.init(n + ".w", {in, out}, 0.3f);
    m.init(n + ".b", {out}, 0.1f);
    m.node("MatMul", n, {x, n + ".w"}, {n + ".mm"});
    m.node("Add", n + ".bias", {n + ".mm", n + ".b"}, {n + ".out"});
    return n + ".out";
  };
  auto norm = [&](const std::string& n, const std::string& x) {
    m.init(n + ".g", {D}, 0, std::vector<float>(size_t(D), 1.0f));
    m.init(n + ".beta", {D}, 0, std::vector<float>(size_t(D), 0.0f));
    OnnxBuilder::attr_f(m.node("LayerNormalization", n, {x, n + ".g", n + ".beta"}, {n + ".out"}), "epsilon", 1e-5f);
    return n + ".out";
  };
  m.init_i64("heads", {1, S, H, d});
  m.init_i64("merged", {1, S, D});
  m.init("sqrt_d", {}, 0, {std::sqrt(float(d))});
  auto heads = [&](const std::string& t, std::vector<int64_t> perm) {
    m.node("Reshape", t + ".r", {t, "heads"}, {t + ".h"});
    OnnxBuilder::attr(m.node("Transpose", t + ".t", {t + ".h"}, {t + ".ht"}), "perm", std::move(perm));
    return t + ".ht";
  };
  std::string q = heads(linear("q", "x", D, D), {0, 2, 1, 3}), k = heads(linear("k", "x", D, D), {0, 2, 3, 1});
  std::string v = heads(linear("v", "x", D, D), {0, 2, 1, 3});
  m.node("MatMul", "scores", {q, k}, {"scores"});
  m.node("Div", "scale", {"scores", "sqrt_d"}, {"scaled"});
  OnnxBuilder::attr(m.node("Softmax", "softmax", {"scaled"}, {"probs"}), "axis", int64_t(-1));
  m.node("MatMul", "context", {"probs", v}, {"context"});
  OnnxBuilder::attr(m.node("Transpose", "merge.t", {"context"}, {"context.t"}), "perm", std::vector<int64_t>{0, 2, 1, 3});
  m.node("Reshape", "merge", {"context.t", "merged"}, {"context.m"});
  m.node("Add", "residual1", {linear("o", "context.m", D, D), "x"}, {"res1"});
  std::string h = norm("norm1", "res1");
  m.init("half", {}, 0, {0.5f});
  m.init("one", {}, 0, {1.0f});
  m.init("sqrt2", {}, 0, {std::sqrt(2.0f)});
  std::string f1 = linear("ffn1", h, D, F);
  m.node("Div", "gelu.div", {f1, "sqrt2"}, {"gelu.div"});
  m.node("Erf", "gelu.erf", {"gelu.div"}, {"gelu.erf"});
  m.node("Add", "gelu.plus", {"gelu.erf", "one"}, {"gelu.plus"});
  m.node("Mul", "gelu.mul", {f1, "gelu.plus"}, {"gelu.mul"});
  m.node("Mul", "gelu", {"gelu.mul", "half"}, {"gelu"});
  m.node("Add", "residual2", {linear("ffn2", "gelu", F, D), h}, {"res2"});
  norm("norm2", "res2");
  m.output("norm2.out", {1, S, D});
  // One file per test process: ctest -j runs this suite's cases as parallel processes.
  return m.save(fmt::format("vtpu_fingerprint_transformer_{}.onnx", ::getpid()));
}

struct Case {
  std::filesystem::path model;
  Precision precision;
};

std::vector<Case> cases() {
  auto lenet = models::materialize("lenet5", models::default_dir());
  auto tr = tiny_transformer();
  return {{lenet, Precision::Int8}, {lenet, Precision::Bf16}, {tr, Precision::Int8}, {tr, Precision::Bf16}};
}

// The program's bytes without its config stamp, or the compile error.
std::string program_of(const Case& c, const config::Config& cfg, const std::vector<float>* scales = nullptr) {
  CompileOptions o;
  o.precision = c.precision;
  if (scales) o.calibration_scales = *scales;
  try {
    isa::Program p = compile_onnx(c.model, cfg, o).program;
    p.config_name.clear();
    p.config_fingerprint = 0;
    auto b = isa::serialize(p);
    return std::string(b.begin(), b.end());
  } catch (const UserError& e) {
    return std::string("error: ") + e.what();
  }
}

// Keys whose values code generation reads, written down apart from config_fingerprint.
// memory.bandwidth_gbytes_per_s and clock_mhz enter as their ratio (bytes per cycle).
const std::set<std::string> kReadByTheCompiler = {
    "clock_mhz", "core.mxu.count", "core.mxu.rows", "core.mxu.cols", "core.mxu.dtypes", "core.mxu.weight_shift_cycles",
    "core.mxu.input_latency_cycles", "core.mxu.output_latency_cycles", "core.unified_buffer.bytes",
    "core.unified_buffer.banks", "core.unified_buffer.row_bytes", "core.unified_buffer.alignment_bytes",
    "core.accumulators.rows", "core.vector.lanes", "core.vector.sublanes", "core.vector.latency_cycles.alu",
    "core.vector.latency_cycles.multiply", "core.vector.latency_cycles.transcendental", "core.vector.latency_cycles.reduce",
    "core.vector.latency_cycles.rescale", "core.vector.latency_cycles.convert", "core.vector.latency_cycles.pool",
    "memory.bytes", "memory.bandwidth_gbytes_per_s"};

// Candidate replacement values for one key, as YAML, in the order they are tried.
std::vector<std::string> candidates(const config::KeyInfo& k, const config::Config& c) {
  std::optional<double> v = config::numeric_value(c, k.path);
  std::vector<std::string> out;
  auto num = [&](double x) {
    if (x >= k.min && x <= k.max) out.push_back(fmt::format("{}", k.type == config::KeyType::kNumber ? x : std::round(x)));
  };
  switch (k.type) {
    case config::KeyType::kInt:
    case config::KeyType::kBytes:
      for (double x : {*v * 2, *v / 2, *v + 1, *v - 1, *v * 4}) num(std::floor(x));
      break;
    case config::KeyType::kString: out.push_back(k.path == "name" ? "other-name" : "\"another text\""); break;
    case config::KeyType::kBool: out = {"true", "false"}; break;
    case config::KeyType::kEnum:
      for (auto a : k.allowed) out.emplace_back(a);
      break;
    case config::KeyType::kEnumList: out = {"[bf16, int8]", "[int8, bf16]"}; break;
    case config::KeyType::kIntList: out = {k.path == "ici.twist" ? "[1, 0]" : "[2]"}; break;  // a twist ends in 0
    case config::KeyType::kSramTable: out = {"[{bytes: 8KiB, pj: 1}, {bytes: 1MiB, pj: 50}]"}; break;
    default:
      for (double x : {*v * 1.5, *v * 0.5, *v + 1}) num(x);
  }
  return out;
}

class Fingerprint : public ::testing::TestWithParam<std::string> {};

// Base: tiny-16x16 (both dtypes); perturbed from its resolved form (to_yaml), so one key
// changes alone and no default derived from it follows.
config::Config base() { return config::load_preset("tiny-16x16"); }

TEST_P(Fingerprint, AKeyLeftOutChangesNoProgramAndAKeyInItChangesTheFingerprint) {
  const std::string key = GetParam();
  config::Config b = base();
  const config::KeyInfo* info = nullptr;
  for (const auto& k : config::schema_keys())
    if (k.path == key) info = &k;
  ASSERT_TRUE(info);
  if (info->type == config::KeyType::kInt && info->min == info->max) {  // schema_version: one valid value
    EXPECT_EQ(kReadByTheCompiler.count(key), 0u);
    return;
  }
  // The first candidate that makes a valid config, changed in this key alone — except that
  // the chip count, the torus shape and the links only change together, and a twist needs a
  // torus of two dimensions.
  std::optional<config::Config> perturbed;
  for (const std::string& v : candidates(*info, b)) {
    YAML::Node doc = YAML::Load(config::to_yaml(b));
    auto set = [&](const std::string& k, const std::string& value) {
      YAML::Node at = doc;
      for (size_t from = 0, d; (d = k.find('.', from)) != std::string::npos; from = d + 1) at.reset(at[k.substr(from, d - from)]);
      at[k.substr(k.rfind('.') == std::string::npos ? 0 : k.rfind('.') + 1)] = YAML::Load(value);
    };
    set(key, v);
    if (key == "system.chips") set("ici.shape", "[" + v + "]"), set("ici.links", "2");
    if (key == "ici.shape") set("system.chips", "2"), set("ici.links", "1");
    if (key == "ici.twist") set("ici.shape", "[2, 2]"), set("system.chips", "4"), set("ici.links", "2");
    YAML::Emitter out;
    out << doc;
    try {
      config::Config c = config::load_string(out.c_str(), "perturbed");
      if (!(c == b)) {
        perturbed = c;
        break;
      }
    } catch (const config::ConfigError&) {
    }
  }
  ASSERT_TRUE(perturbed) << "no valid value to try for " << key;
  bool changed = config_fingerprint(*perturbed) != config_fingerprint(b);
  EXPECT_EQ(changed, kReadByTheCompiler.count(key) > 0) << key << (changed ? " changes" : " does not change")
                                                        << " the fingerprint";
  if (changed) return;
  for (const Case& c : cases())
    EXPECT_EQ(program_of(c, *perturbed), program_of(c, b))
        << key << " is left out of compiler::config_fingerprint but changes the program of " << c.model.filename() << " ("
        << (c.precision == Precision::Int8 ? "int8" : "bf16") << ")";
}

INSTANTIATE_TEST_SUITE_P(EveryKey, Fingerprint, ::testing::ValuesIn([] {
                           std::vector<std::string> keys;
                           for (const auto& k : config::schema_keys()) keys.emplace_back(k.path);
                           return keys;
                         }()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

TEST(FingerprintRatio, BandwidthAndClockCountOnlyAsBytesPerCycle) {
  config::Config a = base(), b = base();
  b.memory.bandwidth_gbytes_per_s *= 2;
  b.clock_mhz *= 2;
  EXPECT_EQ(config_fingerprint(a), config_fingerprint(b));
  for (const Case& c : cases()) EXPECT_EQ(program_of(c, a), program_of(c, b));
}

TEST(CalibrationReuse, ScalesFromAnotherConfigGiveTheFreshProgram) {
  config::Config a = base();
  // Another array, buffer and bandwidth: a different program, the same calibration.
  config::Config b = config::load_preset("tiny-8x8");
  for (const Case& c : cases()) {
    if (c.precision != Precision::Int8) continue;
    CompileOptions o;
    o.precision = Precision::Int8;
    CompileResult ra = compile_onnx(c.model, a, o);
    ASSERT_FALSE(ra.calibration_scales.empty());
    std::string fresh = program_of(c, b);
    ASSERT_EQ(fresh.rfind("error", 0), std::string::npos) << fresh;
    EXPECT_EQ(program_of(c, b, &ra.calibration_scales), fresh) << c.model;
    EXPECT_NE(fresh, program_of(c, a));
    // The scales a compile reports are those it used: passing them back changes nothing.
    o.calibration_scales = ra.calibration_scales;
    CompileResult again = compile_onnx(c.model, a, o);
    ASSERT_EQ(again.calibration_scales.size(), ra.calibration_scales.size());
    for (size_t i = 0; i < ra.calibration_scales.size(); ++i)
      EXPECT_TRUE(again.calibration_scales[i] == ra.calibration_scales[i] ||
                  (std::isnan(again.calibration_scales[i]) && std::isnan(ra.calibration_scales[i])));
  }
  CompileOptions wrong;
  wrong.precision = Precision::Int8;
  wrong.calibration_scales = {1.0f, 2.0f};
  EXPECT_THROW(compile_onnx(cases()[0].model, a, wrong), UserError);
}

// A model lowered once and compiled for several configs (as a sweep's worker does) gives each
// config the program, assembly, bounds and scales compile_onnx gives it, or the same error;
// a config that fails leaves the next ones unharmed.
TEST(ModelCompilerManyConfigs, EachConfigGetsWhatCompileOnnxGives) {
  std::vector<config::Config> cfgs;
  cfgs.push_back(base());
  config::Config faster = base();
  faster.memory.bandwidth_gbytes_per_s *= 8;  // another schedule, same lowering
  cfgs.push_back(faster);
  config::Config no_room = base();
  no_room.core.unified_buffer.bytes = 2 * 1024;  // does not fit, even in bands
  cfgs.push_back(no_room);
  config::Config bands = base();
  bands.core.unified_buffer.bytes = 16 * 1024;  // fits in chunks or bands only (lenet)
  cfgs.push_back(bands);
  cfgs.push_back(config::load_preset("tiny-8x8"));
  auto outcome = [](const std::function<CompileResult()>& fn) {
    try {
      CompileResult r = fn();
      auto b = isa::serialize(r.program);
      std::string s(b.begin(), b.end());
      s += r.assembly;
      for (const LayerBound& l : r.bounds) s += fmt::format("|{} {} {} {} {}", l.layer, l.macs, l.hbm_bytes, l.weight_tiles, l.bound_cycles());
      for (float f : r.calibration_scales) s += fmt::format(",{}", f);
      return s;
    } catch (const UserError& e) {
      return std::string("error: ") + e.what();
    }
  };
  for (const Case& c : cases()) {
    CompileOptions o;
    o.precision = c.precision;
    ModelCompiler many(c.model, o);
    int fitted = 0;
    for (const config::Config& cfg : cfgs) {
      std::string alone = outcome([&] { return compile_onnx(c.model, cfg, o); });
      fitted += alone.rfind("error", 0) != 0;
      EXPECT_EQ(outcome([&] { return many.compile(cfg); }), alone)
          << c.model.filename() << " " << (c.precision == Precision::Int8 ? "int8" : "bf16") << " on config "
          << (&cfg - cfgs.data());
    }
    EXPECT_GE(fitted, 3) << c.model.filename();
  }
}

TEST(DoesNotFit, NamesTheBufferAndTheAmounts) {
  auto lenet = models::materialize("lenet5", models::default_dir());
  config::Config small = base();
  small.core.unified_buffer.bytes = 2 * 1024;
  try {
    compile_onnx(lenet, small, {});
    FAIL() << "2 KiB of unified buffer should not hold LeNet-5, even in row bands";
  } catch (const DoesNotFitError& e) {
    EXPECT_EQ(e.key(), "core.unified_buffer.bytes");
    EXPECT_GT(e.needed(), e.available());
    EXPECT_LE(e.available(), small.core.unified_buffer.bytes);
    EXPECT_NE(std::string(e.what()).find(fmt::format("needs {} bytes", e.needed())), std::string::npos) << e.what();
  }
  config::Config tiny_hbm = base();
  tiny_hbm.memory.bytes = 64 * 1024;
  try {
    compile_onnx(lenet, tiny_hbm, {});
    FAIL() << "64 KiB of HBM should not hold LeNet-5";
  } catch (const DoesNotFitError& e) {
    EXPECT_EQ(e.key(), "memory.bytes");
    EXPECT_EQ(e.available(), tiny_hbm.memory.bytes);
    EXPECT_GT(e.needed(), e.available());
  }
}

}  // namespace
}  // namespace vtpu::compiler
