// The command line itself: every documented exit code, choices and ranges checked before
// anything runs, input shapes checked exactly, one rule for a zoo model's defaults (shown
// in --help), and the progress line on terminals only.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <regex>

#include "cli_util.h"
#include "vtpu/models/onnx_builder.h"
#include "vtpu/runtime/npy.h"

namespace {

fs::path matmul_model(const fs::path& dir) {
  vtpu::testing::OnnxBuilder m;
  m.input("x", {4, 16});
  m.init("w", {16, 8}, 0.5f);
  m.node("MatMul", "mm", {"x", "w"}, {"y"});
  m.output("y", {4, 8});
  return m.save_to(dir / "mm.onnx");
}

// README and docs/runtime.md: 0 success, 1 bad input, 2 bad command line, 3 internal error.
TEST(CliArgs, EveryDocumentedExitCode) {
  EXPECT_EQ(vtpu("config list").code, 0);
  CliResult bad_input = vtpu("disasm /nonexistent/prog.vtpu");
  EXPECT_EQ(bad_input.code, 1);
  EXPECT_NE(bad_input.err.find("/nonexistent/prog.vtpu"), std::string::npos) << bad_input.err;
  CliResult usage = vtpu("run mlp0 --no-such-option");
  EXPECT_EQ(usage.code, 2);
  EXPECT_NE(usage.err.find("--no-such-option"), std::string::npos) << usage.err;
  CliResult internal = vtpu("config list", "VTPU_TEST_INTERNAL_ERROR=1 ");
  EXPECT_EQ(internal.code, 3);
  EXPECT_NE(internal.err.find("internal error"), std::string::npos) << internal.err;
  EXPECT_NE(internal.err.find("This is a bug in vtpu"), std::string::npos) << internal.err;
}

// Bad choices and out-of-range numbers are bad command lines: exit 2, naming the option and
// what it takes, before any model is compiled.
TEST(CliArgs, BadChoicesAndRangesExitTwo) {
  fs::path dir = scratch("choices");
  std::string model = matmul_model(dir).string();
  struct Case {
    std::string args, option;
  };
  for (const Case& c : std::vector<Case>{{"run " + model + " --dtype fp64", "--dtype"},
                                         {"compile " + model + " --dtype int4", "--dtype"},
                                         {"compile " + model + " --emit-mlir llvm", "--emit-mlir"},
                                         {"run " + model + " --image-norm zscore", "--image-norm"},
                                         {"compile " + model + " --image-norm zscore", "--image-norm"},
                                         {"run " + model + " --batch 0", "--batch"},
                                         {"run " + model + " --batch -3", "--batch"},
                                         {"compile " + model + " --batch 0", "--batch"},
                                         {"compare " + model + " --batch -1", "--batch"},
                                         {"compare " + model + " --dtypes int8,int4", "--dtypes"},
                                         {"compare " + model + " --accuracy-images -5", "--accuracy-images"},
                                         {"sim prog.vtpu --max-cycles 0", "--max-cycles"}}) {
    CliResult r = vtpu(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.err << r.out;
    EXPECT_NE(r.err.find(c.option), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(r.out.find("latency"), std::string::npos) << c.args << ": ran anyway\n" << r.out;
  }
  fs::remove_all(dir.parent_path());
}

// A transposed array has the right element count but the wrong shape: an error naming the
// input, both shapes and the fix. So is an array of the wrong type.
TEST(CliArgs, InputShapeAndTypeAreCheckedNotJustTheSize) {
  fs::path dir = scratch("shapes");
  std::string model = matmul_model(dir).string();
  fs::path transposed = dir / "x_t.npy", ints = dir / "x_i8.npy";
  vtpu::runtime::write_npy(transposed, {"<f4", {16, 4}, std::vector<uint8_t>(16 * 4 * 4)});
  vtpu::runtime::write_npy(ints, {"|i1", {4, 16}, std::vector<uint8_t>(16 * 4)});
  CliResult r = vtpu("run " + model + " -c tiny-8x8 --input x=" + transposed.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("input 'x' needs shape [4, 16] (64 elements) but the file holds [16, 4]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("transpose or reshape"), std::string::npos) << r.err;
  r = vtpu("run " + model + " -c tiny-8x8 --input x=" + ints.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("input 'x' must be floating point"), std::string::npos) << r.err;
  // The same check for programs: `vtpu sim` takes inputs in the program's layout.
  fs::path prog = dir / "mm.vtpu";
  ASSERT_EQ(vtpu("compile " + model + " -c tiny-8x8 --dtype bf16 -o " + prog.string()).code, 0);
  r = vtpu("sim " + prog.string() + " --input x=" + transposed.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("input 'x' needs shape [4, 16]"), std::string::npos) << r.err;
  fs::remove_all(dir.parent_path());
}

// `vtpu models` says what a zoo model defaults to; run and compile both follow it, and their
// --help says so instead of showing one preset as if it applied to every model.
// An exported model with a dynamic batch and image size (dims "N", "h", "w"): the compiler
// needs them, --shape gives them on compile, run and compare; what the model fixes stays.
TEST(CliArgs, ShapeGivesTheDimensionsAModelLeavesSymbolic) {
  fs::path dir = scratch("symbolic");
  vtpu::testing::OnnxBuilder m;
  m.input("img", {1, 2, 1, 1});
  m.init("w", {4, 2, 3, 3}, 0.4f);
  auto* c = m.node("Conv", "conv", {"img", "w"}, {"c"});
  vtpu::testing::OnnxBuilder::attr(c, "pads", std::vector<int64_t>{1, 1, 1, 1});
  m.node("Relu", "relu", {"c"}, {"y"});
  m.output("y", {1, 4, 1, 1});
  for (const char* v : {"img", "y"}) m.symbolic(v, 0, "N"), m.symbolic(v, 2, "h"), m.symbolic(v, 3, "w");
  const std::string model = m.save_to(dir / "dynamic.onnx").string();

  CliResult none = vtpu("compile " + model + " -c tiny-8x8 -o " + (dir / "a.vtpu").string());
  EXPECT_EQ(none.code, 1);
  EXPECT_NE(none.err.find("input 'img': dimension 2 is symbolic ('h' in [N, 2, h, w])"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("--shape img=1x2xhxw"), std::string::npos) << none.err;

  CliResult r = vtpu("run " + model + " -c tiny-8x8 --dtype bf16 -q --check --shape img=2x2x6x10 --output-dir " +
                     (dir / "out").string());
  ASSERT_EQ(r.code, 0) << r.err;
  vtpu::runtime::NpyArray y = vtpu::runtime::read_npy(dir / "out" / "y.npy");
  EXPECT_EQ(y.shape, (std::vector<int64_t>{2, 4, 6, 10}));
  EXPECT_TRUE(vtpu("compile " + model + " -c tiny-8x8 --shape img=1,2,5,5 -o " + (dir / "b.vtpu").string()).code == 0);
  EXPECT_EQ(vtpu("compare " + model + " -c tiny-8x8 --shape img=1x2x4x4").code, 0);

  struct Case { std::string args; int code; const char* says; };
  for (const Case& c : std::vector<Case>{
           {"--shape img=1x2x6", 1, "input 'img' has 4 dimensions [N, 2, h, w], not 3"},
           {"--shape img=1x3x6x6", 1, "the model fixes dimension 1 of input 'img' at 2"},
           {"--shape image=1x2x6x6", 1, "the model has no input 'image'; its inputs are: img"},
           {"--shape img=2x2x6x6 --batch 4", 1, "its batch (dimension 0) is 2 and --batch is 4"},
           {"--shape img=1x2xhx6", 1, "'h' is not a dimension"},
           {"--shape img=1x2x0x6", 1, "'0' is not a dimension"},
           {"--shape img", 1, "expected NAME=DIMS"},
       }) {
    CliResult b = vtpu("run " + model + " -c tiny-8x8 -q " + c.args);
    EXPECT_EQ(b.code, c.code) << c.args << "\n" << b.err;
    EXPECT_NE(b.err.find(c.says), std::string::npos) << c.args << "\n" << b.err;
  }
}

// INT8 calibration methods: each compiles and runs the trained LeNet close to fp32; a
// percentile that leaves values out gives other scales, so another program; bad values are
// bad command lines.
TEST(CliArgs, CalibrationMethodsChooseTheRanges) {
  fs::path dir = scratch("calibration_methods");
  std::map<std::string, std::string> programs;
  for (const std::string m : {"max", "percentile --calibration-percentile 50", "entropy"}) {
    fs::path out = dir / (m.substr(0, 3) + ".vtpu");
    CliResult c = vtpu("compile lenet5-fmnist --dtype int8 --calibration-method " + m + " -o " + out.string());
    ASSERT_EQ(c.code, 0) << m << "\n" << c.err;
    programs[m] = read_file(out);
  }
  EXPECT_NE(programs["max"], programs["percentile --calibration-percentile 50"]);
  CliResult r = vtpu("run lenet5-fmnist --dtype int8 --calibration-method entropy --check");
  ASSERT_EQ(r.code, 0) << r.err;
  auto at = r.out.find("check logits: max |error| ");
  ASSERT_NE(at, std::string::npos) << r.out;
  double pct = std::stod(r.out.substr(r.out.rfind(", ", r.out.find("%)", at)) + 2));
  EXPECT_LT(pct, 10.0) << r.out;
  for (const char* bad : {"--calibration-method kl", "--calibration-percentile 0", "--calibration-percentile 101"}) {
    CliResult b = vtpu(std::string("compile lenet5-fmnist --dtype int8 -o ") + (dir / "x.vtpu").string() + " " + bad);
    EXPECT_EQ(b.code, 2) << bad << "\n" << b.err;
    EXPECT_NE(b.err.find("--calibration-"), std::string::npos) << bad << "\n" << b.err;
  }
}

// INT8 of the user's own model without calibration data: a warning on compile and run, and
// run measures the error against fp32; with --calibrate, neither.
TEST(CliArgs, Int8WithoutCalibrationDataSaysSoAndMeasures) {
  fs::path dir = scratch("random_calibration");
  const std::string model = matmul_model(dir).string();
  CliResult c = vtpu("compile " + model + " --dtype int8 -o " + (dir / "a.vtpu").string());
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.err.find("warning: INT8 activation scales calibrated on seeded random inputs"), std::string::npos) << c.err;
  CliResult r = vtpu("run " + model + " --dtype int8 -q");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: INT8 activation scales calibrated on seeded random inputs"), std::string::npos) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex("measured on this run's inputs against .*: 'y' max \\|error\\| [0-9.e-]+ "
                                                     "\\(([0-9.]+)% of its largest \\|value\\|\\)")))
      << r.err;
  // The same figure --check prints (here the calibration's 16 random rows miss the largest
  // outputs of the run's: clipped, as the warning says can happen).
  CliResult k0 = vtpu("run " + model + " --dtype int8 --check");
  ASSERT_EQ(k0.code, 0) << k0.err;
  std::smatch cm;
  ASSERT_TRUE(std::regex_search(k0.out, cm, std::regex("check y: max \\|error\\| .*, ([0-9.]+)%\\)"))) << k0.out;
  EXPECT_NEAR(std::stod(m[1]), std::stod(cm[1]), 0.01) << r.err << k0.out;
  vtpu::runtime::NpyArray x{"<f4", {4, 16}, std::vector<uint8_t>(4 * 16 * 4, 0)};
  vtpu::runtime::write_npy(dir / "x.npy", x);
  CliResult k = vtpu("run " + model + " --dtype int8 -q --calibrate x=" + (dir / "x.npy").string());
  ASSERT_EQ(k.code, 0) << k.err;
  EXPECT_EQ(k.err.find("warning"), std::string::npos) << k.err;
  EXPECT_EQ(vtpu("run lenet5 --dtype int8 -q").err.find("warning"), std::string::npos);  // the zoo's seeded models
}

// --calibrate NAME=FOLDER: its .npy files (any whole number of batches each) in name order;
// the same data in one file gives the same program.
TEST(CliArgs, CalibrateTakesAFolderOfNpyFiles) {
  fs::path dir = scratch("calibrate_folder"), data = dir / "data";
  fs::create_directories(data);
  fs::create_directories(dir / "empty");
  const std::string model = matmul_model(dir).string();
  std::vector<float> all;
  for (int f = 0; f < 3; ++f) {
    std::vector<float> v(size_t(4 * 16 * (f + 1)));  // 1, 2 and 3 batches of [4, 16]
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(float(i * 7 + size_t(f))) * float(f + 1);
    all.insert(all.end(), v.begin(), v.end());
    vtpu::runtime::NpyArray a{"<f4", {int64_t(v.size() / 16), 16}, std::vector<uint8_t>(v.size() * 4)};
    std::memcpy(a.data.data(), v.data(), a.data.size());
    vtpu::runtime::write_npy(data / ("part" + std::to_string(f) + ".npy"), a);
  }
  vtpu::runtime::NpyArray one{"<f4", {int64_t(all.size() / 16), 16}, std::vector<uint8_t>(all.size() * 4)};
  std::memcpy(one.data.data(), all.data(), one.data.size());
  vtpu::runtime::write_npy(dir / "all.npy", one);
  CliResult a = vtpu("compile " + model + " --dtype int8 -o " + (dir / "a.vtpu").string() + " --calibrate x=" + data.string());
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.err.find("warning"), std::string::npos) << a.err;
  CliResult b = vtpu("compile " + model + " --dtype int8 -o " + (dir / "b.vtpu").string() + " --calibrate x=" +
                     (dir / "all.npy").string());
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(read_file(dir / "a.vtpu"), read_file(dir / "b.vtpu"));
  CliResult e = vtpu("compile " + model + " --dtype int8 -o " + (dir / "c.vtpu").string() + " --calibrate x=" +
                     (dir / "empty").string());
  EXPECT_EQ(e.code, 1);
  EXPECT_NE(e.err.find("holds no image (PNG, JPEG, BMP, PPM) or .npy files"), std::string::npos) << e.err;
}

// INT8 with --check (run) and compare: the quantization error layer by layer, one row per
// layer, the largest drop marked; bf16 has none.
TEST(CliArgs, Int8CheckShowsTheQuantizationErrorByLayer) {
  CliResult r = vtpu("run lenet5-fmnist --dtype int8 --check");
  ASSERT_EQ(r.code, 0) << r.err;
  size_t at = r.out.find("INT8 quantization error by layer");
  ASSERT_NE(at, std::string::npos) << r.out;
  std::string table = r.out.substr(at, r.out.find("check reference:", at) - at);
  int rows = 0, marked = 0;
  const std::regex row("\n(/[0-9]+/[A-Za-z]+)( +<- largest drop)? +(conv2d|pool|reshape|matmul) +([0-9.]+)");
  for (auto it = std::sregex_iterator(table.begin(), table.end(), row); it != std::sregex_iterator(); ++it) {
    ++rows;
    marked += (*it)[2].matched;
    EXPECT_GT(std::stod((*it)[4]), 20.0) << (*it)[0];  // dB: a trained model's layers quantize well
  }
  EXPECT_EQ(rows, 8) << table;  // 2 conv, 2 pool, flatten, 3 fully connected
  EXPECT_EQ(marked, 1) << table;
  CliResult b = vtpu("run lenet5-fmnist --dtype bf16 --check");
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(b.out.find("INT8 quantization error by layer"), std::string::npos);
  CliResult c = vtpu("compare lenet5-fmnist --accuracy-images 0");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("INT8 quantization error by layer"), std::string::npos) << c.out;
}

