#pragma once
// Test harness for the Verilated vtpu_mxu models (docs/rtl.md).
//
//  - MxuPort: one model behind a small virtual interface, so the checker is written once
//    for every array size (rtl/tb/mxu_models.cpp binds each Verilated class to it).
//  - Program: a command sequence (weight tiles in FIFO order, bundles of mxu.matmul and/or
//    mxu.wload with their data) plus the initial accumulator contents.
//  - expect(): what docs/microarch.md and docs/numerics.md say must happen, computed
//    without the RTL: the cycle of every bundle issue, row request, weight-FIFO pop and row
//    read, accumulator write (with its data, from vtpu::numerics::ref) and done pulse.
//  - run(): plays sequencer, unified buffer and weight FIFO for the RTL, records the same
//    events from its ports and compares them one by one.
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace vtpu::rtl {

struct MxuParams {
  std::string name;    // model name, e.g. "mxu_8x8"
  unsigned rows = 0;   // R
  unsigned cols = 0;   // C
  unsigned in_lat = 0;
  unsigned out_lat = 0;
  unsigned shift = 0;  // weight_shift_cycles
  unsigned acc_rows = 0;
  bool bf16 = true;    // false: int8-only PEs
  std::string preset;  // the config preset it mirrors, or empty
};
// GoogleTest prints a parameter with this.
inline void PrintTo(const MxuParams& p, std::ostream* os) { *os << p.name; }

// One Verilated vtpu_mxu. A cycle is: set the command inputs, eval() (combinational
// outputs of this cycle become valid), answer the row reads with set_in_data() and
// set_wf_data(), then tick() (the rising edge that ends the cycle).
class MxuPort {
 public:
  virtual ~MxuPort() = default;
  virtual const MxuParams& params() const = 0;

  // inputs
  virtual void set_rst_n(bool v) = 0;
  virtual void set_mm(bool valid, unsigned rows, unsigned dst, bool acc, bool swap, bool bf16) = 0;
  virtual void set_wl(bool valid) = 0;
  virtual void set_wf(bool avail, unsigned k, unsigned n) = 0;
  virtual void set_ext_write(bool we, unsigned addr, const uint32_t* row) = 0;  // cols words
  virtual void set_acc_rd_addr(unsigned addr) = 0;
  virtual void set_in_data(const uint16_t* lanes) = 0;  // rows lanes
  virtual void set_wf_data(const uint16_t* lanes) = 0;  // cols lanes
  virtual void eval() = 0;
  virtual void tick() = 0;  // rising edge, then clock low again

  // outputs (after eval)
  virtual bool mm_data_free() const = 0;
  virtual bool mm_shadow_ready() const = 0;
  virtual bool wl_ready() const = 0;
  virtual bool in_req() const = 0;
  virtual unsigned in_req_row() const = 0;
  virtual bool wf_pop() const = 0;
  virtual bool wf_rd() const = 0;
  virtual unsigned wf_row() const = 0;
  virtual bool acc_we() const = 0;
  virtual unsigned acc_waddr() const = 0;
  virtual void acc_wdata(uint32_t* row) const = 0;     // cols words
  virtual void acc_rd_data(uint32_t* row) const = 0;   // cols words
  virtual bool done() const = 0;
};

// Every MXU model built into vtpu_rtl_models.
std::vector<MxuParams> mxu_models();
std::unique_ptr<MxuPort> make_mxu(const std::string& name);

// ---- programs -------------------------------------------------------------------------

struct Tile {
  unsigned k = 0, n = 0;       // valid rows and columns
  bool bf16 = false;
  std::vector<uint16_t> w;     // R x C lanes, row-major; padding holds garbage
  uint64_t ready = 0;          // first cycle the weight FIFO has it (dma.wfifo done)
};

struct Matmul {
  unsigned rows = 1;           // B
  unsigned dst = 0;
  bool acc = false, swap = false, bf16 = false;
  std::vector<uint16_t> a;     // B x R lanes; int8 in bits 7..0 (bits 15..8 are garbage)
};

struct Bundle {
  uint64_t earliest = 0;       // the sequencer reaches the bundle at this cycle at the soonest
  std::optional<Matmul> mm;
  bool wl = false;
};

struct Program {
  uint64_t seed = 0;
  std::string origin;           // test name or generator
  std::vector<Tile> tiles;      // weight FIFO order
  std::vector<Bundle> bundles;  // program order
  std::vector<uint32_t> acc_init;  // acc_rows x C, preloaded before cycle 0
};

// Random but valid program (every wload finds its shadow buffer swapped out, the first
// matmul swaps, the dtype of a matmul is its tile's).
Program random_program(const MxuParams& p, uint64_t seed, bool long_mode = false);

// A one-line-per-command listing (no data), for failure messages.
std::string describe(const Program& prog, const MxuParams& p);

// ---- expected behaviour and the run -----------------------------------------------------

enum class EventKind : uint8_t { Issue, InReq, WfPop, WfRead, AccWrite, Done };

struct Event {
  uint64_t cycle = 0;
  EventKind kind = EventKind::Issue;
  unsigned a = 0;               // Issue: bundle; InReq: row j; WfRead: tile row; AccWrite: address
  std::vector<uint32_t> data;   // AccWrite: C words
  bool operator==(const Event&) const = default;
};

std::string describe(const Event& e);

struct Expected {
  std::vector<Event> events;       // sorted by cycle, then kind
  std::vector<uint32_t> acc_final; // acc_rows x C
  uint64_t last_cycle = 0;
};

Expected expect(const Program& prog, const MxuParams& p);

struct RunResult {
  bool ok = true;
  std::string message;      // first difference, with the seed and the listing
  uint64_t cycles = 0;
  size_t events = 0;
};

RunResult run(MxuPort& mxu, const Program& prog);

}  // namespace vtpu::rtl
