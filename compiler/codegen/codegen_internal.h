#pragma once
// tpu dialect -> vtpu program (docs/compiler.md, "Code generation").
//
// Activations live in the unified buffer in the chip's blocked layout: a tensor seen as
// rows x features (an NHWC image is pixels x channels) is split into feature blocks of R
// lanes; block b holds every row's features [b*R, b*R + R), one R-wide row per tensor row.
// A matmul then reads K-slices straight from the blocks and its results leave the
// accumulators as the next layer's blocks. Weights are pre-tiled in HBM, one contiguous
// K x N tile per (K block, N block), so one DMA descriptor moves a tile.
//
// Each MXU works through a stream of weight tiles with the weights two tiles ahead in the
// FIFO and one ahead in the shadow registers; when an output block's last matmul is
// issued, its epilogue (bias, activation, conversion into the output blocks) runs one
// step later, while the next block streams.
//
// Internal to compiler/codegen: one context class, Codegen, whose methods are defined in
// files by concern (docs/compiler.md, "Pipeline", names the file of every stage):
//   driver.cpp        model inputs, the walk over @main's ops, outputs, assembling
//   emission.cpp      program text, DMA descriptors, vector parameters, HBM constants
//   buffers.cpp       unified-buffer allocation and liveness
//   epilogue.cpp      epilogue phases, bias rows, requantization, weight tiles
//   scheduler.cpp     the MXU stream scheduler (run_blocks)
//   fusion.cpp        elementwise ops fused into a matmul's epilogues
//   matmul.cpp, attention.cpp, conv.cpp, conv_packed.cpp, conv_wide.cpp, pool.cpp,
//   argmax.cpp, elementwise.cpp, shape.cpp, resize.cpp, normalization.cpp,
//   quantization.cpp, integer.cpp, embedding.cpp: one op family each.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "flags.h"
#include "ir.h"
#include "plan.h"
#include "dialect/tpu_dialect.h"
#include "vtpu/compiler/compiler.h"
#include "vtpu/config/config.h"
#include "vtpu/config/timing.h"
#include "vtpu/isa/assembler.h"
#include "vtpu/isa/emit.h"
#include "vtpu/isa/isa.h"
#include "vtpu/numerics/float.h"

namespace vtpu::compiler::codegen {

using mlir::Value;
namespace tosa = mlir::tosa;
// Operations are printed by the typed helpers generated from the ISA table (vtpu/isa/emit.h).
namespace emit = isa::emit;
inline emit::Mem ub_at(uint64_t addr) { return emit::ub(emit::addr(0, addr)); }  // "ub[r0+addr]"
inline emit::Mem acc_at(uint64_t row) { return emit::acc(emit::addr(0, row)); }  // "acc[r0+row]"
inline emit::Mem ub_reg(unsigned reg) { return emit::ub(emit::addr(reg, 0)); }    // "ub[rN+0]"
// The flag run_blocks (or emit_steps) gives an epilogue's operation, filled in when issued.
inline const emit::Flag kPendingFlag{"{flag}"};
// `text` with every "{flag}" replaced by flag f.
inline std::string with_flag(std::string text, int f) {
  const std::string name = fmt::format("f{}", f);
  for (size_t at = text.find("{flag}"); at != std::string::npos; at = text.find("{flag}", at + name.size()))
    text.replace(at, 6, name);
  return text;
}
inline emit::Reg reg(unsigned n) { return {n}; }
// The most rows one vector operation takes (its 16-bit `rows` field, docs/isa.md): work on an
// image of more pixels (a 320x320 map kept whole in a large unified buffer) goes in pieces.
inline constexpr uint64_t kMaxVectorRows = 0xFFFF;
// Rows [0, rows) in pieces of at most `most` (and kMaxVectorRows): body(first row, rows of
// the piece).
template <class Body>
void in_vector_pieces(uint64_t rows, Body&& body, uint64_t most = kMaxVectorRows) {
  most = std::max<uint64_t>(1, std::min(most, kMaxVectorRows));
  for (uint64_t r0 = 0; r0 < rows || r0 == 0; r0 += most) body(r0, std::min(most, rows - r0));
}

// The largest offset an operand's 24-bit offset field holds (docs/isa.md): unified-buffer
// addresses up to it need no register (r0+addr); above it an address is loaded into one.
inline constexpr uint64_t kMaxOffset = 0xFFFFFF;
// Bytes of zeros in HBM (zero_hbm_) that clears load from; a longer zero fill goes in pieces.
inline constexpr uint64_t kZeroHbmBytes = 1 << 20;
// Scalar registers by use: r0..r9 addresses of the op at hand; MXU m's operand base
// r(kOperandRegs + m) and weight-FIFO source r(kWfifoRegs + m) (scheduler.cpp, embedding.cpp);
// the registers from kWfifoRegs + MXUs up are free for the batch-chunk loop (batch_chunks.cpp).
inline constexpr unsigned kOperandRegs = 10, kWfifoRegs = 16;
inline emit::Reg wfifo_reg(uint64_t m) { return reg(kWfifoRegs + unsigned(m)); }
// A unified-buffer or accumulator operand at an address given as text: "rN+offset" from
// addr_ref/reg_ref, or a placeholder filled in later ("{S}").
inline emit::Mem ub_ref(const std::string& addr) { return emit::ub(emit::Addr{addr}); }
inline emit::Mem acc_ref(const std::string& addr) { return emit::acc(emit::Addr{addr}); }
// One bundle's line: its operations side by side ("  a || b").
inline std::string bundle(std::initializer_list<std::string> ops) {
  std::string line;
  for (const std::string& o : ops) line += (line.empty() ? "  " : " || ") + o;
  return line;
}
// The two-operand vector operation named `kind` ("add", "sub", "mul", "max", "min").
inline std::string vec_binary(const std::string& kind, const emit::Mem& dst, const emit::Mem& a, const emit::Mem& b,
                              uint64_t rows, isa::Dtype dt, std::optional<bool> bcast = std::nullopt,
                              std::optional<emit::Flag> flag = std::nullopt) {
  if (kind == "add") return emit::vec_add(dst, a, b, rows, dt, bcast, flag);
  if (kind == "sub") return emit::vec_sub(dst, a, b, rows, dt, bcast, flag);
  if (kind == "mul") return emit::vec_mul(dst, a, b, rows, dt, bcast, flag);
  if (kind == "max") return emit::vec_max(dst, a, b, rows, dt, bcast, flag);
  if (kind == "min") return emit::vec_min(dst, a, b, rows, dt, bcast, flag);
  throw std::logic_error("vec_binary: no vector operation '" + kind + "'");
}
// The one-operand vector operation named `fn`, a table function ("sigmoid", "tanh", "erf",
// "exp", "recip", "rsqrt", "gelu", "log"; UnaryOp::verify names them).
inline std::string vec_unary(const std::string& fn, const emit::Mem& dst, const emit::Mem& a, uint64_t rows, isa::Dtype dt,
                             std::optional<emit::Flag> flag = std::nullopt) {
  if (fn == "sigmoid") return emit::vec_sigmoid(dst, a, rows, dt, flag);
  if (fn == "tanh") return emit::vec_tanh(dst, a, rows, dt, flag);
  if (fn == "erf") return emit::vec_erf(dst, a, rows, dt, flag);
  if (fn == "exp") return emit::vec_exp(dst, a, rows, dt, flag);
  if (fn == "recip") return emit::vec_recip(dst, a, rows, dt, flag);
  if (fn == "rsqrt") return emit::vec_rsqrt(dst, a, rows, dt, flag);
  if (fn == "gelu") return emit::vec_gelu(dst, a, rows, dt, flag);
  if (fn == "log") return emit::vec_log(dst, a, rows, dt, flag);
  throw std::logic_error("vec_unary: no vector table function '" + fn + "'");
}


inline uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }
inline uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

