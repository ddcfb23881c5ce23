// Running a collective on the simulator: inputs, the programs, the results checked against
// what the collective means (computed here from the inputs, not from the simulator).
#include <fmt/format.h>

#include <cstring>

#include "vtpu/collectives/collectives.h"

#include <sys/resource.h>

#include "vtpu/support/child_process.h"
#include "vtpu/support/error.h"

namespace vtpu::collectives {

namespace {

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Element i of chip c's input: small integers, so sums in any order are exact in the dtype
// (bf16 keeps integers up to 256 exact: the range shrinks with the chip count).
int64_t value(const Plan& p, uint32_t chip, uint64_t i, uint64_t seed) {
  uint64_t r = mix(seed * 0x1000003 ^ (uint64_t(chip) << 40) ^ i);
  switch (p.spec.dtype) {
    case isa::Dtype::Int32: return int64_t(r % 2001) - 1000;
    case isa::Dtype::Bf16: {
      int64_t k = std::max<int64_t>(1, 128 / int64_t(p.chips));
      return int64_t(r % uint64_t(2 * k)) - k;
    }
    default: return int64_t(r % 16) - 8;
  }
}

void put(const Plan& p, uint8_t* at, int64_t v) {
  switch (p.spec.dtype) {
    case isa::Dtype::Int32: {
      int32_t x = int32_t(v);
      std::memcpy(at, &x, 4);
      break;
    }
    case isa::Dtype::Bf16: {
      float f = float(v);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      uint16_t h = uint16_t(u >> 16);  // exact for these integers
      std::memcpy(at, &h, 2);
      break;
    }
    default: {
      float f = float(v);
      std::memcpy(at, &f, 4);
    }
  }
}

std::string show(const Plan& p, const uint8_t* at) {
  switch (p.spec.dtype) {
    case isa::Dtype::Int32: {
      int32_t x;
      std::memcpy(&x, at, 4);
      return std::to_string(x);
    }
    case isa::Dtype::Bf16: {
      uint16_t h;
      std::memcpy(&h, at, 2);
      uint32_t u = uint32_t(h) << 16;
      float f;
      std::memcpy(&f, &u, 4);
      return fmt::format("{}", f);
    }
    default: {
      float f;
      std::memcpy(&f, at, 4);
      return fmt::format("{}", f);
    }
  }
}

// The elementwise sum over every chip's input, as the dtype holds it (int32 wraps).
std::vector<uint8_t> reduced(const Plan& p, uint64_t seed) {
  const unsigned e = isa::dtype_bytes(p.spec.dtype);
  const uint64_t n = p.spec.bytes / e;
  std::vector<int64_t> sum(n, 0);
  for (uint32_t c = 0; c < p.chips; ++c)
    for (uint64_t i = 0; i < n; ++i) sum[i] += value(p, c, i, seed);
  std::vector<uint8_t> v(p.spec.bytes);
  for (uint64_t i = 0; i < n; ++i)
    put(p, v.data() + i * e, p.spec.dtype == isa::Dtype::Int32 ? int64_t(int32_t(uint32_t(uint64_t(sum[i])))) : sum[i]);
  return v;
}

// What chip `chip` must hold, given the sums of a reduction (empty for the other kinds).
std::vector<uint8_t> expected(const Plan& p, uint32_t chip, uint64_t seed, const std::vector<uint8_t>& sums) {
  const unsigned e = isa::dtype_bytes(p.spec.dtype);
  const uint64_t S = p.spec.bytes, B = S / p.chips;
  std::vector<uint8_t> v;
  switch (p.spec.kind) {
    case Kind::AllReduce: return sums;
    case Kind::ReduceScatter: return std::vector<uint8_t>(sums.begin() + long(chip * B), sums.begin() + long((chip + 1) * B));
    case Kind::AllGather:  // element i of the whole buffer came from chip i / (B / e)
      v.resize(S);
      for (uint64_t i = 0; i < S / e; ++i) put(p, v.data() + i * e, value(p, uint32_t(i / (B / e)), i, seed));
      return v;
    case Kind::AllToAll:  // block j here is block `chip` of chip j
      v.resize(S);
      for (uint64_t i = 0; i < S / e; ++i) {
        uint64_t j = i / (B / e), k = i % (B / e);
        put(p, v.data() + i * e, value(p, uint32_t(j), chip * B / e + k, seed));
      }
      return v;
  }
  return v;
}

bool reduction(Kind k) { return k == Kind::AllReduce || k == Kind::ReduceScatter; }

}  // namespace

std::vector<uint8_t> input_of(const Plan& p, uint32_t chip, uint64_t seed) {
  const unsigned e = isa::dtype_bytes(p.spec.dtype);
  const uint64_t B = p.spec.bytes / p.chips;
  uint64_t bytes = p.spec.kind == Kind::AllGather ? B : p.spec.bytes;
  uint64_t first = p.spec.kind == Kind::AllGather ? chip * B / e : 0;  // element numbers in the whole buffer
  std::vector<uint8_t> v(bytes);
  for (uint64_t i = 0; i < bytes / e; ++i) put(p, v.data() + i * e, value(p, chip, first + i, seed));
  return v;
}

std::vector<uint8_t> expected_output(const Plan& p, uint32_t chip, uint64_t seed) {
  return expected(p, chip, seed, reduction(p.spec.kind) ? reduced(p, seed) : std::vector<uint8_t>{});
}

Outcome run(const config::Config& cfg, const Spec& spec, const RunOptions& o) {
  Outcome out;
  out.plan = plan(cfg, spec);
  out.bound = alpha_beta(cfg, out.plan);
  const Plan& p = out.plan;
  EmitOptions eo;
  eo.tensors = o.data && !o.symmetric;
  std::vector<sim::ChipRun> runs(o.symmetric ? 1 : p.chips);
  for (uint32_t c = 0; c < runs.size(); ++c) {
    runs[c].program = program(cfg, p, c, eo);
    if (eo.tensors) runs[c].inputs["x"] = input_of(p, c, o.seed);
  }
  sim::SystemOptions so;
  so.symmetric = o.symmetric;
  so.sim.record_trace = o.record_trace;
  out.system = sim::simulate_system(cfg, runs, so);
  out.seconds = double(out.system.total_cycles) / (cfg.clock_mhz * 1e6);
  out.algorithm_bandwidth = out.seconds > 0 ? double(spec.bytes) / out.seconds : 0;
  out.bus_bandwidth = bus_bandwidth(spec.kind, p.chips, spec.bytes, out.seconds);
  if (eo.tensors) {
    out.checked = true;
    const unsigned e = isa::dtype_bytes(spec.dtype);
    const std::vector<uint8_t> sums = reduction(spec.kind) ? reduced(p, o.seed) : std::vector<uint8_t>{};
    for (uint32_t c = 0; c < p.chips && out.mismatch.empty(); ++c) {
      const std::vector<uint8_t>& got = out.system.chips[c].outputs.at("y");
      std::vector<uint8_t> want = expected(p, c, o.seed, sums);
      for (uint64_t i = 0; i < want.size(); i += e)
        if (std::memcmp(got.data() + i, want.data() + i, e) != 0) {
          out.mismatch = fmt::format("chip {}: output element {} is {} but the {} of the inputs gives {}", c, i / e,
                                     show(p, got.data() + i), kind_name(spec.kind), show(p, want.data() + i));
          break;
        }
    }
  }
  return out;
}

Summary run_isolated(const config::Config& cfg, const Spec& spec, const RunOptions& o) {
  struct Pod {  // crosses the pipe as bytes
    double seconds, beta, alpha, busbw, cpu, rss;
    uint64_t cycles, simulated;
    bool checked;
    char mismatch[512], error[512];
  };
  auto bytes = [](const Pod& p) { return std::string(reinterpret_cast<const char*>(&p), sizeof p); };
  std::string got = vtpu::run_in_child(
      [&] {
        Pod p{};
        Outcome out = run(cfg, spec, o);
        p.seconds = out.seconds, p.beta = out.bound.beta_s, p.alpha = out.bound.alpha_s, p.busbw = out.bus_bandwidth;
        p.cycles = out.system.total_cycles, p.simulated = out.system.chips.size(), p.checked = out.checked;
        std::strncpy(p.mismatch, out.mismatch.c_str(), sizeof p.mismatch - 1);
        rusage ru{};
        getrusage(RUSAGE_SELF, &ru);
        p.cpu = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
        p.rss = double(ru.ru_maxrss) / 1024;
        return bytes(p);
      },
      [&](const std::exception& e) {
        Pod p{};
        std::strncpy(p.error, e.what(), sizeof p.error - 1);
        return bytes(p);
      },
      "");
  Summary s;
  Pod p{};
  if (got.size() != sizeof p) {
    s.error = "the simulation's process crashed";
    return s;
  }
  std::memcpy(&p, got.data(), sizeof p);
  s.seconds = p.seconds, s.beta_s = p.beta, s.alpha_s = p.alpha, s.bus_bandwidth = p.busbw;
  s.cycles = p.cycles, s.simulated_chips = p.simulated, s.checked = p.checked;
  s.cpu_s = p.cpu, s.peak_rss_mib = p.rss;
  s.mismatch = p.mismatch, s.error = p.error;
  return s;
}

}  // namespace vtpu::collectives
