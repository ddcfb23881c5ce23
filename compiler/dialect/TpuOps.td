// The tpu dialect: whole layers as the vtpu chip executes them. TOSA is lowered to these
// ops after fusion (bias, activation, requantization folded in), and code generation turns
// each op into bundles. Every op carries the ONNX node name as `layer`, which becomes the
// program's tag so reports break down per layer.
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Tpu_Dialect : Dialect {
  let name = "tpu";
  let cppNamespace = "::vtpu::tpu";
  let summary = "Layer-level operations of the vtpu chip";
}

class Tpu_Op<string mnemonic, list<Trait> traits = []> : Op<Tpu_Dialect, mnemonic, traits>;

// Rows x features matrices: a 2-D activation, or an NHWC image seen as pixels x channels.
def Tpu_MatmulOp : Tpu_Op<"matmul", [Pure]> {
  let summary = "y = clamp(x * w + bias) on the MXUs; x [M, K], w [K, N] and bias [N] constant";
  let description = [{
    x is seen as rows of K features (any rank, the last dimension K); the output has x's rows
    of N features and may carry another shape of them (a 3-D activation's matmul writes the
    3-D result directly). An i32 output (an integer model output) leaves the accumulators
    as int32.
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$weight, AnyRankedTensor:$bias,
                   F64Attr:$clamp_min, F64Attr:$clamp_max, StrAttr:$layer);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tpu_BatchMatmulOp : Tpu_Op<"batch_matmul", [Pure]> {
  let summary = "y[b] = lhs[b] * rhs[b] on the MXUs, both operands activations: [B, M, K] x [B, K, N]";
  let description = [{
    Attention's Q K^T and P V. The right-hand side becomes the MXU's weights: it goes to
    HBM and comes back through the weight FIFO, tile by tile.
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs, StrAttr:$layer);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tpu_LayerNormOp : Tpu_Op<"layernorm", [Pure]> {
  let summary = "y = (x - mean(x)) / sqrt(var(x) + epsilon) over the last dimension (no scale or bias)";
  let arguments = (ins AnyRankedTensor:$input, F64Attr:$epsilon, StrAttr:$layer);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tpu_ConstantOp : Tpu_Op<"constant", [Pure]> {
  let summary = "a constant tensor as an activation (loaded from HBM into the unified buffer)";
  let description = [{
    For elementwise ops with a constant operand that is neither per-channel nor a scalar
    (position tables, constant states): the op then sees two activations.
  }];
  let arguments = (ins ElementsAttr:$value, StrAttr:$layer);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "attr-dict `:` type($output)";
}

def Tpu_FakeQuantOp : Tpu_Op<"fake_quant", [Pure]> {
  let summary = "y = scale * round_half_even(clamp(x / scale, lo, hi)): ONNX QuantizeLinear, kept dequantized";
  let description = [{
    A quantized model's QuantizeLinear (lo, hi = the integer range minus the zero point).
    INT8 programs take `scale` as the output's scale when [lo, hi] fits int8.
  }];
  let arguments = (ins AnyRankedTensor:$input, F64Attr:$scale, F64Attr:$lo, F64Attr:$hi, StrAttr:$layer);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tpu_ResizeNearestOp : Tpu_Op<"resize_nearest", [Pure]> {
  let summary = "NHWC nearest-neighbour resize: output pixel (y, x) copies input pixel (rows[y], cols[x])";
  let description = [{
    ONNX Resize/Upsample with mode nearest; the importer works out every output
    coordinate's source under the model's coordinate transformation and rounding rule.
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$rows, DenseI64ArrayAttr:$cols, StrAttr:$layer);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tpu_ZeroInsertOp : Tpu_Op<"zero_insert", [Pure]> {
  let summary = "NHWC image spread out: input pixel (y, x) at (pad_top + y * stride_h, pad_left + x * stride_w), zeros elsewhere";
  let description = [{
    The input of a transposed convolution's equivalent stride-1 convolution. `pad` is
    top, bottom, left, right.
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$pad, StrAttr:$layer);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tpu_Conv2DOp : Tpu_Op<"conv2d", [Pure]> {
  let summary = "NHWC convolution y = clamp(conv(x, w) + bias); w is [KH, KW, CI / groups, CO]";
  let description = [{
    With `groups` G > 1 the channels split into G groups: output channel co reads the input
    channels of group co / (CO / G) only. Depthwise convolutions have G = CI.
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$weight, AnyRankedTensor:$bias,
                   DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$pad, DenseI64ArrayAttr:$dilation,
                   F64Attr:$clamp_min, F64Attr:$clamp_max, StrAttr:$layer,
                   DefaultValuedAttr<I64Attr, "1">:$groups);
  let hasVerifier = 1;
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tpu_PoolOp : Tpu_Op<"pool", [Pure]> {
  let summary = "NHWC max or average pooling window";
  let description = [{
    Padding is skipped by max pools. `dilation` (max pools; default 1, 1) spaces the window's
    taps: tap (i, j) of output (y, x) reads input (y * stride_h + i * dilation_h - pad_top, ...). Average pools divide by the number of input elements
    in the window (TOSA's rule) unless `count_include_pad` is set, when padding counts as
    zeros and every window divides by its full size.
  }];
  let arguments = (ins AnyRankedTensor:$input, StrAttr:$kind, DenseI64ArrayAttr:$kernel,
                   DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$pad, StrAttr:$layer,
                   UnitAttr:$count_include_pad, OptionalAttr<DenseI64ArrayAttr>:$dilation);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tpu_PoolArgmaxOp : Tpu_Op<"pool_argmax", [Pure]> {
  let summary = "MaxPool's Indices: where each window's maximum is, as a flat NCHW index (i32, NHWC like the pool)";
  let description = [{
    For output (n, c, oh, ow) the index of the window's largest input in the flattened
    [N, C, H, W] tensor, n*C*H*W + c*H*W + h*W + w (storage_order = 1: n*C*H*W + c*H*W + w*H
    + h). Among equal maxima the smallest index wins; padding is never picked. Computed in
    fp32 rows, so indices must stay below 2^24.
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$kernel, DenseI64ArrayAttr:$stride,
                   DenseI64ArrayAttr:$pad, I64Attr:$storage_order, StrAttr:$layer);
  let results = (outs AnyRankedTensor:$output);
  let hasVerifier = 1;
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tpu_ArgMaxOp : Tpu_Op<"argmax", [Pure]> {
  let summary = "per row of [.., K]: the lane index of its largest (smallest, with `min`) value, as i32";
  let description = [{
    Row r's index goes to element r of the output (any shape with one element per row),
    which keeps ONNX's order when the reduced axis was moved last. Among equal values the
    first index wins, the last with `last`. Computed in fp32 rows (indices exact).
  }];
  let arguments = (ins AnyRankedTensor:$input, UnitAttr:$min, UnitAttr:$last, StrAttr:$layer);
  let results = (outs AnyRankedTensor:$output);
  let hasVerifier = 1;
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tpu_AddOp : Tpu_Op<"add", [Pure]> {
  let summary = "y = clamp(a + b), elementwise on two activations of the same shape";
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs, F64Attr:$clamp_min,
                   F64Attr:$clamp_max, StrAttr:$layer);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tpu_BinaryOp : Tpu_Op<"binary", [Pure]> {
  let summary = "y = a - b, a * b, max(a, b), min(a, b) or trunc(a / b) (integer Div), elementwise on two activations of the same shape";
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs, StrAttr:$kind, StrAttr:$layer);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tpu_BroadcastOp : Tpu_Op<"broadcast", [Pure]> {
  let summary = "repeat an activation along its size-1 dimensions (not the last) to the output's shape";
  let arguments = (ins AnyRankedTensor:$input, StrAttr:$layer);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tpu_TransposeOp : Tpu_Op<"transpose", [Pure]> {
  let summary = "output dimension k is input dimension perm[k] (a layout change of an activation)";
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$perm, StrAttr:$layer);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tpu_ConcatOp : Tpu_Op<"concat", [Pure]> {
  let summary = "activations joined along one dimension";
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, I64Attr:$axis, StrAttr:$layer);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tpu_SliceOp : Tpu_Op<"slice", [Pure]> {
  let summary = "the output-shaped window of an activation starting at `start` (step 1)";
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$start, StrAttr:$layer);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tpu_SoftmaxOp : Tpu_Op<"softmax", [Pure]> {
  let summary = "softmax over the last dimension, of input + mask when a mask is given";
  let description = [{
    The optional mask is a constant [M, N] added to the last two dimensions of the input
    (repeated over the leading ones) before the softmax: attention's causal or padding
    masks, kept in fp32 so INT8 scores never see their huge negative values.
    With `log`, the log-softmax: (x - max) - log(sum(exp(x - max))).
  }];
  let arguments = (ins AnyRankedTensor:$input, Optional<AnyRankedTensor>:$mask, StrAttr:$layer, UnitAttr:$log);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tpu_ReshapeOp : Tpu_Op<"reshape", [Pure]> {
  let summary = "a new shape for the same elements in row-major order";
  let arguments = (ins AnyRankedTensor:$input, StrAttr:$layer);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tpu_ClampOp : Tpu_Op<"clamp", [Pure]> {
  let summary = "y = min(max(x, clamp_min), clamp_max) on an activation that no layer absorbed";
  let arguments = (ins AnyRankedTensor:$input, F64Attr:$clamp_min, F64Attr:$clamp_max, StrAttr:$layer);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tpu_AffineOp : Tpu_Op<"affine", [Pure]> {
  let summary = "y = x * scale[c] + bias[c] per channel (the last dimension): a batch norm no layer absorbed";
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$scale, AnyRankedTensor:$bias, StrAttr:$layer);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tpu_UnaryOp : Tpu_Op<"unary", [Pure]> {
  let summary = "an elementwise function of the vector unit's tables: sigmoid, tanh, erf, exp, recip or rsqrt";
  let arguments = (ins AnyRankedTensor:$input, StrAttr:$fn, StrAttr:$layer);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tpu_CastOp : Tpu_Op<"cast", [Pure]> {
  let summary = "an integer program tensor (i32) to the activation domain (f32), or back";
  let description = [{
    Integer model inputs and outputs (token ids, MatMulInteger's uint8 activations and
    int32 results) live in HBM as int32. i32 -> f32 loads them and converts them on chip
    (vec.cvt) to the activation dtype; f32 -> i32 rounds an activation to int32 rows for an
    integer model output.
  }];
  let arguments = (ins AnyRankedTensor:$input, StrAttr:$layer);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tpu_EmbeddingOp : Tpu_Op<"embedding", [Pure]> {
  let summary = "y[i, :] = table[ids[i], :]: rows of a constant [V, D] table picked by run-time ids (i32)";
  let description = [{
    ONNX Gather(table, ids) along axis 0 with indices known only at run time. The chip has
    no data-dependent addressing, so the ids become one-hot rows (built exactly with vector
    operations) that multiply the table on the MXUs. Negative ids count from the end
    (id + V); ids outside [-V, V) select nothing and give zero rows.
  }];
  let arguments = (ins AnyRankedTensor:$ids, AnyRankedTensor:$table, StrAttr:$layer);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

// Row bands through HBM (compiler/pipeline/bands.cpp, docs/compiler.md "Activations larger than
// the unified buffer"): an activation too large for the unified buffer lives in HBM, row-major
// as a model input does, and the layers that read or write it work on bands of its rows.
def Tpu_HbmTensorOp : Tpu_Op<"hbm_tensor", [Pure]> {
  let summary = "an activation kept in HBM (row-major), written band by band by tpu.store_rows";
  let arguments = (ins StrAttr:$layer);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "attr-dict `:` type($output)";
}

def Tpu_StoreRowsOp : Tpu_Op<"store_rows", [Pure]> {
  let summary = "dest with the band written at `start` along `axis` (every dimension before it 1): the same HBM tensor";
  let description = [{
    Destination-passing: the result is `dest` (the same HBM bytes) with rows
    [start, start + band's extent) of dimension `axis` replaced by `band`, an activation in
    the unified buffer. Every dimension before `axis` is 1, so the band is one contiguous
    piece of the row-major tensor; or, when the band has fewer channels (last dimension) than
    the tensor, channels [channel_start, channel_start + band's channels) of those rows. With
    `row_step` s > 1 the band's rows go to rows start, start + s, start + 2s, ... (a phase of a
    transposed convolution, pipeline/band_subpixel.cpp). A band of rows (axis 1) of an image
    with fewer columns (dimension 2) than it goes to columns [col_start, col_start + band's)
    (a tile, pipeline/band_tiles.cpp).
  }];
  let arguments = (ins AnyRankedTensor:$band, AnyRankedTensor:$dest, I64Attr:$axis, I64Attr:$start, StrAttr:$layer,
                   DefaultValuedAttr<I64Attr, "0">:$channel_start, DefaultValuedAttr<I64Attr, "1">:$row_step,
                   DefaultValuedAttr<I64Attr, "0">:$col_start);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tpu_LoadRowsOp : Tpu_Op<"load_rows", [Pure]> {
  let summary = "rows [start, start + output's extent) of `axis` of an HBM tensor, into the unified buffer";
  let description = [{
    The source is a tpu.hbm_tensor (through its tpu.store_rows) or a model input kept in
    HBM; every dimension before `axis` is 1. When the output has fewer channels (last
    dimension) than the input: channels [channel_start, channel_start + output's channels).
    A band of rows (axis 1) of an image with fewer columns (dimension 2): columns
    [col_start, col_start + output's) (a tile, pipeline/band_tiles.cpp).
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis, I64Attr:$start, StrAttr:$layer,
                   DefaultValuedAttr<I64Attr, "0">:$channel_start, DefaultValuedAttr<I64Attr, "0">:$col_start);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}
