#pragma once
// Running a sweep as a Slurm array job (docs/sweeps.md): each array task runs its shard
// (`vtpu sweep FILE --shard I/N`) into a database in its own scratch directory and copies it
// to DIR/shards/ when done; `vtpu sweep merge` then joins the shards.
#include <filesystem>
#include <string>
#include <vector>

#include "vtpu/sweep/spec.h"

namespace vtpu::sweep {

struct SlurmOptions {
  std::filesystem::path dir;       // where the scripts, logs, shards and shared cache go
  std::filesystem::path vtpu;      // the vtpu binary the tasks run (absolute)
  uint32_t tasks = 0;              // array tasks (0: one per 25 points, at most 1000)
  uint32_t cpus_per_task = 1;      // -j of each task
  std::string partition, time;     // #SBATCH --partition / --time when given
};

struct SlurmFiles {
  std::filesystem::path batch_script, merge_script, merged_db;
  uint32_t tasks = 0;
  uint64_t points = 0;
};

// Writes DIR/sweep.sbatch (the array job) and DIR/merge.sh (joins the shards into
// DIR/results.sqlite).
SlurmFiles emit_slurm(const SweepSpec& spec, const SlurmOptions& options);

}  // namespace vtpu::sweep
