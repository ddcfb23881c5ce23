// vtpu collective: plans, emits and simulates a collective on a multi-chip config and prints
// its time and bus bandwidth beside the alpha-beta model (docs/collectives.md, docs/runtime.md).
#include "collective_cmd.h"
#include "output_files.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "vtpu/collectives/collectives.h"
#include "vtpu/config/config.h"
#include "vtpu/config/topology.h"
#include "vtpu/sim/system_report.h"
#include "vtpu/support/files.h"
#include "vtpu/support/error.h"

namespace vtpu::cli {
namespace {

struct Args {
  std::string kind, bytes, config = "tpu-v4-4x4x4", dtype = "fp32", piece, estimate = "auto", report, trace, emit_asm;
  std::string algorithm = "ring";
  uint64_t seed = 1;
  bool check = false, quiet = false;
};

// Above this many bytes over all chips the inputs, outputs and their reference would not fit
// comfortably in memory: such runs time the collective on zeros unless --check is given.
constexpr uint64_t kCheckLimit = 256ull << 20;
// Above this many chips a torus is estimated by symmetry unless --estimate full is given.
constexpr uint32_t kFullLimit = 256;

std::string us(double s) { return fmt::format("{:.3f} us", s * 1e6); }
std::string gbs(double b) { return fmt::format("{:.2f} GB/s", b / 1e9); }

void print(const collectives::Outcome& o, const config::Config& cfg, const Args& a) {
  const auto& p = o.plan;
  const config::Topology t(cfg);
  std::cout << fmt::format("{} of {} ({}) on {}: {} chips in a {} {}, {} links of {} GB/s per direction per chip\n",
                           collectives::kind_name(p.spec.kind), config::format_size(p.spec.bytes), a.dtype, cfg.name,
                           p.chips, fmt::join(cfg.ici.shape, "x"), cfg.ici.wraparound ? "torus" : "mesh",
                           cfg.ici.links, cfg.ici.link_bandwidth_gbytes_per_s);
  if (!p.phases.empty() && p.phases[0].op == collectives::Phase::Op::OneShot)
    std::cout << "one shot: every chip sends its buffer to every other and adds them all\n";
  std::cout << fmt::format("pieces of {}; simulated {}\n", config::format_size(p.piece_bytes),
                           o.system.symmetric ? fmt::format("by symmetry: chip 0 stands for all {}", p.chips)
                                              : fmt::format("chip by chip ({} chips)", o.system.chips.size()));
  double ratio = o.bound.seconds() > 0 ? o.seconds / o.bound.seconds() : 0;
  std::cout << fmt::format("\n{:<22} {:>14}   ({} cycles at {} MHz)\n", "time", us(o.seconds), o.system.total_cycles,
                           cfg.clock_mhz);
  std::cout << fmt::format("{:<22} {:>14}   (bandwidth {} + latency {}); time / model = {:.3f}\n", "alpha-beta model",
                           us(o.bound.seconds()), us(o.bound.beta_s), us(o.bound.alpha_s), ratio);
  std::cout << fmt::format("{:<22} {:>14}   (S / t)\n", "algorithm bandwidth", gbs(o.algorithm_bandwidth));
  std::cout << fmt::format("{:<22} {:>14}   ({}; per chip, to compare with its links)\n", "bus bandwidth",
                           gbs(o.bus_bandwidth),
                           p.spec.kind == collectives::Kind::AllReduce ? "2 (N - 1) / N x S / t" : "(N - 1) / N x S / t");
  double link_pj = 0;
  for (const auto& l : o.system.links) link_pj += sim::link_energy_pj(l, cfg);
  if (o.system.symmetric) link_pj *= double(t.links().size()) / double(std::max<size_t>(1, o.system.links.size()));
  std::cout << fmt::format("{:<22} {:>14}   ({} pJ/bit x bytes x links crossed{})\n", "link energy",
                           fmt::format("{:.3f} uJ", link_pj * 1e-6), cfg.energy.ici_pj_per_bit,
                           o.system.symmetric ? ", all links by symmetry" : "");
  std::cout << "\nmodel terms per phase:\n";
  for (const auto& term : o.bound.terms) std::cout << "  " << term << "\n";
  if (o.checked) std::cout << "\noutputs: every chip's output equals the " << collectives::kind_name(p.spec.kind) << " of the inputs\n";
  else
    std::cout << fmt::format("\noutputs: not checked ({}); --check checks them\n",
                             o.system.symmetric ? "estimated by symmetry: only chip 0 runs, on data standing for others'"
                                                : "timed on zeros: the inputs and results of every chip would not fit the "
                                                  "memory kept for checks");
  std::cout << "\n" << sim::system_summary_table(o.system, cfg);
}

int run(const Args& a) {
  config::Config cfg = config::resolve(a.config);
  collectives::Spec s;
  s.kind = *collectives::parse_kind(a.kind);
  s.bytes = config::parse_size(a.bytes, "--bytes");
  s.piece_bytes = a.piece.empty() ? 0 : config::parse_size(a.piece, "--piece");
  if (a.algorithm != "ring" && s.kind != collectives::Kind::AllReduce)
    throw UserError(fmt::format("--algorithm {}: only an all-reduce has another algorithm than its rings", a.algorithm));
  s.algorithm = a.algorithm == "one-shot" ? collectives::Spec::Algorithm::OneShot
                : a.algorithm == "auto"   ? collectives::Spec::Algorithm::Auto
                                          : collectives::Spec::Algorithm::Ring;
  auto dt = isa::parse_dtype(a.dtype);
  s.dtype = *dt;
  collectives::RunOptions ro;
  ro.seed = a.seed;
  ro.record_trace = !a.trace.empty();
  const bool torus = cfg.ici.wraparound && cfg.ici.twist.empty();
  if (a.estimate == "symmetry" && !torus)
    throw UserError(fmt::format("--estimate symmetry: config '{}' is a {}, whose chips do not all look alike; use "
                                "--estimate full",
                                cfg.name, cfg.ici.wraparound ? "twisted torus" : "mesh"));
  ro.symmetric = a.estimate == "symmetry" || (a.estimate == "auto" && torus && cfg.system.chips > kFullLimit);
  if (ro.symmetric && a.check)
    throw UserError("--check needs every chip's outputs, which estimating by symmetry does not have; add --estimate full");
  ro.data = a.check || (!ro.symmetric && uint64_t(cfg.system.chips) * s.bytes <= kCheckLimit);

  collectives::Plan p = collectives::plan(cfg, s);
  if (!a.emit_asm.empty()) {
    make_output_dir(a.emit_asm);
    for (uint32_t c = 0; c < (ro.symmetric ? 1 : p.chips); ++c)
      write_file(std::filesystem::path(a.emit_asm) / fmt::format("chip{}.s", c),
                 collectives::assembly(cfg, p, c, {ro.data && !ro.symmetric}));
  }
  collectives::Outcome o = collectives::run(cfg, s, ro);
  if (!o.mismatch.empty())
    throw InternalError(fmt::format("the simulated {} gave a wrong result: {}", collectives::kind_name(s.kind), o.mismatch));
  if (!a.quiet) print(o, cfg, a);
  if (!a.report.empty()) {
    sim::ReportMeta meta;
    meta.tool_version = VTPU_VERSION;
    meta.program = fmt::format("{} {}", a.kind, a.bytes);
    meta.seed = a.seed;
    nlohmann::json j = nlohmann::json::parse(sim::system_report_json(o.system, cfg, meta));
    j["collective"] = {{"kind", a.kind},
                       {"bytes", s.bytes},
                       {"dtype", a.dtype},
                       {"piece_bytes", p.piece_bytes},
                       {"algorithm", !p.phases.empty() && p.phases[0].op == collectives::Phase::Op::OneShot ? "one-shot" : "ring"},
                       {"seconds", o.seconds},
                       {"algorithm_bandwidth_bytes_per_s", o.algorithm_bandwidth},
                       {"bus_bandwidth_bytes_per_s", o.bus_bandwidth},
                       {"model_seconds", o.bound.seconds()},
                       {"model_bandwidth_seconds", o.bound.beta_s},
                       {"model_latency_seconds", o.bound.alpha_s},
                       {"model_terms", o.bound.terms},
                       {"checked", o.checked}};
    write_file(a.report, j.dump(2) + "\n");
  }
  if (!a.trace.empty()) {
    OutputFile f(a.trace);
    std::vector<std::vector<std::string>> tags(o.system.chips.size(), std::vector<std::string>{""});
    sim::write_system_trace(f.stream(), o.system, cfg, tags);
    f.close();
  }
  return kExitOk;
}

}  // namespace

CLI::App* add_collective_command(CLI::App& app, std::function<int()>& action) {
  auto a = std::make_shared<Args>();
  auto* c = app.add_subcommand("collective",
                               "simulate a collective on a multi-chip config: time, bus bandwidth and the alpha-beta model");
  c->add_option("KIND", a->kind, "all-reduce, all-gather, reduce-scatter or all-to-all")
      ->required()
      ->check(CLI::IsMember({"all-reduce", "all-gather", "reduce-scatter", "all-to-all"}));
  c->add_option("--bytes", a->bytes, "S, the per-chip buffer (e.g. 64MiB); docs/collectives.md says what it is per kind")
      ->required();
  c->add_option("-c,--config", a->config, "multi-chip preset or YAML file")->capture_default_str();
  c->add_option("--dtype", a->dtype, "element type the reductions add")
      ->check(CLI::IsMember({"fp32", "bf16", "int32"}))
      ->capture_default_str();
  c->add_option("--piece", a->piece, "pipelining piece size (default: the planner's)");
  c->add_option("--algorithm", a->algorithm,
                "all-reduce: ring (reduce-scatter then all-gather over rings per dimension), one-shot (every chip sends "
                "its buffer to every other) or auto (the faster by the alpha-beta model that fits the unified buffer)")
      ->check(CLI::IsMember({"ring", "one-shot", "auto"}))
      ->capture_default_str();
  c->add_option("--estimate", a->estimate,
                "full: every chip; symmetry: chip 0 for all (tori); auto: symmetry above 256 chips")
      ->check(CLI::IsMember({"auto", "full", "symmetry"}))
      ->capture_default_str();
  c->add_flag("--check", a->check, "give every chip inputs and check every output (default: when they fit in memory)");
  c->add_option("--seed", a->seed, "seed of the inputs")->capture_default_str();
  c->add_option("--report", a->report, "write the JSON report (docs/reports.md, multi-chip) here");
  c->add_option("--trace", a->trace, "write a Perfetto timeline: a process per chip and one for the links");
  c->add_option("--emit-asm", a->emit_asm, "write each chip's program as assembly into this directory");
  c->add_flag("-q,--quiet", a->quiet, "do not print the tables");
  action = [a] { return run(*a); };
  return c;
}

}  // namespace vtpu::cli
