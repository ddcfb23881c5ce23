#pragma once
// Internal: the SystemC modules of one chip (its off-chip memory as a TLM-2.0 target and
// the chip with its sequencer thread), shared by the single-chip run (chip.cpp) and the
// multi-chip system (system.cpp).
#include <exception>
#include <functional>
#include <map>
#include <string>
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>
#include <vector>

#include "machine.h"
#include "vtpu/memory/dram_timing.h"

namespace vtpu::sim::detail {

// Off-chip memory: contents plus the timing model of docs/dram.md, behind a TLM-2.0 socket.
// The initiator annotates the delay at which a request is ready; the target returns the
// delay at which its last byte is delivered.
class Hbm : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<Hbm> socket{"socket"};

  // timing_only: every timing rule, no contents moved (SimOptions::timing_only).
  Hbm(sc_core::sc_module_name name, const config::Config& cfg, sc_core::sc_time period, bool timing_only = false);

  HbmStore store;
  memory::DramTiming timing;

 private:
  void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  sc_core::sc_time period_;
  bool timing_only_;
};

// The chip: the sequencer thread drives the Machine (sequencer, scalar unit, DMA engine,
// MXUs, vector unit, unified buffer, accumulators, sync flags, ICI engine); the DMA engine
// reaches the memory through its initiator socket. `on_end` runs when the thread ends (by
// default it stops the simulation); `fabric` joins the chip to a system.
class Chip : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Chip);
  tlm_utils::simple_initiator_socket<Chip> dma_socket{"dma_socket"};

  Chip(sc_core::sc_module_name name, const config::Config& cfg, const isa::Program& prog, const SimOptions& opt,
       Hbm& hbm, Fabric* fabric = nullptr, std::function<void()> on_end = {});

  Machine& machine() { return machine_; }
  std::exception_ptr error;
  bool finished = false;

 private:
  uint64_t transport(uint64_t addr, uint8_t* data, uint64_t bytes, uint64_t ready, bool write);
  void sequencer();

  sc_core::sc_time period_;
  Machine machine_;
  std::function<void()> on_end_;
};

// Checks the program against the config and its inputs (names, sizes, config fingerprint).
void check_run(const config::Config& cfg, const isa::Program& prog,
               const std::map<std::string, std::vector<uint8_t>>& inputs);
// Puts the program's constants and inputs into the memory (checks only, when timing_only).
void load_memory(Hbm& hbm, const config::Config& cfg, const isa::Program& prog,
                 const std::map<std::string, std::vector<uint8_t>>& inputs, bool timing_only = false);
// The program's output tensors, read back from the memory (checked but none read, when timing_only).
std::map<std::string, std::vector<uint8_t>> read_outputs(const Hbm& hbm, const config::Config& cfg,
                                                         const isa::Program& prog, bool timing_only = false);
// SystemC allows one elaboration per process: claims it (or throws) and sets the kernel up.
sc_core::sc_time start_kernel(const config::Config& cfg);

}  // namespace vtpu::sim::detail
