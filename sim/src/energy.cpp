// Energy = action counts x the config's per-action table + leakage x time (docs/energy.md).
#include "energy.h"

namespace vtpu::sim::detail {
namespace {

struct Rates {
  double mac_int8, mac_bf16;
  double ub_per_byte, acc_per_byte, wfifo_per_byte;
  double vec_add, vec_mul;
  double scalar;
  double dram_per_byte;
  double ici_per_byte;  // per byte per link crossed
  double static_w;  // chip static power, watts
};

Rates rates_of(const config::Config& cfg) {
  const auto& e = cfg.energy;
  const auto& core = cfg.core;
  Rates r{};
  r.mac_int8 = e.mac_pj.int8;
  r.mac_bf16 = e.mac_pj.bf16;
  // One SRAM macro per bank: a 64-bit access costs sram_pj_per_64b(macro bytes).
  uint64_t ub_macro = core.unified_buffer.bytes / std::max<uint32_t>(1, core.unified_buffer.banks);
  uint64_t acc_bytes = uint64_t(core.accumulators.rows) * core.mxu.cols * 4;
  uint64_t acc_macro = acc_bytes / std::max<uint32_t>(1, core.accumulators.banks);
  uint64_t fifo_bytes = uint64_t(core.mxu.weight_fifo_tiles) * core.mxu.rows * core.mxu.cols * 2;
  r.ub_per_byte = config::sram_pj_per_64b(e, std::max<uint64_t>(ub_macro, 1)) / 8.0;
  r.acc_per_byte = config::sram_pj_per_64b(e, std::max<uint64_t>(acc_macro, 1)) / 8.0;
  r.wfifo_per_byte = config::sram_pj_per_64b(e, std::max<uint64_t>(fifo_bytes, 1)) / 8.0;
  r.vec_add = e.vector_add_pj.fp32;
  r.vec_mul = e.vector_mul_pj.fp32;
  r.scalar = e.scalar_op_pj;
  r.dram_per_byte = e.dram_pj_per_bit * 8.0;
  r.ici_per_byte = e.ici_pj_per_bit * 8.0;
  double sram_mib = double(core.unified_buffer.bytes + acc_bytes * core.mxu.count + fifo_bytes * core.mxu.count) /
                    double(1 << 20);
  r.static_w = e.static_power_w + e.sram_leakage_mw_per_mib * 1e-3 * sram_mib;
  return r;
}

void fill(const Rates& r, double clock_mhz, uint64_t cycles, Counters& c) {
  c.energy_pj = {};
  auto& e = c.energy_pj;
  e[size_t(Unit::Mxu)] = double(c.macs_int8) * r.mac_int8 + double(c.macs_bf16) * r.mac_bf16;
  e[size_t(Unit::UnifiedBuffer)] = double(c.ub_read_bytes + c.ub_write_bytes) * r.ub_per_byte;
  e[size_t(Unit::Accumulators)] = double(c.acc_read_bytes + c.acc_write_bytes) * r.acc_per_byte;
  // Each weight byte is written into the FIFO once and read out once.
  e[size_t(Unit::WeightFifo)] = double(2 * c.wfifo_bytes) * r.wfifo_per_byte;
  e[size_t(Unit::Vector)] = double(c.vector_elements - c.vector_mul_elements) * r.vec_add +
                            double(c.vector_mul_elements) * r.vec_mul;
  e[size_t(Unit::Scalar)] = double(c.scalar_ops) * r.scalar;
  e[size_t(Unit::Sequencer)] = double(c.bundles) * r.scalar;
  e[size_t(Unit::Hbm)] = double(c.hbm_read_bytes + c.hbm_write_bytes) * r.dram_per_byte;
  // A send pays for every link its bytes cross (docs/energy.md).
  e[size_t(Unit::Ici)] = double(c.ici_hop_bytes) * r.ici_per_byte;
  // watts x seconds = joules; x 1e12 = pJ.
  e[size_t(Unit::Static)] = r.static_w * double(cycles) / (clock_mhz * 1e6) * 1e12;
}

}  // namespace

void compute_energy(const config::Config& cfg, Stats& stats) {
  Rates r = rates_of(cfg);
  fill(r, cfg.clock_mhz, stats.total_cycles, stats.total);
  // A tag's static share: the cycles its bundles occupied the sequencer (issue + stall).
  for (TagStats& t : stats.per_tag) fill(r, cfg.clock_mhz, t.c.bundles + t.c.stall_cycles, t.c);
}

}  // namespace vtpu::sim::detail
