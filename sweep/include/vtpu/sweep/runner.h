#pragma once
// Running a sweep: its points on a pool of worker processes, results into the database as
// each point finishes (docs/sweeps.md). Resumable: points already recorded are skipped.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "vtpu/sweep/spec.h"

namespace vtpu::sweep {

struct Progress {
  size_t done = 0, total = 0;  // points of this run (not counting those recorded before)
  size_t ok = 0, does_not_fit = 0, other = 0;
  size_t compiles = 0, compiles_running = 0;
  double elapsed_s = 0;
  int round = 0;
};

struct Shard {
  uint32_t index = 0, count = 1;  // this task's share: --shard index/count
};

struct RunOptions {
  int jobs = 1;
  std::filesystem::path db;         // results
  std::filesystem::path cache_dir;  // compiled programs and INT8 calibrations
  std::filesystem::path model_dir;  // zoo models are written here (empty: the zoo's default)
  std::optional<Shard> shard;
  bool retry_errors = false;        // run points recorded as `error` again
  std::function<void(const Progress&)> progress;  // called as points finish
};

struct RunSummary {
  size_t points = 0;          // in the sweep (this shard), over all rounds
  size_t already_done = 0;    // recorded before this run
  size_t ran = 0;             // recorded by this run
  size_t ok = 0, does_not_fit = 0, other = 0;
  size_t compiles = 0, program_cache_hits = 0, calibrations = 0, calibration_reuses = 0;
  double wall_s = 0, cpu_s = 0;  // cpu: this process and its workers
  int rounds = 0;
};

RunSummary run_sweep(const SweepSpec& spec, const RunOptions& options);

// "--shard 3/8" -> {3, 8}; an error names what is wrong.
Shard parse_shard(const std::string& text);

// The default results database of a sweep file: <stem>.sqlite in the current directory, and
// its cache directory beside it (<stem>.cache).
std::filesystem::path default_db(const SweepSpec& spec);
std::filesystem::path default_cache(const std::filesystem::path& db);

}  // namespace vtpu::sweep
