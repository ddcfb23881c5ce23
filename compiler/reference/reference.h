#pragma once
// Internal: the fp32 interpreter of func @main at the tpu level (compiler/reference/): the
// reference INT8 calibration measures activation ranges with (pipeline/calibration.cpp), and
// what `vtpu run --check` compares the chip's outputs against. Images are NHWC.
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace vtpu::compiler {

struct RefTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

// Runs @main on `inputs` (one per argument, in order) and returns its results. `seen` hears
// each argument and activation as it is made, keyed by Value::getAsOpaquePointer, and may
// change it (the ops after read what it leaves: INT8's rounding emulated,
// quantization_errors); an activation is freed after its last reader (calibration keeps
// ranges, not 67 MB of tensors).
std::vector<RefTensor> evaluate_reference(mlir::func::FuncOp fn, const std::vector<RefTensor>& inputs,
                                          const std::function<void(const void* value, RefTensor&)>& seen = {});

}  // namespace vtpu::compiler
