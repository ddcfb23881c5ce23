#pragma once
// Internal to the runtime: what `vtpu run --check` compares the chip's outputs with (check.cpp).
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "vtpu/compiler/compiler.h"
#include "vtpu/isa/program.h"
#include "vtpu/runtime/runtime.h"

namespace vtpu::runtime {

struct Reference {
  std::string name;        // which reference, for the report ("onnxruntime 1.30.0 on model.onnx", ...)
  std::string short_name;  // "onnxruntime" or "the fp32 interpreter", for each check line
  std::map<std::string, std::vector<float>> outputs;  // model layout (NCHW images)
};

// The reference outputs for `program_inputs` (program layout, as placed on the chip). `which`:
// "auto" (onnxruntime on the model file when it runs, else vtpu's fp32 interpreter, saying
// why), "onnxruntime" (an error when it cannot run) or "interpreter".
Reference check_reference(const std::filesystem::path& model, const isa::Program& program,
                          const std::map<std::string, std::vector<float>>& program_inputs, const compiler::CompileOptions& copt,
                          const std::string& which);

// Per output of `got` (model layout): the largest |chip - reference| and |reference|.
std::vector<CheckResult> compare_outputs(const std::map<std::string, std::vector<float>>& got, const Reference& ref);

}  // namespace vtpu::runtime
