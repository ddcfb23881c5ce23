// The compiler's passes on func @main (docs/compiler.md, "Pipeline"); mlir-tblgen
// -gen-pass-decls makes their base classes, create functions and registration.
include "mlir/Pass/PassBase.td"

def CancelTransposesPass : Pass<"tpu-cancel-transposes", "mlir::func::FuncOp"> {
  let summary = "Remove tosa.transpose pairs that compose to the identity";
  let description = [{
    The importer keeps images NHWC and inserts transposes where ONNX semantics follow NCHW
    order; a transpose to NCHW followed by one back is the identity and goes, also when a
    slice lies between them (the slice then takes the first transpose's input). Runs until no
    pair is left; transposes nothing uses any more are erased.
  }];
}

def ChannelShufflePass : Pass<"tpu-channel-shuffle", "mlir::func::FuncOp"> {
  let summary = "A channel shuffle becomes a 1x1 convolution by a permutation matrix";
  let description = [{
    ShuffleNet's channel shuffle as torch exports it (an NCHW view into groups, the two
    group axes swapped, a view back), which the importer makes transpose -> reshape ->
    transpose -> reshape of an NHWC image, becomes a 1x1 tosa.conv2d of the image whose
    weights permute the channels (one 1 per output channel), then the transpose to NCHW its
    users expect. Exact, and it runs wherever a convolution does (row bands included).
  }];
}

def FoldBatchNormPass : Pass<"tpu-fold-batchnorm", "mlir::func::FuncOp"> {
  let summary = "Fold per-channel scale/shift constants into the preceding conv2d or fully_connected";
  let description = [{
    x * s + t per output channel (a batch normalization, as tosa.mul and tosa.add by
    constants) that is the only use of a conv2d, depthwise_conv2d or fully_connected scales
    that layer's weights and bias instead.
  }];
}

def LowerTosaToTpuPass : Pass<"tpu-lower-tosa", "mlir::func::FuncOp"> {
  let summary = "Lower TOSA layers to tpu ops, fusing bias and activation";
  let description = [{
    One conversion pattern per TOSA op (transforms/lower_tosa/*.cpp) turns each layer into
    one tpu op: conv/matmul absorb a following per-channel bias add and clamp, a flatten's
    NCHW transpose folds into the next matmul's weights, softmax and layer normalization are
    matched back from their TOSA forms. Fails naming the node it cannot lower.
  }];
  let dependentDialects = ["::vtpu::tpu::TpuDialect"];
}
