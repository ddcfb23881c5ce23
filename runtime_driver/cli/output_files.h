#pragma once
// Files the commands write: a report or trace file, and `--output-dir`: a run's outputs as
// NAME.npy, float32 in the model's layout, integer outputs in the integer type the ONNX file
// declares (int64, bool, ...) or else as int32, bit for bit (shared by the single-chip and
// the parallel runs of `vtpu run`).
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "vtpu/isa/program.h"
#include "vtpu/runtime/npy.h"

namespace vtpu::cli {

// `tensors`: the program's (for each output's dtype, stored shape and layout); `raw`: each
// output's bytes as the program stored them; `types`: the ONNX file's output types
// (runtime::onnx_output_types), by which an integer output is written as int64, bool or a
// narrower integer when every value fits that type (else as int32); where `types` names
// none (a .vtpu program run on its own), the type the program records for the output
// (isa::TensorInfo::model_type). An output whose name is
// not a plain file name (`../x`, `/abs/x`) is an error: nothing is written outside `dir`.
void write_output_files(const std::filesystem::path& dir, const std::vector<isa::TensorInfo>& tensors,
                        const std::map<std::string, std::vector<float>>& outputs,
                        const std::map<std::string, std::vector<int64_t>>& shapes,
                        const std::map<std::string, std::vector<uint8_t>>& raw,
                        const std::map<std::string, std::string>& types = {});

// runtime::onnx_output_types of the model a run was given; none for a .vtpu program (whose
// tensors carry their model types).
std::map<std::string, std::string> model_output_types(const std::string& model);

// The NumPy type ("<i8", "|b1", ...) of an isa::TensorInfo::model_type; "" for none.
std::string descr_of_model_type(const std::string& model_type);

// The int32 values of an int32 output's bytes as the program stored them.
std::vector<int32_t> int32_values(const std::vector<uint8_t>& bytes);

// An integer output in the NumPy type `type` ("<i8", "|b1", "|u1", ...) when every value
// fits it (bool: 0 and 1), else as int32.
runtime::NpyArray integer_output(const std::vector<int32_t>& values, const std::vector<int64_t>& shape, const std::string& type);

}  // namespace vtpu::cli