// compare takes the inputs and INT8 calibration run takes: int8 calibrated on the user's
// data (no warning) beside bf16 (which ignores it); without data it warns as run does.
TEST(CliArgs, CompareTakesInputsAndCalibrationData) {
  fs::path dir = scratch("compare_data");
  const std::string model = matmul_model(dir).string();
  std::vector<float> v(4 * 16);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::cos(float(i)) * 0.5f;
  vtpu::runtime::NpyArray x{"<f4", {4, 16}, std::vector<uint8_t>(v.size() * 4)};
  std::memcpy(x.data.data(), v.data(), x.data.size());
  vtpu::runtime::write_npy(dir / "x.npy", x);
  const std::string data = (dir / "x.npy").string();
  CliResult c = vtpu("compare " + model + " -c tiny-8x8 --input x=" + data + " --calibrate x=" + data +
                     " --calibration-method percentile");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(c.err.find("warning"), std::string::npos) << c.err;
  EXPECT_NE(c.out.find("int8"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("bf16"), std::string::npos) << c.out;
  CliResult w = vtpu("compare " + model + " -c tiny-8x8");
  ASSERT_EQ(w.code, 0) << w.err;
  EXPECT_NE(w.err.find("warning: INT8 activation scales calibrated on seeded random inputs"), std::string::npos) << w.err;
}

TEST(CliArgs, ZooModelsBringTheirOwnDefaultsInRunAndCompile) {
  CliResult models = vtpu("models");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(models.out, m, std::regex("\nmlp0 +(\\S+) +(\\S+) "))) << models.out;
  std::string config = m[1], dtype = m[2];
  ASSERT_NE(config, "tpu-v4-core");  // otherwise this test could not tell the rules apart
  for (const char* cmd : {"run", "compile", "compare"}) {
    CliResult help = vtpu(std::string(cmd) + " --help");
    EXPECT_EQ(help.code, 0);
    EXPECT_NE(help.out.find("default: a zoo model's own"), std::string::npos) << help.out;
    EXPECT_EQ(help.out.find("[tpu-v4-core]"), std::string::npos) << help.out;
    EXPECT_EQ(help.out.find("[bf16]"), std::string::npos) << help.out;
  }
  fs::path dir = scratch("defaults");
  CliResult c = vtpu("compile mlp0 -o " + (dir / "mlp0.vtpu").string());
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.err.find("config " + config + ", " + dtype + ")"), std::string::npos) << c.err;
  CliResult r = vtpu("run mlp0 -q --report " + (dir / "r.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(read_file(dir / "r.json").find("\"name\": \"" + config + "\""), std::string::npos);
  fs::remove_all(dir.parent_path());
}

