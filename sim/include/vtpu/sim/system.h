#pragma once
// Multi-chip runs: the chips of one config, each a full chip model with its own sequencer
// thread, joined by ICI links (docs/microarch.md, "Chips and links", "Time across chips").
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "vtpu/config/config.h"
#include "vtpu/isa/program.h"
#include "vtpu/sim/simulator.h"

namespace vtpu::sim {

// What one chip runs.
struct ChipRun {
  isa::Program program;
  std::map<std::string, std::vector<uint8_t>> inputs;  // by tensor name, as for simulate()
};

struct SystemOptions {
  SimOptions sim;  // for every chip (max_cycles, record_trace: also the link timeline)
  // Cycles the chips run between synchronisations; 0 = the lookahead L (link latency +
  // router delay). Any value from 1 to L gives the same cycles and outputs.
  uint64_t quantum_cycles = 0;
  // Estimate by symmetry: `chips` holds one program, chip 0's, and every chip of the torus is
  // taken to run it translated to its own position, so only chip 0 is simulated
  // (docs/microarch.md, "Estimating large pods by symmetry"). Needs wraparound, no twist.
  bool symmetric = false;
};

// One directed link (topology().links() order; when estimating by symmetry, chip 0's links,
// which stand for every link of the same direction).
struct LinkStats {
  uint32_t from = 0, to = 0;  // physical chip ids
  unsigned dim = 0;
  int dir = 0;                // +1 or -1
  uint64_t bytes = 0, packets = 0;
  double busy_cycles = 0;          // serializing packets
  double credit_stall_cycles = 0;  // idle while a ready packet waited for a credit
  double queue_cycles = 0;         // sum over packets of ready -> start on this link
};

// A stretch of one link carrying packets of one transfer back to back (for the timeline).
struct LinkSlice {
  uint32_t link = 0;
  double begin = 0, end = 0;  // cycles, fractional
  uint32_t src = 0, dst = 0;  // physical chips of the transfer
  uint32_t bundle = 0;        // the sending bundle
  uint64_t bytes = 0;
};

struct SystemResult {
  uint32_t system_chips = 0;     // chips of the torus
  bool symmetric = false;        // chips[0] stands for every chip
  std::vector<RunResult> chips;  // per simulated chip, by chip id
  std::vector<LinkStats> links;  // per simulated link
  std::vector<LinkSlice> link_trace;
  uint64_t total_cycles = 0;     // the last chip's end (every transfer landed)
  uint64_t quantum_cycles = 0;
  uint64_t lookahead_cycles = 0;
  double clock_mhz = 0;
};

// Runs chips[i].program on chip i (or, with options.symmetric, chips[0].program on every chip
// by symmetry). A single-chip config runs through simulate() instead. SystemC allows one
// simulation per process.
SystemResult simulate_system(const config::Config& config, const std::vector<ChipRun>& chips,
                             const SystemOptions& options = {});

}  // namespace vtpu::sim
