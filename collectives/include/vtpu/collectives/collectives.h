#pragma once
// Collectives as programs: all-reduce, all-gather, reduce-scatter and all-to-all over the
// chips of a config, planned once (rings per torus dimension, bidirectional where a
// dimension has two links, dimension by dimension, pipelined in pieces; reductions on the
// vector unit) and emitted as one ISA program per chip. docs/collectives.md describes the
// schedules, the alpha-beta model they are compared with, and the regime of small messages.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vtpu/config/config.h"
#include "vtpu/isa/isa.h"
#include "vtpu/isa/program.h"
#include "vtpu/sim/system.h"

namespace vtpu::collectives {

enum class Kind : uint8_t { AllReduce, AllGather, ReduceScatter, AllToAll };
std::string_view kind_name(Kind k);  // "all-reduce", ...
std::optional<Kind> parse_kind(std::string_view name);

struct Spec {
  Kind kind = Kind::AllReduce;
  // S: the per-chip buffer. all-reduce: in and out; all-gather: the gathered output (each chip
  // brings S / chips); reduce-scatter: the input (each chip keeps S / chips); all-to-all: in
  // and out, S / chips to and from every chip.
  uint64_t bytes = 0;
  isa::Dtype dtype = isa::Dtype::Fp32;  // what reductions add: fp32, bf16 or int32
  uint64_t piece_bytes = 0;             // 0: the planner's choice (docs/collectives.md)
};

// One step of the schedule, the same for every chip.
struct Phase {
  enum class Op : uint8_t { ReduceScatter, AllGather, AllToAll } op;
  unsigned dim = 0;       // torus dimension (rings); unused for all-to-all
  uint32_t ring = 0;      // chips in the ring
  unsigned rings = 1;     // 2: both directions of the dimension's links, half the data each
  uint64_t bytes = 0;     // the region each chip works on in this phase
};

// Everything decided before any program is printed.
struct Plan {
  Spec spec;
  uint32_t chips = 0;
  uint64_t unit_bytes = 0;   // split granularity: whole vector rows on aligned unified-buffer addresses
  uint64_t piece_bytes = 0;  // pipelining granularity
  unsigned slots = 0;        // unified-buffer slots per ring and buffer kind
  uint64_t in_addr = 0, out_addr = 0;  // HBM, the same on every chip
  std::vector<Phase> phases;
};

// Throws UserError for specs the config cannot run (sizes, dtypes, one chip, ...).
Plan plan(const config::Config& cfg, const Spec& spec);

struct EmitOptions {
  // Declare the input and output tensors (so a run places inputs and reads outputs). Off for
  // runs that only time the collective on whatever the memories hold (zeros).
  bool tensors = true;
};
// Chip `chip`'s program as assembly, and assembled (bound to the config's fingerprint).
std::string assembly(const config::Config& cfg, const Plan& p, uint32_t chip, const EmitOptions& o = {});
isa::Program program(const config::Config& cfg, const Plan& p, uint32_t chip, const EmitOptions& o = {});

// The alpha-beta model of the plan: per phase (n - 1) / n x bytes / (rings x link bandwidth)
// plus (n - 1) hops of latency (docs/collectives.md, "The bound").
struct Bound {
  double beta_s = 0;   // bandwidth terms
  double alpha_s = 0;  // latency terms
  double seconds() const { return beta_s + alpha_s; }
  std::vector<std::string> terms;  // one readable line per phase
};
Bound alpha_beta(const config::Config& cfg, const Plan& p);

// Bus bandwidth (NCCL's convention): algorithm bandwidth S / t times 2 (N - 1) / N for
// all-reduce, (N - 1) / N for the others, so that it compares with one link's bandwidth.
double bus_bandwidth(Kind k, uint32_t chips, uint64_t bytes, double seconds);

// The inputs a run gives chip `chip` (small integers, so that sums in any order are exact)
// and the output the collective must produce from them on chip `chip`.
std::vector<uint8_t> input_of(const Plan& p, uint32_t chip, uint64_t seed);
std::vector<uint8_t> expected_output(const Plan& p, uint32_t chip, uint64_t seed);

struct RunOptions {
  bool symmetric = false;     // estimate by symmetry: chip 0 alone (cycles, no outputs)
  bool data = true;           // inputs and outputs; off: time on zeros without reading results
  uint64_t seed = 1;
  bool record_trace = false;
};
struct Outcome {
  Plan plan;
  Bound bound;
  sim::SystemResult system;
  double seconds = 0;               // simulated time of the collective
  double algorithm_bandwidth = 0;   // bytes / s
  double bus_bandwidth = 0;         // bytes / s
  std::string mismatch;             // first wrong output (empty: all right, or not checked)
  bool checked = false;
};
// Plans, emits and simulates the collective; with data, checks every chip's output against
// expected_output. SystemC allows one simulation per process.
Outcome run(const config::Config& cfg, const Spec& spec, const RunOptions& o = {});

// The figures of run(), from a forked child process, so that one process can simulate many
// times (benchmarks, tests). `error` holds what the child threw.
struct Summary {
  double seconds = 0, beta_s = 0, alpha_s = 0, bus_bandwidth = 0;
  uint64_t cycles = 0, simulated_chips = 0;
  bool checked = false;
  double cpu_s = 0, peak_rss_mib = 0;  // of the child
  std::string mismatch, error;
};
Summary run_isolated(const config::Config& cfg, const Spec& spec, const RunOptions& o = {});

}  // namespace vtpu::collectives
