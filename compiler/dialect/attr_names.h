#pragma once
// The names of the attributes the importer puts on func @main (compiler/import/driver.cpp), read
// by calibration, the reference run, model_inputs and code generation. Named once here; they are
// discardable attributes of the func dialect's ops, so they carry a `vtpu.` prefix of their own
// rather than the tpu dialect's.
#include "llvm/ADT/StringRef.h"

namespace vtpu::tpu {

// On @main's arguments and results: the ONNX tensor's name (a StringAttr).
inline constexpr llvm::StringLiteral kNameAttr = "vtpu.name";
// On @main's arguments and results: a 4-D image stored NHWC (a UnitAttr); the runtime
// transposes NCHW data.
inline constexpr llvm::StringLiteral kNhwcAttr = "vtpu.nhwc";
// On @main's results: the element type the ONNX file declares when it is neither float32 nor
// int32 (a StringAttr, one of isa::model_types(): "int64", "bool", "float16", ...); the
// program's output tensor carries it (isa::TensorInfo::model_type).
inline constexpr llvm::StringLiteral kModelTypeAttr = "vtpu.model_type";
// On an integer input (an i32 argument): the range of integers INT8 calibration draws its
// samples from (IntegerAttrs; token ids: the rows of the table they index).
inline constexpr llvm::StringLiteral kIntLoAttr = "vtpu.int_lo";
inline constexpr llvm::StringLiteral kIntHiAttr = "vtpu.int_hi";
// On @main: the empty (0-element) inputs and outputs, which have no arguments or results, as
// [role, name, dims, integer] arrays.
inline constexpr llvm::StringLiteral kEmptyTensorsAttr = "vtpu.empty_tensors";
// On @main, set by the pipeline when the whole batch does not fit the unified buffer
// (compiler/pipeline/batch_chunks.cpp): @main is one chunk of the batch, and the program runs
// it this many times over consecutive slices of every input and output (an IntegerAttr).
inline constexpr llvm::StringLiteral kBatchChunksAttr = "vtpu.batch_chunks";
// With vtpu.batch_chunks, when the chunks do not divide the batch: the batch (an IntegerAttr),
// the first dimension the inputs and outputs are declared with; the last pass's rows past it
// are padding that nothing reads.
inline constexpr llvm::StringLiteral kBatchWholeAttr = "vtpu.batch_whole";
// With vtpu.batch_chunks, when the model's last layers run once at the whole batch after the
// chunks (batch_chunks.cpp, "a tail at the whole batch"): the name of @main's result that the
// tail reads (a StringAttr); it stays in HBM, no program tensor.
inline constexpr llvm::StringLiteral kTailInputAttr = "vtpu.tail_input";
// On @main, set by the pipeline-parallel split (compiler/pipeline/stages.cpp): the program is
// one stage of a model split across chips (a DictionaryAttr): `receive` (BoolAttr) its first
// input arrives over ICI, one chunk per pass; `send_chip` and `send_addr` (IntegerAttrs) its
// output goes, one chunk per pass, to that chip's input tensor at that HBM address.
inline constexpr llvm::StringLiteral kStageLinkAttr = "vtpu.stage_link";
// Set by the tensor-parallel split (compiler/pipeline/tensor_parallel.cpp). On a tpu.matmul
// (a row-parallel one: its weight rows are this chip's share): its output is the sum over the
// system's chips of their products, all-reduced before its bias and clamp (an IntegerAttr,
// the chip count). With it, in INT8, `vtpu.weight_absmax` (a DenseF64ArrayAttr): each output
// column's largest |weight| over all the chips' rows, so every chip quantizes its share with
// the whole column's scale and the int32 sums add up to the single-chip run's.
// A tpu.conv2d may carry vtpu.weight_absmax too: a transposed convolution's phase
// (pipeline/band_subpixel.cpp) quantized with the whole layer's scale per output channel.
inline constexpr llvm::StringLiteral kAllReduceAttr = "vtpu.all_reduce";
inline constexpr llvm::StringLiteral kWeightAbsmaxAttr = "vtpu.weight_absmax";
// On @main of a tensor-parallel program: the chip of the system it runs on (an IntegerAttr);
// its all-reduces' schedules are that chip's.
inline constexpr llvm::StringLiteral kChipAttr = "vtpu.chip";

// On the ops the band planner made (compiler/pipeline/bands.cpp): a band of a layer too large
// for the unified buffer, or a load or store of its rows (a UnitAttr). Code generation reports
// a layer's bands as one layer: on a band of a layer the attribute is the whole layer's shape
// (a DenseI64ArrayAttr), on the loads, stores, slices and concats around them a UnitAttr.
inline constexpr llvm::StringLiteral kBandAttr = "vtpu.band";
// On a tpu.conv2d whose weights are this many equal-sized blocks on the diagonal, the rest
// zeros (an IntegerAttr): a transposed convolution's phase on the flat view of its input
// (pipeline/band_subpixel.cpp). Its useful MACs are the blocks' only.
inline constexpr llvm::StringLiteral kBlockDiagonalAttr = "vtpu.block_diagonal";
// On a band of a convolution whose input is a transposed convolution's spread (tpu.zero_insert)
// that the band planner keeps in HBM: the band's useful MACs, the products of the spread's own
// pixels (an IntegerAttr; code generation cannot see the spread through the band's load).
inline constexpr llvm::StringLiteral kUsefulMacsAttr = "vtpu.useful_macs";
// On a slice of channels of an image in HBM that the band planner reads in place (its readers'
// bands load those channels; a UnitAttr), or on the spread input of a transposed convolution
// run in phases (pipeline/band_subpixel.cpp; the phases read the unspread input): it moves
// nothing, its layer reported with no work.
inline constexpr llvm::StringLiteral kInPlaceAttr = "vtpu.in_place";

}  // namespace vtpu::tpu
