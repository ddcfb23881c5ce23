#pragma once
// What a simulation run measured. docs/reports.md defines every field.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vtpu::sim {

// Why the sequencer could not issue a bundle (docs/microarch.md).
enum class StallReason : uint8_t {
  WaitDma,         // wait on a flag a DMA transfer increments
  WaitMxu,         // wait on a flag a matmul increments
  WaitVector,      // wait on a flag a vector operation increments
  WaitFlag,        // wait on a flag a `signal` increments
  WaitWeights,     // mxu.wload / swap waiting for a weight tile
  DmaBusy,         // all DMA transfer slots in flight
  WeightFifoFull,  // dma.wfifo with the weight FIFO full
  MxuBusy,         // matmul data path still streaming the previous matmul
  WeightPathBusy,  // previous mxu.wload still shifting
  VectorBusy,      // vector issue stage occupied
  WaitIci,         // wait on a flag an ICI transfer or signal increments (multi-chip)
  IciBusy,         // all ICI engine slots hold unacknowledged sends
  Barrier,         // waiting for the other chips at a barrier
  ImemFetch,       // the next bundle is outside instruction memory: fetched from HBM
};
inline constexpr size_t kNumStallReasons = 14;
std::string_view stall_reason_name(StallReason r);

// The units that report busy time and energy.
enum class Unit : uint8_t { Sequencer, Scalar, Dma, Mxu, Vector, UnifiedBuffer, Accumulators, WeightFifo, Hbm, Static, Ici };
inline constexpr size_t kNumUnits = 11;
std::string_view unit_name(Unit u);

// Counters that are kept both for the whole run and per tag.
struct Counters {
  uint64_t bundles = 0;           // bundles issued
  uint64_t stall_cycles = 0;      // sum of stall[]
  std::array<uint64_t, kNumStallReasons> stall{};
  uint64_t scalar_ops = 0;
  uint64_t dma_transfers = 0;
  uint64_t dma_busy_cycles = 0;   // cycles with at least one transfer in flight
  uint64_t hbm_read_bytes = 0;
  uint64_t hbm_write_bytes = 0;
  uint64_t ub_read_bytes = 0;
  uint64_t ub_write_bytes = 0;
  uint64_t acc_read_bytes = 0;
  uint64_t acc_write_bytes = 0;
  uint64_t wfifo_bytes = 0;       // written into weight FIFOs
  uint64_t weight_loads = 0;      // mxu.wload
  uint64_t weight_shift_cycles = 0;  // cycles weight paths spent shifting tiles in
  uint64_t matmuls = 0;
  uint64_t mxu_rows = 0;          // input rows streamed (= cycles a row enters an array)
  uint64_t macs_int8 = 0;         // useful MACs (K x N per row)
  uint64_t macs_bf16 = 0;
  uint64_t pe_rows = 0;           // rows x R x C: PE-cycles offered while streaming
  uint64_t vector_ops = 0;
  uint64_t vector_busy_cycles = 0;
  uint64_t vector_elements = 0;
  uint64_t vector_mul_elements = 0;     // multiply-class lane operations (mul, affine, rescale, transcendental)
  uint64_t ub_bank_extra_cycles = 0;    // MXU/vector cycles lost to unified-buffer bank conflicts
  uint64_t ici_sends = 0;               // ici.send and dma.send issued
  uint64_t ici_signals = 0;             // ici.signal issued
  uint64_t ici_bytes_sent = 0;          // payload bytes of those sends
  uint64_t ici_hop_bytes = 0;           // payload bytes x links crossed (link energy)
  uint64_t ici_bytes_received = 0;      // bytes other chips' sends wrote here (untagged)
  uint64_t first_issue = UINT64_MAX;    // cycle of the first bundle with this tag
  uint64_t last_done = 0;               // latest done cycle of an operation with this tag
  // First issue to last done, summed over the passes of the program's loops (a pass ends at a
  // taken backward branch; without one: last_done - first_issue). A layer's time.
  uint64_t span_cycles = 0;
  std::array<double, kNumUnits> energy_pj{};

  uint64_t macs() const { return macs_int8 + macs_bf16; }
  double energy_total_pj() const;
  void add(const Counters& o);
};

struct TagStats {
  std::string tag;  // "" = untagged
  Counters c;
};

struct Stats {
  uint64_t total_cycles = 0;
  double clock_mhz = 0;
  uint32_t mxu_count = 0, mxu_rows = 0, mxu_cols = 0;
  Counters total;
  std::vector<TagStats> per_tag;  // in order of first issue
  // Memory-model figures (docs/dram.md).
  uint64_t hbm_row_hits = 0, hbm_row_misses = 0, hbm_row_empty = 0;

  double seconds() const { return double(total_cycles) / (clock_mhz * 1e6); }
  // docs/microarch.md: utilization definitions.
  double mxu_temporal_utilization() const;
  double mxu_spatial_utilization() const;
  double mxu_overall_utilization() const;
};

}  // namespace vtpu::sim
