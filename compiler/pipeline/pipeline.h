#pragma once
// Internal: the compiler's front half as one pipeline, used by compile_onnx, model_inputs and
// reference_outputs alike (pipeline.cpp), and INT8 calibration (calibration.cpp).
//
//   model.onnx --import_onnx (import/)--> TOSA --build_tosa_to_tpu_pipeline (transforms/)--> tpu
//   dialect --calibrate (INT8; reference/)--> generate_program (codegen) --> program
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"
#include "reference/reference.h"
#include "vtpu/compiler/compiler.h"

namespace vtpu::compiler {

// Registers the dialects the compiler uses in a context.
void load_dialects(mlir::MLIRContext& ctx);

// The passes from the importer's TOSA to the tpu dialect, in order (docs/compiler.md,
// "Pipeline"); vtpu-opt runs them as --tpu-pipeline.
void build_tosa_to_tpu_pipeline(mlir::OpPassManager& pm);

// One model through the front half, in an MLIRContext of its own with the compiler's dialects
// and its diagnostics collected: import() to TOSA, lower() to the tpu dialect.
class Frontend {
 public:
  Frontend(const std::filesystem::path& model, const CompileOptions& options);
  Frontend(const Frontend&) = delete;
  Frontend& operator=(const Frontend&) = delete;

  mlir::ModuleOp import();
  // Throws a CompileError "<model>: <what the passes reported>".
  void lower();
  mlir::ModuleOp module() { return *module_; }
  mlir::func::FuncOp main() { return module_->lookupSymbol<mlir::func::FuncOp>("main"); }

