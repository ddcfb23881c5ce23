// vtpu: the command-line tool. A thin layer over the libraries; every subcommand maps
// errors to the exit codes in vtpu/support/error.h.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <new>

#include "vtpu/compiler/compiler.h"
#include "vtpu/config/config.h"
#include "vtpu/isa/assembler.h"
#include "vtpu/isa/program.h"
#include "vtpu/models/zoo.h"
#include "vtpu/runtime/npy.h"
#include "vtpu/runtime/runtime.h"
#include "vtpu/sim/report.h"
#include "vtpu/sim/simulator.h"
#include "vtpu/support/error.h"
#include "vtpu/support/files.h"
#include "vtpu/support/heap.h"
#include "vtpu/support/layout.h"
#include "collective_cmd.h"
#include "output_files.h"
#include "parallel_run.h"
#include "progress.h"
#include "sweep_cmd.h"

namespace {

using namespace vtpu;

std::filesystem::path default_output(const std::string& in) {
  std::filesystem::path p(in);
  p.replace_extension(".vtpu");
  return p;
}

int cmd_asm(const std::string& input, std::string output, const std::string& config) {
  isa::Program prog = isa::assemble_file(input);
  // Bind the program to a config: -c wins, else the file's .config directive.
  std::string cfg = !config.empty() ? config : prog.config_name;
  if (!cfg.empty()) {
    config::Config c = config::resolve(cfg);
    prog.config_fingerprint = config::fingerprint(c);
    prog.config_name = c.name;
  }
  if (output.empty()) output = default_output(input).string();
  isa::write_program(prog, output);
  std::cerr << fmt::format("vtpu asm: wrote {} ({} bundles{})\n", output, prog.code.size(),
                           prog.config_name.empty() ? "" : ", config " + prog.config_name);
  return kExitOk;
}

int cmd_disasm(const std::string& input) {
  isa::Program prog = isa::read_program(input);
  isa::decode_program(prog);  // reports illegal encodings with their bundle before printing
  std::cout << isa::disassemble(prog);
  return kExitOk;
}

int cmd_config_check(const std::string& what) {
  config::Config c = config::resolve(what);
  std::cout << fmt::format("# {}: valid; fingerprint 0x{:016x}\n", what, config::fingerprint(c));
  std::cout << config::to_yaml(c);
  return kExitOk;
}

int cmd_config_list() {
  for (const std::string& n : config::preset_names()) {
    config::Config c = config::load_preset(n);
    std::cout << fmt::format("{:<14} {}\n", n, c.description);
  }
  return kExitOk;
}

// One rule for run, compile and compare, stated in their --help: a zoo model brings its own
// config and dtype (`vtpu models`), any other model gets these; options given win.
constexpr const char* kDefaultConfig = "tpu-v4-core";
constexpr const char* kDefaultDtype = "bf16";
const std::string kConfigHelp = std::string("preset name or YAML file (default: a zoo model's own, as `vtpu models` lists; "
                                            "otherwise ") + kDefaultConfig + ")";
const std::string kDtypeHelp = std::string("int8 or bf16 (default: a zoo model's own; otherwise ") + kDefaultDtype + ")";

struct ModelChoice {
  std::string path, config, dtype;
  const models::ZooEntry* zoo = nullptr;  // set for a zoo name
};

// `model` is a file, or a zoo name (its model generated once); `config`/`dtype` empty: not given.
ModelChoice choose_model(const std::string& model, const std::string& config, const std::string& dtype) {
  ModelChoice c{model, config, dtype};
  if (!std::filesystem::exists(model)) {
    c.zoo = models::find(model);
    c.path = models::materialize(model, models::default_dir()).string();  // throws for an unknown name, listing the zoo
  }
  if (c.config.empty()) c.config = c.zoo ? c.zoo->default_config : kDefaultConfig;
  if (c.dtype.empty()) c.dtype = c.zoo ? c.zoo->default_dtype : kDefaultDtype;
  return c;
}

compiler::Precision precision_of(const std::string& dtype) {
  return dtype == "int8" ? compiler::Precision::Int8 : compiler::Precision::Bf16;  // CLI11 allows only these two
}

// --rnn-schedule: how LSTM/GRU layers read their input weights (compiler::RnnSchedule).
compiler::RnnSchedule rnn_schedule_of(const std::string& s) {
  return s == "per-step" ? compiler::RnnSchedule::PerStep : compiler::RnnSchedule::Hoisted;
}
constexpr const char* kRnnScheduleHelp =
    "LSTM/GRU input weights: hoisted (one matmul over all time steps) or per-step (each step its own, as TPU v1's "
    "software did; docs/compiler.md)";
// --calibration-method and --calibration-percentile, the same on compile and run.
void add_calibration_method(CLI::App* cmd, std::string& method, double& percentile) {
  cmd->add_option("--calibration-method", method,
                  "INT8: the range each activation's scale maps to 127: max (its largest magnitude), percentile (of its "
                  "magnitudes, --calibration-percentile) or entropy (the least information lost, as TensorRT "
                  "calibrates); docs/compiler.md")
      ->capture_default_str()
      ->check(CLI::IsMember({"max", "percentile", "entropy"}));
  cmd->add_option("--calibration-percentile", percentile,
                  "with --calibration-method percentile: the percentage of magnitudes inside the range")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 100.0));
}
constexpr const char* kShapeHelp =
    "NAME=1x3x640x640: every dimension of an input, for the dimensions the model leaves symbolic (repeatable; the "
    "first is the batch; docs/runtime.md)";

