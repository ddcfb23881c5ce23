#pragma once
// Internal: the work of one task, done in a worker process. A compile task turns a model
// into a program for a config (reusing INT8 calibration when it has it) and writes it to the
// cache; a simulate task runs a program and measures it. Both answer in JSON.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "vtpu/compiler/compiler.h"
#include "vtpu/config/config.h"
#include "vtpu/isa/program.h"
#include "vtpu/sweep/results.h"

namespace vtpu::sweep::detail {

// The programs of one model (dtype, batch, calibration) for several configs, compiled in one
// process: the model is imported and lowered once (compiler::ModelCompiler).
struct CompileTask {
  std::filesystem::path model;
  std::string dtype;  // int8 or bf16
  int64_t batch = 0;
  uint64_t seed = 1;
  std::map<std::string, std::string> calibrate;  // input -> files; empty: seeded random
  std::string image_norm = "unit";
  const std::vector<float>* scales = nullptr;    // INT8 calibration to reuse, or null
  std::filesystem::path scales_file;             // written when calibration ran here ("" : not wanted)
  struct Program {
    config::Config cfg;
    std::filesystem::path file;  // written on success
  };
  std::vector<Program> programs;
};

// Outcome of a compile: status ok, does_not_fit, unsupported or error, as results.h says.
struct CompileOutcome {
  std::string status, message, dnf_buffer;
  uint64_t dnf_needed = 0, dnf_available = 0;
  double seconds = 0;  // CPU seconds of the compile (with its share of the import and lowering)
};
std::string to_json(const CompileOutcome& c);
CompileOutcome compile_outcome_from_json(const std::string& json);
// A task's outcomes, one per program, and back; a reply that is not `count` outcomes (a
// worker that died) gives `count` errors saying so.
std::string to_json(const std::vector<CompileOutcome>& c);
std::vector<CompileOutcome> compile_outcomes_from_json(const std::string& json, size_t count);

// Compiles each program; never throws for a problem of a point (its outcome says it).
std::vector<CompileOutcome> compile_task(const CompileTask& t);

// Simulates `program` (stamped for cfg) and fills the figures of `r` (status ok). `macs`, the
// compiler's useful MACs per layer (useful_macs_file), replace the array's count in r.macs
// and r.tops, as in a plain run (docs/reports.md, "Useful MACs"); empty: the array's count.
void simulate_task(const isa::Program& program, const config::Config& cfg, bool timing_only, uint64_t seed,
                   PointResult& r, const std::vector<compiler::LayerBound>& macs = {});

// The compiler's useful MACs per layer of a cached program, beside it (`program`.macs.json),
// written by compile_task before the program; read_useful_macs gives none for a program
// cached without it.
std::filesystem::path useful_macs_file(const std::filesystem::path& program);
std::vector<compiler::LayerBound> read_useful_macs(const std::filesystem::path& program);

// Files written whole or not at all (a temporary file renamed into place), so a killed
// worker or a concurrent Slurm task never leaves half a file for others to read.
void write_atomically(const std::filesystem::path& path, const std::string& bytes);
std::string read_file(const std::filesystem::path& path);
void write_scales(const std::filesystem::path& path, const std::vector<float>& scales);
std::vector<float> read_scales(const std::filesystem::path& path);

// A cached program, stamped for the config it runs on (docs: compiler::config_fingerprint).
void stamp(isa::Program& p, const config::Config& cfg);

}  // namespace vtpu::sweep::detail
