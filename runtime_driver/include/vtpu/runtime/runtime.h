#pragma once
// Running a whole model on the virtual TPU: compile if needed, place inputs in HBM in the
// program's layout and precision, simulate, read outputs back in the model's layout, and
// summarize per layer (docs/runtime.md).
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "vtpu/compiler/compiler.h"
#include "vtpu/config/config.h"
#include "vtpu/runtime/image.h"
#include "vtpu/sim/simulator.h"

namespace vtpu::runtime {

// INT8 calibration samples (compiler::CompileOptions::calibration) from files, for the model
// compiled at `batch` (0: its own): `specs` maps every input name to "FILE.npy" (float32 or,
// for integer inputs, an integer type; element count a whole multiple of the input's at this
// batch) or "IMG[,IMG...]" (image files, a multiple of the batch size, scaled as `norm` says);
// a folder in the list stands for its .npy or image files, in name order.
// Each batch-sized piece is one sample. Errors name the input, the file and what differs;
// `precision` other than int8 is an error (bf16 needs no calibration).
std::vector<std::map<std::string, std::vector<float>>> calibration_from_files(
    const std::filesystem::path& model, const std::map<std::string, std::string>& specs, int64_t batch, ImageNorm norm,
    compiler::Precision precision, const compiler::InputShapes& shapes = {}, const compiler::FixedInputs& fixed = {});

struct RunOptions {
  compiler::Precision precision = compiler::Precision::Bf16;
  int64_t batch = 0;
  compiler::InputShapes shapes;  // --shape: inputs' dimensions (CompileOptions::shapes)
  compiler::FixedInputs fixed;   // --fix: inputs fixed to values (CompileOptions::fixed)
  compiler::RnnSchedule rnn_schedule = compiler::RnnSchedule::Hoisted;  // CompileOptions::rnn_schedule
  // name -> a .npy file (float32, model layout), or image files (comma-separated, one per
  // batch element) for an [N, 1 or 3, H, W] input, scaled as `image_norm` says.
  std::map<std::string, std::filesystem::path> input_files;
  ImageNorm image_norm = ImageNorm::kUnit;
  // INT8 calibration data: input name -> a .npy file holding any whole number of batches of
  // that input (model layout), or image files (a multiple of the batch size); see
  // calibration_from_files. Empty: seeded random calibration samples.
  std::map<std::string, std::string> calibration_files;
  compiler::CalibrationMethod calibration_method = compiler::CalibrationMethod::Max;  // CompileOptions'
  double calibration_percentile = 99.99;
  uint64_t seed = 1;          // generated inputs
  bool check = false;         // compare with an fp32 reference (check_reference says which)
  // "auto": onnxruntime on the ONNX file when it runs, else vtpu's fp32 interpreter;
  // "onnxruntime" (an error when it cannot run); "interpreter".
  std::string check_reference = "auto";
  bool record_trace = false;
  uint64_t max_cycles = sim::SimOptions{}.max_cycles;
  std::function<void(uint64_t cycle, uint64_t bundle)> progress;  // see sim::SimOptions::progress
  // Called as each phase starts: "compile" (total 0), "simulate" (total: the program's
  // bundles), "check" (the fp32 reference; total 0).
  std::function<void(const std::string& phase, uint64_t total)> phase;
  // During "compile": the compiler's stage and share done (compiler::CompileOptions::progress).
  std::function<void(const std::string& stage, double done)> compile_progress;
};

// One layer (program tag) of a run, beside the compiler's roofline bound.
struct LayerRow {
  std::string layer;
  std::string op;     // the tpu ops that make it ("conv2d", "slice+conv2d+concat"), "" without the compiler's bounds
  std::string shape;  // output shape as stored ("1x56x56x64", images NHWC), "" likewise
  uint64_t first_cycle = 0, last_cycle = 0;  // issue of its first bundle, done of its last op
  uint64_t cycles = 0;                        // last - first
  // The roofline bound: the largest of its three limits (docs/runtime.md), and which one it is.
  uint64_t bound_cycles = 0, compute_cycles = 0, memory_cycles = 0, weight_path_cycles = 0;
  std::string bound_limit;  // compute, memory or weight path; "" without a bound
  uint64_t macs = 0;
  double mxu_utilization = 0;  // MACs / (cycles x peak MACs per cycle)
  std::string top_stall;       // the stall reason with the most cycles, "" when none
  uint64_t top_stall_cycles = 0;  // that reason's cycles
  uint64_t stall_cycles = 0;      // all reasons' cycles
  double energy_uj = 0;
  std::string bound_by;        // compute, memory or vector: the busiest unit over the span
};

// An output against the fp32 reference. Values that are NaN or infinite are compared by
// kind (NaN with NaN, +Inf with +Inf); every other pairing of a non-finite value counts in
// `nonfinite_mismatches`, and so does a missing or extra value. The finite ones give the error.
struct CheckResult {
  std::string output;
  double max_abs_error = 0;
  double max_reference = 0;  // largest finite |reference| value, for scale
  uint64_t nonfinite_mismatches = 0;
  uint64_t values = 0;       // values compared
  bool failed() const { return nonfinite_mismatches > 0; }
};

struct ModelRun {
  config::Config config;
  isa::Program program;
  sim::RunResult sim;
  std::vector<LayerRow> layers;
  std::map<std::string, std::vector<float>> outputs;  // model layout (NCHW images), real values
  std::map<std::string, std::vector<int64_t>> output_shapes;
  std::vector<CheckResult> checks;
  // INT8 with --check: each layer's quantization error (compiler::quantization_errors).
  std::vector<compiler::LayerQuantError> quant_errors;
  std::string check_reference;       // the reference the checks used, with why when not onnxruntime
  std::string check_reference_short;  // "onnxruntime" or "the fp32 interpreter"
  std::vector<std::string> inputs_used;  // NAME=FILE or NAME=random
  double compile_seconds = 0, simulate_seconds = 0;
  int64_t batch = 1;
};

// INT8 with --check: each layer's SQNR against fp32 (ModelRun::quant_errors), the layer whose
// SQNR falls most from the one before marked, so the layer that breaks shows; "" otherwise.
std::string quant_error_table(const ModelRun& run);

// Whether any --check result failed (totals_text says which and why).
bool check_failed(const ModelRun& run);

// The NumPy element type ("<f4", "<i8", "|b1", ...) of each graph output as the ONNX file
// declares it, so outputs can be written in the model's own types; empty when `model` is not
// an ONNX file that parses.
std::map<std::string, std::string> onnx_output_types(const std::filesystem::path& model);

// `model` is an .onnx file (compiled here) or a .vtpu program.
ModelRun run_model(const std::filesystem::path& model, const config::Config& cfg, const RunOptions& options);

// Replaces the simulator's MAC counters (every product the array makes with loaded weights,
// padding taps of packed convolutions included) with the compiler's useful MACs (docs/reports.md,
// "Useful MACs") for every tag the bounds name, keeping each tag's int8/bf16 split; the totals
// follow. Energy, computed from the array's products, is unchanged. run_model applies it.
void apply_useful_macs(sim::Stats& stats, const std::vector<compiler::LayerBound>& bounds);

// The layer rows of a run's statistics, beside the compiler's bounds (empty: no bounds).
std::vector<LayerRow> layer_rows(const sim::Stats& stats, const std::vector<compiler::LayerBound>& bounds);

// The per-layer table and the totals (latency, throughput, TOPS, energy, power). Columns are
// as wide as their widest cell: no number or name is ever cut (docs/runtime.md).
std::string layer_table(const ModelRun& run);
std::string totals_text(const ModelRun& run);
// One row per layer with every figure, for spreadsheets: RFC 4180 CSV (CRLF line ends; a
// field holding a comma, quote or line break is quoted, its quotes doubled; Debian's libcsv).
std::string layers_csv(const ModelRun& run);
// A self-contained HTML page: totals, cycles per layer stacked by stall reason, energy by
// unit, a roofline plot of the layers, the layer table (inline SVG, nothing fetched).
std::string html_report(const ModelRun& run, const std::string& title);

// `vtpu compare`: the same model in several precisions, side by side. Each run happens in
// its own process (one SystemC simulation per process).
struct CompareRow {
  std::string dtype;
  double latency_ms = 0, throughput = 0, tops = 0, energy_mj = 0, power_w = 0, mxu_utilization = 0;
  double max_relative_error = -1;  // vs the fp32 reference (finite values); -1 when not checked
  uint64_t nonfinite_mismatches = 0;  // NaN/Inf where the reference has none, or the reverse
  std::map<std::string, double> energy_by_unit_mj;
  double accuracy = -1;       // test-set top-1 accuracy on the chip; -1 when not measured
  double fp32_accuracy = -1;  // the same images through the fp32 reference
  int64_t accuracy_images = 0;
  std::string error;  // set when the run failed
  std::string quant_error_table;  // int8: quant_error_table of the run
};
std::vector<CompareRow> compare(const std::filesystem::path& model, const config::Config& cfg,
                                const std::vector<compiler::Precision>& precisions, const RunOptions& base);
std::string compare_table(const std::vector<CompareRow>& rows);

// Top-1 accuracy of an image classifier with input [batch, 1, H, W] in [0, 1] on `images`
// test images of Fashion-MNIST: compiled once (INT8 calibrated on training images), run on
// the simulator in chunks of `batch` (one process per chunk), and through the fp32
// reference on the same images.
struct Accuracy {
  double chip = 0, fp32 = 0;
  int64_t images = 0;
};
Accuracy fashion_mnist_accuracy(const std::filesystem::path& model, const config::Config& cfg,
                                compiler::Precision precision, int64_t images, int64_t batch = 32);

}  // namespace vtpu::runtime
