#include "vtpu/runtime/runtime.h"
#include "vtpu/support/layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <set>

#include "vtpu/numerics/float.h"
#include "check.h"
#include "vtpu/runtime/npy.h"
#include "vtpu/support/files.h"

namespace vtpu::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// Real values -> the tensor's bytes (bf16 rounding, int8 quantization, fp32 as is).
std::vector<uint8_t> encode(const isa::TensorInfo& t, const std::vector<float>& v) {
  std::vector<uint8_t> b(t.bytes());
  for (size_t i = 0; i < v.size(); ++i) {
    switch (t.dtype) {
      case isa::Dtype::Bf16: {
        uint16_t h = numerics::f32_to_bf16(numerics::f32_bits(v[i]));
        std::memcpy(&b[i * 2], &h, 2);
        break;
      }
      case isa::Dtype::Int8: {
        double s = t.quant_scale > 0 ? t.quant_scale : 1.0;
        b[i] = uint8_t(int8_t(std::clamp<double>(std::nearbyint(v[i] / s) + t.zero_point, -128, 127)));
        break;
      }
      case isa::Dtype::Fp32: std::memcpy(&b[i * 4], &v[i], 4); break;
      case isa::Dtype::Int32: {
        int32_t x = int32_t(std::nearbyint(v[i]));
        std::memcpy(&b[i * 4], &x, 4);
        break;
      }
      default: throw UserError(fmt::format("input '{}': dtype {} is not supported by the runtime", t.name, isa::dtype_name(t.dtype)));
    }
  }
  return b;
}

std::vector<float> decode(const isa::TensorInfo& t, const std::vector<uint8_t>& b) {
  size_t n = b.size() / isa::dtype_bytes(t.dtype);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    switch (t.dtype) {
      case isa::Dtype::Bf16: {
        uint16_t h;
        std::memcpy(&h, &b[i * 2], 2);
        v[i] = numerics::f32_from_bits(uint32_t(h) << 16);
        break;
      }
      case isa::Dtype::Int8: v[i] = float((int8_t(b[i]) - t.zero_point) * (t.quant_scale > 0 ? t.quant_scale : 1.0)); break;
      case isa::Dtype::Fp32: std::memcpy(&v[i], &b[i * 4], 4); break;
      case isa::Dtype::Int32: {
        int32_t x;
        std::memcpy(&x, &b[i * 4], 4);
        v[i] = float(x);
        break;
      }
      default: throw UserError(fmt::format("output '{}': dtype {} is not supported by the runtime", t.name, isa::dtype_name(t.dtype)));
    }
  }
  return v;
}

// The values of an integer (or integral float32) array as int32; an error names the input
// and the first value int32 cannot hold.
std::vector<int32_t> int32_values(const NpyArray& a, const std::string& tensor, const std::string& file) {
  static const std::set<std::string> kKinds = {"i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f4"};
  auto values = kKinds.count(a.descr.substr(1)) ? npy_values(a) : std::nullopt;
  if (!values)
    throw UserError(fmt::format("{}: input '{}' is an integer tensor; the file holds numpy '{}' (use int64, int32, int16, "
                                "int8, uint8 or float32 holding integers)",
                                file, tensor, a.descr));
  std::vector<int32_t> out(values->size());
  for (size_t i = 0; i < out.size(); ++i) {
    double x = (*values)[i];
    if (x != std::floor(x) || x < double(INT32_MIN) || x > double(INT32_MAX))
      throw UserError(fmt::format("{}: input '{}' element {} is {}, which int32 cannot hold (the program keeps integer "
                                  "inputs as int32)",
                                  file, tensor, i, x));
    out[i] = int32_t(x);
  }
  return out;
}

// The values of a float32, float16 or float64 array as float32 (float16 exactly; float64
// rounded); an error names the file and the input for anything else.
std::vector<float> float_values(const NpyArray& a, const std::string& tensor, const std::string& file) {
  std::string k = a.descr.substr(1);
  if (k != "f4" && k != "f2" && k != "f8")
    throw UserError(fmt::format("{}: input '{}' must be floating point (numpy '<f4', '<f2' or '<f8'), not '{}'", file,
                                tensor, a.descr));
  std::vector<double> d = *npy_values(a);
  return {d.begin(), d.end()};
}