inline std::vector<float> const_floats(Value v, const std::string& layer) {
  auto c = v.getDefiningOp<tosa::ConstOp>();
  if (!c) throw CompileError(fmt::format("node '{}': expected a constant operand", layer));
  return tpu::float_values(c.getValue());
}

inline uint16_t bf16_of(float f) { return numerics::f32_to_bf16(numerics::f32_bits(f)); }

// An activation in the unified buffer (see the file comment).
struct Act {
  uint64_t rows = 0, features = 0;
  uint64_t base = 0, block_bytes = 0, blocks = 0;
  std::vector<int64_t> shape;  // logical shape (NHWC for images)
  uint64_t bytes() const { return block_bytes * blocks; }
};

// Allocator of unified-buffer bytes (buffers.cpp): activations best fit from the bottom,
// temporaries first fit from the top.
class UbAllocator {
 public:
  UbAllocator(uint64_t cap, uint64_t align) : cap_(cap), align_(align) { free_[0] = cap; }
  std::optional<uint64_t> alloc_high(uint64_t bytes);
  std::optional<uint64_t> alloc(uint64_t bytes);
  void release(uint64_t at);
  uint64_t in_use() const;
  uint64_t capacity() const { return cap_; }
  uint64_t largest_free() const;

 private:
  uint64_t cap_, align_, high_ = 0;
  std::map<uint64_t, uint64_t> free_, used_;
};

// One matmul of an MXU work stream.
struct MatmulStep {
  uint64_t src, rows, stride, acc_row;
  bool accumulate;
};
// A weight tile and the matmuls that use it.
struct TileRef {
  std::string desc;  // shared by every tile of the same shape
  uint64_t addr = 0;  // the tile's HBM address, passed in a register
};
struct TileGroup {
  TileRef tile;
  std::vector<MatmulStep> steps;
};
// An output block: tile groups accumulating into one accumulator region, then an epilogue.
struct Block {
  std::vector<TileGroup> groups;
  std::function<std::vector<std::string>(uint32_t mxu, uint64_t acc_row)> epilogue;
  uint64_t acc_rows = 0;
  int64_t after = -1;  // an earlier block whose epilogue must be done before this one's starts
  int64_t needs = -1;  // an earlier block whose epilogue writes this one's input: done before its first matmul
};

// One vector operation of a dependent sequence: its text ("{flag}" for its flag), its
// estimated issue cycles, and whether it waits for the operations before it (else it only
// issues after them).
struct VecStep {
  std::string text;
  uint64_t occ = 0;
  bool waits = false;
};
// Vector work beside a stream of blocks: `steps` in order, the first once the epilogues of
// blocks `deps` are done (a layer norm of the rows those blocks complete).
struct SideWork {
  std::vector<size_t> deps;
  std::vector<VecStep> steps;
};

