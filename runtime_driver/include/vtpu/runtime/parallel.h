#pragma once
// Models split across the chips of a multi-chip config (docs/runtime.md, "Models across
// chips"). Data parallelism: the batch is cut into one contiguous slice per chip, every chip
// runs the model on its slice with the same weights, and the outputs are put back together
// in batch order; inference needs no collective. Pipeline parallelism: the model is cut into
// one stage of consecutive layers per chip (compiler::compile_stages), each stage sends its
// output to the next chip over ICI, and the batch flows through in micro-batches. Tensor
// parallelism: pairs of matmuls split over the chips by columns then rows, the partial sums
// all-reduced over ICI (compiler::compile_tensor_parallel); every chip runs the whole batch
// and ends with the whole output. The same
// batch on one chip of the config is the baseline of the scaling table and of the outputs'
// check.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "vtpu/config/config.h"
#include "vtpu/isa/program.h"
#include "vtpu/runtime/runtime.h"
#include "vtpu/sim/system.h"

namespace vtpu::runtime {

enum class Parallelism { Data, Pipeline, Tensor };

// "data", "pipeline", "tensor"; anything else is a UserError naming what is implemented.
Parallelism parallelism_from_name(const std::string& name);
const char* parallelism_name(Parallelism p);

// One chip of `system`: the same chip, alone (system.chips 1, a torus of one). The
// single-chip baseline runs on it; its programs equal the system's but for the config stamp
// (compiler::config_fingerprint does not read the ici section).
config::Config one_chip_of(const config::Config& system);

struct ChipPart {
  int64_t batch_begin = 0, batch = 0;  // the chip's samples [begin, begin + batch)
  size_t program = 0;                  // index into ParallelRun::programs
  // Pipeline: the stage's first and last layer, the tensor it receives and sends ("" at
  // the ends), and its share of the model's estimated cycles.
  std::string first_layer, last_layer, input, output;
  double cost = 0;
  // Tensor: the chip's share of the split matmuls' columns ("1/8 of 4 pairs").
  std::string share;
};

struct ParallelOptions {
  Parallelism kind = Parallelism::Data;
  int64_t micro_batches = 0;  // pipeline: 0 = as many as there are chips, if the batch divides so, else 1
  bool baseline = true;       // also run the batch on one chip
};

struct ParallelRun {
  Parallelism parallelism = Parallelism::Data;
  config::Config config;      // the system
  config::Config chip;        // one_chip_of(config): where the baseline ran
  int64_t batch = 0;          // the whole batch
  int64_t micro_batches = 1;  // pipeline: the parts the batch flows through the stages in
  std::string whole_batch_why;  // pipeline: why the batch goes whole (the samples mix), when it does
  std::vector<compiler::TensorSplit> splits;  // tensor: the pairs of matmuls split over the chips
  std::vector<std::string> whole_matmuls;     // tensor: matmuls every chip computes whole, and why
  bool chips_agree = true;                    // tensor: every chip's outputs equal chip 0's
  std::vector<ChipPart> parts;             // per chip
  std::vector<isa::Program> programs;      // one per distinct slice size (data), per stage (pipeline)
  std::vector<compiler::LayerBound> bounds;  // of programs[0] (data), of every stage (pipeline)
  std::vector<isa::TensorInfo> tensors;      // the model's inputs and outputs, whole batch (the baseline's program)
  sim::SystemResult system;
  std::map<std::string, std::vector<float>> outputs;  // the whole batch, model layout (NCHW images)
  std::map<std::string, std::vector<int64_t>> output_shapes;
  std::map<std::string, std::vector<uint8_t>> output_bytes;  // the whole batch as the programs store it
  std::vector<std::string> inputs_used;
  double compile_seconds = 0, simulate_seconds = 0;

  // The whole batch on one chip (simulated in a child process).
  bool baseline_ran = false;
  std::string baseline_error;  // why it did not run
  uint64_t baseline_cycles = 0;
  double baseline_energy_pj = 0;
  // Outputs against the baseline's: every byte equal, else the largest difference of the
  // real values relative to the largest |value| of the same output, and that output.
  bool identical = false;
  double max_abs_difference = 0, max_relative_difference = 0;
  std::string worst_output;

  double seconds() const { return double(system.total_cycles) / (config.clock_mhz * 1e6); }
  double baseline_seconds() const { return double(baseline_cycles) / (config.clock_mhz * 1e6); }
  double collective_seconds() const;  // the longest time any link carried data (data parallelism: 0)
};

// Data: compiles the model once per distinct slice size; pipeline: once per stage (int8: with
// the calibration of the whole batch, so every chip quantizes as the single-chip run does).
// Places every chip's inputs (files or the seeded random inputs of the whole batch, as
// run_model makes them: its slice, or the whole batch of the model inputs its stage reads),
// runs the system and, unless told not to, the whole batch on one chip. The batch is
// options.batch or the model's; data parallelism needs at least one sample per chip. SystemC
// allows one simulation per process: the system runs in this one.
ParallelRun run_parallel(const std::filesystem::path& model, const config::Config& system, const ParallelOptions& parallel,
                         const RunOptions& options);

// Per chip: its slice or stage, cycles, MXU utilization, energy (docs/runtime.md).
std::string parts_table(const ParallelRun& run);
// One chip against the system: time, speed-up, efficiency against ideal (speed-up / chips),
// time in collectives, energy; and the outputs' check.
std::string scaling_table(const ParallelRun& run);

}  // namespace vtpu::runtime
