// The vtpu command line, run as a user would: outputs, messages and exit codes.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sys/wait.h>

#include "vtpu/isa/assembler.h"
#include "vtpu/isa/program.h"
#include "vtpu/runtime/npy.h"
#include "cli_util.h"

namespace {


TEST(Cli, AssembleDisassembleExample) {
  fs::path out = tmp("cli_matmul.vtpu");
  CliResult a = vtpu("asm " + (kRoot / "examples/matmul_tiled.s").string() + " -o " + out.string());
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_NE(a.err.find("tiny-8x8"), std::string::npos) << a.err;
  CliResult d = vtpu("disasm " + out.string());
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_NE(d.out.find("mxu.matmul mxu=0 src=r0+128 dst=r0+16 rows=16 dtype=int8 acc=1 swap=1 flag=f2"),
            std::string::npos)
      << d.out;
  // The listing assembles back to the same binary, config binding included.
  vtpu::isa::Program orig = vtpu::isa::read_program(out);
  EXPECT_NE(orig.config_fingerprint, 0u);
  EXPECT_EQ(vtpu::isa::assemble(d.out, "listing.s"), orig);
  fs::remove(out);
}

TEST(Cli, AssemblyErrorsExitOneWithLocation) {
  // A name of its own: /tmp is shared with whatever else runs on the machine.
  fs::path out = tmp("cli_rows_zero_" + std::to_string(::getpid()) + ".vtpu");
  fs::remove(out);
  CliResult r = vtpu("asm " + (kRoot / "isa/tests/bad/rows_zero.s").string() + " -o " + out.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("rows_zero.s:2:61: error:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("out of range [1, 65535]"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST(Cli, MissingInputIsAUserError) {
  CliResult r = vtpu("asm /nonexistent/prog.s");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("/nonexistent/prog.s: cannot open"), std::string::npos) << r.err;
}

TEST(Cli, DisasmRejectsGarbage) {
  fs::path junk = tmp("cli_junk.vtpu");
  std::ofstream(junk) << "this is not a program";
  CliResult r = vtpu("disasm " + junk.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("bad magic"), std::string::npos) << r.err;
  fs::remove(junk);
}

TEST(Cli, ConfigCheckPrintsResolvedPreset) {
  CliResult r = vtpu("config check tpu-v1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("tpu-v1"), std::string::npos);
  EXPECT_NE(r.out.find("fingerprint 0x"), std::string::npos);
  EXPECT_NE(r.out.find("256"), std::string::npos);  // the 256x256 array
}

TEST(Cli, ConfigCheckUnknownPresetListsPresets) {
  CliResult r = vtpu("config check tpu-v99");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("tpu-v99"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tpu-v4-core"), std::string::npos) << r.err;
}

TEST(Cli, ConfigCheckBadFileExitsOne) {
  fs::path bad = tmp("cli_bad.yaml");
  std::ofstream(bad) << "name: x\nclock_mhz: -5\n";
  CliResult r = vtpu("config check " + bad.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("cli_bad.yaml:2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("clock_mhz"), std::string::npos) << r.err;
  fs::remove(bad);
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(vtpu("").code, 2);
  EXPECT_EQ(vtpu("frobnicate").code, 2);
  EXPECT_EQ(vtpu("asm").code, 2);
  CliResult v = vtpu("--version");
  EXPECT_EQ(v.code, 0);
  EXPECT_NE(v.out.find("vtpu "), std::string::npos);
}

}  // namespace

namespace {

// Every malformed input in the repository gives exit code 1 and its file:line location.
TEST(Cli, EveryBadAssemblyFileExitsOne) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(kRoot / "isa/tests/bad")) {
    CliResult r = vtpu("asm " + e.path().string() + " -o " + tmp("bad_out.vtpu").string());
    EXPECT_EQ(r.code, 1) << e.path();
    EXPECT_NE(r.err.find(e.path().filename().string() + ":"), std::string::npos) << r.err;
    ++n;
  }
  EXPECT_GE(n, 20);
}

TEST(Cli, EveryBadConfigFileExitsOne) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(kRoot / "configs/tests/bad")) {
    CliResult r = vtpu("config check " + e.path().string());
    EXPECT_EQ(r.code, 1) << e.path() << "\n" << r.err;
    EXPECT_NE(r.err.find("error"), std::string::npos) << r.err;
    ++n;
  }
  EXPECT_GE(n, 20);
}

TEST(Cli, SimWritesOutputsReportAndTrace) {
  fs::path dir = tmp("cli_sim_out");
  fs::remove_all(dir);
  fs::path prog = tmp("cli_conv.vtpu");
  ASSERT_EQ(vtpu("asm " + (kRoot / "examples/conv3x3.s").string() + " -o " + prog.string()).code, 0);
  CliResult r = vtpu("sim " + prog.string() + " --output-dir " + dir.string() + " --report " + (dir / "r.json").string() +
                     " --trace " + (dir / "t.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("cycles"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("conv"), std::string::npos) << r.out;  // the per-tag table
  EXPECT_TRUE(fs::exists(dir / "y.npy"));
  EXPECT_EQ(fs::file_size(dir / "y.npy"), 128u + 128u);  // 64-byte-aligned header... + 4x4x8 int8
  EXPECT_GT(fs::file_size(dir / "r.json"), 500u);
  EXPECT_GT(fs::file_size(dir / "t.json"), 500u);
  // The same run again gives the same report.
  std::ifstream f1(dir / "r.json");
  std::string first((std::istreambuf_iterator<char>(f1)), {});
  ASSERT_EQ(vtpu("sim " + prog.string() + " -q --report " + (dir / "r2.json").string()).code, 0);
  std::ifstream f2(dir / "r2.json");
  std::string second((std::istreambuf_iterator<char>(f2)), {});
  EXPECT_EQ(first, second);
  fs::remove_all(dir);
}

TEST(Cli, SimRejectsWrongInputsAndBadPrograms) {
  fs::path prog = tmp("cli_conv2.vtpu");
  ASSERT_EQ(vtpu("asm " + (kRoot / "examples/conv3x3.s").string() + " -o " + prog.string()).code, 0);
  CliResult r = vtpu("sim " + prog.string() + " --input nosuch=x.npy");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("has no input 'nosuch'"), std::string::npos) << r.err;
  r = vtpu("sim " + prog.string() + " --input x=/nonexistent.npy");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("/nonexistent.npy"), std::string::npos) << r.err;
  r = vtpu("sim " + prog.string() + " -c tiny-4x4");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("built for config 'tiny-8x8'"), std::string::npos) << r.err;
  fs::path dead = tmp("cli_dead.s"), deadp = tmp("cli_dead.vtpu");
  std::ofstream(dead) << ".config tiny-4x4\n  wait f3\n  halt\n";
  ASSERT_EQ(vtpu("asm " + dead.string() + " -o " + deadp.string()).code, 0);
  r = vtpu("sim " + deadp.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("bundle 0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("deadlock"), std::string::npos) << r.err;
}

}  // namespace

#include "vtpu/models/onnx_builder.h"

namespace {

TEST(Cli, CompileThenSimulateAModel) {
  vtpu::testing::OnnxBuilder m;
  m.input("x", {2, 16});
  m.init("w", {16, 8}, 0.5f);
  m.node("MatMul", "mm", {"x", "w"}, {"h"});
  m.node("Relu", "act", {"h"}, {"y"});
  m.output("y", {2, 8});
  fs::path model = m.save("cli_model.onnx"), prog = tmp("cli_model.vtpu"), s = tmp("cli_model.s");
  CliResult c = vtpu("compile " + model.string() + " -c tiny-8x8 -o " + prog.string() + " --emit-asm " + s.string() +
                     " --emit-mlir tpu");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("tpu.matmul"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("clamp_min = 0.000000e+00"), std::string::npos) << c.out;  // the Relu fused
  // The 16 x 8 weight constant is elided, not printed value by value.
  EXPECT_NE(c.out.find("__elided__"), std::string::npos) << c.out;
  EXPECT_LT(c.out.size(), 4000u) << c.out;
  EXPECT_TRUE(fs::exists(s));
  CliResult r = vtpu("sim " + prog.string() + " --report " + tmp("cli_model.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("mm"), std::string::npos) << r.out;  // the layer's tag in the table
  CliResult bad = vtpu("compile " + model.string() + " -c tiny-8x8 --dtype fp64");
  EXPECT_EQ(bad.code, 2);  // a bad command line
  EXPECT_NE(bad.err.find("--dtype"), std::string::npos) << bad.err;
}

}  // namespace

namespace {

// A small CNN with an NCHW image input, run end to end as a user would.
fs::path small_cnn() {
  vtpu::testing::OnnxBuilder m;
  m.input("img", {1, 2, 8, 8});
  m.init("w1", {4, 2, 3, 3}, 0.4f);
  m.init("b1", {4}, 0.1f);
  m.init("w2", {6, 64}, 0.3f);
  m.init("b2", {6}, 0.1f);
  auto* c = m.node("Conv", "conv", {"img", "w1", "b1"}, {"c"});
  vtpu::testing::OnnxBuilder::attr(c, "pads", std::vector<int64_t>{1, 1, 1, 1});
  m.node("Relu", "relu", {"c"}, {"r"});
  auto* p = m.node("MaxPool", "pool", {"r"}, {"p"});
  vtpu::testing::OnnxBuilder::attr(p, "kernel_shape", std::vector<int64_t>{2, 2});
  vtpu::testing::OnnxBuilder::attr(p, "strides", std::vector<int64_t>{2, 2});
  m.node("Flatten", "flat", {"p"}, {"f"});
  vtpu::testing::OnnxBuilder::attr(m.node("Gemm", "fc", {"f", "w2", "b2"}, {"y"}), "transB", int64_t(1));
  m.output("y", {1, 6});
  return m.save("cli_cnn.onnx");
}

TEST(Cli, RunShowsLayersTotalsAndChecksAgainstFp32) {
  fs::path model = small_cnn(), dir = tmp("cli_run_out");
  fs::remove_all(dir);
  for (const char* dtype : {"bf16", "int8"}) {
    CliResult r = vtpu("run " + model.string() + " -c tiny-8x8 --dtype " + dtype + " --check --output-dir " + dir.string() +
                       " --csv " + (dir / "layers.csv").string() + " --report " + (dir / "r.json").string());
    ASSERT_EQ(r.code, 0) << r.err;
    for (const char* layer : {"conv", "pool", "fc"}) EXPECT_NE(r.out.find(layer), std::string::npos) << r.out;
    // Each layer row names its op and output shape: the conv's 4 channels on 8x8 (NHWC), the fc's 6.
    // (Columns are as wide as their content, so the cells are matched as whitespace-separated words.)
    EXPECT_TRUE(std::regex_search(r.out, std::regex("\nconv +conv2d +1x8x8x4 "))) << r.out;
    EXPECT_TRUE(std::regex_search(r.out, std::regex("\nfc +matmul +1x6 "))) << r.out;
    EXPECT_NE(r.out.find("latency"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("TOPS"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("J per inference"), std::string::npos) << r.out;
    // The check line gives the error relative to the reference; it must be small.
    auto at = r.out.find("check y: max |error| ");
    ASSERT_NE(at, std::string::npos) << r.out;
    auto pct = r.out.find("%)", at);
    double rel = std::stod(r.out.substr(r.out.rfind(", ", pct) + 2));
    EXPECT_LT(rel, std::string(dtype) == "int8" ? 6.0 : 3.0) << r.out;
    EXPECT_TRUE(fs::exists(dir / "y.npy"));
    std::ifstream csv(dir / "layers.csv");
    std::string header;
    std::getline(csv, header);
    EXPECT_EQ(header.rfind("layer,first_cycle", 0), 0u) << header;
  }
  fs::remove_all(dir);
}

// Integer inputs from integer .npy files (uint8 activations of a MatMulInteger, int64 ids
// of an embedding lookup) and an int32 output written bit for bit.
TEST(Cli, RunTakesIntegerNpyInputsAndWritesInt32Outputs) {
  vtpu::testing::OnnxBuilder m;
  const int64_t M = 3, K = 5, N = 4;
  m.input("a", {M, K}, onnx::TensorProto::UINT8);
  std::vector<int> b(size_t(K * N));
  for (size_t i = 0; i < b.size(); ++i) b[i] = int(i * 37 % 256);
  m.init_q("b", {K, N}, b, true);
  m.init_q("a_zp", {}, {100}, true);
  m.node("MatMulInteger", "mmi", {"a", "b", "a_zp"}, {"y"});
  m.output("y", {M, N}, onnx::TensorProto::INT32);
  fs::path model = m.save("cli_matmulinteger.onnx"), dir = tmp("cli_int_out"), a_file = tmp("cli_a_u8.npy");
  fs::remove_all(dir);
  std::vector<uint8_t> a(size_t(M * K));
  for (size_t i = 0; i < a.size(); ++i) a[i] = uint8_t(i * 53 % 256);
  vtpu::runtime::write_npy(a_file, {"|u1", {M, K}, a});
  CliResult r = vtpu("run " + model.string() + " -c tiny-8x8 --input a=" + a_file.string() + " --output-dir " + dir.string());
  ASSERT_EQ(r.code, 0) << r.err;
  vtpu::runtime::NpyArray y = vtpu::runtime::read_npy(dir / "y.npy");
  EXPECT_EQ(y.descr, "<i4");
  ASSERT_EQ(y.data.size(), size_t(M * N * 4));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      int32_t want = 0, got;
      for (int64_t k = 0; k < K; ++k) want += (int32_t(a[size_t(i * K + k)]) - 100) * b[size_t(k * N + j)];
      std::memcpy(&got, &y.data[size_t(i * N + j) * 4], 4);
      EXPECT_EQ(got, want) << i << ", " << j;
    }
  // A value int32 cannot hold is refused, naming the input.
  std::vector<uint8_t> big(size_t(M * K) * 8, 0);
  big[7] = 0x7f;  // element 0 = 2^63 - ...
  vtpu::runtime::write_npy(a_file, {"<i8", {M, K}, big});
  r = vtpu("run " + model.string() + " -c tiny-8x8 --input a=" + a_file.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("input 'a'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("int32 cannot hold"), std::string::npos) << r.err;
  fs::remove_all(dir);
  fs::remove(a_file);
}

// A model of input x [A, K] whose output i (int64) is ArgMax over K, and the values of x
// the tests give it, written to x_file; a float output r = Relu(x) beside it.
std::vector<float> argmax_model(vtpu::testing::OnnxBuilder& m, int64_t A, int64_t K, const fs::path& x_file) {
  m.input("x", {A, K});
  auto* mx = m.node("ArgMax", "amax", {"x"}, {"i"});
  vtpu::testing::OnnxBuilder::attr(mx, "axis", int64_t(1));
  vtpu::testing::OnnxBuilder::attr(mx, "keepdims", int64_t(0));
  m.node("Relu", "relu", {"x"}, {"r"});
  m.output("i", {A}, onnx::TensorProto::INT64);
  m.output("r", {A, K});
  std::vector<float> x(size_t(A * K));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 29 % 31) - 15);
  std::vector<uint8_t> xb(x.size() * 4);
  std::memcpy(xb.data(), x.data(), xb.size());
  vtpu::runtime::write_npy(x_file, {"<f4", {A, K}, xb});
  return x;
}

// i.npy and r.npy of argmax_model: the indices as int64, first of equals; r as float32.
void expect_argmax_outputs(const fs::path& dir, const std::vector<float>& x, int64_t A, int64_t K) {
  vtpu::runtime::NpyArray i = vtpu::runtime::read_npy(dir / "i.npy");
  EXPECT_EQ(i.descr, "<i8");
  ASSERT_EQ(i.data.size(), size_t(A * 8));
  for (int64_t a = 0; a < A; ++a) {
    int64_t want = 0, got = -1;
    for (int64_t k = 1; k < K; ++k) want = x[size_t(a * K + k)] > x[size_t(a * K + want)] ? k : want;
    std::memcpy(&got, &i.data[size_t(a) * 8], 8);
    EXPECT_EQ(got, want) << "row " << a;
  }
  EXPECT_EQ(vtpu::runtime::read_npy(dir / "r.npy").descr, "<f4");
}

// An output the model declares int64 (ArgMax's indices) is written as int64, not int32; a
// float output stays float32.
TEST(Cli, RunWritesIntegerOutputsInTheModelsOwnType) {
  vtpu::testing::OnnxBuilder m;
  const int64_t A = 3, K = 40;
  fs::path dir = tmp("cli_int64_out"), x_file = tmp("cli_argmax_x.npy");
  const std::vector<float> x = argmax_model(m, A, K, x_file);
  fs::path model = m.save("cli_argmax_int64.onnx");
  fs::remove_all(dir);
  CliResult r = vtpu("run " + model.string() + " -c tiny-8x8 -q --input x=" + x_file.string() + " --output-dir " + dir.string());
  ASSERT_EQ(r.code, 0) << r.err;
  expect_argmax_outputs(dir, x, A, K);
  // A comparison's bool output as bool, its Cast to uint8 as uint8.
  vtpu::testing::OnnxBuilder b;
  b.input("x", {A, K});
  b.init("zero", {}, 0, {0.0f});
  b.node("Greater", "gt", {"x", "zero"}, {"y"});
  vtpu::testing::OnnxBuilder::attr(b.node("Cast", "cast", {"y"}, {"z"}), "to", int64_t(onnx::TensorProto::UINT8));
  b.output("y", {A, K}, onnx::TensorProto::BOOL);
  b.output("z", {A, K}, onnx::TensorProto::UINT8);
  fs::path bool_model = b.save("cli_greater_bool.onnx");
  fs::remove_all(dir);
  r = vtpu("run " + bool_model.string() + " -c tiny-8x8 -q --input x=" + x_file.string() + " --output-dir " + dir.string());
  ASSERT_EQ(r.code, 0) << r.err;
  vtpu::runtime::NpyArray y = vtpu::runtime::read_npy(dir / "y.npy"), z = vtpu::runtime::read_npy(dir / "z.npy");
  EXPECT_EQ(y.descr, "|b1");
  EXPECT_EQ(z.descr, "|u1");
  ASSERT_EQ(y.data.size(), x.size());
  ASSERT_EQ(z.data.size(), x.size());
  for (size_t k = 0; k < x.size(); ++k) {
    EXPECT_EQ(y.data[k], x[k] > 0 ? 1 : 0) << k;
    EXPECT_EQ(z.data[k], x[k] > 0 ? 1 : 0) << k;
  }
  fs::remove_all(dir);
  fs::remove(x_file);
  // A float16 model's output as float16, a float64 model's as float64 (inputs in their types).
  for (auto [type, descr] : {std::pair{onnx::TensorProto::FLOAT16, "<f2"}, std::pair{onnx::TensorProto::DOUBLE, "<f8"}}) {
    vtpu::testing::OnnxBuilder f;
    f.input("x", {A, K}, type);
    f.node("Relu", "relu", {"x"}, {"y"});
    f.output("y", {A, K}, type);
    fs::path float_model = f.save(std::string("cli_float_") + descr[1] + descr[2] + ".onnx"), in = tmp("cli_float_x.npy");
    vtpu::runtime::write_npy(in, vtpu::runtime::npy_of(descr, {A, K}, std::vector<double>(x.begin(), x.end())));
    fs::remove_all(dir);
    r = vtpu("run " + float_model.string() + " -c tiny-8x8 -q --input x=" + in.string() + " --output-dir " + dir.string());
    ASSERT_EQ(r.code, 0) << r.err;
    vtpu::runtime::NpyArray out = vtpu::runtime::read_npy(dir / "y.npy");
    EXPECT_EQ(out.descr, descr);
    auto values = vtpu::runtime::npy_values(out);
    ASSERT_TRUE(values);
    ASSERT_EQ(values->size(), x.size());
    for (size_t k = 0; k < x.size(); ++k) EXPECT_EQ((*values)[k], std::max(0.0, double(x[k]))) << k;
    fs::remove(in);
  }
  fs::remove_all(dir);
}

// A compiled program records the model's output types (isa::TensorInfo::model_type), so
// `vtpu sim` of the .vtpu alone writes ArgMax's indices as int64 and a comparison as bool,
// as `vtpu run` of the ONNX file does; a float output stays as the program stores it.
TEST(Cli, SimOfAProgramWritesIntegerOutputsInTheModelsOwnType) {
  vtpu::testing::OnnxBuilder m;
  const int64_t A = 3, K = 40;
  fs::path prog = tmp("cli_sim_types.vtpu"), dir = tmp("cli_sim_types_out"), x_file = tmp("cli_sim_types_x.npy");
  const std::vector<float> x = argmax_model(m, A, K, x_file);
  m.init("zero", {}, 0, {0.0f});
  m.node("Greater", "gt", {"x", "zero"}, {"b"});
  m.output("b", {A, K}, onnx::TensorProto::BOOL);
  fs::path model = m.save("cli_sim_types.onnx");
  CliResult r = vtpu("compile " + model.string() + " -c tiny-8x8 -o " + prog.string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = vtpu("disasm " + prog.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(".tensor i role=output dtype=int32 shape=[3] addr="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("model_type=int64"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("model_type=bool"), std::string::npos) << r.out;
  // x's values are small integers: the program's bf16 input holds them exactly.
  fs::remove_all(dir);
  r = vtpu("sim " + prog.string() + " -q --input x=" + x_file.string() + " --output-dir " + dir.string());
  ASSERT_EQ(r.code, 0) << r.err;
  expect_argmax_outputs(dir, x, A, K);
  vtpu::runtime::NpyArray b = vtpu::runtime::read_npy(dir / "b.npy");
  EXPECT_EQ(b.descr, "|b1");
  ASSERT_EQ(b.data.size(), x.size());
  for (size_t k = 0; k < x.size(); ++k) EXPECT_EQ(b.data[k], x[k] > 0 ? 1 : 0) << k;
  fs::remove_all(dir);
  fs::remove(x_file);
  fs::remove(prog);
}

// INT8 calibration from the user's data: the program's scales are the calibration data's
// ranges (input: max |x| / 127; output: max |x W| / 127 over every sample), not the seeded
// random defaults'; bad calibration files are refused with what to fix.
TEST(Cli, CompileCalibratesInt8OnGivenData) {
  const int64_t K = 16, N = 8, S = 3;
  vtpu::testing::OnnxBuilder m;
  m.input("x", {1, K});
  auto& w = m.init("w", {K, N}, 0.5f);
  m.node("MatMul", "mm", {"x", "w"}, {"y"});
  m.output("y", {1, N});
  fs::path model = m.save("cli_calibrate.onnx"), calib = tmp("cli_calib.npy"), prog = tmp("cli_calib.vtpu");
  std::vector<float> x(size_t(S * K));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 7 % 23) - 11) * 0.25f;  // |x| <= 2.75
  std::vector<uint8_t> bytes(x.size() * 4);
  std::memcpy(bytes.data(), x.data(), bytes.size());
  vtpu::runtime::write_npy(calib, {"<f4", {S, K}, bytes});
  CliResult r = vtpu("compile " + model.string() + " -c tiny-8x8 --dtype int8 --calibrate x=" + calib.string() + " -o " +
                     prog.string());
  ASSERT_EQ(r.code, 0) << r.err;
  double max_x = 0, max_y = 0;
  for (int64_t s = 0; s < S; ++s)
    for (int64_t k = 0; k < K; ++k) max_x = std::max(max_x, double(std::fabs(x[size_t(s * K + k)])));
  for (int64_t s = 0; s < S; ++s)
    for (int64_t n = 0; n < N; ++n) {
      double y = 0;
      for (int64_t k = 0; k < K; ++k) y += double(x[size_t(s * K + k)]) * w[size_t(k * N + n)];
      max_y = std::max(max_y, std::fabs(y));
    }
  auto p = vtpu::isa::read_program(prog);
  int checked = 0;
  for (const auto& t : p.tensors) {
    if (t.name == "x") {
      EXPECT_NEAR(t.quant_scale, max_x / 127, 1e-6 * max_x);
      ++checked;
    }
    if (t.name == "y") {
      EXPECT_NEAR(t.quant_scale, max_y / 127, 1e-5 * max_y);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2);
  // vtpu run calibrates the same way before it simulates.
  r = vtpu("run " + model.string() + " -c tiny-8x8 --dtype int8 -q --calibrate x=" + calib.string());
  EXPECT_EQ(r.code, 0) << r.err;
  // 35 values are not whole batches of [1, 16]; bf16 needs no calibration; names must exist.
  vtpu::runtime::write_npy(calib, {"<f4", {5, 7}, std::vector<uint8_t>(5 * 7 * 4)});
  r = vtpu("compile " + model.string() + " -c tiny-8x8 --dtype int8 --calibrate x=" + calib.string() + " -o " + prog.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("holds 35 values, not a whole number of batches of shape [1, 16]"), std::string::npos) << r.err;
  r = vtpu("compile " + model.string() + " -c tiny-8x8 --dtype bf16 --calibrate x=" + calib.string() + " -o " + prog.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--calibrate applies to --dtype int8"), std::string::npos) << r.err;
  r = vtpu("compile " + model.string() + " -c tiny-8x8 --dtype int8 --calibrate z=" + calib.string() + " -o " + prog.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("the model has no input 'z'; its inputs are: x"), std::string::npos) << r.err;
  fs::remove(calib);
  fs::remove(prog);
}

// INT8 calibration runs the fp32 reference on several threads (VTPU_THREADS, default the
// processor count): each output is one thread's, computed as alone, so the scales and the
// program do not depend on the count. MobileNetV2's convolutions and classifier are split.
TEST(Cli, CalibrationThreadsGiveTheSameProgram) {
  std::string one = tmp("cli_threads1.vtpu").string(), three = tmp("cli_threads3.vtpu").string();
  CliResult r = vtpu("compile mobilenetv2 -c tpu-v4-core --dtype int8 -o " + one, "VTPU_THREADS=1 ");
  ASSERT_EQ(r.code, 0) << r.err;
  r = vtpu("compile mobilenetv2 -c tpu-v4-core --dtype int8 -o " + three, "VTPU_THREADS=3 ");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(read_file(one) == read_file(three)) << "the program changed with the calibration's thread count";
  r = vtpu("compile mobilenetv2 -c tpu-v4-core --dtype int8 -o " + one, "VTPU_THREADS=many ");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("VTPU_THREADS='many': give a whole number of threads, 1 or more"), std::string::npos) << r.err;
  fs::remove(one);
  fs::remove(three);
}

// A model exported in half precision: float16 weights, input and output. The compiler reads
// the weights exactly, the runtime takes a float16 .npy and the program runs in bf16.
TEST(Cli, RunsAFloat16Model) {
  const int64_t M = 2, K = 8, N = 4;
  vtpu::testing::OnnxBuilder m;
  m.input("x", {M, K}, onnx::TensorProto::FLOAT16);
  std::vector<float> w = m.init("w", {K, N}, 0.5f);
  m.node("MatMul", "mm", {"x", "w"}, {"y"});
  m.output("y", {M, N}, onnx::TensorProto::FLOAT16);
  fs::path model = m.save("cli_fp16.onnx"), x_file = tmp("cli_x_f16.npy"), dir = tmp("cli_fp16_out");
  {  // the weights as float16, the way a half-precision export stores them
    onnx::ModelProto mp;
    std::ifstream in(model, std::ios::binary);
    ASSERT_TRUE(mp.ParseFromIstream(&in));
    auto* t = mp.mutable_graph()->mutable_initializer(0);
    std::string raw(w.size() * 2, '\0');
    for (size_t i = 0; i < w.size(); ++i) {
      _Float16 h = _Float16(w[i]);
      w[i] = float(h);  // what the model holds
      std::memcpy(&raw[i * 2], &h, 2);
    }
    t->set_data_type(onnx::TensorProto::FLOAT16);
    t->set_raw_data(raw);
    std::ofstream out(model, std::ios::binary);
    mp.SerializeToOstream(&out);
  }
  std::vector<float> x(size_t(M * K));
  std::vector<uint8_t> xb(x.size() * 2);
  for (size_t i = 0; i < x.size(); ++i) {
    _Float16 h = _Float16(float(int(i * 5 % 17) - 8) / 8.0f);
    x[i] = float(h);
    std::memcpy(&xb[i * 2], &h, 2);
  }
  vtpu::runtime::write_npy(x_file, {"<f2", {M, K}, xb});
  fs::remove_all(dir);
  CliResult r = vtpu("run " + model.string() + " -c tiny-8x8 -q --input x=" + x_file.string() + " --output-dir " + dir.string());
  ASSERT_EQ(r.code, 0) << r.err;
  vtpu::runtime::NpyArray y = vtpu::runtime::read_npy(dir / "y.npy");
  ASSERT_EQ(y.descr, "<f2");  // the model's own output type
  auto got = vtpu::runtime::npy_values(y);
  ASSERT_TRUE(got);
  ASSERT_EQ(got->size(), size_t(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double want = 0;
      for (int64_t k = 0; k < K; ++k) want += double(x[size_t(i * K + k)]) * w[size_t(k * N + j)];
      // bf16 inputs, weights and output, then rounded to float16
      EXPECT_NEAR((*got)[size_t(i * N + j)], want, 0.02 * 2.0 + 0.01) << i << ", " << j;
    }
  fs::remove_all(dir);
  fs::remove(x_file);
}

TEST(Cli, RunRejectsBadInputs) {
  fs::path model = small_cnn();
  CliResult r = vtpu("run " + model.string() + " -c tiny-8x8 --input nope=x.npy");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("has no input 'nope'"), std::string::npos) << r.err;
  fs::path wrong = tmp("cli_wrong.npy");
  vtpu::runtime::write_npy(wrong, {"<f4", {3}, std::vector<uint8_t>(12)});
  r = vtpu("run " + model.string() + " -c tiny-8x8 --input img=" + wrong.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("needs shape [1, 2, 8, 8]"), std::string::npos) << r.err;
  // An image for a 2-channel input, and an image that is not there.
  r = vtpu("run " + model.string() + " -c tiny-8x8 --input img=" + tmp("cli_missing.png").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("image files fill [N, 1 or 3, H, W] inputs only"), std::string::npos) << r.err;
  r = vtpu("run lenet5-fmnist --input image=" + tmp("cli_missing.png").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("cli_missing.png: cannot read the image"), std::string::npos) << r.err;
  r = vtpu("run " + model.string() + " -c tiny-8x8 --image-norm zscore");
  EXPECT_EQ(r.code, 2);  // a bad command line
  EXPECT_NE(r.err.find("--image-norm: zscore not in {unit,imagenet}"), std::string::npos) << r.err;
}

}  // namespace

namespace {

TEST(Cli, CompareShowsInt8AndBf16SideBySide) {
  CliResult r = vtpu("compare lenet5 -c tiny-16x16 --dtypes int8,bf16");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  for (const char* s : {"int8", "bf16", "latency (ms)", "energy / inference", "error vs fp32", "energy mxu"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  CliResult bad = vtpu("compare lenet5 --dtypes int4");
  EXPECT_EQ(bad.code, 2);  // a bad command line
  EXPECT_NE(bad.err.find("int4"), std::string::npos) << bad.err;
}

}  // namespace

namespace {

// The HTML report's test, HtmlReportDrawsEveryChart, is in test_cli_reports.cpp.

}  // namespace