// A convolution's sizes (ConvShape, conv_shape) are in ir.h.
// Useful MACs of a convolution (docs/reports.md, "Useful MACs"): for every output position,
// the kernel taps whose input position lies inside the image, x input channels per group x
// output channels. Taps on padding are not counted, however the schedule computes them.
uint64_t conv_useful_macs(tpu::Conv2DOp op);
// Of output columns [c0, c1) of a "same" convolution, those [lo, hi) its tap column dx reaches.
std::pair<uint64_t, uint64_t> same_columns(const ConvShape& c, uint64_t dx, uint64_t c0, uint64_t c1);
// Whether a model input's user reads it from HBM a band at a time (bands.cpp).
bool reads_rows(mlir::Operation* user);

class StreamScheduler;
class PackedConv;
class EmbeddingLookup;

class Codegen {
 public:
  // `hbm_align`: where HBM allocations start, 4 KiB pages, or packed on 64 or 16 bytes when
  // the pages do not fit (see hbm_alloc); `reuse_hbm`: an image in HBM
  // that its last band has been read from gives its bytes to later ones (bands.cpp).
  Codegen(const config::Config& cfg, const CompileOptions& opt, std::map<const void*, float> scales, uint64_t hbm_align = 4096,
          bool reuse_hbm = false);
  bool read_fp32(Value arg) const;
  void check_inputs_fit(mlir::ModuleOp module, int64_t chunk_batch);
  // The unified-buffer bytes of @main's values in this layout, each counted once, with one
  // sample's rows when their rows are a multiple of `batch`.
  uint64_t values_bytes(mlir::ModuleOp module, int64_t batch) const;
  // `tail`: the model's last layers at the whole batch, run once after the chunk loop of
  // `module`'s (batch_chunks.cpp, "A tail at the whole batch").
  CompileResult run(mlir::ModuleOp module, mlir::ModuleOp tail = nullptr);

 private:
  friend class StreamScheduler;  // scheduler.cpp: run_blocks
  friend class PackedConv;  // conv_packed.cpp: gen_conv_packed
  friend class EmbeddingLookup;  // embedding.cpp: gen_embedding

  // A layer without bias rows (its biases are all zeros): its epilogues skip the add.
  static constexpr uint64_t kNoBias = UINT64_MAX;
  // Bias lanes (conv.cpp, bias_lanes_row): kBiasLanes lanes of kBiasBig, then one of 1.
  static constexpr uint64_t kBiasLanes = 16;
  static constexpr int kBiasBig = 127;

  // The extra epilogue phases of an op fused into a matmul's epilogues, for output block
  // (n block, byte offset in the block, rows) (fusion.cpp).
  using FusedPhases = std::function<std::vector<std::string>(uint64_t, uint64_t, uint64_t)>;
  // Attention's softmax in the scores' epilogues (attention.cpp, fuse_softmax): the phases of
  // a block (MXU, accumulator row, rows, output address, first row within the mask) and the
  // unified-buffer space to free afterwards.
  struct SoftmaxEpilogue {
    std::function<std::vector<std::string>(uint32_t, uint64_t, uint64_t, uint64_t, uint64_t)> phases;
    std::vector<uint64_t> buffers;
  };
  // What gen_matmul or gen_matmul_group does after the matmul's blocks have run.
  struct MatmulPlan {
    std::string layer;
    Act y;
    uint64_t bias_ub = 0, macs = 0, hbm_bytes = 0;
    Value out;
    uint64_t parts = kNoBias;  // split K's partial sums
    std::vector<SideWork> side;  // a layer norm of the output, row chunk by row chunk
    uint64_t ln_work = kNoBias;  // its fp32 rows and statistics
  };
  // A head split and transpose read in place (attention.cpp, head_view_split).
  struct HeadView {
    Act x;  // the unsplit [B * S, H * d] activation
    uint64_t S = 0, H = 0, d = 0;
  };
  // A batch matmul's blocks and what finish_batch_matmul frees (attention.cpp).
  struct BatchPlan {
    std::vector<Block> blocks;
    Act y;
    uint64_t bias_ub = 0, macs = 0;
    std::optional<SoftmaxEpilogue> softmax;
    std::string ready;  // the wait for rhs's stores
    bool early = false;  // stored before this layer (store_rhs_early)
    size_t issued_at = 0;
  };
  // The right-hand side of a batch matmul goes to HBM, where the weight FIFO reads it: lane
  // block b's rows at addr + b * rows * R * size, holding only the block's valid lanes (a
  // 64-wide attention head moves half the bytes of a whole block row).
  struct RhsCopy {
    uint64_t addr = 0;
    int flag = 1;  // counts one per lane block when stored
    uint64_t count = 0;  // stores to wait for
    size_t issued_at = 0;  // code_'s size once the stores were issued
  };
  // A residual add in a convolution's epilogues (conv.cpp, fusable_add).
  struct FusedAdd {
    Act other;
    std::string conv_scale, other_scale, clamp;  // INT8: the two rescales
    // INT8 through the accumulators (see gen_conv): the other operand rescaled to each
    // output block's accumulator scale, and the sum's rescale from it (with the add's clamp).
    double s_other = 0, s_sum = 0, lo = 0, hi = 0;
    bool in_acc = false;
    std::vector<std::string> to_acc, to_sum;  // per output block
  };
  // gen_conv's decisions and buffers, made in its steps' order (conv.cpp).
  struct ConvPlan {
    ConvShape s;
    bool same = false, padded = false;  // "same" taps, a padded copy
    uint64_t stack = 1;                 // kernel rows per matmul row (tap stacks; 1: none)
    Act x, xp, y;  // input, its padded copy (or x), output
    // A depthwise convolution whose whole padded copy does not fit pads one channel block
    // at a time: xp then holds block `xp_first` only.
    bool pad_per_block = false;
    uint64_t xp_first = 0;
    std::vector<float> w, bias;
    std::vector<double> acc_scale;  // INT8
    std::optional<FusedAdd> fused;  // a residual add in the epilogues, through scratch slots:
    bool int32_slots = false;
    uint64_t scratch = 0, slot = 0, period = 0, nreg = 0, region_rows = 0;
    bool bias_on_mxu = false;  // through bias lanes from lane `lanes`, with weights `folded`
    uint64_t lanes = 0;
    std::vector<float> folded;
    uint64_t bias_ub = kNoBias;
    std::vector<std::string> eps;
    std::map<std::tuple<uint64_t, uint64_t, uint64_t>, TileRef> tiles;  // (tap, ci block, co block)
    std::map<std::tuple<uint64_t, uint64_t, uint64_t>, TileRef> stack_tiles;  // (first tap, kernel rows, co block)
    std::vector<std::pair<uint64_t, uint64_t>> order;  // (tap, kernel rows from it)
    std::vector<std::array<uint64_t, 3>> spans;  // each block's output lane block and rows [r0, r1) of the N x OH
  };
  // Where gen_layernorm keeps its fp32 rows (one block of rows per lane block) and its
  // statistics rows: on unified-buffer rows whose banks none of the blocks use.
  struct LnLayout {
    uint64_t block_bytes = 0, stat_off[3] = {0, 0, 0}, mask_off = 0, total = 0;
  };
  // A matmul weight constant's tiles in HBM, shared by the matmuls that read it.
  struct SharedWeights {
    std::vector<std::vector<TileRef>> tiles;  // [n block][k block]
    std::vector<double> scales;               // INT8: per output channel
  };


