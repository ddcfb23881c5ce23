// The planner: which phases a collective has, how data splits into units and pieces, where
// buffers live. Every number the programs use is decided here (docs/collectives.md).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "schedule.h"
#include "vtpu/config/topology.h"
#include "vtpu/support/error.h"

namespace vtpu::collectives {

namespace {
constexpr uint64_t kInAddr = 1 << 20;  // HBM address of the buffers on every chip
constexpr unsigned kSlots = 4;
constexpr uint64_t kMaxAddr = uint64_t(1) << 31;  // what one `li` reaches

bool reduces(Kind k) { return k == Kind::AllReduce || k == Kind::ReduceScatter; }
}  // namespace

std::string_view kind_name(Kind k) {
  switch (k) {
    case Kind::AllReduce: return "all-reduce";
    case Kind::AllGather: return "all-gather";
    case Kind::ReduceScatter: return "reduce-scatter";
    case Kind::AllToAll: return "all-to-all";
  }
  return "?";
}

std::optional<Kind> parse_kind(std::string_view name) {
  for (Kind k : {Kind::AllReduce, Kind::AllGather, Kind::ReduceScatter, Kind::AllToAll})
    if (kind_name(k) == name) return k;
  return std::nullopt;
}

uint64_t unit_bytes(const config::Config& cfg, isa::Dtype dtype) {
  return std::lcm(uint64_t(cfg.core.mxu.cols) * isa::dtype_bytes(dtype), uint64_t(cfg.core.unified_buffer.alignment_bytes));
}

Plan plan(const config::Config& cfg, const Spec& spec) {
  const config::Topology topo(cfg);
  const uint32_t N = topo.chips();
  if (N < 2)
    throw UserError(fmt::format("config '{}' has one chip (system.chips = 1): a collective needs a multi-chip system, "
                                "e.g. tpu-v4-4x4x4 or tpu-v5e-like-16x16",
                                cfg.name));
  if (reduces(spec.kind) && spec.dtype != isa::Dtype::Fp32 && spec.dtype != isa::Dtype::Bf16 &&
      spec.dtype != isa::Dtype::Int32)
    throw UserError(fmt::format("{} adds {} on the vector unit; use fp32, bf16 or int32", kind_name(spec.kind),
                                isa::dtype_name(spec.dtype)));
  Plan p;
  p.spec = spec;
  p.chips = N;
  p.slots = kSlots;
  const uint64_t row = uint64_t(cfg.core.mxu.cols) * isa::dtype_bytes(spec.dtype);
  p.unit_bytes = unit_bytes(cfg, spec.dtype);
  const uint64_t per_chip_units = spec.kind == Kind::AllReduce ? 1 : N;
  if (spec.bytes == 0 || spec.bytes % (p.unit_bytes * per_chip_units))
    throw UserError(fmt::format("--bytes {}: a {} on {} chips of '{}' moves whole units of {} bytes ({} {} lanes at "
                                "{}-byte aligned unified-buffer addresses){}; use a multiple of {}",
                                spec.bytes, kind_name(spec.kind), N, cfg.name, p.unit_bytes, cfg.core.mxu.cols,
                                isa::dtype_name(spec.dtype), cfg.core.unified_buffer.alignment_bytes,
                                per_chip_units > 1 ? ", the same number for every chip" : "",
                                p.unit_bytes * per_chip_units));
  const uint64_t in_addr = spec.at.hbm_addr ? spec.at.hbm_addr : kInAddr;
  p.in_addr = in_addr;
  uint64_t span = (spec.bytes + kInAddr - 1) / kInAddr * kInAddr;
  p.out_addr = spec.kind == Kind::AllToAll ? in_addr + span : in_addr;  // the others work in place
  uint64_t top = p.out_addr + span;
  if (top > cfg.memory.bytes || top > kMaxAddr)
    throw UserError(fmt::format("--bytes {} does not fit: the buffers need HBM up to {} bytes, and vtpu places them "
                                "below {} (memory.bytes = {}); use a smaller message",
                                spec.bytes, top, std::min<uint64_t>(kMaxAddr, cfg.memory.bytes), cfg.memory.bytes));

  // Phases: reduce-scatter from the last dimension down (so each chip ends with its own
  // contiguous block, chip-id order), all-gather back up.
  const unsigned D = topo.dims();
  uint64_t region = spec.bytes;
  auto ring_phase = [&](Phase::Op op, unsigned d) {
    return Phase{op, d, topo.shape()[d], topo.links_in_dim(d), region};
  };
  if (spec.kind == Kind::AllToAll) {
    p.phases.push_back({Phase::Op::AllToAll, 0, N, 1, spec.bytes});
  } else {
    if (reduces(spec.kind))
      for (unsigned d = D; d-- > 0;)
        if (topo.shape()[d] > 1) p.phases.push_back(ring_phase(Phase::Op::ReduceScatter, d)), region /= topo.shape()[d];
    if (spec.kind == Kind::AllGather) region = spec.bytes / N;
    if (spec.kind == Kind::AllReduce || spec.kind == Kind::AllGather)
      for (unsigned d = 0; d < D; ++d)
        if (topo.shape()[d] > 1) region *= topo.shape()[d], p.phases.push_back(ring_phase(Phase::Op::AllGather, d));
  }
  // Every phase has its own flags (schedule.h): at least kSlots slots per ring must fit
  // core.scalar.sync_flags.
  const unsigned flags = spec.at.flags ? spec.at.flags : unsigned(cfg.core.scalar.sync_flags),
                 rings = detail::flag_rings(p.phases);
  const uint64_t need = detail::flags_needed(p.phases.size(), rings, kSlots);
  if (need > flags && spec.at.flags)
    throw UserError(fmt::format("the {} over {} chips runs {} phase(s) of up to {} ring(s) and needs at least {} sync flags "
                                "of its own (docs/collectives.md, \"Flags\"), and {} are left for it",
                                kind_name(spec.kind), N, p.phases.size(), rings, need, flags));
  if (need > flags)
    throw UserError(fmt::format("config '{}': a {} over {} chips runs {} phase(s) of up to {} ring(s) and needs at least "
                                "{} sync flags (docs/collectives.md, \"Flags\"), but core.scalar.sync_flags is {}; {}",
                                cfg.name, kind_name(spec.kind), N, p.phases.size(), rings, need, flags,
                                need < isa::kNumFlags ? fmt::format("raise it to {} or more", need)
                                                      : fmt::format("that is more than the ISA's {} flags: use a torus of "
                                                                    "fewer dimensions", isa::kNumFlags - 1)));

  // Pieces: long enough that a link spends several hop delays on each (so the hop latency
  // hides behind the stream), short enough for the buffers and the first phase's halves.
  const uint64_t ub_room = spec.at.ub_bytes ? spec.at.ub_bytes : cfg.core.unified_buffer.bytes;
  const uint64_t ub_cap = ub_room / (6 * p.slots) / p.unit_bytes * p.unit_bytes;
  if (ub_cap < p.unit_bytes)
    throw UserError(fmt::format("the {}-byte unified buffer cannot hold {} slots of one {}-byte unit per ring",
                                ub_room, 6 * p.slots, p.unit_bytes));
  uint64_t piece = spec.piece_bytes;
  if (piece == 0) {
    const double link_bytes_per_cycle = cfg.ici.link_bandwidth_gbytes_per_s * 1e3 / cfg.clock_mhz;
    const double hop = std::round((cfg.ici.link_latency_ns + cfg.ici.router_delay_ns) * cfg.clock_mhz / 1000);
    piece = uint64_t(4 * hop * link_bytes_per_cycle);
    const Phase& first = p.phases.front();
    uint64_t half = first.op == Phase::Op::AllToAll ? spec.bytes / N : first.bytes / first.ring / first.rings;
    piece = std::min(piece, std::max(half, p.unit_bytes));
  }
  piece = std::max(p.unit_bytes, piece / p.unit_bytes * p.unit_bytes);
  p.piece_bytes = std::min(piece, ub_cap);

  // Slots: a receiver's credit comes back a round trip after the piece it frees was sent, so
  // a sender needs that many pieces' worth of slots to keep its link busy. A mesh ring's
  // wraparound pair is n - 1 hops apart.
  uint32_t far = 1;
  for (const Phase& ph : p.phases)
    if (ph.op != Phase::Op::AllToAll && !cfg.ici.wraparound) far = std::max(far, ph.ring - 1);
  const double bpc = cfg.ici.link_bandwidth_gbytes_per_s * 1e3 / cfg.clock_mhz;
  const double hop = std::round((cfg.ici.link_latency_ns + cfg.ici.router_delay_ns) * cfg.clock_mhz / 1000);
  const double t_piece = double(p.piece_bytes) / bpc, t_packet = double(cfg.ici.packet_bytes) / bpc;
  const double round_trip = t_piece + far * (2 * hop + t_packet) + 2 * cfg.core.dma.setup_cycles + 64;
  unsigned most = kSlots;  // the most slots the flags leave room for
  while (detail::flags_needed(p.phases.size(), rings, most + 1) <= flags) ++most;
  unsigned want = unsigned(std::ceil(round_trip / t_piece)) + 1;
  p.slots = std::clamp(want, kSlots, most);
  while (p.slots > kSlots && 6 * p.slots * p.piece_bytes > ub_room) --p.slots;
  if (spec.kind != Kind::AllReduce || spec.algorithm == Spec::Algorithm::Ring) return p;

  // One-shot: every chip's whole buffer in the unified buffer at once (N slots of S), six
  // flags; taken when asked for, or (auto) when the model says it is faster.
  Plan q = p;
  q.phases = {{Phase::Op::OneShot, 0, N, 1, spec.bytes}};
  q.slots = 1;
  q.piece_bytes = spec.bytes;
  const bool fits = uint64_t(N) * spec.bytes <= ub_room && detail::flags_needed(1, 1, 1) <= flags &&
                    spec.bytes / row <= 65535;  // the adds' row count
  if (spec.algorithm == Spec::Algorithm::OneShot) {
    if (!fits)
      throw UserError(fmt::format("a one-shot all-reduce of {} bytes on {} chips holds {} bytes in the unified buffer, "
                                  "more than the {} it has; use the rings (--algorithm ring) or a smaller message",
                                  spec.bytes, N, uint64_t(N) * spec.bytes, ub_room));
    return q;
  }
  return fits && alpha_beta(cfg, q).seconds() < alpha_beta(cfg, p).seconds() ? q : p;
}

uint64_t ub_bytes_used(const Plan& p) {
  if (!p.phases.empty() && p.phases[0].op == Phase::Op::OneShot) return uint64_t(p.chips) * p.piece_bytes;
  return uint64_t(detail::flag_rings(p.phases)) * 3 * p.slots * p.piece_bytes;
}

unsigned flags_used(const Plan& p) {
  return unsigned(detail::flags_needed(p.phases.size(), detail::flag_rings(p.phases), p.slots));
}

double bus_bandwidth(Kind k, uint32_t chips, uint64_t bytes, double seconds) {
  if (seconds <= 0) return 0;
  double alg = double(bytes) / seconds, n = chips;
  return k == Kind::AllReduce ? alg * 2 * (n - 1) / n : alg * (n - 1) / n;
}

}  // namespace vtpu::collectives
