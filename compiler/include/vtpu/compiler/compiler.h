#pragma once
// The vtpu compiler: ONNX model -> TOSA (MLIR) -> tpu dialect -> VLIW program for a config.
// This header carries no MLIR types; the pipeline and its passes live in compiler/src.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "vtpu/config/config.h"
#include "vtpu/isa/program.h"
#include "vtpu/support/error.h"

namespace vtpu::compiler {

enum class Precision : uint8_t { Int8, Bf16 };

// Dimensions of model inputs given by the user (`--shape NAME=1x3x640x640`; docs/compiler.md,
// "Input shapes"), by input name: every dimension of the input. They fill the dimensions the
// model leaves symbolic; dimensions it fixes must agree, but for the first (the batch, which
// CompileOptions::batch overrides when given).
using InputShapes = std::map<std::string, std::vector<int64_t>>;

// Inputs the user fixes to values (`--fix sr=16000`; docs/compiler.md, "Fixed inputs"), by
// input name: the values as written, comma-separated, the input's elements in row-major order
// (one value fills them all). The compiler takes them as constants, so what they decide (an
// If on a sample rate, a mode flag's arithmetic) folds at compile time; the program has no
// such input, and --check feeds the same values to onnxruntime.
using FixedInputs = std::map<std::string, std::string>;
// The values of one fixed input's text, as written between its commas.
std::vector<std::string> fixed_values(const std::string& text);

// How LSTM and GRU layers multiply their inputs by the input weights W (docs/compiler.md):
// Hoisted: one matmul over all time steps' inputs (W is read once per sequence); PerStep:
// each step multiplies its own input, as TPU v1's software did (W is read every step, batch
// MACs per weight byte; Jouppi et al. ISCA 2017, Table 1).
enum class RnnSchedule { Hoisted, PerStep };

// How INT8 calibration turns an activation's values into the range its scale maps to 127
// (docs/compiler.md, "INT8"): the largest magnitude; a percentile of the magnitudes (outliers
// clip); or the threshold with the least information lost (entropy, as TensorRT calibrates).
enum class CalibrationMethod { Max, Percentile, Entropy };

struct CompileOptions {
  Precision precision = Precision::Bf16;
  RnnSchedule rnn_schedule = RnnSchedule::Hoisted;
  int64_t batch = 0;                      // 0: the model's own batch size
  InputShapes shapes;                     // inputs' dimensions the user gives (above)
  FixedInputs fixed;                      // inputs the user fixes to values (above)
  std::string emit_mlir_stage;            // "", "tosa", "tpu": keep the IR after that stage
  uint64_t seed = 1;                      // calibration inputs when none are given
  // INT8 calibration samples: each maps input name -> values in the program's layout
  // (images NHWC). Empty: seeded random batches uniform in [-1, 1], enough batches for
  // `calibration_samples` rows in all.
  std::vector<std::map<std::string, std::vector<float>>> calibration;
  int calibration_samples = 16;
  CalibrationMethod calibration_method = CalibrationMethod::Max;
  double calibration_percentile = 99.99;  // CalibrationMethod::Percentile: of the magnitudes, in (0, 100]
  // INT8 activation scales from an earlier compile of the same model with the same batch,
  // seed and calibration samples (CompileResult::calibration_scales), on any config:
  // calibration does not read the config, so it is reused instead of run again. Empty:
  // calibrate.
  std::vector<float> calibration_scales;
  // Lane blocks and buffers in the unified buffer start on its own row
  // (core.unified_buffer.row_bytes) instead of on 64 bytes: the compiler's last attempt when
  // nothing else fits, for values of a few rows on a small array, whose 8-byte block rows
  // would each take 64 bytes (docs/compiler.md, "Lane blocks on the buffer's rows").
  bool compact_ub_blocks = false;
  // Internal to the pipeline's searches (a batch's chunk sizes): the program is left as text
  // (CompileResult::assembly, its constants and bounds filled, program.code empty) for
  // assemble_program, so that the programs a search does not keep are never assembled.
  bool defer_assembly = false;
  // Called as the compile goes, for a progress line with an ETA: the stage ("import",
  // "lower", "calibrate", "codegen") and the share of the whole compile done, from 0 to 1,
  // never decreasing, 1 at the end (docs/compiler.md, "Progress").
  std::function<void(const std::string& stage, double done)> progress;
};

// The roofline of one layer on the config: whichever of compute and memory takes longer.
struct LayerBound {
  std::string layer;       // the ONNX node name (the program's tag)
  std::string node;        // the ONNX node whose products `macs` are, when another layer's code makes them
                           // (a matmul in a stream reported under the first one's tag); "" = `layer`
  std::string op;          // the tpu op that makes it (conv2d, matmul, softmax, ...)
  std::vector<int64_t> shape;  // its output shape as the chip stores it (images NHWC)
  uint64_t macs = 0;        // useful MACs (docs/reports.md): the ONNX operator's products, no padding taps
  uint64_t hbm_bytes = 0;  // weights + inputs/outputs that must cross HBM
  uint64_t weight_tiles = 0;  // weight tiles the layer's code shifts into the MXUs (mxu.wload)
  uint64_t compute_cycles = 0;      // macs / (MXUs x R x C)
  uint64_t memory_cycles = 0;       // hbm_bytes / HBM bytes per cycle
  uint64_t weight_path_cycles = 0;  // weight_tiles / MXUs x the shift of one tile (each MXU's own weight path)
  uint64_t bound_cycles() const {
    uint64_t m = compute_cycles > memory_cycles ? compute_cycles : memory_cycles;
    return m > weight_path_cycles ? m : weight_path_cycles;
  }
};

struct CompileResult {
  isa::Program program;
  std::string assembly;  // the program as vtpu assembly (what --emit-asm writes)
  std::string mlir;      // the IR after emit_mlir_stage, when asked for
  std::vector<LayerBound> bounds;
  // INT8: the activation scales calibration gave (or that were passed in), for
  // CompileOptions::calibration_scales; a value without a scale is NaN.
  std::vector<float> calibration_scales;
};

// A model the compiler cannot handle: an unsupported operator or attribute, a shape it
// cannot tile, a model that does not fit the config. The message names the node.
class CompileError : public UserError {
 public:
  using UserError::UserError;
};

// A model that does not fit the config because one buffer is too small: `key` names the
// config key ("core.unified_buffer.bytes", "core.accumulators.rows", "memory.bytes"),
// `needed` and `available` are in that key's unit (bytes or rows).
// The key of the DoesNotFitError a program in row bands gives when it grows too long to
// compile (compiler/codegen/emission.cpp, Codegen::code); smaller bands would only be longer.
inline constexpr const char* kProgramSizeKey = "program.size";

class DoesNotFitError : public CompileError {
 public:
  DoesNotFitError(std::string key, uint64_t needed, uint64_t available, const std::string& message)
      : CompileError(message), key_(std::move(key)), needed_(needed), available_(available) {}
  const std::string& key() const { return key_; }
  uint64_t needed() const { return needed_; }
  uint64_t available() const { return available_; }