  // driver.cpp: the driver: model inputs, the walk over @main's ops, outputs, assembling
  void gen_inputs(mlir::func::FuncOp fn);
  void gen_outputs(mlir::func::FuncOp fn, mlir::func::ReturnOp ret);
  void gen_op(mlir::Operation& op);
  bool done_elsewhere(mlir::Operation& op);
  CompileResult assemble();
  void declare_empty_tensors(mlir::func::FuncOp fn);
  std::string quant_attrs(Value v, bool nhwc) const;
  void gen_constant(tpu::ConstantOp op);

  // batch_chunks.cpp: the batch in chunks (@main's vtpu.batch_chunks): inputs and outputs
  // declared whole, addressed through per-tensor base registers, the body run once per chunk.
  void chunks_of(mlir::func::FuncOp fn);
  uint64_t io_alloc(uint64_t chunk_bytes, const std::string& name);  // an input's or output's HBM
  emit::Reg hbm_base(uint64_t hbm) const;  // the register DMA reads or writes HBM address `hbm` through
  std::vector<int64_t> io_shape(std::vector<int64_t> chunk_shape) const;  // the declared (whole) shape
  void chunks_end();

  // bands.cpp: images in HBM, loaded and stored a band of rows at a time (the band planner's
  // tpu.hbm_tensor, tpu.load_rows, tpu.store_rows), and their layers' bounds as one row each.
  void move_rows(const Act& a, uint64_t hbm, bool load, uint64_t hbm_row_bytes = 0, uint64_t image_row_pitch = 0);
  uint64_t hbm_act(Value v, const std::string& layer) const;
  void gen_hbm_tensor(tpu::HbmTensorOp op);
  void gen_store_rows(tpu::StoreRowsOp op);
  void gen_load_rows(tpu::LoadRowsOp op);
  bool gen_hbm_reshape(tpu::ReshapeOp op);
  void copy_hbm_rows(uint64_t from, uint64_t to, const std::vector<int64_t>& shape);
  void merge_band_bounds();

  // stage_links.cpp: a pipeline stage's (@main's vtpu.stage_link): the wait for each
  // micro-batch's input, and the send of each micro-batch's output to the next chip.
  void stage_of(mlir::func::FuncOp fn);
  void stage_receive();                                  // at the start of each pass
  void stage_output(uint64_t addr, uint64_t chunk_bytes);  // the output gen_outputs stored
  void stage_send();                                     // at the end of each pass
  void stage_end();                                      // before halt

  // tensor_parallel.cpp: a tensor-parallel program's row-parallel matmuls (tpu.matmul with
  // vtpu.all_reduce): their partial sums all-reduced over the chips, then bias and clamp.
  void all_reduce_of(mlir::func::FuncOp fn);  // buffers and flags, the same on every chip
  void gen_all_reduce_matmul(tpu::MatmulOp op);
  uint64_t all_reduce_chunks(uint64_t macs, uint64_t blocks, uint64_t block_bytes) const;