// "a.png,b.png" -> its comma-separated files (one entry for a single .npy).
std::vector<std::filesystem::path> comma_list(const std::string& spec) {
  std::vector<std::filesystem::path> files;
  for (size_t at = 0; at <= spec.size();) {
    size_t comma = spec.find(',', at);
    if (comma == std::string::npos) comma = spec.size();
    files.push_back(spec.substr(at, comma - at));
    at = comma + 1;
  }
  return files;
}

std::vector<int32_t> nchw_to_nhwc_ints(const std::vector<int32_t>& x, const std::vector<int64_t>& nchw) {
  std::vector<float> idx(x.size());
  for (size_t i = 0; i < x.size(); ++i) idx[i] = float(i);  // positions, exact below 2^24
  auto moved = nchw_to_nhwc(idx, nchw);
  std::vector<int32_t> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[size_t(moved[i])];
  return y;
}

}  // namespace

std::vector<std::map<std::string, std::vector<float>>> calibration_from_files(
    const std::filesystem::path& model, const std::map<std::string, std::string>& specs, int64_t batch, ImageNorm norm,
    compiler::Precision precision) {
  if (precision != compiler::Precision::Int8)
    throw UserError("--calibrate applies to --dtype int8 (bf16 needs no calibration)");
  compiler::CompileOptions o;
  o.batch = batch;
  std::vector<compiler::ModelInput> inputs = compiler::model_inputs(model, o);
  std::string names;
  for (const auto& in : inputs) names += " " + in.name;
  for (const auto& [name, spec] : specs)
    if (std::none_of(inputs.begin(), inputs.end(), [&](const auto& in) { return in.name == name; }))
      throw UserError(fmt::format("--calibrate {}: the model has no input '{}'; its inputs are:{}", name, name, names));
  std::vector<std::map<std::string, std::vector<float>>> samples;
  std::string first;  // the input that set the sample count
  for (const auto& in : inputs) {
    auto it = specs.find(in.name);
    if (it == specs.end())
      throw UserError(fmt::format("--calibrate: no data for input '{}'; calibration needs every input:{}", in.name, names));
    std::vector<int64_t> model_shape = in.nhwc ? nchw_shape_of(in.shape) : in.shape;
    int64_t per = 1;
    for (int64_t d : model_shape) per *= d;
    std::vector<std::filesystem::path> files = comma_list(it->second);
    std::vector<std::vector<float>> pieces;  // model layout
    if (std::all_of(files.begin(), files.end(), [](const auto& f) { return is_image_file(f); })) {
      int64_t n = model_shape.empty() ? 1 : model_shape[0];
      if (int64_t(files.size()) % n)
        throw UserError(fmt::format("--calibrate {}: {} image files do not make whole batches of {}", in.name, files.size(), n));
      for (size_t i = 0; i < files.size(); i += size_t(n))
        pieces.push_back(image_tensor({files.begin() + long(i), files.begin() + long(i) + n}, model_shape, norm, in.name));
    } else {
      if (files.size() != 1)
        throw UserError(fmt::format("--calibrate {}: give one .npy file or image files (PNG, JPEG, BMP, PPM)", in.name));
      NpyArray a = read_npy(files[0]);
      std::vector<float> v;
      if (in.integer) {
        for (int32_t x : int32_values(a, in.name, files[0].string())) v.push_back(float(x));
      } else {
        v = float_values(a, in.name, files[0].string());
      }
      if (v.empty() || int64_t(v.size()) % per)
        throw UserError(fmt::format("{}: calibration data for input '{}' holds {} values, not a whole number of batches of "
                                    "shape [{}] ({} values each)",
                                    files[0].string(), in.name, v.size(), fmt::join(model_shape, ", "), per));
      for (size_t i = 0; i < v.size(); i += size_t(per)) pieces.emplace_back(v.begin() + long(i), v.begin() + long(i) + per);
    }
    if (samples.empty()) samples.resize(pieces.size()), first = in.name;
    if (pieces.size() != samples.size())
      throw UserError(fmt::format("--calibrate: input '{}' gives {} batches but '{}' gives {}; every input needs the same "
                                  "number",
                                  in.name, pieces.size(), first, samples.size()));
    for (size_t s = 0; s < pieces.size(); ++s)
      samples[s][in.name] = in.nhwc ? nchw_to_nhwc(pieces[s], model_shape) : std::move(pieces[s]);
  }
  return samples;
}

