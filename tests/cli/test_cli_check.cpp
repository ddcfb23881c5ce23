// `vtpu run --check` against onnxruntime on the original ONNX file (docs/runtime.md): the
// reference it says it used, images fed in the file's NCHW layout and int64 ids as int64, the
// fall-back to vtpu's fp32 interpreter when onnxruntime cannot run (and why), and a check that
// reads onnxruntime's numbers: a doctored onnxruntime makes it fail.
#include <gtest/gtest.h>

#include <regex>

#include <cstring>

#include "cli_util.h"
#include "vtpu/models/onnx_builder.h"
#include "vtpu/runtime/npy.h"

namespace {

// An image through a conv (an NCHW input and output, NHWC on the chip), a classifier head,
// and an embedding lookup of int64 ids.
fs::path check_model() {
  vtpu::testing::OnnxBuilder m(13, 5);
  m.input("image", {1, 2, 4, 4});
  m.input("ids", {1, 3}, onnx::TensorProto::INT64);
  m.init("w", {3, 2, 3, 3}, 0.4f);
  m.init("b", {3}, 0.1f);
  m.init("fc", {5, 48}, 0.2f);
  m.init("table", {10, 4}, 1.0f);
  auto* conv = m.node("Conv", "conv", {"image", "w", "b"}, {"c"});
  vtpu::testing::OnnxBuilder::attr(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
  m.node("Relu", "relu", {"c"}, {"feat"});
  m.node("Flatten", "flat", {"feat"}, {"f"});
  vtpu::testing::OnnxBuilder::attr(m.node("Gemm", "head", {"f", "fc"}, {"logits"}), "transB", int64_t(1));
  m.node("Gather", "embed", {"table", "ids"}, {"emb"});
  m.output("feat", {1, 3, 4, 4});
  m.output("logits", {1, 5});
  m.output("emb", {1, 3, 4});
  return m.save("cli_check_" + std::to_string(::getpid()) + ".onnx");
}

// " --input ids=FILE": ids inside the 10-row table, as int64 (onnxruntime refuses others).
std::string ids_input() {
  fs::path f = fs::temp_directory_path() / ("cli_check_ids_" + std::to_string(::getpid()) + ".npy");
  int64_t ids[3] = {0, 7, 9};
  vtpu::runtime::NpyArray a{"<i8", {1, 3}, std::vector<uint8_t>(sizeof ids)};
  std::memcpy(a.data.data(), ids, sizeof ids);
  vtpu::runtime::write_npy(f, a);
  return " --input ids=" + f.string();
}

// The relative error (%) of one output's check line.
double check_percent(const std::string& out, const std::string& output) {
  std::smatch mt;
  std::regex line("check " + output + ": max \\|error\\| \\S+ against [^(]+\\(largest \\|value\\| \\S+, ([0-9.]+)%\\)");
  if (!std::regex_search(out, mt, line)) return -1;
  return std::stod(mt[1]);
}

// A stand-in for runtime_driver/ort/ort_run.js: it runs the real one, then rewrites every
// float of onnxruntime's first output v as `value_expr` (JavaScript, of v). VTPU_ORT_SCRIPT
// points the check at it.
fs::path doctored_onnxruntime(const std::string& tag, const std::string& value_expr) {
  fs::path fake = fs::temp_directory_path() / ("cli_check_" + tag + "_" + std::to_string(::getpid()) + ".js");
  std::ofstream(fake) << "const { execFileSync } = require('child_process');\n"
                         "const fs = require('fs'), path = require('path');\n"
                         "execFileSync('node', ['"
                      << (kRoot / "runtime_driver/ort/ort_run.js").string()
                      << "', ...process.argv.slice(2)], { stdio: 'inherit' });\n"
                         "const f = path.join(process.argv[3], 'output0.npy'), b = fs.readFileSync(f), h = b.readUInt16LE(8);\n"
                         "for (let i = 10 + h; i + 4 <= b.length; i += 4) { const v = b.readFloatLE(i); b.writeFloatLE("
                      << value_expr << ", i); }\n"
                         "fs.writeFileSync(f, b);\n";
  return fake;
}

TEST(CliCheck, ComparesWithOnnxRuntimeOnTheModelFile) {
  fs::path model = check_model();
  CliResult r = vtpu("run " + model.string() + " -c tiny-8x8 --dtype bf16 --check" + ids_input());
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("check reference: onnxruntime 1."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(model.filename().string()), std::string::npos) << r.out;
  for (const char* output : {"feat", "logits", "emb"}) {
    EXPECT_NE(r.out.find(std::string("check ") + output + ": max |error| "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("against onnxruntime"), std::string::npos) << r.out;
    double pct = check_percent(r.out, output);
    // bf16 weights and activations: well under 3% of the largest value; a layout or type
    // mix-up in feeding onnxruntime would be far off.
    EXPECT_GE(pct, 0) << output << "\n" << r.out;
    EXPECT_LT(pct, 3.0) << output << "\n" << r.out;
  }
}

TEST(CliCheck, FallsBackToTheInterpreterAndSaysWhy) {
  fs::path model = check_model();
  CliResult r = vtpu("run " + model.string() + " -c tiny-8x8 --dtype bf16 --check" + ids_input(), "VTPU_NODE_DIR=/nonexistent/vtpu ");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("check reference: vtpu's fp32 interpreter"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("onnxruntime-node is not installed in /nonexistent/vtpu/node_modules"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("against the fp32 interpreter"), std::string::npos) << r.out;
  EXPECT_LT(check_percent(r.out, "logits"), 3.0) << r.out;

  r = vtpu("run " + model.string() + " -c tiny-8x8 --dtype bf16 --reference interpreter" + ids_input());
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("onnxruntime not used: --reference interpreter"), std::string::npos) << r.out;

  // Asking for onnxruntime where it cannot run is an error, not a silent fall-back.
  r = vtpu("run " + model.string() + " -c tiny-8x8 --dtype bf16 --reference onnxruntime" + ids_input(), "VTPU_NODE_DIR=/nonexistent/vtpu ");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.err.find("--reference onnxruntime: onnxruntime-node is not installed"), std::string::npos) << r.err;
}

TEST(CliCheck, ACheckAgainstADoctoredOnnxRuntimeFails) {
  // onnxruntime's first output with every value v turned into 1 - v: the check must see it.
  fs::path model = check_model(), fake = doctored_onnxruntime("fake", "1 - v");
  CliResult r = vtpu("run " + model.string() + " -c tiny-8x8 --dtype bf16 --check" + ids_input(), "VTPU_ORT_SCRIPT=" + fake.string() + " ");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("against onnxruntime"), std::string::npos) << r.out;
  EXPECT_GT(check_percent(r.out, "feat"), 20.0) << r.out;  // the first output: the conv's features
  EXPECT_LT(check_percent(r.out, "logits"), 3.0) << r.out;
  fs::remove(fake);
}

TEST(CliCheck, NonFiniteValuesOnOneSideFailTheCheck) {
  // onnxruntime's first output made all NaN: "max |error| 0" over no finite values once
  // passed; the check must fail (exit 1) and say how many values differ in kind.
  fs::path model = check_model(), fake = doctored_onnxruntime("nan", "NaN");
  CliResult r = vtpu("run " + model.string() + " -c tiny-8x8 --dtype bf16 --check" + ids_input(), "VTPU_ORT_SCRIPT=" + fake.string() + " ");
  EXPECT_EQ(r.code, 1) << r.err << r.out;
  EXPECT_NE(r.out.find("check feat: FAILED: 48 of 48 values are NaN or infinite where onnxruntime is not, or the reverse"),
            std::string::npos)
      << r.out;
  EXPECT_LT(check_percent(r.out, "logits"), 3.0) << r.out;  // the other outputs are compared as before
  fs::remove(fake);
}

}  // namespace