constexpr const char* kFixHelp =
    "NAME=VALUE[,VALUE...]: fix an input to values, compiled in as a constant (for inputs such as a sample rate that "
    "choose an If's branch; repeatable; docs/runtime.md)";

struct CompileArgs {
  std::string model, config, dtype, output, emit_asm, emit_mlir, image_norm = "unit", rnn_schedule = "hoisted";
  std::vector<std::string> calibrate, shapes, fixed;
  int64_t batch = 0;
  std::string calibration_method = "max";
  double calibration_percentile = 99.99;
};

compiler::CalibrationMethod calibration_method_of(const std::string& name) {
  if (name == "percentile") return compiler::CalibrationMethod::Percentile;
  if (name == "entropy") return compiler::CalibrationMethod::Entropy;
  return compiler::CalibrationMethod::Max;
}

// --shape NAME=DIMS, repeatable: every dimension of the input, "1x3x640x640" (or with commas).
// The batch of a shape and --batch must agree.
compiler::InputShapes shape_specs(const std::vector<std::string>& specs, int64_t batch) {
  compiler::InputShapes r;
  for (const std::string& spec : specs) {
    size_t eq = spec.find('=');
    auto bad = [&](const std::string& why) {
      return UserError(fmt::format("--shape '{}': {}; expected NAME=DIMS with DIMS like 1x3x640x640", spec, why));
    };
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) throw bad("no NAME= or no dimensions");
    std::vector<int64_t> dims;
    std::string rest = spec.substr(eq + 1);
    for (size_t at = 0; at <= rest.size();) {
      size_t end = rest.find_first_of("x,", at);
      if (end == std::string::npos) end = rest.size();
      std::string d = rest.substr(at, end - at);
      if (d.empty() || d.size() > 12 || d.find_first_not_of("0123456789") != std::string::npos || std::stoll(d) < 1)
        throw bad(fmt::format("'{}' is not a dimension (a whole number, 1 or more)", d));
      dims.push_back(std::stoll(d));
      at = end + 1;
    }
    std::string name = spec.substr(0, eq);
    if (r.count(name)) throw bad(fmt::format("input '{}' is given twice", name));
    if (batch > 0 && dims[0] != batch)
      throw bad(fmt::format("its batch (dimension 0) is {} and --batch is {}; give one of them", dims[0], batch));
    r[name] = std::move(dims);
  }
  return r;
}

// Repeatable NAME=TEXT options, in order: the error names `flag` and the `expected` form.
std::vector<std::pair<std::string, std::string>> name_specs(const char* flag, const char* expected,
                                                             const std::vector<std::string>& specs) {
  std::vector<std::pair<std::string, std::string>> r;
  for (const std::string& spec : specs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw UserError(fmt::format("{} '{}': expected {}", flag, spec, expected));
    r.emplace_back(spec.substr(0, eq), spec.substr(eq + 1));
  }
  return r;
}

// --fix NAME=VALUE[,VALUE...], each input once (the values are read by the compiler, which
// knows the input's type and shape).
compiler::FixedInputs fixed_specs(const std::vector<std::string>& specs) {
  compiler::FixedInputs r;
  for (auto& [name, values] : name_specs("--fix", "NAME=VALUE or NAME=VALUE,VALUE,... (e.g. --fix sr=16000)", specs))
    if (!r.emplace(name, values).second)
      throw UserError(fmt::format("--fix '{}={}': input '{}' is given twice", name, values, name));
  return r;
}

// --input and --calibrate: NAME=FILE.npy or NAME=IMAGE[,IMAGE...] (a name given again: the last).
std::map<std::string, std::string> file_specs(const char* flag, const std::vector<std::string>& specs) {
  std::map<std::string, std::string> r;
  for (auto& [name, file] : name_specs(flag, "NAME=FILE.npy or NAME=IMAGE[,IMAGE...]", specs)) r[name] = file;
  return r;
}

