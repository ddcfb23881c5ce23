#pragma once
// Internal: the state of one chip and the rules of docs/microarch.md, as plain C++ that
// the SystemC modules in chip.cpp drive. Nothing here ticks a clock: every operation
// computes its accept, start and done cycles when it issues, and its data effect at once
// (the hazard checker makes sure that equals the timed behaviour).
#include <cstdint>
#include <deque>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "vtpu/config/config.h"
#include "vtpu/isa/bundle.h"
#include "vtpu/isa/program.h"
#include "vtpu/sim/simulator.h"
#include "ici.h"
#include "tag_passes.h"

namespace vtpu::sim::detail {

using isa::Bundle;
using isa::Operation;
using isa::SlotId;

// Where an operation sits, for error messages.
struct OpRef {
  uint32_t bundle = 0;
  SlotId slot = SlotId::S0;
  const isa::OpDef* def = nullptr;
  uint16_t tag = 0;
};

// The memories an operation can occupy; see "Memory hazards are errors".
enum class Space : uint8_t { Ub, Acc, Hbm };

struct Access {
  Space space;
  uint64_t lo, hi;  // [lo, hi) bytes (UB, HBM) or global accumulator rows (Acc)
  bool write;
  uint64_t t0, t1;  // occupied cycles [t0, t1)
  OpRef op;
  int mxu = -1;     // set for matmul accumulator accesses (same-MXU overlap is allowed)
  // For strided DMA patterns: the [begin, end) byte ranges actually touched, sorted by
  // begin; null means all of [lo, hi).
  std::shared_ptr<const std::vector<std::pair<uint64_t, uint64_t>>> rows{};
  // ICI transfers: t1 may be kUnknown until the network reports the end (set_end); an
  // access by another chip's send names that chip.
  uint64_t xfer = 0;
  int remote_chip = -1;
};

class HazardChecker {
 public:
  // Throws SimError if `a` races with an operation still in flight; then records it.
  void check_and_add(const Access& a, const isa::Program& prog);
  void retire_before(uint64_t cycle);
  // Ends the accesses of ICI transfer `xfer` at t1 (they were open-ended).
  void set_end(uint64_t xfer, uint64_t t1);

 private:
  std::vector<Access> live_;
};

// A weight tile in a FIFO or a weight buffer: K x N valid elements of dtype, row-major.
struct Tile {
  std::vector<uint8_t> data;
  uint32_t k = 0, n = 0;
  isa::Dtype dtype = isa::Dtype::Int8;
  uint64_t ready = 0;  // dma.wfifo done cycle
  uint32_t loaded_by_bundle = 0;
};

// Zeroed memory from calloc, left untouched until used: systems of hundreds of chips do not
// pay for accumulators their programs never write.
template <class T>
struct ZeroedAllocator {
  using value_type = T;
  ZeroedAllocator() = default;
  template <class U>
  ZeroedAllocator(const ZeroedAllocator<U>&) {}
  T* allocate(size_t n) {
    void* p = std::calloc(n, sizeof(T));
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  template <class U>
  void construct(U*) {}  // already zero
  template <class U, class... A>
  void construct(U* p, A&&... a) { ::new (static_cast<void*>(p)) U(std::forward<A>(a)...); }
  bool operator==(const ZeroedAllocator&) const { return true; }
};

struct MxuState {
  // Weight FIFO: tiles reserved by dma.wfifo and not yet taken by an mxu.wload.
  std::deque<std::shared_ptr<Tile>> fifo;
  std::vector<uint64_t> pop_times;  // shift_start of issued wloads (tile leaves the FIFO)
  uint64_t wpath_free = 0;          // previous wload's shift end
  // Shadow buffer.
  std::shared_ptr<Tile> shadow;     // loaded (or loading) tile not yet swapped in
  uint64_t shadow_ready = 0;        // shift end of that tile
  uint64_t shadow_free = 0;         // cycle from which the shadow may be overwritten
  // Active buffer.
  std::shared_ptr<Tile> active;
  uint64_t data_free = 0;           // T_prev + B_prev
  std::vector<uint32_t, ZeroedAllocator<uint32_t>> acc;  // rows x C 32-bit words (int32 or fp32 bits)

