#pragma once
// Program-level cross-check of the Verilated vtpu_core against the SystemC model
// (docs/rtl.md, "Core cross-check"). The same program and inputs run through
// vtpu::sim::simulate (in a child process: SystemC elaborates once per process) and
// through the core RTL, whose off-chip memory port is answered by the simulator's own
// DramTiming class, so memory timing matches by construction. Compared: every byte of
// every output tensor, the total cycle count, and each unit's event times (DMA transfers,
// matmuls, weight shifts, vector operations).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "vtpu/config/config.h"
#include "vtpu/isa/program.h"

namespace vtpu::rtl {

// A Verilated vtpu_core and the config values it was built with.
struct CoreModelParams {
  std::string name;    // e.g. core_4x4
  std::string preset;  // the config it mirrors
  uint32_t rows, cols, in_lat, out_lat, shift, acc_rows, mxus;
  uint64_t ub_bytes, ub_row_bytes;
  uint32_t ub_banks, ub_rd_ports, ub_wr_ports, ub_rd_lat, ub_wr_lat;
  uint32_t lane_passes, vec_lat_alu, branch_penalty, dma_setup, dma_inflight, wf_tiles;
  uint32_t imem_bundles, desc_entries, port_bytes;
  uint32_t vec_lat_mul, vec_lat_rescale, vec_lat_convert, param_entries, vec_lat_reduce, vec_lat_pool;
  uint32_t vec_lat_trans;
};

std::vector<CoreModelParams> core_models();
const CoreModelParams& core_model(const std::string& name);

// Empty if the model was built for `cfg`; otherwise which value differs.
std::string model_matches(const CoreModelParams& p, const config::Config& cfg);

// Empty if the RTL core implements every operation of `prog` on `p`; otherwise a message
// naming the first bundle and operation it does not (docs/rtl.md, "Supported subset").
std::string unsupported_in_rtl(const isa::Program& prog, const CoreModelParams& p);

// One unit's occupancy, as the simulator's trace records it: [begin, end) of `bundle`.
struct UnitEvent {
  std::string unit;  // dma, mxu, wload, vector (MXU m > 0: mxu<m>, wload<m>)
  uint32_t bundle;
  uint64_t begin, end;
  auto operator<=>(const UnitEvent&) const = default;
};

// "mxu", "wload" for MXU 0; "mxu1", "wload1", ... for the others.
inline std::string unit_event_name(const char* unit, int64_t mxu) {
  return mxu == 0 ? std::string(unit) : std::string(unit) + std::to_string(mxu);
}

struct CoreRunResult {
  bool ok = false;       // false: `error` says why (a simulator error, an unsupported op, ...)
  std::string error;
  uint64_t total_cycles = 0;
  std::map<std::string, std::vector<uint8_t>> outputs;
  std::vector<UnitEvent> events;  // sorted
  double seconds = 0;             // wall time of the run (SystemC: simulate(), in the child)
  // RTL only: for each off-chip byte written, the cycle of the memory request and its bundle.
  std::map<uint64_t, std::pair<uint64_t, uint32_t>> writes;
};

using Inputs = std::map<std::string, std::vector<uint8_t>>;

// The SystemC model, in a forked child.
CoreRunResult run_sim(const config::Config& cfg, const isa::Program& prog, const Inputs& inputs);
// The Verilated core `model`. Stops with an error past max_cycles.
CoreRunResult run_rtl(const std::string& model, const config::Config& cfg, const isa::Program& prog,
                      const Inputs& inputs, uint64_t max_cycles);

// Empty if both runs agree; otherwise the first difference (output byte with the value on
// both sides, total cycles, or the first differing unit event with its cycles).
std::string compare_runs(const CoreRunResult& sim, const CoreRunResult& rtl, const isa::Program& prog);

// A random legal program for `cfg` in the supported subset (assembly text), with its inputs
// as .data/.tensor directives; the seed alone determines it. dtype: "int8" or "bf16".
std::string random_core_program(const config::Config& cfg, uint64_t seed, const std::string& dtype);
// A fixed streaming program for the benchmark: `tiles` weight tiles, each swapped in by a
// `rows`-row matmul accumulating into the same rows while the next tile loads, then the
// accumulators copied to the unified buffer and stored. Inputs from random_core_inputs.
std::string core_stream_program(const config::Config& cfg, const std::string& dtype, uint32_t tiles, uint32_t rows);

// Input tensors for such a program (bf16 with infinities, NaNs, denormals and zeros in some
// seeds; int8 extremes; the scratch image mixes ints, floats and specials).
Inputs random_core_inputs(const isa::Program& prog, uint64_t seed);

}  // namespace vtpu::rtl