// INT8 of a model the user brought, calibrated on seeded random inputs: said loudly, because
// a trained model's real inputs may need other ranges and nothing else would show it.
constexpr const char* kRandomCalibration =
    "vtpu: warning: INT8 activation scales calibrated on seeded random inputs in [-1, 1], not on your data; a trained "
    "model whose real inputs have other ranges can lose its accuracy without any error. Give calibration data with "
    "--calibrate NAME=FILE.npy|IMAGE,...|FOLDER (docs/runtime.md)";

// Whether that warning applies: INT8 of the user's own ONNX model (a zoo model's seeded
// weights are calibrated on seeded inputs by design) without --calibrate.
bool calibrated_at_random(bool int8, const std::vector<std::string>& calibrate, const ModelChoice& m) {
  return int8 && calibrate.empty() && !m.zoo && std::filesystem::path(m.path).extension() == ".onnx";
}

int cmd_compile(const CompileArgs& a) {
  // A zoo name instead of a file: the zoo's model (generated once); the program goes to NAME.vtpu here.
  ModelChoice m = choose_model(a.model, a.config, a.dtype);
  config::Config cfg = config::resolve(m.config);
  compiler::CompileOptions opt;
  opt.precision = precision_of(m.dtype);
  opt.batch = a.batch;
  opt.shapes = shape_specs(a.shapes, a.batch);
  opt.fixed = fixed_specs(a.fixed);
  opt.calibration_method = calibration_method_of(a.calibration_method);
  opt.calibration_percentile = a.calibration_percentile;
  opt.rnn_schedule = rnn_schedule_of(a.rnn_schedule);
  opt.emit_mlir_stage = a.emit_mlir;
  std::filesystem::path model = m.path;
  require_readable_file(model, "the model (.onnx)");
  if (!a.calibrate.empty())
    opt.calibration = runtime::calibration_from_files(model, file_specs("--calibrate", a.calibrate), a.batch,
                                                      runtime::image_norm_from_name(a.image_norm), opt.precision,
                                                      opt.shapes, opt.fixed);
  cli::Progress progress(cli::Progress::shown_on_this_terminal(false));  // on a terminal only (cli/progress.h)
  progress.phase("compile", 0);
  opt.progress = [&](const std::string& stage, double done) { progress.update_share(done, stage); };
  compiler::CompileResult r = compiler::compile_onnx(model, cfg, opt);
  progress.finish();
  if (calibrated_at_random(opt.precision == compiler::Precision::Int8, a.calibrate, m))
    std::cerr << kRandomCalibration << "; `vtpu run` measures the error against fp32\n";
  std::string out = a.output.empty() ? (model == a.model ? default_output(a.model).string() : a.model + ".vtpu") : a.output;
  isa::write_program(r.program, out);
  if (!a.emit_asm.empty()) write_file(a.emit_asm, r.assembly);
  if (!a.emit_mlir.empty()) std::cout << r.mlir;
  std::cerr << fmt::format("vtpu compile: wrote {} ({} bundles, {} layers, config {}, {})\n", out, r.program.code.size(),
                           r.bounds.size(), cfg.name, m.dtype);
  return kExitOk;
}

struct RunArgs {
  std::string model, config, dtype, output_dir, report, trace, csv, html, image_norm, rnn_schedule = "hoisted";
  std::vector<std::string> inputs, calibrate, shapes, fixed;
  int64_t batch = 0;
  std::string calibration_method = "max";
  double calibration_percentile = 99.99;
  uint64_t seed = 1;
  bool check = false, quiet = false;
  std::string parallel;  // "", "data", "pipeline", "tensor": across the config's chips (parallel_run.h)
  int64_t micro_batches = 0;
  bool no_baseline = false;
  std::string reference = "auto";
  uint64_t max_cycles = sim::SimOptions{}.max_cycles;
};

struct CompareArgs {
  std::string model, config;
  std::vector<std::string> dtypes{"int8", "bf16"}, shapes, inputs, calibrate, fixed;
  std::string image_norm, calibration_method = "max";
  double calibration_percentile = 99.99;
  uint64_t seed = 1;
  int64_t batch = 0, accuracy_images = 1000;
};

