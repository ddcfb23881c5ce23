// The SystemC side of the core cross-check, the supported-subset check and the comparison.
#include "core_harness.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "vtpu/isa/bundle.h"
#include "vtpu/sim/simulator.h"
#include "vtpu/support/child_process.h"

namespace vtpu::rtl {

std::string unsupported_in_rtl(const isa::Program& prog, const CoreModelParams& p) {
  if (prog.code.size() > p.imem_bundles)
    return fmt::format("the program has {} bundles; the RTL core's instruction memory holds {}", prog.code.size(),
                       p.imem_bundles);
  if (prog.params.size() > p.param_entries)
    return fmt::format("the program has {} vector parameter records; the RTL core's parameter RAM holds {}",
                       prog.params.size(), p.param_entries);
  if (prog.descriptors.size() > p.desc_entries)
    return fmt::format("the program has {} DMA descriptors; the RTL core's descriptor RAM holds {}",
                       prog.descriptors.size(), p.desc_entries);
  for (const auto& d : prog.descriptors) {
    if (d.bytes > 0xFFFF)
      return fmt::format("DMA descriptor '{}' moves rows of {} bytes; the RTL core's DMA counts row bytes in 16 bits",
                         d.name, d.bytes);
    if (d.src_offset > UINT32_MAX || d.dst_offset > UINT32_MAX)
      return fmt::format("DMA descriptor '{}' has an offset past 32 bits", d.name);
    for (const auto& dim : d.dims)
      if (dim.count > 0xFFFF || dim.src_stride != int64_t(int32_t(dim.src_stride)) ||
          dim.dst_stride != int64_t(int32_t(dim.dst_stride)))
        return fmt::format("DMA descriptor '{}' has a dimension past 16-bit counts or 32-bit strides", d.name);
  }
  const std::vector<isa::Bundle> bundles = isa::decode_program(prog);
  for (size_t i = 0; i < bundles.size(); ++i) {
    const isa::Bundle& b = bundles[i];
    auto refuse = [&](isa::SlotId s, const std::string& why) {
      return fmt::format("bundle {}: {} ({}) is outside the RTL core's subset: {} (docs/rtl.md, \"Supported "
                         "subset\")",
                         i, b.at(s).def->mnemonic, isa::slot(s).name, why);
    };
    const isa::Operation& dma = b.at(isa::SlotId::Dma);
    if (!dma.is_nop() && dma.def->mnemonic == "dma.send")
      return refuse(isa::SlotId::Dma, "the core has no ICI links");
    if (!b.at(isa::SlotId::Ici).is_nop()) return refuse(isa::SlotId::Ici, "the core has no ICI links");
    const isa::Operation& v = b.at(isa::SlotId::Vector);
    if (!v.is_nop()) {
      const std::string_view m = v.def->mnemonic;
      static const char* kSupported[] = {"vec.add",     "vec.sub",     "vec.mul",     "vec.max",  "vec.min",
                                         "vec.relu",    "vec.clamp",   "vec.affine",  "vec.copy", "vec.rescale",
                                         "vec.addrescale",
                                         "vec.cvt",     "vec.rsum",    "vec.rmax",    "vec.maxpool", "vec.avgpool",
                                         "vec.exp",     "vec.tanh",    "vec.sigmoid", "vec.gelu", "vec.erf",
                                         "vec.recip",   "vec.rsqrt",   "vec.log"};
      if (std::find(std::begin(kSupported), std::end(kSupported), m) == std::end(kSupported))
        return refuse(isa::SlotId::Vector, "the vector unit implements vec.add/sub/mul/max/min/relu/clamp/affine, "
                                           "vec.copy, vec.rescale/addrescale, vec.cvt, vec.rsum/rmax, vec.maxpool/avgpool and "
                                           "the table functions vec.exp/tanh/sigmoid/gelu/erf/recip/rsqrt/log");
      if (m == "vec.maxpool" || m == "vec.avgpool") {
        const size_t pi = size_t(isa::field(v, isa::SlotId::Vector, "param"));
        if (pi < prog.params.size() && prog.params[pi].window.size() > 16)
          return refuse(isa::SlotId::Vector, fmt::format("a window of {} rows; the RTL holds at most 16",
                                                         prog.params[pi].window.size()));
      }
    }
  }
  return {};
}

namespace {

// A small binary encoding of a run result for the trip out of the child process.
void put_u64(std::string& s, uint64_t v) { s.append(reinterpret_cast<const char*>(&v), 8); }
void put_str(std::string& s, const std::string& v) {
  put_u64(s, v.size());
  s += v;
}
struct Reader {
  const std::string& s;
  size_t at = 0;
  uint64_t u64() {
    if (at + 8 > s.size()) throw std::runtime_error("truncated result from the simulator child");
    uint64_t v;
    std::memcpy(&v, s.data() + at, 8);
    at += 8;
    return v;
  }
  std::string str() {
    const uint64_t n = u64();
    if (at + n > s.size()) throw std::runtime_error("truncated result from the simulator child");
    std::string v = s.substr(at, n);
    at += n;
    return v;
  }
};

// The unit of a trace event as the comparison names it ("" for units it does not compare).
std::string unit_of(sim::Unit u, uint16_t lane) {
  switch (u) {
    case sim::Unit::Dma: return "dma";
    case sim::Unit::Mxu: return unit_event_name("mxu", lane);
    case sim::Unit::WeightFifo: return unit_event_name("wload", lane);
    case sim::Unit::Vector: return "vector";
    default: return "";
  }
}

}  // namespace

CoreRunResult run_sim(const config::Config& cfg, const isa::Program& prog, const Inputs& inputs) {
  const std::string bytes = run_in_child(
      [&] {
        sim::SimOptions opt;
        opt.record_trace = true;
        const auto t0 = std::chrono::steady_clock::now();
        const sim::RunResult res = sim::simulate(cfg, prog, inputs, opt);
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::string s = "K";
        put_u64(s, uint64_t(secs * 1e9));
        put_u64(s, res.stats.total_cycles);
        put_u64(s, res.outputs.size());
        for (const auto& [name, data] : res.outputs) {
          put_str(s, name);
          put_str(s, std::string(data.begin(), data.end()));
        }
        std::vector<UnitEvent> ev;
        for (const auto& t : res.trace)
          if (std::string u = unit_of(t.unit, t.lane); !u.empty()) ev.push_back({u, t.bundle, t.begin, t.end});
        put_u64(s, ev.size());
        for (const auto& e : ev) {
          put_str(s, e.unit);
          put_u64(s, e.bundle);
          put_u64(s, e.begin);
          put_u64(s, e.end);
        }
        return s;
      },
      [](const std::exception& e) { return std::string("E") + e.what(); }, "Ethe simulator child crashed");
  CoreRunResult r;
  if (bytes.empty() || bytes[0] != 'K') {
    r.error = "SystemC model: " + (bytes.empty() ? std::string("no result") : bytes.substr(1));
    return r;
  }
  Reader in{bytes, 1};
  r.seconds = double(in.u64()) * 1e-9;
  r.total_cycles = in.u64();
  for (uint64_t n = in.u64(); n > 0; --n) {
    std::string name = in.str(), data = in.str();
    r.outputs[name] = std::vector<uint8_t>(data.begin(), data.end());
  }
  for (uint64_t n = in.u64(); n > 0; --n) {
    UnitEvent e;
    e.unit = in.str();
    e.bundle = uint32_t(in.u64());
    e.begin = in.u64();
    e.end = in.u64();
    r.events.push_back(e);
  }
  std::sort(r.events.begin(), r.events.end());
  r.ok = true;
  return r;
}

std::string compare_runs(const CoreRunResult& sim, const CoreRunResult& rtl, const isa::Program& prog) {
  for (const auto& [name, want] : sim.outputs) {
    auto it = rtl.outputs.find(name);
    if (it == rtl.outputs.end()) return fmt::format("output '{}' missing from the RTL run", name);
    const auto& got = it->second;
    if (got.size() != want.size())
      return fmt::format("output '{}': {} bytes from the SystemC model, {} from the RTL", name, want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) {
      if (want[i] == got[i]) continue;
      const size_t w = i / 4 * 4;
      auto word = [&](const std::vector<uint8_t>& v) {
        uint32_t x = 0;
        for (size_t k = 0; k < 4 && w + k < v.size(); ++k) x |= uint32_t(v[w + k]) << (8 * k);
        return x;
      };
      // When: the RTL's memory request that wrote the byte, and the SystemC model's
      // occupancy of the same DMA bundle.
      std::string when = fmt::format("the run ended at cycle {} (SystemC) / {} (RTL)", sim.total_cycles,
                                     rtl.total_cycles);
      uint64_t addr = 0;
      for (const auto& t : prog.tensors)
        if (t.name == name) addr = t.hbm_addr + i;
      if (auto wr = rtl.writes.find(addr); wr != rtl.writes.end()) {
        when = fmt::format("the RTL wrote it at cycle {} (a memory request of the DMA at bundle {})", wr->second.first,
                           wr->second.second);
        for (const auto& e : sim.events)
          if (e.unit == "dma" && e.bundle == wr->second.second)
            when += fmt::format("; in the SystemC model that bundle's transfer ran cycles {}..{}", e.begin, e.end - 1);
      } else {
        when = "the RTL never wrote it; " + when;
      }
      return fmt::format(
          "first differing value: output '{}' byte {} (HBM 0x{:x}, 32-bit word at byte {}): SystemC 0x{:02x} (word "
          "0x{:08x}), RTL 0x{:02x} (word 0x{:08x}); {}",
          name, i, addr, w, want[i], word(want), got[i], word(got), when);
    }
  }
  const size_t n = std::max(sim.events.size(), rtl.events.size());
  for (size_t i = 0; i < n; ++i) {
    auto show = [](const std::vector<UnitEvent>& v, size_t k) {
      return k < v.size() ? fmt::format("{} of bundle {} busy cycles {}..{}", v[k].unit, v[k].bundle, v[k].begin,
                                        v[k].end - 1)
                          : std::string("(none)");
    };
    if (i >= sim.events.size() || i >= rtl.events.size() || !(sim.events[i] == rtl.events[i]))
      return fmt::format("unit event #{} (sorted by unit, bundle, cycle) differs:\n  SystemC: {}\n  RTL:     {}", i,
                         show(sim.events, i), show(rtl.events, i));
  }
  if (sim.total_cycles != rtl.total_cycles)
    return fmt::format("total cycles: SystemC {}, RTL {}", sim.total_cycles, rtl.total_cycles);
  return {};
}

}  // namespace vtpu::rtl
