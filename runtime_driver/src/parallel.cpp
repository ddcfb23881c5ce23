// Models across chips (docs/runtime.md, "Models across chips"): data and pipeline parallelism.
#include "vtpu/runtime/parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "model_io.h"
#include "text_table.h"
#include "vtpu/config/topology.h"
#include "vtpu/sim/system_report.h"
#include "vtpu/support/child_process.h"
#include "vtpu/support/layout.h"

namespace vtpu::runtime {
namespace {

using Clock = std::chrono::steady_clock;

const isa::TensorInfo* find_tensor(const isa::Program& p, const std::string& name, isa::TensorRole role) {
  for (const auto& t : p.tensors)
    if (t.name == name && t.role == role) return &t;
  return nullptr;
}

// Every input and output of the whole-batch program has the batch as its dimension 0.
void check_batch_dimension(const isa::Program& p, int64_t batch, const std::filesystem::path& model) {
  for (const auto& t : p.tensors) {
    if (t.role == isa::TensorRole::Constant) continue;
    if (t.shape.empty() || t.shape[0] != batch)
      throw UserError(fmt::format("{}: --parallel data cuts the batch (dimension 0) but {} '{}' has shape [{}], not "
                                  "[{}, ...]; this model cannot be split by batch",
                                  model.string(), t.role == isa::TensorRole::Input ? "input" : "output", t.name,
                                  fmt::join(t.shape, ", "), batch));
  }
}

// The rows [begin, begin + n) of a tensor whose dimension 0 has `batch` rows.
std::vector<float> rows(const std::vector<float>& v, int64_t batch, int64_t begin, int64_t n) {
  size_t per = v.size() / size_t(batch);
  return {v.begin() + long(per * size_t(begin)), v.begin() + long(per * size_t(begin + n))};
}

// The baseline: the whole batch on one chip, in a child process. Its reply: cycles, energy,
// then every output's bytes in the program's tensor order (or "E" and the error).
struct Baseline {
  std::string error;
  uint64_t cycles = 0;
  double energy_pj = 0;
  std::map<std::string, std::vector<uint8_t>> outputs;
};

Baseline run_baseline(const config::Config& chip, const isa::Program& p, const std::map<std::string, std::vector<uint8_t>>& in,
                      uint64_t max_cycles) {
  std::string got = run_in_child(
      [&] {
        sim::SimOptions so;
        so.max_cycles = max_cycles;
        sim::RunResult r = sim::simulate(chip, p, in, so);
        std::string out = "R";
        double e = r.stats.total.energy_total_pj();
        out.append(reinterpret_cast<const char*>(&r.stats.total_cycles), 8);
        out.append(reinterpret_cast<const char*>(&e), 8);
        for (const auto& t : p.tensors)
          if (t.role == isa::TensorRole::Output) out.append(reinterpret_cast<const char*>(r.outputs.at(t.name).data()), t.bytes());
        return out;
      },
      [](const std::exception& e) { return std::string("E") + e.what(); }, "Ethe single-chip run crashed (a vtpu bug)");
  Baseline b;
  if (got.empty() || got[0] != 'R') {
    b.error = got.empty() ? "the single-chip run sent nothing back" : got.substr(1);
    return b;
  }
  size_t at = 1;
  std::memcpy(&b.cycles, got.data() + at, 8), at += 8;
  std::memcpy(&b.energy_pj, got.data() + at, 8), at += 8;
  for (const auto& t : p.tensors) {
    if (t.role != isa::TensorRole::Output) continue;
    b.outputs[t.name].assign(got.begin() + long(at), got.begin() + long(at + t.bytes()));
    at += t.bytes();
  }
  return b;
}

}  // namespace

Parallelism parallelism_from_name(const std::string& name) {
  if (name == "data") return Parallelism::Data;
  if (name == "pipeline") return Parallelism::Pipeline;
  if (name == "tensor") return Parallelism::Tensor;
  throw UserError(fmt::format("--parallel {}: vtpu splits models by batch (data), by layers (pipeline) or by the "
                              "matmuls' weights (tensor); docs/runtime.md",
                              name));
}

const char* parallelism_name(Parallelism p) {
  return p == Parallelism::Data ? "data" : p == Parallelism::Pipeline ? "pipeline" : "tensor";
}

config::Config one_chip_of(const config::Config& system) {
  config::Config c = system;
  c.name = system.name + "-chip";
  c.description = "one chip of " + system.name;
  c.system.chips = 1;
  c.ici.shape = {1};
  c.ici.twist.clear();
  return c;
}

double ParallelRun::collective_seconds() const {
  double busy = 0;
  for (const auto& l : system.links) busy = std::max(busy, l.busy_cycles);
  return busy / (config.clock_mhz * 1e6);
}

namespace {

// A part's compile options: the run's, for `batch` samples, with the whole batch's INT8 scales
// (so every chip quantizes as one chip running the batch does) instead of its calibration data.
compiler::CompileOptions part_options(const compiler::CompileOptions& copt, const compiler::CompileResult& whole, int64_t batch) {
  compiler::CompileOptions o = copt;
  o.batch = batch;
  o.calibration.clear();
  o.calibration_scales = whole.calibration_scales;
  return o;
}

// Data parallelism: slices as even as they come (the first batch % chips chips take one
// sample more), one program per distinct slice size.
void data_parts(ParallelRun& run, const std::filesystem::path& model, const config::Config& system,
                const compiler::CompileOptions& copt, const compiler::CompileResult& whole) {
  const uint32_t chips = system.system.chips;
  check_batch_dimension(whole.program, run.batch, model);
  if (run.batch < int64_t(chips))
    throw UserError(fmt::format("--parallel data: a batch of {} leaves chips of '{}' ({} chips) without a sample; give "
                                "--batch {} or more, or a smaller slice",
                                run.batch, system.name, chips, chips));
  std::map<int64_t, size_t> program_of;  // slice size -> programs index
  for (uint32_t c = 0, begin = 0; c < chips; ++c) {
    int64_t n = run.batch / chips + (int64_t(c) < run.batch % chips ? 1 : 0);
    if (!program_of.count(n)) {
      compiler::CompileResult r = compiler::compile_onnx(model, system, part_options(copt, whole, n));
      if (run.programs.empty()) run.bounds = std::move(r.bounds);
      program_of[n] = run.programs.size();
      run.programs.push_back(std::move(r.program));
    }
    ChipPart part;
    part.batch_begin = begin, part.batch = n, part.program = program_of[n];
    run.parts.push_back(part);
    begin += uint32_t(n);
  }
}

// Pipeline parallelism: a stage per chip in the order of the chips' indices, the whole batch
// through each.
void pipeline_parts(ParallelRun& run, const std::filesystem::path& model, const config::Config& system,
                    const compiler::CompileOptions& copt, const compiler::CompileResult& whole, int64_t micro_batches) {
  const compiler::CompileOptions o = part_options(copt, whole, run.batch);
  compiler::StageOptions so;
  for (uint32_t c = 0; c < system.system.chips; ++c) so.chips.push_back(c);
  so.micro_batches = micro_batches;
  compiler::Pipeline pipe = compiler::compile_stages(model, system, o, so);
  run.micro_batches = pipe.micro_batches;
  run.whole_batch_why = pipe.whole_batch_why;
  for (compiler::Stage& st : pipe.stages) {
    ChipPart part;
    part.batch = run.batch, part.program = run.programs.size();
    part.first_layer = st.first_layer, part.last_layer = st.last_layer;
    part.input = st.input, part.output = st.output, part.cost = st.cost;
    run.parts.push_back(part);
    run.bounds.insert(run.bounds.end(), st.result.bounds.begin(), st.result.bounds.end());
    run.programs.push_back(std::move(st.result.program));
  }
}

// Tensor parallelism: every chip's share of the split matmuls, the whole batch on each.
void tensor_parts(ParallelRun& run, const std::filesystem::path& model, const config::Config& system,
                  const compiler::CompileOptions& copt, const compiler::CompileResult& whole) {
  const compiler::CompileOptions o = part_options(copt, whole, run.batch);
  compiler::TensorParallel tp = compiler::compile_tensor_parallel(model, system, o);
  run.splits = tp.splits;
  run.whole_matmuls = tp.whole;
  const uint32_t chips = system.system.chips;
  for (uint32_t c = 0; c < chips; ++c) {
    ChipPart part;
    part.batch = run.batch, part.program = run.programs.size();
    part.share = fmt::format("1/{} of {} group{}", chips, tp.splits.size(), tp.splits.size() == 1 ? "" : "s");
    run.parts.push_back(part);
    if (c == 0) run.bounds = tp.programs[c].bounds;
    run.programs.push_back(std::move(tp.programs[c].program));
  }
}

}  // namespace

ParallelRun run_parallel(const std::filesystem::path& model, const config::Config& system, const ParallelOptions& popt,
                         const RunOptions& opt) {
  ParallelRun run;
  run.parallelism = popt.kind;
  run.config = system;
  run.chip = one_chip_of(system);
  const uint32_t chips = system.system.chips;
  if (chips < 2)
    throw UserError(fmt::format("--parallel {} needs a config of several chips, and '{}' has one (system.chips); use a "
                                "slice such as tpu-v4-2x2x2 (vtpu config list)",
                                parallelism_name(popt.kind), system.name));
  if (model.extension() != ".onnx")
    throw UserError(fmt::format("{}: --parallel compiles the model for each chip's part and needs the ONNX model, not a "
                                "compiled program",
                                model.string()));
  if (popt.kind != Parallelism::Pipeline && popt.micro_batches)
    throw UserError(fmt::format("--micro-batches is for --parallel pipeline; {} parallelism gives each chip its batch whole",
                                parallelism_name(popt.kind)));

  // The whole batch as one chip compiles it: the baseline's program, the input tensors, and
  // (int8) the calibration every chip's program reuses.
  compiler::CompileOptions copt = detail::compile_options(model, opt);
  if (opt.phase) opt.phase("compile", 0);
  auto t0 = Clock::now();
  compiler::CompileResult whole = compiler::compile_onnx(model, run.chip, copt);
  run.batch = detail::program_batch(whole.program);
  run.tensors = whole.program.tensors;
  if (popt.kind == Parallelism::Data) data_parts(run, model, system, copt, whole);
  else if (popt.kind == Parallelism::Pipeline) pipeline_parts(run, model, system, copt, whole, popt.micro_batches);
  else tensor_parts(run, model, system, copt, whole);
  run.compile_seconds = std::chrono::duration<double>(Clock::now() - t0).count();

  // The whole batch's inputs, then every chip's part of them in its program's encoding: the
  // rows of its slice, or the whole batch; a stage's input from the stage before it arrives
  // over ICI (zeros until then).
  detail::ProgramInputs in = detail::program_inputs(whole.program, opt);
  run.inputs_used = in.used;
  std::vector<sim::ChipRun> chip_runs(chips);
  for (uint32_t c = 0; c < chips; ++c) {
    const ChipPart& part = run.parts[c];
    chip_runs[c].program = run.programs[part.program];
    for (const auto& t : chip_runs[c].program.tensors) {
      if (t.role != isa::TensorRole::Input) continue;
      auto v = in.real.find(t.name);
      chip_runs[c].inputs[t.name] = v == in.real.end() ? std::vector<uint8_t>(t.bytes(), 0)
                                                       : detail::encode(t, rows(v->second, run.batch, part.batch_begin, part.batch));
    }
  }

  Baseline base;
  auto t1 = Clock::now();
  if (popt.baseline) {
    if (opt.phase) opt.phase("baseline", 0);
    base = run_baseline(run.chip, whole.program, in.bytes, opt.max_cycles);
    run.baseline_ran = base.error.empty();
    run.baseline_error = base.error;
    run.baseline_cycles = base.cycles;
    run.baseline_energy_pj = base.energy_pj;
  }
  sim::SystemOptions so;
  so.sim.max_cycles = opt.max_cycles;
  so.sim.record_trace = opt.record_trace;
  if (opt.phase) opt.phase("simulate", 0);
  run.system = sim::simulate_system(system, chip_runs, so);
  run.simulate_seconds = std::chrono::duration<double>(Clock::now() - t1).count();

  // Outputs: from every chip whose program makes them (data: every chip's rows in batch
  // order; pipeline: the last stage's; tensor: chip 0's, which every other chip's equal).
  run.identical = run.baseline_ran;
  for (const auto& t : whole.program.tensors) {
    if (t.role != isa::TensorRole::Output) continue;
    std::vector<uint8_t> bytes;
    std::vector<float> v;
    for (uint32_t c = 0; c < chips; ++c) {
      const isa::TensorInfo* ct = find_tensor(chip_runs[c].program, t.name, isa::TensorRole::Output);
      if (!ct) continue;
      if (popt.kind == Parallelism::Tensor && c > 0) {
        run.chips_agree &= run.system.chips[c].outputs.at(t.name) == run.system.chips[0].outputs.at(t.name);
        continue;
      }
      const std::vector<uint8_t>& b = run.system.chips[c].outputs.at(t.name);
      bytes.insert(bytes.end(), b.begin(), b.end());
      std::vector<float> part = detail::decode(*ct, b);
      v.insert(v.end(), part.begin(), part.end());
    }
    if (bytes.size() != t.bytes())
      throw InternalError(fmt::format("the chips' programs make {} bytes of output '{}', the model {}", bytes.size(), t.name,
                                      t.bytes()));
    if (run.baseline_ran) {
      const std::vector<uint8_t>& want = base.outputs.at(t.name);
      if (bytes != want) {
        run.identical = false;
        std::vector<float> w = detail::decode(t, want);
        double worst = 0, largest = 0;
        for (size_t i = 0; i < v.size() && i < w.size(); ++i) {
          worst = std::max(worst, std::fabs(double(v[i]) - double(w[i])));
          largest = std::max(largest, std::fabs(double(w[i])));
        }
        double rel = largest > 0 ? worst / largest : worst;
        if (rel >= run.max_relative_difference) {
          run.max_relative_difference = rel;
          run.max_abs_difference = worst;
          run.worst_output = t.name;
        }
      }
    }
    run.output_shapes[t.name] = t.nhwc ? nchw_shape_of(t.shape) : t.shape;
    run.outputs[t.name] = t.nhwc ? nhwc_to_nchw(v, t.shape) : v;
    run.output_bytes[t.name] = std::move(bytes);
  }
  return run;
}

std::string parts_table(const ParallelRun& run) {
  const config::Topology topo(run.config);
  const bool pipe = run.parallelism == Parallelism::Pipeline, tensor = run.parallelism == Parallelism::Tensor;
  detail::TextTable t{{"chip", pipe ? "layers" : tensor ? "share" : "samples", "cycles", "time", "MXU util", "energy"},
                      {false, !pipe, true, true, true, true},
                      {}};
  if (pipe) t.header.insert(t.header.begin() + 2, "est. share"), t.right.insert(t.right.begin() + 2, true);
  for (size_t c = 0; c < run.parts.size(); ++c) {
    const auto& p = run.parts[c];
    const sim::Stats& s = run.system.chips[c].stats;
    std::vector<std::string> row{topo.name(uint32_t(c)),
                                 pipe ? (p.first_layer == p.last_layer ? p.first_layer : p.first_layer + " .. " + p.last_layer)
                                 : tensor       ? p.share
                                 : p.batch == 1 ? std::to_string(p.batch_begin)
                                                : fmt::format("{}..{}", p.batch_begin, p.batch_begin + p.batch - 1),
                                 std::to_string(s.total_cycles), fmt::format("{:.3f} ms", s.seconds() * 1e3),
                                 fmt::format("{:.1f}%", 100 * s.mxu_overall_utilization()),
                                 fmt::format("{:.3f} mJ", s.total.energy_total_pj() * 1e-9)};
    if (pipe) row.insert(row.begin() + 2, fmt::format("{:.1f}%", 100 * p.cost));
    t.rows.push_back(std::move(row));
  }
  std::string o = t.render();
  if (pipe) {
    o += fmt::format("the batch of {} flows through the stages in {} micro-batch{} of {}", run.batch, run.micro_batches,
                     run.micro_batches == 1 ? "" : "es", run.batch / run.micro_batches);
    o += run.whole_batch_why.empty() ? "\n" : fmt::format(" (whole: {})\n", run.whole_batch_why);
    o += "est. share: the stage's share of the model's estimated cycles, by which the layers were divided\n";
  }
  if (tensor) {
    o += fmt::format("split over the chips (by columns or heads, then rows with an all-reduce of the partial sums):\n");
    for (const auto& sp : run.splits) o += fmt::format("  {} -> {} ({} {})\n", sp.first, sp.second, sp.units, sp.unit);
    if (!run.whole_matmuls.empty()) {
      o += "computed whole on every chip:\n";
      for (const auto& w : run.whole_matmuls) o += "  " + w + "\n";
    }
    if (!run.chips_agree) o += "warning: the chips' outputs differ from chip 0's (a vtpu bug: please report it)\n";
  }
  return o;
}

std::string scaling_table(const ParallelRun& run) {
  const size_t n = run.parts.size();
  double link_pj = 0, chip_pj = 0;
  for (const auto& l : run.system.links) link_pj += sim::link_energy_pj(l, run.config);
  for (const auto& c : run.system.chips) chip_pj += c.stats.total.energy_total_pj();
  detail::TextTable t{{"run", "chips", "batch", "time", "speed-up", "efficiency", "in collectives", "energy"},
                      {false, true, true, true, true, true, true, true},
                      {}};
  auto ms = [](double s) { return fmt::format("{:.3f} ms", s * 1e3); };
  if (run.baseline_ran)
    t.rows.push_back({"one chip", "1", std::to_string(run.batch), ms(run.baseline_seconds()), "1.00", "100.0%", ms(0),
                      fmt::format("{:.3f} mJ", run.baseline_energy_pj * 1e-9)});
  double speedup = run.baseline_ran && run.seconds() > 0 ? run.baseline_seconds() / run.seconds() : 0;
  t.rows.push_back({fmt::format("{} parallel", parallelism_name(run.parallelism)), std::to_string(n),
                    std::to_string(run.batch), ms(run.seconds()), run.baseline_ran ? fmt::format("{:.2f}", speedup) : "-",
                    run.baseline_ran ? fmt::format("{:.1f}%", 100 * speedup / double(n)) : "-", ms(run.collective_seconds()),
                    fmt::format("{:.3f} mJ", (chip_pj + link_pj) * 1e-9)});
  std::string o = t.render();
  o += fmt::format("efficiency = speed-up / chips (ideal: {:.2f} on {} chips); the energy includes {:.3f} uJ on the links\n",
                   double(n), n, link_pj * 1e-6);
  if (!run.baseline_ran)
    o += fmt::format("one chip: not run ({})\n", run.baseline_error.empty() ? "--no-baseline" : run.baseline_error);
  else if (run.identical)
    o += "outputs: every byte equal to the single-chip run's\n";
  else
    o += fmt::format("outputs: differ from the single-chip run's (largest difference {:.6g} in '{}', {:.3g} of its "
                     "largest |value|; docs/runtime.md says why bf16 may)\n",
                     run.max_abs_difference, run.worst_output, run.max_relative_difference);
  return o;
}

}  // namespace vtpu::runtime