int cmd_compare(CompareArgs a) {
  ModelChoice m = choose_model(a.model, a.config, "bf16");
  a.model = m.path;
  std::string dataset = m.zoo ? m.zoo->dataset : "";
  config::Config cfg = config::resolve(m.config);
  std::vector<compiler::Precision> ps;
  for (const std::string& d : a.dtypes) ps.push_back(precision_of(d));
  runtime::RunOptions o;
  o.seed = a.seed;
  o.batch = a.batch;
  o.shapes = shape_specs(a.shapes, a.batch);
  o.fixed = fixed_specs(a.fixed);
  // The same inputs and INT8 calibration as `run` takes them (the calibration for int8 only).
  for (const auto& [name, file] : file_specs("--input", a.inputs)) o.input_files[name] = file;
  o.calibration_files = file_specs("--calibrate", a.calibrate);
  o.calibration_method = calibration_method_of(a.calibration_method);
  o.calibration_percentile = a.calibration_percentile;
  if (!a.image_norm.empty()) o.image_norm = runtime::image_norm_from_name(a.image_norm);
  else if (m.zoo && !m.zoo->image_norm.empty()) o.image_norm = runtime::image_norm_from_name(m.zoo->image_norm);
  if (calibrated_at_random(std::count(ps.begin(), ps.end(), compiler::Precision::Int8) > 0, a.calibrate, m))
    std::cerr << kRandomCalibration << "; the int8 row's error and the table by layer show what it costs\n";
  auto rows = runtime::compare(a.model, cfg, ps, o);
  // Classifiers trained on a dataset vtpu can load also get their test-set accuracy.
  if (dataset == "fashion-mnist" && a.accuracy_images > 0)
    for (size_t i = 0; i < rows.size(); ++i) {
      if (!rows[i].error.empty()) continue;
      auto acc = runtime::fashion_mnist_accuracy(a.model, cfg, ps[i], a.accuracy_images);
      rows[i].accuracy = acc.chip, rows[i].fp32_accuracy = acc.fp32, rows[i].accuracy_images = acc.images;
    }
  std::cout << fmt::format("{} on {}:\n", a.model, cfg.name) << runtime::compare_table(rows);
  for (const auto& r : rows)
    if (!r.quant_error_table.empty()) std::cout << "\n" << r.quant_error_table;
  for (const auto& r : rows)
    if (!r.error.empty()) return kExitUserError;
  return kExitOk;
}

int cmd_models() {
  size_t nw = 4, cw = 6;
  for (const auto& e : models::zoo()) nw = std::max(nw, e.name.size()), cw = std::max(cw, e.default_config.size());
  std::cout << fmt::format("{:<{}} {:<{}} {:<6} {}\n", "name", nw, "config", cw, "dtype", "model");
  for (const auto& e : models::zoo())
    std::cout << fmt::format("{:<{}} {:<{}} {:<6} {}\n{:<{}}shape: {}\n", e.name, nw, e.default_config, cw, e.default_dtype,
                             e.description, "", nw + cw + 9, e.source);
  std::cout << "run one with: vtpu run NAME [-c CONFIG] [--dtype int8|bf16]\n";
  return kExitOk;
}

int cmd_run(RunArgs a) {
  // A zoo name instead of a file: generate the model (once) and use its defaults.
  ModelChoice m = choose_model(a.model, a.config, a.dtype);
  std::string zoo_norm = m.zoo ? m.zoo->image_norm : "";  // a zoo model's own image scaling
  a.model = m.path, a.dtype = m.dtype;
  config::Config cfg = config::resolve(m.config);
  runtime::RunOptions opt;
  opt.precision = precision_of(a.dtype);
  opt.batch = a.batch;
  opt.shapes = shape_specs(a.shapes, a.batch);
  opt.fixed = fixed_specs(a.fixed);
  opt.calibration_method = calibration_method_of(a.calibration_method);
  opt.calibration_percentile = a.calibration_percentile;
  opt.rnn_schedule = rnn_schedule_of(a.rnn_schedule);
  opt.seed = a.seed;
  opt.max_cycles = a.max_cycles;
  opt.check = a.check || a.reference != "auto";
  opt.check_reference = a.reference;
  opt.record_trace = !a.trace.empty();
  for (const auto& [name, file] : file_specs("--input", a.inputs)) opt.input_files[name] = file;
  opt.calibration_files = file_specs("--calibrate", a.calibrate);
  // Image scaling: --image-norm, else the zoo model's own, else pixel / 255.
  if (!a.image_norm.empty()) opt.image_norm = runtime::image_norm_from_name(a.image_norm);
  else if (!zoo_norm.empty()) opt.image_norm = runtime::image_norm_from_name(zoo_norm);
  // The phases and how far the simulation is, on a terminal only (cli/progress.h).
  cli::Progress progress(cli::Progress::shown_on_this_terminal(a.quiet));
  opt.phase = [&](const std::string& phase, uint64_t total) { progress.phase(phase, total); };
  opt.compile_progress = [&](const std::string& stage, double done) { progress.update_share(done, stage); };
  opt.progress = [&](uint64_t cycle, uint64_t bundle) {
    progress.update(bundle, fmt::format("{:.1f}M cycles", double(cycle) / 1e6));
  };
  // INT8 of the user's own ONNX model without calibration data: warned, and (on one chip) measured.
  const bool random_calibration = calibrated_at_random(opt.precision == compiler::Precision::Int8, a.calibrate, m);
  if (!a.parallel.empty()) {
    if (random_calibration) std::cerr << kRandomCalibration << "\n";
    cli::ParallelArgs p{a.parallel, a.model, a.dtype, a.report, a.trace, a.output_dir, a.seed, a.quiet, !a.no_baseline,
                        a.micro_batches};
    int rc = cli::run_parallel_model(p, cfg, opt);
    progress.finish();
    return rc;
  }
  if (random_calibration) opt.check = true;
  runtime::ModelRun run = runtime::run_model(a.model, cfg, opt);
  progress.finish();
  if (random_calibration) {
    std::cerr << kRandomCalibration << ".\n";
    for (const auto& c : run.checks)
      std::cerr << fmt::format("vtpu: measured on this run's inputs against {}: '{}' max |error| {:.4g} ({:.2f}% of its "
                               "largest |value|)\n",
                               run.check_reference_short, c.output, c.max_abs_error,
                               c.max_reference > 0 ? 100 * c.max_abs_error / c.max_reference : 0.0);
  }
  if (!a.quiet) {
    std::cout << fmt::format("{} on {} ({}):\n", a.model, cfg.name, a.dtype);
    std::cout << runtime::layer_table(run) << "\n" << runtime::totals_text(run);
  }
  if (!a.output_dir.empty())
    cli::write_output_files(a.output_dir, run.program.tensors, run.outputs, run.output_shapes, run.sim.outputs,
                            cli::model_output_types(a.model));
  if (!a.report.empty()) {
    sim::ReportMeta meta{VTPU_VERSION, a.model, a.seed, run.inputs_used};
    write_file(a.report, sim::report_json(run.sim, cfg, meta));
  }
  if (!a.html.empty())
    write_file(a.html, runtime::html_report(run, fmt::format("{} on {} ({})", std::filesystem::path(a.model).stem().string(),
                                                             cfg.name, a.dtype)));
  if (!a.csv.empty()) write_file(a.csv, runtime::layers_csv(run));
  if (!a.trace.empty()) {
    OutputFile f(a.trace);
    sim::write_trace(f.stream(), run.sim.trace, run.program.tags, cfg.clock_mhz);
    f.close();
  }
  return runtime::check_failed(run) ? kExitUserError : kExitOk;
}

