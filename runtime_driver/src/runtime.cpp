#include "vtpu/runtime/runtime.h"
#include "vtpu/support/layout.h"

#include "model_io.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <set>

#include "check.h"
#include "text_table.h"
#include "vtpu/runtime/npy.h"
#include "vtpu/support/files.h"

namespace vtpu::runtime {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

ModelRun run_model(const std::filesystem::path& model, const config::Config& cfg, const RunOptions& opt) {
  ModelRun run;
  run.config = cfg;
  bool onnx = model.extension() == ".onnx";
  std::vector<compiler::LayerBound> bounds;
  std::vector<float> scales;  // INT8's, for the layers' quantization error
  if (!onnx && !opt.calibration_files.empty())
    throw UserError("--calibrate needs the ONNX model (calibration happens when it compiles), not a .vtpu program");
  compiler::CompileOptions copt = detail::compile_options(model, opt);
  copt.progress = opt.compile_progress;
  auto t0 = Clock::now();
  if (onnx) {
    require_readable_file(model, "the model (.onnx)");
    if (opt.phase) opt.phase("compile", 0);
    compiler::CompileResult c = compiler::compile_onnx(model, cfg, copt);
    run.program = std::move(c.program);
    bounds = std::move(c.bounds);
    scales = std::move(c.calibration_scales);
  } else {
    if (opt.check) throw UserError("--check needs the ONNX model (the fp32 reference runs from it), not a .vtpu program");
    run.program = isa::read_program(model);
  }
  run.compile_seconds = std::chrono::duration<double>(Clock::now() - t0).count();

  // Inputs: files (float32, model layout) or seeded random values in [-1, 1].
  detail::ProgramInputs in = detail::program_inputs(run.program, opt);
  std::map<std::string, std::vector<float>>& real_inputs = in.real;  // program layout
  run.inputs_used = in.used;
  run.batch = detail::program_batch(run.program);

  sim::SimOptions so;
  so.max_cycles = opt.max_cycles;
  so.record_trace = opt.record_trace;
  so.progress = opt.progress;
  if (opt.phase) opt.phase("simulate", run.program.code.size());
  auto t1 = Clock::now();
  run.sim = sim::simulate(cfg, run.program, in.bytes, so);
  run.simulate_seconds = std::chrono::duration<double>(Clock::now() - t1).count();

  for (const auto& t : run.program.tensors) {
    if (t.role != isa::TensorRole::Output) continue;
    std::vector<float> v = detail::decode(t, run.sim.outputs.at(t.name));
    run.output_shapes[t.name] = t.nhwc ? nchw_shape_of(t.shape) : t.shape;
    run.outputs[t.name] = t.nhwc ? nhwc_to_nchw(v, t.shape) : v;
  }

  if (opt.check) {
    if (opt.phase) opt.phase("check", 0);
    Reference ref = check_reference(model, run.program, real_inputs, copt, opt.check_reference);
    run.checks = compare_outputs(run.outputs, ref);
    run.check_reference = ref.name, run.check_reference_short = ref.short_name;
    if (opt.precision == compiler::Precision::Int8) {
      run.quant_errors = compiler::quantization_errors(model, copt, scales, real_inputs);  // the program's own shapes
    }
  }

  apply_useful_macs(run.sim.stats, bounds);
  run.layers = layer_rows(run.sim.stats, bounds);
  return run;
}

void apply_useful_macs(sim::Stats& st, const std::vector<compiler::LayerBound>& bounds) {
  std::map<std::string, uint64_t> useful;
  for (const auto& b : bounds) useful[b.layer] += b.macs;
  for (auto& tag : st.per_tag) {
    auto it = useful.find(tag.tag);
    sim::Counters& c = tag.c;
    const uint64_t array = c.macs();
    if (it == useful.end() || array == 0) continue;  // no bound row, or no matmul under this tag
    // The layer's dtypes in the array's proportion (a layer runs in one dtype in practice).
    const uint64_t bf16 = uint64_t(double(it->second) * double(c.macs_bf16) / double(array) + 0.5);
    const uint64_t int8 = it->second - bf16;
    st.total.macs_int8 += int8, st.total.macs_int8 -= c.macs_int8;
    st.total.macs_bf16 += bf16, st.total.macs_bf16 -= c.macs_bf16;
    c.macs_int8 = int8, c.macs_bf16 = bf16;
  }
}

std::vector<LayerRow> layer_rows(const sim::Stats& st, const std::vector<compiler::LayerBound>& bounds) {
  // Per layer: the simulator's per-tag figures beside the compiler's bounds.
  std::vector<LayerRow> layers;
  double peak_macs_per_cycle = double(st.mxu_count) * st.mxu_rows * st.mxu_cols;
  for (const auto& tag : st.per_tag) {
    if (tag.tag.empty()) continue;
    LayerRow row;
    row.layer = tag.tag;
    const sim::Counters& c = tag.c;
    row.first_cycle = c.first_issue == UINT64_MAX ? 0 : c.first_issue;
    row.last_cycle = c.last_done;
    row.cycles = c.span_cycles;  // summed over a batch-chunk loop's passes
    row.macs = c.macs();
    row.mxu_utilization = row.cycles ? double(row.macs) / (double(row.cycles) * peak_macs_per_cycle) : 0;
    size_t top = 0;
    for (size_t i = 0; i < sim::kNumStallReasons; ++i)
      if (c.stall[i] > c.stall[top]) top = i;
    row.top_stall = c.stall[top] ? std::string(sim::stall_reason_name(sim::StallReason(top))) : "";
    row.top_stall_cycles = c.stall[top];
    row.stall_cycles = c.stall_cycles;
    row.energy_uj = c.energy_total_pj() * 1e-6;
    uint64_t mxu = c.mxu_rows + c.ub_bank_extra_cycles, dma = c.dma_busy_cycles, vec = c.vector_busy_cycles;
    row.bound_by = mxu >= dma && mxu >= vec ? "compute" : dma >= vec ? "memory" : "vector";
    // A layer several tpu ops make (a grouped conv's slices, convs and concat) bounds by their sum.
    for (const auto& b : bounds) {
      if (b.layer != tag.tag) continue;
      row.compute_cycles += b.compute_cycles, row.memory_cycles += b.memory_cycles;
      row.weight_path_cycles += b.weight_path_cycles;
      row.bound_cycles = std::max({row.compute_cycles, row.memory_cycles, row.weight_path_cycles});
      row.bound_limit = !row.bound_cycles                           ? ""
                        : row.bound_cycles == row.compute_cycles    ? "compute"
                        : row.bound_cycles == row.memory_cycles     ? "memory"
                                                                    : "weight path";
      if (("+" + row.op + "+").find("+" + b.op + "+") == std::string::npos) row.op += (row.op.empty() ? "" : "+") + b.op;
      row.shape = fmt::format("{}", fmt::join(b.shape, "x"));
    }
    layers.push_back(row);
  }
  return layers;
}

std::string quant_error_table(const ModelRun& run) {
  if (run.quant_errors.empty()) return "";
  detail::TextTable t{{"layer", "op", "SQNR dB", "drop", "clipped"}, {false, false, true, true, true}, {}};
  double prev = std::numeric_limits<double>::infinity(), worst = 0;
  size_t worst_row = run.quant_errors.size();
  for (size_t i = 0; i < run.quant_errors.size(); ++i) {
    const auto& q = run.quant_errors[i];
    double drop = std::isfinite(prev) && std::isfinite(q.sqnr_db) ? prev - q.sqnr_db : 0;
    if (drop > worst) worst = drop, worst_row = i;
    t.rows.push_back({q.layer, q.op, std::isfinite(q.sqnr_db) ? fmt::format("{:.1f}", q.sqnr_db) : "exact",
                      drop > 0 ? fmt::format("{:.1f}", drop) : "", q.clipped > 0 ? fmt::format("{:.2g}%", 100 * q.clipped) : ""});
    if (std::isfinite(q.sqnr_db)) prev = q.sqnr_db;
  }
  if (worst_row < t.rows.size()) t.rows[worst_row][0] += "  <- largest drop";
  return "INT8 quantization error by layer (the fp32 reference with every activation rounded to its scale, against "
         "fp32; weights fp32):\n" +
         t.render();
}

std::string totals_text(const ModelRun& run) {
  const sim::Stats& s = run.sim.stats;
  double secs = s.seconds(), ej = s.total.energy_total_pj() * 1e-12;
  double peak = 2.0 * s.mxu_count * s.mxu_rows * s.mxu_cols * s.clock_mhz * 1e6 / 1e12;
  std::string o;
  o += fmt::format("latency {:.3f} ms ({} cycles at {} MHz), batch {}, throughput {:.1f} inferences/s\n", secs * 1e3,
                   s.total_cycles, s.clock_mhz, run.batch, secs > 0 ? double(run.batch) / secs : 0.0);
  o += fmt::format("achieved {:.3f} TOPS of {:.1f} peak ({:.1f}% MXU utilization)\n",
                   secs > 0 ? 2.0 * double(s.total.macs()) / secs / 1e12 : 0.0, peak, 100 * s.mxu_overall_utilization());
  double per = ej / double(run.batch);
  o += fmt::format("energy {} per inference, average power {:.2f} W\n",
                   per >= 1e-3 ? fmt::format("{:.3f} mJ", per * 1e3) : fmt::format("{:.3f} uJ", per * 1e6),
                   secs > 0 ? ej / secs : 0.0);
  o += fmt::format("wall time: compile {:.2f} s, simulate {:.2f} s\n", run.compile_seconds, run.simulate_seconds);
  o += quant_error_table(run);
  if (!run.checks.empty()) o += fmt::format("check reference: {}\n", run.check_reference);
  for (const auto& c : run.checks) {
    if (c.failed())
      o += fmt::format("check {}: FAILED: {} of {} values are NaN or infinite where {} is not, or the reverse; ", c.output,
                       c.nonfinite_mismatches, c.values, run.check_reference_short);
    else
      o += fmt::format("check {}: ", c.output);
    o += fmt::format("max |error| {:.4g} against {} (largest |value| {:.4g}, {:.2f}%){}\n", c.max_abs_error,
                     run.check_reference_short, c.max_reference,
                     c.max_reference > 0 ? 100 * c.max_abs_error / c.max_reference : 0.0,
                     c.failed() ? " over the finite values" : "");
  }
  return o;
}

bool check_failed(const ModelRun& run) {
  return std::any_of(run.checks.begin(), run.checks.end(), [](const CheckResult& c) { return c.failed(); });
}

}  // namespace vtpu::runtime

