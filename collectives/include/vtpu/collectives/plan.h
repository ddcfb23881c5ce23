#pragma once
// Collectives planned and printed (no simulator): all-reduce, all-gather, reduce-scatter and
// all-to-all over the chips of a config, planned once (rings per torus dimension,
// bidirectional where a dimension has two links, dimension by dimension, pipelined in
// pieces; reductions on the vector unit) and emitted as one ISA program per chip, or placed
// inside another program (a compiled model's tensor-parallel all-reduce). docs/collectives.md
// describes the schedules, the alpha-beta model they are compared with, and the regime of
// small messages. collectives.h adds runs on the simulator.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vtpu/config/config.h"
#include "vtpu/isa/isa.h"
#include "vtpu/isa/program.h"

namespace vtpu::collectives {

enum class Kind : uint8_t { AllReduce, AllGather, ReduceScatter, AllToAll };
std::string_view kind_name(Kind k);  // "all-reduce", ...
std::optional<Kind> parse_kind(std::string_view name);

// Where a collective placed inside another program (a compiled model's tensor-parallel
// all-reduce, compiler/codegen/tensor_parallel.cpp) keeps its buffers and counts on its flags;
// every chip's program must give the same. The defaults are the standalone programs' layout.
struct Placement {
  uint64_t hbm_addr = 0;  // the buffers in HBM (all-reduce works in place); 0: 1 MiB
  uint64_t ub_base = 0;   // the unified-buffer slots from here ...
  uint64_t ub_bytes = 0;  // ... over at most this many bytes; 0: the whole unified buffer
  unsigned first_flag = 1;  // the schedule's f1 is f(first_flag) ...
  unsigned flags = 0;       // ... and it names at most this many; 0: core.scalar.sync_flags
};

struct Spec {
  Kind kind = Kind::AllReduce;
  // S: the per-chip buffer. all-reduce: in and out; all-gather: the gathered output (each chip
  // brings S / chips); reduce-scatter: the input (each chip keeps S / chips); all-to-all: in
  // and out, S / chips to and from every chip.
  uint64_t bytes = 0;
  isa::Dtype dtype = isa::Dtype::Fp32;  // what reductions add: fp32, bf16 or int32
  uint64_t piece_bytes = 0;             // 0: the planner's choice (docs/collectives.md)
  // All-reduce: rings (reduce-scatter then all-gather, dimension by dimension), one-shot, or
  // whichever the alpha-beta model says is faster and fits the unified buffer.
  enum class Algorithm : uint8_t { Ring, OneShot, Auto } algorithm = Algorithm::Ring;
  Placement at;
};

// One step of the schedule, the same for every chip.
struct Phase {
  // OneShot: an all-reduce in one step, every chip sending its whole buffer to every other
  // and adding all of them in chip order (for messages small enough that the rings' phases
  // one after another cost more than the extra bytes).
  enum class Op : uint8_t { ReduceScatter, AllGather, AllToAll, OneShot } op;
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

// A collective's split granularity: whole vector rows of `dtype` at aligned unified-buffer
// addresses; every collective moves a whole number of them.
uint64_t unit_bytes(const config::Config& cfg, isa::Dtype dtype);

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
// Chip `chip`'s operations only, to be placed inside another program at spec.at: no
// directives and no halt; the UB addresses and flags moved to the placement's; scalar
// registers r1-r3 are overwritten; `desc(bytes)` names the descriptor of a transfer of that
// many bytes (declared by the caller).
std::string embedded_assembly(const config::Config& cfg, const Plan& p, uint32_t chip,
                              const std::function<std::string(uint64_t bytes)>& desc);
// The unified-buffer bytes and the flags a plan's schedule uses.
uint64_t ub_bytes_used(const Plan& p);
unsigned flags_used(const Plan& p);

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

}  // namespace vtpu::collectives