struct SimArgs {
  std::string program, config, output_dir, report, trace;
  std::vector<std::string> inputs;
  uint64_t seed = 1;
  uint64_t max_cycles = sim::SimOptions{}.max_cycles;
  bool quiet = false;
};

int cmd_sim(const SimArgs& a) {
  isa::Program prog = isa::read_program(a.program);
  if (a.config.empty() && prog.config_name.empty())
    throw UserError(fmt::format("{}: the program names no config; pass one with -c (vtpu config list shows the "
                                "presets)",
                                a.program));
  // A config the program names is a preset: a name inside a file from anywhere must not make
  // vtpu read files the user did not name. A YAML config is given with -c.
  config::Config cfg = !a.config.empty() ? config::resolve(a.config) : config::load_preset(prog.config_name);

  std::map<std::string, std::vector<uint8_t>> inputs;
  sim::ReportMeta meta;
  meta.tool_version = VTPU_VERSION;
  meta.program = a.program;
  meta.seed = a.seed;
  for (const std::string& spec : a.inputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UserError(fmt::format("--input '{}': expected NAME=FILE.npy", spec));
    std::string name = spec.substr(0, eq), file = spec.substr(eq + 1);
    const isa::TensorInfo* t = nullptr;
    for (const auto& ti : prog.tensors)
      if (ti.name == name && ti.role == isa::TensorRole::Input) t = &ti;
    if (!t) {
      std::string names;
      for (const auto& ti : prog.tensors)
        if (ti.role == isa::TensorRole::Input) names += " " + ti.name;
      throw UserError(fmt::format("--input {}: the program has no input '{}'; its inputs are:{}", spec, name,
                                  names.empty() ? " (none)" : names));
    }
    inputs[name] = runtime::tensor_bytes_from_npy(runtime::read_npy(file), t->dtype, t->shape, name, file);
    meta.inputs.push_back(name + "=" + file);
  }
  for (const auto& t : prog.tensors)
    if (t.role == isa::TensorRole::Input && !inputs.count(t.name)) meta.inputs.push_back(t.name + "=random");
  sim::check_fits_memory(cfg, prog);  // before the missing inputs are made up, byte by byte
  sim::fill_missing_inputs(prog, a.seed, inputs);

  sim::SimOptions opt;
  opt.max_cycles = a.max_cycles;
  opt.record_trace = !a.trace.empty();
  // How far the simulation is, on a terminal only (cli/progress.h), against the cycle limit.
  cli::Progress progress(cli::Progress::shown_on_this_terminal(a.quiet));
  progress.phase("simulate", prog.code.size());
  opt.progress = [&](uint64_t cycle, uint64_t bundle) {
    progress.update(bundle, fmt::format("{:.1f}M cycles (stops at --max-cycles {:.0f}M)", double(cycle) / 1e6,
                                        double(a.max_cycles) / 1e6));
  };
  sim::RunResult r = sim::simulate(cfg, prog, inputs, opt);
  progress.finish();

  if (!a.quiet) std::cout << sim::summary_table(r, cfg);
  if (!a.output_dir.empty()) {
    make_output_dir(a.output_dir);
    for (const auto& t : prog.tensors) {
      if (t.role != isa::TensorRole::Output) continue;
      auto path = file_in_dir(a.output_dir, t.name, ".npy", "output tensor");
      const std::vector<uint8_t>& bytes = r.outputs.at(t.name);
      if (std::string type = cli::descr_of_model_type(t.model_type); t.dtype == isa::Dtype::Int32 && !type.empty()) {
        // In the model's integer type (int64, bool, ...) when every value fits it, as `vtpu run` writes it.
        runtime::write_npy(path, cli::integer_output(cli::int32_values(bytes), t.shape, type));
        continue;
      }
      runtime::write_npy(path, runtime::npy_from_tensor_bytes(bytes, t.dtype, t.shape));
    }
  }
  if (!a.report.empty()) write_file(a.report, sim::report_json(r, cfg, meta));
  if (!a.trace.empty()) {
    OutputFile f(a.trace);
    sim::write_trace(f.stream(), r.trace, prog.tags, cfg.clock_mhz);
    f.close();
  }
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  vtpu::heap_on_huge_pages();
  CLI::App app{"vtpu: a virtual TPU (cycle-accurate simulator, compiler, RTL cross-check)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("vtpu ") + VTPU_VERSION);

  std::string asm_in, asm_out, asm_cfg;
  auto* asm_cmd = app.add_subcommand("asm", "assemble a .s file into a .vtpu program");
  asm_cmd->add_option("FILE", asm_in, "assembly source")->required();
  asm_cmd->add_option("-o,--output", asm_out, "output program (default: FILE with .vtpu)");
  asm_cmd->add_option("-c,--config", asm_cfg, "preset name or YAML file the program targets");

  std::string dis_in;
  auto* dis_cmd = app.add_subcommand("disasm", "print a .vtpu program as assembly");
  dis_cmd->add_option("FILE", dis_in, "program")->required();

  auto* cfg_cmd = app.add_subcommand("config", "validate and show configs");
  cfg_cmd->require_subcommand(1);
  std::string cfg_file;
  auto* check_cmd = cfg_cmd->add_subcommand("check", "validate a config and print it with defaults filled in");
  check_cmd->add_option("FILE", cfg_file, "preset name or YAML file")->required();
  auto* list_cmd = cfg_cmd->add_subcommand("list", "list the built-in presets");

  CompileArgs compile_args;
  auto* compile_cmd = app.add_subcommand("compile", "compile an ONNX model into a .vtpu program");
  compile_cmd->add_option("MODEL", compile_args.model, "model (.onnx) or zoo name (vtpu models)")->required();
  const auto dtypes = CLI::IsMember({"int8", "bf16"});
  const auto norms = CLI::Validator([](std::string& s) { return runtime::image_norm_error(s); }, "NORM");
  const auto batch = CLI::Range(int64_t(1), int64_t(1) << 20);
  compile_cmd->add_option("-c,--config", compile_args.config, kConfigHelp);
  compile_cmd->add_option("--dtype", compile_args.dtype, kDtypeHelp)->check(dtypes);
  compile_cmd->add_option("-o,--output", compile_args.output, "output program (default: MODEL with .vtpu)");
  compile_cmd->add_option("--batch", compile_args.batch, "batch size, 1 or more (default: the model's)")->check(batch);
  compile_cmd->add_option("--shape", compile_args.shapes, kShapeHelp);
  compile_cmd->add_option("--fix", compile_args.fixed, kFixHelp);
  add_calibration_method(compile_cmd, compile_args.calibration_method, compile_args.calibration_percentile);
  compile_cmd->add_option("--emit-asm", compile_args.emit_asm, "also write the program as assembly");
  compile_cmd->add_option("--rnn-schedule", compile_args.rnn_schedule, kRnnScheduleHelp)
      ->capture_default_str()
      ->check(CLI::IsMember({"hoisted", "per-step"}));
  compile_cmd->add_option("--emit-mlir", compile_args.emit_mlir, "print the IR after a stage: tosa or tpu")
      ->check(CLI::IsMember({"tosa", "tpu"}));
  compile_cmd->add_option("--calibrate", compile_args.calibrate,
                          "NAME=FILE.npy (any whole number of batches of the input, the model's layout), "
                          "NAME=IMAGE[,IMAGE...] or NAME=FOLDER (its .npy or image files): INT8 calibration data for "
                          "every input (repeatable); default: seeded random");
  compile_cmd->add_option("--image-norm", compile_args.image_norm,
                          "how calibration image pixels become inputs: unit, imagenet or mean=M[,M,M]:std=S[,S,S]")
      ->capture_default_str()
      ->check(norms);

  RunArgs run_args;
  auto* run_cmd = app.add_subcommand("run", "compile (if needed) and run a model, and show where time and energy go");
  run_cmd->add_option("MODEL", run_args.model, "model (.onnx), program (.vtpu) or zoo name (vtpu models)")->required();
  run_cmd->add_option("-c,--config", run_args.config, kConfigHelp);
  run_cmd->add_option("--dtype", run_args.dtype, kDtypeHelp)->check(dtypes);
  run_cmd->add_option("--batch", run_args.batch, "batch size, 1 or more (default: the model's)")->check(batch);
  run_cmd->add_option("--shape", run_args.shapes, kShapeHelp);
  run_cmd->add_option("--fix", run_args.fixed, kFixHelp);
  add_calibration_method(run_cmd, run_args.calibration_method, run_args.calibration_percentile);
  run_cmd->add_option("--rnn-schedule", run_args.rnn_schedule, kRnnScheduleHelp)
      ->capture_default_str()
      ->check(CLI::IsMember({"hoisted", "per-step"}));
  run_cmd->add_option("--input", run_args.inputs,
                      "NAME=FILE.npy (float32, the model's layout) or NAME=IMAGE[,IMAGE...] (PNG, JPEG, BMP, PPM; one per "
                      "batch element, resized and center-cropped); others are seeded random");
  run_cmd->add_option("--image-norm", run_args.image_norm,
                      "how image pixels become inputs: unit (pixel / 255), imagenet (ImageNet mean/std) or "
                      "mean=M[,M,M]:std=S[,S,S] ((pixel / 255 - mean) / std); default: the zoo model's, else unit")
      ->check(norms);
  run_cmd->add_option("--calibrate", run_args.calibrate,
                      "NAME=FILE.npy, NAME=IMAGE[,IMAGE...] or NAME=FOLDER: INT8 calibration data for every input (repeatable; as for "
                      "compile); default: seeded random");
  run_cmd->add_option("--seed", run_args.seed, "seed for generated inputs")->capture_default_str();
  run_cmd->add_option("--max-cycles", run_args.max_cycles, "stop with an error past this many cycles")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  run_cmd->add_option("--output-dir", run_args.output_dir, "write every output as NAME.npy (float32) here");
  run_cmd->add_option("--report", run_args.report, "write the JSON report here");
  auto* run_csv = run_cmd->add_option("--csv", run_args.csv, "write the per-layer table as CSV here");
  auto* run_html = run_cmd->add_option("--html", run_args.html, "write a self-contained HTML report with charts here");
  run_cmd->add_option("--trace", run_args.trace, "write a Chrome-trace/Perfetto timeline here");
  auto* run_check = run_cmd->add_flag("--check", run_args.check,
                                     "compare the outputs with an fp32 reference: onnxruntime on the ONNX file, or vtpu's "
                                     "fp32 interpreter when onnxruntime cannot run (the report says which)");
  auto* run_reference = run_cmd->add_option("--reference", run_args.reference, "the reference --check uses (implies --check)")
                            ->check(CLI::IsMember({"auto", "onnxruntime", "interpreter"}))
                            ->capture_default_str();
  auto* run_parallel =
      run_cmd
          ->add_option("--parallel", run_args.parallel,
                       "split the model across the config's chips: data (the batch), pipeline (the layers, a stage "
                       "per chip) or tensor (the matmuls' weights, partial sums all-reduced); docs/runtime.md, "
                       "\"Models across chips\"")
          ->check(CLI::IsMember({"data", "pipeline", "tensor"}))
          ->excludes(run_csv, run_html, run_check, run_reference);
  run_cmd->add_flag("--no-baseline", run_args.no_baseline, "with --parallel: do not also run the batch on one chip")
      ->needs(run_parallel);
  run_cmd
      ->add_option("--micro-batches", run_args.micro_batches,
                   "with --parallel pipeline: the equal parts the batch flows through the stages in (default: the "
                   "smallest divisor of the batch at least the number of chips)")
      ->check(CLI::PositiveNumber)
      ->needs(run_parallel);
  run_cmd->add_flag("-q,--quiet", run_args.quiet, "do not print the tables or the progress line");

  auto* models_cmd = app.add_subcommand("models", "list the model zoo");

  CompareArgs cmp_args;
  auto* cmp_cmd = app.add_subcommand("compare", "run a model in several precisions and show them side by side");
  cmp_cmd->add_option("MODEL", cmp_args.model, "model (.onnx) or zoo name")->required();
  cmp_cmd->add_option("-c,--config", cmp_args.config, kConfigHelp);
  cmp_cmd->add_option("--dtypes", cmp_args.dtypes, "comma-separated precisions, int8 and/or bf16")
      ->delimiter(',')
      ->check(dtypes)
      ->capture_default_str();
  cmp_cmd->add_option("--seed", cmp_args.seed, "seed for generated inputs")->capture_default_str();
  cmp_cmd->add_option("--batch", cmp_args.batch, "batch size, 1 or more (default: the model's)")->check(batch);
  cmp_cmd->add_option("--shape", cmp_args.shapes, kShapeHelp);
  cmp_cmd->add_option("--fix", cmp_args.fixed, kFixHelp);
  cmp_cmd->add_option("--input", cmp_args.inputs, "NAME=FILE.npy or NAME=IMAGE[,IMAGE...]: the inputs every precision runs (as for run)");
  cmp_cmd->add_option("--image-norm", cmp_args.image_norm,
                      "how image pixels become inputs: unit, imagenet or mean=M[,M,M]:std=S[,S,S]; default: the zoo "
                      "model's, else unit")
      ->check(norms);
  cmp_cmd->add_option("--calibrate", cmp_args.calibrate,
                      "NAME=FILE.npy, NAME=IMAGE[,IMAGE...] or NAME=FOLDER: INT8 calibration data (as for run; the int8 "
                      "row only)");
  add_calibration_method(cmp_cmd, cmp_args.calibration_method, cmp_args.calibration_percentile);
  cmp_cmd->add_option("--accuracy-images", cmp_args.accuracy_images,
                      "test images for the accuracy of dataset-trained zoo models (0: skip)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);

  SimArgs sim_args;
  auto* sim_cmd = app.add_subcommand("sim", "run a .vtpu program on the cycle-accurate chip model");
  sim_cmd->add_option("PROGRAM", sim_args.program, "program (.vtpu)")->required();
  sim_cmd->add_option("-c,--config", sim_args.config, "preset name or YAML file (default: the program's config)");
  sim_cmd->add_option("--input", sim_args.inputs, "NAME=FILE.npy for an input tensor (repeatable); others are seeded random");
  sim_cmd->add_option("--seed", sim_args.seed, "seed for generated inputs")->capture_default_str();
  sim_cmd->add_option("--output-dir", sim_args.output_dir,
                      "write every output tensor as NAME.npy here, as the program stores it (integer outputs in the "
                      "model's integer type: int64, bool, ...)");
  sim_cmd->add_option("--report", sim_args.report, "write the JSON report (docs/reports.md) here");
  sim_cmd->add_option("--trace", sim_args.trace, "write a Chrome-trace/Perfetto timeline here");
  sim_cmd->add_option("--max-cycles", sim_args.max_cycles, "stop with an error past this many cycles")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sim_cmd->add_flag("-q,--quiet", sim_args.quiet, "do not print the summary table");

  std::function<int()> collective_action;
  auto* collective_cmd = vtpu::cli::add_collective_command(app, collective_action);
  vtpu::cli::SweepCommand sweep_cmd = vtpu::cli::add_sweep_command(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }

  try {
    // Exit code 3 end to end, for the test of every documented exit code (docs/runtime.md).
    if (std::getenv("VTPU_TEST_INTERNAL_ERROR")) throw InternalError("VTPU_TEST_INTERNAL_ERROR is set");
    if (*asm_cmd) return with_stdout_checked(cmd_asm(asm_in, asm_out, asm_cfg));
    if (*collective_cmd) return with_stdout_checked(collective_action());
    if (*sim_cmd) return with_stdout_checked(cmd_sim(sim_args));
    if (*compile_cmd) return with_stdout_checked(cmd_compile(compile_args));
    if (*run_cmd) return with_stdout_checked(cmd_run(run_args));
    if (*models_cmd) return with_stdout_checked(cmd_models());
    if (*cmp_cmd) return with_stdout_checked(cmd_compare(cmp_args));
    if (*dis_cmd) return with_stdout_checked(cmd_disasm(dis_in));
    if (*check_cmd) return with_stdout_checked(cmd_config_check(cfg_file));
    if (*list_cmd) return with_stdout_checked(cmd_config_list());
    if (*sweep_cmd.command) return with_stdout_checked(sweep_cmd.run());
  } catch (const UserError& e) {
    std::cerr << e.what() << "\n";
    return kExitUserError;
  } catch (const std::bad_alloc&) {
    // Sizes are checked against the config before anything is allocated from them; what is
    // left is an input that fits the chip but not the memory this process may use.
    std::cerr << "vtpu: out of host memory: this input needs more memory than the machine (or its ulimit -v) gives "
                 "vtpu\n";
    return kExitUserError;
  } catch (const std::exception& e) {
    std::cerr << "vtpu: internal error: " << e.what()
              << "\n  This is a bug in vtpu; please report it with the command that caused it.\n";
    return kExitInternal;
  }
  return kExitUsage;
}
