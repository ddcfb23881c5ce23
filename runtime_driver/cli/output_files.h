#pragma once
// Files the commands write: a report or trace file, and `--output-dir`: a run's outputs as
// NAME.npy, float32 in the model's layout, integer outputs as int32 bit for bit (shared by the
// single-chip and the parallel runs of `vtpu run`).
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "vtpu/isa/program.h"

namespace vtpu::cli {

// `tensors`: the program's (for each output's dtype, stored shape and layout); `raw`: each
// output's bytes as the program stored them. An output whose name is not a plain file name
// (`../x`, `/abs/x`) is an error: nothing is written outside `dir`.
void write_output_files(const std::filesystem::path& dir, const std::vector<isa::TensorInfo>& tensors,
                        const std::map<std::string, std::vector<float>>& outputs,
                        const std::map<std::string, std::vector<int64_t>>& shapes,
                        const std::map<std::string, std::vector<uint8_t>>& raw);

}  // namespace vtpu::cli