  uint64_t fifo_occupancy(uint64_t t) const;
};

struct FlagState {
  int64_t value = 0;  // increments realized up to the last wait, minus waits
  struct Pending {
    uint64_t done;
    int64_t amount;
    StallReason source;
    uint32_t bundle;
  };
  std::vector<Pending> pending;  // not yet realized, unsorted
};

// Sparse byte-addressed HBM contents (zero where never written).
class HbmStore {
 public:
  explicit HbmStore(uint64_t capacity) : capacity_(capacity) {}
  void read(uint64_t addr, uint8_t* dst, uint64_t n) const;
  void write(uint64_t addr, const uint8_t* src, uint64_t n);
  uint64_t capacity() const { return capacity_; }

 private:
  static constexpr uint64_t kPage = 1 << 16;
  uint64_t capacity_;
  std::unordered_map<uint64_t, std::unique_ptr<uint8_t[]>> pages_;
};

// A DMA descriptor's rows: extremes of the row offsets on one side, and every row's
// (source, destination) address, innermost dimension first.
struct DmaShape {
  uint64_t min_off = 0, max_off = 0;
  uint64_t rows = 1;
};
DmaShape dma_shape(const isa::DmaDescriptor& d, bool src);
std::vector<std::pair<uint64_t, uint64_t>> dma_rows(const isa::DmaDescriptor& d, uint64_t src, uint64_t dst);
// The byte ranges one side of those rows touches, sorted, for the hazard checker; null when
// they fill [lo, hi) without gaps.
std::shared_ptr<const std::vector<std::pair<uint64_t, uint64_t>>> dma_pattern(
    const std::vector<std::pair<uint64_t, uint64_t>>& rows, uint64_t bytes, bool src_side, uint64_t lo, uint64_t hi);

// Callback the DMA engine uses to reach the memory model: one request per contiguous row,
// returning the completion cycle. chip.cpp routes it through a TLM-2.0 socket.
using HbmPort = std::function<uint64_t(uint64_t addr, uint8_t* data, uint64_t bytes,
                                       uint64_t ready_cycle, bool is_write)>;

class Machine {
 public:
  // `fabric` joins the chip to a multi-chip system (null: a single chip, docs/microarch.md).
  Machine(const config::Config& cfg, const isa::Program& prog, const SimOptions& opt,
          HbmStore& hbm, HbmPort hbm_port, Fabric* fabric = nullptr);

  // Runs the program; `sync(cycle)` lets the SystemC sequencer advance simulated time. On
  // one chip it ends with finalize(); in a system the system finalizes once all drained.
  void run(const std::function<void(uint64_t)>& sync);
  // Totals and per-tag stats from the counters (after the last operation is known).
  void finalize();

  // Multi-chip (machine_ici.cpp): takes what the network reports; writes every landed
  // transfer into memory; says what the chip waits for when it cannot go on.
  void apply_deliveries(std::vector<IciDelivery>&& ds);
  void land_all();
  const std::string& blocked_description() const { return blocked_; }

  Stats& stats() { return stats_; }
  std::vector<TraceEvent>& trace() { return trace_; }


 private:
  // Accept times (docs/microarch.md); each returns the earliest cycle >= t and the reason.
  struct Accept {
    uint64_t t;
    StallReason why;
  };
  Accept accept_wait(const Operation& op, uint64_t t, const OpRef& ref);
  Accept accept_dma(const Operation& op, uint64_t t, const OpRef& ref);
  Accept accept_wload(const Operation& op, uint64_t t, const OpRef& ref);
  Accept accept_matmul(const Operation& op, uint64_t t, const OpRef& ref);
  Accept accept_vector(const Operation& op, uint64_t t, const OpRef& ref);
  Accept accept_ici(uint64_t t, const OpRef& ref);
  Accept accept_barrier(const Operation& op, uint64_t t, const OpRef& ref);