  // emission.cpp: emission: program text, descriptors, parameters, HBM constants, DMA and vector helpers, bounds
  static std::string quote(const std::string& s);
  void decl(const std::string& s);
  void code(const std::string& s);
  bool join_last_bundle(const std::string& s);
  void count_bundles();
  static size_t count_bundle_lines(std::string_view text, uint64_t& bundles);
  [[noreturn]] void too_large_for_isa(const std::string& what, uint64_t need, uint64_t limit) const;
  void tag(const std::string& layer);
  void load_wait(const std::string& desc);
  uint64_t hbm_alloc(uint64_t bytes);
  uint64_t hbm_const(std::vector<uint8_t> bytes);
  void load_constant(std::vector<uint8_t> bytes, uint64_t ub);
  std::vector<uint8_t> lane_row(uint64_t valid, float on_valid, float on_pad, isa::Dtype dt) const;
  std::string intern(std::map<std::string, std::string>& names, const char* prefix, const char* directive,
                     const std::string& body);
  std::string new_desc(const std::string& body);
  void ub_copy(uint64_t src, uint64_t dst, const std::string& shape);
  void ub_copy_async(uint64_t src, uint64_t dst, const std::string& shape);
  void copies_wait();
  void vec_wait(const std::string& line);
  void require_fp32_lane_moves(const std::string& layer, const std::string& what);
  std::string new_param(const std::string& body);
  static std::string reg_ref(uint64_t addr, int reg, std::string& pre);
  std::string addr_ref(uint64_t addr, int reg);
  // addr_ref for a run of addresses through a register nothing else writes meanwhile (an
  // MXU's operand register within one layer's matmul stream): `held` is the address it holds
  // (nullopt: not known), loaded only when `addr` is out of its offsets' 24-bit reach; sets
  // `loaded` then, and the use must go in a later bundle. A unified buffer above 16 MiB
  // otherwise cost a `li` bundle per matmul.
  std::string addr_ref_held(uint64_t addr, int reg, std::optional<uint64_t>& held, bool& loaded);
  void load_act(const Act& a, uint64_t hbm, uint64_t hbm_row_bytes = 0);
  void clear_partial_blocks(const Act& a);
  void store_act(const Act& a, uint64_t hbm, uint64_t hbm_row_bytes = 0);
  void clear_border(const Act& xp, uint64_t N, uint64_t Hp, uint64_t Wp, uint64_t pt, uint64_t pb, uint64_t pl,
                    uint64_t pr, bool lowest = false, uint64_t* unwaited = nullptr);
  void clear_frame(uint64_t img, uint64_t Hp, uint64_t Wp, uint64_t pt, uint64_t pb, uint64_t pl, uint64_t pr, uint64_t px,
                   uint64_t src, uint64_t* unwaited = nullptr);
  void clear(uint64_t ub, uint64_t bytes);
  void set_limits(LayerBound& lb) const;
  void add_bound(const std::string& layer, uint64_t macs, uint64_t hbm_bytes,
                 std::optional<std::vector<int64_t>> shape = std::nullopt, const std::string& node = "");
  void add_fused_bounds();
  void emit_steps(const std::vector<VecStep>& steps);
  uint64_t vec_latency(const std::string& text) const;
  uint64_t vec_occ(uint64_t rows) const;

  // buffers.cpp: buffers and liveness: unified-buffer allocation of activations, uses, release
  Act fp32_twin(const Act& a, const std::string& layer, const std::string& what, bool convert,
                std::optional<double> rescale = std::nullopt);
  void from_fp32_twin(const Act& t, const Act& a);
  uint64_t ub_take(uint64_t bytes, const std::string& what, bool temporary = true);
  Act new_act(const std::vector<int64_t>& shape, const std::string& what, bool temporary = false, uint64_t slack = 0,
              std::optional<uint64_t> apart_from = std::nullopt);
  Act act_layout(const std::vector<int64_t>& shape) const;
  uint64_t act_bytes(const std::vector<int64_t>& shape) const;
  Act out_in_place(Value out, std::initializer_list<Value> operands, const std::string& layer);
  bool last_use(Value v);
  const Act& act(Value v);
  void define(Value v, const Act& a);
  void uses_left(mlir::func::FuncOp fn);
  void gen_body(mlir::func::FuncOp fn, size_t ops_before, size_t ops_total);
  void gen_tail(mlir::ModuleOp tail, size_t ops_before, size_t ops_total);
  void release(Value v);

  // epilogue.cpp: epilogues, weights and requantization: bias rows, epilogue phases, RESCALE parameters, weight tiles
  float scale(Value v) const;
  static std::pair<int64_t, int64_t> fixed_point(double M);
  // Per-output-channel symmetric int8 weights of a row-major [K, N] matrix, in place: w[k, c]
  // becomes the integer round(w[k, c] / s[c]), s[c] = max|w[:, c]| / 127; returns s.
  // `absmax`, when given: each column's largest |weight| to take the scale from (a
  // row-parallel matmul's share of rows quantized with its whole column's scale).
  static std::vector<double> quantize(std::vector<float>& w, uint64_t K, uint64_t N, const std::vector<double>* absmax = nullptr);
  TileRef weight_tile(const std::vector<float>& w, uint64_t K, uint64_t N, uint64_t kb, uint64_t nb);
  uint64_t bias_at(uint64_t bias_ub, uint64_t n_block) const;
  uint64_t bias_rows(const std::vector<float>& bias, const std::vector<double>& acc_scale = {});
  std::string bias_phase(uint64_t g, uint64_t bias_ub, uint64_t rows) const;
  std::string bias_phase(const emit::Mem& sums, uint64_t bias_ub, uint64_t rows) const;
  std::vector<std::string> epilogue(uint32_t mxu, uint64_t acc_row, uint64_t rows, uint64_t bias_ub,
                                    const std::string& clamp_param, uint64_t out_ub);
  std::vector<std::string> epilogue_of(const emit::Mem& sums, uint64_t rows, uint64_t bias_ub, const std::string& clamp_param,
                                       uint64_t out_ub);
  std::vector<std::string> epilogue_params(uint64_t N, const std::vector<double>& acc_scale, double out_scale, double lo,
                                           double hi);
  std::string clamp_param(double lo, double hi);
  std::string affine_param(const std::vector<float>& sc, const std::vector<float>& bi, uint64_t blk, double sx, double sy);

