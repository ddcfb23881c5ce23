#pragma once
// The cycle-accurate SystemC model of one vtpu chip. docs/microarch.md states every timing
// rule it implements; docs/numerics.md the arithmetic.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "vtpu/config/config.h"
#include "vtpu/isa/program.h"
#include "vtpu/sim/stats.h"
#include "vtpu/support/error.h"

namespace vtpu::sim {

struct SimOptions {
  // Stop with an error past this many cycles: 10x the longest zoo model, and a loop that
  // never halts reaches it within seconds (vtpu sim and run show progress meanwhile).
  uint64_t max_cycles = 1'000'000'000ull;
  bool record_trace = false;                   // keep per-operation events for --trace
  // Called every 65536 simulated cycles with the current cycle and the index of the bundle
  // just issued (in a straight-line program, as compiled models are, the share of the
  // program done), for progress displays.
  std::function<void(uint64_t cycle, uint64_t bundle)> progress;
  // Timing only: every timing rule, check and counter as usual, but no arithmetic and no
  // data moved (MXU, vector unit, DMA contents, HBM contents): cycles, stats and energy are
  // those of a full run (no timing rule reads data), RunResult::outputs stays empty. For
  // design-space sweeps, which need the figures and not the values.
  bool timing_only = false;
};

// One operation's activity on a unit, for the timeline trace.
struct TraceEvent {
  Unit unit;
  uint16_t lane;       // MXU index, DMA slot
  uint16_t tag;        // Program::tags index
  uint32_t bundle;
  const char* name;    // mnemonic or stall reason; static storage
  uint64_t begin, end; // cycles [begin, end)
};

struct RunResult {
  Stats stats;
  std::vector<TraceEvent> trace;
  std::map<std::string, std::vector<uint8_t>> outputs;  // output tensors, raw little-endian
};

// The program did something the chip cannot do: a deadlock, a race, an address out of
// bounds, an illegal operand, the cycle limit. The message names the bundle, its tag, the
// unit and the field or flag involved.
class SimError : public UserError {
 public:
  using UserError::UserError;
};

// Runs `program` on a chip built from `config`. `inputs` gives the bytes of every input
// tensor by name (use fill_missing_inputs for defaults). SystemC allows one simulation per
// process: a second call throws InternalError.
RunResult simulate(const config::Config& config, const isa::Program& program,
                   const std::map<std::string, std::vector<uint8_t>>& inputs,
                   const SimOptions& options = {});

// Throws UserError when a constant segment or an input or output tensor of `program` does not
// lie inside the config's memory.bytes (compared without wrapping). simulate() checks this
// first; call it before fill_missing_inputs, which allocates every input's bytes.
void check_fits_memory(const config::Config& config, const isa::Program& program);

// Deterministic pseudo-random bytes for every input tensor missing from `inputs`
// (int8: uniform in [-64, 63]; bf16/fp32: uniform in [-1, 1); int32: [-1000, 1000]).
void fill_missing_inputs(const isa::Program& program, uint64_t seed,
                         std::map<std::string, std::vector<uint8_t>>& inputs);

}  // namespace vtpu::sim