  void exec_wait(const Operation& op, uint64_t t);
  void exec_dma(const Operation& op, uint64_t t, const OpRef& ref);
  void exec_wload(const Operation& op, uint64_t t, const OpRef& ref);
  void exec_matmul(const Operation& op, uint64_t t, const OpRef& ref);
  void exec_vector(const Operation& op, uint64_t t, const OpRef& ref);
  void exec_ici(const Operation& op, uint64_t t, const OpRef& ref);
  void exec_dma_send(const Operation& op, uint64_t t, const OpRef& ref);
  void exec_barrier(const Operation& op);
  struct SendArgs {
    uint32_t desc = 0;
    uint64_t src = 0, dst = 0;
    uint32_t dst_chip = 0;
    IciSpace src_space = IciSpace::Ub, dst_space = IciSpace::Ub;
    int flag = 0, sflag = 0;
  };
  void start_send(const SendArgs& a, uint64_t T, const OpRef& ref);
  void start_signal(uint32_t dst_chip, int flag, uint64_t T, const OpRef& ref);
  uint32_t check_destination(const OpRef& ref, int64_t chip);
  // Applies the landed remote writes with done cycle <= T (in that order).
  void land_writes(uint64_t T);
  // Where a DMA side lies; checks bounds and alignment and returns its [lo, hi).
  std::pair<uint64_t, uint64_t> check_dma_side(const OpRef& ref, const isa::DmaDescriptor& d, bool ub, uint64_t base,
                                               const DmaShape& s, const char* field, int64_t strides);

  void add_increment(int64_t flag, uint64_t done, StallReason source, uint32_t bundle, int64_t amount = 1);
  [[noreturn]] void fail(const OpRef& ref, const std::string& what) const;
  std::string where(const OpRef& ref) const;
  int64_t f(const Operation& op, SlotId s, std::string_view name) const;
  uint32_t reg(int64_t r) const { return regs_[size_t(r)]; }
  void check_ub(const OpRef& ref, std::string_view field, uint64_t addr, uint64_t bytes, bool aligned);
  void check_progress(uint32_t target, const OpRef& ref, uint64_t cycle);
  uint64_t check_acc(const OpRef& ref, std::string_view field, int mxu, uint64_t row, uint64_t rows);
  uint32_t check_mxu(const OpRef& ref, std::string_view field, int64_t mxu);
  Counters& tagc(uint16_t tag) { return per_tag_[tag]; }
  // Cycles one group of unified-buffer accesses (byte ranges) needs: the busiest bank's
  // accesses over its ports (docs/microarch.md, "Unified buffer").
  uint64_t ub_group_cycles(const std::vector<std::pair<uint64_t, uint64_t>>& reads,
                           const std::vector<std::pair<uint64_t, uint64_t>>& writes);
  uint64_t periodic_sum(uint64_t n, const std::vector<uint64_t>& steps, const std::function<uint64_t(uint64_t)>& f);
  std::vector<uint32_t> bank_hits_;
  void charge_done(const OpRef& ref, uint64_t done);
  void trace(Unit u, uint16_t lane, const OpRef& ref, const char* name, uint64_t b, uint64_t e);

  const config::Config& cfg_;
  const isa::Program& prog_;
  SimOptions opt_;
  std::vector<Bundle> bundles_;
  HbmStore& hbm_;
  HbmPort hbm_port_;

