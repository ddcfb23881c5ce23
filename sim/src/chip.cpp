// The SystemC side of the model: the chip as modules, the memory as a TLM-2.0 target with
// the DRAM timing model, and the sequencer as a thread that runs ahead of the kernel by
// whole transactions (temporal decoupling) and synchronises through a quantum keeper.
#include <fmt/format.h>

#include "chip.h"

#include <cstdlib>
#include <random>
#include <tlm_utils/tlm_quantumkeeper.h>

#include "energy.h"
#include "kernel_run.h"

namespace vtpu::sim {
namespace detail {

using memory::DramStats;
using memory::DramTiming;
using sc_core::sc_module_name;
using sc_core::sc_time;

Hbm::Hbm(sc_module_name name, const config::Config& cfg, sc_time period, bool timing_only)
    : sc_module(name), store(cfg.memory.bytes), timing(cfg.memory, cfg.clock_mhz), period_(period),
      timing_only_(timing_only) {
  socket.register_b_transport(this, &Hbm::b_transport);
}

void Hbm::b_transport(tlm::tlm_generic_payload& trans, sc_time& delay) {
  uint64_t now = uint64_t((sc_core::sc_time_stamp() + delay) / period_);
  uint64_t addr = trans.get_address(), n = trans.get_data_length();
  bool write = trans.get_command() == tlm::TLM_WRITE_COMMAND;
  uint64_t done = timing.access(addr, n, now, write);
  // No data pointer: a read for its time alone (the rest of a whole weight tile).
  if (!timing_only_ && write) store.write(addr, trans.get_data_ptr(), n);
  if (!timing_only_ && !write && trans.get_data_ptr()) store.read(addr, trans.get_data_ptr(), n);
  delay = period_ * double(done) - sc_core::sc_time_stamp();
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

Chip::Chip(sc_module_name name, const config::Config& cfg, const isa::Program& prog, const SimOptions& opt, Hbm& hbm,
           Fabric* fabric, std::function<void()> on_end)
    : sc_module(name),
      period_(1e3 / cfg.clock_mhz, sc_core::SC_NS),
      machine_(cfg, prog, opt, hbm.store,
               [this](uint64_t addr, uint8_t* data, uint64_t bytes, uint64_t ready, bool write) {
                 return transport(addr, data, bytes, ready, write);
               },
               fabric),
      on_end_(std::move(on_end)) {
  SC_THREAD(sequencer);
}

uint64_t Chip::transport(uint64_t addr, uint8_t* data, uint64_t bytes, uint64_t ready, bool write) {
  tlm::tlm_generic_payload trans;
  trans.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  trans.set_address(addr);
  trans.set_data_ptr(data);
  trans.set_data_length(unsigned(bytes));
  trans.set_streaming_width(unsigned(bytes));
  trans.set_byte_enable_ptr(nullptr);
  trans.set_dmi_allowed(false);
  trans.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_time delay = period_ * double(ready) - sc_core::sc_time_stamp();
  dma_socket->b_transport(trans, delay);
  if (trans.is_response_error()) throw InternalError("HBM transaction failed: " + trans.get_response_string());
  return uint64_t((sc_core::sc_time_stamp() + delay) / period_ + 0.5);
}

void Chip::sequencer() {
  tlm_utils::tlm_quantumkeeper qk;
  qk.reset();
  try {
    machine_.run([&](uint64_t cycle) {
      // Catch the kernel up with the sequencer's local time.
      sc_time target = period_ * double(cycle);
      if (target > sc_core::sc_time_stamp()) {
        qk.set(target - sc_core::sc_time_stamp());
        qk.sync();
      }
    });
    finished = true;
  } catch (...) {
    error = std::current_exception();
  }
  if (on_end_) on_end_();
  else sc_core::sc_stop();
  end_thread();
}

namespace {
bool g_simulated = false;
}  // namespace

void check_run(const config::Config& cfg, const isa::Program& prog,
               const std::map<std::string, std::vector<uint8_t>>& inputs) {
  if (prog.config_fingerprint != 0 && prog.config_fingerprint != config::fingerprint(cfg))
    throw UserError(fmt::format(
        "the program was built for config '{}' (fingerprint 0x{:016x}) but this run uses '{}' (fingerprint "
        "0x{:016x}); rebuild it with -c {} or run it with -c {}",
        prog.config_name, prog.config_fingerprint, cfg.name, config::fingerprint(cfg), cfg.name,
        prog.config_name.empty() ? "<its config>" : prog.config_name));
  for (const auto& [name, bytes] : inputs) {
    const isa::TensorInfo* t = nullptr;
    for (const auto& ti : prog.tensors)
      if (ti.name == name) t = &ti;
    if (!t) {
      std::string names;
      for (const auto& ti : prog.tensors)
        if (ti.role == isa::TensorRole::Input) names += " " + ti.name;
      throw UserError(fmt::format("input '{}' is not a tensor of the program; its inputs are:{}", name,
                                  names.empty() ? " (none)" : names));
    }
    if (bytes.size() != t->bytes())
      throw UserError(fmt::format("input '{}' has {} bytes but the program's tensor {} {} needs {}", name,
                                  bytes.size(), isa::dtype_name(t->dtype), fmt::join(t->shape, "x"), t->bytes()));
  }
  for (const auto& t : prog.tensors)
    if (t.role == isa::TensorRole::Input && !inputs.count(t.name))
      throw UserError(fmt::format("no data for input tensor '{}'", t.name));
  check_fits_memory(cfg, prog);
}

sc_time start_kernel(const config::Config& cfg) {
  if (g_simulated)
    throw InternalError("SystemC allows one simulation per process; run each simulation in its own process");
  g_simulated = true;
  ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);  // keep stdout for the report

  sc_core::sc_report_handler::set_actions("/IEEE_Std_1666/deprecated", sc_core::SC_DO_NOTHING);
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  sc_core::sc_set_time_resolution(1, sc_core::SC_PS);
  sc_time period(1e3 / cfg.clock_mhz, sc_core::SC_NS);
  tlm_utils::tlm_quantumkeeper::set_global_quantum(period * 65536.0);
  return period;
}

void load_memory(Hbm& hbm, const config::Config& cfg, const isa::Program& prog,
                 const std::map<std::string, std::vector<uint8_t>>& inputs, bool timing_only) {
  auto place = [&](uint64_t addr, uint64_t bytes, const uint8_t* data, const std::string& what) {
    if (addr > cfg.memory.bytes || bytes > cfg.memory.bytes - addr)
      throw UserError(fmt::format("{} at HBM address 0x{:x} ({} bytes) does not fit the {} bytes of memory.bytes",
                                  what, addr, bytes, cfg.memory.bytes));
    if (!timing_only) hbm.store.write(addr, data, bytes);
  };
  for (const auto& seg : prog.constants) {
    if (!timing_only && seg.elided())
      throw InternalError("a program read without its constant bytes (isa::ReadOptions) runs only timing-only");
    place(seg.hbm_addr, seg.bytes(), seg.data.data(), "a constant");
  }
  for (const auto& t : prog.tensors)
    if (t.role == isa::TensorRole::Input) {
      const std::vector<uint8_t>& in = inputs.at(t.name);
      place(t.hbm_addr, in.size(), in.data(), "input '" + t.name + "'");
    }
}

std::map<std::string, std::vector<uint8_t>> read_outputs(const Hbm& hbm, const config::Config& cfg,
                                                         const isa::Program& prog, bool timing_only) {
  std::map<std::string, std::vector<uint8_t>> outs;
  for (const auto& t : prog.tensors) {
    if (t.role != isa::TensorRole::Output) continue;
    if (t.hbm_addr > cfg.memory.bytes || t.bytes() > cfg.memory.bytes - t.hbm_addr)
      throw UserError(fmt::format("output '{}' at HBM address 0x{:x} does not fit memory.bytes", t.name, t.hbm_addr));
    if (timing_only) continue;
    std::vector<uint8_t> bytes(t.bytes());
    hbm.store.read(t.hbm_addr, bytes.data(), bytes.size());
    outs[t.name] = std::move(bytes);
  }
  return outs;
}

}  // namespace detail

RunResult simulate(const config::Config& cfg, const isa::Program& prog,
                   const std::map<std::string, std::vector<uint8_t>>& inputs, const SimOptions& opt) {
  using namespace detail;
  if (cfg.system.chips > 1)
    throw UserError(fmt::format("config '{}' describes a system of {} chips (system.chips) but a program runs on one "
                                "chip: use a single-chip preset such as tpu-v4-core, `vtpu run MODEL --parallel data` "
                                "to split a model's batch across the chips, or `vtpu collective` for collectives across "
                                "them",
                                cfg.name, cfg.system.chips));
  check_run(cfg, prog, inputs);
  sc_core::sc_time period = start_kernel(cfg);

  auto hbm = std::make_unique<Hbm>("hbm", cfg, period, opt.timing_only);
  auto chip = std::make_unique<Chip>("chip", cfg, prog, opt, *hbm);
  chip->dma_socket.bind(hbm->socket);
  load_memory(*hbm, cfg, prog, inputs, opt.timing_only);

  run_kernel();
  if (chip->error) std::rethrow_exception(chip->error);
  if (!chip->finished) throw InternalError("the simulation ended before the program halted");

  RunResult r;
  r.stats = std::move(chip->machine().stats());
  const DramStats& ds = hbm->timing.stats();
  r.stats.hbm_row_hits = ds.total.row_hits;
  r.stats.hbm_row_misses = ds.total.row_misses;
  r.stats.hbm_row_empty = ds.total.row_empty;
  compute_energy(cfg, r.stats);
  r.trace = std::move(chip->machine().trace());
  r.outputs = read_outputs(*hbm, cfg, prog, opt.timing_only);
  return r;
}

void check_fits_memory(const config::Config& cfg, const isa::Program& prog) {
  auto fits = [&](uint64_t addr, uint64_t bytes) { return addr <= cfg.memory.bytes && bytes <= cfg.memory.bytes - addr; };
  for (const auto& seg : prog.constants)
    if (!fits(seg.hbm_addr, seg.bytes()))
      throw UserError(fmt::format("a constant segment at HBM address 0x{:x} ({} bytes) does not fit the {} bytes of "
                                  "memory.bytes",
                                  seg.hbm_addr, seg.bytes(), cfg.memory.bytes));
  for (const auto& t : prog.tensors)
    if (!fits(t.hbm_addr, t.bytes()))
      throw UserError(fmt::format("{} tensor '{}' ({} {}, {} bytes) at HBM address 0x{:x} does not fit the {} bytes of "
                                  "memory.bytes; compile the model for this config, or use a config with more memory",
                                  isa::tensor_role_name(t.role),
                                  t.name, isa::dtype_name(t.dtype), fmt::join(t.shape, "x"), t.bytes(), t.hbm_addr,
                                  cfg.memory.bytes));
}

void fill_missing_inputs(const isa::Program& prog, uint64_t seed, std::map<std::string, std::vector<uint8_t>>& inputs) {
  uint64_t index = 0;
  for (const auto& t : prog.tensors) {
    if (t.role != isa::TensorRole::Input) continue;
    ++index;
    if (inputs.count(t.name)) continue;
    std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + index);
    std::vector<uint8_t> b(t.bytes());
    size_t n = b.size() / isa::dtype_bytes(t.dtype);
    for (size_t i = 0; i < n; ++i) {
      switch (t.dtype) {
        case isa::Dtype::Int8: b[i] = uint8_t(int8_t(int(rng() % 128) - 64)); break;
        case isa::Dtype::Uint8: b[i] = uint8_t(rng() % 256); break;
        case isa::Dtype::Int16: {
          int16_t v = int16_t(int(rng() % 2001) - 1000);
          std::memcpy(&b[i * 2], &v, 2);
          break;
        }
        case isa::Dtype::Int32: {
          int32_t v = int32_t(rng() % 2001) - 1000;
          std::memcpy(&b[i * 4], &v, 4);
          break;
        }
        case isa::Dtype::Fp32: {
          float v = float(double(rng() >> 11) / double(1ull << 53) * 2.0 - 1.0);
          std::memcpy(&b[i * 4], &v, 4);
          break;
        }
        case isa::Dtype::Bf16: {
          float v = float(double(rng() >> 11) / double(1ull << 53) * 2.0 - 1.0);
          uint32_t u;
          std::memcpy(&u, &v, 4);
          uint16_t h = uint16_t((u + 0x7fff + ((u >> 16) & 1)) >> 16);
          std::memcpy(&b[i * 2], &h, 2);
          break;
        }
      }
    }
    inputs[t.name] = std::move(b);
  }
}

}  // namespace vtpu::sim
