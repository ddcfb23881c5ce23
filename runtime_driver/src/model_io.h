#pragma once
// Internal to the runtime: a model's inputs as a program takes them (files or seeded random
// values) and its outputs back as real values; run_model and the parallel runs share them.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "vtpu/isa/program.h"
#include "vtpu/runtime/runtime.h"

namespace vtpu::runtime::detail {

// Real values -> the tensor's bytes (bf16 rounding, int8 quantization, fp32 and int32 as is).
std::vector<uint8_t> encode(const isa::TensorInfo& t, const std::vector<float>& v);
// The tensor's bytes -> real values.
std::vector<float> decode(const isa::TensorInfo& t, const std::vector<uint8_t>& b);

struct ProgramInputs {
  std::map<std::string, std::vector<float>> real;      // program layout (images NHWC)
  std::map<std::string, std::vector<uint8_t>> bytes;   // as the program's tensors hold them
  std::vector<std::string> used;                       // NAME=FILE or NAME=random, in tensor order
};
// Every input tensor of `program`: from options.input_files (float32 .npy in the model's
// layout, integer .npy for integer inputs, image files), else seeded random values in
// [-1, 1] (integer inputs: 0 .. 127). Errors name the input and the file.
ProgramInputs program_inputs(const isa::Program& program, const RunOptions& options);

// The compiler's options for a run's options: precision, batch, shapes, calibration (method,
// and the data of --calibrate read here), RNN schedule, seed. One place, so `run` and runs
// across chips compile a model alike.
compiler::CompileOptions compile_options(const std::filesystem::path& model, const RunOptions& options);

// The batch of a program: dimension 0 of its first input (1 without inputs).
int64_t program_batch(const isa::Program& program);

}  // namespace vtpu::runtime::detail