  uint32_t R_, C_;
  // calloc'd so the untouched parts of a large buffer never cost a page fault.
  std::unique_ptr<uint8_t[], void (*)(void*)> ub_{nullptr, std::free};
  uint64_t ub_bytes_ = 0;
  std::vector<MxuState> mxu_;
  std::vector<FlagState> flags_;
  std::array<uint32_t, isa::kNumScalarRegs> regs_{};
  struct RegsAt {
    std::array<uint32_t, isa::kNumScalarRegs> regs;
    uint64_t cycle;
  };
  std::unordered_map<uint32_t, RegsAt> regs_at_branch_;  // by branch target (check_progress)
  // check_loop_bound: per loop bundle, whether its body (target..loop) has no other control
  // operation (-1: not looked at yet), so the counter alone says how often it repeats.
  std::vector<int8_t> plain_loop_;
  void check_loop_bound(size_t pc, size_t target, uint32_t count, const OpRef& ref, uint64_t cycle);
  HazardChecker hazards_;

  // DMA engine
  std::vector<uint64_t> dma_done_;  // done cycles of transfers possibly in flight
  uint64_t dma_port_free_ = 0;      // UB port shared by DMA transfers
  uint64_t dma_busy_end_ = 0;       // end of the union of in-flight intervals so far
  // Vector unit
  uint64_t vec_free_ = 0;

  // Instruction memory (machine_imem.cpp): a program longer than core.scalar.imem_bundles
  // runs from windows of config::imem_window_bundles bundles, fetched from HBM when execution
  // enters one, or ahead of it with core.scalar.imem_prefetch (docs/microarch.md).
  struct ImemSlot {
    uint64_t window = UINT64_MAX;  // window index held (UINT64_MAX: none)
    uint64_t ready = 0;            // cycle its fetch ends
  };
  ImemSlot imem_slot_[2];               // slot 1 is used only with prefetch
  uint64_t imem_current_ = UINT64_MAX;  // window of the last bundle issued
  uint64_t imem_port_free_ = 0;         // end of the last fetch (one fetch at a time)
  uint64_t imem_window_bundles_ = 0;
  uint64_t imem_fetch_cycles_ = 0;      // 0: the program is resident whole
  void imem_start();
  // The cycle from which the bundle at pc can issue as far as the instruction memory goes,
  // `earliest` being the sequencer's own earliest cycle.
  uint64_t imem_ready(size_t pc, uint64_t earliest) const;
  // The bundle at pc issued at T: a window fetched on demand becomes resident and, with
  // prefetch, entering a window starts the next one's fetch.
  void imem_issued(size_t pc, uint64_t earliest, uint64_t T, Counters& c);

  // ICI engine and the system around it (machine_ici.cpp)
  Fabric* fabric_ = nullptr;
  struct InFlight {
    uint64_t seq, acked;  // acked: the sender's done cycle, kUnknown until reported
    uint16_t tag;
    uint32_t bundle;
    int sflag;
    uint64_t issue;
    uint16_t lane;  // timeline track, free again once acknowledged
    const char* name;
  };
  std::vector<InFlight> ici_inflight_;
  uint64_t ici_seq_ = 0;
  uint64_t ici_port_free_ = 0;  // the ICI engine's unified-buffer read port
  struct Landing {
    uint64_t done;
    std::shared_ptr<const IciTransfer> t;
  };
  std::vector<Landing> landings_;  // remote writes not yet in memory
  struct BarrierWait {
    uint32_t id;
    uint64_t generation;
    uint32_t bundle;
  };
  std::optional<BarrierWait> barrier_wait_;  // the barrier of the current bundle, once reached
  std::vector<uint64_t> barrier_gen_ = std::vector<uint64_t>(256, 0);
  std::string blocked_;  // why the last accept was kUnknown

  uint64_t last_done_ = 0;
  double prof_[3] = {};  // wall seconds in DMA, matmul, vector work (VTPU_SIM_PROFILE=1)
  Stats stats_;
  std::vector<Counters> per_tag_;
  TagPasses passes_;  // per-tag spans over loop passes (tag_passes.h)
  std::vector<TraceEvent> trace_;
};

}  // namespace vtpu::sim::detail