  // scheduler.cpp: the MXU stream scheduler (run_blocks) and its row chunking
  void run_blocks(std::vector<Block>& blocks, bool constant_tiles = false,
                  std::optional<std::pair<std::string, size_t>> ready = std::nullopt,
                  std::vector<std::pair<std::string, uint64_t>> background = {}, std::vector<SideWork> side = {},
                  std::vector<std::pair<std::string, double>> transfers = {});
  uint64_t acc_regions(uint64_t span) const;
  uint64_t row_chunk(uint64_t rows, uint64_t n_blocks) const;
  uint64_t conv_row_chunk(uint64_t out_rows, uint64_t width, uint64_t n_blocks) const;

  // fusion.cpp: fusion of elementwise ops into a matmul's epilogues
  std::optional<uint64_t> residual_base(Value out);
  FusedPhases fuse_chain(mlir::Operation* producer, const Act& y, const std::string& into_layer);
  FusedPhases fuse_elementwise(mlir::Operation* producer, const Act& y, const std::string& into_layer);
  std::vector<mlir::Operation*> planned(mlir::Operation* producer, llvm::StringRef role) const;
  static llvm::StringRef epilogue_kind(mlir::Operation* op);
  static bool has_role(mlir::Operation* op, llvm::StringRef role);
  void decline(mlir::Operation* producer, llvm::StringRef role);
  static void drop_plan_role(mlir::Operation* op);

  // matmul.cpp: matmuls with constant weights, alone or as one stream
  void gen_matmul(tpu::MatmulOp op);
  void finish_matmul(const MatmulPlan& p, const std::string& report_as, const std::string& node = "");
  bool gen_matmul_group(tpu::MatmulOp op);
  std::vector<Block> plan_matmul(tpu::MatmulOp op, uint64_t nt_total, MatmulPlan& plan, bool allow_split = true);

  // attention.cpp: attention: head views, batch matmuls, the softmax in the scores' epilogues, early stores
  std::optional<SoftmaxEpilogue> fuse_softmax(mlir::Operation* producer, const Act& y, const std::string& into_layer, uint64_t M);
  void make_head_view(tpu::ReshapeOp op, const Act& x);
  void make_head_transpose(tpu::ReshapeOp op, const Act& x);
  const HeadView* view_of(Value v) const;
  BatchPlan plan_batch_matmul(tpu::BatchMatmulOp op, const Act& a);
  void finish_batch_matmul(const BatchPlan& p);
  void gen_batch_matmul(tpu::BatchMatmulOp op);
  uint64_t rhs_row_bytes(const Act& w, uint64_t nb) const;
  RhsCopy store_rhs(const Act& w, int flag);
  bool store_rhs_early(Value v);
  std::optional<Value> early_target(Value v) const;
  int free_rhs_flag() const;
  void merge_heads(tpu::TransposeOp op);

  // conv.cpp: convolutions: taps as shifted matmuls, tap stacks, a residual add in the epilogues, bias on the MXU
  std::optional<FusedAdd> fusable_add(tpu::Conv2DOp op, uint64_t scratch_bytes);
  std::vector<std::string> acc_add_phases(const FusedAdd& f, uint32_t mxu, uint64_t acc_row, uint64_t rows, uint64_t bias_ub,
                                          uint64_t nb, uint64_t tmp, uint64_t other);
  std::vector<std::string> fused_add_phases(const FusedAdd& f, uint64_t rows, uint64_t conv, uint64_t other);
  uint64_t bias_lanes_row(uint64_t at);
  static std::optional<std::vector<int>> bias_weights(int64_t q);
  void gen_conv(tpu::Conv2DOp op);
  void conv_output(tpu::Conv2DOp op, ConvPlan& p);
  void conv_input(tpu::Conv2DOp op, ConvPlan& p);
  void fill_padded(ConvPlan& p, uint64_t first, uint64_t count, bool border);
  void conv_weights(tpu::Conv2DOp op, ConvPlan& p);
  bool group_overlap(const ConvShape& c, uint64_t cb, uint64_t nb) const;
  void conv_tiles(ConvPlan& p);
  std::vector<Block> conv_blocks(tpu::Conv2DOp op, ConvPlan& p, std::optional<uint64_t> only_nb = std::nullopt);
  std::vector<TileGroup> stack_groups(ConvPlan& p, uint64_t nb, uint64_t r0, uint64_t r1, uint64_t c0, uint64_t c1);
  std::function<std::vector<std::string>(uint32_t, uint64_t)> conv_epilogue(const ConvPlan& p, uint64_t nb, uint64_t px0,
                                                                           uint64_t rows);

  // conv_packed.cpp: the packed first convolution (few input channels, read from HBM)
  void gen_conv_packed(tpu::Conv2DOp op, uint64_t hbm);

  // conv_wide.cpp: two output pixels per matmul row
  std::pair<uint64_t, std::string> two_pixel_params(const std::vector<float>& bias, const std::vector<double>& acc_scale,
                                                    uint64_t CO, tpu::Conv2DOp op);
  void gen_conv_wide(tpu::Conv2DOp op);

