#include "evaluate.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
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

namespace {

// What a compile that threw says about its point.
CompileOutcome outcome_of(const std::exception_ptr& error) {
  CompileOutcome out;
  try {
    std::rethrow_exception(error);
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
  return out;
}

void write_program(const compiler::CompileResult& r, const fs::path& file) {
  nlohmann::json macs = nlohmann::json::array();
  for (const compiler::LayerBound& b : r.bounds)
    if (b.macs) macs.push_back({b.layer, b.macs});
  write_atomically(useful_macs_file(file), macs.dump());  // before the program that implies it
  std::vector<uint8_t> bytes = isa::serialize(r.program);
  write_atomically(file, std::string(bytes.begin(), bytes.end()));
}

}  // namespace

std::string to_json(const std::vector<CompileOutcome>& c) {
  nlohmann::json a = nlohmann::json::array();
  for (const CompileOutcome& o : c) a.push_back(nlohmann::json::parse(to_json(o)));
  return a.dump();
}

std::vector<CompileOutcome> compile_outcomes_from_json(const std::string& json, size_t count) {
  auto j = nlohmann::json::parse(json, nullptr, false);
  std::vector<CompileOutcome> out;
  if (j.is_array() && j.size() == count)
    for (const auto& o : j) out.push_back(compile_outcome_from_json(o.dump()));
  else
    out.assign(count, compile_outcome_from_json(j.is_object() ? json : std::string()));
  return out;
}

std::vector<CompileOutcome> compile_task(const CompileTask& t) {
  std::vector<CompileOutcome> out(t.programs.size());
  double t0 = cpu_now();
  compiler::CompileOptions o;
  std::unique_ptr<compiler::ModelCompiler> model;
  try {
    o.precision = t.dtype == "int8" ? compiler::Precision::Int8 : compiler::Precision::Bf16;
    o.batch = t.batch;
    o.seed = t.seed;
    if (t.scales) o.calibration_scales = *t.scales;
    else if (!t.calibrate.empty() && o.precision == compiler::Precision::Int8)
      o.calibration = runtime::calibration_from_files(t.model, t.calibrate, t.batch, runtime::image_norm_from_name(t.image_norm),
                                                      o.precision);
    model = std::make_unique<compiler::ModelCompiler>(t.model, o);
  } catch (...) {
    CompileOutcome failed = outcome_of(std::current_exception());
    failed.seconds = (cpu_now() - t0) / double(std::max<size_t>(1, out.size()));
    out.assign(out.size(), failed);
    return out;
  }
  // Each program's figure carries an equal share of the import and lowering.
  const double front = (cpu_now() - t0) / double(std::max<size_t>(1, out.size()));
  bool scales_written = t.scales || t.scales_file.empty() || o.precision != compiler::Precision::Int8;
  for (size_t i = 0; i < t.programs.size(); ++i) {
    double t1 = cpu_now();
    try {
      compiler::CompileResult r = model->compile(t.programs[i].cfg);
      write_program(r, t.programs[i].file);
      if (!scales_written) write_scales(t.scales_file, r.calibration_scales), scales_written = true;
      out[i].status = "ok";
    } catch (...) {
      out[i] = outcome_of(std::current_exception());
    }
    out[i].seconds = front + cpu_now() - t1;
  }
  return out;
}

std::filesystem::path useful_macs_file(const std::filesystem::path& program) {
  return std::filesystem::path(program.string() + ".macs.json");
}

std::vector<compiler::LayerBound> read_useful_macs(const std::filesystem::path& program) {
  std::vector<compiler::LayerBound> out;
  const fs::path f = useful_macs_file(program);
  if (!fs::exists(f)) return out;
  nlohmann::json j = nlohmann::json::parse(read_file(f), nullptr, false);
  if (!j.is_array()) throw UserError(fmt::format("{}: not a list of [layer, useful MACs]; delete it and the program "
                                                 "beside it to compile again", f.string()));
  for (const auto& e : j) {
    compiler::LayerBound b;
    b.layer = e.at(0).get<std::string>(), b.macs = e.at(1).get<uint64_t>();
    out.push_back(std::move(b));
  }
  return out;
}

void simulate_task(const isa::Program& program, const config::Config& cfg, bool timing_only, uint64_t seed, PointResult& r,
                   const std::vector<compiler::LayerBound>& macs) {
  std::map<std::string, std::vector<uint8_t>> inputs;
  sim::fill_missing_inputs(program, seed, inputs);
  sim::SimOptions so;
  so.timing_only = timing_only;
  double t0 = cpu_now();
  sim::RunResult run = sim::simulate(cfg, program, inputs, so);
  r.simulate_cpu_s = cpu_now() - t0;
  if (!macs.empty()) runtime::apply_useful_macs(run.stats, macs);
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
