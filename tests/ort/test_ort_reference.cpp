// Zoo models against onnxruntime, an fp32 reference that shares no code with vtpu: the
// compiler's own fp32 interpreter (what `vtpu run --check` and INT8 calibration trust) must
// agree with it to fp32 rounding, and the chip's bf16 results must agree with it as closely as
// they agree with the interpreter. An importer or lowering that misreads an operator fails here
// even where the chip and the interpreter agree with each other.
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <unistd.h>

#include "vtpu/compiler/compiler.h"
#include "vtpu/models/onnx_builder.h"
#include "vtpu/models/zoo.h"
#include "vtpu/runtime/npy.h"
#include "vtpu/runtime/onnxruntime.h"
#include "vtpu/runtime/runtime.h"
#include "vtpu/support/child_process.h"
#include "vtpu/support/layout.h"

namespace {

namespace fs = std::filesystem;
using namespace vtpu;
using Values = std::map<std::string, std::vector<float>>;

struct Input {
  std::string name;
  std::vector<int64_t> shape;
  int64_t ids = 0;  // > 0: int64 ids of a Gather into a table of this many rows
};

// The model's run-time inputs: float32, or int64 ids that index a constant table (embedding
// lookups), which must be drawn inside the table (onnxruntime refuses others).
std::vector<Input> model_inputs(const fs::path& model) {
  onnx::ModelProto m;
  std::ifstream f(model, std::ios::binary);
  if (!m.ParseFromIstream(&f)) throw std::runtime_error(model.string() + " does not parse");
  std::map<std::string, int64_t> rows;
  for (const auto& t : m.graph().initializer())
    rows[t.name()] = t.dims_size() ? t.dims(0) : 0;
  std::vector<Input> out;
  for (const auto& in : m.graph().input()) {
    if (rows.count(in.name())) continue;
    Input i{in.name(), {}};
    for (const auto& d : in.type().tensor_type().shape().dim()) i.shape.push_back(d.dim_value());
    if (in.type().tensor_type().elem_type() == onnx::TensorProto::INT64) {
      for (const auto& n : m.graph().node())
        if (n.op_type() == "Gather" && n.input_size() > 1 && n.input(1) == in.name() && rows.count(n.input(0)))
          i.ids = rows[n.input(0)];
      if (i.ids <= 0) throw std::runtime_error("int64 input '" + in.name() + "' does not index a constant table");
    } else if (in.type().tensor_type().elem_type() != onnx::TensorProto::FLOAT) {
      throw std::runtime_error("input '" + in.name() + "' is neither float32 nor int64 ids");
    }
    out.push_back(i);
  }
  return out;
}

std::vector<float> floats_of(const runtime::NpyArray& a) {
  if (a.descr != "<f4") throw std::runtime_error("onnxruntime output is " + a.descr + ", not float32");
  std::vector<float> v(a.data.size() / 4);
  std::memcpy(v.data(), a.data.data(), a.data.size());
  return v;
}

struct Compared {
  double max_abs_error = 0, max_reference = 0;
  double relative() const { return max_abs_error / std::max(max_reference, 1e-30); }
};
Compared compare(const std::vector<float>& got, const std::vector<float>& want) {
  Compared c;
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    c.max_abs_error = std::max(c.max_abs_error, std::fabs(double(got[i]) - want[i]));
    c.max_reference = std::max(c.max_reference, std::fabs(double(want[i])));
  }
  return c;
}

struct Case {
  std::string model;
  double chip_tolerance;  // > 0: also compare the chip's bf16 results (a simulation) with onnxruntime
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.model; }

class OrtReference : public ::testing::TestWithParam<Case> {};

