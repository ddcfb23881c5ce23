// The coordinator of a sweep: prepares each point (its config, key, area, constraints), then
// schedules compile and simulate tasks on the worker pool so that a program is compiled once
// per compiler fingerprint and INT8 calibration once per model, and writes each result as
// it arrives.
#include "vtpu/sweep/runner.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "evaluate.h"
#include "pool.h"
#include "vtpu/compiler/compiler.h"
#include "vtpu/models/zoo.h"
#include "vtpu/sweep/area.h"
#include "vtpu/sweep/database.h"
#include "vtpu/sweep/points.h"

#ifndef VTPU_VERSION
#define VTPU_VERSION "dev"
#endif

namespace vtpu::sweep {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

uint64_t fnv1a(std::string_view s, uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

std::string hex(uint64_t v) { return fmt::format("{:016x}", v); }

uint64_t file_hash(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw UserError(fmt::format("{}: cannot read", p.string()));
  uint64_t h = 0xcbf29ce484222325ull;
  std::vector<char> buf(1 << 20);
  while (f) {
    f.read(buf.data(), std::streamsize(buf.size()));
    h = fnv1a(std::string_view(buf.data(), size_t(f.gcount())), h);
  }
  return h;
}

// This vtpu build (the running binary's bytes): a rebuilt binary may compile differently,
// so it keys the program cache.
std::string build_id() {
  std::string id = VTPU_VERSION;
  try {
    id += "-" + hex(file_hash("/proc/self/exe"));
  } catch (const UserError&) {
    id += "-unknown";
  }
  return id;
}

double cpu_seconds_self() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

struct ModelFile {
  fs::path path;
  std::string hash;        // content and calibration data
  std::string image_norm;  // how calibration images become inputs
  std::map<int64_t, int64_t> batch;  // as the sweep gives it -> as run (0: the model's own)
};

// One point, ready to run or already decided.
struct Prepared {
  Point point;
  PointResult row;
  std::optional<config::Config> cfg;
  std::string program_key, calibration_key;  // empty when decided
  std::string model_key;  // the programs one worker may compile together (model, dtype, batch, seed)
  bool decided = false;
};

// What the coordinator knows about one program (compiler fingerprint) or calibration.
struct ProgramState {
  enum State { kUnknown, kCompiling, kReady, kFailed } state = kUnknown;
  std::vector<size_t> pending;  // Prepared indices not yet launched
  size_t in_flight = 0;
  std::shared_ptr<isa::Program> loaded;  // not const: a simulation's worker stamps its own copy
  std::shared_ptr<const std::vector<compiler::LayerBound>> useful_macs;  // beside the program (useful_macs_file)
  detail::CompileOutcome outcome;
  bool from_cache = false;
  bool calibrates = false;  // its compile produces the calibration
};
struct CalibrationState {
  enum State { kMissing, kProducing, kReady } state = kMissing;
  std::vector<float> scales;
};

class Coordinator {
 public:
  Coordinator(const SweepSpec& s, const RunOptions& o) : s_(s), o_(o), db_(o.db) {
    start_ = Clock::now();
    cpu0_ = cpu_seconds_self();
    build_ = build_id();
    db_.set_meta("sweep_name", s.name);
    db_.set_meta("sweep_file", s.file.string());
    resolve_models();
  }

  RunSummary run() {
    std::vector<Prepared> all;
    std::set<uint64_t> seen;
    bool sharded = o_.shard && o_.shard->count > 1;
    for (int round = 0;; ++round) {
      std::vector<Point> points;
      if (round == 0) {
        points = initial_points(s_);
      } else {
        std::vector<PointResult> done;
        std::map<std::string, PointResult> rows;
        for (PointResult& r : db_.all()) rows[r.key] = std::move(r);
        for (const Prepared& p : all)
          if (auto it = rows.find(p.row.key); it != rows.end()) done.push_back(it->second), done.back().index = int64_t(p.point.index);
        points = refine(s_, done, round);
      }
      // Grid points giving one config (an axis value equal to the base's, axes sharing keys
      // under one_at_a_time) are one point: the first stands for them.
      std::vector<Prepared> batch;
      for (Point& p : points) {
        if (!seen.insert(p.index).second) continue;
        p.round = round;
        Prepared x = prepare(p);
        if (keys_.insert(x.row.key).second) batch.push_back(std::move(x));
      }
      order_and_shard(batch);
      summary_.points += batch.size();
      execute(batch);
      for (Prepared& p : batch) all.push_back(std::move(p));
      summary_.rounds = round + 1;
      if (s_.search.kind != SearchKind::kPareto || round >= s_.search.rounds || points.empty() || sharded) break;
    }
    summary_.wall_s = std::chrono::duration<double>(Clock::now() - start_).count();
    summary_.cpu_s = cpu_seconds_self() - cpu0_ + pool_.child_cpu_seconds();
    return summary_;
  }

 private:
  void resolve_models() {
    fs::path dir = o_.model_dir.empty() ? models::default_dir() : o_.model_dir;
    for (const ModelSpec& m : s_.models) {
      ModelFile f;
      f.path = m.zoo ? models::materialize(m.name, dir) : m.path;
      f.image_norm = m.zoo ? models::find(m.name)->image_norm : "unit";
      uint64_t h = file_hash(f.path);
      for (const auto& [input, files] : m.calibrate) {
        h = fnv1a(input, h);
        size_t at = 0;
        while (at <= files.size()) {
          size_t comma = std::min(files.find(',', at), files.size());
          h = fnv1a(hex(file_hash(files.substr(at, comma - at))), h);
          at = comma + 1;
        }
      }
      f.hash = hex(h);
      for (int64_t b : m.batches) {
        if (b) {
          f.batch[b] = b;
          continue;
        }
        std::vector<compiler::ModelInput> in = compiler::model_inputs(f.path);
        f.batch[0] = in.empty() || in[0].shape.empty() ? 1 : in[0].shape[0];
      }
      models_.push_back(f);
    }
  }

  Prepared prepare(const Point& p) {
    Prepared x;
    x.point = p;
    PointResult& r = x.row;
    const ModelSpec& m = s_.models[p.model];
    r.index = int64_t(p.index), r.round = p.round, r.model = m.name, r.dtype = s_.dtypes[p.dtype];
    r.batch = models_[p.model].batch.at(p.batch);
    r.params = point_params(s_, p);
    r.tool = VTPU_VERSION;
    std::string run = fmt::format("{}|{}|{}|{}|{}", models_[p.model].hash, r.dtype, r.batch, s_.seed, s_.timing_only ? "timing" : "full");
    try {
      x.cfg = apply_sets(s_.base_yaml, point_sets(s_, p), fmt::format("{} (grid point {})", s_.name, p.index));
    } catch (const config::ConfigError& e) {
      r.status = "invalid", r.message = e.what(), x.decided = true;
      r.key = hex(fnv1a("v1|invalid|" + run + "|" + r.params));
      return x;
    }
    const config::Config& c = *x.cfg;
    r.config_fingerprint = hex(config::fingerprint(c));
    r.key = hex(fnv1a("v1|" + run + "|" + r.config_fingerprint));
    r.area_mm2 = estimate_area(c).total_mm2;
    r.hbm_gbytes_per_s = c.memory.bandwidth_gbytes_per_s;
    r.onchip_bytes = onchip_bytes(c);
    std::vector<std::string> v;
    if (s_.constraints.area_mm2 && r.area_mm2 > *s_.constraints.area_mm2)
      v.push_back(fmt::format("area_mm2 {:.1f} > {}", r.area_mm2, *s_.constraints.area_mm2));
    if (s_.constraints.onchip_bytes && r.onchip_bytes > *s_.constraints.onchip_bytes)
      v.push_back(fmt::format("onchip_bytes {} > {}", r.onchip_bytes, *s_.constraints.onchip_bytes));
    if (s_.constraints.memory_bytes && c.memory.bytes > *s_.constraints.memory_bytes)
      v.push_back(fmt::format("memory_bytes {} > {}", c.memory.bytes, *s_.constraints.memory_bytes));
    if (!v.empty()) {
      r.status = "excluded", r.feasible = false, x.decided = true;
      for (const std::string& s : v) r.violations += (r.violations.empty() ? "" : "; ") + s;
      r.message = "not run: " + r.violations;
      return x;
    }
    config::DType want = r.dtype == "int8" ? config::DType::kInt8 : config::DType::kBf16;
    if (!config::supports(c, want)) {
      r.status = "unsupported", x.decided = true;
      r.message = fmt::format("the config's MXU does not multiply {} (core.mxu.dtypes)", r.dtype);
      return x;
    }
    x.calibration_key = r.dtype == "int8" ? hex(fnv1a(fmt::format("cal|{}|{}|{}|{}", models_[p.model].hash, r.batch, s_.seed, build_))) : "";
    x.model_key = fmt::format("{}|{}|{}|{}", models_[p.model].hash, r.dtype, r.batch, s_.seed);
    x.program_key = hex(fnv1a(fmt::format("prog|{}|{}", x.model_key, hex(compiler::config_fingerprint(c))) + "|" + build_));
    return x;
  }

  // Points sharing a program run together; a shard takes a contiguous share of that order,
  // so each shard compiles few programs.
  void order_and_shard(std::vector<Prepared>& batch) {
    std::stable_sort(batch.begin(), batch.end(), [](const Prepared& a, const Prepared& b) {
      return std::tie(a.program_key, a.point.index) < std::tie(b.program_key, b.point.index);
    });
    if (!o_.shard) return;
    size_t n = batch.size(), i = o_.shard->index, k = o_.shard->count;
    std::vector<Prepared> mine(std::make_move_iterator(batch.begin() + long(n * i / k)),
                               std::make_move_iterator(batch.begin() + long(n * (i + 1) / k)));
    batch = std::move(mine);
  }

  fs::path program_file(const std::string& key) const { return o_.cache_dir / "programs" / (key + ".vtpu"); }
  fs::path outcome_file(const std::string& key) const { return o_.cache_dir / "programs" / (key + ".fail.json"); }
  fs::path scales_file(const std::string& key) const { return o_.cache_dir / "calibration" / (key + ".f32"); }

  void execute(std::vector<Prepared>& batch) {
    std::map<std::string, std::string> recorded = db_.statuses();
    batch_ = &batch;
    progress_ = {};
    progress_.round = summary_.rounds;
    for (size_t i = 0; i < batch.size(); ++i) {
      Prepared& p = batch[i];
      auto it = recorded.find(p.row.key);
      if (it != recorded.end() && !(o_.retry_errors && it->second == "error")) {
        ++summary_.already_done;
        continue;
      }
      ++progress_.total;
      if (p.decided) {
        record(p.row);
        continue;
      }
      ProgramState& ps = programs_[p.program_key];
      if (ps.pending.empty() && ps.in_flight == 0) order_.push_back(p.program_key);
      ps.pending.push_back(i);
      if (ps.state == ProgramState::kUnknown) {
        if (fs::exists(program_file(p.program_key))) ps.state = ProgramState::kReady, ps.from_cache = true;
        else if (fs::exists(outcome_file(p.program_key))) {
          ps.state = ProgramState::kFailed, ps.from_cache = true;
          ps.outcome = detail::compile_outcome_from_json(detail::read_file(outcome_file(p.program_key)));
        }
      }
      if (!p.calibration_key.empty() && !calibrations_.count(p.calibration_key) && fs::exists(scales_file(p.calibration_key))) {
        calibrations_[p.calibration_key] = {CalibrationState::kReady, detail::read_scales(scales_file(p.calibration_key))};
        ++summary_.calibration_reuses;
      }
    }
    report();
    while (true) {
      settle_failed();
      while (pool_.running() < size_t(std::max(1, o_.jobs)) && launch_one()) {
      }
      if (pool_.running() == 0) break;
      for (detail::ProcessPool::Done& d : pool_.wait(500)) finish(d);
      report();
    }
    for (auto& [k, ps] : programs_)
      if (!ps.pending.empty()) throw InternalError(fmt::format("sweep: {} points of program {} were never run", ps.pending.size(), k));
    order_.clear();
    report();
  }

  // Points of programs that cannot be built take their compile's outcome.
  void settle_failed() {
    for (auto& [key, ps] : programs_) {
      if (ps.state != ProgramState::kFailed) continue;
      for (size_t i : ps.pending) {
        PointResult r = (*batch_)[i].row;
        r.status = ps.outcome.status, r.message = ps.outcome.message;
        r.dnf_buffer = ps.outcome.dnf_buffer, r.dnf_needed = ps.outcome.dnf_needed, r.dnf_available = ps.outcome.dnf_available;
        r.dnf_short = r.dnf_needed > r.dnf_available ? r.dnf_needed - r.dnf_available : 0;
        r.program_cached = ps.from_cache;
        r.compile_cpu_s = ps.from_cache ? 0 : ps.outcome.seconds;
        record(r);
      }
      ps.pending.clear();
    }
  }

  // Starts the most useful task: one compile ahead while others simulate, else the
  // earliest runnable simulation, else any compile that can start.
  bool launch_one() {
    size_t compiling = 0;
    for (const auto& [id, t] : tasks_) compiling += t.compile;
    auto try_compile = [&](const std::string& key) {
      ProgramState& ps = programs_[key];
      if (ps.state != ProgramState::kUnknown || ps.pending.empty()) return false;
      const Prepared& p = (*batch_)[ps.pending.front()];
      CalibrationState* cal = p.calibration_key.empty() ? nullptr : &calibrations_[p.calibration_key];
      if (cal && cal->state == CalibrationState::kProducing) return false;
      launch_compile(group_of(key, cal), cal);
      return true;
    };
    if (compiling == 0 || compiling * 2 < size_t(o_.jobs))
      for (const std::string& key : order_)
        if (programs_[key].state == ProgramState::kUnknown && try_compile(key)) return true;
    for (const std::string& key : order_) {
      ProgramState& ps = programs_[key];
      if (ps.state == ProgramState::kReady && !ps.pending.empty()) {
        size_t i = ps.pending.front();
        ps.pending.erase(ps.pending.begin());
        launch_simulation(key, ps, i);
        return true;
      }
    }
    for (const std::string& key : order_)
      if (try_compile(key)) return true;
    return false;
  }

  // The programs one compile task builds, `key` first: programs of the same model not yet
  // compiled, in the order their points come, so the model is imported and lowered once for
  // several (docs/sweeps.md, "Making a point cheap"). A task that calibrates builds one program, so that
  // the other workers can start on the model once it is done; the rest are shared out among
  // the workers, at most kGroup to a task so that simulations start early.
  std::vector<std::string> group_of(const std::string& key, const CalibrationState* cal) {
    static constexpr size_t kGroup = 8;
    std::vector<std::string> group{key};
    if (cal && cal->state == CalibrationState::kMissing) return group;
    const std::string& model = (*batch_)[programs_[key].pending.front()].model_key;
    std::vector<std::string> same;
    for (const std::string& k : order_) {
      const ProgramState& ps = programs_[k];
      if (k != key && ps.state == ProgramState::kUnknown && !ps.pending.empty() && (*batch_)[ps.pending.front()].model_key == model)
        same.push_back(k);
    }
    size_t share = (same.size() + 1 + size_t(std::max(1, o_.jobs)) - 1) / size_t(std::max(1, o_.jobs));
    for (size_t i = 0; i < same.size() && group.size() < std::min(kGroup, share); ++i) group.push_back(same[i]);
    return group;
  }

  void launch_compile(const std::vector<std::string>& keys, CalibrationState* cal) {
    const Prepared& p = (*batch_)[programs_[keys.front()].pending.front()];
    bool calibrates = cal && cal->state == CalibrationState::kMissing;
    if (calibrates) cal->state = CalibrationState::kProducing;
    detail::CompileTask t;
    const ModelSpec& m = s_.models[p.point.model];
    t.model = models_[p.point.model].path;
    t.dtype = p.row.dtype;
    t.batch = p.row.batch;
    t.seed = s_.seed;
    t.calibrate = m.calibrate;
    t.image_norm = models_[p.point.model].image_norm;
    t.scales = cal && cal->state == CalibrationState::kReady ? &cal->scales : nullptr;
    t.scales_file = calibrates ? scales_file(p.calibration_key) : fs::path();
    for (const std::string& key : keys) t.programs.push_back({*(*batch_)[programs_[key].pending.front()].cfg, program_file(key)});
    size_t n = keys.size();
    uint64_t id = pool_.launch([t] { return detail::to_json(detail::compile_task(t)); },
                               [n](const std::exception& e) {
                                 detail::CompileOutcome c;
                                 c.status = "error", c.message = e.what();
                                 return detail::to_json(std::vector<detail::CompileOutcome>(n, c));
                               });
    for (const std::string& key : keys) {
      ProgramState& ps = programs_[key];
      ps.state = ProgramState::kCompiling;
      ps.calibrates = calibrates && key == keys.front();
    }
    tasks_[id] = {true, keys, 0};
    summary_.compiles += n;
  }

  void launch_simulation(const std::string& key, ProgramState& ps, size_t i) {
    if (!ps.loaded) {
      // A timing-only run moves no data: the 25 MB of ResNet-50's weights stay on disk, so the
      // coordinator and every worker forked from it stay small.
      ps.loaded = std::make_shared<isa::Program>(isa::read_program(program_file(key), {.constant_bytes = !s_.timing_only}));
      ps.useful_macs = std::make_shared<const std::vector<compiler::LayerBound>>(detail::read_useful_macs(program_file(key)));
    }
    ++ps.in_flight;
    const Prepared& p = (*batch_)[i];
    std::shared_ptr<isa::Program> prog = ps.loaded;
    std::shared_ptr<const std::vector<compiler::LayerBound>> macs = ps.useful_macs;
    bool timing = s_.timing_only;
    uint64_t seed = s_.seed;
    uint64_t id = pool_.launch(
        [&p, prog, macs, timing, seed] {
          // The worker's memory is its own copy of the coordinator's: the program is stamped
          // with this point's config in place (copying it, constants and all, was 25 MB of
          // ResNet-50 weights copied per point).
          isa::Program& q = *prog;
          detail::stamp(q, *p.cfg);
          PointResult r = p.row;
          detail::simulate_task(q, *p.cfg, timing, seed, r, *macs);
          return to_json(r);
        },
        [](const std::exception& e) { return nlohmann::json{{"worker_error", e.what()}}.dump(); });
    tasks_[id] = {false, {key}, i};
  }

  void finish(detail::ProcessPool::Done& d) {
    Task t = tasks_.at(d.id);
    tasks_.erase(d.id);
    if (t.compile) {
      std::vector<detail::CompileOutcome> outcomes;
      if (d.crashed) {
        detail::CompileOutcome c;
        c.status = "error", c.message = "the compile worker crashed (a vtpu bug)";
        outcomes.assign(t.programs.size(), c);
      } else {
        outcomes = detail::compile_outcomes_from_json(d.output, t.programs.size());
      }
      for (size_t i = 0; i < t.programs.size(); ++i) finish_compile(t.programs[i], outcomes[i]);
      return;
    }
    ProgramState& ps = programs_[t.programs.front()];
    --ps.in_flight;
    PointResult r = (*batch_)[t.point].row;
    auto j = nlohmann::json::parse(d.output, nullptr, false);
    if (d.crashed || j.is_discarded() || j.contains("worker_error")) {
      r.status = "error";
      r.message = d.crashed ? "the simulation worker crashed (a vtpu bug)" : j.is_discarded() ? d.output : j["worker_error"].get<std::string>();
    } else {
      r = result_from_json(d.output);
      if (s_.constraints.power_w && r.average_power_w > *s_.constraints.power_w) {
        r.feasible = false;
        r.violations = fmt::format("power_w {:.2f} > {}", r.average_power_w, *s_.constraints.power_w);
      }
    }
    r.program_cached = ps.from_cache;
    r.compile_cpu_s = ps.from_cache ? 0 : ps.outcome.seconds;
    if (ps.from_cache) ++summary_.program_cache_hits;
    record(r);
    if (ps.pending.empty() && ps.in_flight == 0) ps.loaded.reset();
  }

  void finish_compile(const std::string& key, const detail::CompileOutcome& c) {
    ProgramState& ps = programs_[key];
    ps.outcome = c;
    const Prepared& p = (*batch_)[ps.pending.front()];
    CalibrationState* cal = p.calibration_key.empty() ? nullptr : &calibrations_[p.calibration_key];
    if (c.status == "ok") {
      ps.state = ProgramState::kReady;
      if (ps.calibrates) {
        cal->scales = detail::read_scales(scales_file(p.calibration_key));
        cal->state = CalibrationState::kReady;
        ++summary_.calibrations;
      }
    } else {
      ps.state = ProgramState::kFailed;
      if (ps.calibrates) cal->state = CalibrationState::kMissing;  // another program calibrates
      if (c.status != "error") detail::write_atomically(outcome_file(key), detail::to_json(c));
    }
  }

  void record(const PointResult& r) {
    db_.put(r);
    ++summary_.ran, ++progress_.done;
    if (r.status == "ok") ++summary_.ok, ++progress_.ok;
    else if (r.status == "does_not_fit") ++summary_.does_not_fit, ++progress_.does_not_fit;
    else ++summary_.other, ++progress_.other;
  }

  void report() {
    if (!o_.progress) return;
    progress_.compiles = summary_.compiles;
    progress_.compiles_running = 0;
    for (const auto& [k, ps] : programs_) progress_.compiles_running += ps.state == ProgramState::kCompiling;
    progress_.elapsed_s = std::chrono::duration<double>(Clock::now() - start_).count();
    o_.progress(progress_);
  }

  struct Task {
    bool compile;
    std::vector<std::string> programs;  // a compile's; a simulation's one program
    size_t point;
  };

  const SweepSpec& s_;
  const RunOptions& o_;
  Database db_;
  detail::ProcessPool pool_;
  std::vector<ModelFile> models_;
  std::string build_;
  std::map<std::string, ProgramState> programs_;
  std::vector<std::string> order_;  // programs in the order their points come
  std::map<std::string, CalibrationState> calibrations_;
  std::map<uint64_t, Task> tasks_;
  std::set<std::string> keys_;  // points of this run
  std::vector<Prepared>* batch_ = nullptr;
  RunSummary summary_;
  Progress progress_;
  Clock::time_point start_;
  double cpu0_ = 0;
};

}  // namespace

RunSummary run_sweep(const SweepSpec& spec, const RunOptions& options) {
  fs::create_directories(options.cache_dir);
  if (!options.db.parent_path().empty()) fs::create_directories(options.db.parent_path());
  return Coordinator(spec, options).run();
}

Shard parse_shard(const std::string& text) {
  size_t slash = text.find('/');
  Shard s;
  try {
    size_t a = 0, b = 0;
    if (slash == std::string::npos) throw std::invalid_argument("no slash");
    s.index = uint32_t(std::stoul(text.substr(0, slash), &a));
    s.count = uint32_t(std::stoul(text.substr(slash + 1), &b));
    if (a != slash || b != text.size() - slash - 1) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    throw UserError(fmt::format("--shard '{}': expected I/N, e.g. 0/8 (task I of N, counted from 0)", text));
  }
  if (s.count == 0 || s.index >= s.count)
    throw UserError(fmt::format("--shard '{}': I must be in 0..N-1 and N at least 1", text));
  return s;
}

fs::path default_db(const SweepSpec& spec) { return fs::path(spec.name + ".sqlite"); }

fs::path default_cache(const fs::path& db) {
  fs::path c = db;
  c.replace_extension(".cache");
  return c;
}

}  // namespace vtpu::sweep
