#pragma once
// Internal: the fp32 interpreter of func @main at the tpu level (compiler/reference/): the
// reference INT8 calibration measures activation ranges with (pipeline/calibration.cpp), and
// what `vtpu run --check` compares the chip's outputs against. Images are NHWC.
#include <cstdint>
#include <map>
#include <vector>

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace vtpu::compiler {

struct RefTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

// Runs @main on `inputs` (one per argument, in order) and returns its results; `all_values`
// gets every activation, keyed by Value::getAsOpaquePointer.
std::vector<RefTensor> evaluate_reference(mlir::func::FuncOp fn, const std::vector<RefTensor>& inputs,
                                          std::map<const void*, RefTensor>* all_values = nullptr);

}  // namespace vtpu::compiler