// On a terminal (a pseudo-terminal from util-linux's `script`), `vtpu run` shows its phases,
// the compile's stage and share, the simulation's progress in bundles of the program's
// total, and an ETA; `vtpu compile` shows the compile's; piped or with -q it prints none of it.
TEST(CliArgs, ProgressShowsPhasesTotalAndEtaOnATerminalOnly) {
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "util-linux's script is not installed";
  fs::path dir = scratch("progress");
  CliResult c = vtpu("compile mlp0 -o " + (dir / "mlp0.vtpu").string());
  std::smatch m;
  ASSERT_TRUE(std::regex_search(c.err, m, std::regex("\\((\\d+) bundles"))) << c.err;
  std::string bundles = m[1];
  auto on_terminal = [&](const std::string& args) {
    std::string cmd = "timeout 300 script -qfec \"" + std::string(VTPU_BIN) + " " + args + "\" /dev/null </dev/null";
    CliResult r{};
    FILE* p = ::popen(cmd.c_str(), "r");
    std::array<char, 4096> buf;
    for (size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) r.out.append(buf.data(), n);
    r.code = WEXITSTATUS(::pclose(p));
    return r;
  };
  CliResult tty = on_terminal("run mlp0");
  ASSERT_EQ(tty.code, 0) << tty.out;
  EXPECT_NE(tty.out.find("compiling: "), std::string::npos) << tty.out;
  // The compile phase: the compiler's stage and share of the compile, and an ETA.
  EXPECT_TRUE(std::regex_search(tty.out, std::regex("compiling: codegen \\d+%, \\d+ s, ETA "))) << tty.out;
  CliResult compiled = on_terminal("compile mlp0 -o " + (dir / "tty.vtpu").string());
  ASSERT_EQ(compiled.code, 0) << compiled.out;
  EXPECT_TRUE(std::regex_search(compiled.out, std::regex("compiling: (import|lower|calibrate|codegen) \\d+%"))) << compiled.out;
  EXPECT_NE(tty.out.find("simulating: bundle "), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find(" of " + bundles + " ("), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find(", ETA "), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("latency"), std::string::npos) << tty.out;
  CliResult quiet = on_terminal("run mlp0 -q");
  ASSERT_EQ(quiet.code, 0) << quiet.out;
  EXPECT_EQ(quiet.out.find("compiling"), std::string::npos) << quiet.out;
  EXPECT_EQ(quiet.out.find("simulat"), std::string::npos) << quiet.out;
  CliResult piped = vtpu("run mlp0");
  ASSERT_EQ(piped.code, 0) << piped.err;
  EXPECT_EQ(piped.err.find("compiling"), std::string::npos) << piped.err;
  EXPECT_EQ(piped.err.find("simulat"), std::string::npos) << piped.err;
  fs::remove_all(dir.parent_path());
}

}  // namespace