  // pool.cpp: pools
  std::vector<std::pair<std::string, uint64_t>> pool_ops(tpu::PoolOp op, const Act& x, const Act& y, int64_t n0, int64_t n1,
                                                         int64_t x_first = 0, std::vector<std::array<int64_t, 3>>* at = nullptr);
  std::vector<SideWork> pool_beside(tpu::Conv2DOp conv, const Act& out, const std::vector<std::array<uint64_t, 3>>& spans);
  void gen_pool(tpu::PoolOp op);
  std::vector<std::pair<std::string, uint64_t>> hosted_pool_ops(tpu::Conv2DOp host);
  void run_vector_ops(const std::vector<std::pair<std::string, uint64_t>>& ops);

  // argmax.cpp: index searches: ArgMax/ArgMin and MaxPool's Indices
  void index_offer(const std::string& v, const std::string& m, uint64_t rows, const std::string& bias);
  void gen_argmax(tpu::ArgMaxOp op);
  void gen_pool_argmax(tpu::PoolArgmaxOp op);

  // elementwise.cpp: elementwise ops
  void int8_in_fp32(const std::string& kind, uint64_t rows, const std::string& pa, const std::string& pb);
  void gen_add(tpu::AddOp op);
  void gen_int_div(tpu::BinaryOp op);
  void gen_binary(tpu::BinaryOp op);
  void gen_unary(tpu::UnaryOp op);
  void gen_affine(tpu::AffineOp op);
  void gen_clamp(tpu::ClampOp op);

  // shape.cpp: layout ops: broadcast, slice, concat, transpose, reshape
  void gen_broadcast(tpu::BroadcastOp op);
  void gen_slice(tpu::SliceOp op);
  void gen_concat(tpu::ConcatOp op);
  bool lane_words(const std::vector<uint64_t>& starts) const;
  void copy_lanes(const Act& x, uint64_t from, uint64_t xr, const Act& y, uint64_t to, uint64_t yr, uint64_t lanes, uint64_t rows,
                  uint64_t esz);
  void zero_padding_lanes(const Act& a);
  void gen_transpose(tpu::TransposeOp op);
  std::optional<Act> split_or_merge_rows(const Act& x, const std::vector<int64_t>& ys, const std::string& layer,
                                         bool clear_padding = true);
  void gen_reshape(tpu::ReshapeOp op);
  void copy_bytes(uint64_t src, uint64_t dst, uint64_t bytes);

  // resize.cpp: resizes and the zero insertion of transposed convolutions
  void gen_zero_insert(tpu::ZeroInsertOp op);
  void gen_resize(tpu::ResizeNearestOp op);

  // normalization.cpp: layer normalization and softmax in fp32 rows
  LnLayout ln_layout(uint64_t rows, uint64_t blocks) const;
  FusedPhases prepare_layernorm(mlir::Operation* producer, const Act& y, tpu::LayerNormOp* prepared = nullptr);
  tpu::AffineOp ln_affine(tpu::LayerNormOp ln);
  void ln_load_mask(const Act& x, uint64_t base, const LnLayout& lay);
  std::vector<VecStep> ln_steps(tpu::LayerNormOp op, const Act& x, const Act& y, uint64_t base, const LnLayout& lay,
                                uint64_t r0, uint64_t rows, bool converted, tpu::AffineOp af);
  void fuse_ln_affine(tpu::AffineOp af, const Act& y, const std::string& into_layer);
  void gen_layernorm(tpu::LayerNormOp op);
  void gen_softmax(tpu::SoftmaxOp op);

  // quantization.cpp: fake quantization (QuantizeLinear kept dequantized)
  void gen_fake_quant(tpu::FakeQuantOp op);

  // integer.cpp: integer tensors: int32 rows, casts
  Act int32_act(const std::vector<int64_t>& shape, const std::string& what, bool temporary = false);
  Act out_act(Value v, const std::string& what);
  void load_rows(const Act& a, uint64_t hbm, uint64_t esz);
  void store_rows(const Act& a, uint64_t hbm, uint64_t esz);
  void gen_cast(tpu::CastOp op);

  // embedding.cpp: embedding lookups by run-time ids
  void gen_embedding(tpu::EmbeddingOp op);


