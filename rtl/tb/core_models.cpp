// Runs a program on a Verilated vtpu_core: loads bundles and descriptors, places constants
// and inputs in a testbench-side memory, answers the core's memory port with the
// simulator's DramTiming (docs/dram.md), and records the events the core exposes.
#include <fmt/format.h>
#include <verilated.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>

#include "core_harness.h"
#include "vtpu/isa/bundle.h"
#include "vtpu/numerics/convert.h"
#include "vtpu/config/timing.h"
#include "vtpu/memory/dram_timing.h"
#include "vtpu_rtl_models.h"

namespace vtpu::rtl {
namespace {

// Sets bits [lsb, lsb + width) of a Verilated port (an integer, or VlWide of 32-bit words).
template <class T>
void put(T& port, unsigned lsb, unsigned width, uint64_t v) {
  for (unsigned i = 0; i < width; ++i) {
    const unsigned bit = lsb + i;
    const bool one = (v >> i) & 1;
    if constexpr (std::is_integral_v<T>) {
      if (one) port = static_cast<T>(port | (T(1) << bit));
      else port = static_cast<T>(port & ~(T(1) << bit));
    } else {
      EData& w = port.at(bit / 32);
      if (one) w |= (1u << (bit % 32));
      else w &= ~(1u << (bit % 32));
    }
  }
}

template <class T>
void clear(T& port) {
  if constexpr (std::is_integral_v<T>) port = 0;
  else
    for (auto& w : port.m_storage) w = 0;
}

template <class T>
uint8_t byte_of(const T& port, unsigned i) {
  if constexpr (std::is_integral_v<T>) return uint8_t(uint64_t(port) >> (8 * i));
  else return uint8_t(port.at(i / 4) >> (8 * (i % 4)));
}

// Sparse off-chip memory contents (zero where never written).
class Hbm {
 public:
  void write(uint64_t a, const uint8_t* p, uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) page(a + i)[(a + i) % kPage] = p[i];
  }
  uint8_t read(uint64_t a) {
    auto it = pages_.find(a / kPage);
    return it == pages_.end() ? 0 : it->second[a % kPage];
  }