 private:
  std::string key_;
  uint64_t needed_, available_;
};

// A fingerprint of exactly the config values code generation reads: two configs with the
// same one give the same program except for its config stamp (Program::config_name and
// config_fingerprint), so a sweep compiles once per fingerprint. The name is left out (it
// is only the stamp); HBM bandwidth and clock enter as the bytes per cycle they give.
uint64_t config_fingerprint(const config::Config& cfg);

CompileResult compile_onnx(const std::filesystem::path& model, const config::Config& cfg,
                           const CompileOptions& options = {});

// One model imported and lowered once, then compiled for many configs: what a sweep's worker
// does with the programs of one model (docs/sweeps.md), since neither step reads the config.
// compile(cfg) gives what compile_onnx(model, cfg, options) gives, program byte for byte and
// the same errors; INT8 calibration runs at the first compile that gets that far (unless the
// options carry scales) and is reused by the rest. Progress is not reported.
class ModelCompiler {
 public:
  // Throws what compile_onnx throws for the model (import and lowering).
  ModelCompiler(const std::filesystem::path& model, const CompileOptions& options = {});
  ~ModelCompiler();
  ModelCompiler(const ModelCompiler&) = delete;
  ModelCompiler& operator=(const ModelCompiler&) = delete;

  CompileResult compile(const config::Config& cfg);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Pipeline parallelism (docs/compiler.md, "Pipeline stages"): the model cut into one stage
// per chip of `chips` (in stage order), each a program of its own; stage s sends its output
// over ICI into the input tensor of stage s + 1, and the batch (CompileOptions::batch, or the
// model's) flows through them in `micro_batches` equal parts, so that the stages work on
// different micro-batches at once (0: the smallest divisor of the batch that is at least the
// number of stages, or 1 when the model's samples mix). INT8: CompileOptions::
// calibration_scales of the whole batch (calibrated here when empty), so every stage
// quantizes as the single-chip program does.
struct StageOptions {
  std::vector<uint32_t> chips;
  int64_t micro_batches = 0;
};
struct Stage {
  CompileResult result;                  // the stage's program, for the system config
  uint32_t chip = 0;
  std::string first_layer, last_layer;   // the first and last layer (ONNX node) it computes
  std::string input, output;             // the tensor it receives ("" for the first) and sends ("" for the last)
  double cost = 0;                       // its share of the model's estimated cycles
};
struct Pipeline {
  std::vector<Stage> stages;
  int64_t batch = 0, micro_batches = 1;
  std::string whole_batch_why;  // when micro_batches was chosen 1 because the samples mix: why
};
Pipeline compile_stages(const std::filesystem::path& model, const config::Config& cfg, const CompileOptions& options,
                        const StageOptions& stages);

// Tensor parallelism (docs/compiler.md, "Tensor parallelism"): the model's groups of matmuls
// split Megatron-style over the chips of `cfg`: matmuls split by output columns (an MLP
// block's up-projection; attention's query, key and value projections, by whole heads), the
// ops between them and the next matmul computed on each chip's share (an activation;
// attention's scores, softmax and context per head), and that next matmul split by rows,
// its partial sums all-reduced over the chips before its bias and clamp. Every other op runs
// whole on every chip, so every chip ends with the whole output. INT8: every chip quantizes
// with the single-chip program's scales (CompileOptions::calibration_scales of the whole
// model, calibrated here when empty), the row-parallel weights with their whole columns'
// scales; the int32 sums are exact, so outputs equal the single-chip run's.
struct TensorSplit {
  std::string first, second;  // the column-parallel layers (", " between) and the row-parallel one
  int64_t units = 0;          // shared out over the chips, as evenly as they come
  std::string unit;           // "columns" (an MLP block) or "heads"
};
struct TensorParallel {
  std::vector<CompileResult> programs;  // per chip of the system, in chip order
  std::vector<TensorSplit> splits;
  std::vector<std::string> whole;       // matmuls every chip computes whole, and why (one line each)
};
TensorParallel compile_tensor_parallel(const std::filesystem::path& model, const config::Config& cfg,
                                       const CompileOptions& options);

// INT8's quantization error layer by layer (docs/compiler.md, "INT8"): the fp32 reference
// run on `inputs` (by name, the program's layout) against the same run with every activation
// rounded to its INT8 scale (`scales`: CompileResult::calibration_scales of a compile with
// these options) and saturated, as the chip stores it, the rounding carried into the layers
// after; weights stay fp32. One row per layer (the output of its last op), in order.
struct LayerQuantError {
  std::string layer, op;
  double sqnr_db = 0;   // 10 log10(sum ref^2 / sum (q - ref)^2); +inf when equal
  double clipped = 0;   // the share of its values beyond the int8 range at its scale
};
std::vector<LayerQuantError> quantization_errors(const std::filesystem::path& model, const CompileOptions& options,
                                                 const std::vector<float>& scales,
                                                 const std::map<std::string, std::vector<float>>& inputs);

// A run-time input of the model as the program takes it: the batch applied, images NHWC
// (`nhwc`: `shape` is the stored NHWC shape of an NCHW model input), integer inputs
// (token ids) carried as int32.
struct ModelInput {
  std::string name;
  std::vector<int64_t> shape;
  bool nhwc = false;
  bool integer = false;
};
std::vector<ModelInput> model_inputs(const std::filesystem::path& model, const CompileOptions& options = {});

// The model's outputs computed in fp32 (the compiler's reference interpreter) for inputs
// given by name in the program's layout (images NHWC); outputs in the program's layout.
std::map<std::string, std::vector<float>> reference_outputs(const std::filesystem::path& model,
                                                            const std::map<std::string, std::vector<float>>& inputs,
                                                            const CompileOptions& options = {});

}  // namespace vtpu::compiler