ModelRun run_model(const std::filesystem::path& model, const config::Config& cfg, const RunOptions& opt) {
  ModelRun run;
  run.config = cfg;
  bool onnx = model.extension() == ".onnx";
  std::vector<compiler::LayerBound> bounds;
  compiler::CompileOptions copt;
  copt.precision = opt.precision;
  copt.batch = opt.batch;
  copt.seed = opt.seed;
  if (!opt.calibration_files.empty()) {
    if (!onnx) throw UserError("--calibrate needs the ONNX model (calibration happens when it compiles), not a .vtpu program");
    copt.calibration = calibration_from_files(model, opt.calibration_files, opt.batch, opt.image_norm, opt.precision);
  }
  auto t0 = Clock::now();
  if (onnx) {
    require_readable_file(model, "the model (.onnx)");
    if (opt.phase) opt.phase("compile", 0);
    compiler::CompileResult c = compiler::compile_onnx(model, cfg, copt);
    run.program = std::move(c.program);
    bounds = std::move(c.bounds);
  } else {
    if (opt.check) throw UserError("--check needs the ONNX model (the fp32 reference runs from it), not a .vtpu program");
    run.program = isa::read_program(model);
  }
  run.compile_seconds = std::chrono::duration<double>(Clock::now() - t0).count();

  // Inputs: files (float32, model layout) or seeded random values in [-1, 1].
  std::map<std::string, std::vector<float>> real_inputs;  // program layout
  std::map<std::string, std::vector<uint8_t>> bytes;
  for (const auto& [name, file] : opt.input_files) {
    bool known = false;
    for (const auto& t : run.program.tensors) known |= t.name == name && t.role == isa::TensorRole::Input;
    if (!known) {
      std::string names;
      for (const auto& t : run.program.tensors)
        if (t.role == isa::TensorRole::Input) names += " " + t.name;
      throw UserError(fmt::format("--input {}: the model has no input '{}'; its inputs are:{}", name, name, names));
    }
  }
  uint64_t index = 0;
  for (const auto& t : run.program.tensors) {
    if (t.role != isa::TensorRole::Input) continue;
    ++index;
    std::vector<int64_t> model_shape = t.nhwc ? nchw_shape_of(t.shape) : t.shape;
    std::vector<float> v;
    auto it = opt.input_files.find(t.name);
    std::vector<std::filesystem::path> images;
    if (it != opt.input_files.end()) {
      images = comma_list(it->second.string());
      if (!std::all_of(images.begin(), images.end(), [](const auto& f) { return is_image_file(f); })) images.clear();
    }
    if (!images.empty()) {
      v = image_tensor(images, model_shape, opt.image_norm, t.name);
      if (t.nhwc) v = nchw_to_nhwc(v, model_shape);
      run.inputs_used.push_back(t.name + "=" + it->second.string() + " (" + image_norm_name(opt.image_norm) + ")");
    } else if (it != opt.input_files.end() && t.dtype == isa::Dtype::Int32) {
      // An integer input (token ids, quantized activations): any integer .npy, or float32
      // holding integers, placed exactly as int32.
      NpyArray a = read_npy(it->second);
      check_npy_shape(a, model_shape, t.name, it->second.string());
      std::vector<int32_t> iv = int32_values(a, t.name, it->second.string());
      if (t.nhwc) iv = nchw_to_nhwc_ints(iv, model_shape);
      std::vector<uint8_t> b(iv.size() * 4);
      std::memcpy(b.data(), iv.data(), b.size());
      bytes[t.name] = std::move(b);
      for (int32_t x : iv) v.push_back(float(x));
      real_inputs[t.name] = std::move(v);
      run.inputs_used.push_back(t.name + "=" + it->second.string());
      continue;
    } else if (it != opt.input_files.end()) {
      NpyArray a = read_npy(it->second);
      check_npy_shape(a, model_shape, t.name, it->second.string());
      v = float_values(a, t.name, it->second.string());
      if (t.nhwc) v = nchw_to_nhwc(v, model_shape);
      run.inputs_used.push_back(t.name + "=" + it->second.string());
    } else {
      uint64_t n = 1;
      for (int64_t d : t.shape) n *= uint64_t(d);
      std::mt19937_64 rng(opt.seed * 0x9E3779B97F4A7C15ull + index);
      std::uniform_real_distribution<float> u(-1.0f, 1.0f);
      std::uniform_int_distribution<int> ui(0, 127);  // integer inputs: small non-negative integers (ids, uint8 codes)
      v.resize(n);
      for (auto& x : v) x = t.dtype == isa::Dtype::Int32 ? float(ui(rng)) : u(rng);
      run.inputs_used.push_back(t.name + "=random");
    }
    bytes[t.name] = encode(t, v);
    real_inputs[t.name] = std::move(v);
  }
  run.batch = 1;
  for (const auto& t : run.program.tensors)
    if (t.role == isa::TensorRole::Input && !t.shape.empty()) run.batch = std::max<int64_t>(run.batch, t.shape[0]);

  sim::SimOptions so;
  so.max_cycles = opt.max_cycles;
  so.record_trace = opt.record_trace;
  so.progress = opt.progress;
  if (opt.phase) opt.phase("simulate", run.program.code.size());
  auto t1 = Clock::now();
  run.sim = sim::simulate(cfg, run.program, bytes, so);
  run.simulate_seconds = std::chrono::duration<double>(Clock::now() - t1).count();

  for (const auto& t : run.program.tensors) {
    if (t.role != isa::TensorRole::Output) continue;
    std::vector<float> v = decode(t, run.sim.outputs.at(t.name));
    run.output_shapes[t.name] = t.nhwc ? nchw_shape_of(t.shape) : t.shape;
    run.outputs[t.name] = t.nhwc ? nhwc_to_nchw(v, t.shape) : v;
  }

  if (opt.check) {
    if (opt.phase) opt.phase("check", 0);
    Reference ref = check_reference(model, run.program, real_inputs, copt, opt.check_reference);
    run.checks = compare_outputs(run.outputs, ref);
    run.check_reference = ref.name, run.check_reference_short = ref.short_name;
  }

  run.layers = layer_rows(run.sim.stats, bounds);
  return run;
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
    row.cycles = row.last_cycle > row.first_cycle ? row.last_cycle - row.first_cycle : 0;
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
      row.bound_cycles = std::max(row.compute_cycles, row.memory_cycles);
      if (("+" + row.op + "+").find("+" + b.op + "+") == std::string::npos) row.op += (row.op.empty() ? "" : "+") + b.op;
      row.shape = fmt::format("{}", fmt::join(b.shape, "x"));
    }
    layers.push_back(row);
  }
  return layers;
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
    std::map<std::string, std::vector<uint8_t>> bytes{{in->name, encode(*in, chunk)}};
    std::string got = in_child([&] {
      auto r = sim::simulate(cfg, c.program, bytes);
      const auto& o = r.outputs.at(out->name);
      return std::string(o.begin(), o.end());
    });
    if (got.rfind("{\"error\"", 0) == 0) throw UserError(nlohmann::json::parse(got)["error"].get<std::string>());
    std::vector<float> y = decode(*out, std::vector<uint8_t>(got.begin(), got.end()));
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
