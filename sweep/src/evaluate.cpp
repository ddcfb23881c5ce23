#include "evaluate.h"

#include <fmt/format.h>
#include <unistd.h>

#include <ctime>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "vtpu/compiler/compiler.h"
#include "vtpu/runtime/runtime.h"
#include "vtpu/sim/simulator.h"

namespace vtpu::sweep::detail {
namespace fs = std::filesystem;

namespace {
double cpu_now() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}
}  // namespace

std::string to_json(const CompileOutcome& c) {
  return nlohmann::json{{"status", c.status},         {"message", c.message},     {"dnf_buffer", c.dnf_buffer},
                        {"dnf_needed", c.dnf_needed}, {"dnf_available", c.dnf_available}, {"seconds", c.seconds}}
      .dump();
}

CompileOutcome compile_outcome_from_json(const std::string& json) {
  auto j = nlohmann::json::parse(json, nullptr, false);
  CompileOutcome c;
  if (j.is_discarded() || !j.contains("status")) {
    c.status = "error";
    c.message = json.empty() ? "the compile worker produced no answer" : json;
    return c;
  }
  c.status = j["status"], c.message = j["message"], c.dnf_buffer = j["dnf_buffer"];
  c.dnf_needed = j["dnf_needed"], c.dnf_available = j["dnf_available"], c.seconds = j["seconds"];
  return c;
}

void write_atomically(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  fs::path tmp = path;
  tmp += fmt::format(".tmp{}", getpid());
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) throw UserError(fmt::format("{}: cannot write (is the sweep's cache directory writable?)", tmp.string()));
    f.write(bytes.data(), std::streamsize(bytes.size()));
    if (!f) throw UserError(fmt::format("{}: write failed (disk full?)", tmp.string()));
  }
  fs::rename(tmp, path);
}

std::string read_file(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UserError(fmt::format("{}: cannot read", path.string()));
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void write_scales(const fs::path& path, const std::vector<float>& scales) {
  std::string b(scales.size() * sizeof(float), '\0');
  std::memcpy(b.data(), scales.data(), b.size());
  write_atomically(path, b);
}

std::vector<float> read_scales(const fs::path& path) {
  std::string b = read_file(path);
  std::vector<float> v(b.size() / sizeof(float));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(float));
  return v;
}

void stamp(isa::Program& p, const config::Config& cfg) {
  p.config_name = cfg.name;
  p.config_fingerprint = config::fingerprint(cfg);
}

CompileOutcome compile_task(const CompileTask& t, const config::Config& cfg) {
  CompileOutcome out;
  double t0 = cpu_now();
  try {
    compiler::CompileOptions o;
    o.precision = t.dtype == "int8" ? compiler::Precision::Int8 : compiler::Precision::Bf16;
    o.batch = t.batch;
    o.seed = t.seed;
    if (t.scales) o.calibration_scales = *t.scales;
    else if (!t.calibrate.empty() && o.precision == compiler::Precision::Int8)
      o.calibration = runtime::calibration_from_files(t.model, t.calibrate, t.batch, runtime::image_norm_from_name(t.image_norm),
                                                      o.precision);
    compiler::CompileResult r = compiler::compile_onnx(t.model, cfg, o);
    std::vector<uint8_t> bytes = isa::serialize(r.program);
    write_atomically(t.program_file, std::string(bytes.begin(), bytes.end()));
    if (!t.scales && !t.scales_file.empty() && o.precision == compiler::Precision::Int8)
      write_scales(t.scales_file, r.calibration_scales);
    out.status = "ok";
  } catch (const compiler::DoesNotFitError& e) {
    out.status = "does_not_fit", out.message = e.what(), out.dnf_buffer = e.key();
    out.dnf_needed = e.needed(), out.dnf_available = e.available();
  } catch (const config::ConfigError& e) {
    out.status = "unsupported", out.message = e.what();  // e.g. a dtype the MXU lacks
  } catch (const compiler::CompileError& e) {
    out.status = "unsupported", out.message = e.what();
  } catch (const std::exception& e) {
    out.status = "error", out.message = e.what();
  }
  out.seconds = cpu_now() - t0;
  return out;
}

void simulate_task(const isa::Program& program, const config::Config& cfg, bool timing_only, uint64_t seed, PointResult& r) {
  std::map<std::string, std::vector<uint8_t>> inputs;
  sim::fill_missing_inputs(program, seed, inputs);
  sim::SimOptions so;
  so.timing_only = timing_only;
  double t0 = cpu_now();
  sim::RunResult run = sim::simulate(cfg, program, inputs, so);
  r.simulate_cpu_s = cpu_now() - t0;
  const sim::Stats& s = run.stats;
  int64_t batch = 1;
  for (const auto& t : program.tensors)
    if (t.role == isa::TensorRole::Input && !t.shape.empty()) batch = std::max<int64_t>(batch, t.shape[0]);
  double secs = s.seconds(), joules = s.total.energy_total_pj() * 1e-12;
  r.batch = batch;
  r.cycles = s.total_cycles;
  r.clock_mhz = s.clock_mhz;
  r.latency_s = secs;
  r.macs = s.total.macs();
  r.hbm_bytes = s.total.hbm_read_bytes + s.total.hbm_write_bytes;
  r.throughput = secs > 0 ? double(batch) / secs : 0;
  r.tops = secs > 0 ? 2.0 * double(r.macs) / secs / 1e12 : 0;
  r.peak_tops = 2.0 * s.mxu_count * s.mxu_rows * s.mxu_cols * s.clock_mhz * 1e6 / 1e12;
  r.mxu_utilization = s.mxu_overall_utilization();
  r.energy_per_inference_j = joules / double(batch);
  r.average_power_w = secs > 0 ? joules / secs : 0;
  std::map<std::string, double> by;
  double all = 0;
  for (const runtime::LayerRow& l : runtime::layer_rows(s, {})) {
    r.layers.push_back({l.layer, l.cycles, l.bound_by});
    by[l.bound_by] += double(l.cycles);
    all += double(l.cycles);
  }
  r.bound_compute = all > 0 ? by["compute"] / all : 0;
  r.bound_memory = all > 0 ? by["memory"] / all : 0;
  r.bound_vector = all > 0 ? by["vector"] / all : 0;
  r.status = "ok";
}

}  // namespace vtpu::sweep::detail
