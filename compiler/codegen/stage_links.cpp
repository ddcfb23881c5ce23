// A pipeline stage's links (@main's vtpu.stage_link, set by the pipeline-parallel split,
// compiler/pipeline/stages.cpp; docs/compiler.md, "Pipeline stages"): the program is one
// stage of a model split across chips, and the batch runs through it in micro-batches (the
// chunks of batch_chunks.cpp, one pass per micro-batch).
//
// - A stage that receives waits, at the start of every pass, for one micro-batch of its first
//   input to have arrived (flag `arrived`, which the sender's ici.send increments here).
// - A stage that sends stores its one output as usual, then sends that micro-batch from its
//   HBM to the next chip's input tensor at the same offset (the input and the output are the
//   same tensor, so one chunk's bytes are equal and the chunk base register serves both
//   ends), counting acknowledgements on `sent`; before halting it waits for all of them.
// Nothing waits for the receiver to be ready: every micro-batch has its own place in the
// receiver's input tensor.
#include "codegen_internal.h"

namespace vtpu::compiler::codegen {
namespace {

constexpr unsigned kChipReg = 9;  // an address register, free between ops

}  // namespace

void Codegen::stage_of(mlir::func::FuncOp fn) {
  auto d = fn->getAttrOfType<mlir::DictionaryAttr>(tpu::kStageLinkAttr);
  if (!d) return;
  auto receive = d.getAs<mlir::BoolAttr>("receive");
  auto chip = d.getAs<mlir::IntegerAttr>("send_chip");
  auto addr = d.getAs<mlir::IntegerAttr>("send_addr");
  if (!receive || !chip || !addr) throw InternalError("vtpu.stage_link without receive, send_chip and send_addr");
  link_.staged = true;
  link_.receive = receive.getValue();
  link_.send_chip = chip.getInt();
  link_.send_addr = uint64_t(addr.getInt());
  if (link_.send_chip >= int64_t(cfg_.system.chips))
    throw InternalError(fmt::format("a stage sends to chip {} of a {}-chip config", link_.send_chip, cfg_.system.chips));
  flags_ = FlagPlan::of(cfg_, true);
}

void Codegen::stage_receive() {
  if (!link_.receive) return;
  tag("stage receive");
  code("  " + emit::wait(emit::flag(unsigned(flags_.arrived))));
}

void Codegen::stage_output(uint64_t addr, uint64_t chunk_bytes) {
  if (!link_.staged || link_.send_chip < 0) return;
  if (link_.out_bytes) throw InternalError("a sending stage with more than one output");
  link_.out_addr = addr;
  link_.out_bytes = chunk_bytes;
}

void Codegen::stage_send() {
  if (!link_.staged || link_.send_chip < 0) return;
  if (!link_.out_bytes) throw InternalError("a sending stage without an output");
  tag("stage send");
  std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={}", link_.out_bytes, link_.out_addr, link_.send_addr));
  emit::Reg base = hbm_base(link_.out_addr);
  code("  " + emit::li(reg(kChipReg), link_.send_chip));
  code("  " + emit::ici_send({d}, base, base, reg(kChipReg), isa::IciMem::Hbm, isa::IciMem::Hbm,
                             emit::flag(unsigned(flags_.arrived)), emit::flag(unsigned(flags_.sent))));
}

void Codegen::stage_end() {
  if (!link_.staged || link_.send_chip < 0) return;
  code("  " + emit::wait(emit::flag(unsigned(flags_.sent)), batch_chunks_));
}

}  // namespace vtpu::compiler::codegen