  const config::Config& cfg_;
  FlagPlan flags_;  // the program's sync flags (flags.h)
  CompileOptions opt_;
  // Where lane blocks and buffers start in the unified buffer: 64 bytes, or the buffer's own
  // row (CompileOptions::compact_ub_blocks, ub_block_alignment).
  uint64_t block_align_ = 64;
  UbAllocator ub_;
  uint32_t R_ = 0, C_ = 0;
  uint64_t esz_ = 2, acc_region_ = 0;
  bool q8_ = false;
  std::string dt_ = "bf16";
  isa::Dtype dtype_ = isa::Dtype::Bf16;  // dt_ as the ISA's
  std::map<const void*, float> scales_;
  std::map<const void*, SharedWeights> weight_cache_;  // by tpu.matmul weight constant
  std::string current_op_;  // the op being generated, for its layer's bound
  bool output_high_ = false;  // its output goes to the top of the unified buffer
  std::vector<int64_t> current_shape_;
  std::map<const void*, uint64_t> input_hbm_;  // model inputs left in HBM for packed convolutions
  std::map<const void*, uint64_t> hbm_acts_;   // images in HBM, row-major (bands.cpp)
  bool reuse_hbm_ = false;
  std::map<uint64_t, uint64_t> hbm_free_;                          // reusable HBM of images read for the last time: address, bytes
  std::map<uint64_t, std::pair<uint64_t, size_t>> hbm_readers_;  // an image in HBM's bytes and the band loads still to read it
  std::map<unsigned, uint64_t> hbm_outputs_;   // outputs whose images in HBM are their own bytes, by result index
  // Ops run in bands, by layer and op (a transposed convolution's spread and convolution share
  // a layer): their whole shapes.
  std::map<std::string, std::vector<int64_t>> band_shapes_;
  // Rows of a banded layer that stay rows of their own (band_key): a transposed convolution's
  // spread when its convolution runs in phases (gen_zero_insert).
  std::set<std::string> own_rows_;
  static std::string band_key(const std::string& layer, const std::string& op) { return layer + '\x1f' + op; }
  std::map<std::string, uint64_t> band_bytes_;  // bytes the band loads and stores move, by layer
  std::string current_layer_;  // the layer of the op being generated (for errors)
  bool in_band_ = false;  // generating a band of a layer: its constants are shared with the other bands
  std::multimap<std::pair<size_t, size_t>, size_t> band_consts_;  // (hash, size) of their bytes -> segment
  std::map<const void*, uint64_t> int_hbm_;    // integer model inputs (int32 in HBM)
  bool int_out_ = false;     // the op being generated has an int32 result
  uint64_t out_esz_ = 2;     // bytes per element of that op's output rows
  struct HostedPool {  // a pool run beside convolutions (kBackgroundAttr, pool.cpp)
    Act y;              // its output, allocated by the first host
    std::vector<std::pair<std::string, uint64_t>> ops;  // its instructions (pool_ops), made by the first host
    uint64_t total = 0;  // their estimated vector cycles
    size_t next = 0;    // its instructions run so far
    bool declined = false;
  };
  std::map<mlir::Operation*, HostedPool> hosted_pools_;
  std::map<mlir::Operation*, Act> fused_pools_;  // pools done along the convolution before them (planned: role "pool"), and their output
  uint64_t hbm_next_ = 0, zero_hbm_ = 0, const_bytes_ = 0, hbm_align_ = 4096;
  uint64_t copies_in_flight_ = 0;  // ub_copy_async copies not yet waited for (on f1)
  std::optional<size_t> hoist_at_;  // where in code_ the last stream issued its last matmul (run_blocks)
  uint64_t batch_chunks_ = 1;  // passes of the body (batch_chunks.cpp)
  int64_t batch_whole_ = 0;    // the declared batch when the chunks pad it, else 0
  struct IoRegion {
    uint64_t begin, chunk_bytes;  // the first chunk's bytes of an input or output tensor
    unsigned reg;                 // its base register
  };
  std::vector<IoRegion> io_regions_;
  std::string tail_input_;  // @main's result that the tail reads (vtpu.tail_input), and where it is in HBM
  uint64_t tail_hbm_ = 0;
  struct StageLink {
    bool staged = false, receive = false;
    int64_t send_chip = -1;  // -1: the last stage
    uint64_t send_addr = 0;  // the next stage's input tensor
    uint64_t out_addr = 0, out_bytes = 0;  // this stage's output tensor, one chunk's bytes
  } link_;  // stage_links.cpp
  struct AllReduces {
    uint64_t hbm = 0, ub = 0, ub_bytes = 0;  // the collectives' buffers, at the program's start
    uint64_t largest = 0;                    // bytes of the largest all-reduce
    uint32_t chip = 0;                       // the chip the program runs on (@main's vtpu.chip)
  } all_reduce_;  // tensor_parallel.cpp
  // Weight loads emitted (mxu.wload), and where the last bound row's count ended; tiles and
  // loads of prologues hoisted into an earlier layer's code since then (add_bound).
  uint64_t wloads_ = 0, wloads_mark_ = 0, hoisted_tiles_ = 0, hoisted_wloads_ = 0;
  std::map<mlir::Operation*, Act> fused_;  // elementwise ops done in a matmul's epilogues, and their outputs
  std::set<mlir::Operation*> done_;  // ops generated ahead of their turn (gen_matmul_group)
  std::map<uint64_t, uint64_t> bias_lanes_rows_;  // the constants' row in the unified buffer, by first lane
  std::map<int64_t, std::vector<mlir::Operation*>> planned_;  // by tpu.fused_into: the ops the planner put into an op
  std::map<mlir::Operation*, uint64_t> ln_prepared_;  // layer norms whose fp32 rows a matmul's epilogues fill (prepare_layernorm)
  // Head split + transpose results read in place (make_head_view) and the reshapes of them:
  // where the unsplit activation is. The decision is the planner's (tpu.heads "view").
  std::map<const void*, HeadView> views_;
  std::map<const void*, RhsCopy> stored_rhs_;  // batch-matmul right-hand sides stored early (store_rhs_early)
  std::vector<std::tuple<std::string, std::string, std::vector<int64_t>>> fused_bounds_;
  std::map<std::string, std::string> desc_names_, param_names_;
  std::string decls_, code_;
  size_t counted_to_ = 0;   // code_'s bytes whose bundles are counted (count_bundles)
  uint64_t bundles_ = 0;    // the bundles in them
  static constexpr size_t kCountStepBytes = size_t(1) << 20;  // code() counts after each MiB
  std::vector<isa::ConstSegment> segments_;
  std::map<const void*, Act> acts_;
  std::map<const void*, int> uses_;
  std::vector<LayerBound> bounds_;
};

}  // namespace vtpu::compiler::codegen