 private:
  static constexpr uint64_t kPage = 4096;
  std::vector<uint8_t>& page(uint64_t a) {
    auto& p = pages_[a / kPage];
    if (p.empty()) p.assign(kPage, 0);
    return p;
  }
  std::unordered_map<uint64_t, std::vector<uint8_t>> pages_;
};

// The descriptor RAM entry of vtpu_dma (layout in rtl/src/vtpu_dma.sv).
template <class T>
void pack_descriptor(T& port, const isa::DmaDescriptor& d) {
  clear(port);
  put(port, 0, 32, d.src_offset);
  put(port, 32, 32, d.dst_offset);
  put(port, 64, 16, d.bytes);
  put(port, 80, 3, uint64_t(d.dtype));
  for (unsigned k = 0; k < 3; ++k) {
    const isa::DmaDim dim = k < d.dims.size() ? d.dims[k] : isa::DmaDim{};
    put(port, 83 + 16 * k, 16, dim.count);
    put(port, 131 + 32 * k, 32, uint64_t(dim.src_stride));
    put(port, 227 + 32 * k, 32, uint64_t(dim.dst_stride));
  }
}

// Pooling window rows vtpu_vector's parameter RAM holds (WMAX).
constexpr size_t kWindowMax = 16;

// The bundle bits below the padding: what vtpu_core's instruction memory holds.
constexpr unsigned kCoreBundleBits = 464;

// The parameter RAM entry of vtpu_vector (layout in rtl/src/vtpu_vector.sv). The loader
// resolves what the hardware would not compute: one multiplier for every lane, the
// clamp bounds as integers (ceil(min), floor(max)) and as fp32, and the affine scale and
// bias of every lane.
template <class T>
void pack_params(T& port, const isa::VectorParams& v, uint32_t cols) {
  clear(port);
  for (uint32_t n = 0; n < cols; ++n) {
    const size_t i = v.multiplier.size() == 1 ? 0 : n;
    if (i < v.multiplier.size()) put(port, 38 * n, 32, uint32_t(v.multiplier[i]));
    if (i < v.shift.size()) put(port, 38 * n + 32, 6, uint32_t(v.shift[i]));
  }
  const unsigned b = 38 * cols;
  put(port, b, 32, uint32_t(v.input_zp));
  put(port, b + 32, 32, uint32_t(v.output_zp));
  put(port, b + 64, 1, v.double_round);
  auto int48 = [](double x) {
    const double lim = double(int64_t{1} << 46);
    return uint64_t(int64_t(std::max(-lim, std::min(lim, x))));
  };
  put(port, b + 65, 48, int48(std::ceil(v.min)));
  put(port, b + 113, 48, int48(std::floor(v.max)));
  put(port, b + 161, 32, numerics::f64_to_f32(v.min));
  put(port, b + 193, 32, numerics::f64_to_f32(v.max));
  for (uint32_t n = 0; n < cols; ++n) {  // vec.affine: 1 value or one per lane; 1.0 and 0.0 if none
    const auto at = [&](const std::vector<float>& x, float dflt) {
      const float f = x.empty() ? dflt : x.size() == 1 ? x[0] : n < x.size() ? x[n] : dflt;
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      return bits;
    };
    put(port, b + 225 + 64 * n, 32, at(v.scale, 1.0f));
    put(port, b + 257 + 64 * n, 32, at(v.bias, 0.0f));
  }
  const unsigned w = 102 * cols + 225;  // pooling window (unsupported_in_rtl bounds its size)
  put(port, w, 8, v.window.size());
  put(port, w + 8, 32, uint32_t(v.pool_stride));
  for (size_t i = 0; i < v.window.size() && i < kWindowMax; ++i) put(port, unsigned(w + 40 + 32 * i), 32, uint32_t(v.window[i]));
}

const char* error_text(unsigned bits) {
  if (bits & 1) return "the bundle holds an operation the RTL core does not implement";
  if (bits & 2) return "the DMA row generator learned a transfer's done cycle too late (too many rows queued)";
  if (bits & 8) return "the vector unit's table of pending flag increments overflowed";
  return "?";
}

template <class V>
CoreRunResult run_model(const CoreModelParams& p, const config::Config& cfg, const isa::Program& prog,
                        const Inputs& inputs, uint64_t max_cycles) {
  CoreRunResult r;
  if (std::string e = model_matches(p, cfg); !e.empty()) {
    r.error = e;
    return r;
  }
  if (std::string e = unsupported_in_rtl(prog, p); !e.empty()) {
    r.error = e;
    return r;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto ctx = std::make_unique<VerilatedContext>();
  auto m = std::make_unique<V>(ctx.get(), "core");
  Hbm hbm;
  memory::DramTiming dram(cfg.memory, cfg.clock_mhz);
  for (const auto& seg : prog.constants) hbm.write(seg.hbm_addr, seg.data.data(), seg.data.size());
  for (const auto& t : prog.tensors) {
    if (t.role != isa::TensorRole::Input) continue;
    auto it = inputs.find(t.name);
    if (it == inputs.end()) {
      r.error = fmt::format("no data for input tensor '{}'", t.name);
      return r;
    }
    hbm.write(t.hbm_addr, it->second.data(), it->second.size());
  }

  auto tick = [&] {
    m->clk = 0;
    m->eval();
    m->clk = 1;
    m->eval();
  };
  // The instruction windows as the simulator times them (config::imem_fetch_cycles): the
  // core holds the whole program and waits out each window's fetch.
  const uint64_t fetch = config::imem_fetch_cycles(cfg, prog.code.size());
  if (fetch > UINT32_MAX - p.branch_penalty) {
    r.error = fmt::format("an instruction window's fetch takes {} cycles; the RTL core counts them in 32 bits", fetch);
    return r;
  }
  m->imem_window = uint32_t(std::min<uint64_t>(config::imem_window_bundles(cfg), (1u << 24) - 1));
  m->imem_fetch_cycles = uint32_t(fetch);
  m->imem_prefetch = cfg.core.scalar.imem_prefetch;
  m->imem_program = uint32_t(prog.code.size());
  // Load the program while in reset.
  m->rst_n = 0;
  m->mem_resp_done = 0;
  clear(m->mem_resp_rdata);
  m->imem_we = 1;
  for (size_t i = 0; i < prog.code.size(); ++i) {
    clear(m->imem_wdata);
    const auto& w = prog.code[i];
    for (unsigned bit = 0; bit < kCoreBundleBits; bit += 32) {
      const unsigned n = std::min(32u, kCoreBundleBits - bit);
      put(m->imem_wdata, bit, n, isa::get_bits(w, bit, n));
    }
    m->imem_waddr = uint32_t(i);
    tick();
  }
  m->imem_we = 0;
  m->desc_we = 1;
  for (size_t i = 0; i < prog.descriptors.size(); ++i) {
    pack_descriptor(m->desc_wdata, prog.descriptors[i]);
    m->desc_waddr = uint32_t(i);
    tick();
  }
  m->desc_we = 0;
  m->param_we = 1;
  for (size_t i = 0; i < prog.params.size(); ++i) {
    pack_params(m->param_wdata, prog.params[i], p.cols);
    m->param_waddr = uint32_t(i);
    tick();
  }
  m->param_we = 0;
  tick();
  m->rst_n = 1;

  // issued mxu.wload bundles whose shift has not started, per MXU (the field is checked above)
  std::vector<std::deque<uint32_t>> wload_pcs(8);
  uint64_t row_done = 0;           // the memory model's completion of the row being moved
  std::vector<isa::Bundle> bundles = isa::decode_program(prog);
  for (uint64_t cycle = 0;; ++cycle) {
    m->clk = 0;
    m->eval();
    if (m->cycle != uint32_t(cycle)) {
      r.error = fmt::format("internal: the core's cycle counter reads {} at harness cycle {}", m->cycle, cycle);
      return r;
    }
    if (m->mem_req_valid) {
      // A row is one request to the memory model (timed at its first beat); a long row's
      // data moves in beats of at most port_bytes, and a beat of short rows carries
      // mem_req_count of them, mem_req_stride apart in memory, packed in the beat.
      const uint64_t addr = m->mem_req_addr, n = m->mem_req_bytes, rows = m->mem_req_count;
      const uint64_t off = m->mem_req_offset, beat = m->mem_req_beat_bytes, stride = m->mem_req_stride;
      const bool write = m->mem_req_write;
      // Byte i of the beat: its memory address.
      auto at = [&](uint64_t i) { return rows > 1 ? addr + i / n * stride + i % n : addr + off + i; };
      if (m->mem_req_first) {
        row_done = 0;
        for (uint64_t k = 0; k < rows; ++k) {
          try {
            row_done = std::max(row_done, dram.access(addr + k * stride, n, m->mem_req_ready, write));
          } catch (const std::exception& e) {
            r.error = fmt::format("cycle {}: memory request at 0x{:x} ({} bytes): {}", cycle, addr + k * stride, n,
                                  e.what());
            return r;
          }
        }
      }
      m->mem_resp_done = uint32_t(row_done);
      clear(m->mem_resp_rdata);
      if (write) {
        for (uint64_t i = 0; i < beat; ++i) {
          const uint8_t v = byte_of(m->mem_req_wdata, unsigned(i));
          hbm.write(at(i), &v, 1);
          r.writes[at(i)] = {cycle, m->mem_req_pc};
        }
      } else {
        for (uint64_t i = 0; i < beat; ++i) put(m->mem_resp_rdata, unsigned(8 * i), 8, hbm.read(at(i)));
      }
      m->eval();
    }
    if (m->error) {
      r.error = fmt::format("RTL core stopped at cycle {} (bundle {}): {}", cycle, m->issue_pc, error_text(m->error));
      return r;
    }
    if (m->issue) {
      const uint32_t pc = m->issue_pc;
      const isa::Bundle& b = bundles.at(pc);
      const isa::Operation& mm = b.at(isa::SlotId::MxuMatmul);
      if (!mm.is_nop()) {
        const uint64_t rows = uint64_t(isa::field(mm, isa::SlotId::MxuMatmul, "rows"));
        const int64_t mx = isa::field(mm, isa::SlotId::MxuMatmul, "mxu");
        r.events.push_back({unit_event_name("mxu", mx), pc, cycle + p.in_lat, cycle + p.in_lat + rows});
      }
      const isa::Operation& wl = b.at(isa::SlotId::MxuWeight);
      if (!wl.is_nop()) wload_pcs.at(size_t(isa::field(wl, isa::SlotId::MxuWeight, "mxu"))).push_back(pc);
    }
    for (uint32_t mx = 0; mx < p.mxus; ++mx) {
      if (!((uint64_t(m->wload_start) >> mx) & 1)) continue;
      if (wload_pcs[mx].empty()) {
        r.error = fmt::format("cycle {}: a weight shift of MXU {} started with no mxu.wload issued", cycle, mx);
        return r;
      }
      r.events.push_back({unit_event_name("wload", mx), wload_pcs[mx].front(), cycle, cycle + p.shift});
      wload_pcs[mx].pop_front();
    }
    if (m->dma_ev) r.events.push_back({"dma", m->dma_ev_pc, m->dma_ev_t, m->dma_ev_done});
    if (m->vec_ev) r.events.push_back({"vector", m->vec_ev_pc, m->vec_ev_t, cycle + 1});
    if (m->finished) {
      r.total_cycles = cycle;
      break;
    }
    if (cycle >= max_cycles) {
      r.error = fmt::format("RTL core did not finish within {} cycles (bundle {} next to issue)", max_cycles,
                            m->issue_pc);
      return r;
    }
    m->clk = 1;
    m->eval();
  }
  m->final();
  for (const auto& t : prog.tensors) {
    if (t.role != isa::TensorRole::Output) continue;
    std::vector<uint8_t> bytes(t.bytes());
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = hbm.read(t.hbm_addr + i);
    r.outputs[t.name] = std::move(bytes);
  }
  std::sort(r.events.begin(), r.events.end());
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.ok = true;
  return r;
}

}  // namespace

std::vector<CoreModelParams> core_models() {
  std::vector<CoreModelParams> v;
#define VTPU_CORE_PARAMS(name, cls, preset, R, C, in, out, shift, acc, mxus, ub, rb, banks, rp, wp, rl, wl, lp, va, \
                         br, setup, infl, wf, imem, desc, pb, vm, vr, vc, prm, vred, vpool, vtrans)                 \
  v.push_back({#name, preset, R, C, in, out, shift, acc, mxus, ub, rb, banks, rp, wp, rl, wl, lp, va, br, setup, infl, \
               wf, imem, desc, pb, vm, vr, vc, prm, vred, vpool, vtrans});
  VTPU_RTL_FOR_EACH_CORE(VTPU_CORE_PARAMS)
#undef VTPU_CORE_PARAMS
  return v;
}

