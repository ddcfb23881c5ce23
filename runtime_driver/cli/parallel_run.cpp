#include "parallel_run.h"

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "output_files.h"
#include "vtpu/runtime/parallel.h"
#include "vtpu/sim/system_report.h"
#include "vtpu/support/error.h"
#include "vtpu/support/files.h"

namespace vtpu::cli {

int run_parallel_model(const ParallelArgs& a, const config::Config& system, const runtime::RunOptions& options) {
  runtime::ParallelOptions po;
  po.kind = runtime::parallelism_from_name(a.parallelism);
  po.micro_batches = a.micro_batches;
  po.baseline = a.baseline;
  const runtime::Parallelism p = po.kind;
  runtime::ParallelRun run = runtime::run_parallel(a.model, system, po, options);
  if (!a.quiet) {
    std::cout << fmt::format("{} on {} ({}), {} parallel: a batch of {} over {} chips\n\n", a.model, system.name, a.dtype,
                             runtime::parallelism_name(p), run.batch, run.parts.size());
    std::cout << runtime::parts_table(run) << "\n" << runtime::scaling_table(run) << "\n"
              << sim::system_summary_table(run.system, system);
  }
  if (!a.output_dir.empty())
    write_output_files(a.output_dir, run.tensors, run.outputs, run.output_shapes, run.output_bytes, model_output_types(a.model));
  if (!a.report.empty()) {
    sim::ReportMeta meta{VTPU_VERSION, a.model, a.seed, run.inputs_used};
    nlohmann::json j = nlohmann::json::parse(sim::system_report_json(run.system, system, meta));
    nlohmann::json parts = nlohmann::json::array();
    for (const auto& part : run.parts) {
      nlohmann::json jp = {{"batch_begin", part.batch_begin}, {"batch", part.batch}};
      if (p == runtime::Parallelism::Pipeline)
        jp.update({{"first_layer", part.first_layer},
                   {"last_layer", part.last_layer},
                   {"receives", part.input},
                   {"sends", part.output},
                   {"estimated_share", part.cost}});
      if (p == runtime::Parallelism::Tensor) jp.update({{"share", part.share}});
      parts.push_back(jp);
    }
    nlohmann::json splits = nlohmann::json::array();
    for (const auto& sp : run.splits) splits.push_back({{"column_parallel", sp.first}, {"row_parallel", sp.second}, {"units", sp.units}, {"unit", sp.unit}});
    double speedup = run.baseline_ran && run.seconds() > 0 ? run.baseline_seconds() / run.seconds() : 0;
    j["parallel"] = {{"kind", runtime::parallelism_name(p)},
                     {"batch", run.batch},
                     {"micro_batches", run.micro_batches},
                     {"parts", parts},
                     {"splits", splits},
                     {"chips_agree", run.chips_agree},
                     {"seconds", run.seconds()},
                     {"collective_seconds", run.collective_seconds()},
                     {"baseline", run.baseline_ran ? nlohmann::json{{"config", run.chip.name},
                                                                    {"cycles", run.baseline_cycles},
                                                                    {"seconds", run.baseline_seconds()},
                                                                    {"energy_j", run.baseline_energy_pj * 1e-12}}
                                                   : nlohmann::json(nullptr)},
                     {"speedup", speedup},
                     {"efficiency", speedup / double(run.parts.size())},
                     {"outputs_identical", run.identical},
                     {"max_abs_difference", run.max_abs_difference},
                     {"max_relative_difference", run.max_relative_difference}};
    write_file(a.report, j.dump(2) + "\n");
  }
  if (!a.trace.empty()) {
    OutputFile f(a.trace);
    std::vector<std::vector<std::string>> tags;
    for (const auto& part : run.parts) tags.push_back(run.programs[part.program].tags);
    sim::write_system_trace(f.stream(), run.system, system, tags);
    f.close();
  }
  return kExitOk;
}

}  // namespace vtpu::cli