 private:
  std::filesystem::path model_;
  CompileOptions options_;
  mlir::MLIRContext ctx_;
  std::string diagnostics_;
  std::unique_ptr<mlir::ScopedDiagnosticHandler> handler_;
  mlir::OwningOpRef<mlir::ModuleOp> module_;
};

// The ONNX node an op of the tpu dialect comes from (its `layer`), else the op's name.
std::string layer_of(mlir::Operation* op);

// The IR for people to read: constants of more than 16 values are elided, or ResNet-50's IR
// would be 100 MB of hex.
std::string print_ir(mlir::ModuleOp m);

// @main's inputs from values given by argument name, checked against the arguments' sizes.
// `missing` and `wrong_size` word the errors ({} the name; then the count given and needed).
std::vector<RefTensor> named_inputs(mlir::func::FuncOp fn, const std::map<std::string, std::vector<float>>& given,
                                    const char* missing, const char* wrong_size);

// Post-training INT8 calibration (calibration.cpp): for every activation of @main (by
// Value::getAsOpaquePointer) its symmetric per-tensor scale. `step`, when given, hears the
// share of the calibration runs done after each (for CompileOptions::progress).
std::map<const void*, float> calibrate(mlir::ModuleOp module, const CompileOptions& options,
                                       const std::function<void(double)>& step = {});

// compile_onnx and ModelCompiler's shared steps: the --emit-mlir stage checked ("", tosa or
// tpu), and the INT8 scales by value, calibrated (`step` hears the share done) or the ones
// CompileOptions::calibration_scales gives.
void check_emit_stage(const CompileOptions& options);
std::map<const void*, float> int8_scales(Frontend& front, const std::filesystem::path& model, const CompileOptions& options,
                                         const std::function<void(double)>& step = {});

// @main's values in a fixed order (its arguments, then every op's results in walk order): the
// order calibration scales travel in between compiles of one model
// (CompileOptions/CompileResult::calibration_scales).
std::vector<const void*> value_order(mlir::func::FuncOp fn);
// `scales` (by value) in value_order, NaN for a value without one: the form
// CompileOptions/CompileResult::calibration_scales carry.
std::vector<float> scales_in_order(mlir::func::FuncOp fn, const std::map<const void*, float>& scales);
// Scales given in value_order (CompileOptions::calibration_scales, NaN: none) on @main's
// values; a UserError naming `model` when they are for another model (another count).
std::map<const void*, float> given_scales(mlir::func::FuncOp fn, const std::vector<float>& ordered,
                                          const std::filesystem::path& model);
// Scales given in value_order (NaN: none) of the model at `whole_batch`, on the values of
// @main of the same model at `batch`.
std::map<const void*, float> scales_by_value(mlir::func::FuncOp fn, const std::vector<float>& ordered,
                                             const std::filesystem::path& model, int64_t batch, int64_t whole_batch);

// Code for `cfg` from a lowered `module` (generate_program), and when the whole batch does
// not fit the unified buffer, the batch in chunks or the images in row bands as compile_onnx
// does; `scales` are on `module`'s values, `ordered` the same in value_order (INT8).
CompileResult generate_or_split(mlir::ModuleOp module, const std::filesystem::path& model, const config::Config& cfg,
                                const CompileOptions& options, const CompileOptions& generating,
                                const std::map<const void*, float>& scales, const std::vector<float>& ordered);

// A batch in chunks (batch_chunks.cpp). Why @main, at batch `batch`, cannot run as chunks of
// its batch (a value or op that mixes samples, an output that is not per sample), or "" when
// it can.
std::string why_samples_mix(mlir::func::FuncOp fn, int64_t batch);
// The second look why_samples_mix takes when its rules refuse (sample_layout.cpp): where each
// value holds the samples (a recurrent layer's time-major rows), "" when no op mixes them.
std::string why_samples_mix_by_layout(mlir::func::FuncOp fn, int64_t batch);
// The batch of @main: its first input's first dimension (0 without inputs or for a scalar).
int64_t batch_of(mlir::func::FuncOp fn);
// batch_of(fn) when @main can run in chunks of it (why_samples_mix is empty), else 0.
int64_t chunkable_batch(mlir::func::FuncOp fn);
// Bounds of code for `chunk` samples that runs `passes` times (chunks, micro-batches) over a
// batch of `batch` (passes x chunk, or fewer when the last pass is padded) as the batch's.
void scale_bounds(std::vector<LayerBound>& bounds, int64_t passes, int64_t batch, int64_t chunk);
// Marks @main, compiled for chunks of `chunk`, to run ceil(batch / chunk) times (and, when
// the chunks do not divide the batch, with the batch's rows declared); returns the passes.
int64_t mark_chunks(mlir::func::FuncOp fn, int64_t batch, int64_t chunk);
// The model compiled for the largest chunk of `batch` that fits, run once per chunk; `scales`
// are the whole batch's in value_order (INT8), `whole` the whole batch's error, thrown again
// (with the one-sample error) when no chunk fits; with `bands`, one sample at a time in row
// bands is tried before that.
CompileResult compile_in_chunks(const std::filesystem::path& model, const config::Config& cfg, const CompileOptions& options,
                                const CompileOptions& generating, int64_t batch, const std::vector<float>& scales,
                                const DoesNotFitError& whole, bool bands);

// A place the model may be cut (stages.cpp): after ops[at] (@main's ops but constants and the
// return), where `value` alone crosses and is stored as it is, so that the parts compute what
// the whole does.
struct Cut {
  size_t at;
  mlir::Value value;
  size_t defined;   // the index of value's op
  unsigned result;  // which of its results
};
std::vector<Cut> cuts_of(const std::vector<mlir::Operation*>& ops);
// @main's ops but its constants and return, in order: what cuts_of indexes.
std::vector<mlir::Operation*> ops_of(mlir::func::FuncOp fn);
// The part of `whole` after cut `a` (none: from the start) up to cut `b` (none: to the
// return), `a`'s value an argument named `in`, `b`'s returned as `out`; `stage_scales` the
// INT8 scales of `scales` on the part's values.
mlir::OwningOpRef<mlir::ModuleOp> stage_module(mlir::ModuleOp whole, const Cut* a, const Cut* b, const std::string& in,
                                               const std::string& out, const std::map<const void*, float>& scales,
                                               std::map<const void*, float>& stage_scales);

// Whether @main has images whose rows layers could take in bands (a convolution, pool or
// resize, or an elementwise op of a model's input image): a transformer or an MLP has none, and
// is not compiled again to find out.
bool has_images(mlir::func::FuncOp fn);
// Images too large for the unified buffer in row bands through HBM (bands.cpp): images of one
// sample larger than half of `budget` bytes are kept in HBM, and the layers that read or write
// them run in bands of rows whose working set fits `budget`. Scales of the new values are
// their originals' (INT8). With `channels` (tried once bands of rows alone have not fitted),
// the layers of which not even one row fits and that keep channels apart run in bands of
// channels too, a concat of channels into HBM stores its inputs into their channels, and a
// matmul whose output does not fit runs in bands of rows (split_matmul_rows).
// Returns how many layers (with the ops chained to them) were split.
size_t split_into_bands(mlir::func::FuncOp fn, const config::Config& cfg, bool int8, uint64_t budget,
                        std::map<const void*, float>& scales, bool channels = false);
// Transposed convolutions whose kernel is their stride (ConvTranspose 2x2 stride 2) in
// phases of 1x1 convolutions with their outputs in HBM (band_subpixel.cpp), even where every
// image fits the unified buffer: the spread form the importer makes multiplies s x s times as
// many pixels, three quarters of them inserted zeros. Nothing else moves. Returns how many
// layers were rewritten (0: none in the model, which is then left as it was).
size_t phases_through_hbm(mlir::func::FuncOp fn, const config::Config& cfg, bool int8, std::map<const void*, float>& scales);
// A matmul whose result (a model output) is larger than half of `budget`, with the row-wise
// ops after it, in bands of rows stored into the output in HBM (matmul_rows.cpp). Returns
// how many were split.
size_t split_matmul_rows(mlir::func::FuncOp fn, const config::Config& cfg, bool int8, uint64_t budget,
                         std::map<const void*, float>& scales);
// The model at batch `batch` compiled with its images in row bands, the budget halved until
// it fits the unified buffer; `whole` (the error without bands) thrown again when nothing fits.
CompileResult compile_in_bands(const std::filesystem::path& model, const config::Config& cfg, const CompileOptions& options,
                               const CompileOptions& generating, int64_t batch, const std::vector<float>& scales,
                               const DoesNotFitError& whole);

}  // namespace vtpu::compiler
