// A batch in chunks (@main's vtpu.batch_chunks, set by the pipeline when the whole batch
// does not fit the unified buffer; docs/compiler.md, "Batches larger than the unified
// buffer"): @main is one chunk, generated as usual, and the program runs it once per chunk.
// Every input and output tensor is declared whole ([chunks x n, ...]); the code reads and
// writes it through a base register that holds the current chunk's offset into it, and
// advances by one chunk's bytes after each pass. Everything else (weights, constants, the
// unified buffer's layout) is the same in every pass: weights are loaded again per chunk.
// When the chunks do not divide the batch (vtpu.batch_whole), each tensor is declared with the
// batch's rows and its HBM region holds every pass's: the last pass computes on padding
// rows past the batch (zeros) and writes rows that nothing reads.
#include "codegen_internal.h"

namespace vtpu::compiler::codegen {
namespace {

// Registers the chunk loop owns (codegen_internal.h says who uses which): the bases of the
// inputs and outputs count down from r30 to the first above the MXUs' weight-FIFO registers,
// r31 counts passes.
constexpr unsigned kTopBaseReg = 30, kPassReg = 31;
const char* const kChunkLabel = "batch_chunk";

}  // namespace

void Codegen::chunks_of(mlir::func::FuncOp fn) {
  auto at = fn->getAttrOfType<mlir::IntegerAttr>(tpu::kBatchChunksAttr);
  batch_chunks_ = at ? uint64_t(at.getInt()) : 1;
  if (batch_chunks_ < 1) throw InternalError("vtpu.batch_chunks below 1");
  auto whole = fn->getAttrOfType<mlir::IntegerAttr>(tpu::kBatchWholeAttr);
  batch_whole_ = whole ? whole.getInt() : 0;
}

uint64_t Codegen::io_alloc(uint64_t chunk_bytes, const std::string& name) {
  uint64_t at = hbm_alloc(chunk_bytes * batch_chunks_);
  if (batch_chunks_ == 1) return at;
  unsigned lowest = kWfifoRegs + unsigned(cfg_.core.mxu.count), r = kTopBaseReg - unsigned(io_regions_.size());
  if (r < lowest || r > kTopBaseReg)
    throw CompileError(fmt::format("the batch does not fit the unified buffer, and running it in chunks needs a register "
                                   "per input and output: the model has more than the {} this config leaves (at '{}'); "
                                   "use a smaller batch or a larger unified buffer",
                                   kTopBaseReg + 1 - std::min(lowest, kTopBaseReg + 1), name));
  io_regions_.push_back({at, chunk_bytes, r});
  return at;
}

emit::Reg Codegen::hbm_base(uint64_t hbm) const {
  for (const IoRegion& io : io_regions_)
    if (hbm >= io.begin && hbm < io.begin + io.chunk_bytes) return reg(io.reg);
  return reg(0);
}

std::vector<int64_t> Codegen::io_shape(std::vector<int64_t> chunk_shape) const {
  if (batch_chunks_ > 1 && !chunk_shape.empty()) chunk_shape[0] = batch_whole_ ? batch_whole_ : chunk_shape[0] * int64_t(batch_chunks_);
  return chunk_shape;
}

// After the last output's store: advance every base, count the pass, and put the bases'
// and the counter's first values before the body.
void Codegen::chunks_end() {
  if (batch_chunks_ == 1) return;
  tag("batch chunks");
  for (const IoRegion& io : io_regions_) code("  " + emit::addi(reg(io.reg), reg(io.reg), int64_t(io.chunk_bytes)));
  code("  " + emit::loop(reg(kPassReg), emit::Label{kChunkLabel}));
  std::string prologue;
  for (const IoRegion& io : io_regions_) prologue += "  " + emit::li(reg(io.reg), 0) + "\n";
  prologue += "  " + emit::li(reg(kPassReg), int64_t(batch_chunks_)) + "\n" + kChunkLabel + ":\n";
  code_ = prologue + code_;
  counted_to_ += count_bundle_lines(prologue, bundles_);  // the bases' and the counter's li
}

}  // namespace vtpu::compiler::codegen
