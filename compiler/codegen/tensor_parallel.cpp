// A tensor-parallel program's row-parallel matmuls (tpu.matmul with vtpu.all_reduce, set by
// compiler/pipeline/tensor_parallel.cpp; docs/compiler.md, "Tensor parallelism"): the chip's
// share of the weight rows gives partial sums, which leave the accumulators unrounded (int32
// in INT8, fp32 in bf16), are all-reduced over the chips by the collectives library's
// schedule placed in this program, and come back for the bias and the clamp (INT8: the
// RESCALE to the output's scale) that the single-chip matmul's epilogue applies.
//
// Every chip's program must agree on where the schedule's buffers are, because chips send
// into each other's: the HBM buffer and the unified-buffer slots are taken at the program's
// start, before any allocation whose size depends on the chip's share of the weights (a bias
// that is zero on one chip has no rows), and the flags come right after the code generator's
// own (FlagPlan).
#include "codegen_internal.h"
#include "vtpu/collectives/plan.h"

namespace vtpu::compiler::codegen {
namespace {

// A row-parallel matmul's all-reduce goes in up to this many chunks of whole column blocks,
// each overlapped with the next one's matmuls.
constexpr uint64_t kAllReduceChunks = 4;

// A matmul's partial sums as unified-buffer rows of C lanes of 4 bytes, column block after
// column block, each block whole units of the collective.
struct RawLayout {
  uint64_t blocks = 0, block_bytes = 0;
  uint64_t bytes() const { return blocks * block_bytes; }
};

RawLayout raw_layout(const config::Config& cfg, bool q8, uint64_t rows, uint64_t N) {
  const uint64_t C = cfg.core.mxu.cols;
  return {ceil_div(N, C), align_up(rows * C * 4, collectives::unit_bytes(cfg, q8 ? isa::Dtype::Int32 : isa::Dtype::Fp32))};
}

collectives::Spec all_reduce_spec(const config::Config& cfg, bool q8, uint64_t bytes) {
  collectives::Spec s;
  s.kind = collectives::Kind::AllReduce;
  s.bytes = bytes;
  s.dtype = q8 ? isa::Dtype::Int32 : isa::Dtype::Fp32;
  s.algorithm = collectives::Spec::Algorithm::Auto;  // one-shot where the model says it is faster
  return s;
}

}  // namespace

void Codegen::all_reduce_of(mlir::func::FuncOp fn) {
  uint64_t largest = 0;
  fn.walk([&](tpu::MatmulOp op) {
    if (!op->hasAttr(tpu::kAllReduceAttr)) return;
    auto ws = shape_of(op.getWeight());
    uint64_t rows = numel(shape_of(op.getInput())) / uint64_t(ws[0]);
    largest = std::max(largest, raw_layout(cfg_, q8_, rows, uint64_t(ws[1])).bytes());
  });
  if (!largest) return;
  auto chip = fn->getAttrOfType<mlir::IntegerAttr>(tpu::kChipAttr);
  if (!chip || chip.getInt() < 0 || uint64_t(chip.getInt()) >= cfg_.system.chips)
    throw InternalError("a tensor-parallel program without the chip it runs on (vtpu.chip)");
  all_reduce_.chip = uint32_t(chip.getInt());
  if (batch_chunks_ > 1)
    throw CompileError("a tensor-parallel program runs its batch whole; this batch does not fit the unified buffer "
                       "even split across the chips: use a smaller --batch");
  // The schedule's budget: an eighth of the unified buffer, the flags the code generator
  // leaves, keeping early stores' flags where it can.
  const int left = FlagPlan::left_for_collectives(cfg_, link_.staged);
  collectives::Spec s = all_reduce_spec(cfg_, q8_, largest);
  s.at.ub_bytes = cfg_.core.unified_buffer.bytes / 8;
  s.at.flags = unsigned(std::max(1, left - FlagPlan::kMostEarlyStores));
  try {
    collectives::plan(cfg_, s);  // fits the budget
  } catch (const UserError&) {
    s.at.flags = unsigned(std::max(1, left));
    try {
      collectives::plan(cfg_, s);
    } catch (const UserError& e) {
      throw CompileError(fmt::format("config '{}': the tensor-parallel all-reduce does not fit beside the program ({}); "
                                     "raise core.scalar.sync_flags (now {}, at most {}) or give the unified buffer more room",
                                     cfg_.name, e.what(), cfg_.core.scalar.sync_flags, isa::kNumFlags - 1));
    }
  }
  flags_ = FlagPlan::of(cfg_, link_.staged, int(s.at.flags));
  all_reduce_.largest = largest;
  all_reduce_.hbm = hbm_alloc(largest);
  all_reduce_.ub_bytes = s.at.ub_bytes;
  all_reduce_.ub = ub_take(s.at.ub_bytes, "the all-reduces' buffers", false);
}

// How many chunks a row-parallel matmul's all-reduce goes in: the count whose estimated time
// is least, with c chunks C / c + (c - 1) max(C / c, A(S / c)) + A(S / c) (C the matmul's
// cycles at full MXU use, A an all-reduce's alpha-beta time): each chunk's all-reduce hides
// the next one's matmuls but pays the all-reduce's latency again. On TPU v4 slices the
// chips' shares of BERT's or GPT-2's matmuls take a few microseconds against tens for their
// all-reduces, so one chunk; a layer whose share of compute outlasts several latencies gets
// more.
uint64_t Codegen::all_reduce_chunks(uint64_t macs, uint64_t blocks, uint64_t block_bytes) const {
  const double per_cycle = double(cfg_.core.mxu.count) * double(R_) * double(C_), clock = cfg_.clock_mhz * 1e6;
  const double compute = double(macs) / per_cycle / clock;
  uint64_t best = 1;
  double best_t = 0;
  for (uint64_t c = 1; c <= std::min(blocks, kAllReduceChunks); ++c) {
    collectives::Spec s = all_reduce_spec(cfg_, q8_, ceil_div(blocks, c) * block_bytes);
    s.at.ub_bytes = all_reduce_.ub_bytes;
    s.at.flags = unsigned(flags_.collective_flags);
    double a = collectives::alpha_beta(cfg_, collectives::plan(cfg_, s)).seconds();
    double t = compute / double(c) + double(c - 1) * std::max(compute / double(c), a) + a;
    if (c == 1 || t < best_t) best = c, best_t = t;
  }
  return best;
}

void Codegen::gen_all_reduce_matmul(tpu::MatmulOp op) {
  const std::string layer = op.getLayer().str();
  tag(layer);
  const Act& x = act(op.getInput());
  auto ws = shape_of(op.getWeight());
  const uint64_t K = uint64_t(ws[0]), N = uint64_t(ws[1]);
  if (x.features != K) throw CompileError(fmt::format("node '{}': input has {} features, weights expect {}", layer, x.features, K));
  if (is_int32(op.getOutput())) throw CompileError(fmt::format("node '{}': an integer output is not split across chips", layer));
  auto bias = const_floats(op.getBias(), layer);
  std::vector<float> w = const_floats(op.getWeight(), layer);
  std::vector<double> acc_scale;
  if (q8_) {
    auto am = op->getAttrOfType<mlir::DenseF64ArrayAttr>(tpu::kWeightAbsmaxAttr);
    if (!am || am.size() != int64_t(N)) throw InternalError(fmt::format("node '{}': vtpu.all_reduce without its columns' |weight| maxima", layer));
    std::vector<double> absmax(am.asArrayRef().begin(), am.asArrayRef().end());
    for (double s : quantize(w, K, N, &absmax)) acc_scale.push_back(s * scale(op.getInput()));
  }
  const uint64_t kt = ceil_div(K, R_), nt = ceil_div(N, C_);
  std::vector<std::vector<TileRef>> tiles(nt, std::vector<TileRef>(kt));
  for (uint64_t n = 0; n < nt; ++n)
    for (uint64_t k = 0; k < kt; ++k) tiles[n][k] = weight_tile(w, K, N, k, n);
  std::vector<float>().swap(w);
  const isa::Dtype acc_dt = q8_ ? isa::Dtype::Int32 : isa::Dtype::Fp32;

  // The output, its bias rows and the epilogue's parameters, as the single-chip matmul has them.
  Act y = new_act(shape_of(op.getOutput()), fmt::format("the output of '{}'", layer));
  uint64_t bias_ub = bias_rows(bias, acc_scale);
  auto eps = epilogue_params(N, acc_scale, q8_ ? scale(op.getOutput()) : 1.0, op.getClampMin().convertToDouble(),
                             op.getClampMax().convertToDouble());

  // The partial sums, column block after column block, in chunks of whole column blocks:
  // chunk c's all-reduce runs while chunk c + 1's matmuls do (its schedule's lines go in
  // between the stream's, run_blocks' transfers), then its sums get the epilogue.
  const RawLayout raw = raw_layout(cfg_, q8_, x.rows, N);
  if (raw.bytes() > all_reduce_.largest) throw InternalError("an all-reduce larger than its buffers");
  const uint64_t raw_at = ub_take(raw.bytes(), fmt::format("the partial sums of '{}'", layer));
  const uint64_t chunks = all_reduce_chunks(x.rows * K * N, nt, raw.block_bytes);
  auto first_block = [&](uint64_t c) { return c * nt / chunks; };
  // Chunk c's blocks: each (column block, row chunk) copies its accumulators out unrounded.
  auto chunk_blocks = [&](uint64_t c) {
    const uint64_t n0 = first_block(c), n1 = first_block(c + 1), mc = row_chunk(x.rows, n1 - n0);
    std::vector<Block> blocks;
    for (uint64_t n = n0; n < n1; ++n)
      for (uint64_t r0 = 0; r0 < x.rows; r0 += mc) {
        uint64_t rows = std::min(mc, x.rows - r0);
        Block b;
        for (uint64_t k = 0; k < kt; ++k)
          b.groups.push_back({tiles[n][k], {{x.base + k * x.block_bytes + r0 * R_ * esz_, rows, 0, 0, k > 0}}});
        uint64_t to = raw_at + n * raw.block_bytes + r0 * C_ * 4;
        b.epilogue = [this, rows, to, acc_dt](uint32_t m, uint64_t acc_row) {
          uint64_t g = uint64_t(m) * cfg_.core.accumulators.rows + acc_row;
          std::string pre, at = reg_ref(to, 8, pre);
          return std::vector<std::string>{pre + "  " + emit::vec_copy(ub_ref(at), acc_at(g), rows, acc_dt, kPendingFlag) + "\n"};
        };
        blocks.push_back(std::move(b));
      }
    return blocks;
  };
  // Chunk c's bytes between the unified buffer and its place in the HBM buffer.
  auto move = [&](uint64_t c, bool store) {
    const uint64_t off = first_block(c) * raw.block_bytes, bytes = (first_block(c + 1) - first_block(c)) * raw.block_bytes;
    std::string d = new_desc(fmt::format("bytes={}", bytes));
    uint64_t ub = raw_at + off, hbm = all_reduce_.hbm + off;
    code("  " + emit::li(reg(1), int64_t(store ? ub : hbm)) + " || " + emit::li(reg(2), int64_t(store ? hbm : ub)));
    code("  " + (store ? emit::dma_store({d}, reg(1), reg(2), emit::flag(1)) : emit::dma_load({d}, reg(1), reg(2), emit::flag(1))));
    code("  " + emit::wait(emit::flag(1)));
  };
  // Chunk c's all-reduce, in HBM in place, by the schedule every chip runs with the same plan:
  // its lines, each to go in at its share of the next stream.
  auto all_reduce_lines = [&](uint64_t c) {
    collectives::Spec s = all_reduce_spec(cfg_, q8_, (first_block(c + 1) - first_block(c)) * raw.block_bytes);
    s.at.hbm_addr = all_reduce_.hbm + first_block(c) * raw.block_bytes;
    s.at.ub_base = all_reduce_.ub;
    s.at.ub_bytes = all_reduce_.ub_bytes;
    s.at.first_flag = unsigned(flags_.collective);
    s.at.flags = unsigned(flags_.collective_flags);
    std::string sched = collectives::embedded_assembly(cfg_, collectives::plan(cfg_, s), all_reduce_.chip,
                                                       [this](uint64_t bytes) { return new_desc(fmt::format("bytes={}", bytes)); });
    std::vector<std::string> lines;
    for (size_t a = 0, b; a < sched.size(); a = b + 1) {
      b = sched.find('\n', a);
      if (b == std::string::npos) b = sched.size();
      if (b > a) lines.push_back(sched.substr(a, b - a + 1));
    }
    return lines;
  };
  // Chunk c's sums back, and the single-chip matmul's epilogue phases on them block by
  // block, each waited for: bias, then RESCALE (INT8) or clamp and conversion (bf16).
  auto finish = [&](uint64_t c) {
    move(c, false);
    const uint64_t most = 4096;  // rows per vector operation (the field holds 16 bits)
    for (uint64_t n = first_block(c); n < first_block(c + 1); ++n)
      for (uint64_t r0 = 0; r0 < x.rows; r0 += most) {
        std::string pre, sums = reg_ref(raw_at + n * raw.block_bytes + r0 * C_ * 4, 1, pre);
        if (!pre.empty()) code(pre.substr(0, pre.size() - 1));
        for (const std::string& ph : epilogue_of(ub_ref(sums), std::min(most, x.rows - r0), bias_at(bias_ub, n), eps[n],
                                                 y.base + n * y.block_bytes + r0 * C_ * out_esz_)) {
          code_ += with_flag(ph, flags_.vector);
          code("  " + emit::wait(emit::flag(unsigned(flags_.vector))));
        }
      }
  };
  std::vector<std::string> in_flight;  // the previous chunk's all-reduce
  for (uint64_t c = 0; c < chunks; ++c) {
    std::vector<Block> blocks = chunk_blocks(c);
    std::vector<std::pair<std::string, double>> transfers;
    for (size_t i = 0; i < in_flight.size(); ++i) transfers.push_back({in_flight[i], double(i) / double(in_flight.size())});
    run_blocks(blocks, true, std::nullopt, {}, {}, std::move(transfers));
    move(c, true);
    if (c > 0) finish(c - 1);
    in_flight = all_reduce_lines(c);
  }
  for (const std::string& l : in_flight) code_ += l;
  finish(chunks - 1);
  ub_.release(raw_at);
  if (bias_ub != kNoBias) ub_.release(bias_ub);
  add_bound(layer, x.rows * K * N, K * N * esz_);
  define(op.getOutput(), y);
}

}  // namespace vtpu::compiler::codegen
