#pragma once
// Internal: the work of one task, done in a worker process. A compile task turns a model
// into a program for a config (reusing INT8 calibration when it has it) and writes it to the
// cache; a simulate task runs a program and measures it. Both answer in JSON.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "vtpu/config/config.h"
#include "vtpu/isa/program.h"
#include "vtpu/sweep/results.h"

namespace vtpu::sweep::detail {

struct CompileTask {
  std::filesystem::path model;
  std::string dtype;  // int8 or bf16
  int64_t batch = 0;
  uint64_t seed = 1;
  std::map<std::string, std::string> calibrate;  // input -> files; empty: seeded random
  std::string image_norm = "unit";
  const std::vector<float>* scales = nullptr;    // INT8 calibration to reuse, or null
  std::filesystem::path program_file;            // written on success
  std::filesystem::path scales_file;             // written when calibration ran here ("" : not wanted)
};

// Outcome of a compile: status ok, does_not_fit, unsupported or error, as results.h says.
struct CompileOutcome {
  std::string status, message, dnf_buffer;
  uint64_t dnf_needed = 0, dnf_available = 0;
  double seconds = 0;  // CPU seconds of the compile
};
std::string to_json(const CompileOutcome& c);
CompileOutcome compile_outcome_from_json(const std::string& json);

// Compiles; never throws for a problem of the point (the outcome says it).
CompileOutcome compile_task(const CompileTask& t, const config::Config& cfg);

// Simulates `program` (stamped for cfg) and fills the figures of `r` (status ok).
void simulate_task(const isa::Program& program, const config::Config& cfg, bool timing_only, uint64_t seed,
                   PointResult& r);

// Files written whole or not at all (a temporary file renamed into place), so a killed
// worker or a concurrent Slurm task never leaves half a file for others to read.
void write_atomically(const std::filesystem::path& path, const std::string& bytes);
std::string read_file(const std::filesystem::path& path);
void write_scales(const std::filesystem::path& path, const std::vector<float>& scales);
std::vector<float> read_scales(const std::filesystem::path& path);

// A cached program, stamped for the config it runs on (docs: compiler::config_fingerprint).
void stamp(isa::Program& p, const config::Config& cfg);

}  // namespace vtpu::sweep::detail
