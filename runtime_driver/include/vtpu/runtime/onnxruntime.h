#pragma once
// onnxruntime (CPU, fp32, one thread) on an ONNX file, through Node.js and the npm package
// onnxruntime-node that scripts/install-deps.sh installs (runtime_driver/ort/ort_run.js): the
// reference `vtpu run --check` compares the chip's outputs with, and the tests check the
// compiler against. It reads the original model file and shares no code with the compiler.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "vtpu/runtime/npy.h"

namespace vtpu::runtime {

struct OrtRun {
  bool ok = false;
  std::string why_not;  // !ok: why onnxruntime did not run (not installed, refused the model, ...)
  std::string version;  // ok: onnxruntime-node's version
  std::map<std::string, NpyArray> outputs;  // by graph output name, in the model's layout and types
};

// Where onnxruntime-node is looked for: $VTPU_NODE_DIR/node_modules, else
// ~/.cache/vtpu/node/node_modules (where scripts/install-deps.sh puts it).
std::filesystem::path ort_node_modules();

// Runs `model` on `feeds` (graph input name -> its value, in the model's layout and element
// type), in a scratch folder under `work_dir` that is removed afterwards.
OrtRun run_onnxruntime(const std::filesystem::path& model, const std::map<std::string, NpyArray>& feeds,
                       const std::filesystem::path& work_dir = std::filesystem::temp_directory_path());

// An array's elements as float (floating types rounded to float; integers and bools
// converted); throws UserError for a type it does not know.
std::vector<float> npy_as_floats(const NpyArray& a);

}  // namespace vtpu::runtime
