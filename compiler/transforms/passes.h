#pragma once
// Internal: the compiler's passes on func @main, declared from transforms/Passes.td:
//   createCancelTransposesPass()  --tpu-cancel-transposes  (cancel_transposes.cpp)
//   createChannelShufflePass()    --tpu-channel-shuffle    (channel_shuffle.cpp)
//   createFoldBatchNormPass()     --tpu-fold-batchnorm     (fold_batchnorm.cpp)
//   createLowerTosaToTpuPass()    --tpu-lower-tosa         (lower_tosa.cpp, lower_tosa/*.cpp)
// and registerTpuPasses() for vtpu-opt.
#include <memory>

#include "dialect/tpu_dialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace vtpu::tpu {

#define GEN_PASS_DECL
#include "vtpu/compiler/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "vtpu/compiler/Passes.h.inc"

}  // namespace vtpu::tpu
