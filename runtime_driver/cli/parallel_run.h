#pragma once
// `vtpu run MODEL -c SYSTEM --parallel data|pipeline`: the model split across the system's chips, the
// per-chip and pod tables, the scaling table against one chip (docs/runtime.md, "Models
// across chips").
#include <string>

#include "vtpu/config/config.h"
#include "vtpu/runtime/runtime.h"

namespace vtpu::cli {

struct ParallelArgs {
  std::string parallelism, model, dtype, report, trace, output_dir;
  uint64_t seed = 1;
  bool quiet = false, baseline = true;
  int64_t micro_batches = 0;  // pipeline; 0: the runtime's choice
};

int run_parallel_model(const ParallelArgs& a, const config::Config& system, const runtime::RunOptions& options);

}  // namespace vtpu::cli
