#pragma once
// Programs the compiler emits, for the core cross-check (docs/rtl.md, "Compiled programs"):
// the trained LeNet-5 of the zoo and small ONNX models built here with the zoo's
// OnnxBuilder (a conv + pool + residual block, an attention block, an LSTM step), compiled
// through the public compiler API for a tiny preset in int8 or bf16, with their inputs.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core_harness.h"
#include "vtpu/compiler/compiler.h"
#include "vtpu/isa/program.h"

namespace vtpu::rtl {

// The models, by name: lenet5-fmnist, conv-block, attention-block, lstm-step.
const std::vector<std::string>& compiled_model_names();

// Writes the model's ONNX file into `dir` (a zoo model: materialized there) and returns it.
std::filesystem::path compiled_model_file(const std::string& name, const std::filesystem::path& dir);

struct CompiledProgram {
  std::string model, preset, dtype;  // dtype: int8 or bf16
  isa::Program program;
  std::string assembly;              // what --emit-asm writes: printed on a mismatch
  Inputs inputs;                     // every input tensor's bytes in the program's layout
};

// Compiles `model` for `preset` in `dtype` (seeded INT8 calibration) and makes its inputs:
// a Fashion-MNIST test image for lenet5-fmnist when Debian's dataset is installed (else
// seeded values), seeded values uniform in [-1, 1] otherwise, encoded in the tensor's type
// (int8 with its scale and zero point, bf16 rounded to nearest even).
CompiledProgram compile_for_rtl(const std::string& model, const std::string& preset, const std::string& dtype,
                                const std::filesystem::path& dir, uint64_t seed = 1);

}  // namespace vtpu::rtl