const CoreModelParams& core_model(const std::string& name) {
  static const std::vector<CoreModelParams> models = core_models();
  for (const auto& p : models)
    if (p.name == name) return p;
  std::string known;
  for (const auto& p : models) known += " " + p.name;
  throw std::invalid_argument(fmt::format("no RTL core model '{}'; built models:{}", name, known));
}

std::string model_matches(const CoreModelParams& p, const config::Config& cfg) {
  const auto& c = cfg.core;
  std::vector<std::pair<std::string, std::pair<uint64_t, uint64_t>>> checks = {
      {"core.mxu.count", {p.mxus, c.mxu.count}},
      {"core.mxu.rows", {p.rows, c.mxu.rows}},
      {"core.mxu.cols", {p.cols, c.mxu.cols}},
      {"core.mxu.input_latency_cycles", {p.in_lat, c.mxu.input_latency_cycles}},
      {"core.mxu.output_latency_cycles", {p.out_lat, c.mxu.output_latency_cycles}},
      {"core.mxu.weight_shift_cycles", {p.shift, c.mxu.weight_shift_cycles}},
      {"core.mxu.weight_fifo_tiles", {p.wf_tiles, c.mxu.weight_fifo_tiles}},
      {"core.accumulators.rows", {p.acc_rows, c.accumulators.rows}},
      {"core.unified_buffer.bytes", {p.ub_bytes, c.unified_buffer.bytes}},
      {"core.unified_buffer.row_bytes", {p.ub_row_bytes, c.unified_buffer.row_bytes}},
      {"core.unified_buffer.banks", {p.ub_banks, c.unified_buffer.banks}},
      {"core.unified_buffer.read_ports", {p.ub_rd_ports, c.unified_buffer.read_ports}},
      {"core.unified_buffer.write_ports", {p.ub_wr_ports, c.unified_buffer.write_ports}},
      {"core.unified_buffer.read_latency_cycles", {p.ub_rd_lat, c.unified_buffer.read_latency_cycles}},
      {"core.unified_buffer.write_latency_cycles", {p.ub_wr_lat, c.unified_buffer.write_latency_cycles}},
      {"ceil(core.mxu.cols / core.vector.lanes)", {p.lane_passes, (c.mxu.cols + c.vector.lanes - 1) / c.vector.lanes}},
      {"core.vector.latency_cycles.alu", {p.vec_lat_alu, c.vector.latency_cycles.alu}},
      {"core.vector.latency_cycles.multiply", {p.vec_lat_mul, c.vector.latency_cycles.multiply}},
      {"core.vector.latency_cycles.rescale", {p.vec_lat_rescale, c.vector.latency_cycles.rescale}},
      {"core.vector.latency_cycles.convert", {p.vec_lat_convert, c.vector.latency_cycles.convert}},
      {"core.vector.latency_cycles.reduce", {p.vec_lat_reduce, c.vector.latency_cycles.reduce}},
      {"core.vector.latency_cycles.pool", {p.vec_lat_pool, c.vector.latency_cycles.pool}},
      {"core.vector.latency_cycles.transcendental", {p.vec_lat_trans, c.vector.latency_cycles.transcendental}},
      {"core.scalar.branch_penalty_cycles", {p.branch_penalty, c.scalar.branch_penalty_cycles}},
      {"core.dma.setup_cycles", {p.dma_setup, c.dma.setup_cycles}},
      {"core.dma.max_in_flight", {p.dma_inflight, c.dma.max_in_flight}},
      {"mxu.dtypes has int8 and bf16",
       {1, config::supports(cfg, config::DType::kInt8) && config::supports(cfg, config::DType::kBf16)}},
  };
  for (const auto& [key, v] : checks)
    if (v.first != v.second)
      return fmt::format("RTL core model {} was built with {} = {}, but config '{}' has {}; add a model for this "
                         "config to VTPU_RTL_CORE_MODELS in rtl/CMakeLists.txt",
                         p.name, key, v.first, cfg.name, v.second);
  return {};
}

CoreRunResult run_rtl(const std::string& model, const config::Config& cfg, const isa::Program& prog,
                      const Inputs& inputs, uint64_t max_cycles) {
#define VTPU_CORE_RUN(name, cls, ...) \
  if (model == #name) return run_model<cls>(core_model(model), cfg, prog, inputs, max_cycles);
  VTPU_RTL_FOR_EACH_CORE(VTPU_CORE_RUN)
#undef VTPU_CORE_RUN
  core_model(model);  // throws, naming the models
  return {};
}

}  // namespace vtpu::rtl