#include "vtpu/support/child_process.h"

#include <nlohmann/json.hpp>

namespace vtpu::runtime {
namespace {

// Runs fn in a child process (one simulation each); errors come back as JSON.
std::string in_child(const std::function<std::string()>& fn) {
  return run_in_child(
      fn, [](const std::exception& e) { return nlohmann::json{{"error", e.what()}}.dump(); },
      nlohmann::json{{"error", "the run crashed (a vtpu bug)"}}.dump());
}

}  // namespace

std::vector<CompareRow> compare(const std::filesystem::path& model, const config::Config& cfg,
                                const std::vector<compiler::Precision>& precisions, const RunOptions& base) {
  std::vector<CompareRow> rows;
  for (compiler::Precision p : precisions) {
    std::string out = in_child([&] {
      RunOptions o = base;
      o.precision = p;
      if (p != compiler::Precision::Int8) o.calibration_files.clear();  // calibration is INT8's
      o.check = model.extension() == ".onnx";
      ModelRun run = run_model(model, cfg, o);
      const sim::Stats& s = run.sim.stats;
      double secs = s.seconds(), ej = s.total.energy_total_pj() * 1e-12;
      nlohmann::json j;
      j["latency_ms"] = secs * 1e3;
      j["throughput"] = secs > 0 ? double(run.batch) / secs : 0.0;
      j["tops"] = secs > 0 ? 2.0 * double(s.total.macs()) / secs / 1e12 : 0.0;
      j["energy_mj"] = ej * 1e3 / double(run.batch);
      j["power_w"] = secs > 0 ? ej / secs : 0.0;
      j["mxu_utilization"] = s.mxu_overall_utilization();
      double rel = -1;
      uint64_t nonfinite = 0;
      for (const auto& c : run.checks) {
        rel = std::max(rel, c.max_reference > 0 ? c.max_abs_error / c.max_reference : 0.0);
        nonfinite += c.nonfinite_mismatches;
      }
      j["max_relative_error"] = rel;
      j["quant_error_table"] = quant_error_table(run);
      j["nonfinite_mismatches"] = nonfinite;
      for (size_t u = 0; u < sim::kNumUnits; ++u)
        j["energy_by_unit_mj"][std::string(sim::unit_name(sim::Unit(u)))] = s.total.energy_pj[u] * 1e-9 / double(run.batch);
      return j.dump();
    });
    CompareRow r;
    r.dtype = p == compiler::Precision::Int8 ? "int8" : "bf16";
    auto j = nlohmann::json::parse(out, nullptr, false);
    if (j.is_discarded() || j.contains("error")) {
      r.error = j.is_discarded() ? out : j["error"].get<std::string>();
    } else {
      r.latency_ms = j["latency_ms"], r.throughput = j["throughput"], r.tops = j["tops"];
      r.energy_mj = j["energy_mj"], r.power_w = j["power_w"], r.mxu_utilization = j["mxu_utilization"];
      r.max_relative_error = j["max_relative_error"];
      r.nonfinite_mismatches = j["nonfinite_mismatches"];
      r.quant_error_table = j["quant_error_table"];
      for (auto it = j["energy_by_unit_mj"].begin(); it != j["energy_by_unit_mj"].end(); ++it)
        r.energy_by_unit_mj[it.key()] = it.value();
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string compare_table(const std::vector<CompareRow>& rows) {
  std::string o = fmt::format("{:<30}", "");
  for (const auto& r : rows) o += fmt::format("{:>16}", r.dtype);
  o += "\n";
  auto line = [&](const std::string& name, auto get) {
    o += fmt::format("{:<30}", name);
    for (const auto& r : rows) o += fmt::format("{:>16}", r.error.empty() ? get(r) : std::string("failed"));
    o += "\n";
  };
  line("latency (ms)", [](const CompareRow& r) { return fmt::format("{:.4f}", r.latency_ms); });
  line("throughput (inf/s)", [](const CompareRow& r) { return fmt::format("{:.1f}", r.throughput); });
  line("achieved TOPS", [](const CompareRow& r) { return fmt::format("{:.3f}", r.tops); });
  line("MXU utilization", [](const CompareRow& r) { return fmt::format("{:.1f}%", 100 * r.mxu_utilization); });
  line("energy / inference (mJ)", [](const CompareRow& r) { return fmt::format("{:.4f}", r.energy_mj); });
  line("average power (W)", [](const CompareRow& r) { return fmt::format("{:.2f}", r.power_w); });
  line("error vs fp32", [](const CompareRow& r) {
    if (r.nonfinite_mismatches) return fmt::format("{} NaN/Inf", r.nonfinite_mismatches);
    return r.max_relative_error < 0 ? std::string("-") : fmt::format("{:.2f}%", 100 * r.max_relative_error);
  });
  if (!rows.empty() && rows[0].accuracy >= 0) {
    line(fmt::format("accuracy ({} test images)", rows[0].accuracy_images),
         [](const CompareRow& r) { return fmt::format("{:.2f}%", 100 * r.accuracy); });
    line("  fp32 on the same images", [](const CompareRow& r) { return fmt::format("{:.2f}%", 100 * r.fp32_accuracy); });
  }
  std::set<std::string> units;
  for (const auto& r : rows)
    for (const auto& [u, e] : r.energy_by_unit_mj)
      if (e > 0) units.insert(u);
  for (const auto& u : units)
    line("  energy " + u + " (mJ)", [&](const CompareRow& r) {
      auto it = r.energy_by_unit_mj.find(u);
      return fmt::format("{:.4f}", it == r.energy_by_unit_mj.end() ? 0.0 : it->second);
    });
  for (const auto& r : rows)
    if (!r.error.empty()) o += fmt::format("{} failed: {}\n", r.dtype, r.error);
  o += "error vs fp32: the largest |output - fp32 reference| over the largest |reference|, on the same inputs (N NaN/Inf: "
       "values non-finite on one side only)\n";
  return o;
}

}  // namespace vtpu::runtime

#include "vtpu/models/datasets.h"

namespace vtpu::runtime {

Accuracy fashion_mnist_accuracy(const std::filesystem::path& model, const config::Config& cfg, compiler::Precision precision,
                                int64_t images, int64_t batch) {
  models::ImageSet test = models::load_fashion_mnist(true, images);
  models::ImageSet train = models::load_fashion_mnist(false, 64);
  size_t px = size_t(test.height * test.width);
  compiler::CompileOptions copt;
  compiler::CompileResult c;
  // The largest batch (up to `batch`) the config's unified buffer holds.
  for (;; batch /= 2) {
    copt = {};
    copt.precision = precision;
    copt.batch = batch;
    // INT8 calibration on 64 training images, never on the test set.
    for (int64_t i = 0; i + batch <= train.count; i += batch)
      copt.calibration.push_back({{"image", std::vector<float>(train.pixels.begin() + long(size_t(i) * px),
                                                               train.pixels.begin() + long(size_t(i + batch) * px))}});
    try {
      c = compiler::compile_onnx(model, cfg, copt);
      break;
    } catch (const compiler::CompileError&) {
      if (batch <= 1) throw;
    }
  }
  const isa::TensorInfo* in = nullptr;
  const isa::TensorInfo* out = nullptr;
  for (const auto& t : c.program.tensors) {
    if (t.role == isa::TensorRole::Input) in = &t;
    if (t.role == isa::TensorRole::Output) out = &t;
  }
  if (!in || !out) throw UserError(fmt::format("{}: expected one image input and one output", model.string()));
  size_t classes = size_t(out->shape.back());
  Accuracy acc;
  int64_t right = 0, right_fp32 = 0;
  for (int64_t i0 = 0; i0 < test.count; i0 += batch) {
    int64_t n = std::min<int64_t>(batch, test.count - i0);
    std::vector<float> chunk(size_t(batch) * px, 0.0f);  // the last chunk is padded with blank images
    std::copy(test.pixels.begin() + long(size_t(i0) * px), test.pixels.begin() + long(size_t(i0 + n) * px), chunk.begin());
    std::map<std::string, std::vector<uint8_t>> bytes{{in->name, detail::encode(*in, chunk)}};
    std::string got = in_child([&] {
      auto r = sim::simulate(cfg, c.program, bytes);
      const auto& o = r.outputs.at(out->name);
      return std::string(o.begin(), o.end());
    });
    if (got.rfind("{\"error\"", 0) == 0) throw UserError(nlohmann::json::parse(got)["error"].get<std::string>());
    std::vector<float> y = detail::decode(*out, std::vector<uint8_t>(got.begin(), got.end()));
    auto ref = compiler::reference_outputs(model, {{in->name, chunk}}, copt).at(out->name);
    for (int64_t k = 0; k < n; ++k) {
      auto best = [&](const std::vector<float>& v) {
        return size_t(std::max_element(v.begin() + long(size_t(k) * classes), v.begin() + long(size_t(k + 1) * classes)) -
                      (v.begin() + long(size_t(k) * classes)));
      };
      uint8_t label = test.labels[size_t(i0 + k)];
      right += best(y) == label;
      right_fp32 += best(ref) == label;
    }
  }
  acc.images = test.count;
  acc.chip = double(right) / double(test.count);
  acc.fp32 = double(right_fp32) / double(test.count);
  return acc;
}

}  // namespace vtpu::runtime
