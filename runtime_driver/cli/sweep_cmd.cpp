// vtpu sweep FILE | export | merge | plot (docs/sweeps.md).
#include "sweep_cmd.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "vtpu/support/error.h"
#include "vtpu/support/files.h"
#include "vtpu/sweep/database.h"
#include "vtpu/sweep/export.h"
#include "vtpu/sweep/report.h"
#include "vtpu/sweep/runner.h"
#include "vtpu/sweep/slurm.h"
#include "vtpu/sweep/spec.h"

namespace vtpu::cli {
namespace fs = std::filesystem;

namespace {

struct Args {
  std::string file, db, cache, model_dir, shard, emit_slurm, partition, time;
  int jobs = 0;
  uint32_t tasks = 0, cpus_per_task = 1;
  bool retry_errors = false, quiet = false;
  // export / merge / plot
  std::string source, csv, jsonl, out, title;
  std::vector<std::string> shards, sections;
};

std::string duration(double s) {
  if (s < 60) return fmt::format("{:.0f}s", s);
  if (s < 3600) return fmt::format("{}m{:02d}s", int(s) / 60, int(s) % 60);
  return fmt::format("{}h{:02d}m", int(s) / 3600, (int(s) % 3600) / 60);
}

// One line on stderr, redrawn in place, at most a few times a second; only on a terminal.
class ProgressBar {
 public:
  explicit ProgressBar(std::string name) : name_(std::move(name)), on_(isatty(2)) {}
  ~ProgressBar() {
    if (drawn_) std::cerr << "\n";
  }
  void operator()(const sweep::Progress& p) {
    if (!on_ || p.total == 0) return;
    auto now = std::chrono::steady_clock::now();
    if (drawn_ && p.done < p.total && now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    const int width = 24;
    int filled = int(width * p.done / p.total);
    double rate = p.elapsed_s > 0 ? double(p.done) / p.elapsed_s : 0;
    std::string eta = p.done == p.total ? "done" : rate > 0 ? "ETA " + duration(double(p.total - p.done) / rate) : "ETA ?";
    std::string line = fmt::format("{}{}: [{}{}] {}/{} {:.0f}% {:.2f} pts/s {}  ok {} dnf {} other {}{}", name_,
                                   p.round ? fmt::format(" round {}", p.round) : "", std::string(size_t(filled), '#'),
                                   std::string(size_t(width - filled), '.'), p.done, p.total, 100.0 * double(p.done) / double(p.total),
                                   rate, eta, p.ok, p.does_not_fit, p.other,
                                   p.compiles_running ? fmt::format("  compiling {}", p.compiles_running) : "");
    std::cerr << "\r" << line << "\033[K" << std::flush;
    drawn_ = true;
  }

 private:
  std::string name_;
  bool on_, drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
};

// A sweep file or a results database; the database a sweep file's results are in.
fs::path results_db(const std::string& source, const std::string& db) {
  if (!db.empty()) return db;
  fs::path p(source);
  if (p.extension() == ".sqlite" || p.extension() == ".db") return p;
  return sweep::default_db(sweep::load_sweep(p));
}

// A mistake on the command line: exit code 2, as CLI11's own.
int usage(const std::string& what) {
  std::cerr << "vtpu sweep: " << what << "\nRun with --help for more information.\n";
  return kExitUsage;
}

int run(const Args& a) {
  if (a.file.empty()) return usage("give a sweep file (examples/sweep_resnet50_bert.yaml is one; docs/sweeps.md)");
  std::optional<sweep::Shard> shard;
  try {
    if (!a.shard.empty()) shard = sweep::parse_shard(a.shard);
  } catch (const UserError& e) {
    return usage(e.what());
  }
  sweep::SweepSpec spec = sweep::load_sweep(a.file);
  if (!a.emit_slurm.empty()) {
    sweep::SlurmOptions o;
    o.dir = a.emit_slurm;
    o.vtpu = fs::read_symlink("/proc/self/exe");
    o.tasks = a.tasks, o.cpus_per_task = a.cpus_per_task, o.partition = a.partition, o.time = a.time;
    sweep::SlurmFiles f = sweep::emit_slurm(spec, o);
    std::cout << fmt::format("wrote {} ({} array tasks over {} points) and {}\nsubmit: sbatch {}\nthen:   {}\n",
                             f.batch_script.string(), f.tasks, f.points, f.merge_script.string(), f.batch_script.string(),
                             f.merge_script.string());
    return kExitOk;
  }
  sweep::RunOptions o;
  o.jobs = a.jobs > 0 ? a.jobs : int(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  o.db = a.db.empty() ? sweep::default_db(spec) : fs::path(a.db);
  o.cache_dir = a.cache.empty() ? sweep::default_cache(o.db) : fs::path(a.cache);
  o.model_dir = a.model_dir;
  o.shard = shard;
  o.retry_errors = a.retry_errors;
  auto bar = std::make_shared<ProgressBar>(spec.name);
  if (!a.quiet) o.progress = [bar](const sweep::Progress& p) { (*bar)(p); };
  sweep::RunSummary s = sweep::run_sweep(spec, o);
  bar.reset();
  if (!a.quiet) {
    std::cout << fmt::format("sweep {}: {} points{}, {} recorded before, {} run now: {} ok, {} do not fit, {} other\n", spec.name,
                             s.points, o.shard ? fmt::format(" in shard {}/{}", o.shard->index, o.shard->count) : "",
                             s.already_done, s.ran, s.ok, s.does_not_fit, s.other);
    std::cout << fmt::format("  {} compiles ({} INT8 calibrations, {} reused from the cache), {} points ran a cached program\n",
                             s.compiles, s.calibrations, s.calibration_reuses, s.program_cache_hits);
    std::cout << fmt::format("  wall {:.1f} s, CPU {:.1f} s with -j {}{}\n", s.wall_s, s.cpu_s, o.jobs,
                             s.ran && s.cpu_s > 0 ? fmt::format(": {:.2f} points per CPU-second", double(s.ran) / s.cpu_s) : "");
    std::cout << fmt::format("  results in {}; export with: vtpu sweep export {} --csv {}.csv\n", o.db.string(), a.file, spec.name);
  }
  return kExitOk;
}

int run_export(const Args& a) {
  if (a.csv.empty() == a.jsonl.empty()) return usage("export: give --csv OUT.csv or --jsonl OUT.jsonl (one of them)");
  fs::path dbp = results_db(a.source, a.db);
  std::vector<std::string> metrics;
  fs::path src(a.source);
  if (src.extension() != ".sqlite" && src.extension() != ".db") metrics = sweep::load_sweep(src).metrics;
  sweep::Database db(dbp, true);
  std::vector<sweep::PointResult> rows = db.all();
  const std::string& out = a.csv.empty() ? a.jsonl : a.csv;
  write_file(out, a.csv.empty() ? sweep::export_jsonl(rows) : sweep::export_csv(rows, metrics));
  std::cerr << fmt::format("vtpu sweep export: wrote {} rows to {}\n", rows.size(), out);
  return kExitOk;
}

int run_plot(const Args& a) {
  fs::path dbp = results_db(a.source, a.db);
  sweep::Database db(dbp, true);
  std::vector<sweep::PointResult> rows = db.all();
  std::string title = a.title.empty() ? "sweep " + db.meta("sweep_name").value_or(dbp.stem().string()) : a.title;
  plots::Page page = sweep::sweep_page(title, rows);
  if (!a.sections.empty()) {
    std::vector<plots::Section> keep;
    for (const plots::Section& sec : page.sections)
      for (const std::string& want : a.sections)
        if (sec.heading.rfind(want, 0) == 0) keep.push_back(sec);
    if (keep.empty()) return usage("plot: no section starts with the --section given");
    page.sections = keep;
  }
  write_file(a.out, plots::html_page(page));
  std::cerr << fmt::format("vtpu sweep plot: wrote {} ({} points)\n", a.out, rows.size());
  return kExitOk;
}

int run_merge(const Args& a) {
  sweep::Database out(a.out);
  size_t added = 0, dups = 0, conflicts = 0;
  for (const std::string& s : a.shards) {
    if (fs::absolute(s) == fs::absolute(a.out)) continue;
    sweep::Database::MergeStats m = out.merge_from(s);
    added += m.added, dups += m.duplicates, conflicts += m.conflicts;
  }
  std::cout << fmt::format("vtpu sweep merge: {} shards into {}: {} points added, {} already there{}; {} points in all\n",
                           a.shards.size(), a.out, added, dups,
                           conflicts ? fmt::format(" ({} with other figures: the first kept)", conflicts) : "", out.count());
  return kExitOk;
}

}  // namespace

SweepCommand add_sweep_command(CLI::App& app) {
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("sweep", "run a design-space sweep (docs/sweeps.md); export, merge or plot its results");
  cmd->add_option("FILE", a->file, "sweep file (YAML)");
  cmd->add_option("-j,--jobs", a->jobs, "worker processes (default: the CPUs)");
  cmd->add_option("--db", a->db, "results database (default: NAME.sqlite here)");
  cmd->add_option("--cache", a->cache, "program and calibration cache (default: beside the database)");
  cmd->add_option("--model-dir", a->model_dir, "where zoo models are written (default: $VTPU_MODEL_DIR or the zoo's)");
  cmd->add_option("--shard", a->shard, "run only share I of N (0-based), as a Slurm array task does: I/N");
  cmd->add_flag("--retry-errors", a->retry_errors, "run points recorded with status error again");
  cmd->add_flag("-q,--quiet", a->quiet, "no progress bar and no summary");
  cmd->add_option("--emit-slurm", a->emit_slurm, "write a Slurm array job for the sweep into this directory instead of running it");
  cmd->add_option("--tasks", a->tasks, "--emit-slurm: array tasks (default: one per 25 points)");
  cmd->add_option("--cpus-per-task", a->cpus_per_task, "--emit-slurm: CPUs (and -j) per task")->capture_default_str();
  cmd->add_option("--partition", a->partition, "--emit-slurm: #SBATCH --partition");
  cmd->add_option("--time", a->time, "--emit-slurm: #SBATCH --time");

  CLI::App* exp = cmd->add_subcommand("export", "write a sweep's results as CSV or JSON Lines");
  exp->add_option("SOURCE", a->source, "sweep file or results database")->required();
  exp->add_option("--db", a->db, "results database (default: the sweep file's)");
  exp->add_option("--csv", a->csv, "write CSV here");
  exp->add_option("--jsonl", a->jsonl, "write JSON Lines here");

  CLI::App* merge = cmd->add_subcommand("merge", "join shard databases (of a Slurm array job) into one");
  merge->add_option("OUT", a->out, "database to merge into (created if missing)")->required();
  merge->add_option("SHARDS", a->shards, "shard databases")->required();

  CLI::App* plot = cmd->add_subcommand("plot", "write the sweep's HTML report: Pareto fronts, each axis's effect, a roofline");
  plot->add_option("SOURCE", a->source, "sweep file or results database")->required();
  plot->add_option("--db", a->db, "results database (default: the sweep file's)");
  plot->add_option("-o,--output", a->out, "the HTML page to write")->required();
  plot->add_option("--title", a->title, "page title (default: the sweep's name)");
  plot->add_option("--section", a->sections, "only the sections whose heading starts with this (repeatable)");

  SweepCommand c;
  c.command = cmd;
  c.run = [a, exp, merge, plot] {
    if (*exp) return run_export(*a);
    if (*merge) return run_merge(*a);
    if (*plot) return run_plot(*a);
    return run(*a);
  };
  return c;
}

}  // namespace vtpu::cli
