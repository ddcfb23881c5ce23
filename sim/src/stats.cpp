#include "vtpu/sim/stats.h"

#include <algorithm>
#include <numeric>

namespace vtpu::sim {

std::string_view stall_reason_name(StallReason r) {
  switch (r) {
    case StallReason::WaitDma: return "wait_dma";
    case StallReason::WaitMxu: return "wait_mxu";
    case StallReason::WaitVector: return "wait_vector";
    case StallReason::WaitFlag: return "wait_flag";
    case StallReason::WaitWeights: return "wait_weights";
    case StallReason::DmaBusy: return "dma_busy";
    case StallReason::WeightFifoFull: return "weight_fifo_full";
    case StallReason::MxuBusy: return "mxu_busy";
    case StallReason::WeightPathBusy: return "weight_path_busy";
    case StallReason::VectorBusy: return "vector_busy";
    case StallReason::WaitIci: return "wait_ici";
    case StallReason::IciBusy: return "ici_busy";
    case StallReason::Barrier: return "barrier";
    case StallReason::ImemFetch: return "imem_fetch";
  }
  return "?";
}

std::string_view unit_name(Unit u) {
  switch (u) {
    case Unit::Sequencer: return "sequencer";
    case Unit::Scalar: return "scalar";
    case Unit::Dma: return "dma";
    case Unit::Mxu: return "mxu";
    case Unit::Vector: return "vector";
    case Unit::UnifiedBuffer: return "unified_buffer";
    case Unit::Accumulators: return "accumulators";
    case Unit::WeightFifo: return "weight_fifo";
    case Unit::Hbm: return "hbm";
    case Unit::Static: return "static";
    case Unit::Ici: return "ici";
  }
  return "?";
}

double Counters::energy_total_pj() const { return std::accumulate(energy_pj.begin(), energy_pj.end(), 0.0); }

void Counters::add(const Counters& o) {
  bundles += o.bundles;
  stall_cycles += o.stall_cycles;
  for (size_t i = 0; i < stall.size(); ++i) stall[i] += o.stall[i];
  scalar_ops += o.scalar_ops;
  dma_transfers += o.dma_transfers;
  dma_busy_cycles += o.dma_busy_cycles;
  hbm_read_bytes += o.hbm_read_bytes;
  hbm_write_bytes += o.hbm_write_bytes;
  ub_read_bytes += o.ub_read_bytes;
  ub_write_bytes += o.ub_write_bytes;
  acc_read_bytes += o.acc_read_bytes;
  acc_write_bytes += o.acc_write_bytes;
  wfifo_bytes += o.wfifo_bytes;
  weight_loads += o.weight_loads;
  weight_shift_cycles += o.weight_shift_cycles;
  matmuls += o.matmuls;
  mxu_rows += o.mxu_rows;
  macs_int8 += o.macs_int8;
  macs_bf16 += o.macs_bf16;
  pe_rows += o.pe_rows;
  vector_ops += o.vector_ops;
  vector_busy_cycles += o.vector_busy_cycles;
  vector_elements += o.vector_elements;
  vector_mul_elements += o.vector_mul_elements;
  ub_bank_extra_cycles += o.ub_bank_extra_cycles;
  ici_sends += o.ici_sends;
  ici_signals += o.ici_signals;
  ici_bytes_sent += o.ici_bytes_sent;
  ici_hop_bytes += o.ici_hop_bytes;
  ici_bytes_received += o.ici_bytes_received;
  first_issue = std::min(first_issue, o.first_issue);
  last_done = std::max(last_done, o.last_done);
  span_cycles += o.span_cycles;
  for (size_t i = 0; i < energy_pj.size(); ++i) energy_pj[i] += o.energy_pj[i];
}

double Stats::mxu_temporal_utilization() const {
  if (!total_cycles || !mxu_count) return 0;
  return double(total.mxu_rows) / (double(total_cycles) * mxu_count);
}

double Stats::mxu_spatial_utilization() const {
  if (!total.pe_rows) return 0;
  return double(total.macs()) / double(total.pe_rows);
}

double Stats::mxu_overall_utilization() const {
  if (!total_cycles || !mxu_count) return 0;
  return double(total.macs()) / (double(total_cycles) * mxu_count * mxu_rows * mxu_cols);
}

}  // namespace vtpu::sim