TEST_P(OrtReference, InterpreterAndChipAgreeWithOnnxRuntime) {
  const Case& c = GetParam();
  fs::path model = models::materialize(c.model, models::default_dir());
  fs::path dir = fs::temp_directory_path() / fmt::format("vtpu_ort_{}_{}", c.model, ::getpid());
  fs::create_directories(dir);

  // Seeded inputs in the model's layout, as .npy files for onnxruntime and the runtime.
  Values inputs;
  std::map<std::string, fs::path> files;
  std::map<std::string, runtime::NpyArray> feeds;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const auto& in : model_inputs(model)) {
    int64_t n = 1;
    for (int64_t d : in.shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    runtime::NpyArray a{in.ids ? "<i8" : "<f4", in.shape, std::vector<uint8_t>(v.size() * (in.ids ? 8 : 4))};
    if (in.ids) {
      std::uniform_int_distribution<int64_t> id(0, in.ids - 1);
      for (size_t i = 0; i < v.size(); ++i) {
        int64_t x = id(rng);
        v[i] = float(x);
        std::memcpy(&a.data[i * 8], &x, 8);
      }
    } else {
      for (auto& x : v) x = u(rng);
      std::memcpy(a.data.data(), v.data(), a.data.size());
    }
    fs::path f = dir / (in.name + ".npy");
    runtime::write_npy(f, a);
    files[in.name] = f;
    feeds[in.name] = a;
    inputs[in.name] = std::move(v);
  }

  runtime::OrtRun o = runtime::run_onnxruntime(model, feeds, dir);
  ASSERT_TRUE(o.ok) << o.why_not;

  // The interpreter takes and gives tensors in the program's layout (images NHWC, as the
  // compiler says).
  Values program_inputs = inputs;
  for (const auto& in : compiler::model_inputs(model))
    if (in.nhwc) program_inputs[in.name] = nchw_to_nhwc(inputs[in.name], nchw_shape_of(in.shape));
  Values ref = compiler::reference_outputs(model, program_inputs);
  ASSERT_FALSE(ref.empty());
  Values ort;
  for (const auto& [name, v] : ref) {
    ASSERT_TRUE(o.outputs.count(name)) << "onnxruntime gave no output " << name;
    const runtime::NpyArray& a = o.outputs.at(name);
    ASSERT_NE(a.shape.size(), 4u) << "image outputs would need the program's layout here";
    ort[name] = floats_of(a);
    Compared cmp = compare(v, ort[name]);
    std::printf("%s %s: interpreter vs onnxruntime %.3g relative\n", c.model.c_str(), name.c_str(), cmp.relative());
    // Both fp32; the sums run in different orders (and batch norm is folded into weights).
    EXPECT_LT(cmp.relative(), 2e-4) << c.model << " output " << name << ": interpreter vs onnxruntime, max |error| "
                                     << cmp.max_abs_error << " of " << cmp.max_reference;
  }

  if (c.chip_tolerance > 0) {
    std::string got = run_in_child(
        [&] {
          runtime::RunOptions o;
          o.precision = compiler::Precision::Bf16;
          o.input_files = files;
          auto run = runtime::run_model(model, config::load_preset("tpu-v4-core"), o);
          std::string r;
          for (const auto& [name, v] : run.outputs) {
            Compared cmp = compare(v, ort.at(name));
            r += fmt::format("{} {} {} ", name, cmp.max_abs_error, cmp.max_reference);
          }
          return r;
        },
        [](const std::exception& e) { return std::string("ERR ") + e.what(); }, "ERR child crashed");
    ASSERT_EQ(got.rfind("ERR", 0), std::string::npos) << got;
    std::istringstream is(got);
    std::string name;
    double err, mx;
    int outputs = 0;
    while (is >> name >> err >> mx) {
      ++outputs;
      std::printf("%s %s: chip (bf16) vs onnxruntime %.3g relative\n", c.model.c_str(), name.c_str(), err / mx);
      // bf16 weights and activations with fp32 accumulation: the zoo tests' thresholds.
      EXPECT_LT(err / mx, c.chip_tolerance) << c.model << " output " << name << ": chip (bf16) vs onnxruntime, max |error| " << err
                                << " of " << mx;
    }
    EXPECT_EQ(outputs, int(ort.size()));
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Zoo, OrtReference,
                         // lstm0 and lstm1 are not here: onnxruntime's CPU LSTM refuses their batch-first layout
                         // (layout=1); the ONNX node tests' shipped outputs check LSTM and GRU, batch-first included.
                         // cnn1 neither: 5.5G MACs per image through both fp32 interpreters; nor cnn0, whose
                         // output is an image (NCHW), which this comparison does not lay out.
                         ::testing::Values(Case{"mlp0", 0}, Case{"mlp1", 0}, Case{"lenet5", 0.02},
                                           Case{"resnet50", 0},
                                           Case{"mobilenetv2", 0.03}, Case{"bert-base-layer", 0.02},
                                           Case{"gpt2-block", 0.02}, Case{"bert-base-ids-layer", 0.02}),
                         [](const auto& info) {
                           std::string n = info.param.model;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

// `--check` feeds an input fixed with --fix to onnxruntime exactly: k = 2^53 + 1 (odd) read as a
// double becomes 2^53 (even), and y = x + float(k mod 2) would then differ by 1 from the chip's
// folded value.
TEST(FixedInputs, CheckFeedsIntegersPast2To53Exactly) {
  vtpu::testing::OnnxBuilder m;
  m.input("x", {1, 4});
  m.input("k", {}, onnx::TensorProto::INT64);
  m.init_i64("two", {2});
  m.node("Mod", "mod", {"k", "two"}, {"r"});
  vtpu::testing::OnnxBuilder::attr(m.node("Cast", "cast", {"r"}, {"rf"}), "to", int64_t(onnx::TensorProto::FLOAT));
  m.node("Add", "add", {"x", "rf"}, {"y"});
  m.output("y", {1, 4});
  fs::path path = m.save(fmt::format("vtpu_fix_exact_{}.onnx", ::getpid()));
  // In a child: SystemC runs one simulation per process, and the zoo cases fork after this.
  std::string got = run_in_child(
      [&] {
        runtime::RunOptions o;
        o.precision = compiler::Precision::Bf16;
        o.fixed = {{"k", "9007199254740993"}};
        o.check = true;
        o.check_reference = "onnxruntime";
        runtime::ModelRun run = runtime::run_model(path, config::load_preset("tiny-16x16"), o);
        if (run.check_reference_short != "onnxruntime") return "ERR reference: " + run.check_reference;
        if (run.checks.size() != 1) return std::string("ERR not one check");
        return fmt::format("{}", run.checks[0].max_abs_error);
      },
      [](const std::exception& e) { return std::string("ERR ") + e.what(); }, "ERR child crashed");
  fs::remove(path);
  ASSERT_EQ(got.rfind("ERR", 0), std::string::npos) << got;
  EXPECT_LT(std::stod(got), 0.05) << "onnxruntime got k rounded to an even number";
}

// A bool model input read from a numpy bool file, a Where on it and a Not of it as a bool
// output, against onnxruntime fed the same file.
TEST(BoolInputs, ReadFromNumpyBoolFilesAndAgreeWithOnnxruntime) {
  vtpu::testing::OnnxBuilder m;
  m.input("c", {2, 4}, onnx::TensorProto::BOOL);
  m.input("x", {2, 4});
  m.init("k", {1}, 0, {-2.0f});
  m.node("Where", "pick", {"c", "x", "k"}, {"z"});
  m.node("Not", "flip", {"c"}, {"nc"});
  m.output("z", {2, 4});
  m.output("nc", {2, 4}, onnx::TensorProto::BOOL);
  fs::path dir = fs::temp_directory_path() / fmt::format("vtpu_bool_in_{}", ::getpid());
  fs::create_directories(dir);
  fs::path path = m.save_to(dir / "model.onnx");
  runtime::NpyArray c{"|b1", {2, 4}, {1, 0, 1, 0, 0, 0, 1, 1}};
  runtime::write_npy(dir / "c.npy", c);
  std::string got = run_in_child(
      [&] {
        runtime::RunOptions o;
        o.precision = compiler::Precision::Bf16;
        o.input_files = {{"c", dir / "c.npy"}};
        o.check = true;
        o.check_reference = "onnxruntime";
        runtime::ModelRun run = runtime::run_model(path, config::load_preset("tiny-16x16"), o);
        if (run.check_reference_short != "onnxruntime") return "ERR reference: " + run.check_reference;
        std::string r;
        for (const auto& ch : run.checks) r += fmt::format("{} {} ", ch.output, ch.max_abs_error);
        return r;
      },
      [](const std::exception& e) { return std::string("ERR ") + e.what(); }, "ERR child crashed");
  fs::remove_all(dir);
  ASSERT_EQ(got.rfind("ERR", 0), std::string::npos) << got;
  std::istringstream is(got);
  std::string name;
  double err;
  int outputs = 0;
  while (is >> name >> err) {
    ++outputs;
    EXPECT_LT(err, name == "nc" ? 1e-9 : 0.01) << name;
  }
  EXPECT_EQ(outputs, 2) << got;
}

}  // namespace
