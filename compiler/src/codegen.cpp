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
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "import.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "tpu_dialect.h"
#include "vtpu/isa/assembler.h"
#include "vtpu/isa/isa.h"
#include "vtpu/numerics/float.h"

namespace vtpu::compiler {
namespace {

using mlir::Value;
namespace tosa = mlir::tosa;

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }
uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

std::vector<int64_t> shape_of(Value v) {
  auto t = mlir::cast<mlir::RankedTensorType>(v.getType());
  return {t.getShape().begin(), t.getShape().end()};
}

std::vector<float> const_floats(Value v, const std::string& layer) {
  auto c = v.getDefiningOp<tosa::ConstOp>();
  if (!c) throw CompileError(fmt::format("node '{}': expected a constant operand", layer));
  auto a = mlir::cast<mlir::DenseElementsAttr>(c.getValue());
  std::vector<float> out;
  for (float f : a.getValues<float>()) out.push_back(f);
  return out;
}

uint16_t bf16_of(float f) { return numerics::f32_to_bf16(numerics::f32_bits(f)); }

// An activation in the unified buffer (see the file comment).
struct Act {
  uint64_t rows = 0, features = 0;
  uint64_t base = 0, block_bytes = 0, blocks = 0;
  std::vector<int64_t> shape;  // logical shape (NHWC for images)
  uint64_t bytes() const { return block_bytes * blocks; }
};

// First-fit allocator of unified-buffer bytes.
class UbAllocator {
 public:
  UbAllocator(uint64_t cap, uint64_t align) : cap_(cap), align_(align) { free_[0] = cap; }
  // Temporaries (work rows, padded or packed copies) come from the top of the buffer and
  // activations from the bottom, so freeing a temporary leaves one hole, not a scattering.
  std::optional<uint64_t> alloc_high(uint64_t bytes) {
    bytes = align_up(std::max<uint64_t>(bytes, 1), align_);
    for (auto it = free_.rbegin(); it != free_.rend(); ++it)
      if (it->second >= bytes) {
        uint64_t start = it->first, size = it->second, at = start + size - bytes;
        free_.erase(start);
        if (size > bytes) free_[start] = size - bytes;
        used_[at] = bytes;
        high_ = std::max(high_, at + bytes);
        return at;
      }
    return std::nullopt;
  }
  std::optional<uint64_t> alloc(uint64_t bytes) {
    bytes = align_up(std::max<uint64_t>(bytes, 1), align_);
    // Best fit: the smallest hole that holds it, so large holes stay whole for large tensors.
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->second >= bytes && (best == free_.end() || it->second < best->second)) best = it;
    if (best == free_.end()) return std::nullopt;
    uint64_t at = best->first, left = best->second - bytes;
    free_.erase(best);
    if (left) free_[at + bytes] = left;
    used_[at] = bytes;
    high_ = std::max(high_, at + bytes);
    return at;
  }
  // Frees the allocation that holds `at` (an activation may start past its allocation's
  // first byte, see Codegen::new_act).
  void release(uint64_t at) {
    auto u = used_.upper_bound(at);
    if (u == used_.begin()) return;
    --u;
    if (at >= u->first + u->second) return;
    at = u->first;
    uint64_t n = u->second;
    used_.erase(u);
    auto [it, ok] = free_.emplace(at, n);
    auto next = std::next(it);
    if (next != free_.end() && it->first + it->second == next->first) it->second += next->second, free_.erase(next);
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) prev->second += it->second, free_.erase(it);
    }
  }
  uint64_t in_use() const {
    uint64_t n = 0;
    for (auto& [a, b] : used_) n += b;
    return n;
  }
  uint64_t capacity() const { return cap_; }
  uint64_t largest_free() const {
    uint64_t m = 0;
    for (auto& [a, n] : free_) m = std::max(m, n);
    return m;
  }

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

class Codegen {
 public:
  Codegen(const config::Config& cfg, const CompileOptions& opt, std::map<const void*, float> scales)
      : cfg_(cfg), opt_(opt), ub_(cfg.core.unified_buffer.bytes, 64), scales_(std::move(scales)) {
    R_ = cfg.core.mxu.rows;
    C_ = cfg.core.mxu.cols;
    if (R_ != C_)
      throw CompileError(fmt::format("config '{}': the compiler needs square arrays (core.mxu.rows = core.mxu.cols); "
                                     "this one is {}x{}",
                                     cfg.name, R_, C_));
    q8_ = opt.precision == Precision::Int8;
    config::require_dtype(cfg, q8_ ? config::DType::kInt8 : config::DType::kBf16);
    esz_ = q8_ ? 1 : 2;
    dt_ = q8_ ? "int8" : "bf16";
    acc_region_ = cfg.core.accumulators.rows / 2;
  }

  // An image with few channels that only convolutions read stays in HBM: those
  // convolutions load it packed (see gen_conv_packed) instead of R lanes per pixel.
  bool read_packed(Value arg) const {
    bool packed = !arg.use_empty();
    for (mlir::Operation* u : arg.getUsers()) {
      auto c = mlir::dyn_cast<tpu::Conv2DOp>(u);
      packed &= c && packable(c);
    }
    return packed;
  }
  // A float model input read only by softmaxes stays fp32 in HBM, and each softmax loads it
  // straight into its fp32 work rows: logits too close together for bf16 (10000 and 10001)
  // keep their differences.
  bool read_fp32(Value arg) const {
    if (is_int32(arg) || arg.use_empty()) return false;
    for (mlir::Operation* u : arg.getUsers()) {
      auto sm = mlir::dyn_cast<tpu::SoftmaxOp>(u);
      if (!sm || sm.getInput() != arg) return false;
    }
    return true;
  }

  // The unified-buffer rows the model's inputs take, allocated as run() does, so a model
  // whose inputs alone do not fit fails with the same error before INT8 calibration (which
  // runs the model in fp32, seconds for big models) instead of after it.
  void check_inputs_fit(mlir::ModuleOp module) {
    auto fn = module.lookupSymbol<mlir::func::FuncOp>("main");
    if (!fn) throw InternalError("no func @main");
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      Value arg = fn.getArgument(i);
      if (is_int32(arg) || read_packed(arg) || read_fp32(arg)) continue;
      new_act(shape_of(arg), "input '" + fn.getArgAttrOfType<mlir::StringAttr>(i, "vtpu.name").str() + "'");
    }
  }

  CompileResult run(mlir::ModuleOp module) {
    auto fn = module.lookupSymbol<mlir::func::FuncOp>("main");
    if (!fn) throw InternalError("no func @main");
    decl(fmt::format(".config {}", cfg_.name));
    // Zero region in HBM (never written) for clearing UB buffers.
    zero_hbm_ = hbm_alloc(1 << 20);
    hoist_at_ = 0;  // the first stream's weights may load while the inputs do

    // Inputs: HBM -> UB blocked layout.
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      Value arg = fn.getArgument(i);
      std::string name = fn.getArgAttrOfType<mlir::StringAttr>(i, "vtpu.name").str();
      auto shape = shape_of(arg);
      if (is_int32(arg)) {
        // An integer input stays in HBM as int32; its readers load what they need (tpu.cast
        // converts it, tpu.embedding reads the ids).
        uint64_t addr = hbm_alloc(numel(shape) * 4);
        decl(fmt::format(".tensor {} role=input dtype=int32 shape=[{}] addr={}{}", quote(name), fmt::join(shape, ", "), addr,
                         fn.getArgAttr(i, "vtpu.nhwc") ? " layout=nhwc" : ""));
        int_hbm_[arg.getAsOpaquePointer()] = addr;
        continue;
      }
      if (read_fp32(arg)) {
        uint64_t addr = hbm_alloc(numel(shape) * 4);
        decl(fmt::format(".tensor {} role=input dtype=fp32 shape=[{}] addr={}{}", quote(name), fmt::join(shape, ", "), addr,
                         fn.getArgAttr(i, "vtpu.nhwc") ? " layout=nhwc" : ""));
        input_hbm_[arg.getAsOpaquePointer()] = addr;
        continue;
      }
      uint64_t bytes = numel(shape) * esz_;
      uint64_t addr = hbm_alloc(bytes);
      decl(fmt::format(".tensor {} role=input dtype={} shape=[{}] addr={}{}", quote(name), dt_, fmt::join(shape, ", "), addr,
                       quant_attrs(arg, bool(fn.getArgAttr(i, "vtpu.nhwc")))));
      if (read_packed(arg)) {
        input_hbm_[arg.getAsOpaquePointer()] = addr;
        continue;
      }
      tag("input " + name);
      Act a = new_act(shape, "input '" + name + "'");
      load_act(a, addr);
      acts_[arg.getAsOpaquePointer()] = a;
    }
    declare_empty_tensors(fn);
    uses_left(fn);

    for (mlir::Operation& op : fn.getBody().front()) {
      if (mlir::isa<tosa::ConstOp>(op)) continue;
      if (auto ret = mlir::dyn_cast<mlir::func::ReturnOp>(op)) {
        for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
          Value v = ret.getOperand(i);
          std::string name = fn.getResultAttrOfType<mlir::StringAttr>(i, "vtpu.name").str();
          auto shape = shape_of(v);
          if (auto c = v.getDefiningOp<tosa::ConstOp>()) {  // a constant output: its bytes preloaded, no code
            auto attr = mlir::cast<mlir::DenseElementsAttr>(c.getValue());
            std::vector<uint8_t> bytes;
            std::string dt = is_int32(v) ? "int32" : dt_, extra;
            if (is_int32(v)) {
              for (int32_t x : attr.getValues<int32_t>()) bytes.insert(bytes.end(), (uint8_t*)&x, (uint8_t*)&x + 4);
            } else {
              std::vector<float> f(attr.getValues<float>().begin(), attr.getValues<float>().end());
              float mx = 0;
              for (float x : f) mx = std::max(mx, std::fabs(x));
              double sc = mx > 0 ? mx / 127.0 : 1.0;
              if (q8_) extra = fmt::format(" scale={} zp=0", sc);
              for (float x : f) {
                if (q8_) {
                  bytes.push_back(uint8_t(int8_t(std::clamp<double>(std::nearbyint(x / sc), -127, 127))));
                } else {
                  uint16_t h = bf16_of(x);
                  bytes.push_back(uint8_t(h)), bytes.push_back(uint8_t(h >> 8));
                }
              }
            }
            decl(fmt::format(".tensor {} role=output dtype={} shape=[{}] addr={}{}", quote(name), dt, fmt::join(shape, ", "),
                             hbm_const(std::move(bytes)), extra));
            continue;
          }
          if (is_int32(v)) {  // an integer output: int32 rows, stored as they are
            if (int_hbm_.count(v.getAsOpaquePointer()))
              throw CompileError(fmt::format("output '{}' is a model input; nothing computes it", name));
            uint64_t addr = hbm_alloc(numel(shape) * 4);
            decl(fmt::format(".tensor {} role=output dtype=int32 shape=[{}] addr={}{}", quote(name), fmt::join(shape, ", "),
                             addr, fn.getResultAttr(i, "vtpu.nhwc") ? " layout=nhwc" : ""));
            tag("output " + name);
            store_rows(act(v), addr, 4);
            continue;
          }
          uint64_t addr = hbm_alloc(numel(shape) * esz_);
          decl(fmt::format(".tensor {} role=output dtype={} shape=[{}] addr={}{}", quote(name), dt_, fmt::join(shape, ", "),
                           addr, quant_attrs(v, bool(fn.getResultAttr(i, "vtpu.nhwc")))));
          tag("output " + name);
          store_act(act(v), addr);
        }
        continue;
      }
      if (done_.count(&op)) continue;  // generated with an earlier op (gen_matmul_group)
      if (deferred_.count(&op)) {  // nothing to generate (a head view's transpose): operands released in turn
        for (Value operand : op.getOperands()) release(operand);
        continue;
      }
      if (auto mm = mlir::dyn_cast<tpu::MatmulOp>(op); mm && !is_int32(mm.getOutput())) {
        current_op_ = "matmul";
        current_shape_ = shape_of(mm.getOutput());
        output_high_ = false;
        int_out_ = false, out_esz_ = esz_;
        if (gen_matmul_group(mm)) continue;
      }
      if (auto f = fused_.find(&op); f != fused_.end()) {  // already done in a matmul's epilogues
        define(op.getResult(0), f->second);
        for (Value operand : op.getOperands()) release(operand);
        continue;
      }
      current_op_ = op.getName().stripDialect().str();
      // Outputs go to the end of the unified buffer away from the op's main input, so a
      // chain of layers alternates ends and frees contiguous space behind it.
      output_high_ = false;
      if (op.getNumOperands())
        if (auto it = acts_.find(op.getOperand(0).getAsOpaquePointer()); it != acts_.end())
          output_high_ = it->second.base + it->second.bytes() / 2 < ub_.capacity() / 2;
      current_shape_ = op.getNumResults() ? shape_of(op.getResult(0)) : std::vector<int64_t>{};
      // A matmul or convolution with an int32 result (an integer model output) writes int32 rows.
      int_out_ = op.getNumResults() && is_int32(op.getResult(0));
      out_esz_ = int_out_ ? 4 : esz_;
      if (auto m = mlir::dyn_cast<tpu::MatmulOp>(op)) gen_matmul(m);
      else if (auto ca = mlir::dyn_cast<tpu::CastOp>(op)) gen_cast(ca);
      else if (auto em = mlir::dyn_cast<tpu::EmbeddingOp>(op)) gen_embedding(em);
      else if (auto bm = mlir::dyn_cast<tpu::BatchMatmulOp>(op)) gen_batch_matmul(bm);
      else if (auto c = mlir::dyn_cast<tpu::Conv2DOp>(op)) gen_conv(c);
      else if (auto p = mlir::dyn_cast<tpu::PoolOp>(op)) gen_pool(p);
      else if (auto am = mlir::dyn_cast<tpu::PoolArgmaxOp>(op)) gen_pool_argmax(am);
      else if (auto ax = mlir::dyn_cast<tpu::ArgMaxOp>(op)) gen_argmax(ax);
      else if (auto a = mlir::dyn_cast<tpu::AddOp>(op)) gen_add(a);
      else if (auto bo = mlir::dyn_cast<tpu::BinaryOp>(op)) gen_binary(bo);
      else if (auto bc = mlir::dyn_cast<tpu::BroadcastOp>(op)) gen_broadcast(bc);
      else if (auto tp = mlir::dyn_cast<tpu::TransposeOp>(op)) gen_transpose(tp);
      else if (auto cc = mlir::dyn_cast<tpu::ConcatOp>(op)) gen_concat(cc);
      else if (auto sl = mlir::dyn_cast<tpu::SliceOp>(op)) gen_slice(sl);
      else if (auto s = mlir::dyn_cast<tpu::SoftmaxOp>(op)) gen_softmax(s);
      else if (auto ln = mlir::dyn_cast<tpu::LayerNormOp>(op)) gen_layernorm(ln);
      else if (auto k = mlir::dyn_cast<tpu::ConstantOp>(op)) gen_constant(k);
      else if (auto fq = mlir::dyn_cast<tpu::FakeQuantOp>(op)) gen_fake_quant(fq);
      else if (auto rz = mlir::dyn_cast<tpu::ResizeNearestOp>(op)) gen_resize(rz);
      else if (auto zi = mlir::dyn_cast<tpu::ZeroInsertOp>(op)) gen_zero_insert(zi);
      else if (auto r = mlir::dyn_cast<tpu::ReshapeOp>(op)) gen_reshape(r);
      else if (auto c = mlir::dyn_cast<tpu::ClampOp>(op)) gen_clamp(c);
      else if (auto af = mlir::dyn_cast<tpu::AffineOp>(op)) gen_affine(af);
      else if (auto un = mlir::dyn_cast<tpu::UnaryOp>(op)) gen_unary(un);
      else throw CompileError(fmt::format("code generation does not handle {}", op.getName().getStringRef().str()));
      for (Value result : op.getResults()) store_rhs_early(result);
      for (Value operand : op.getOperands()) release(operand);
    }
    code("  halt");

    CompileResult r;
    r.assembly = decls_ + code_;
    try {
      r.program = isa::assemble(r.assembly, "<compiler>");
    } catch (const isa::AsmError& e) {
      // Name the generated line too: a compiler bug is then reportable as it is.
      const auto& d = e.diagnostics().front();
      std::string line;
      std::istringstream in(r.assembly);
      for (int i = 0; i < d.line && std::getline(in, line);) ++i;
      throw CompileError(fmt::format("the generated program does not fit the instruction set ({}, at generated line "
                                     "'{}'); the model is too large for this compiler version on config '{}'",
                                     d.message, line, cfg_.name));
    }
    for (auto& seg : segments_) r.program.constants.push_back(std::move(seg));
    r.program.config_fingerprint = config::fingerprint(cfg_);
    r.program.config_name = cfg_.name;
    r.bounds = std::move(bounds_);
    r.assembly += fmt::format("# {} bytes of weights and constants in {} HBM segments (not listed)\n", const_bytes_,
                              r.program.constants.size());
    return r;
  }

 private:
  static uint64_t numel(const std::vector<int64_t>& s) {
    uint64_t n = 1;
    for (int64_t d : s) n *= uint64_t(d);
    return n;
  }
  static std::string quote(const std::string& s) {
    std::string q = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') q += '\\';
      q += c;
    }
    return q + "\"";
  }
  // INT8: the symmetric per-tensor scale of an activation (real = q * scale).
  float scale(Value v) const {
    auto it = scales_.find(v.getAsOpaquePointer());
    if (it == scales_.end()) throw InternalError("no calibration scale for an activation");
    return it->second;
  }
  // Empty model inputs and outputs (a 0 in the shape; the importer left them out of @main):
  // program tensors of no bytes, so callers see every name the model has.
  void declare_empty_tensors(mlir::func::FuncOp fn) {
    auto list = fn->getAttrOfType<mlir::ArrayAttr>("vtpu.empty_tensors");
    if (!list) return;
    for (mlir::Attribute e : list) {
      auto f = mlir::cast<mlir::ArrayAttr>(e);
      bool integer = mlir::cast<mlir::BoolAttr>(f[3]).getValue();
      decl(fmt::format(".tensor {} role={} dtype={} shape=[{}] addr=0{}", quote(mlir::cast<mlir::StringAttr>(f[1]).str()),
                       mlir::cast<mlir::StringAttr>(f[0]).str(), integer ? "int32" : dt_,
                       fmt::join(mlir::cast<mlir::DenseI64ArrayAttr>(f[2]).asArrayRef(), ", "),
                       q8_ && !integer ? " scale=1 zp=0" : ""));
    }
  }
  std::string quant_attrs(Value v, bool nhwc) const {
    std::string s = q8_ ? fmt::format(" scale={} zp=0", double(scale(v))) : "";
    if (nhwc) s += " layout=nhwc";  // an image the model sees as NCHW
    return s;
  }
  // A real multiplier as TOSA's (multiplier, shift): m * 2^-shift, m in [2^30, 2^31).
  static std::pair<int64_t, int64_t> fixed_point(double M) {
    if (!(M > 0)) return {0, 31};
    int64_t shift = 30 - int64_t(std::floor(std::log2(M)));
    shift = std::clamp<int64_t>(shift, 2, 62);
    int64_t m = std::llround(std::ldexp(M, int(shift)));
    if (m >= (int64_t(1) << 31)) m >>= 1, shift -= 1;
    return {std::min<int64_t>(m, INT32_MAX), std::max<int64_t>(shift, 2)};
  }
  // Per-output-channel symmetric int8 weights: q = round(w / s[c]), s[c] = max|w[:, c]| / 127.
  struct QWeights {
    std::vector<float> q;  // integer values, [K, N]
    std::vector<double> s;
  };
  static QWeights quantize(const std::vector<float>& w, uint64_t K, uint64_t N) {
    QWeights r{std::vector<float>(w.size()), std::vector<double>(N)};
    for (uint64_t n = 0; n < N; ++n) {
      double mx = 0;
      for (uint64_t k = 0; k < K; ++k) mx = std::max(mx, double(std::fabs(w[k * N + n])));
      r.s[n] = mx > 0 ? mx / 127.0 : 1.0;
      for (uint64_t k = 0; k < K; ++k) r.q[k * N + n] = float(std::clamp<double>(std::nearbyint(w[k * N + n] / r.s[n]), -127, 127));
    }
    return r;
  }
  void decl(const std::string& s) { decls_ += s + "\n"; }
  void code(const std::string& s) { code_ += s + "\n"; }
  void tag(const std::string& layer) { code(".tag " + quote(layer)); }

  uint64_t hbm_alloc(uint64_t bytes) {
    uint64_t at = hbm_next_;
    hbm_next_ = align_up(hbm_next_ + bytes, 4096);
    if (hbm_next_ > cfg_.memory.bytes)
      throw DoesNotFitError("memory.bytes", hbm_next_, cfg_.memory.bytes,
                            fmt::format("the model needs {} bytes of HBM but the config has {} (memory.bytes)", hbm_next_,
                                        cfg_.memory.bytes));
    return at;
  }
  uint64_t hbm_const(std::vector<uint8_t> bytes) {
    uint64_t at = hbm_alloc(bytes.size());
    const_bytes_ += bytes.size();
    segments_.push_back({at, std::move(bytes)});
    return at;
  }
  // Identical descriptors are shared: the descriptor table holds 4096 at most.
  std::string new_desc(const std::string& body) {
    auto it = desc_names_.find(body);
    if (it != desc_names_.end()) return it->second;
    std::string name = fmt::format("d{}", ndesc_++);
    decl(fmt::format(".desc {} {}", name, body));
    desc_names_[body] = name;
    return name;
  }
  // One unified-buffer copy of `shape` ("bytes=... [dim=[...]]"). The addresses go in
  // registers, so copies of one shape share a descriptor (the table holds 4096).
  void ub_copy(uint64_t src, uint64_t dst, const std::string& shape) {
    std::string d = new_desc(shape);
    code(fmt::format("  li r1, {} || li r2, {}", src, dst));
    code(fmt::format("  dma.copy desc={} src=r1 dst=r2 flag=f1", d));
    code("  wait f1");
  }
  // A unified-buffer copy that is not waited for: independent copies (a transpose's or a
  // head split's runs) overlap in the DMA engine instead of paying its setup one by one.
  // They count on f1 until copies_wait().
  void ub_copy_async(uint64_t src, uint64_t dst, const std::string& shape) {
    std::string d = new_desc(shape);
    code(fmt::format("  li r1, {} || li r2, {}", src, dst));
    code(fmt::format("  dma.copy desc={} src=r1 dst=r2 flag=f1", d));
    if (++copies_in_flight_ == 1024) copies_wait();
  }
  void copies_wait() {
    if (copies_in_flight_) code(fmt::format("  wait f1, {}", copies_in_flight_));
    copies_in_flight_ = 0;
  }
  // One vector instruction, waited for.
  void vec_wait(const std::string& line) {
    code("  " + line + " flag=f20");
    code("  wait f20");
  }
  // Copies that move single lanes move 4-byte (fp32) elements, since DMA rows start on
  // unified-buffer words; `what` names the move in the error.
  void require_fp32_lane_moves(const std::string& layer, const std::string& what) {
    if (cfg_.core.unified_buffer.alignment_bytes > 4)
      throw CompileError(fmt::format("node '{}': {} 4-byte elements, finer than core.unified_buffer.alignment_bytes = {}",
                                     layer, what, cfg_.core.unified_buffer.alignment_bytes));
  }
  // An fp32 twin of `a` (same rows and lane blocks, 4-byte elements) in new unified-buffer
  // space: `a` converted (then scaled by `rescale`, for INT8 inputs), or zeros if !convert.
  Act fp32_twin(const Act& a, const std::string& layer, const std::string& what, bool convert,
                std::optional<double> rescale = std::nullopt) {
    Act t = a;
    t.block_bytes = align_up(a.rows * R_ * 4, 64);
    t.base = ub_take(t.bytes(), fmt::format("the fp32 {} of '{}'", what, layer));
    if (!convert) {
      clear(t.base, t.bytes());  // padding lanes stay zero
      return t;
    }
    std::string p = rescale ? new_param(fmt::format("scale=[{}]", *rescale)) : "";
    for (uint64_t blk = 0; blk < a.blocks; ++blk) {
      code(fmt::format("  li r1, {} || li r2, {}", a.base + blk * a.block_bytes, t.base + blk * t.block_bytes));
      vec_wait(fmt::format("vec.cvt dst=ub[r2+0] a=ub[r1+0] rows={} dt={} odt=fp32", a.rows, dt_));
      if (rescale) vec_wait(fmt::format("vec.affine dst=ub[r2+0] a=ub[r2+0] rows={} dt=fp32 param={}", a.rows, p));
    }
    return t;
  }
  // Converts an fp32 twin back into `a` (rounding to INT8 or bf16) and frees it.
  void from_fp32_twin(const Act& t, const Act& a) {
    for (uint64_t blk = 0; blk < a.blocks; ++blk) {
      code(fmt::format("  li r1, {} || li r2, {}", t.base + blk * t.block_bytes, a.base + blk * a.block_bytes));
      vec_wait(fmt::format("vec.cvt dst=ub[r2+0] a=ub[r1+0] rows={} dt=fp32 odt={}", a.rows, dt_));
    }
    ub_.release(t.base);
  }
  std::string new_param(const std::string& body) {
    auto it = param_names_.find(body);
    if (it != param_names_.end()) return it->second;
    std::string name = fmt::format("p{}", nparam_++);
    decl(fmt::format(".vparam {} {}", name, body));
    param_names_[body] = name;
    return name;
  }
  // An operand address for a vector operation's text: "r0+addr" when it fits the 24-bit
  // offset fields, else "rN+0" with the `li` that loads it appended to `pre` (emitted in
  // front of the operation, in bundles of their own).
  static std::string reg_ref(uint64_t addr, int reg, std::string& pre) {
    if (addr <= 0xFFFFFF) return fmt::format("r0+{}", addr);
    pre += fmt::format("  li r{}, {}\n", reg, addr);
    return fmt::format("r{}+0", reg);
  }
  // "r0+addr" when the address fits the 24-bit offset fields, else loads it into `reg`
  // (in a bundle of its own: registers are read before a bundle writes them).
  std::string addr_ref(uint64_t addr, int reg) {
    if (addr <= 0xFFFFFF) return fmt::format("r0+{}", addr);
    if (addr > UINT32_MAX) throw CompileError(fmt::format("address {} exceeds the 32-bit registers", addr));
    code(fmt::format("  li r{}, {}", reg, addr));
    return fmt::format("r{}+0", reg);
  }

  // Unified-buffer bytes for `what`, or the error every allocation gives: what needs how
  // much, what is free (and whether it is only free in pieces), and by how much the buffer
  // is too small.
  uint64_t ub_take(uint64_t bytes, const std::string& what, bool temporary = true) {
    if (auto at = temporary ? ub_.alloc_high(bytes) : ub_.alloc(bytes)) return *at;
    uint64_t free = ub_.capacity() - ub_.in_use(), largest = ub_.largest_free();
    std::string pieces = free >= bytes ? fmt::format(", in pieces of at most {} bytes", largest) : "";
    throw DoesNotFitError("core.unified_buffer.bytes", bytes, largest,
                          fmt::format("{} needs {} bytes of the unified buffer but only {} of its {} bytes are free{} "
                                      "(core.unified_buffer.bytes is at least {} bytes too small); use a config with a larger "
                                      "unified buffer or a smaller batch",
                                      what, bytes, free, ub_.capacity(), pieces, bytes - std::min(bytes, largest)));
  }

  // With `apart_from` (another activation's base), the activation starts one bank after it
  // (modulo the banks), so an elementwise op on the two reads row i of each from different
  // banks instead of paying a conflict on every step.
  Act new_act(const std::vector<int64_t>& shape, const std::string& what, bool temporary = false, uint64_t slack = 0,
              std::optional<uint64_t> apart_from = std::nullopt) {
    Act a;
    a.shape = shape;
    a.features = uint64_t(shape.back());
    a.rows = numel(shape) / a.features;
    a.blocks = ceil_div(a.features, R_);
    a.block_bytes = align_up(a.rows * R_ * esz_, 64);
    uint64_t rb = cfg_.core.unified_buffer.row_bytes, period = rb * cfg_.core.unified_buffer.banks;
    if (apart_from && ub_.largest_free() >= a.bytes() + slack + period) {
      uint64_t at = ub_take(a.bytes() + slack + period, what, temporary || output_high_);
      a.base = at + (*apart_from + rb + period - at % period) % period;
      return a;
    }
    a.base = ub_take(a.bytes() + slack, what, temporary || output_high_);
    return a;
  }
  // v, or what it becomes through reshapes that are each its only user and keep the last
  // dimension (so the blocked layout's rows stay the same: aliases, no data moves).
  static Value through_row_reshapes(Value v) {
    while (v.hasOneUse()) {
      auto r = mlir::dyn_cast<tpu::ReshapeOp>(*v.getUsers().begin());
      if (!r || shape_of(r.getOutput()).back() != shape_of(v).back()) break;
      v = r.getOutput();
    }
    return v;
  }
  // The other operand of the add that is out's only user (through reshapes that keep the
  // rows), when it is in the unified buffer: a residual the op producing `out` may be fused with.
  std::optional<uint64_t> residual_base(Value out) {
    Value v = through_row_reshapes(out);
    if (!v.hasOneUse()) return std::nullopt;
    auto ad = mlir::dyn_cast<tpu::AddOp>(*v.getUsers().begin());
    if (!ad) return std::nullopt;
    auto it = acts_.find((ad.getLhs() == v ? ad.getRhs() : ad.getLhs()).getAsOpaquePointer());
    if (it == acts_.end()) return std::nullopt;
    return it->second.base;
  }

  // The output of an elementwise op: the buffer of an operand this op is the last user of
  // (and no alias shares), so residual adds and activation chains need no second copy.
  Act out_in_place(Value out, std::initializer_list<Value> operands, const std::string& layer) {
    for (Value in : operands) {
      auto p = in.getAsOpaquePointer();
      auto it = acts_.find(p);
      if (it == acts_.end() || uses_[p] != 1 || it->second.shape != shape_of(out)) continue;
      bool shared = false;
      for (const auto& [k, a] : acts_) shared |= k != p && a.base == it->second.base;
      if (shared) continue;
      return it->second;
    }
    return new_act(shape_of(out), fmt::format("the output of '{}'", layer));
  }

  // Whether the op being generated is v's last user and no alias shares its buffer, so the
  // op may overwrite it (its padding lanes included).
  bool last_use(Value v) {
    auto p = v.getAsOpaquePointer();
    auto it = acts_.find(p);
    if (it == acts_.end() || uses_[p] != 1) return false;
    for (const auto& [k, a] : acts_)
      if (k != p && a.base == it->second.base) return false;
    return true;
  }

  const Act& act(Value v) {
    auto it = acts_.find(v.getAsOpaquePointer());
    if (it == acts_.end()) throw InternalError("activation used before it was produced");
    return it->second;
  }
  void define(Value v, const Act& a) { acts_[v.getAsOpaquePointer()] = a; }
  void uses_left(mlir::func::FuncOp fn) {
    fn.walk([&](mlir::Operation* op) {
      for (Value v : op->getOperands()) uses_[v.getAsOpaquePointer()]++;
    });
  }
  void release(Value v) {
    auto p = v.getAsOpaquePointer();
    if (--uses_[p] > 0) return;
    auto it = acts_.find(p);
    if (it == acts_.end()) return;
    // Aliases (reshape without data movement) share a base: free once nobody uses it.
    uint64_t base = it->second.base;
    acts_.erase(it);
    for (auto& [k, a] : acts_)
      if (a.base == base) return;
    ub_.release(base);
  }

  // Blocked-layout DMA between HBM row-major [rows, features] and UB. The blocks' transfers
  // are independent: all are issued, then waited for together, so they share the HBM
  // channels instead of each paying the memory's latency alone.
  void load_act(const Act& a, uint64_t hbm) {
    for (uint64_t b = 0; b < a.blocks; ++b) {
      uint64_t fw = std::min<uint64_t>(R_, a.features - b * R_);
      // Clear the padding lanes of a partial block first so no stale value is read as data.
      if (fw < R_) clear(a.base + b * a.block_bytes, a.block_bytes);
    }
    for (uint64_t b = 0; b < a.blocks; ++b) {
      uint64_t fw = std::min<uint64_t>(R_, a.features - b * R_);
      std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}]", fw * esz_, hbm + b * R_ * esz_,
                                           a.base + b * a.block_bytes, a.rows, a.features * esz_, R_ * esz_));
      code(fmt::format("  dma.load desc={} src=r0 dst=r0 flag=f1", d));
    }
    if (a.blocks) code(fmt::format("  wait f1, {}", a.blocks));
  }
  void store_act(const Act& a, uint64_t hbm) {
    for (uint64_t b = 0; b < a.blocks; ++b) {
      uint64_t fw = std::min<uint64_t>(R_, a.features - b * R_);
      std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}]", fw * esz_,
                                           a.base + b * a.block_bytes, hbm + b * R_ * esz_, a.rows, R_ * esz_, a.features * esz_));
      code(fmt::format("  dma.store desc={} src=r0 dst=r0 flag=f1", d));
    }
    if (a.blocks) code(fmt::format("  wait f1, {}", a.blocks));
  }
  // Zero the padding border of a padded image buffer [N, Hp, Wp] x blocks (the interior is
  // about to be overwritten): top and bottom rows whole, left and right columns as strided
  // rows that all read the same zero bytes of HBM.
  // With `lowest`, the border holds the dtype's lowest value instead (-inf, or -128): the
  // padding of a max pool over inputs that may be negative.
  // With `unwaited`, the loads are left in flight on f1 and counted there.
  void clear_border(const Act& xp, uint64_t N, uint64_t Hp, uint64_t Wp, uint64_t pt, uint64_t pb, uint64_t pl,
                    uint64_t pr, bool lowest = false, uint64_t* unwaited = nullptr) {
    uint64_t px = R_ * esz_, H = Hp - pt - pb;
    uint64_t src = zero_hbm_;
    if (lowest) {
      std::vector<uint8_t> pat(std::max(pt, pb) * Wp * px + std::max(pl, pr) * px);
      for (size_t i = 0; i < pat.size(); i += esz_)
        if (q8_) pat[i] = 0x80;
        else pat[i] = 0x80, pat[i + 1] = 0xFF;  // bf16 -inf, little-endian
      src = hbm_const(std::move(pat));
    }
    auto fill = [&](uint64_t dst, uint64_t bytes, uint64_t rows, uint64_t dst_stride) {
      std::string d = new_desc(rows > 1 ? fmt::format("bytes={} src_off={} dst_off={} dim=[{}, 0, {}]", bytes, src, dst, rows, dst_stride)
                                        : fmt::format("bytes={} src_off={} dst_off={}", bytes, src, dst));
      code(fmt::format("  dma.load desc={} src=r0 dst=r0 flag=f1", d));
      if (unwaited) ++*unwaited;
      else code("  wait f1");
    };
    for (uint64_t b = 0; b < xp.blocks; ++b)
      for (uint64_t n = 0; n < N; ++n) {
        uint64_t img = xp.base + b * xp.block_bytes + n * Hp * Wp * px;
        if (pt) fill(img, pt * Wp * px, 1, 0);
        if (pb) fill(img + (pt + H) * Wp * px, pb * Wp * px, 1, 0);
        if (pl && H) fill(img + pt * Wp * px, pl * px, H, Wp * px);
        if (pr && H) fill(img + (pt * Wp + Wp - pr) * px, pr * px, H, Wp * px);
      }
  }

  // Zero-fill UB bytes by loading from HBM that is never written.
  void clear(uint64_t ub, uint64_t bytes) {
    while (bytes) {
      uint64_t n = std::min<uint64_t>(bytes, 1 << 20);
      std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={}", n, zero_hbm_, ub));
      code(fmt::format("  dma.load desc={} src=r0 dst=r0 flag=f1", d));
      code("  wait f1");
      ub += n, bytes -= n;
    }
  }

  // Weight tile (k block, n block) of a [K, N] matrix (bf16 values, or int8 integers),
  // stored as its own HBM segment of kw rows x nw elements.
  TileRef weight_tile(const std::vector<float>& w, uint64_t K, uint64_t N, uint64_t kb, uint64_t nb) {
    uint64_t kw = std::min<uint64_t>(R_, K - kb * R_), nw = std::min<uint64_t>(C_, N - nb * C_);
    std::vector<uint8_t> bytes(kw * nw * esz_);
    for (uint64_t k = 0; k < kw; ++k)
      for (uint64_t n = 0; n < nw; ++n) {
        float v = w[(kb * R_ + k) * N + nb * C_ + n];
        if (q8_) {
          bytes[k * nw + n] = uint8_t(int8_t(v));
        } else {
          uint16_t h = bf16_of(v);
          std::memcpy(&bytes[(k * nw + n) * 2], &h, 2);
        }
      }
    uint64_t at = hbm_const(std::move(bytes));
    return {new_desc(fmt::format("bytes={} dtype={} dim=[{}, {}, 0]", nw * esz_, dt_, kw, nw * esz_)), at};
  }

  // Bias of one n block as an fp32 row of C lanes in UB (loaded once per layer).
  // bf16: fp32 biases; INT8: int32 biases in the accumulator's scale.
  // A layer without bias (all zeros) has no bias rows and its epilogues skip the add.
  static constexpr uint64_t kNoBias = UINT64_MAX;
  uint64_t bias_at(uint64_t bias_ub, uint64_t n_block) const { return bias_ub == kNoBias ? kNoBias : bias_ub + n_block * C_ * 4; }
  uint64_t bias_rows(const std::vector<float>& bias, const std::vector<double>& acc_scale = {}) {
    if (std::all_of(bias.begin(), bias.end(), [](float b) { return b == 0.0f; })) return kNoBias;
    uint64_t nb = ceil_div(bias.size(), C_);
    std::vector<uint8_t> bytes(nb * C_ * 4, 0);
    for (size_t i = 0; i < bias.size(); ++i) {
      if (q8_) {
        int32_t q = int32_t(std::clamp<double>(std::nearbyint(bias[i] / acc_scale[i]), INT32_MIN, INT32_MAX));
        std::memcpy(&bytes[i * 4], &q, 4);
      } else {
        std::memcpy(&bytes[i * 4], &bias[i], 4);
      }
    }
    uint64_t hbm = hbm_const(bytes);
    uint64_t at = ub_take(bytes.size(), "a layer's bias rows");
    std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={}", bytes.size(), hbm, at));
    code(fmt::format("  dma.load desc={} src=r0 dst=r0 flag=f1", d));
    code("  wait f1");
    return at;
  }

  // The epilogue of an output block: acc (fp32) + bias, clamp, -> bf16 rows of `out` block.
  // Accumulator rows [g, g + rows) plus the bias row at bias_ub (fp32, or int32 for INT8).
  std::string bias_phase(uint64_t g, uint64_t bias_ub, uint64_t rows) const {
    std::string pre, bias = reg_ref(bias_ub, 8, pre);
    return pre + fmt::format("  vec.add dst=acc[r0+{0}] a=acc[r0+{0}] b=ub[{1}] rows={2} dt={3} bcast=1 flag={{flag}}\n", g, bias, rows,
                             q8_ ? "int32" : "fp32");
  }
  // The epilogue of an output block as phases, one vector operation each (run_blocks
  // spaces them out over the next steps): bf16: acc (fp32) + bias, clamp, -> bf16 rows;
  // INT8: acc (int32) + bias, RESCALE per output channel -> int8 (clamp in its bounds).
  // "{flag}" stands for the flag the scheduler gives the operation.
  std::vector<std::string> epilogue(uint32_t mxu, uint64_t acc_row, uint64_t rows, uint64_t bias_ub,
                                    const std::string& clamp_param, uint64_t out_ub) {
    uint64_t g = uint64_t(mxu) * cfg_.core.accumulators.rows + acc_row;
    std::vector<std::string> ph;
    std::string pre;
    if (bias_ub != kNoBias) ph.push_back(bias_phase(g, bias_ub, rows));
    if (q8_) {
      pre.clear();
      std::string out = reg_ref(out_ub, 9, pre);
      ph.push_back(pre + fmt::format("  vec.rescale dst=ub[{}] a=acc[r0+{}] rows={} param={}{} flag={{flag}}\n", out, g, rows,
                                     clamp_param, int_out_ ? " odt=int32" : ""));
      return ph;
    }
    if (!clamp_param.empty())
      ph.push_back(fmt::format("  vec.clamp dst=acc[r0+{0}] a=acc[r0+{0}] rows={1} dt=fp32 param={2} flag={{flag}}\n", g, rows,
                               clamp_param));
    pre.clear();
    std::string out = reg_ref(out_ub, 9, pre);
    ph.push_back(pre + fmt::format("  vec.cvt dst=ub[{}] a=acc[r0+{}] rows={} dt=fp32 odt={} flag={{flag}}\n", out, g, rows,
                                   int_out_ ? "int32" : "bf16"));
    return ph;
  }

  // Per output block: the vparam the epilogue uses. bf16: the clamp; INT8: per-lane RESCALE
  // from the accumulator scale (input scale x weight scale) to the output scale, with the
  // clamp as its integer bounds.
  std::vector<std::string> epilogue_params(uint64_t N, const std::vector<double>& acc_scale, double out_scale, double lo,
                                           double hi) {
    uint64_t nt = ceil_div(N, C_);
    if (!q8_) return std::vector<std::string>(nt, clamp_param(lo, hi));
    std::vector<std::string> out;
    for (uint64_t nb = 0; nb < nt; ++nb) {
      std::vector<int64_t> mult, shift;
      for (uint64_t c = 0; c < C_; ++c) {
        uint64_t ch = nb * C_ + c;
        auto [m, sh] = ch < N ? fixed_point(acc_scale[ch] / out_scale) : std::pair<int64_t, int64_t>{0, 31};
        mult.push_back(m), shift.push_back(sh);
      }
      std::string body = fmt::format("mult=[{}] shift=[{}]", fmt::join(mult, ", "), fmt::join(shift, ", "));
      if (!std::isinf(lo)) body += fmt::format(" min={}", std::max(-128.0, std::ceil(lo / out_scale)));
      if (!std::isinf(hi)) body += fmt::format(" max={}", std::min(127.0, std::floor(hi / out_scale)));
      out.push_back(new_param(body));
    }
    return out;
  }

  std::string clamp_param(double lo, double hi) {
    if (std::isinf(lo) && std::isinf(hi)) return {};
    std::string body;
    if (!std::isinf(lo)) body += fmt::format(" min={}", lo);
    if (!std::isinf(hi)) body += fmt::format(" max={}", hi);
    return new_param(body);
  }

  // Issues the blocks of one layer over the MXUs (see the file comment).
  // With `constant_tiles` (weights, not a batch matmul's operand stored by the program),
  // the prologue's transfers go right after the previous stream's last matmul (hoist_at_):
  // every FIFO is empty and every shadow swapped in by then, and the tiles are in HBM from
  // the start, so the loads overlap the previous stream's last epilogues and the layers in
  // between instead of delaying this stream's first matmuls.
  // A batch matmul's tiles hoist too when their store to HBM was issued before that point:
  // `ready` is the wait for it, which then goes in front of the prologue.
  // `background`: independent vector instructions ("{flag}" for their flag, with their
  // estimated issue cycles) slotted in where the epilogues leave the vector unit free.
  // `side`: dependent vector work slotted in the same way once the blocks it needs are done.
  // `transfers`: DMA instructions on their own flags, each issued at the step its fraction
  // of the stream's steps says, so a long transfer goes in pieces that the weight loads'
  // requests need not queue behind.
  void run_blocks(std::vector<Block>& blocks, bool constant_tiles = false,
                  std::optional<std::pair<std::string, size_t>> ready = std::nullopt,
                  std::vector<std::pair<std::string, uint64_t>> background = {}, std::vector<SideWork> side = {},
                  std::vector<std::pair<std::string, double>> transfers = {}) {
    uint32_t nm = cfg_.core.mxu.count;
    struct Stream {
      std::vector<size_t> blocks;  // indices into `blocks`
      std::vector<std::pair<size_t, size_t>> tiles;  // (block, group) in order
    };
    std::vector<Stream> s(nm);
    for (size_t b = 0; b < blocks.size(); ++b) {
      s[b % nm].blocks.push_back(b);
      for (size_t g = 0; g < blocks[b].groups.size(); ++g) s[b % nm].tiles.push_back({b, g});
    }
    // Prologue: two tiles into each FIFO, one into each shadow.
    std::string prologue;
    for (uint32_t m = 0; m < nm; ++m) {
      for (size_t i = 0; i < std::min<size_t>(2, s[m].tiles.size()); ++i) {
        const TileRef& t = blocks[s[m].tiles[i].first].groups[s[m].tiles[i].second].tile;
        prologue += fmt::format("  li r{}, {}\n", 16 + m, t.addr);
        prologue += fmt::format("  dma.wfifo desc={} src=r{} mxu={}\n", t.desc, 16 + m, m);
      }
      if (!s[m].tiles.empty()) prologue += fmt::format("  mxu.wload mxu={}\n", m);
    }
    if (ready && hoist_at_ && ready->second <= *hoist_at_) code_.insert(*hoist_at_, ready->first + prologue);
    else if (ready) code_ += ready->first + prologue;
    else if (constant_tiles && hoist_at_) code_.insert(*hoist_at_, prologue);
    else code_ += prologue;
    hoist_at_.reset();
    // Epilogues in flight, their vector operations slotted in between the matmuls of the
    // next blocks where an estimate of the timing (docs/microarch.md) says they can issue
    // without stalling the in-order sequencer: an epilogue's first operation waits for its
    // block's last matmul, done only after the array's fill and drain, and a step of short
    // matmuls (one per output row of a convolution) keeps issue busy, so vector work issued
    // only between steps would leave the MXUs idle meanwhile. The accumulators are split
    // into as many regions as the largest block leaves room for (acc_regions), so blocks
    // keep streaming while earlier epilogues wait. Flags: f(2+m) matmul done per block
    // (waited in block order per MXU), f24 epilogue operations.
    struct Pending {
      uint32_t mxu;
      uint64_t region;
      std::vector<std::string> phases;
      uint64_t last = 0;  // the f24 count of its last operation issued
      uint64_t start_at = 0;  // not slotted: the `clock` from which its first operation may wait
      size_t next = 0;
      bool closed = false;
      size_t block = 0;
      uint64_t ready = 0, occ = 0;  // estimates: when its next phase's input is there; one phase's issue cycles
      bool free = false;  // background or side work: no MXU to wait for
      std::vector<uint64_t> occs = {};  // free: each phase's issue cycles
      std::vector<bool> waits = {};  // free: whether the phase waits for the one before
      std::vector<size_t> deps = {};  // side work: the blocks whose epilogues its first phase waits for
    };
    uint64_t span = 1;
    for (const Block& b : blocks)
      for (const TileGroup& g : b.groups)
        for (const MatmulStep& st : g.steps) span = std::max(span, st.acc_row + st.rows);
    uint64_t nreg = acc_regions(span), region_rows = cfg_.core.accumulators.rows / nreg;
    std::deque<Pending> pending;
    // Two ways to place the epilogues' operations, by the stream's shape:
    // - steps of several short matmuls (a convolution's one per output row), or background
    //   work to fit in: each operation goes in before the next matmul the timing estimate
    //   says it can issue by without stalling (slot_in);
    // - steps of one long matmul per MXU (a matmul's blocks): an epilogue starts once about
    //   `lag` cycles of later matmuls have been issued (`clock` estimates each step's cycles),
    //   then takes one phase per step. There the per-matmul slotting measured slower (BERT-base
    //   layer, bf16, batch 1: 23676 cycles against 23090).
    bool slotted = !background.empty();
    for (const Block& b : blocks)
      for (const TileGroup& g : b.groups) slotted |= g.steps.size() > 1;
    std::vector<bool> started(blocks.size(), false);  // its epilogue was put in flight
    // The timing estimate: sequencer cycle, each MXU's data path and weight shift, the
    // vector unit's issue stage and the done cycle of the epilogue operations in flight.
    const auto& mxc = cfg_.core.mxu;
    const auto& vc = cfg_.core.vector;
    uint64_t now = 0, vfree = 0, vdone = 0;
    std::vector<uint64_t> mxu_free(nm, 0), shifted(nm, 0);
    uint64_t drain_lat = uint64_t(mxc.input_latency_cycles) + R_ + C_ - 2 + mxc.output_latency_cycles;
    uint64_t vlat = std::max({vc.latency_cycles.alu, vc.latency_cycles.rescale, vc.latency_cycles.convert});
    auto bundle = [&](uint64_t at) { now = std::max(now + 1, at + 1); };
    double bytes_per_cycle = cfg_.memory.bandwidth_gbytes_per_s * 1e3 / cfg_.clock_mhz;
    uint64_t lag = uint64_t(mxc.input_latency_cycles) + R_ + C_ + mxc.output_latency_cycles, clock = 0;
    // f24 counts the epilogue operations done, so an epilogue's next phase waits until f24
    // has counted up to its own previous operation j: the other epilogues' operations issued
    // after it keep the unit busy. Operations issue in order but finish after their class's
    // latency, so one issued after j with a shorter latency may finish first and count in its
    // place: those that can (docs/microarch.md: k after j finishes first only if the issue
    // cycles from j's end to k's end plus k's latency are below j's latency) are waited for too.
    uint64_t issued = 0, consumed = 0;
    std::vector<uint64_t> op_lat{0}, op_occ{0};  // per f24 operation, from 1
    auto wait_upto = [&](uint64_t j, uint64_t done_at) {
      uint64_t need = j;
      for (uint64_t k = j + 1, between = 0; k <= issued && between < op_lat[j]; between += op_occ[k], ++k)
        if (between + op_occ[k] + op_lat[k] < op_lat[j]) ++need;
      if (consumed < need) code(fmt::format("  wait f24, {}", need - consumed)), bundle(done_at);
      consumed = std::max(consumed, need);
    };
    std::function<void(Pending&)> advance;
    auto find_block = [&](size_t bi) -> Pending* {
      for (Pending& q : pending)
        if (!q.free && q.block == bi) return &q;
      return nullptr;
    };
    // Whether block bi's epilogue has issued every operation (side work and blocks that
    // need it may then go, after a wait for its last one).
    auto epilogue_issued = [&](size_t bi) {
      Pending* q = find_block(bi);
      return started[bi] && !(q && !q->closed && q->next < q->phases.size());
    };
    // A block's `after` epilogue (split K's first half), issued to its end and waited for
    // (it is always in flight or done by then: it went to the MXUs in the same step or an
    // earlier one).
    auto close_block = [&](size_t bi) {
      if (Pending* q = find_block(bi)) {
        if (q->closed) return;
        while (q->next < q->phases.size()) advance(*q);
        wait_upto(q->last, q->ready);
        q->closed = true;
        return;
      }
      if (!started[bi]) throw InternalError("a split-K block's first half has not started");
    };
    advance = [&](Pending& p) {
      if (p.free) {
        if (p.next == 0)
          for (size_t d : p.deps) close_block(d);
        else if (p.waits[p.next])
          wait_upto(p.last, p.ready);
      } else if (p.next == 0) {
        if (blocks[p.block].after >= 0) close_block(size_t(blocks[p.block].after));
        code(fmt::format("  wait f{}", 2 + p.mxu)), bundle(p.ready);
      } else {
        wait_upto(p.last, p.ready);
      }
      uint64_t occ = p.free ? p.occs[p.next] : p.occ;
      std::string text = p.phases[p.next++];
      for (size_t at = text.find("{flag}"); at != std::string::npos; at = text.find("{flag}")) text.replace(at, 6, "f24");
      code_ += text;
      for (size_t at = text.find('\n'); at != std::string::npos && at + 1 < text.size(); at = text.find('\n', at + 1)) bundle(now);
      uint64_t t = std::max(now, vfree);
      bundle(t);
      vfree = t + occ;
      p.ready = vdone = std::max(vdone, vfree + vlat);
      p.last = ++issued;
      op_lat.push_back(vec_latency(text));
      op_occ.push_back(occ);
    };
    // Finishes the epilogues in flight up to `count` of them (in order), one phase of each
    // in turn, so the vector unit works on several while each waits for its previous phase.
    // Background work is left to slot in later unless `all`.
    auto finish = [&](size_t count, bool all) {
      for (bool open = true; open;) {
        open = false;
        for (size_t i = 0; i < count && i < pending.size(); ++i) {
          Pending& p = pending[i];
          if (p.closed || (p.free && !all)) continue;
          if (p.next < p.phases.size()) {
            advance(p);
            open = true;
          } else {
            wait_upto(p.last, p.ready);  // its last operation has written the output
            p.closed = true;
          }
        }
      }
    };
    // When the next phase of p could issue: its matmuls or own previous phase done (and a
    // split-K first half's epilogue), the vector unit free. A first phase waits on its
    // MXU's flag, so blocks of one MXU go in order.
    auto start_of = [&](size_t i) -> std::optional<uint64_t> {
      Pending& p = pending[i];
      if (p.closed || p.next >= p.phases.size()) return std::nullopt;
      if (p.free) {
        uint64_t t = std::max(now, vfree);
        if (p.next > 0 && p.waits[p.next]) t = std::max(t, p.ready);
        if (p.next == 0)
          for (size_t d : p.deps) {
            if (!epilogue_issued(d)) return std::nullopt;
            if (Pending* q = find_block(d); q && !q->closed) t = std::max(t, q->ready);
          }
        return t;
      }
      uint64_t t = std::max({now, vfree, p.ready});
      if (p.next == 0) {
        for (size_t j = 0; j < i; ++j)
          if (!pending[j].free && pending[j].mxu == p.mxu && pending[j].next == 0) return std::nullopt;
        if (blocks[p.block].after >= 0)
          if (Pending* q = find_block(size_t(blocks[p.block].after)); q && !q->closed) {
            if (q->next < q->phases.size()) return std::nullopt;  // it goes first (older)
            t = std::max(t, q->ready);
          }
      }
      return t;
    };
    // Issues the epilogue operations that can start by `until` (the cycle the next matmul
    // would issue anyway), oldest first.
    auto slot_in = [&](uint64_t until, bool only_free) {
      for (bool again = true; again;) {
        again = false;
        for (int bg = only_free ? 1 : 0; bg < 2 && !again; ++bg)  // epilogues before background work
          for (size_t i = 0; i < pending.size(); ++i)
            if (auto t = start_of(i); pending[i].free == bool(bg) && t && *t <= until) {
              advance(pending[i]);
              again = true;
              break;
            }
      }
    };
    if (!background.empty()) {
      Pending bp{nm, 0, {}};
      bp.free = true;
      for (auto& [text, occ] : background) bp.phases.push_back(std::move(text)), bp.occs.push_back(occ), bp.waits.push_back(false);
      pending.push_back(std::move(bp));
    }
    for (SideWork& w : side) {
      Pending sp{nm, 0, {}};
      sp.free = true;
      sp.deps = std::move(w.deps);
      for (VecStep& st : w.steps) sp.phases.push_back(std::move(st.text)), sp.occs.push_back(st.occ), sp.waits.push_back(st.waits);
      pending.push_back(std::move(sp));
    }
    std::vector<size_t> tile_pos(nm, 0), blocks_done(nm, 0);
    std::vector<std::pair<uint32_t, std::pair<size_t, uint64_t>>> finished;  // (mxu, (block, region))
    std::vector<uint64_t> block_done(nm, 0);  // estimated done cycle of each MXU's current block
    bool work = true;
    // Steps: the longest stream's tile groups.
    size_t next_transfer = 0, step = 0, steps = 1;
    for (const Stream& st : s) steps = std::max(steps, st.tiles.size());
    while (work) {
      work = false;
      finished.clear();
      for (++step; next_transfer < transfers.size() && transfers[next_transfer].second * double(steps) < double(step);)
        code_ += transfers[next_transfer++].first, bundle(now);
      // This step: each MXU's next tile group. Their matmuls are interleaved across the MXUs
      // so that in-order issue never leaves one MXU idle behind another's queue.
      std::vector<const TileGroup*> grp(nm, nullptr);
      std::vector<uint64_t> base(nm, 0);
      size_t longest = 0;
      for (uint32_t m = 0; m < nm; ++m) {
        if (tile_pos[m] >= s[m].tiles.size()) continue;
        work = true;
        auto [bi, gi] = s[m].tiles[tile_pos[m]];
        // A block whose input an earlier block's epilogue writes: its matmuls wait until that
        // epilogue has issued its last operation (the MXU sits out this step meanwhile).
        if (gi == 0 && blocks[bi].needs >= 0) {
          size_t nb = size_t(blocks[bi].needs);
          if (!epilogue_issued(nb)) continue;
          if (Pending* q = find_block(nb); q && !q->closed) wait_upto(q->last, q->ready), q->closed = true;
        }
        uint64_t region = blocks_done[m] % nreg;
        base[m] = region * region_rows;
        // The accumulator region must be free: finish the epilogues (in order) up to the
        // one that still reads it, interleaved.
        if (gi == 0)
          for (size_t i = 0; i < pending.size(); ++i)
            if (!pending[i].free && pending[i].mxu == m && pending[i].region == region && !pending[i].closed) {
              finish(i + 1, false);
              break;
            }
        grp[m] = &blocks[bi].groups[gi];
        longest = std::max(longest, grp[m]->steps.size());
      }
      for (size_t k = 0; k < longest; ++k)
        for (uint32_t m = 0; m < nm; ++m) {
          if (!grp[m] || k >= grp[m]->steps.size()) continue;
          auto [bi, gi] = s[m].tiles[tile_pos[m]];
          const MatmulStep& st = grp[m]->steps[k];
          bool last = gi + 1 == blocks[bi].groups.size() && k + 1 == grp[m]->steps.size();
          uint64_t issue = std::max({now, mxu_free[m], k == 0 ? shifted[m] : 0});
          if (slotted || !side.empty()) slot_in(issue, !slotted);
          std::string src = addr_ref(st.src, 10 + int(m));
          if (st.src > 0xFFFFFF) bundle(now);
          std::string op = fmt::format("mxu.matmul mxu={} src={} dst=r0+{} rows={} dtype={}{}{}{}{}", m, src,
                                       base[m] + st.acc_row, st.rows, dt_, st.stride ? fmt::format(" stride={}", st.stride) : "",
                                       k == 0 ? " swap=1" : "", st.accumulate ? " acc=1" : "",
                                       last ? fmt::format(" flag=f{}", 2 + m) : "");
          if (k == 0) {
            if (tile_pos[m] + 1 < s[m].tiles.size()) op += fmt::format(" || mxu.wload mxu={}", m);
            if (tile_pos[m] + 2 < s[m].tiles.size()) {
              auto [b2, g2] = s[m].tiles[tile_pos[m] + 2];
              const TileRef& t = blocks[b2].groups[g2].tile;
              // The address goes into a register one bundle ahead (read before write).
              code(fmt::format("  li r{}, {}", 16 + m, t.addr));
              bundle(now);
              op += fmt::format(" || dma.wfifo desc={} src=r{} mxu={}", t.desc, 16 + m, m);
            }
          }
          code("  " + op);
          uint64_t t = std::max({now, mxu_free[m], k == 0 ? shifted[m] : 0});
          bundle(t);
          mxu_free[m] = t + st.rows;
          if (k == 0) shifted[m] = t + mxc.input_latency_cycles + mxc.weight_shift_cycles;
          if (last) block_done[m] = t + st.rows + drain_lat;
        }
      if (!slotted) {
        // A step lasts at least its longest group's rows, but also a weight shift and the
        // load of this step's tiles from memory (a slow memory stretches every step).
        uint64_t step_rows = 0, active = 0;
        for (uint32_t m = 0; m < nm; ++m) {
          if (!grp[m]) continue;
          uint64_t grows = 0;
          for (const MatmulStep& st : grp[m]->steps) grows += st.rows;
          step_rows = std::max(step_rows, grows);
          ++active;
        }
        uint64_t load = uint64_t(std::ceil(double(active * R_ * C_ * esz_) / bytes_per_cycle));
        clock += std::max<uint64_t>({step_rows, mxc.weight_shift_cycles, load});
        for (Pending& p : pending)
          if (!p.free && !p.closed && p.next < p.phases.size() && (p.next > 0 || clock >= p.start_at)) advance(p);
      }
      for (uint32_t m = 0; m < nm; ++m) {
        if (!grp[m]) continue;
        auto [bi, gi] = s[m].tiles[tile_pos[m]];
        if (gi + 1 == blocks[bi].groups.size()) finished.push_back({m, {bi, blocks_done[m] % nreg}}), blocks_done[m]++;
        tile_pos[m]++;
      }
      for (auto& [m, br] : finished) {
        Pending p{m, br.second, blocks[br.first].epilogue(m, br.second * region_rows)};
        uint64_t rows = 0;
        for (const TileGroup& g : blocks[br.first].groups)
          for (const MatmulStep& st : g.steps) rows = std::max(rows, st.acc_row + st.rows);
        p.block = br.first;
        p.start_at = clock + lag;
        p.ready = block_done[m];
        p.occ = vec_occ(rows);
        pending.push_back(std::move(p));
        started[br.first] = true;
      }
      std::erase_if(pending, [](const Pending& p) { return p.closed || (p.free && p.next >= p.phases.size()); });
    }
    while (next_transfer < transfers.size()) code_ += transfers[next_transfer++].first;
    hoist_at_ = code_.size();  // the next stream's prologue may go here
    finish(pending.size(), true);
    wait_upto(issued, vdone);
  }

  // Accumulator regions per MXU that run_blocks uses for blocks of up to `span` rows: as
  // many as fit, at least two.
  uint64_t acc_regions(uint64_t span) const {
    return std::max<uint64_t>(2, cfg_.core.accumulators.rows / std::max<uint64_t>(1, span));
  }

  // Rows per output block of a matmul with `n_blocks` column blocks (per row chunk): at most
  // an accumulator region, and split finer when that balances the blocks over the MXUs
  // (6 column blocks on 4 MXUs leave two idle half the time; 12 do not). Finer chunks cost
  // extra weight loads, so the count grows only while the busiest MXU's rows shrink.
  uint64_t row_chunk(uint64_t rows, uint64_t n_blocks) const {
    uint64_t nm = cfg_.core.mxu.count, c0 = ceil_div(rows, acc_region_), best = c0;
    auto busiest = [&](uint64_t c) { return ceil_div(n_blocks * c, nm) * ceil_div(rows, c); };
    for (uint64_t c = c0 + 1; c <= 4 * c0 && ceil_div(rows, c) >= R_; ++c)
      if (busiest(c) < busiest(best)) best = c;
    return ceil_div(rows, best);
  }

  // Output rows (of `width` pixels) per block of a convolution with `n_blocks` column
  // blocks, by row_chunk's rule: at most an accumulator region, and split finer while that
  // lowers the busiest MXU's rows (112 rows of 14 pixels in chunks of 36 leave one of four
  // MXUs a 4-row remainder; chunks of 28 share them out), keeping a block's matmuls at
  // least R rows long so they hide the next weight shift.
  uint64_t conv_row_chunk(uint64_t out_rows, uint64_t width, uint64_t n_blocks) const {
    uint64_t nm = cfg_.core.mxu.count, most = std::max<uint64_t>(1, acc_region_ / width);
    uint64_t c0 = ceil_div(out_rows, most), best = c0;
    auto busiest = [&](uint64_t c) { return ceil_div(n_blocks * c, nm) * ceil_div(out_rows, c); };
    for (uint64_t c = c0 + 1; c <= 4 * c0 && ceil_div(out_rows, c) * width >= R_; ++c)
      if (busiest(c) < busiest(best)) best = c;
    return ceil_div(out_rows, best);
  }

  // The op being generated's bound row; `shape` for another op generated along with it.
  void add_bound(const std::string& layer, uint64_t macs, uint64_t hbm_bytes,
                 std::optional<std::vector<int64_t>> shape = std::nullopt) {
    LayerBound lb;
    lb.layer = layer;
    lb.op = current_op_;
    lb.shape = shape ? *shape : current_shape_;
    lb.macs = macs;
    lb.hbm_bytes = hbm_bytes;
    uint64_t per_cycle = uint64_t(cfg_.core.mxu.count) * R_ * C_;
    lb.compute_cycles = ceil_div(macs, per_cycle);
    double bytes_per_cycle = cfg_.memory.bandwidth_gbytes_per_s * 1e9 / (cfg_.clock_mhz * 1e6);
    lb.memory_cycles = uint64_t(std::ceil(double(hbm_bytes) / bytes_per_cycle));
    bounds_.push_back(lb);
  }

  // ---- layers ----

  // An elementwise op that is the only consumer of a matmul's output (through reshapes that
  // keep the rows), in bf16: a table function (BERT's GELU), a per-channel affine step
  // (attention's 1 / sqrt(d)) or an add of an activation already computed (a residual),
  // with its clamp. It then runs in the matmul's epilogues, on each output block right
  // after the block's conversion to bf16: the same vector operations on the same values as
  // its own pass would run (so the same bits), but overlapping the next blocks' matmuls.
  // Returns the extra epilogue phases of output block (n block, byte offset in the block,
  // rows), or nothing when there is no such op.
  using FusedPhases = std::function<std::vector<std::string>(uint64_t, uint64_t, uint64_t)>;
  // A chain of bf16 elementwise ops after a matmul (GPT-2's tanh-form GELU: x*x*x, scales, an
  // add, tanh, a product with x) whose every operand is the matmul's output or an earlier
  // link, and whose every link but the last is read only inside the chain: it runs in the
  // matmul's epilogues, one vector operation per link on each output block's rows (the same
  // operations in the same order as the separate layers, so the same bits). Links live in
  // the output's buffer and one scratch buffer, reused once a value is dead. Returns the
  // extra phases of output block (n block, byte offset in the block, rows), or nothing.
  FusedPhases fuse_chain(Value out, const Act& y, const std::string& into_layer) {
    if (q8_ || is_int32(out) || out.use_empty()) return {};
    mlir::Operation* start = out.getDefiningOp();
    if (!start) return {};
    std::vector<mlir::Operation*> chain;
    std::set<const void*> in_chain{out.getAsOpaquePointer()};
    auto shape = shape_of(out);
    // A link's activation operands (an affine step's scale and shift are constants).
    auto activations = [](mlir::Operation* n) {
      if (auto a = mlir::dyn_cast<tpu::AffineOp>(n)) return std::vector<Value>{a.getInput()};
      return std::vector<Value>(n->getOperands().begin(), n->getOperands().end());
    };
    for (mlir::Operation* n = start->getNextNode(); n; n = n->getNextNode()) {
      if (mlir::isa<tosa::ConstOp>(n)) continue;
      bool link = mlir::isa<tpu::BinaryOp, tpu::AddOp, tpu::UnaryOp, tpu::AffineOp>(n) && n->getNumResults() == 1 &&
                  shape_of(n->getResult(0)) == shape;
      if (auto b = mlir::dyn_cast<tpu::BinaryOp>(n); b && b.getKind() == "div") link = false;
      if (mlir::isa<tpu::AffineOp>(n) && folded_scales_.count(n)) link = false;
      for (Value v : link ? activations(n) : std::vector<Value>{}) link &= in_chain.count(v.getAsOpaquePointer()) > 0;
      if (!link) break;
      chain.push_back(n);
      in_chain.insert(n->getResult(0).getAsOpaquePointer());
    }
    if (chain.size() < 2) return {};
    // Every value but the last is read only by later links.
    std::set<mlir::Operation*> ops(chain.begin(), chain.end());
    std::vector<Value> values{out};
    for (mlir::Operation* op : chain) values.push_back(op->getResult(0));
    for (size_t i = 0; i + 1 < values.size(); ++i)
      for (mlir::Operation* u : values[i].getUsers())
        if (!ops.count(u)) return {};
    // Slots: 0 = y's buffer (the output's), 1 = scratch. A link writes the slot of an operand
    // it reads for the last time, else a free slot.
    std::map<const void*, size_t> last;  // value -> index of the last link reading it
    for (size_t i = 0; i < chain.size(); ++i)
      for (Value v : activations(chain[i])) last[v.getAsOpaquePointer()] = i;
    std::map<const void*, int> slot{{out.getAsOpaquePointer(), 0}};
    std::vector<int> dst(chain.size());
    for (size_t i = 0; i < chain.size(); ++i) {
      std::set<int> busy;
      for (auto& [v, s] : slot)
        if (last.count(v) && last[v] > i) busy.insert(s);
      int d = !busy.count(0) ? 0 : !busy.count(1) ? 1 : -1;
      if (d < 0) return {};  // a third live value: not handled
      dst[i] = d;
      slot[chain[i]->getResult(0).getAsOpaquePointer()] = d;
    }
    if (dst.back() != 0) return {};  // the result must end in the output's buffer
    // The scratch buffer is freed with the last link living there (release() frees a buffer
    // once no value shares it).
    Act t = y;
    if (std::count(dst.begin(), dst.end(), 1)) {
      if (ub_.largest_free() < y.bytes() + (1 << 16)) return {};
      t.base = ub_take(y.bytes(), fmt::format("the scratch rows of the ops fused into '{}'", into_layer));
    }
    auto at = [y, t](int s) { return s == 0 ? y : t; };
    struct Link {
      std::string op;  // "add" / "mul" / ..., "affine", or a table function
      std::vector<int> srcs;
      int dst;
      std::vector<std::string> params;  // affine: per lane block
      std::string clamp;
    };
    std::vector<Link> links;
    for (size_t i = 0; i < chain.size(); ++i) {
      mlir::Operation* n = chain[i];
      Link l;
      l.dst = dst[i];
      if (auto b = mlir::dyn_cast<tpu::BinaryOp>(n)) l.op = b.getKind().str();
      if (auto a = mlir::dyn_cast<tpu::AddOp>(n)) {
        l.op = "add";
        l.clamp = clamp_param(a.getClampMin().convertToDouble(), a.getClampMax().convertToDouble());
      }
      if (auto u = mlir::dyn_cast<tpu::UnaryOp>(n)) l.op = u.getFn().str();
      if (auto a = mlir::dyn_cast<tpu::AffineOp>(n)) {
        l.op = "affine";
        for (uint64_t blk = 0; blk < y.blocks; ++blk)
          l.params.push_back(affine_param(const_floats(a.getScale(), a.getLayer().str()), const_floats(a.getBias(), a.getLayer().str()), blk, 1.0, 1.0));
      }
      for (Value v : activations(n)) l.srcs.push_back(slot.at(v.getAsOpaquePointer()));
      links.push_back(std::move(l));
      Act fy = at(dst[i]);
      fused_[n] = fy;
      fused_bounds_.push_back({into_layer, n->getName().stripDialect().str(), shape});
    }
    return [this, links, at](uint64_t n, uint64_t off, uint64_t rows) {
      std::vector<std::string> ph;
      for (const Link& l : links) {
        std::string pre;
        auto u = [&](int s, int reg) { return "ub[" + reg_ref(at(s).base + n * at(s).block_bytes + off, reg, pre) + "]"; };
        std::string d = u(l.dst, 6), a = u(l.srcs[0], 7), text;
        if (l.op == "affine") text = fmt::format("vec.affine dst={} a={} rows={} dt=bf16 param={}", d, a, rows, l.params[n]);
        else if (l.srcs.size() == 2) text = fmt::format("vec.{} dst={} a={} b={} rows={} dt=bf16", l.op, d, a, u(l.srcs[1], 8), rows);
        else text = fmt::format("vec.{} dst={} a={} rows={} dt=bf16", l.op, d, a, rows);
        ph.push_back(pre + "  " + text + " flag={flag}\n");
        if (!l.clamp.empty()) {
          pre.clear();
          std::string c = u(l.dst, 6);
          ph.push_back(pre + fmt::format("  vec.clamp dst={0} a={0} rows={1} dt=bf16 param={2} flag={{flag}}\n", c, rows, l.clamp));
        }
      }
      return ph;
    };
  }

  FusedPhases fuse_elementwise(Value out, const Act& y, const std::string& into_layer) {
    if (q8_ || is_int32(out)) return {};
    Value v = through_row_reshapes(out);
    if (!v.hasOneUse()) return {};
    mlir::Operation* u = *v.getUsers().begin();
    if (u->getNumResults() != 1 || numel(shape_of(u->getResult(0))) != numel(y.shape) ||
        shape_of(u->getResult(0)).back() != int64_t(y.features))
      return {};
    FusedPhases f;
    if (auto un = mlir::dyn_cast<tpu::UnaryOp>(u)) {
      std::string fn = un.getFn().str();
      f = [this, y, fn](uint64_t n, uint64_t off, uint64_t rows) {
        std::string pre, o = reg_ref(y.base + n * y.block_bytes + off, 6, pre);
        return std::vector<std::string>{pre + fmt::format("  vec.{} dst=ub[{}] a=ub[{}] rows={} dt=bf16 flag={{flag}}\n", fn, o, o, rows)};
      };
    } else if (auto af = mlir::dyn_cast<tpu::AffineOp>(u); af && !folded_scales_.count(u)) {
      std::vector<std::string> params;
      for (uint64_t blk = 0; blk < y.blocks; ++blk)
        params.push_back(affine_param(const_floats(af.getScale(), af.getLayer().str()), const_floats(af.getBias(), af.getLayer().str()), blk, 1.0, 1.0));
      f = [this, y, params](uint64_t n, uint64_t off, uint64_t rows) {
        std::string pre, o = reg_ref(y.base + n * y.block_bytes + off, 6, pre);
        return std::vector<std::string>{
            pre + fmt::format("  vec.affine dst=ub[{}] a=ub[{}] rows={} dt=bf16 param={} flag={{flag}}\n", o, o, rows, params[n])};
      };
    } else if (auto ad = mlir::dyn_cast<tpu::AddOp>(u)) {
      Value other = ad.getLhs() == v ? ad.getRhs() : ad.getLhs();
      auto it = acts_.find(other.getAsOpaquePointer());
      if (other == v || it == acts_.end() || it->second.rows != y.rows || it->second.blocks != y.blocks) return {};
      Act b = it->second;
      std::string cp = clamp_param(ad.getClampMin().convertToDouble(), ad.getClampMax().convertToDouble());
      f = [this, y, b, cp](uint64_t n, uint64_t off, uint64_t rows) {
        std::string pre, o = reg_ref(y.base + n * y.block_bytes + off, 6, pre), bo = reg_ref(b.base + n * b.block_bytes + off, 7, pre);
        std::vector<std::string> ph{pre + fmt::format("  vec.add dst=ub[{0}] a=ub[{0}] b=ub[{1}] rows={2} dt=bf16 flag={{flag}}\n", o, bo, rows)};
        if (!cp.empty()) {
          std::string pre2, o2 = reg_ref(y.base + n * y.block_bytes + off, 6, pre2);
          ph.push_back(pre2 + fmt::format("  vec.clamp dst=ub[{0}] a=ub[{0}] rows={1} dt=bf16 param={2} flag={{flag}}\n", o2, rows, cp));
        }
        return ph;
      };
    } else {
      return {};
    }
    Act fy = y;
    fy.shape = shape_of(u->getResult(0));
    fused_[u] = fy;
    fused_bounds_.push_back({into_layer, u->getName().stripDialect().str(), fy.shape});
    return f;
  }
  // Attention's softmax (optionally after a per-channel affine step, the 1 / sqrt(d) scale)
  // as the only consumer of a bf16 batch matmul whose rows fit one lane block: each output
  // block's epilogue takes the scores straight from the accumulators in fp32 (no rounding to
  // bf16 and no conversion back): scale, mask (the model's, and -inf on padding lanes), row
  // max, subtract, exp, row sum, reciprocal, multiply, convert, one vector operation each,
  // overlapping the next blocks' matmuls. The row statistics go to an fp32 row per
  // accumulator row. Returns the phases of a block (MXU, accumulator row, rows, output
  // address, first row within the mask) and the unified-buffer space to free afterwards.
  struct SoftmaxEpilogue {
    std::function<std::vector<std::string>(uint32_t, uint64_t, uint64_t, uint64_t, uint64_t)> phases;
    std::vector<uint64_t> buffers;
  };
  std::optional<SoftmaxEpilogue> fuse_softmax(Value out, const Act& y, const std::string& into_layer, uint64_t M) {
    if (q8_ || is_int32(out) || y.blocks != 1) return std::nullopt;
    Value v = through_row_reshapes(out);
    if (!v.hasOneUse()) return std::nullopt;
    tpu::AffineOp af = mlir::dyn_cast<tpu::AffineOp>(*v.getUsers().begin());
    if (af) {
      v = through_row_reshapes(af.getOutput());
      if (!v.hasOneUse()) return std::nullopt;
    }
    auto sm = mlir::dyn_cast<tpu::SoftmaxOp>(*v.getUsers().begin());
    if (!sm || sm.getInput() != v || numel(shape_of(sm.getOutput())) != numel(y.shape)) return std::nullopt;
    uint64_t row32 = C_ * 4, N = y.features, acc_rows = cfg_.core.accumulators.rows;
    std::vector<float> mk;
    if (sm.getMask()) {
      mk = const_floats(sm.getMask(), sm.getLayer().str());
      if (mk.size() != M * N) return std::nullopt;
    }
    uint64_t stat_bytes = uint64_t(cfg_.core.mxu.count) * acc_rows * row32;
    uint64_t mask_rows = !mk.empty() ? M : N < C_ ? 1 : 0;
    if (ub_.largest_free() < stat_bytes + mask_rows * row32 + (1 << 16)) return std::nullopt;
    SoftmaxEpilogue e;
    uint64_t stats = ub_take(stat_bytes, fmt::format("the softmax statistics of '{}'", into_layer));
    e.buffers.push_back(stats);
    uint64_t masks = 0;
    if (mask_rows) {
      std::vector<uint8_t> bytes(mask_rows * row32);
      for (uint64_t i = 0; i < mask_rows; ++i)
        for (uint64_t j = 0; j < C_; ++j) {
          float f = j >= N ? -std::numeric_limits<float>::infinity() : mk.empty() ? 0.0f : mk[i * N + j];
          std::memcpy(&bytes[(i * C_ + j) * 4], &f, 4);
        }
      masks = ub_take(bytes.size(), fmt::format("the attention mask of '{}'", sm.getLayer().str()));
      e.buffers.push_back(masks);
      uint64_t n = bytes.size(), hbm = hbm_const(std::move(bytes));
      code(fmt::format("  dma.load desc={} src=r0 dst=r0 flag=f1", new_desc(fmt::format("bytes={} src_off={} dst_off={}", n, hbm, masks))));
      code("  wait f1");
    }
    std::string scale_p;
    if (af && !folded_scales_.count(af.getOperation())) scale_p = affine_param(const_floats(af.getScale(), af.getLayer().str()), const_floats(af.getBias(), af.getLayer().str()), 0, 1.0, 1.0);
    bool per_row_mask = !mk.empty();
    e.phases = [=](uint32_t m, uint64_t acc_row, uint64_t rows, uint64_t out_ub, uint64_t row_in_m) {
      uint64_t g = uint64_t(m) * acc_rows + acc_row;
      std::string a = fmt::format("acc[r0+{}]", g);
      auto op = [&](const std::string& text, uint64_t ub_addr = UINT64_MAX, uint64_t ub2 = UINT64_MAX) {
        std::string pre, t = text;
        if (ub_addr != UINT64_MAX) t = fmt::format(fmt::runtime(t), fmt::arg("S", reg_ref(ub_addr, 6, pre)), fmt::arg("B", ub2 == UINT64_MAX ? "" : reg_ref(ub2, 7, pre)));
        return pre + "  " + t + " flag={flag}\n";
      };
      std::vector<std::string> ph;
      if (!scale_p.empty()) ph.push_back(op(fmt::format("vec.affine dst={0} a={0} rows={1} dt=fp32 param={2}", a, rows, scale_p)));
      uint64_t S = stats + g * row32;
      if (mask_rows)
        ph.push_back(op(fmt::format("vec.add dst={0} a={0} b=ub[{{B}}] rows={1} dt=fp32{2}", a, rows, per_row_mask ? "" : " bcast=1"), S,
                        masks + (per_row_mask ? row_in_m * row32 : 0)));
      ph.push_back(op(fmt::format("vec.rmax dst=ub[{{S}}] a={} rows={} dt=fp32", a, rows), S));
      ph.push_back(op(fmt::format("vec.sub dst={0} a={0} b=ub[{{S}}] rows={1} dt=fp32", a, rows), S));
      ph.push_back(op(fmt::format("vec.exp dst={0} a={0} rows={1} dt=fp32", a, rows)));
      ph.push_back(op(fmt::format("vec.rsum dst=ub[{{S}}] a={} rows={} dt=fp32 odt=fp32", a, rows), S));
      ph.push_back(op(fmt::format("vec.recip dst=ub[{{S}}] a=ub[{{S}}] rows={} dt=fp32", rows), S));
      ph.push_back(op(fmt::format("vec.mul dst={0} a={0} b=ub[{{S}}] rows={1} dt=fp32", a, rows), S));
      ph.push_back(op(fmt::format("vec.cvt dst=ub[{{S}}] a={} rows={} dt=fp32 odt=bf16", a, rows), out_ub));
      return ph;
    };
    for (mlir::Operation* u : {af ? af.getOperation() : nullptr, sm.getOperation()}) {
      if (!u) continue;
      Act fy = y;
      fy.shape = shape_of(u->getResult(0));
      fused_[u] = fy;
      fused_bounds_.push_back({into_layer, u->getName().stripDialect().str(), fy.shape});
    }
    return e;
  }

  // The bounds rows of the ops fused into `layer`'s epilogues (after the layer's own row).
  void add_fused_bounds() {
    for (auto& [layer, opname, shape] : fused_bounds_) {
      LayerBound lb;
      lb.layer = layer;
      lb.op = opname;
      lb.shape = shape;
      bounds_.push_back(lb);
    }
    fused_bounds_.clear();
  }

  void gen_matmul(tpu::MatmulOp op) {
    tag(op.getLayer().str());
    MatmulPlan plan;
    std::vector<Block> blocks = plan_matmul(op, 0, plan);
    run_blocks(blocks, true, std::nullopt, {}, std::move(plan.side));
    finish_matmul(plan, op.getLayer().str());
    add_fused_bounds();
  }

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
  void finish_matmul(const MatmulPlan& p, const std::string& report_as) {
    ub_.release(p.bias_ub);
    if (p.parts != kNoBias) ub_.release(p.parts);
    if (p.ln_work != kNoBias) ub_.release(p.ln_work);
    add_bound(report_as, p.macs, p.hbm_bytes);  // the tiles are read again, whether shared or not
    define(p.out, p.y);
  }

  // Matmuls that read the same activation (attention's query, key and value projections)
  // run as one stream of blocks: one weight prologue and one drain of the array instead of
  // one each, and their blocks spread over the MXUs together. Returns false when `op` has
  // no such siblings right after it (only constants and reshapes that keep the rows in
  // between; those reshapes are done here). Reported under the first one's name.
  bool gen_matmul_group(tpu::MatmulOp op) {
    auto root = [](Value v) {
      while (auto r = v.getDefiningOp<tpu::ReshapeOp>()) {
        if (shape_of(r.getOutput()).back() != shape_of(r.getInput()).back()) break;
        v = r.getInput();
      }
      return v;
    };
    Value x = root(op.getInput());
    std::vector<tpu::MatmulOp> group{op};
    std::vector<tpu::ReshapeOp> aliases;
    for (mlir::Operation* n = op->getNextNode(); n; n = n->getNextNode()) {
      if (mlir::isa<tosa::ConstOp>(n)) continue;
      if (auto r = mlir::dyn_cast<tpu::ReshapeOp>(n); r && root(r.getOutput()) == x && r.getOutput() != x) {
        aliases.push_back(r);
        continue;
      }
      auto m = mlir::dyn_cast<tpu::MatmulOp>(n);
      if (!m || root(m.getInput()) != x || is_int32(m.getOutput())) break;
      group.push_back(m);
    }
    if (group.size() < 2) return false;
    for (tpu::ReshapeOp r : aliases) {  // aliases only: no code
      gen_reshape(r);
      for (Value operand : r->getOperands()) release(operand);
      done_.insert(r.getOperation());
    }
    std::string layer = op.getLayer().str();
    tag(layer);
    uint64_t nt = 0;
    bool same_k = true;  // split K only when every matmul splits alike (pairs stay side by side)
    for (tpu::MatmulOp m : group) {
      nt += ceil_div(uint64_t(shape_of(m.getWeight())[1]), C_);
      same_k &= shape_of(m.getWeight())[0] == shape_of(group[0].getWeight())[0];
    }
    std::vector<MatmulPlan> plans(group.size());
    std::vector<Block> blocks;
    std::vector<SideWork> side;
    for (size_t i = 0; i < group.size(); ++i) {
      auto b = plan_matmul(group[i], nt, plans[i], same_k);
      int64_t offset = int64_t(blocks.size());  // `after` and `deps` index the matmul's own blocks
      for (Block& blk : b) {
        if (blk.after >= 0) blk.after += offset;
        blocks.push_back(std::move(blk));
      }
      for (SideWork& w : plans[i].side) {
        for (size_t& d : w.deps) d += size_t(offset);
        side.push_back(std::move(w));
      }
    }
    run_blocks(blocks, true, std::nullopt, {}, std::move(side));
    for (size_t i = 0; i < group.size(); ++i) {
      finish_matmul(plans[i], layer);
      for (Value operand : group[i]->getOperands()) release(operand);
      done_.insert(group[i].getOperation());
    }
    add_fused_bounds();
    return true;
  }

  // Attention's 1 / sqrt(d) when it is a power of two (d = 64: 1/8): the queries' matmul
  // multiplies its bf16 output by it in its epilogues (exact for a power of two, so
  // (c Q) K^T is c (Q K^T) bit for bit) and the scores' epilogue skips its scaling pass,
  // which on a vector-bound softmax is a pass over every score. Applies when `q` (a
  // matmul's output) is read through a head view only as the left-hand side of one batch
  // matmul whose output feeds, through reshapes, a per-channel affine step with one scale
  // and no bias, then a softmax fused into that batch matmul (rows within one lane block).
  std::optional<std::pair<double, mlir::Operation*>> attention_scale(Value q) {
    if (q8_ || is_int32(q)) return std::nullopt;
    auto split = head_view_split(q);
    if (!split) return std::nullopt;
    auto single_user = [](Value v) -> mlir::Operation* { return v.hasOneUse() ? *v.getUsers().begin() : nullptr; };
    Value v = through_row_reshapes(mlir::cast<tpu::TransposeOp>(single_user(split->getOutput())).getOutput());
    auto bm = mlir::dyn_cast_or_null<tpu::BatchMatmulOp>(single_user(v));
    if (!bm || bm.getLhs() != v || bm.getRhs() == v || uint64_t(shape_of(bm.getRhs())[2]) > C_) return std::nullopt;
    Value s = through_row_reshapes(bm.getOutput());
    auto af = mlir::dyn_cast_or_null<tpu::AffineOp>(single_user(s));
    if (!af) return std::nullopt;
    auto sc = const_floats(af.getScale(), af.getLayer().str()), bi = const_floats(af.getBias(), af.getLayer().str());
    uint64_t N = uint64_t(shape_of(bm.getRhs())[2]);
    if (sc.size() < N || bi.size() < N) return std::nullopt;
    int e = 0;
    if (!(sc[0] > 0) || std::frexp(double(sc[0]), &e) != 0.5) return std::nullopt;
    for (uint64_t i = 0; i < N; ++i)
      if (sc[i] != sc[0] || bi[i] != 0.0f) return std::nullopt;
    auto sm = mlir::dyn_cast_or_null<tpu::SoftmaxOp>(single_user(through_row_reshapes(af.getOutput())));
    if (!sm || sm.getInput() != through_row_reshapes(af.getOutput())) return std::nullopt;
    return std::make_pair(double(sc[0]), af.getOperation());
  }

  // The blocks of a matmul (its output allocated, its bias rows loaded), row chunks chosen
  // for `nt_total` column blocks in the stream (0: its own).
  std::vector<Block> plan_matmul(tpu::MatmulOp op, uint64_t nt_total, MatmulPlan& plan, bool allow_split = true) {
    std::string layer = op.getLayer().str();
    const Act& x = act(op.getInput());
    auto ws = shape_of(op.getWeight());
    uint64_t K = uint64_t(ws[0]), N = uint64_t(ws[1]);
    if (x.features != K) throw CompileError(fmt::format("node '{}': input has {} features, weights expect {}", layer, x.features, K));
    auto bias = const_floats(op.getBias(), layer);
    // A head view read as a batch matmul's left-hand side reads whole array rows from a
    // head's first lane: the last row's read runs up to a row past the tensor.
    bool slack = !is_int32(op.getOutput()) && head_view_split(op.getOutput()).has_value();
    Act y = is_int32(op.getOutput())
                ? out_act(op.getOutput(), fmt::format("the output of '{}'", layer))
                : new_act(shape_of(op.getOutput()), fmt::format("the output of '{}'", layer), false, slack ? R_ * esz_ : 0,
                          residual_base(op.getOutput()));
    if (slack) slack_values_.insert(op.getOutput().getAsOpaquePointer());
    // Matmuls sharing a weight constant share its tiles in HBM (and its INT8 quantization).
    auto cached = weight_cache_.find(op.getWeight().getAsOpaquePointer());
    bool fresh = cached == weight_cache_.end();
    if (fresh) {
      SharedWeights sw;
      auto w = const_floats(op.getWeight(), layer);
      if (q8_) {
        QWeights qw = quantize(w, K, N);
        w = std::move(qw.q);
        sw.scales = std::move(qw.s);
      }
      uint64_t kt = ceil_div(K, R_), nt = ceil_div(N, C_);
      sw.tiles.assign(nt, std::vector<TileRef>(kt));
      for (uint64_t n = 0; n < nt; ++n)
        for (uint64_t k = 0; k < kt; ++k) sw.tiles[n][k] = weight_tile(w, K, N, k, n);
      cached = weight_cache_.emplace(op.getWeight().getAsOpaquePointer(), std::move(sw)).first;
    }
    const SharedWeights& shared = cached->second;
    std::vector<double> acc_scale;
    if (q8_)
      for (double ws_ : shared.scales) acc_scale.push_back(ws_ * scale(op.getInput()));
    uint64_t bias_ub = bias_rows(bias, acc_scale);
    auto eps = epilogue_params(N, acc_scale, q8_ ? scale(op.getOutput()) : 1.0, op.getClampMin().convertToDouble(),
                               op.getClampMax().convertToDouble());
    uint64_t kt = ceil_div(K, R_), nt = ceil_div(N, C_);
    uint64_t mc = row_chunk(x.rows, nt_total ? nt_total : nt);
    const auto& tiles = shared.tiles;
    FusedPhases fused = fuse_elementwise(op.getOutput(), y, layer);
    if (!fused) fused = fuse_chain(op.getOutput(), y, layer);
    tpu::LayerNormOp ln;
    if (fused)
      if (FusedPhases cvt = prepare_layernorm(op.getOutput(), y, &ln)) {
        FusedPhases add = fused;
        fused = [add, cvt](uint64_t n, uint64_t off, uint64_t rows) {
          auto ph = add(n, off, rows);
          for (auto& p : cvt(n, off, rows)) ph.push_back(p);
          return ph;
        };
      }
    if (auto qs = attention_scale(op.getOutput()); qs && !fused) {
      folded_scales_.insert(qs->second);
      std::string p = new_param(fmt::format("scale=[{}]", qs->first));
      fused = [this, y, p](uint64_t n, uint64_t off, uint64_t rows) {
        uint64_t o = y.base + n * y.block_bytes + off;
        std::string pre, at = o <= 0xFFFFFF ? fmt::format("r0+{}", o) : (pre = fmt::format("  li r6, {}\n", o), "r6+0");
        return std::vector<std::string>{pre + fmt::format("  vec.affine dst=ub[{0}] a=ub[{0}] rows={1} dt=bf16 param={2} flag={{flag}}\n", at, rows, p)};
      };
    }
    // Split K: when the output blocks do not spread evenly over the MXUs (BERT's 768-wide
    // projections at batch 1: 6 blocks on 4 MXUs, two of them doing twice the work), each
    // block's K tiles go in two halves on two MXUs, if that lowers the busiest MXU's tile
    // count. The first half's epilogue copies its partial sums to unified-buffer rows, the
    // second's adds them to its own before the usual epilogue.
    // The first half takes the smaller share of tiles, so it never finishes after the
    // second (they go to the MXUs side by side), whose epilogue waits for it.
    // With a layer norm beside the stream (below), its rows wait for their chunk's last block:
    // up to 8 chunks leave little of it after the stream's last matmul.
    if (ln && x.rows > R_) mc = std::min(mc, std::max<uint64_t>(R_, align_up(ceil_div(x.rows, 8), cfg_.core.vector.sublanes)));
    uint64_t nm = cfg_.core.mxu.count, chunks = ceil_div(x.rows, mc), kh = kt / 2;
    auto busiest = [&](uint64_t nblocks, uint64_t tiles_per) { return ceil_div(nblocks, nm) * tiles_per; };
    uint64_t part_bytes = align_up(mc * C_ * 4, 64) * nt * chunks;
    uint64_t stream_blocks = (nt_total ? nt_total : nt) * chunks;  // a group's blocks spread together
    bool split = allow_split && !is_int32(op.getOutput()) && kt >= 2 && busiest(2 * stream_blocks, kt - kh) < busiest(stream_blocks, kt) &&
                 ub_.largest_free() >= part_bytes + (1 << 16);
    uint64_t parts = split ? ub_take(part_bytes, fmt::format("the partial sums of '{}'", layer)) : kNoBias;
    std::string acc_dt = q8_ ? "int32" : "fp32";
    std::vector<Block> blocks;
    std::vector<std::vector<size_t>> chunk_blocks(ceil_div(x.rows, mc));  // the blocks of each row chunk
    auto add_blocks = [&](uint64_t n, uint64_t r0) {
      uint64_t rows = std::min(mc, x.rows - r0);
      uint64_t part = split ? parts + (n * chunks + r0 / mc) * align_up(mc * C_ * 4, 64) : 0;
      if (split) {
        Block a;
        for (uint64_t k = 0; k < kh; ++k)
          a.groups.push_back({tiles[n][k], {{x.base + k * x.block_bytes + r0 * R_ * esz_, rows, 0, 0, k > 0}}});
        a.epilogue = [this, rows, part, acc_dt](uint32_t m, uint64_t acc_row) {
          uint64_t g = uint64_t(m) * cfg_.core.accumulators.rows + acc_row;
          std::string pre, at = part <= 0xFFFFFF ? fmt::format("r0+{}", part) : (pre = fmt::format("  li r8, {}\n", part), "r8+0");
          return std::vector<std::string>{
              pre + fmt::format("  vec.copy dst=ub[{}] a=acc[r0+{}] rows={} dt={} flag={{flag}}\n", at, g, rows, acc_dt)};
        };
        chunk_blocks[r0 / mc].push_back(blocks.size());
        blocks.push_back(std::move(a));
      }
      Block b;
      for (uint64_t k = split ? kh : 0; k < kt; ++k)
        b.groups.push_back({tiles[n][k], {{x.base + k * x.block_bytes + r0 * R_ * esz_, rows, 0, 0, k > (split ? kh : 0)}}});
      if (split) b.after = int64_t(blocks.size()) - 1;
      uint64_t out = y.base + n * y.block_bytes + r0 * C_ * out_esz_, bias_row = bias_at(bias_ub, n);
      std::string ep = eps[n];
      b.epilogue = [this, rows, bias_row, ep, out, fused, n, r0, split, part, acc_dt](uint32_t m, uint64_t acc_row) {
        std::vector<std::string> ph;
        if (split) {
          uint64_t g = uint64_t(m) * cfg_.core.accumulators.rows + acc_row;
          std::string pre, at = part <= 0xFFFFFF ? fmt::format("r0+{}", part) : (pre = fmt::format("  li r8, {}\n", part), "r8+0");
          ph.push_back(pre + fmt::format("  vec.add dst=acc[r0+{0}] a=acc[r0+{0}] b=ub[{1}] rows={2} dt={3} flag={{flag}}\n", g, at,
                                         rows, acc_dt));
        }
        for (auto& p : epilogue(m, acc_row, rows, bias_row, ep, out)) ph.push_back(p);
        if (fused)
          for (auto& p : fused(n, r0 * C_ * esz_, rows)) ph.push_back(p);
        return ph;
      };
      chunk_blocks[r0 / mc].push_back(blocks.size());
      blocks.push_back(std::move(b));
    };
    // A layer norm of the output runs beside the stream, row chunk by row chunk, once the
    // chunk's blocks are done: the blocks then go chunk by chunk.
    bool side_ln = ln && x.rows > mc;
    for (uint64_t i = 0; i < nt * chunk_blocks.size(); ++i) {
      uint64_t n = side_ln ? i % nt : i / chunk_blocks.size(), c = side_ln ? i / nt : i % chunk_blocks.size();
      add_blocks(n, c * mc);
    }
    plan = {layer, y, bias_ub, x.rows * K * N, K * N * esz_, op.getOutput(), parts, {}, kNoBias};
    if (side_ln) {
      auto it = ln_prepared_.find(ln.getOperation());
      plan.ln_work = it->second;
      ln_prepared_.erase(it);
      uint64_t base = align_up(plan.ln_work, cfg_.core.unified_buffer.row_bytes);
      LnLayout lay = ln_layout(y.rows, y.blocks);
      ln_load_mask(y, base, lay);
      Act yl = new_act(shape_of(ln.getOutput()), fmt::format("the output of '{}'", ln.getLayer().str()));
      tpu::AffineOp af = ln_affine(ln);
      // Chains of R rows at most, so that one chunk's operations interleave.
      for (uint64_t c = 0; c < chunk_blocks.size(); ++c)
        for (uint64_t r0 = c * mc; r0 < std::min(x.rows, c * mc + mc); r0 += R_)
          plan.side.push_back({chunk_blocks[c], ln_steps(ln, y, yl, base, lay, r0, std::min<uint64_t>({R_, x.rows - r0, c * mc + mc - r0}), true, af)});
      fused_[ln.getOperation()] = yl;
      fused_bounds_.push_back({layer, "layernorm", yl.shape});
      if (af) fuse_ln_affine(af, yl, layer);
    }
    return blocks;
  }

  // Attention's head split and transpose, [B, S, H*d] -> [B, S, H, d] -> [B, H, S, d], when
  // every consumer of the result (through reshapes that keep the rows) is a batch matmul:
  // no copy then, the batch matmul reads head h of the unsplit tensor in place (its lanes
  // [h*d, h*d + d) of every row): as the left-hand side, matmul rows that start at the
  // head's first lane (the array ignores the lanes past its tile's rows); as the
  // right-hand side, weight tiles that read the head's lanes of the rows stored in HBM.
  // Needs heads that never straddle two lane blocks (d a multiple or a divisor of R).
  struct HeadView {
    Act x;  // the unsplit [B * S, H * d] activation
    uint64_t S = 0, H = 0, d = 0;
  };
  // The head split reshape of `v` (v's only user) when the pattern applies, else nothing.
  std::optional<tpu::ReshapeOp> head_view_split(Value v) {
    if (!v.hasOneUse()) return std::nullopt;
    auto split = mlir::dyn_cast<tpu::ReshapeOp>(*v.getUsers().begin());
    if (!split) return std::nullopt;
    auto xs = shape_of(split.getInput()), ys = shape_of(split.getOutput());
    if (xs.size() != 3 || ys.size() != 4 || xs[0] != ys[0] || xs[1] != ys[1] || ys[2] * ys[3] != xs[2] || ys[2] < 2)
      return std::nullopt;
    uint64_t d = uint64_t(ys[3]);
    if (d % R_ != 0 && R_ % d != 0) return std::nullopt;
    if (!split.getOutput().hasOneUse()) return std::nullopt;
    auto tp = mlir::dyn_cast<tpu::TransposeOp>(*split.getOutput().getUsers().begin());
    if (!tp || tp.getPerm().size() != 4 || tp.getPerm()[0] != 0 || tp.getPerm()[1] != 2 || tp.getPerm()[2] != 1 ||
        tp.getPerm()[3] != 3)
      return std::nullopt;
    // Every consumer, through row-keeping reshapes, is a batch matmul.
    std::vector<Value> work{tp.getOutput()};
    while (!work.empty()) {
      Value u = work.back();
      work.pop_back();
      if (u.use_empty()) return std::nullopt;
      for (mlir::Operation* user : u.getUsers()) {
        if (mlir::isa<tpu::BatchMatmulOp>(user)) continue;
        auto r = mlir::dyn_cast<tpu::ReshapeOp>(user);
        if (!r || uint64_t(shape_of(r.getOutput()).back()) != d) return std::nullopt;
        work.push_back(r.getOutput());
      }
    }
    return split;
  }
  // gen_reshape's part: the split and its transpose become views of x.
  bool make_head_view(tpu::ReshapeOp op, const Act& x) {
    auto split = head_view_split(op.getInput());
    if (!split || *split != op) return false;
    auto tp = mlir::cast<tpu::TransposeOp>(*op.getOutput().getUsers().begin());
    auto ys = shape_of(op.getOutput());
    HeadView hv{x, uint64_t(ys[1]), uint64_t(ys[2]), uint64_t(ys[3])};
    // As a left-hand side the last row's read runs past x: only when x has room for it.
    bool lhs_ok = slack_values_.count(op.getInput().getAsOpaquePointer()) > 0;
    std::vector<Value> work{tp.getOutput()};
    while (!work.empty()) {
      Value u = work.back();
      work.pop_back();
      for (mlir::Operation* user : u.getUsers()) {
        if (auto bm = mlir::dyn_cast<tpu::BatchMatmulOp>(user)) {
          if (bm.getLhs() == u && !lhs_ok) return false;
          continue;
        }
        work.push_back(user->getResult(0));
      }
    }
    auto alias = [&](Value v) {
      Act a = x;  // shares x's buffer, so x lives while the view does
      a.shape = shape_of(v);
      a.features = uint64_t(a.shape.back());
      a.rows = numel(a.shape) / a.features;
      a.blocks = ceil_div(a.features, R_);
      define(v, a);
    };
    alias(op.getOutput());
    alias(tp.getOutput());
    views_[tp.getOutput().getAsOpaquePointer()] = hv;
    deferred_.insert(tp.getOperation());
    add_bound(op.getLayer().str(), 0, 0);
    store_rhs_early(tp.getOutput());
    return true;
  }
  // Attention's K^T: a head split whose only consumer is the transpose [0, 2, 3, 1]
  // ([B, S, H, d] -> [B, H, d, S]) is generated as that transpose straight from the unsplit
  // [B * S, H * d] tensor, a range of batch elements at a time: lanes of its fp32 twin
  // gathered into rows. That skips the split's copy and converts half the bytes (the split
  // tensor's rows hold d of R lanes).
  bool make_head_transpose(tpu::ReshapeOp op, const Act& x) {
    auto xs = shape_of(op.getInput()), ys = shape_of(op.getOutput());
    if (xs.size() != 3 || ys.size() != 4 || xs[0] != ys[0] || xs[1] != ys[1] || ys[2] * ys[3] != xs[2]) return false;
    if (!op.getOutput().hasOneUse() || cfg_.core.unified_buffer.alignment_bytes > 4) return false;
    auto tp = mlir::dyn_cast<tpu::TransposeOp>(*op.getOutput().getUsers().begin());
    if (!tp || tp.getPerm().size() != 4 || tp.getPerm()[0] != 0 || tp.getPerm()[1] != 2 || tp.getPerm()[2] != 3 ||
        tp.getPerm()[3] != 1)
      return false;
    std::string layer = tp.getLayer().str();
    uint64_t B = uint64_t(xs[0]), S = uint64_t(xs[1]), H = uint64_t(ys[2]), d = uint64_t(ys[3]);
    Act y0 = new_act(shape_of(tp.getOutput()), fmt::format("the output of '{}'", layer));
    auto twin_bytes = [&](uint64_t n) {
      return x.blocks * align_up(n * S * R_ * 4, 64) + y0.blocks * align_up(n * H * d * R_ * 4, 64);
    };
    uint64_t per = B;
    while (per > 1 && twin_bytes(per) > ub_.largest_free()) per = (per + 1) / 2;
    uint64_t row4 = R_ * 4;
    // When a batch matmul takes the result as its right-hand side, it goes to HBM group by
    // group of output rows as they are converted, overlapping the next group's copies.
    std::optional<Value> target = rhs_target(tp.getOutput());
    int flag = target ? free_rhs_flag() : 0;
    RhsCopy store;
    if (flag) store = {hbm_alloc(y0.blocks * y0.rows * R_ * esz_), flag, 0};
    for (uint64_t b0 = 0; b0 < B; b0 += per) {
      uint64_t n = std::min(per, B - b0);
      Act xv = x, yv = y0;  // batch elements [b0, b0 + n)
      xv.rows = n * S, xv.base = x.base + b0 * S * R_ * esz_;
      yv.rows = n * H * d, yv.base = y0.base + b0 * H * d * R_ * esz_;
      Act xt = fp32_twin(xv, layer, "transpose copies", true), yt = yv;
      if (S % R_) {
        yt = fp32_twin(yv, layer, "transpose copies", false);  // zeros on the padding lanes
      } else {  // the copies write every lane
        yt.block_bytes = align_up(yv.rows * R_ * 4, 64);
        yt.base = ub_take(yt.bytes(), fmt::format("the fp32 transpose copies of '{}'", layer));
      }
      // Output row (b, h, e) holds lanes s = x's rows (b, s), lane h * d + e: one copy per
      // run of e within a lane block and output lane block. The (b, h) pairs go in up to 4
      // groups: a group's conversion back (and store) overlaps the next group's copies.
      uint64_t pairs = n * H, per_group = ceil_div(pairs, std::min<uint64_t>(pairs, 4));
      std::optional<std::pair<uint64_t, uint64_t>> converted;  // rows whose conversion is in flight
      auto store_group = [&](std::pair<uint64_t, uint64_t> r) {
        code(fmt::format("  wait f20, {}", yv.blocks));  // their conversions (the oldest in flight)
        if (!flag) return;
        for (uint64_t nb = 0; nb < y0.blocks; ++nb) {
          uint64_t rb = rhs_row_bytes(y0, nb), r0 = b0 * H * d + r.first;
          std::string dsc = new_desc(fmt::format("bytes={} dim=[{}, {}, {}]", rb, r.second - r.first, R_ * esz_, rb));
          code(fmt::format("  li r1, {} || li r2, {}", y0.base + nb * y0.block_bytes + r0 * R_ * esz_,
                           store.addr + nb * y0.rows * R_ * esz_ + r0 * rb));
          code(fmt::format("  dma.store desc={} src=r1 dst=r2 flag=f{}", dsc, flag));
          ++store.count;
        }
      };
      for (uint64_t p0 = 0; p0 < pairs; p0 += per_group) {
        uint64_t p1 = std::min(pairs, p0 + per_group);
        for (uint64_t pr = p0; pr < p1; ++pr) {
          uint64_t b = pr / H, h = pr % H;
          for (uint64_t e0 = 0; e0 < d;) {
            uint64_t lane = h * d + e0, run = std::min(d - e0, R_ - lane % R_);
            for (uint64_t sb = 0; sb < yv.blocks; ++sb) {
              uint64_t cnt = std::min<uint64_t>(R_, S - sb * R_);
              uint64_t src = xt.base + (lane / R_) * xt.block_bytes + (b * S + sb * R_) * row4 + (lane % R_) * 4;
              uint64_t dst = yt.base + sb * yt.block_bytes + ((b * H + h) * d + e0) * row4;
              ub_copy_async(src, dst, fmt::format("bytes=4 dim=[{}, {}, 4] dim=[{}, 4, {}]", cnt, row4, run, row4));
            }
            e0 += run;
          }
        }
        copies_wait();
        for (uint64_t sb = 0; sb < yv.blocks; ++sb)
          code(fmt::format("  li r1, {} || li r2, {}\n  vec.cvt dst=ub[r2+0] a=ub[r1+0] rows={} dt=fp32 odt={} flag=f20",
                           yt.base + sb * yt.block_bytes + p0 * d * row4, yv.base + sb * yv.block_bytes + p0 * d * R_ * esz_,
                           (p1 - p0) * d, dt_));
        if (converted) store_group(*converted);
        converted = std::make_pair(p0 * d, p1 * d);
      }
      store_group(*converted);
      ub_.release(xt.base);
      ub_.release(yt.base);
    }
    define(tp.getOutput(), y0);
    deferred_.insert(tp.getOperation());
    add_bound(op.getLayer().str(), 0, 0);
    store.issued_at = code_.size();
    if (flag) stored_rhs_[target->getAsOpaquePointer()] = store;
    return true;
  }

  const HeadView* view_of(Value v) const {
    auto it = views_.find(v.getAsOpaquePointer());
    return it == views_.end() ? nullptr : &it->second;
  }

  // Activation x activation, per batch b: lhs[b] [M, K] x rhs[b] [K, N]. The MXU's weights
  // only come from HBM, so rhs's lane blocks are stored there first (one DMA each); a
  // weight tile (b, k block, n block) is then kw rows of its block, read with the block's
  // row stride. INT8: rhs's codes are the weights, with its per-tensor scale.
  struct BatchPlan {
    std::vector<Block> blocks;
    Act y;
    uint64_t bias_ub = 0, macs = 0;
    std::optional<SoftmaxEpilogue> softmax;
    std::string ready;  // the wait for rhs's stores
    bool early = false;  // stored before this layer (store_rhs_early)
    size_t issued_at = 0;
  };
  // The blocks of batch matmul `op` reading its left-hand side from `a`.
  BatchPlan plan_batch_matmul(tpu::BatchMatmulOp op, const Act& a) {
    std::string layer = op.getLayer().str();
    const HeadView *lv = view_of(op.getLhs()), *rv = view_of(op.getRhs());
    const Act& w = rv ? rv->x : act(op.getRhs());  // a view's rhs: the unsplit tensor's rows in HBM
    auto as = shape_of(op.getLhs()), ws = shape_of(op.getRhs());
    uint64_t B = uint64_t(as[0]), M = uint64_t(as[1]), K = uint64_t(as[2]), N = uint64_t(ws[2]);
    BatchPlan p;
    p.y = new_act(shape_of(op.getOutput()), fmt::format("the output of '{}'", layer));
    const Act& y = p.y;
    RhsCopy rhs;
    if (auto it = stored_rhs_.find(op.getRhs().getAsOpaquePointer()); it != stored_rhs_.end()) {
      rhs = it->second, p.early = true;
      stored_rhs_.erase(it);
    } else {
      rhs = store_rhs(w, 1);
    }
    p.ready = fmt::format("  wait f{}, {}\n", rhs.flag, rhs.count);
    p.issued_at = rhs.issued_at;
    std::vector<double> acc_scale;
    if (q8_) acc_scale.assign(N, double(scale(op.getLhs())) * scale(op.getRhs()));
    p.bias_ub = bias_rows(std::vector<float>(N, 0.0f), acc_scale);
    auto eps = epilogue_params(N, acc_scale, q8_ ? scale(op.getOutput()) : 1.0, -std::numeric_limits<double>::infinity(),
                               std::numeric_limits<double>::infinity());
    uint64_t kt = ceil_div(K, R_), nt = ceil_div(N, C_), mc = row_chunk(M, nt * B);
    p.softmax = nt == 1 ? fuse_softmax(op.getOutput(), y, layer, M) : std::nullopt;
    FusedPhases fused = p.softmax ? FusedPhases() : fuse_elementwise(op.getOutput(), y, layer);
    for (uint64_t b = 0; b < B; ++b)
      for (uint64_t n = 0; n < nt; ++n) {
        uint64_t nw = std::min<uint64_t>(C_, N - n * C_);
        std::vector<TileRef> tiles;
        for (uint64_t k = 0; k < kt; ++k) {
          uint64_t kw = std::min<uint64_t>(R_, K - k * R_);
          // Row (b, k*R) of rhs and its lane block / first lane: a view's item b is head
          // b % H of batch b / H, its lanes start at head * d.
          uint64_t row = b * K + k * R_, lane = n * C_;
          if (rv) row = (b / rv->H) * rv->S + k * R_, lane = (b % rv->H) * rv->d + n * C_;
          uint64_t blk = lane / R_, rb = rhs_row_bytes(w, blk);
          tiles.push_back({new_desc(fmt::format("bytes={} dtype={} dim=[{}, {}, 0]", nw * esz_, dt_, kw, rb)),
                           rhs.addr + blk * w.rows * R_ * esz_ + row * rb + (lane % R_) * esz_});
        }
        for (uint64_t r0 = 0; r0 < M; r0 += mc) {
          uint64_t rows = std::min(mc, M - r0), row = b * M + r0;
          Block blk;
          for (uint64_t k = 0; k < kt; ++k) {
            uint64_t src = a.base + k * a.block_bytes + row * R_ * esz_;
            if (lv) {
              uint64_t lane = (b % lv->H) * lv->d + k * R_;
              src = lv->x.base + (lane / R_) * lv->x.block_bytes + ((b / lv->H) * lv->S + r0) * R_ * esz_ + (lane % R_) * esz_;
            }
            blk.groups.push_back({tiles[k], {{src, rows, 0, 0, k > 0}}});
          }
          uint64_t out = y.base + n * y.block_bytes + row * C_ * esz_, bias_row = bias_at(p.bias_ub, n);
          std::string ep = eps[n];
          if (p.softmax) {
            auto sp = p.softmax->phases;
            blk.epilogue = [sp, rows, out, r0](uint32_t m, uint64_t acc_row) { return sp(m, acc_row, rows, out, r0); };
            p.blocks.push_back(std::move(blk));
            continue;
          }
          blk.epilogue = [this, rows, bias_row, ep, out, fused, n, row](uint32_t m, uint64_t acc_row) {
            auto ph = epilogue(m, acc_row, rows, bias_row, ep, out);
            if (fused)
              for (auto& f : fused(n, row * C_ * esz_, rows)) ph.push_back(f);
            return ph;
          };
          p.blocks.push_back(std::move(blk));
        }
      }
    p.macs = B * M * K * N;
    return p;
  }
  void finish_batch_matmul(const BatchPlan& p) {
    ub_.release(p.bias_ub);
    if (p.softmax)
      for (uint64_t at : p.softmax->buffers) ub_.release(at);
  }
  // The batch matmul that reads `scores`' softmax (fused into its epilogues, through reshapes
  // that keep the rows) as its left-hand side: attention's context, P x V.
  std::optional<tpu::BatchMatmulOp> context_of(tpu::BatchMatmulOp scores) {
    Value v = through_row_reshapes(scores.getOutput());
    if (!v.hasOneUse()) return std::nullopt;
    mlir::Operation* u = *v.getUsers().begin();
    if (mlir::isa<tpu::AffineOp>(u)) {
      v = through_row_reshapes(u->getResult(0));
      if (!v.hasOneUse()) return std::nullopt;
      u = *v.getUsers().begin();
    }
    if (!mlir::isa<tpu::SoftmaxOp>(u)) return std::nullopt;
    v = through_row_reshapes(u->getResult(0));
    if (!v.hasOneUse()) return std::nullopt;
    auto ctx = mlir::dyn_cast<tpu::BatchMatmulOp>(*v.getUsers().begin());
    if (!ctx || ctx.getLhs() != v || view_of(ctx.getLhs())) return std::nullopt;
    // Its right-hand side must be there, but for reshapes that keep the rows (done now).
    for (Value r = ctx.getRhs(); !view_of(r) && !acts_.count(r.getAsOpaquePointer());) {
      auto rs = r.getDefiningOp<tpu::ReshapeOp>();
      if (!rs || !r.hasOneUse() || shape_of(rs.getOutput()).back() != shape_of(rs.getInput()).back()) return std::nullopt;
      r = rs.getInput();
    }
    auto as = shape_of(ctx.getLhs()), ss = shape_of(scores.getOutput());
    // Blocks pair up (context block i reads the rows of scores block i) when both have one
    // column block: the same batch, rows and row chunks.
    if (as.size() != 3 || numel(as) != numel(ss) || as.back() != ss.back() || shape_of(ctx.getOutput()).back() > int64_t(C_))
      return std::nullopt;
    return ctx;
  }

  void gen_batch_matmul(tpu::BatchMatmulOp op) {
    std::string layer = op.getLayer().str();
    tag(layer);
    BatchPlan p = plan_batch_matmul(op, act(op.getLhs()));
    std::optional<tpu::BatchMatmulOp> ctx = p.softmax ? context_of(op) : std::nullopt;
    if (!ctx) {
      if (p.early) run_blocks(p.blocks, false, std::make_pair(p.ready, p.issued_at));
      else code_ += p.ready, run_blocks(p.blocks);
      finish_batch_matmul(p);
      add_bound(layer, p.macs, 0);
      add_fused_bounds();
      define(op.getOutput(), p.y);
      return;
    }
    // Attention: the context's matmuls join the stream, each (batch, head) block a few rounds
    // of the MXUs after the scores block whose softmax it reads, on the same MXU (blocks go to
    // the MXUs in turn), so they fill the MXUs while the vector unit runs later softmaxes
    // instead of waiting for all of them.
    std::vector<tpu::ReshapeOp> reshapes;
    for (Value r = ctx->getRhs(); !view_of(r) && !acts_.count(r.getAsOpaquePointer()); r = reshapes.back().getInput())
      reshapes.push_back(r.getDefiningOp<tpu::ReshapeOp>());
    for (auto it = reshapes.rbegin(); it != reshapes.rend(); ++it) {
      gen_reshape(*it);
      release(it->getInput());
      done_.insert(it->getOperation());
    }
    Act probs = p.y;
    probs.shape = shape_of(ctx->getLhs());
    BatchPlan c = plan_batch_matmul(*ctx, probs);
    std::vector<Block> blocks;
    // The lag: half the accumulator regions' worth of rounds, so a softmax (seven vector
    // passes, one per round) is mostly done when its context block comes, and its region is
    // not yet needed again (measured on BERT-base, batch 1 to 8: 2 rounds stall, 4 to 8 do not).
    uint64_t span = 1;
    for (const Block& b : p.blocks)
      for (const TileGroup& g : b.groups)
        for (const MatmulStep& st : g.steps) span = std::max(span, st.acc_row + st.rows);
    size_t nm = cfg_.core.mxu.count, ns = p.blocks.size(), lag = nm * std::max<size_t>(2, acc_regions(span) / 2);
    if (c.blocks.size() != ns) throw InternalError("attention's context blocks do not pair with its scores blocks");
    for (size_t i = 0, j = 0; i < ns || j < c.blocks.size();) {
      for (size_t r = 0; r < nm && i < ns; ++r) blocks.push_back(std::move(p.blocks[i++]));
      if (i < std::min(ns, lag) && i < ns) continue;
      for (size_t r = 0; r < nm && j < c.blocks.size(); ++r) {
        Block& b = c.blocks[j];
        b.needs = int64_t(j);  // the scores block of the same rows
        ++j;
        blocks.push_back(std::move(b));
      }
    }
    // Block indices: `needs` counted scores blocks, which now sit among context blocks.
    std::vector<size_t> where(ns);
    for (size_t i = 0, k = 0; i < blocks.size(); ++i)
      if (blocks[i].needs < 0) where[k++] = i;
    for (Block& b : blocks)
      if (b.needs >= 0) b.needs = int64_t(where[size_t(b.needs)]);
    std::string ready = p.ready + c.ready;
    if (p.early && c.early) run_blocks(blocks, false, std::make_pair(ready, std::max(p.issued_at, c.issued_at)));
    else code_ += ready, run_blocks(blocks);
    finish_batch_matmul(p);
    finish_batch_matmul(c);
    add_bound(layer, p.macs, 0);
    add_fused_bounds();
    add_bound(layer, c.macs, 0, shape_of(ctx->getOutput()));  // the context's row
    define(op.getOutput(), p.y);
    define(ctx->getOutput(), c.y);
    deferred_.insert(ctx->getOperation());
  }

  // The right-hand side of a batch matmul goes to HBM, where the weight FIFO reads it: lane
  // block b's rows at addr + b * rows * R * size, holding only the block's valid lanes (a
  // 64-wide attention head moves half the bytes of a whole block row).
  struct RhsCopy {
    uint64_t addr = 0;
    int flag = 1;  // counts one per lane block when stored
    uint64_t count = 0;  // stores to wait for
    size_t issued_at = 0;  // code_'s size once the stores were issued
  };
  uint64_t rhs_row_bytes(const Act& w, uint64_t nb) const {
    uint64_t fw = std::min<uint64_t>(R_, w.features - nb * R_);
    return std::min<uint64_t>(R_ * esz_, align_up(fw * esz_, cfg_.core.unified_buffer.alignment_bytes));
  }
  RhsCopy store_rhs(const Act& w, int flag) {
    RhsCopy c{hbm_alloc(w.blocks * w.rows * R_ * esz_), flag, w.blocks};
    for (uint64_t nb = 0; nb < w.blocks; ++nb) {
      uint64_t rb = rhs_row_bytes(w, nb);
      std::string d = new_desc(fmt::format("bytes={} dim=[{}, {}, {}]", rb, w.rows, R_ * esz_, rb));
      code(fmt::format("  li r1, {} || li r2, {}", w.base + nb * w.block_bytes, c.addr + nb * w.rows * R_ * esz_));
      code(fmt::format("  dma.store desc={} src=r1 dst=r2 flag=f{}", d, flag));
    }
    c.issued_at = code_.size();
    return c;
  }
  // Stores an activation to HBM as soon as it is computed when its only consumer (through
  // reshapes that keep the rows) is a later batch matmul's right-hand side: the store then
  // runs during the layers in between (attention's K^T and V during the scores and the
  // softmax) instead of in front of the batch matmul. Flags f40..f47, one per store in
  // flight; the batch matmul waits for it.
  void store_rhs_early(Value v) {
    auto it = acts_.find(v.getAsOpaquePointer());
    if (it == acts_.end()) return;
    const HeadView* hv = view_of(v);  // a view stores the unsplit tensor
    std::optional<Value> target = rhs_target(v);
    if (!target) return;
    if (int f = free_rhs_flag()) stored_rhs_[target->getAsOpaquePointer()] = store_rhs(hv ? hv->x : it->second, f);
  }
  // The batch-matmul right-hand side `v` becomes through reshapes that keep the rows (its
  // only use chain), when not stored yet.
  std::optional<Value> rhs_target(Value v) {
    while (v.hasOneUse()) {
      mlir::Operation* u = *v.getUsers().begin();
      if (auto bm = mlir::dyn_cast<tpu::BatchMatmulOp>(u)) {
        if (bm.getRhs() != v || bm.getLhs() == v || stored_rhs_.count(v.getAsOpaquePointer())) return std::nullopt;
        return v;
      }
      auto r = mlir::dyn_cast<tpu::ReshapeOp>(u);
      if (!r || shape_of(r.getOutput()).back() != shape_of(v).back()) return std::nullopt;
      v = r.getOutput();
    }
    return std::nullopt;
  }
  // A flag of f40..f47 no early store in flight uses, or 0.
  int free_rhs_flag() const {
    for (int f = 40; f < 48; ++f) {
      bool busy = false;
      for (auto& [k, c] : stored_rhs_) busy |= c.flag == f;
      if (!busy) return f;
    }
    return 0;
  }

  // A convolution whose input has few channels can read it packed: each matmul row then
  // covers the KW taps of one kernel row side by side (K = KW x channels rounded to a
  // word), instead of one tap per matmul with the channels padded to R lanes.
  bool packable(tpu::Conv2DOp op) const {
    auto xs = shape_of(op.getInput()), ws = shape_of(op.getWeight());
    uint64_t CIp = align_up(uint64_t(xs[3]), std::max<uint64_t>(1, 4 / esz_));
    return op.getGroups() == 1 && op.getDilation()[1] == 1 && uint64_t(ws[1]) * CIp <= R_ && uint64_t(xs[3]) * 4 <= R_;
  }

  void gen_conv_packed(tpu::Conv2DOp op, uint64_t hbm) {
    std::string layer = op.getLayer().str();
    auto xs = shape_of(op.getInput()), ws = shape_of(op.getWeight()), ys = shape_of(op.getOutput());
    uint64_t N = uint64_t(xs[0]), H = uint64_t(xs[1]), W = uint64_t(xs[2]), CI = uint64_t(xs[3]);
    uint64_t KH = uint64_t(ws[0]), KW = uint64_t(ws[1]), CO = uint64_t(ws[3]), OH = uint64_t(ys[1]), OW = uint64_t(ys[2]);
    auto stride = op.getStride(), pad = op.getPad(), dil = op.getDilation();
    uint64_t sh = uint64_t(stride[0]), sw = uint64_t(stride[1]), dh = uint64_t(dil[0]);
    uint64_t pt = uint64_t(pad[0]), pb = uint64_t(pad[1]), pl = uint64_t(pad[2]), pr = uint64_t(pad[3]);
    uint64_t Hp = H + pt + pb, Wp = W + pl + pr, CIp = align_up(CI, std::max<uint64_t>(1, 4 / esz_));
    uint64_t pix = CIp * esz_;
    // Two output pixels per matmul row (as in gen_conv_wide): with the output channels in at
    // most half the columns, a matmul row covering the KW + sw taps of pixels x and x + 1
    // computes both (columns [0, C/2) and [C/2, C)); its rows then spread into the output
    // (their padding lanes holding the other pixel: only for convolutions, or a pool whose
    // readers are all convolutions, which never read past their input's channels).
    uint64_t span = KW;
    bool two_px = R_ == C_ && CO * 2 <= C_ && OW % 2 == 0 && !int_out_ && N > 1 && (KW + sw) * CIp * 2 <= R_ &&
                  padding_lanes_unread(op.getOutput());
    if (two_px) span = KW + sw;
    // Kernel rows stacked in one matmul row: as many as the array's R rows hold (see below).
    uint64_t S = std::max<uint64_t>(1, std::min<uint64_t>(KH, R_ / (span * CIp)));
    // The packed, zero-padded image (+ one row of slack: a matmul reads R lanes per row):
    // all images, or with stacking one at a time (each is copied into its stacked form
    // before the next is loaded).
    uint64_t bytes = (S > 1 ? 1 : N) * Hp * Wp * pix + R_ * esz_;
    uint64_t xq = ub_take(bytes, fmt::format("the packed input of '{}'", layer));
    clear(xq, bytes);
    // Image rows [h0, h1) of image n into the packed image at `at`: the instruction.
    auto load_rows = [&](uint64_t n, uint64_t at, uint64_t h0, uint64_t h1, int flag) {
      std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}] dim=[{}, {}, {}]", CI * esz_,
                                           hbm + (n * H + h0) * W * CI * esz_, at + ((pt + h0) * Wp + pl) * pix, W, CI * esz_,
                                           pix, h1 - h0, W * CI * esz_, Wp * pix));
      return fmt::format("  dma.load desc={} src=r0 dst=r0 flag=f{}\n", d, flag);
    };
    auto load_image = [&](uint64_t n, uint64_t at) {
      code_ += load_rows(n, at, 0, H, 1);
      code("  wait f1");
    };
    for (uint64_t n = 0; S == 1 && n < N; ++n) load_image(n, xq + n * Hp * Wp * pix);
    auto w = const_floats(op.getWeight(), layer), bias = const_floats(op.getBias(), layer);
    // A pool that is the output's only use (ResNet-50's max pool after conv1) runs image by
    // image along the next image's matmuls, as run_blocks' background work on the vector
    // unit the epilogues leave free (with stacking, where its output fits beside this one).
    // The output then only needs two images' rows: image n goes to slot n % 2 while the pool
    // reads image n - 1 from the other (ResNet-50 at batch 8: 3.2 MB instead of 12.8 MB).
    std::optional<tpu::PoolOp> pool;
    Act py, y;
    if (S > 1 && N > 1 && !int_out_ && op.getOutput().hasOneUse())
      if (auto p = mlir::dyn_cast<tpu::PoolOp>(*op.getOutput().getUsers().begin())) {
        auto ps = shape_of(p.getOutput());
        uint64_t c = uint64_t(ps.back()), need = align_up(numel(ps) / c * R_ * esz_, 64) * ceil_div(c, R_);
        y = new_act({2, int64_t(OH), int64_t(OW), int64_t(CO)}, fmt::format("the output of '{}'", layer));
        if (need <= ub_.largest_free()) {
          bool high = output_high_;
          output_high_ = y.base + y.bytes() / 2 < ub_.capacity() / 2;  // where gen_pool would put it
          py = new_act(ps, fmt::format("the output of '{}'", p.getLayer().str()));
          output_high_ = high;
          fused_pools_[p.getOperation()] = py;
          pool = p;
        } else {
          ub_.release(y.base);
        }
      }
    if (!pool) y = out_act(op.getOutput(), fmt::format("the output of '{}'", layer));
    // The output row (image n's row oy is row n * OH + oy) that y's first row holds.
    auto first_row = [&](uint64_t n) { return pool ? (n - n % 2) * OH : 0; };
    std::vector<double> acc_scale;
    if (q8_) {
      QWeights qw = quantize(w, KH * KW * CI, CO);
      w = std::move(qw.q);
      for (double s2 : qw.s) acc_scale.push_back(s2 * scale(op.getInput()));
    }
    uint64_t bias_ub = kNoBias;
    std::vector<std::string> eps;
    if (two_px) {
      auto [b2, ep2] = two_pixel_params(bias, acc_scale, CO, op);
      bias_ub = b2, eps = {ep2};
    } else {
      bias_ub = bias_rows(bias, acc_scale);
      eps = epilogue_params(CO, acc_scale, q8_ ? scale(op.getOutput()) : 1.0, op.getClampMin().convertToDouble(),
                           op.getClampMax().convertToDouble());
    }
    // Kernel rows stacked in one matmul row: as many as the array's R rows hold (KW x CIp
    // each), so ResNet-50's conv1 on a 128-row array runs 2 matmuls per output row, not 7.
    // Stacking reads a copy of the image whose pixel (j, x) holds the channels of padded
    // rows j*rs + s*dh, s < S, side by side (one 4-byte-aligned copy per s, built in the
    // unified buffer from the packed image); rs = the stride when the stack's height is a
    // multiple of it, so only the rows output rows start on are kept.
    uint64_t G = ceil_div(KH, S), zp = S * pix, nbs = ceil_div(CO, C_), K = span * S * CIp, per_row = two_px ? OW / 2 : OW;
    uint64_t rs = S > 1 && (S * dh) % sh == 0 ? sh : 1;
    uint64_t ZH = S > 1 ? ((OH - 1) * sh + (G - 1) * S * dh) / rs + 1 : 0, zbytes = ZH * Wp * zp + R_ * esz_;
    uint64_t zb = S > 1 ? ub_take(zbytes, fmt::format("the row-stacked input of '{}'", layer)) : 0;
    if (S > 1) clear(zb, zbytes);  // rows past the image stay zero for every image
    // One tile per kernel-row group g: row k = (dx * S + s) * CIp + c holds
    // w[g * S + s][dx][c][:] (zero for c >= CI and past the last kernel row).
    // Two pixels: row k = (dx' * S + s) * CIp + c (dx' < KW + sw) holds tap dx' of pixel x in
    // column co and tap dx' - sw of pixel x + 1 in column C/2 + co.
    std::map<std::pair<uint64_t, uint64_t>, TileRef> tiles;
    uint64_t cols = two_px ? C_ : CO;
    for (uint64_t g = 0; g < G; ++g) {
      std::vector<float> t(K * cols, 0.0f);
      for (uint64_t s = 0; s < S && g * S + s < KH; ++s)
        for (uint64_t o = 0; o < (two_px ? 2 : 1); ++o)
          for (uint64_t dx = 0; dx < KW; ++dx)
            for (uint64_t c = 0; c < CI; ++c)
              for (uint64_t co = 0; co < CO; ++co)
                t[(((dx + o * sw) * S + s) * CIp + c) * cols + o * (C_ / 2) + co] = w[(((g * S + s) * KW + dx) * CI + c) * CO + co];
      for (uint64_t nb = 0; nb < nbs; ++nb) tiles[{g, nb}] = weight_tile(t, K, cols, 0, nb);
    }
    uint64_t rows_per_chunk = conv_row_chunk(S > 1 ? OH : N * OH, per_row, nbs);
    // Two pixels: an image's two-pixel rows, spread into the output after its matmuls (+ a
    // row of slack: the second spreading copy reads half a row past the last).
    uint64_t qbytes = two_px ? OH * per_row * C_ * esz_ + R_ * esz_ : 0;
    uint64_t q2 = two_px ? ub_take(qbytes, fmt::format("the two-pixel output of '{}'", layer)) : 0;
    if (two_px) clear(q2, qbytes);
    // In flight on kSpread until the next image's matmuls (whose epilogues reuse the
    // two-pixel rows, and whose background pool reads this image) start.
    const int kSpread = 50;
    auto spread = [&](uint64_t n) {
      uint64_t row = C_ * esz_, at = y.base + (n * OH - first_row(n)) * OW * row;
      for (uint64_t h = 0; h < 2; ++h)
        code(fmt::format("  dma.copy desc={} src=r0 dst=r0 flag=f{}",
                         new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}]", row, q2 + h * (C_ / 2) * esz_,
                                              at + h * row, OH * per_row, row, 2 * row)),
                         kSpread));
    };
    // Output rows [q0, q1): without stacking all images at once from the packed image, with
    // it one image at a time from its stacked copy.
    auto run_rows = [&](uint64_t q0, uint64_t q1, uint64_t zb, uint64_t row0, std::vector<std::pair<std::string, double>> transfers,
                        std::vector<std::pair<std::string, uint64_t>> background) {
      std::vector<Block> blocks;
      for (uint64_t nb = 0; nb < nbs; ++nb)
        for (uint64_t r0 = q0; r0 < q1; r0 += rows_per_chunk) {
          uint64_t r1 = std::min(q1, r0 + rows_per_chunk);
          Block b;
          for (uint64_t g = 0; g < G; ++g) {
            TileGroup tg{tiles[{g, nb}], {}};
            for (uint64_t r = r0; r < r1; ++r) {
              uint64_t n = r / OH, oy = r % OH;
              uint64_t src = S > 1 ? zb + (oy * sh + g * S * dh) / rs * Wp * zp : xq + ((n * Hp + oy * sh + g * dh) * Wp) * pix;
              tg.steps.push_back({src, per_row, (two_px ? 2 : 1) * sw * zp, (r - r0) * per_row, g > 0});
            }
            b.groups.push_back(std::move(tg));
          }
          uint64_t rows = (r1 - r0) * per_row;
          uint64_t out = two_px ? q2 + (r0 - q0) * per_row * C_ * esz_ : y.base + nb * y.block_bytes + (r0 - row0) * OW * C_ * out_esz_;
          uint64_t bias_row = bias_at(bias_ub, nb);
          std::string ep = eps[nb];
          b.epilogue = [this, rows, bias_row, ep, out](uint32_t m, uint64_t acc_row) { return epilogue(m, acc_row, rows, bias_row, ep, out); };
          blocks.push_back(std::move(b));
        }
      run_blocks(blocks, true, std::nullopt, std::move(background), {}, std::move(transfers));  // constant weights: the prologue hoists
    };
    // With room (after the pool's output) for a second packed image, image n + 1 loads from
    // HBM while image n's matmuls run (one request per pixel: about 3,000 cycles for a
    // 224 x 224 image on tpu-v4-core) and only its stacking copies wait between images.
    uint64_t xq2 = 0;
    if (S > 1 && N > 1 && ub_.largest_free() >= bytes + (1 << 16)) {
      xq2 = ub_take(bytes, fmt::format("the packed input of '{}'", layer));
      clear(xq2, bytes);
    }
    // The copies that stack a packed image, on `flag`, and their count.
    auto stack_copies = [&](uint64_t from, uint64_t to, int flag) {
      std::string text;
      uint64_t copies = 0;
      for (uint64_t s = 0; s < S && s * dh < Hp; ++s, ++copies) {
        uint64_t rows = std::min(ZH, ceil_div(Hp - s * dh, rs));
        std::string d = new_desc(fmt::format("bytes={} dim=[{}, {}, {}] dim=[{}, {}, {}]", pix, Wp, pix, zp, rows, rs * Wp * pix, Wp * zp));
        text += fmt::format("  li r1, {} || li r2, {}\n", from + s * dh * Wp * pix, to + s * pix);
        text += fmt::format("  dma.copy desc={} src=r1 dst=r2 flag=f{}\n", d, flag);
      }
      return std::make_pair(text, copies);
    };
    auto stack = [&](uint64_t from, uint64_t to) {
      auto [text, copies] = stack_copies(from, to, 1);
      code_ += text;
      code(fmt::format("  wait f1, {}", copies));
    };
    // With room for a second stacked copy too, image n + 1 is also stacked during image n's
    // matmuls (once its load is done): the next image's matmuls then start at once.
    uint64_t zb2 = 0;
    if (xq2 && ub_.largest_free() >= zbytes + (1 << 16)) {
      zb2 = ub_take(zbytes, fmt::format("the row-stacked input of '{}'", layer));
      clear(zb2, zbytes);
    }
    if (S == 1) run_rows(0, N * OH, zb, 0, {}, {});
    // The next image's load goes in pieces of a few rows spread over the steps of this one's
    // matmuls (each pixel is a request of its own: one long transfer would hold up the weight
    // loads queued behind it; 24 pieces measured best for ResNet-50 at batch 8), its stacking
    // after the last matmul is issued (waiting for the load then stalls no matmul).
    const int kLoaded = 48, kStacked = 49;
    uint64_t pieces = std::min<uint64_t>(H, 24), stacked = 0;
    if (xq2) load_image(0, xq);
    if (zb2) stack(xq, zb);
    for (uint64_t n = 0; S > 1 && n < N; ++n) {
      uint64_t packed = xq2 && n % 2 ? xq2 : xq, other = packed == xq ? xq2 : xq;
      uint64_t z = zb2 && n % 2 ? zb2 : zb;
      // run_blocks has waited for every matmul of the previous image: its stacked copy is free.
      if (!xq2) {
        load_image(n, xq);
        stack(xq, zb);
      } else if (!zb2) {
        if (n > 0) code(fmt::format("  wait f{}, {}", kLoaded, pieces));
        stack(packed, zb);
      } else if (n > 0) {
        code(fmt::format("  wait f{}, {}", kStacked, stacked));
      }
      if (two_px && n > 0) code(fmt::format("  wait f{}, 2", kSpread));
      std::vector<std::pair<std::string, double>> next;
      for (uint64_t i = 0; xq2 && n + 1 < N && i < pieces; ++i)  // into the other packed image, free now
        next.push_back({load_rows(n + 1, other, i * H / pieces, (i + 1) * H / pieces, kLoaded), double(i + 1) / double(pieces)});
      if (zb2 && n + 1 < N) {
        auto [text, copies] = stack_copies(other, z == zb ? zb2 : zb, kStacked);
        next.push_back({fmt::format("  wait f{}, {}\n", kLoaded, pieces) + text, 1.0});
        stacked = copies;
      }
      run_rows(n * OH, (n + 1) * OH, z, first_row(n), std::move(next),
               pool && n > 0 ? pool_ops(*pool, y, py, int64_t(n) - 1, int64_t(n), first_row(n - 1) / OH)
                             : std::vector<std::pair<std::string, uint64_t>>{});
      if (two_px) spread(n);
      if (two_px && n + 1 == N) code(fmt::format("  wait f{}, 2", kSpread));
    }
    if (pool)
      for (auto& [text, occ] : pool_ops(*pool, y, py, int64_t(N) - 1, int64_t(N), first_row(N - 1) / OH)) {
        code_ += text.replace(text.find("{flag}"), 6, "f20");
        code("  wait f20");
      }
    ub_.release(bias_ub);
    ub_.release(xq);
    if (S > 1) ub_.release(zb);
    if (xq2) ub_.release(xq2);
    if (zb2) ub_.release(zb2);
    if (two_px) ub_.release(q2);
    add_bound(layer, N * OH * OW * KH * KW * CI * CO, KH * KW * CI * CO * esz_ + N * H * W * CI * esz_);
    define(op.getOutput(), y);
  }

  // A residual add fused into the epilogue of the convolution that produces one operand:
  // when the convolution's output has no other user and the add's other operand is already
  // in the unified buffer with the add as its last user, each output block's epilogue goes
  // on to add it, in place in that operand, so the add's vector work overlaps the matmuls
  // instead of running after them. The operations and roundings are gen_add's (INT8: both
  // operands rescaled to the sum's scale, a saturating add, the clamp; bf16: the add and
  // the clamp), in the same order up to commuting the add, so the results are the same.
  struct FusedAdd {
    Act other;
    std::string conv_scale, other_scale, clamp;  // INT8: the two rescales
    // INT8 through the accumulators (see gen_conv): the other operand rescaled to each
    // output block's accumulator scale, and the sum's rescale from it (with the add's clamp).
    double s_other = 0, s_sum = 0, lo = 0, hi = 0;
    bool in_acc = false;
    std::vector<std::string> to_acc, to_sum;  // per output block
  };
  // Only where it pays: when the matmuls of an output block (`groups` tiles of rows) last at
  // least as long as the epilogues the vector unit runs meanwhile (one per MXU, two
  // operations each), so the add's work is not all queued behind them; and where the scratch
  // slots take no more than the output would, or than half the free space.
  std::optional<FusedAdd> fusable_add(tpu::Conv2DOp op, uint64_t groups, uint64_t scratch_bytes) {
    Value out = op.getOutput();
    if (int_out_ || !out.hasOneUse() || groups * cfg_.core.vector.sublanes < 2 * uint64_t(cfg_.core.mxu.count))
      return std::nullopt;
    auto ys = shape_of(out);
    uint64_t out_bytes = numel(ys) / uint64_t(ys.back()) * ceil_div(uint64_t(ys.back()), R_) * R_ * esz_;
    if (scratch_bytes > std::max(out_bytes, ub_.largest_free() / 2)) return std::nullopt;
    auto add = mlir::dyn_cast<tpu::AddOp>(*out.getUsers().begin());
    if (!add || add.getLhs() == add.getRhs()) return std::nullopt;
    Value other = add.getLhs() == out ? add.getRhs() : add.getLhs();
    if (!acts_.count(other.getAsOpaquePointer()) || !last_use(other) || shape_of(other) != shape_of(add.getOutput()) ||
        shape_of(out) != shape_of(add.getOutput()))
      return std::nullopt;
    FusedAdd f;
    f.other = act(other);
    double lo = add.getClampMin().convertToDouble(), hi = add.getClampMax().convertToDouble();
    if (q8_) {
      double sy = scale(add.getOutput());
      if (scale(out) > sy || scale(other) > sy) return std::nullopt;  // gen_add's fp32 case
      f.s_other = scale(other), f.s_sum = sy, f.lo = lo, f.hi = hi;
      f.conv_scale = new_param(fmt::format("scale=[{}]", double(scale(out)) / sy));
      f.other_scale = new_param(fmt::format("scale=[{}]", double(scale(other)) / sy));
      f.clamp = clamp_param(std::isinf(lo) ? lo : std::ceil(lo / sy), std::isinf(hi) ? hi : std::floor(hi / sy));
    } else {
      f.clamp = clamp_param(lo, hi);
    }
    fused_adds_[add.getOperation()] = f.other;
    return f;
  }
  // The INT8 fused add through the accumulators (gen_conv) for `rows` rows of output block
  // nb: bias, the other operand (at `other`) to int32 in the accumulator scale (at `tmp`),
  // added to the sums, which one RESCALE writes over the other operand as the sum.
  std::vector<std::string> acc_add_phases(const FusedAdd& f, uint32_t mxu, uint64_t acc_row, uint64_t rows, uint64_t bias_ub,
                                          uint64_t nb, uint64_t tmp, uint64_t other) {
    uint64_t g = uint64_t(mxu) * cfg_.core.accumulators.rows + acc_row;
    std::vector<std::string> ph;
    std::string pre;
    if (bias_ub != kNoBias) ph.push_back(bias_phase(g, bias_ub, rows));
    std::string t = reg_ref(tmp, 8, pre), o = reg_ref(other, 9, pre);
    ph.push_back(pre + fmt::format("  vec.rescale dst=ub[{}] a=ub[{}] rows={} param={} dt=int8 odt=int32 flag={{flag}}\n", t, o, rows,
                                   f.to_acc[nb]));
    pre.clear();
    t = reg_ref(tmp, 8, pre);
    ph.push_back(pre + fmt::format("  vec.add dst=acc[r0+{0}] a=acc[r0+{0}] b=ub[{1}] rows={2} dt=int32 flag={{flag}}\n", g, t, rows));
    pre.clear();
    o = reg_ref(other, 9, pre);
    ph.push_back(pre + fmt::format("  vec.rescale dst=ub[{}] a=acc[r0+{}] rows={} param={} flag={{flag}}\n", o, g, rows, f.to_sum[nb]));
    return ph;
  }
  // The fused add's phases for `rows` rows of one lane block: the convolution's output at
  // `conv`, the other operand (and the sum) at `other`. "{flag}" as in epilogue().
  std::vector<std::string> fused_add_phases(const FusedAdd& f, uint64_t rows, uint64_t conv, uint64_t other) {
    std::vector<std::string> ph;
    auto op = [&](const std::string& fmt_, bool two) {
      std::string pre, o = reg_ref(other, 8, pre), c = two ? reg_ref(conv, 9, pre) : "";
      ph.push_back(pre + fmt::format(fmt::runtime(fmt_), fmt::arg("o", o), fmt::arg("c", c), fmt::arg("rows", rows),
                                     fmt::arg("dt", dt_)) + "\n");
    };
    if (q8_) {
      std::string pre, c = reg_ref(conv, 9, pre);
      ph.push_back(pre + fmt::format("  vec.affine dst=ub[{0}] a=ub[{0}] rows={1} dt=int8 param={2} flag={{flag}}\n", c, rows,
                                     f.conv_scale));
      op("  vec.affine dst=ub[{o}] a=ub[{o}] rows={rows} dt=int8 param=" + f.other_scale + " flag={{flag}}", false);
    }
    op("  vec.add dst=ub[{o}] a=ub[{o}] b=ub[{c}] rows={rows} dt={dt} flag={{flag}}", true);
    if (!f.clamp.empty()) op("  vec.clamp dst=ub[{o}] a=ub[{o}] rows={rows} dt={dt} param=" + f.clamp + " flag={{flag}}", false);
    return ph;
  }

  // A 3x3 "same" convolution on exactly R/2 input channels to at most C/2 output channels
  // (ResNet-50's 64-channel layers on a 128x128 array) computes two output pixels per
  // matmul row: a copy of the input holds, in entry e of each image row, pixel e - 1 in
  // lanes [0, R/2) and pixel e in lanes [R/2, R) (zeros past the row's ends), so the row
  // read at entry 2i + t covers input pixels 2i + t - 1 and 2i + t; a tile per (kernel row,
  // t in {0, 2}) has output pixel 2i's weights in columns [0, C/2) and pixel 2i + 1's in
  // [C/2, C). Each kernel row then takes 2 matmuls of W/2 rows instead of 3 of W (or the
  // tap pairs' 2 of W): K and N are both full. The epilogue writes these two-pixel rows,
  // and two copies spread them into the output's rows (their padding lanes hold the other
  // pixel, which the consumers, convolutions reading R/2 channels, never read).
  // INT8 activations whose padding lanes [at, at + kBiasLanes] hold constants (kBiasBig in
  // the first kBiasLanes, then 1): a 1x1 convolution reading at most `at` channels then adds
  // its bias on the MXU, from weight rows at those lanes whose sum over the constants is the
  // bias in the accumulator's scale, instead of a vector pass over every output row.
  static constexpr uint64_t kBiasLanes = 16;
  static constexpr int kBiasBig = 127;
  // A unified-buffer row of C int8 lanes with the constants from lane `at` (loaded once).
  uint64_t bias_lanes_row(uint64_t at) {
    if (auto it = bias_lanes_rows_.find(at); it != bias_lanes_rows_.end()) return it->second;
    std::vector<uint8_t> row(C_, 0);
    for (uint64_t k = 0; k < kBiasLanes; ++k) row[at + k] = uint8_t(kBiasBig);
    row[at + kBiasLanes] = 1;
    uint64_t ub = ub_take(C_, "the bias lanes' constants", false);
    std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={}", C_, hbm_const(row), ub));
    code(fmt::format("  dma.load desc={} src=r0 dst=r0 flag=f1", d));
    code("  wait f1");
    return bias_lanes_rows_[at] = ub;
  }
  // Weight rows (kBiasLanes + 1 int8 values) whose dot product with the constants is q, or
  // nothing when |q| is too large.
  static std::optional<std::vector<int>> bias_weights(int64_t q) {
    int64_t big = (q >= 0 ? q + kBiasBig / 2 : q - kBiasBig / 2) / kBiasBig, rest = q - big * kBiasBig;
    if (std::abs(big) > int64_t(kBiasLanes) * 127 || std::abs(rest) > 127) return std::nullopt;
    std::vector<int> w(kBiasLanes + 1, 0);
    for (uint64_t k = 0; k < kBiasLanes && big; ++k) {
      int64_t v = std::clamp<int64_t>(big, -127, 127);
      w[k] = int(v), big -= v;
    }
    w[kBiasLanes] = int(rest);
    return w;
  }
  // Whether every reader of v (through a pool) reads at most its channels' lanes: a
  // convolution, whose weight tiles have no rows past its input channels.
  bool padding_lanes_unread(Value v) {
    if (v.use_empty()) return false;
    for (mlir::Operation* u : v.getUsers()) {
      if (auto p = mlir::dyn_cast<tpu::PoolOp>(u); p && v.hasOneUse()) return padding_lanes_unread(p.getOutput());
      auto c = mlir::dyn_cast<tpu::Conv2DOp>(u);
      if (!c || c.getInput() != v) return false;
    }
    return true;
  }
  // Bias rows and epilogue parameters of two-pixel rows: channel c of the first pixel in
  // lane c, of the second in lane C/2 + c.
  std::pair<uint64_t, std::string> two_pixel_params(const std::vector<float>& bias, const std::vector<double>& acc_scale,
                                                    uint64_t CO, tpu::Conv2DOp op) {
    uint64_t C2 = C_ / 2;
    std::vector<float> bias2(C_, 0.0f);
    std::vector<double> acc2(q8_ ? C_ : 0, 0.0);
    for (uint64_t c = 0; c < C2; ++c) {
      uint64_t ch = std::min(c, CO - 1);  // unused lanes: any valid scale
      if (c < CO) bias2[c] = bias2[C2 + c] = bias[c];
      if (q8_) acc2[c] = acc2[C2 + c] = acc_scale[ch];
    }
    return {bias_rows(bias2, acc2), epilogue_params(C_, acc2, q8_ ? scale(op.getOutput()) : 1.0, op.getClampMin().convertToDouble(),
                                                    op.getClampMax().convertToDouble())[0]};
  }
  bool wide_conv(tpu::Conv2DOp op) {
    auto xs = shape_of(op.getInput()), ws = shape_of(op.getWeight());
    if (R_ != C_ || R_ % 2 || int_out_ || op.getGroups() != 1 || ws[0] != 3 || ws[1] != 3 || uint64_t(xs[3]) * 2 != R_ ||
        uint64_t(ws[3]) * 2 > C_ || xs[2] % 2 || xs[1] < 2 || (xs[3] * esz_) % cfg_.core.unified_buffer.alignment_bytes)
      return false;
    auto st = op.getStride(), pad = op.getPad(), dil = op.getDilation();
    if (st[0] != 1 || st[1] != 1 || dil[0] != 1 || dil[1] != 1 || pad[0] != 1 || pad[1] != 1 || pad[2] != 1 || pad[3] != 1)
      return false;
    return padding_lanes_unread(op.getOutput());
  }
  void gen_conv_wide(tpu::Conv2DOp op) {
    std::string layer = op.getLayer().str();
    const Act& x = act(op.getInput());
    auto xs = x.shape, ys = shape_of(op.getOutput());
    uint64_t N = uint64_t(xs[0]), H = uint64_t(xs[1]), W = uint64_t(xs[2]), CI = uint64_t(xs[3]), CO = uint64_t(ys[3]);
    uint64_t R2 = R_ / 2, C2 = C_ / 2, px = R_ * esz_, E = W + 1, half = W / 2;
    // The two-pixel copy: N * H rows of E entries. Lower halves: pixel e - 1 (zero at e = 0);
    // upper halves: pixel e (zero at e = W). All four transfers write disjoint bytes.
    uint64_t P = ub_take(N * H * E * px, fmt::format("the two-pixel input of '{}'", layer));
    auto copy = [&](uint64_t src, uint64_t dst) {
      code(fmt::format("  dma.copy desc={} src=r0 dst=r0 flag=f1",
                       new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}] dim=[{}, {}, {}]", CI * esz_, src,
                                            dst, W, px, px, N * H, W * px, E * px))));
    };
    copy(x.base, P + px);
    copy(x.base, P + R2 * esz_);
    for (uint64_t at : {P, P + W * px + R2 * esz_})
      code(fmt::format("  dma.load desc={} src=r0 dst=r0 flag=f1",
                       new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, 0, {}]", CI * esz_, zero_hbm_, at, N * H, E * px))));
    code("  wait f1, 4");
    auto w = const_floats(op.getWeight(), layer), bias = const_floats(op.getBias(), layer);
    std::vector<double> acc_scale;
    if (q8_) {
      QWeights qw = quantize(w, 9 * CI, CO);
      w = std::move(qw.q);
      for (double s : qw.s) acc_scale.push_back(s * scale(op.getInput()));
    }
    auto [bias_ub, ep] = two_pixel_params(bias, acc_scale, CO, op);
    auto tap = [&](uint64_t dy, uint64_t dx, uint64_t ci, uint64_t co) { return w[((dy * 3 + dx) * CI + ci) * CO + co]; };
    std::map<std::pair<uint64_t, uint64_t>, TileRef> tiles;  // (kernel row, t)
    for (uint64_t dy = 0; dy < 3; ++dy)
      for (uint64_t t : {0, 2}) {
        // Lower half: input pixel 2i + t - 1, upper half: 2i + t; output pixel 2i = taps
        // dx = pixel - 2i + 1, output pixel 2i + 1 = taps dx = pixel - 2i.
        std::vector<float> m(R_ * C_, 0.0f);
        for (uint64_t h = 0; h < 2; ++h) {
          int64_t p = int64_t(t) - 1 + int64_t(h);  // input pixel - 2i
          for (int64_t o = 0; o < 2; ++o) {
            int64_t dx = p - o + 1;
            if (dx < 0 || dx > 2) continue;
            for (uint64_t ci = 0; ci < CI; ++ci)
              for (uint64_t co = 0; co < CO; ++co) m[(h * R2 + ci) * C_ + uint64_t(o) * C2 + co] = tap(dy, uint64_t(dx), ci, co);
          }
        }
        tiles[{dy, t}] = weight_tile(m, R_, C_, 0, 0);
      }
    uint64_t rows_out = N * H;  // output rows (of W pixels, W / 2 matmul rows)
    Act q = new_act({int64_t(rows_out * half), int64_t(C_)}, fmt::format("the two-pixel output of '{}'", layer), true);
    uint64_t chunk = conv_row_chunk(rows_out, half, 1);
    std::vector<Block> blocks;
    for (uint64_t r0 = 0; r0 < rows_out; r0 += chunk) {
      uint64_t r1 = std::min(rows_out, r0 + chunk);
      Block b;
      bool first = true;
      for (uint64_t dy : {1, 0, 2})  // the centre row reaches every output row: it initializes them
        for (uint64_t t : {0, 2}) {
          TileGroup g{tiles[{dy, t}], {}};
          for (uint64_t r = r0; r < r1; ++r) {
            int64_t iy = int64_t(r % H) + int64_t(dy) - 1;
            if (iy < 0 || iy >= int64_t(H)) continue;
            g.steps.push_back({P + ((r / H * H + uint64_t(iy)) * E + t) * px, half, 2 * px, (r - r0) * half, !first});
          }
          first = false;
          if (!g.steps.empty()) b.groups.push_back(std::move(g));
        }
      uint64_t rows = (r1 - r0) * half, out = q.base + r0 * half * C_ * esz_, bias_row = bias_at(bias_ub, 0);
      b.epilogue = [this, rows, bias_row, ep, out](uint32_t m, uint64_t acc_row) { return epilogue(m, acc_row, rows, bias_row, ep, out); };
      blocks.push_back(std::move(b));
    }
    run_blocks(blocks, true);
    ub_.release(P);
    ub_.release(bias_ub);
    // Pixel 2i's row takes the two-pixel row's lanes [0, C/2), pixel 2i + 1's its lanes
    // [C/2, C). INT8: the output's padding lanes get the bias lanes (bias_lanes_row).
    Act y = out_act(op.getOutput(), fmt::format("the output of '{}'", layer));
    uint64_t n = rows_out * half, row = C_ * esz_, pattern = q8_ ? bias_lanes_row(C2) : 0;
    for (uint64_t h = 0; h < 2; ++h)
      code(fmt::format("  dma.copy desc={} src=r0 dst=r0 flag=f1",
                       new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}]", C2 * esz_, q.base + h * C2 * esz_,
                                            y.base + h * row, n, row, 2 * row))));
    if (q8_) {
      code(fmt::format("  dma.copy desc={} src=r0 dst=r0 flag=f1",
                       new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, 0, {}]", C2, pattern + C2, y.base + C2, 2 * n, row))));
      bias_lanes_[op.getOutput().getAsOpaquePointer()] = C2;
    }
    code(fmt::format("  wait f1, {}", q8_ ? 3 : 2));
    ub_.release(q.base);
    add_bound(layer, N * H * W * 9 * CI * CO, 9 * R_ * C_ * 2 * esz_);
    define(op.getOutput(), y);
  }

  void gen_conv(tpu::Conv2DOp op) {
    std::string layer = op.getLayer().str();
    tag(layer);
    if (auto it = input_hbm_.find(op.getInput().getAsOpaquePointer()); it != input_hbm_.end())
      return gen_conv_packed(op, it->second);
    if (wide_conv(op)) return gen_conv_wide(op);
    const Act& x = act(op.getInput());
    auto xs = x.shape;  // N, H, W, CI
    auto ws = shape_of(op.getWeight());  // KH, KW, CI, CO
    auto ys = shape_of(op.getOutput());  // N, OH, OW, CO
    uint64_t N = uint64_t(xs[0]), H = uint64_t(xs[1]), W = uint64_t(xs[2]), CI = uint64_t(xs[3]);
    uint64_t KH = uint64_t(ws[0]), KW = uint64_t(ws[1]), CO = uint64_t(ws[3]);
    uint64_t OH = uint64_t(ys[1]), OW = uint64_t(ys[2]);
    uint64_t G = uint64_t(op.getGroups()), CIg = uint64_t(ws[2]);  // channels per group
    auto stride = op.getStride(), pad = op.getPad(), dil = op.getDilation();
    uint64_t sh = uint64_t(stride[0]), sw = uint64_t(stride[1]), dh = uint64_t(dil[0]), dw = uint64_t(dil[1]);
    uint64_t pt = uint64_t(pad[0]), pb = uint64_t(pad[1]), pl = uint64_t(pad[2]), pr = uint64_t(pad[3]);
    auto w = const_floats(op.getWeight(), layer), bias = const_floats(op.getBias(), layer);
    // A fused residual add (fusable_add) writes the sum into its other operand; this
    // convolution's output rows then only pass through a scratch slot per accumulator region.
    const auto& ubc = cfg_.core.unified_buffer;
    uint64_t period = ubc.banks > 1 ? uint64_t(ubc.banks) * ubc.row_bytes : 0;
    // One slot per MXU and accumulator region: run_blocks splits the accumulators by the
    // largest block, here a full row chunk (the centre tap covers all its rows).
    uint64_t chunk_px = conv_row_chunk(N * OH, OW, ceil_div(CO, C_)) * OW;
    uint64_t nreg = acc_regions(chunk_px), region_rows = cfg_.core.accumulators.rows / nreg;
    // INT8 adds through the accumulators need int32 slots (see below).
    bool int32_slots = q8_ && std::isinf(op.getClampMin().convertToDouble()) && std::isinf(op.getClampMax().convertToDouble());
    uint64_t slot = align_up(chunk_px * C_ * (int32_slots ? 4 : esz_), 64) + period;
    uint64_t slots = nreg * uint64_t(cfg_.core.mxu.count);
    std::optional<FusedAdd> fused = fusable_add(op, KH * KW * ceil_div(CI, R_), slots * slot);
    Act y = fused ? Act{} : out_act(op.getOutput(), fmt::format("the output of '{}'", layer));
    uint64_t scratch = fused ? ub_take(slots * slot, fmt::format("the output rows of '{}'", layer)) : 0;

    // Zero-padded copy of the input when the conv pads, except for "same" convolutions
    // (stride 1, odd kernel, centred pads): their taps read the unpadded input, each clipped
    // to the output pixels and rows it reaches, with the centre tap (which reaches all of
    // them) first to initialize the accumulators.
    uint64_t Hp = H + pt + pb, Wp = W + pl + pr;
    Act xp = x;
    bool same = sh == 1 && sw == 1 && dh == 1 && dw == 1 && KH % 2 == 1 && KW % 2 == 1 && pt == (KH - 1) / 2 &&
                pb == pt && pl == (KW - 1) / 2 && pr == pl;
    bool padded = (pt || pb || pl || pr) && !same;
    if (padded) {
      xp = new_act({int64_t(N), int64_t(Hp), int64_t(Wp), int64_t(CI)}, fmt::format("the padded input of '{}'", layer),
                   /*temporary=*/true);
      // Border fills and interior copies touch disjoint rows: all in flight, one wait.
      uint64_t inflight = 0;
      clear_border(xp, N, Hp, Wp, pt, pb, pl, pr, false, &inflight);
      for (uint64_t b = 0; b < x.blocks; ++b)
        for (uint64_t n = 0; n < N; ++n) {
          uint64_t src = x.base + b * x.block_bytes + n * H * W * R_ * esz_;
          uint64_t dst = xp.base + b * xp.block_bytes + ((n * Hp + pt) * Wp + pl) * R_ * esz_;
          std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}]", W * R_ * esz_, src, dst, H,
                                               W * R_ * esz_, Wp * R_ * esz_));
          code(fmt::format("  dma.copy desc={} src=r0 dst=r0 flag=f1", d));
          ++inflight;
        }
      for (; inflight; inflight -= std::min<uint64_t>(inflight, 65535))
        code(fmt::format("  wait f1, {}", std::min<uint64_t>(inflight, 65535)));
    }
    // Tap pairs: a "same" convolution on at most R/2 channels leaves half of every matmul
    // row's K empty. When it is its input's last user, one DMA copies each pixel's channels
    // into lanes [CI, 2 CI) of the pixel above (zeros for an image's bottom row), so a
    // matmul row covers kernel rows dy and dy + 1 (K = 2 CI); whatever other padding lanes
    // hold is never read. Pairs start at the centre row (their row read is never above the
    // image); rows above it stay single taps. ResNet-50's 64-channel 3x3 convs take 6
    // matmuls per output row instead of 9.
    bool pairs = same && G == 1 && KH > 1 && H > 1 && 2 * CI <= R_ &&
                 (CI * esz_) % cfg_.core.unified_buffer.alignment_bytes == 0 && last_use(op.getInput());
    if (pairs) {
      uint64_t px = R_ * esz_, img = H * W * px;
      std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}] dim=[{}, {}, {}]", CI * esz_,
                                           x.base + W * px, x.base + CI * esz_, (H - 1) * W, px, px, N, img, img));
      code(fmt::format("  dma.copy desc={} src=r0 dst=r0 flag=f1", d));
      code("  wait f1");  // the two transfers' spans interleave
      d = new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, 0, {}] dim=[{}, 0, {}]", CI * esz_, zero_hbm_,
                               x.base + (H - 1) * W * px + CI * esz_, W, px, N, img));
      code(fmt::format("  dma.load desc={} src=r0 dst=r0 flag=f1", d));
      code("  wait f1");
    }
    std::vector<double> acc_scale;
    if (q8_) {
      // Per output channel over all taps: [KH*KW*CI, CO] is the same layout as w.
      QWeights qw = quantize(w, KH * KW * CIg, CO);
      w = std::move(qw.q);
      for (double sw : qw.s) acc_scale.push_back(sw * scale(op.getInput()));
    }
    // The bias on the MXU (bias_lanes_): a 1x1 convolution of an input with bias lanes.
    uint64_t lanes = 0;
    bool bias_on_mxu = false;
    std::vector<float> folded;
    if (auto it = bias_lanes_.find(op.getInput().getAsOpaquePointer());
        it != bias_lanes_.end() && q8_ && KH == 1 && KW == 1 && sh == 1 && sw == 1 && G == 1 && !padded && CI <= it->second) {
      lanes = it->second;
      folded.assign((lanes + kBiasLanes + 1) * CO, 0.0f);
      bias_on_mxu = true;
      for (uint64_t co = 0; co < CO && bias_on_mxu; ++co) {
        for (uint64_t ci = 0; ci < CI; ++ci) folded[ci * CO + co] = w[ci * CO + co];
        auto bw = bias_weights(int64_t(std::nearbyint(double(bias[co]) / acc_scale[co])));
        if (!bw) bias_on_mxu = false;
        for (uint64_t k = 0; bw && k <= kBiasLanes; ++k) folded[(lanes + k) * CO + co] = float((*bw)[k]);
      }
    }
    uint64_t bias_ub = bias_on_mxu ? kNoBias : bias_rows(bias, acc_scale);
    auto eps = epilogue_params(CO, acc_scale, q8_ ? scale(op.getOutput()) : 1.0, op.getClampMin().convertToDouble(),
                               op.getClampMax().convertToDouble());
    uint64_t cbs = ceil_div(CI, R_), nbs = ceil_div(CO, C_);
    // An INT8 residual add with the convolution's output unclamped goes through the
    // accumulators: the other operand, rescaled to each channel's accumulator scale (int32,
    // in the slot), is added to the sums, and one RESCALE takes them to the sum's scale with
    // the add's clamp. Three vector passes after the bias instead of five (the convolution's
    // own rescale, both operands' rescales to the sum's scale, the add, the clamp), and one
    // rounding instead of three. Needs every ratio well inside RESCALE's range and int32.
    if (fused && int32_slots) {
      bool fits = true;
      for (double a : acc_scale) fits &= a > 0 && fused->s_other / a < double(1 << 20) && fused->s_other / a > 1.0 / double(1 << 20);
      if (fits) {
        fused->in_acc = true;
        std::vector<double> inv;
        for (double a : acc_scale) inv.push_back(fused->s_other / a);
        for (uint64_t nb = 0; nb < nbs; ++nb) {
          std::vector<int64_t> mult, shift;
          for (uint64_t c = 0; c < C_; ++c) {
            uint64_t ch = nb * C_ + c;
            auto [m, sh2] = ch < CO ? fixed_point(inv[ch]) : std::pair<int64_t, int64_t>{0, 31};
            mult.push_back(m), shift.push_back(sh2);
          }
          fused->to_acc.push_back(new_param(fmt::format("mult=[{}] shift=[{}]", fmt::join(mult, ", "), fmt::join(shift, ", "))));
        }
        fused->to_sum = epilogue_params(CO, acc_scale, fused->s_sum, fused->lo, fused->hi);
      }
    }
    // Weight tiles per (tap, ci block, co block): rows = input channels, cols = output
    // channels. Grouped weights [KH, KW, CI/G, CO] spread into the tap's CI x CO matrix,
    // zero across groups (a depthwise tap is diagonal); a tile with no channel pair of one
    // group is all zeros and is skipped, with its matmuls.
    uint64_t COg = CO / G;
    auto group_overlap = [&](uint64_t cb, uint64_t nb) {
      uint64_t ci0 = cb * R_, ci1 = std::min(CI, ci0 + R_), co0 = nb * C_, co1 = std::min(CO, co0 + C_);
      return ci0 / CIg <= (co1 - 1) / COg && co0 / COg <= (ci1 - 1) / CIg;
    };
    std::map<std::tuple<uint64_t, uint64_t, uint64_t>, TileRef> tiles;
    std::vector<float> tap(CI * CO);
    for (uint64_t t = 0; t < KH * KW; ++t) {
      if (G == 1) {
        std::copy(w.begin() + long(t * CI * CO), w.begin() + long((t + 1) * CI * CO), tap.begin());
      } else {
        std::fill(tap.begin(), tap.end(), 0.0f);
        for (uint64_t co = 0; co < CO; ++co)
          for (uint64_t i = 0; i < CIg; ++i) tap[(co / COg * CIg + i) * CO + co] = w[(t * CIg + i) * CO + co];
      }
      for (uint64_t cb = 0; cb < cbs; ++cb)
        for (uint64_t nb = 0; nb < nbs; ++nb)
          if (group_overlap(cb, nb)) tiles[{t, cb, nb}] = bias_on_mxu ? weight_tile(folded, lanes + kBiasLanes + 1, CO, 0, nb)
                                                                       : weight_tile(tap, CI, CO, cb, nb);
    }
    // The order taps go in ("same": the centre first, it reaches every output and
    // initializes the accumulators) and, with pairs, which of them take kernel row dy + 1
    // along (their tiles: rows [0, CI) tap (dy, dx), rows [CI, 2 CI) tap (dy + 1, dx)).
    std::vector<std::pair<uint64_t, bool>> order;  // (tap, paired)
    std::map<std::pair<uint64_t, uint64_t>, TileRef> pair_tiles;
    uint64_t centre = (KH / 2) * KW + KW / 2;
    for (uint64_t i = 0; i < KH * KW && !pairs; ++i) order.push_back({!same ? i : i == 0 ? centre : i <= centre ? i - 1 : i, false});
    for (uint64_t dx = 0; pairs && dx < KW; ++dx) {
      uint64_t c = (dx + pl) % KW;  // from the centre column on
      for (uint64_t dy = pt; dy + 1 < KH; dy += 2) {
        order.push_back({dy * KW + c, true});
        // w holds tap t's CI x CO block at t * CI * CO.
        std::vector<float> t(2 * CI * CO);
        std::copy(w.begin() + long((dy * KW + c) * CI * CO), w.begin() + long((dy * KW + c + 1) * CI * CO), t.begin());
        std::copy(w.begin() + long(((dy + 1) * KW + c) * CI * CO), w.begin() + long(((dy + 1) * KW + c + 1) * CI * CO),
                  t.begin() + long(CI * CO));
        for (uint64_t nb = 0; nb < nbs; ++nb) pair_tiles[{dy * KW + c, nb}] = weight_tile(t, 2 * CI, CO, 0, nb);
      }
      if ((KH - pt) % 2) order.push_back({(KH - 1) * KW + c, false});
      for (uint64_t dy = 0; dy < pt; ++dy) order.push_back({dy * KW + c, false});
    }
    // Output rows (n, oy) in chunks that fit an accumulator region.
    uint64_t rows_per_chunk = conv_row_chunk(N * OH, OW, nbs);
    if (OW > acc_region_)
      throw DoesNotFitError("core.accumulators.rows", 2 * OW, cfg_.core.accumulators.rows,
                            fmt::format("node '{}': an output row of {} pixels exceeds half the {} accumulator rows "
                                        "(core.accumulators.rows)",
                                        layer, OW, cfg_.core.accumulators.rows));
    std::vector<Block> blocks;
    for (uint64_t nb = 0; nb < nbs; ++nb)
      for (uint64_t r0 = 0; r0 < N * OH; r0 += rows_per_chunk) {
        uint64_t r1 = std::min(N * OH, r0 + rows_per_chunk);
        Block b;
        bool first = true;
        for (auto [t, paired] : order)
          for (uint64_t cb = 0; cb < cbs; ++cb) {
            if (!group_overlap(cb, nb)) continue;
            TileGroup g{paired ? pair_tiles[{t, nb}] : tiles[{t, cb, nb}], {}};
            uint64_t dy = t / KW, dx = t % KW;
            for (uint64_t r = r0; r < r1; ++r) {
              uint64_t n = r / OH, oy = r % OH;
              if (same) {
                int64_t iy = int64_t(oy + dy) - int64_t(pt);
                // Output columns [lo, hi) whose tap dx lands inside the row (none when the kernel
                // reaches past a narrow image: W + pl < dx).
                uint64_t lo = pl > dx ? pl - dx : 0,
                         hi = uint64_t(std::clamp<int64_t>(int64_t(W + pl) - int64_t(dx), 0, int64_t(OW)));
                if (iy < 0 || iy >= int64_t(H) || lo >= hi) continue;
                uint64_t src = x.base + cb * x.block_bytes + ((n * H + uint64_t(iy)) * W + lo + dx - pl) * R_ * esz_;
                g.steps.push_back({src, hi - lo, 0, (r - r0) * OW + lo, !first});
                continue;
              }
              uint64_t iy = oy * sh + dy * dh, ix = dx * dw;  // in the padded image
              uint64_t src = xp.base + cb * xp.block_bytes + ((n * Hp + iy) * Wp + ix) * R_ * esz_;
              g.steps.push_back({src, OW, sw == 1 ? 0 : sw * R_ * esz_, (r - r0) * OW, !first});
            }
            first = false;
            if (!g.steps.empty()) b.groups.push_back(std::move(g));
          }
        uint64_t rows = (r1 - r0) * OW;
        uint64_t out = y.base + nb * y.block_bytes + r0 * OW * C_ * out_esz_, bias_row = bias_at(bias_ub, nb);
        std::string ep = eps[nb];
        if (fused) {
          // The slot of this accumulator region, started one unified-buffer bank after the
          // other operand's rows so the add's two reads never share a bank.
          uint64_t other = fused->other.base + nb * fused->other.block_bytes + r0 * OW * C_ * esz_;
          b.epilogue = [this, rows, bias_row, ep, other, f = *fused, scratch, slot, period, nreg, region_rows, nb](uint32_t m,
                                                                                                          uint64_t acc_row) {
            if (acc_row % region_rows || acc_row / region_rows >= nreg) throw InternalError("fused add: unexpected accumulator region");
            uint64_t at = scratch + (nreg * uint64_t(m) + acc_row / region_rows) * slot;
            if (period) at += (other + cfg_.core.unified_buffer.row_bytes + period - at % period) % period;
            if (f.in_acc) return acc_add_phases(f, m, acc_row, rows, bias_row, nb, at, other);
            auto ph = epilogue(m, acc_row, rows, bias_row, ep, at);
            for (auto& extra : fused_add_phases(f, rows, at, other)) ph.push_back(std::move(extra));
            return ph;
          };
        } else {
          b.epilogue = [this, rows, bias_row, ep, out](uint32_t m, uint64_t acc_row) { return epilogue(m, acc_row, rows, bias_row, ep, out); };
        }
        blocks.push_back(std::move(b));
      }
    run_blocks(blocks, true);  // constant weights: the prologue hoists into the previous stream
    ub_.release(bias_ub);
    if (padded) ub_.release(xp.base);
    add_bound(layer, N * OH * OW * KH * KW * CIg * CO, KH * KW * CIg * CO * esz_);
    if (fused) ub_.release(scratch);
    else define(op.getOutput(), y);
  }

  // Pools read the unpadded input: each output pixel's window is clipped to the image (max
  // over what it covers is max with -inf padding; an average divides by what it covers, or
  // with count_include_pad by the window clipped to the padded image). Runs of output pixels
  // with the same clipped window are one vec.maxpool/avgpool each: the interior of a row is
  // one run, border pixels their own.
  // The vector instructions of a pool of x into y for images [n0, n1), each with its
  // estimated issue cycles; "{flag}" stands for the completion flag.
  // x's first row is image x_first's (a convolution's two-image ring, gen_conv_packed).
  std::vector<std::pair<std::string, uint64_t>> pool_ops(tpu::PoolOp op, const Act& x, const Act& y, int64_t n0, int64_t n1,
                                                         int64_t x_first = 0) {
    std::string layer = op.getLayer().str();
    auto ys = shape_of(op.getOutput());
    int64_t N = n1 - n0, H = x.shape[1], W = x.shape[2], OH = ys[1], OW = ys[2];
    auto k = op.getKernel(), st = op.getStride(), pad = op.getPad();
    bool maxp = op.getKind() == "max", include_pad = op.getCountIncludePad();
    int64_t dh = op.getDilation() ? (*op.getDilation())[0] : 1, dw = op.getDilation() ? (*op.getDilation())[1] : 1;
    uint64_t px = R_ * esz_;
    std::vector<std::pair<std::string, uint64_t>> ops;
    const auto& vc = cfg_.core.vector;
    // The taps [lo, hi) of a window (origin o, kk taps d apart) inside [0, size), and how
    // many lie inside the padded extent.
    struct Span {
      int64_t lo, hi, padded;
    };
    auto first_at = [](int64_t from, int64_t o, int64_t d) { return from <= o ? int64_t(0) : (from - o + d - 1) / d; };
    auto span = [&](int64_t o, int64_t kk, int64_t size, int64_t before, int64_t after, int64_t d) {
      int64_t lo = first_at(0, o, d), hi = std::min<int64_t>(kk, std::max<int64_t>(0, first_at(size, o, d)));
      int64_t plo = first_at(-before, o, d), phi = std::min<int64_t>(kk, std::max<int64_t>(0, first_at(size + after, o, d)));
      return Span{std::min(lo, kk), hi, std::max<int64_t>(0, phi - plo)};
    };
    struct Run {
      int64_t ox0, ox1;
      Span sx;
    };
    std::vector<Run> runs;
    for (int64_t ox = 0; ox < OW; ++ox) {
      Span sx = span(ox * st[1] - pad[2], k[1], W, pad[2], pad[3], dw);
      if (!runs.empty() && runs.back().sx.lo == sx.lo && runs.back().sx.hi == sx.hi && runs.back().sx.padded == sx.padded &&
          sx.lo == 0)  // a left-clipped window shifts its origin: those stay single
        runs.back().ox1 = ox + 1;
      else
        runs.push_back({ox, ox + 1, sx});
    }
    // One output pixel per image (a global pool): one instruction per lane block covers
    // every image, its rows an image apart.
    bool per_image = OH == 1 && OW == 1 && runs.size() == 1;
    for (uint64_t b = 0; b < x.blocks; ++b)
      for (int64_t n = n0; n < (per_image ? n0 + 1 : n1); ++n)
        for (int64_t oy = 0; oy < OH; ++oy) {
          int64_t y0 = oy * st[0] - pad[0];
          Span sy = span(y0, k[0], H, pad[0], pad[1], dh);
          for (const Run& r : runs) {
            int64_t x0 = r.ox0 * st[1] - pad[2];
            int64_t cnt = std::max<int64_t>(0, sy.hi - sy.lo) * std::max<int64_t>(0, r.sx.hi - r.sx.lo);
            if (cnt == 0) throw CompileError(fmt::format("node '{}': a pooling window covers only padding", layer));
            std::vector<int64_t> window;
            for (int64_t dy = sy.lo; dy < sy.hi; ++dy)
              for (int64_t dx = r.sx.lo; dx < r.sx.hi; ++dx)
                window.push_back(((dy - sy.lo) * dh * W + (dx - r.sx.lo) * dw) * int64_t(px));
            std::string body = fmt::format("window=[{}] pool_stride={}", fmt::join(window, ", "),
                                           per_image ? uint64_t(H * W) * px : uint64_t(st[1]) * px);
            int64_t divisor = include_pad ? sy.padded * r.sx.padded : cnt;
            std::string p = new_param(maxp ? body : body + fmt::format(" scale=[{}]", 1.0 / double(divisor)));
            uint64_t src = x.base + b * x.block_bytes + uint64_t(((n - x_first) * H + y0 + sy.lo * dh) * W + x0 + r.sx.lo * dw) * px;
            uint64_t dst = y.base + b * y.block_bytes + uint64_t((n * OH + oy) * OW + r.ox0) * px;
            uint64_t rows = uint64_t(per_image ? N : r.ox1 - r.ox0);
            ops.push_back({fmt::format("  li r1, {} || li r2, {}\n  vec.{}pool dst=ub[r2+0] a=ub[r1+0] rows={} dt={} param={} "
                                       "flag={{flag}}\n",
                                       src, dst, maxp ? "max" : "avg", rows, dt_, p),
                           ceil_div(rows, std::max<uint32_t>(1, vc.sublanes)) * window.size() *
                               ceil_div(C_, std::max<uint32_t>(1, vc.lanes))});
          }
        }
    return ops;
  }

  void gen_pool(tpu::PoolOp op) {
    std::string layer = op.getLayer().str();
    tag(layer);
    if (auto it = fused_pools_.find(op.getOperation()); it != fused_pools_.end()) {
      add_bound(layer, 0, 0);  // done along the convolution that produces its input (gen_conv_packed)
      define(op.getOutput(), it->second);
      return;
    }
    const Act& x = act(op.getInput());
    Act y = new_act(shape_of(op.getOutput()), fmt::format("the output of '{}'", layer));
    for (auto& [text, occ] : pool_ops(op, x, y, 0, x.shape[0])) {
      code_ += text.replace(text.find("{flag}"), 6, "f20");
      code("  wait f20");
    }
    add_bound(layer, 0, 0);
    define(op.getOutput(), y);
  }

  // MaxPool's Indices in fp32 rows (exact integers below 2^24). Tap t = (i, j) of every
  // window is gathered from the input by vec.maxpool with a one-row window (strided rows),
  // its out-of-image positions left at -3e38. Pass 1: M = the maximum over taps. Pass 2:
  // best = min over taps of min((M - tap) * 2^200, 1) * 2^30 + off_t, so a tap equal to the
  // maximum offers its offset off_t = (i - pad_top) * W + (j - pad_left) and any other tap
  // at least 2^30 - 2^24; the smallest offset among equal maxima wins. Finally the index is
  // best + n*C*H*W + c*H*W + oh*sh*W + ow*sw: the row part loaded per output row into lane 0
  // and spread over the lanes by vec.rsum, the lane part c*H*W a per-lane bias.
  // storage_order 1 swaps the roles of H and W in the offsets.
  // The offer both index searches make (gen_argmax, gen_pool_argmax), in fp32 rows: v =
  // min((M - v) * 2^200, 1) * 2^30 + bias, so where v equals the maximum M it offers the
  // bias (an index: one value, or one per lane) and elsewhere at least 2^30 - 2^24. v and M
  // are operand addresses ("ub[rN+0]"); M - v is never negative.
  void index_offer(const std::string& v, const std::string& m, uint64_t rows, const std::string& bias) {
    std::string huge = new_param(fmt::format("scale=[{}]", std::ldexp(1.0, 100)));
    vec_wait(fmt::format("vec.sub dst={0} a={1} b={0} rows={2} dt=fp32", v, m, rows));
    vec_wait(fmt::format("vec.affine dst={0} a={0} rows={1} dt=fp32 param={2}", v, rows, huge));  // twice: 2^200
    vec_wait(fmt::format("vec.affine dst={0} a={0} rows={1} dt=fp32 param={2}", v, rows, huge));
    vec_wait(fmt::format("vec.clamp dst={0} a={0} rows={1} dt=fp32 param={2}", v, rows, clamp_param(0.0, 1.0)));
    vec_wait(fmt::format("vec.affine dst={0} a={0} rows={1} dt=fp32 param={2}", v, rows,
                         new_param(fmt::format("scale=[{}] bias=[{}]", std::ldexp(1.0, 30), bias))));
  }

  // ArgMax/ArgMin of each row, in fp32 rows: v = x (or -x for a minimum), padding lanes
  // -inf; M = the row maximum (vec.rmax per block, then the blocks' maximum); each lane
  // offers min((M - v) * 2^200, 1) * 2^30 + its index (K - 1 - index for the last of equal
  // values), so only lanes equal to the maximum offer their index, and the row minimum of
  // the offers (-rmax of their negation) is the answer. Row r's index is stored to HBM as
  // element r and loaded back as the output's int32 rows.
  void gen_argmax(tpu::ArgMaxOp op) {
    std::string layer = op.getLayer().str();
    tag(layer);
    const Act& x = act(op.getInput());
    uint64_t K = x.features, rows = x.rows, row32 = R_ * 4;
    if (K >= (uint64_t(1) << 24)) throw CompileError(fmt::format("node '{}': ArgMax over {} values exceeds 2^24", layer, K));
    Act v = fp32_twin(x, layer, "values", true, q8_ ? std::optional<double>(scale(op.getInput())) : std::nullopt);
    uint64_t span = align_up(rows * row32, 64);
    uint64_t work = ub_take(3 * span + x.blocks * row32, fmt::format("the fp32 work rows of '{}'", layer));
    uint64_t mx = work, tmp = work + span, best = work + 2 * span, masks = work + 3 * span;
    std::vector<uint8_t> mask(x.blocks * row32);
    for (uint64_t b = 0; b < x.blocks; ++b)
      for (uint64_t l = 0; l < R_; ++l) {
        float f = b * R_ + l < K ? 0.0f : -std::numeric_limits<float>::infinity();
        std::memcpy(&mask[b * row32 + l * 4], &f, 4);
      }
    {
      uint64_t n = mask.size(), hbm = hbm_const(std::move(mask));
      code(fmt::format("  dma.load desc={} src=r0 dst=r0 flag=f1", new_desc(fmt::format("bytes={} src_off={} dst_off={}", n, hbm, masks))));
      code("  wait f1");
    }
    std::string neg = new_param("scale=[-1]");
    auto blk = [&](uint64_t b) { return v.base + b * v.block_bytes; };
    for (uint64_t b = 0; b < x.blocks; ++b) {
      code(fmt::format("  li r1, {} || li r2, {}", blk(b), masks + b * row32));
      if (op.getMin()) vec_wait(fmt::format("vec.affine dst=ub[r1+0] a=ub[r1+0] rows={} dt=fp32 param={}", rows, neg));
      vec_wait(fmt::format("vec.add dst=ub[r1+0] a=ub[r1+0] b=ub[r2+0] rows={} dt=fp32 bcast=1", rows));
      code(fmt::format("  li r3, {} || li r4, {}", b == 0 ? mx : tmp, mx));
      vec_wait(fmt::format("vec.rmax dst=ub[r3+0] a=ub[r1+0] rows={} dt=fp32", rows));
      if (b) vec_wait(fmt::format("vec.max dst=ub[r4+0] a=ub[r4+0] b=ub[r3+0] rows={} dt=fp32", rows));
    }
    for (uint64_t b = 0; b < x.blocks; ++b) {
      std::vector<double> lane(R_);
      for (uint64_t l = 0; l < R_; ++l) {
        double idx = double(std::min<uint64_t>(b * R_ + l, K - 1));
        lane[l] = op.getLast() ? double(K - 1) - idx : idx;
      }
      code(fmt::format("  li r1, {} || li r4, {}", blk(b), mx));
      code(fmt::format("  li r3, {} || li r5, {}", b == 0 ? best : tmp, best));
      index_offer("ub[r1+0]", "ub[r4+0]", rows, fmt::format("{}", fmt::join(lane, ", ")));
      vec_wait(fmt::format("vec.affine dst=ub[r1+0] a=ub[r1+0] rows={} dt=fp32 param={}", rows, neg));
      vec_wait(fmt::format("vec.rmax dst=ub[r3+0] a=ub[r1+0] rows={} dt=fp32", rows));  // -(row minimum)
      if (b) vec_wait(fmt::format("vec.max dst=ub[r5+0] a=ub[r5+0] b=ub[r3+0] rows={} dt=fp32", rows));
    }
    // best = -(index), or -(K - 1 - index) for the last of equal values.
    std::string back = op.getLast() ? new_param(fmt::format("scale=[1] bias=[{}]", double(K - 1))) : neg;
    code(fmt::format("  li r5, {}", best));
    vec_wait(fmt::format("vec.affine dst=ub[r5+0] a=ub[r5+0] rows={} dt=fp32 param={}", rows, back));
    vec_wait(fmt::format("vec.cvt dst=ub[r5+0] a=ub[r5+0] rows={} dt=fp32 odt=int32", rows));
    uint64_t hbm = hbm_alloc(rows * 4);
    std::string d = new_desc(fmt::format("bytes=4 src_off={} dst_off={} dim=[{}, {}, 4]", best, hbm, rows, row32));
    code(fmt::format("  dma.store desc={} src=r0 dst=r0 flag=f1", d));
    code("  wait f1");
    auto ys = shape_of(op.getOutput());
    if (ys.empty()) ys = {1};  // a scalar: one row of one
    Act y = int32_act(ys, fmt::format("the output of '{}'", layer));
    load_rows(y, hbm, 4);
    ub_.release(work);
    ub_.release(v.base);
    add_bound(layer, 0, 0);
    define(op.getOutput(), y);
  }

  void gen_pool_argmax(tpu::PoolArgmaxOp op) {
    std::string layer = op.getLayer().str();
    tag(layer);
    const Act& x = act(op.getInput());
    auto zs = shape_of(op.getOutput());
    int64_t N = x.shape[0], H = x.shape[1], W = x.shape[2], C = x.shape[3], OH = zs[1], OW = zs[2];
    auto k = op.getKernel(), st = op.getStride(), pad = op.getPad();
    bool column_major = op.getStorageOrder() == 1;
    Act z = int32_act(zs, fmt::format("the output of '{}'", layer));
    Act X = fp32_twin(x, layer, "input", true, q8_ ? std::optional<double>(scale(op.getInput())) : std::nullopt);
    Act M = fp32_twin(z, layer, "maximum", false), T = fp32_twin(z, layer, "tap", false), B = fp32_twin(z, layer, "best", false);
    uint64_t row32 = R_ * 4, rows = z.rows;
    std::string fill_low = new_param("scale=[0] bias=[-3e38]"), fill_high = new_param("scale=[0] bias=[3e38]"),
                gather = new_param(fmt::format("window=[0] pool_stride={}", uint64_t(st[1]) * row32));
    auto at = [&](const Act& a, uint64_t b, uint64_t row) { return a.base + b * a.block_bytes + row * row32; };
    // T = tap (i, j) of every window, block b.
    auto gather_tap = [&](uint64_t b, int64_t i, int64_t j) {
      vec_wait(fmt::format("vec.affine dst=ub[{0}] a=ub[{0}] rows={1} dt=fp32 param={2}", addr_ref(at(T, b, 0), 1), rows, fill_low));
      int64_t lo = std::max<int64_t>(0, (pad[2] - j + st[1] - 1) / st[1]);
      int64_t hi = std::min<int64_t>(OW, (W - 1 + pad[2] - j) / st[1] + 1);
      if (W - 1 + pad[2] - j < 0 || lo >= hi) return;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t oh = 0; oh < OH; ++oh) {
          int64_t h = oh * st[0] + i - pad[0];
          if (h < 0 || h >= H) continue;
          uint64_t src = at(X, b, uint64_t((n * H + h) * W + lo * st[1] + j - pad[2])), dst = at(T, b, uint64_t((n * OH + oh) * OW + lo));
          code(fmt::format("  li r1, {} || li r2, {}", src, dst));
          vec_wait(fmt::format("vec.maxpool dst=ub[r2+0] a=ub[r1+0] rows={} dt=fp32 param={}", hi - lo, gather));
        }
    };
    for (uint64_t b = 0; b < z.blocks; ++b) {
      code(fmt::format("  li r3, {} || li r4, {}", at(M, b, 0), at(T, b, 0)));
      code(fmt::format("  li r5, {}", at(B, b, 0)));
      vec_wait(fmt::format("vec.affine dst=ub[r3+0] a=ub[r3+0] rows={} dt=fp32 param={}", rows, fill_low));
      for (int64_t i = 0; i < k[0]; ++i)
        for (int64_t j = 0; j < k[1]; ++j) {
          gather_tap(b, i, j);
          vec_wait(fmt::format("vec.max dst=ub[r3+0] a=ub[r3+0] b=ub[r4+0] rows={} dt=fp32", rows));
        }
      vec_wait(fmt::format("vec.affine dst=ub[r5+0] a=ub[r5+0] rows={} dt=fp32 param={}", rows, fill_high));
      for (int64_t i = 0; i < k[0]; ++i)
        for (int64_t j = 0; j < k[1]; ++j) {
          gather_tap(b, i, j);
          int64_t off = column_major ? (j - pad[2]) * H + (i - pad[0]) : (i - pad[0]) * W + (j - pad[2]);
          index_offer("ub[r4+0]", "ub[r3+0]", rows, std::to_string(off));
          vec_wait(fmt::format("vec.min dst=ub[r5+0] a=ub[r5+0] b=ub[r4+0] rows={} dt=fp32", rows));
        }
    }
    // The row part of each output row's index, spread over the lanes (into T, block 0).
    std::vector<uint8_t> row_part(rows * 4);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          float v = float(n * C * H * W + (column_major ? ow * st[1] * H + oh * st[0] : oh * st[0] * W + ow * st[1]));
          std::memcpy(&row_part[size_t((n * OH + oh) * OW + ow) * 4], &v, 4);
        }
    clear(T.base, T.block_bytes);
    std::string d = new_desc(fmt::format("bytes=4 src_off={} dst_off={} dim=[{}, 4, {}]", hbm_const(std::move(row_part)), T.base, rows, row32));
    code(fmt::format("  dma.load desc={} src=r0 dst=r0 flag=f1", d));
    code("  wait f1");
    code(fmt::format("  li r4, {}", T.base));
    vec_wait(fmt::format("vec.rsum dst=ub[r4+0] a=ub[r4+0] rows={} dt=fp32 odt=fp32", rows));
    for (uint64_t b = 0; b < z.blocks; ++b) {
      std::vector<double> lane(R_);
      for (uint64_t l = 0; l < R_; ++l) lane[l] = double(std::min<uint64_t>(b * R_ + l, uint64_t(C - 1)) * uint64_t(H * W));
      code(fmt::format("  li r5, {} || li r6, {}", at(B, b, 0), z.base + b * z.block_bytes));
      vec_wait(fmt::format("vec.add dst=ub[r5+0] a=ub[r5+0] b=ub[r4+0] rows={} dt=fp32", rows));
      vec_wait(fmt::format("vec.affine dst=ub[r5+0] a=ub[r5+0] rows={} dt=fp32 param={}", rows,
                           new_param(fmt::format("scale=[1] bias=[{}]", fmt::join(lane, ", ")))));
      vec_wait(fmt::format("vec.cvt dst=ub[r6+0] a=ub[r5+0] rows={} dt=fp32 odt=int32", rows));
    }
    for (const Act* t : {&X, &M, &T, &B}) ub_.release(t->base);
    add_bound(layer, 0, 0);
    define(op.getOutput(), z);
  }


  // INT8 y = a <kind> b through fp32 rows, each operand rescaled to the output's scale
  // (params pa, pb) and the result rounded once: for operands whose range exceeds the
  // output's, which int8 rescaling would saturate before the op. Registers: r1 = a, r2 = b,
  // r3 = y, r4 and r5 = fp32 temporaries of `rows` rows.
  void int8_in_fp32(const std::string& kind, uint64_t rows, const std::string& pa, const std::string& pb) {
    vec_wait(fmt::format("vec.cvt dst=ub[r4+0] a=ub[r1+0] rows={} dt=int8 odt=fp32", rows));
    vec_wait(fmt::format("vec.affine dst=ub[r4+0] a=ub[r4+0] rows={} dt=fp32 param={}", rows, pa));
    vec_wait(fmt::format("vec.cvt dst=ub[r5+0] a=ub[r2+0] rows={} dt=int8 odt=fp32", rows));
    vec_wait(fmt::format("vec.affine dst=ub[r5+0] a=ub[r5+0] rows={} dt=fp32 param={}", rows, pb));
    vec_wait(fmt::format("vec.{} dst=ub[r4+0] a=ub[r4+0] b=ub[r5+0] rows={} dt=fp32", kind, rows));
    vec_wait(fmt::format("vec.cvt dst=ub[r3+0] a=ub[r4+0] rows={} dt=fp32 odt=int8", rows));
  }

  void gen_add(tpu::AddOp op) {
    std::string layer = op.getLayer().str();
    tag(layer);
    if (auto it = fused_adds_.find(op.getOperation()); it != fused_adds_.end()) {
      add_bound(layer, 0, 0);  // done in the convolution's epilogue (fusable_add)
      define(op.getOutput(), it->second);
      return;
    }
    const Act& a = act(op.getLhs());
    const Act& b = act(op.getRhs());
    Act y = out_in_place(op.getOutput(), {op.getLhs(), op.getRhs()}, layer);
    double lo = op.getClampMin().convertToDouble(), hi = op.getClampMax().convertToDouble();
    double sy = q8_ ? scale(op.getOutput()) : 1.0;
    std::string cp = q8_ ? clamp_param(std::isinf(lo) ? lo : std::ceil(lo / sy), std::isinf(hi) ? hi : std::floor(hi / sy))
                         : clamp_param(lo, hi);
    // INT8: bring both operands to the output scale first (one rounding each), then add:
    // b's rescaled rows into a temporary first (y may be b's own buffer), a's into y, y += it.
    // When an operand's range exceeds the output's (terms that cancel), that would saturate
    // it before the sum: then the sum is taken in fp32 rows and rounded once. Temporaries
    // cover a chunk of rows at a time.
    std::string pa, pb;
    bool wide = q8_ && (scale(op.getLhs()) > sy || scale(op.getRhs()) > sy);
    uint64_t row_tmp = wide ? C_ * 4 : R_ * esz_, cr = std::min<uint64_t>(y.rows, std::max<uint64_t>(1, (1u << 20) / row_tmp));
    uint64_t tmp = 0, tmp_bytes = align_up(cr * row_tmp, 64);
    // vec.add reads y and the rescaled b together: the temporary starts one unified-buffer
    // bank after y's rows (mod the banks' period), so the two reads never share a bank.
    const auto& ubc = cfg_.core.unified_buffer;
    uint64_t period = ubc.banks > 1 ? uint64_t(ubc.banks) * ubc.row_bytes : 0;
    if (q8_) {
      pa = new_param(fmt::format("scale=[{}]", double(scale(op.getLhs())) / sy));
      pb = new_param(fmt::format("scale=[{}]", double(scale(op.getRhs())) / sy));
      tmp = ub_take((wide ? 2 : 1) * tmp_bytes + (wide ? 0 : period), fmt::format("the rescaled operands of '{}'", layer));
    }
    uint64_t rowb = R_ * esz_;
    for (uint64_t blk = 0; blk < y.blocks; ++blk)
      for (uint64_t r0 = 0; r0 < y.rows; r0 += (q8_ ? cr : y.rows)) {
        uint64_t n = q8_ ? std::min(cr, y.rows - r0) : y.rows;
        uint64_t ya = y.base + blk * y.block_bytes + r0 * rowb, aa = a.base + blk * a.block_bytes + r0 * rowb,
                 ba = b.base + blk * b.block_bytes + r0 * rowb;
        uint64_t tb = tmp;
        if (q8_ && !wide && period) tb += (ya + ubc.row_bytes + period - tmp % period) % period;
        code(fmt::format("  li r1, {} || li r2, {}", aa, ba));
        code(fmt::format("  li r3, {} || li r4, {}", ya, tb));
        if (wide) {
          code(fmt::format("  li r5, {}", tmp + tmp_bytes));
          int8_in_fp32("add", n, pa, pb);
        } else if (q8_) {
          vec_wait(fmt::format("vec.affine dst=ub[r4+0] a=ub[r2+0] rows={} dt=int8 param={}", n, pb));
          vec_wait(fmt::format("vec.affine dst=ub[r3+0] a=ub[r1+0] rows={} dt=int8 param={}", n, pa));
          vec_wait(fmt::format("vec.add dst=ub[r3+0] a=ub[r3+0] b=ub[r4+0] rows={} dt=int8", n));
        } else {
          vec_wait(fmt::format("vec.add dst=ub[r3+0] a=ub[r1+0] b=ub[r2+0] rows={} dt={}", n, dt_));
        }
        if (!cp.empty()) vec_wait(fmt::format("vec.clamp dst=ub[r3+0] a=ub[r3+0] rows={} dt={} param={}", n, dt_, cp));
      }
    if (q8_) ub_.release(tmp);
    add_bound(layer, 0, 0);
    define(op.getOutput(), y);
  }

  // Rows of the output copied from the input's rows by DMA inside the unified buffer: a run
  // of output rows reads either consecutive input rows (one contiguous copy) or the same row
  // again (a copy with source stride 0). Lanes never move, so each block is copied alike.
  void gen_broadcast(tpu::BroadcastOp op) {
    std::string layer = op.getLayer().str();
    tag(layer);
    const Act& x = act(op.getInput());
    auto ys = shape_of(op.getOutput());
    Act y = new_act(ys, fmt::format("the output of '{}'", layer));
    struct Run {
      uint64_t dst, src, count;
      int64_t step;
    };
    std::vector<Run> runs;
    size_t nd = ys.size() - 1;  // row dimensions
    for (uint64_t r = 0; r < y.rows; ++r) {
      uint64_t rem = r, src = 0, stride = 1;
      for (size_t d = nd; d-- > 0;) {
        uint64_t idx = rem % uint64_t(ys[d]);
        rem /= uint64_t(ys[d]);
        if (x.shape[d] != 1) src += idx * stride;
        stride *= uint64_t(x.shape[d]);
      }
      if (!runs.empty()) {
        Run& b = runs.back();
        if (b.count == 1 && (src == b.src || src == b.src + 1)) {
          b.step = int64_t(src - b.src), b.count = 2;
          continue;
        }
        if (b.count > 1 && int64_t(src) == int64_t(b.src) + b.step * int64_t(b.count)) {
          ++b.count;
          continue;
        }
      }
      runs.push_back({r, src, 1, 1});
    }
    uint64_t rowb = R_ * esz_;
    for (uint64_t blk = 0; blk < y.blocks; ++blk)
      for (const Run& run : runs) {
        uint64_t so = x.base + blk * x.block_bytes + run.src * rowb, dof = y.base + blk * y.block_bytes + run.dst * rowb;
        ub_copy(so, dof, run.step == 1 ? fmt::format("bytes={}", run.count * rowb)
                                       : fmt::format("bytes={} dim=[{}, 0, {}]", rowb, run.count, rowb));
      }
    add_bound(layer, 0, 0);
    define(op.getOutput(), y);
  }

  // Slice by unified-buffer DMA: runs of output rows read consecutive input rows; whole rows
  // when the lanes are kept, else lane columns of fp32 copies (as in gen_concat).
  void gen_slice(tpu::SliceOp op) {
    std::string layer = op.getLayer().str();
    tag(layer);
    const Act& x = act(op.getInput());
    auto ys = shape_of(op.getOutput());
    auto start = op.getStart();
    Act y = new_act(ys, fmt::format("the output of '{}'", layer));
    size_t r = ys.size();
    struct Run {
      uint64_t dst, src, count;
    };
    std::vector<Run> runs;
    for (uint64_t row = 0; row < y.rows; ++row) {
      uint64_t rem = row, src = 0, stride = 1;
      for (size_t d = r - 1; d-- > 0;) {
        uint64_t idx = rem % uint64_t(ys[d]) + uint64_t(start[d]);
        rem /= uint64_t(ys[d]);
        src += idx * stride;
        stride *= uint64_t(x.shape[d]);
      }
      if (!runs.empty() && runs.back().src + runs.back().count == src) ++runs.back().count;
      else runs.push_back({row, src, 1});
    }
    uint64_t lane0 = uint64_t(start[r - 1]);
    if (lane0 == 0 && y.features == x.features) {
      uint64_t rowb = R_ * esz_;
      for (uint64_t blk = 0; blk < y.blocks; ++blk)
        for (const Run& run : runs)
          ub_copy(x.base + blk * x.block_bytes + run.src * rowb, y.base + blk * y.block_bytes + run.dst * rowb,
                  fmt::format("bytes={}", run.count * rowb));
    } else {
      require_fp32_lane_moves(layer, "a Slice of the last dimension copies");
      Act xt = fp32_twin(x, layer, "slice copies", true), yt = fp32_twin(y, layer, "slice copies", false);
      uint64_t rowb4 = R_ * 4;
      for (const Run& run : runs)
        for (uint64_t c = 0; c < y.features; ++c) {
          uint64_t sc = lane0 + c;
          ub_copy(xt.base + (sc / R_) * xt.block_bytes + run.src * rowb4 + (sc % R_) * 4,
                  yt.base + (c / R_) * yt.block_bytes + run.dst * rowb4 + (c % R_) * 4,
                  fmt::format("bytes=4 dim=[{}, {}, {}]", run.count, rowb4, rowb4));
        }
      ub_.release(xt.base);
      from_fp32_twin(yt, y);
    }
    add_bound(layer, 0, 0);
    define(op.getOutput(), y);
  }

  // Concat by unified-buffer DMA. Along a row dimension each input lands as runs of whole
  // rows; along the lanes, whole lane blocks when every input fills its blocks, else lane
  // columns of fp32 copies (DMA rows start on unified-buffer words). INT8 inputs are first
  // rescaled to the output's scale.
  void gen_concat(tpu::ConcatOp op) {
    std::string layer = op.getLayer().str();
    tag(layer);
    auto ys = shape_of(op.getOutput());
    Act y = new_act(ys, fmt::format("the output of '{}'", layer));
    size_t r = ys.size(), axis = size_t(op.getAxis());
    bool lanes = axis == r - 1;
    bool blockwise = true;
    for (Value v : op.getInputs()) blockwise &= act(v).features % R_ == 0;
    bool columns = lanes && !blockwise;
    if (columns) require_fp32_lane_moves(layer, "a Concat along unaligned lanes copies");
    uint64_t rowb = R_ * esz_, rowb4 = R_ * 4;
    Act yt = columns ? fp32_twin(y, layer, "concat copy", false) : y;
    uint64_t outer = 1, inner = 1;  // row counts around the axis (row dimensions only)
    for (size_t d = 0; d < axis && d + 1 < r; ++d) outer *= uint64_t(ys[d]);
    for (size_t d = axis + 1; d + 1 < r; ++d) inner *= uint64_t(ys[d]);
    uint64_t off = 0;
    for (Value v : op.getInputs()) {
      Act x = act(v);
      uint64_t xtmp = 0;
      double rs = q8_ ? double(scale(v)) / double(scale(op.getOutput())) : 1.0;
      if (columns) {  // fp32 copy of the input, rescaled for INT8
        Act xt = fp32_twin(x, layer, "concat copy", true, q8_ ? std::optional<double>(rs) : std::nullopt);
        for (uint64_t c = 0; c < x.features; ++c) {
          uint64_t dc = off + c;
          ub_copy(xt.base + (c / R_) * xt.block_bytes + (c % R_) * 4, yt.base + (dc / R_) * yt.block_bytes + (dc % R_) * 4,
                  fmt::format("bytes=4 dim=[{}, {}, {}]", y.rows, rowb4, rowb4));
        }
        ub_.release(xt.base);
        off += x.features;
        continue;
      }
      if (q8_ && rs != 1.0) {  // rescale into a temporary with the input's layout
        std::optional<uint64_t> t = ub_take(x.bytes(), fmt::format("a rescaled input of '{}'", layer));
        std::string p = new_param(fmt::format("scale=[{}]", rs));
        for (uint64_t blk = 0; blk < x.blocks; ++blk) {
          code(fmt::format("  li r1, {} || li r2, {}", x.base + blk * x.block_bytes, *t + blk * x.block_bytes));
          vec_wait(fmt::format("vec.affine dst=ub[r2+0] a=ub[r1+0] rows={} dt=int8 param={}", x.rows, p));
        }
        xtmp = *t;
        x.base = *t;
      }
      if (lanes) {  // whole lane blocks
        for (uint64_t blk = 0; blk < x.blocks; ++blk)
          ub_copy(x.base + blk * x.block_bytes, y.base + (off / R_ + blk) * y.block_bytes, fmt::format("bytes={}", x.rows * rowb));
        off += x.features;
      } else {  // runs of rows: `outer` runs of this input's rows, placed after the earlier inputs'
        uint64_t chunk = uint64_t(x.shape[axis]) * inner, out_chunk = uint64_t(ys[axis]) * inner;
        for (uint64_t blk = 0; blk < y.blocks; ++blk)
          ub_copy(x.base + blk * x.block_bytes, y.base + blk * y.block_bytes + off * inner * rowb,
                  fmt::format("bytes={} dim=[{}, {}, {}]", chunk * rowb, outer, chunk * rowb, out_chunk * rowb));
        off += uint64_t(x.shape[axis]);
      }
      if (xtmp) ub_.release(xtmp);
    }
    if (columns) from_fp32_twin(yt, y);
    add_bound(layer, 0, 0);
    define(op.getOutput(), y);
  }

  // A layout change by unified-buffer DMA. For each output row and lane block: if the lanes
  // stay the lanes, one contiguous copy; otherwise the lanes gather one input lane from
  // rows a fixed stride apart. DMA rows must start on unified-buffer words, so a gather
  // moves fp32 copies (4-byte elements), converted exactly from and back to int8/bf16.
  // Attention's head merge, [B, H, S, d] -> [B, S, H, d] (this transpose) -> [B, S, H * d]
  // (its only consumer, a reshape): one pass of copies straight into the merged layout, a
  // copy per head moving its d lanes of every row of every batch element, instead of a
  // transpose's copies and then the reshape's. Needs heads that start on unified-buffer
  // words and never straddle lane blocks.
  bool merge_heads(tpu::TransposeOp op) {
    auto perm = op.getPerm();
    auto xs = shape_of(op.getInput());
    if (xs.size() != 4 || perm.size() != 4 || perm[0] != 0 || perm[1] != 2 || perm[2] != 1 || perm[3] != 3) return false;
    if (!op.getOutput().hasOneUse()) return false;
    auto r = mlir::dyn_cast<tpu::ReshapeOp>(*op.getOutput().getUsers().begin());
    if (!r) return false;
    auto ms = shape_of(r.getOutput());
    uint64_t B = uint64_t(xs[0]), H = uint64_t(xs[1]), S = uint64_t(xs[2]), d = uint64_t(xs[3]);
    if (ms.size() != 3 || uint64_t(ms[0]) != B || uint64_t(ms[1]) != S || uint64_t(ms[2]) != H * d) return false;
    uint64_t align = cfg_.core.unified_buffer.alignment_bytes;
    if (d % R_ != 0 && R_ % d != 0) return false;  // a head would straddle lane blocks
    for (uint64_t h = 0; h < H; ++h)
      if ((h * d % R_) * esz_ % align) return false;
    const Act& x = act(op.getInput());
    std::string layer = r.getLayer().str();
    tag(layer);
    Act y = new_act(ms, fmt::format("the output of '{}'", layer));
    if (y.features % R_) clear(y.base + (y.blocks - 1) * y.block_bytes, y.block_bytes);
    uint64_t row = R_ * esz_;
    for (uint64_t h = 0; h < H; ++h)
      for (uint64_t e0 = 0; e0 < d; e0 += std::min<uint64_t>(d, R_)) {
        uint64_t lane = h * d + e0, n = std::min<uint64_t>(d - e0, R_);
        // x row (b, h, s), lanes [e0, e0 + n) of block e0 / R -> y row (b, s), lanes from `lane`.
        uint64_t src = x.base + (e0 / R_) * x.block_bytes + h * S * row;
        uint64_t dst = y.base + (lane / R_) * y.block_bytes + (lane % R_) * esz_;
        ub_copy_async(src, dst, fmt::format("bytes={} dim=[{}, {}, {}] dim=[{}, {}, {}]", n * esz_, S, row, row, B, H * S * row, S * row));
      }
    copies_wait();
    define(r.getOutput(), y);
    deferred_.insert(r.getOperation());
    add_bound(layer, 0, 0);
    return true;
  }

  void gen_transpose(tpu::TransposeOp op) {
    if (merge_heads(op)) return;
    std::string layer = op.getLayer().str();
    tag(layer);
    const Act& x0 = act(op.getInput());
    auto ys = shape_of(op.getOutput());
    auto perm = op.getPerm();
    Act y0 = new_act(ys, fmt::format("the output of '{}'", layer));
    size_t r = ys.size();
    std::vector<uint64_t> row_stride(r, 0);  // input rows per step of each row dimension
    for (size_t d = r - 1, s = 1; d-- > 0;) row_stride[d] = s, s *= uint64_t(x0.shape[d]);
    size_t lane_src = size_t(perm[r - 1]);  // input dimension that becomes the lanes
    bool gather = lane_src != r - 1;
    uint64_t esz = gather ? 4 : esz_;
    // Gathers go through fp32 twins of input and output. When both would not fit the free
    // unified buffer at once and the leading dimension stays in place (attention's K^T
    // [B, H, S, d] -> [B, H, d, S]), they go a range of leading slices at a time.
    uint64_t nl = uint64_t(ys[0]), per_chunk = nl;
    if (gather && perm[0] == 0) {
      auto twin_bytes = [&](uint64_t c) {
        return x0.blocks * align_up(x0.rows / nl * c * R_ * 4, 64) + y0.blocks * align_up(y0.rows / nl * c * R_ * 4, 64);
      };
      while (per_chunk > 1 && twin_bytes(per_chunk) > ub_.largest_free()) per_chunk = (per_chunk + 1) / 2;
    }
    for (uint64_t l0 = 0; l0 < nl; l0 += per_chunk) {
      uint64_t nc = std::min(per_chunk, nl - l0);
      Act xv = x0, yv = y0;  // the chunk's leading slices (all of them unless chunked)
      if (nc < nl) {
        xv.rows = x0.rows / nl * nc, xv.base = x0.base + l0 * (x0.rows / nl) * R_ * esz_;
        yv.rows = y0.rows / nl * nc, yv.base = y0.base + l0 * (y0.rows / nl) * R_ * esz_;
      }
      ys[0] = int64_t(nc);
      Act x = xv, y = yv;
      if (gather) {
        require_fp32_lane_moves(layer, "a transpose that moves the last dimension gathers");
        x = fp32_twin(xv, layer, "transpose copies", true);
        y = fp32_twin(yv, layer, "transpose copies", false);
      }
      uint64_t rowb = R_ * esz;
      std::vector<uint64_t> o(r, 0);
      // Output rows go in runs along the innermost row dimension (r - 2): one copy moves a
      // run, its rows stepping through the input by a whole row stride, or (when that
      // dimension was the input's last) by one lane within a lane block.
      size_t inner = r - 2;
      bool lane_steps = size_t(perm[inner]) == r - 1;
      uint64_t inner_len = uint64_t(ys[inner]);
      if (!gather && r >= 3) {
        // Rows only move: a second dimension of runs, along the longest other row dimension,
        // so a head split or merge ([B, S, H, d] <-> [B, H, S, d]) is one copy per batch.
        size_t k2 = 0;
        for (size_t k = 0; k < inner; ++k)
          if (ys[k] > ys[k2]) k2 = k;
        uint64_t dst_k2 = rowb;
        for (size_t j = k2 + 1; j + 1 < r; ++j) dst_k2 *= uint64_t(ys[j]);
        std::string shape_tail = fmt::format(" dim=[{}, {}, {}] dim=[{}, {}, {}]", inner_len, row_stride[size_t(perm[inner])] * rowb,
                                             rowb, ys[k2], row_stride[size_t(perm[k2])] * rowb, dst_k2);
        for (uint64_t row = 0; row < y.rows; row += inner_len) {
          uint64_t rem = row;
          for (size_t k = r - 1; k-- > 0;) o[k] = rem % uint64_t(ys[k]), rem /= uint64_t(ys[k]);
          if (o[k2] != 0) continue;
          uint64_t in_row = 0;
          for (size_t k = 0; k + 1 < r; ++k) in_row += o[k] * row_stride[size_t(perm[k])];
          for (uint64_t blk = 0; blk < y.blocks; ++blk) {
            uint64_t cnt = std::min<uint64_t>(R_, y.features - blk * R_);
            ub_copy_async(x.base + blk * x.block_bytes + in_row * rowb, y.base + blk * y.block_bytes + row * rowb,
                          fmt::format("bytes={}{}", cnt * esz, shape_tail));
          }
        }
        copies_wait();
        add_bound(layer, 0, 0);
        define(op.getOutput(), y0);
        return;
      }
      for (uint64_t row = 0; row < y.rows;) {
        uint64_t rem = row;
        for (size_t k = r - 1; k-- > 0;) o[k] = rem % uint64_t(ys[k]), rem /= uint64_t(ys[k]);
        // The input element at output lane 0: input index i[perm[k]] = o[k].
        uint64_t in_row = 0, in_lane = 0;
        for (size_t k = 0; k + 1 < r; ++k) {
          if (size_t(perm[k]) == r - 1) in_lane = o[k];
          else in_row += o[k] * row_stride[size_t(perm[k])];
        }
        uint64_t run = inner_len - o[inner];
        if (lane_steps) run = std::min(run, R_ - in_lane % R_);
        uint64_t step = lane_steps ? esz : row_stride[size_t(perm[inner])] * rowb;
        for (uint64_t blk = 0; blk < y.blocks; ++blk) {
          uint64_t first = blk * R_, cnt = std::min<uint64_t>(R_, y.features - first);
          uint64_t dst = y.base + blk * y.block_bytes + row * rowb;
          std::string rows_dim = run > 1 ? fmt::format(" dim=[{}, {}, {}]", run, step, rowb) : "";
          if (!gather) {
            ub_copy_async(x.base + blk * x.block_bytes + in_row * rowb, dst, fmt::format("bytes={}{}", cnt * esz, rows_dim));
          } else {
            uint64_t src = x.base + (in_lane / R_) * x.block_bytes + (in_row + first * row_stride[lane_src]) * rowb +
                           (in_lane % R_) * esz;
            ub_copy_async(src, dst, fmt::format("bytes={} dim=[{}, {}, {}]{}", esz, cnt, row_stride[lane_src] * rowb, esz, rows_dim));
          }
        }
        row += run;
      }
      copies_wait();
      if (gather) {
        ub_.release(x.base);
        from_fp32_twin(y, yv);
      }
    }
    add_bound(layer, 0, 0);
    define(op.getOutput(), y0);
  }

  // bf16 runs vec.sub/mul/max/min directly. INT8 subtracts and compares like gen_add adds
  // (both operands rescaled to the output's scale first; rounding is monotonic, so max and
  // min commute with it) and multiplies in fp32 rows, since the product of two int8 codes
  // needs the combined scale s_a * s_b / s_y applied before requantizing.
  // ONNX integer Div, trunc(a / b), in fp32 rows: q = round(|a| * (1 / |b|)) (vec.recip is
  // correctly rounded, so q is within one of the quotient while the integers stay below
  // 2^22), corrected by one either way from the exact remainder |a| - q |b|, times the sign
  // of a * b. Division by zero is left to the arithmetic (ONNX leaves it undefined).
  void gen_int_div(tpu::BinaryOp op) {
    std::string layer = op.getLayer().str();
    tag(layer);
    const Act& a = act(op.getLhs());
    const Act& b = act(op.getRhs());
    Act y = new_act(shape_of(op.getOutput()), fmt::format("the output of '{}'", layer));
    auto sc = [&](Value v) { return q8_ ? std::optional<double>(scale(v)) : std::nullopt; };
    Act A = fp32_twin(a, layer, "dividend", true, sc(op.getLhs())), B = fp32_twin(b, layer, "divisor", true, sc(op.getRhs()));
    Act S = fp32_twin(a, layer, "sign", false), T = fp32_twin(a, layer, "quotient", false), U = fp32_twin(a, layer, "remainder", false);
    std::string neg = new_param("scale=[-1]"), unit = clamp_param(-1.0, 1.0), bit = clamp_param(0.0, 1.0),
                plus1 = new_param("scale=[1] bias=[1]");
    for (uint64_t blk = 0; blk < y.blocks; ++blk) {
      uint64_t o = blk * A.block_bytes;
      auto u = [&](const Act& t) { return fmt::format("ub[r0+{}]", t.base + o); };
      auto v = [&](const std::string& op_, const Act& d, const Act& x, const Act* z, const std::string& tail = "") {
        vec_wait(fmt::format("vec.{} dst={} a={}{} rows={} dt=fp32{}", op_, u(d), u(x), z ? " b=" + u(*z) : "", y.rows, tail));
      };
      v("mul", S, A, &B), v("clamp", S, S, nullptr, " param=" + unit);  // the sign of a * b
      v("affine", U, A, nullptr, " param=" + neg), v("max", A, A, &U);  // |a|
      v("affine", U, B, nullptr, " param=" + neg), v("max", B, B, &U);  // |b|
      v("recip", T, B, nullptr), v("mul", T, T, &A);
      vec_wait(fmt::format("vec.cvt dst={0} a={0} rows={1} dt=fp32 odt=int32", u(T), y.rows));  // round half to even
      vec_wait(fmt::format("vec.cvt dst={0} a={0} rows={1} dt=int32 odt=fp32", u(T), y.rows));
      v("mul", U, T, &B), v("sub", U, A, &U);  // the remainder |a| - q |b|
      v("affine", A, U, nullptr, " param=" + neg), v("clamp", A, A, nullptr, " param=" + bit), v("sub", T, T, &A);  // q -= (r < 0)
      v("sub", U, U, &B), v("affine", U, U, nullptr, " param=" + plus1), v("clamp", U, U, nullptr, " param=" + bit);
      v("add", T, T, &U);  // q += (r >= |b|)
      v("mul", T, T, &S);
      if (q8_) v("affine", T, T, nullptr, " param=" + new_param(fmt::format("scale=[{}]", 1.0 / double(scale(op.getOutput())))));
    }
    from_fp32_twin(T, y);
    for (const Act* t : {&A, &B, &S, &U}) ub_.release(t->base);
    add_bound(layer, 0, 0);
    define(op.getOutput(), y);
  }

  void gen_binary(tpu::BinaryOp op) {
    std::string layer = op.getLayer().str();
    if (op.getKind() == "div") return gen_int_div(op);
    tag(layer);
    const Act& a = act(op.getLhs());
    const Act& b = act(op.getRhs());
    Act y = out_in_place(op.getOutput(), {op.getLhs(), op.getRhs()}, layer);
    // sub, max, min: both rescaled to the output's scale, then one int8 op. Saturating an
    // operand first is harmless for max and min (monotonic) but not for a difference of
    // terms that cancel: such a sub goes through fp32 rows like mul.
    bool rescale_both = op.getKind() != "mul";
    if (q8_ && op.getKind() == "sub" &&
        (scale(op.getLhs()) > scale(op.getOutput()) || scale(op.getRhs()) > scale(op.getOutput())))
      rescale_both = false;
    uint64_t tmp = 0, tmp_bytes = 0;
    std::string pa, pb;
    if (q8_) {
      double sa = scale(op.getLhs()), sb = scale(op.getRhs()), sy = scale(op.getOutput());
      tmp_bytes = rescale_both ? y.block_bytes : y.rows * C_ * 4;
      tmp = ub_take(2 * tmp_bytes, fmt::format("the rescaled operands of '{}'", layer));
      bool mul = op.getKind() == "mul";
      pa = new_param(fmt::format("scale=[{}]", mul ? sa * sb / sy : sa / sy));
      if (!mul) pb = new_param(fmt::format("scale=[{}]", sb / sy));
    }
    for (uint64_t blk = 0; blk < y.blocks; ++blk) {
      uint64_t ya = y.base + blk * y.block_bytes, aa = a.base + blk * a.block_bytes, ba = b.base + blk * b.block_bytes;
      code(fmt::format("  li r1, {} || li r2, {}", aa, ba));
      code(fmt::format("  li r3, {} || li r4, {}", ya, tmp));
      code(fmt::format("  li r5, {}", tmp + tmp_bytes));
      if (!q8_) {
        vec_wait(fmt::format("vec.{} dst=ub[r3+0] a=ub[r1+0] b=ub[r2+0] rows={} dt={}", op.getKind().str(), y.rows, dt_));
      } else if (rescale_both) {
        vec_wait(fmt::format("vec.affine dst=ub[r4+0] a=ub[r1+0] rows={} dt=int8 param={}", y.rows, pa));
        vec_wait(fmt::format("vec.affine dst=ub[r5+0] a=ub[r2+0] rows={} dt=int8 param={}", y.rows, pb));
        vec_wait(fmt::format("vec.{} dst=ub[r3+0] a=ub[r4+0] b=ub[r5+0] rows={} dt=int8", op.getKind().str(), y.rows));
      } else if (op.getKind() == "mul") {
        vec_wait(fmt::format("vec.cvt dst=ub[r4+0] a=ub[r1+0] rows={} dt=int8 odt=fp32", y.rows));
        vec_wait(fmt::format("vec.cvt dst=ub[r5+0] a=ub[r2+0] rows={} dt=int8 odt=fp32", y.rows));
        vec_wait(fmt::format("vec.mul dst=ub[r4+0] a=ub[r4+0] b=ub[r5+0] rows={} dt=fp32", y.rows));
        vec_wait(fmt::format("vec.affine dst=ub[r4+0] a=ub[r4+0] rows={} dt=fp32 param={}", y.rows, pa));
        vec_wait(fmt::format("vec.cvt dst=ub[r3+0] a=ub[r4+0] rows={} dt=fp32 odt=int8", y.rows));
      } else {  // a sub whose operands exceed the output's range: in fp32, rounded once
        int8_in_fp32(op.getKind().str(), y.rows, pa, pb);
      }
    }
    if (q8_) ub_.release(tmp);
    add_bound(layer, 0, 0);
    define(op.getOutput(), y);
  }

  // Table functions run on bf16 or fp32; INT8 goes through fp32 rows (dequantize, function,
  // requantize to the output's scale).
  void gen_unary(tpu::UnaryOp op) {
    std::string layer = op.getLayer().str();
    tag(layer);
    const Act& x = act(op.getInput());
    Act y = out_in_place(op.getOutput(), {op.getInput()}, layer);
    std::string fn = op.getFn().str();
    uint64_t tmp = 0;
    std::string in_s, out_s;
    if (q8_) {
      tmp = ub_take(x.rows * C_ * 4, fmt::format("the fp32 work rows of '{}'", layer));
      in_s = new_param(fmt::format("scale=[{}]", double(scale(op.getInput()))));
      out_s = new_param(fmt::format("scale=[{}]", 1.0 / double(scale(op.getOutput()))));
    }
    for (uint64_t blk = 0; blk < y.blocks; ++blk) {
      code(fmt::format("  li r1, {} || li r2, {}", x.base + blk * x.block_bytes, y.base + blk * y.block_bytes));
      if (!q8_) {
        vec_wait(fmt::format("vec.{} dst=ub[r2+0] a=ub[r1+0] rows={} dt=bf16", fn, y.rows));
        continue;
      }
      code(fmt::format("  li r3, {}", tmp));
      vec_wait(fmt::format("vec.cvt dst=ub[r3+0] a=ub[r1+0] rows={} dt=int8 odt=fp32", y.rows));
      vec_wait(fmt::format("vec.affine dst=ub[r3+0] a=ub[r3+0] rows={} dt=fp32 param={}", y.rows, in_s));
      vec_wait(fmt::format("vec.{} dst=ub[r3+0] a=ub[r3+0] rows={} dt=fp32", fn, y.rows));
      vec_wait(fmt::format("vec.affine dst=ub[r3+0] a=ub[r3+0] rows={} dt=fp32 param={}", y.rows, out_s));
      vec_wait(fmt::format("vec.cvt dst=ub[r2+0] a=ub[r3+0] rows={} dt=fp32 odt=int8", y.rows));
    }
    if (q8_) ub_.release(tmp);
    add_bound(layer, 0, 0);
    define(op.getOutput(), y);
  }

  // The lane constants of lane block `blk` of a per-channel affine step.
  std::string affine_param(const std::vector<float>& sc, const std::vector<float>& bi, uint64_t blk, double sx, double sy) {
    std::vector<double> s2, b2;
    for (uint64_t c = 0; c < C_; ++c) {
      uint64_t ch = blk * C_ + c;
      s2.push_back(ch < sc.size() ? sc[ch] * sx / sy : 0.0);
      b2.push_back(ch < bi.size() ? bi[ch] / sy : 0.0);
    }
    return new_param(fmt::format("scale=[{}] bias=[{}]", fmt::join(s2, ", "), fmt::join(b2, ", ")));
  }

  void gen_affine(tpu::AffineOp op) {
    std::string layer = op.getLayer().str();
    if (folded_scales_.count(op.getOperation())) {  // applied to the queries (attention_scale)
      Act y = act(op.getInput());
      y.shape = shape_of(op.getOutput());
      define(op.getOutput(), y);
      return;
    }
    tag(layer);
    const Act& x = act(op.getInput());
    Act y = out_in_place(op.getOutput(), {op.getInput()}, layer);
    auto sc = const_floats(op.getScale(), layer), bi = const_floats(op.getBias(), layer);
    // INT8: y_q = (x_q * s_x * scale + bias) / s_y, folded into the lane constants.
    double sx = q8_ ? scale(op.getInput()) : 1.0, sy = q8_ ? scale(op.getOutput()) : 1.0;
    for (uint64_t blk = 0; blk < y.blocks; ++blk) {
      std::string p = affine_param(sc, bi, blk, sx, sy);
      code(fmt::format("  li r1, {} || li r2, {}", x.base + blk * x.block_bytes, y.base + blk * y.block_bytes));
      code(fmt::format("  vec.affine dst=ub[r2+0] a=ub[r1+0] rows={} dt={} param={} flag=f20", y.rows, dt_, p));
      code("  wait f20");
    }
    add_bound(layer, 0, 0);
    define(op.getOutput(), y);
  }

  void gen_clamp(tpu::ClampOp op) {
    std::string layer = op.getLayer().str();
    tag(layer);
    const Act& x = act(op.getInput());
    Act y = out_in_place(op.getOutput(), {op.getInput()}, layer);
    double lo = op.getClampMin().convertToDouble(), hi = op.getClampMax().convertToDouble();
    std::string cp;
    std::string rq;
    if (q8_) {
      // RESCALE from the input's scale to the output's, clamped to the bounds in output units.
      double sx = scale(op.getInput()), sy = scale(op.getOutput());
      auto [m, sh] = fixed_point(sx / sy);
      std::string body = fmt::format("mult=[{}] shift=[{}]", m, sh);
      if (!std::isinf(lo)) body += fmt::format(" min={}", std::max(-128.0, std::ceil(lo / sy)));
      if (!std::isinf(hi)) body += fmt::format(" max={}", std::min(127.0, std::floor(hi / sy)));
      rq = new_param(body);
    } else {
      cp = clamp_param(lo, hi);
    }
    for (uint64_t blk = 0; blk < y.blocks; ++blk) {
      code(fmt::format("  li r1, {} || li r2, {}", x.base + blk * x.block_bytes, y.base + blk * y.block_bytes));
      if (q8_) code(fmt::format("  vec.rescale dst=ub[r2+0] a=ub[r1+0] rows={} dt=int8 odt=int8 param={} flag=f20", y.rows, rq));
      else if (cp.empty()) code(fmt::format("  vec.copy dst=ub[r2+0] a=ub[r1+0] rows={} dt=bf16 flag=f20", y.rows));
      else code(fmt::format("  vec.clamp dst=ub[r2+0] a=ub[r1+0] rows={} dt=bf16 param={} flag=f20", y.rows, cp));
      code("  wait f20");
    }
    add_bound(layer, 0, 0);
    define(op.getOutput(), y);
  }

  // The spread-out image of a transposed convolution: cleared, then each input image row
  // copied in one DMA whose destination steps `stride` pixels.
  void gen_zero_insert(tpu::ZeroInsertOp op) {
    std::string layer = op.getLayer().str();
    tag(layer);
    const Act& x = act(op.getInput());
    Act y = new_act(shape_of(op.getOutput()), fmt::format("the spread input of '{}'", layer));
    clear(y.base, y.bytes());
    uint64_t N = uint64_t(x.shape[0]), H = uint64_t(x.shape[1]), W = uint64_t(x.shape[2]);
    uint64_t OH = uint64_t(y.shape[1]), OW = uint64_t(y.shape[2]), px = R_ * esz_;
    auto st = op.getStride(), pd = op.getPad();
    std::string shape = W > 1 ? fmt::format("bytes={} dim=[{}, {}, {}]", px, W, px, uint64_t(st[1]) * px) : fmt::format("bytes={}", px);
    for (uint64_t b = 0; b < x.blocks; ++b)
      for (uint64_t n = 0; n < N; ++n)
        for (uint64_t iy = 0; iy < H; ++iy) {
          uint64_t src = x.base + b * x.block_bytes + (n * H + iy) * W * px;
          uint64_t dst = y.base + b * y.block_bytes + ((n * OH + uint64_t(pd[0]) + iy * uint64_t(st[0])) * OW + uint64_t(pd[2])) * px;
          ub_copy(src, dst, shape);
        }
    add_bound(layer, 0, 0);
    define(op.getOutput(), y);
  }

  // Nearest-neighbour resize as unified-buffer copies of pixel rows (R lanes each), per output
  // image row and lane block: runs of output pixels whose sources repeat (upsampling: source
  // step 0) or advance by one pixel, and the common integer upsampling (each source pixel f
  // times) as one two-level copy of the whole row.
  void gen_resize(tpu::ResizeNearestOp op) {
    std::string layer = op.getLayer().str();
    tag(layer);
    const Act& x = act(op.getInput());
    Act y = new_act(shape_of(op.getOutput()), fmt::format("the output of '{}'", layer));
    uint64_t N = uint64_t(x.shape[0]), H = uint64_t(x.shape[1]), W = uint64_t(x.shape[2]);
    uint64_t OH = uint64_t(y.shape[1]), OW = uint64_t(y.shape[2]), px = R_ * esz_;
    auto rows = op.getRows(), cols = op.getCols();
    // Integer upsampling of the row: cols[o] = o / f and OW = W * f.
    uint64_t f = OW % W == 0 ? OW / W : 0;
    for (uint64_t o = 0; f && o < OW; ++o)
      if (uint64_t(cols[o]) != o / f) f = 0;
    std::vector<std::pair<uint64_t, std::string>> runs;  // (first output pixel, copy shape)
    if (f) {
      runs.push_back({0, fmt::format("bytes={} dim=[{}, 0, {}] dim=[{}, {}, {}]", px, f, px, W, px, f * px)});
    } else {
      for (uint64_t o = 0; o < OW;) {
        uint64_t len = 1;
        int64_t step = o + 1 < OW ? cols[o + 1] - cols[o] : 0;
        if (step != 0 && step != 1) step = 0;
        while (o + len < OW && cols[o + len] - cols[o + len - 1] == step) ++len;
        runs.push_back({o, len > 1 ? fmt::format("bytes={} dim=[{}, {}, {}]", px, len, uint64_t(step) * px, px)
                                   : fmt::format("bytes={}", px)});
        o += len;
      }
    }
    for (uint64_t b = 0; b < x.blocks; ++b)
      for (uint64_t n = 0; n < N; ++n)
        for (uint64_t oy = 0; oy < OH; ++oy)
          for (const auto& [o, shape] : runs) {
            uint64_t src = x.base + b * x.block_bytes + ((n * H + uint64_t(rows[oy])) * W + uint64_t(cols[o])) * px;
            uint64_t dst = y.base + b * y.block_bytes + ((n * OH + oy) * OW + o) * px;
            ub_copy(src, dst, shape);
          }
    add_bound(layer, 0, 0);
    define(op.getOutput(), y);
  }

  // QuantizeLinear kept dequantized, in fp32 rows: x / s, clamp to the integer range, round
  // half to even (through int32), times s (INT8: straight into the output's scale; when
  // that is s, the int8 codes are the model's integers).
  void gen_fake_quant(tpu::FakeQuantOp op) {
    std::string layer = op.getLayer().str();
    tag(layer);
    const Act& x = act(op.getInput());
    Act y = new_act(shape_of(op.getOutput()), fmt::format("the output of '{}'", layer));
    double s = op.getScale().convertToDouble();
    std::optional<double> in_scale;
    if (q8_) in_scale = scale(op.getInput());
    Act t = fp32_twin(x, layer, "quantization rows", true, in_scale);
    std::string to_int = new_param(fmt::format("scale=[{}]", 1.0 / s));
    std::string range = new_param(fmt::format("min={} max={}", op.getLo().convertToDouble(), op.getHi().convertToDouble()));
    std::string back = new_param(fmt::format("scale=[{}]", q8_ ? s / double(scale(op.getOutput())) : s));
    for (uint64_t b = 0; b < t.blocks; ++b) {
      code(fmt::format("  li r1, {}", t.base + b * t.block_bytes));
      vec_wait(fmt::format("vec.affine dst=ub[r1+0] a=ub[r1+0] rows={} dt=fp32 param={}", t.rows, to_int));
      vec_wait(fmt::format("vec.clamp dst=ub[r1+0] a=ub[r1+0] rows={} dt=fp32 param={}", t.rows, range));
      vec_wait(fmt::format("vec.cvt dst=ub[r1+0] a=ub[r1+0] rows={} dt=fp32 odt=int32", t.rows));
      vec_wait(fmt::format("vec.cvt dst=ub[r1+0] a=ub[r1+0] rows={} dt=int32 odt=fp32", t.rows));
      vec_wait(fmt::format("vec.affine dst=ub[r1+0] a=ub[r1+0] rows={} dt=fp32 param={}", t.rows, back));
    }
    from_fp32_twin(t, y);
    add_bound(layer, 0, 0);
    define(op.getOutput(), y);
  }

  // A constant activation: its values (int8 in its calibrated scale, or bf16) row-major in
  // HBM, loaded into the blocked layout like a model input.
  void gen_constant(tpu::ConstantOp op) {
    std::string layer = op.getLayer().str();
    tag(layer);
    std::vector<float> v;
    for (float f : mlir::cast<mlir::DenseElementsAttr>(op.getValue()).getValues<float>()) v.push_back(f);
    std::vector<uint8_t> bytes(v.size() * esz_);
    double s = q8_ ? double(scale(op.getOutput())) : 1.0;
    for (size_t i = 0; i < v.size(); ++i) {
      if (q8_) {
        bytes[i] = uint8_t(int8_t(std::clamp<double>(std::nearbyint(v[i] / s), -128, 127)));
      } else {
        uint16_t h = bf16_of(v[i]);
        std::memcpy(&bytes[i * 2], &h, 2);
      }
    }
    Act a = new_act(shape_of(op.getOutput()), fmt::format("the constant of '{}'", layer));
    load_act(a, hbm_const(std::move(bytes)));
    add_bound(layer, 0, a.rows * a.features * esz_);
    define(op.getOutput(), a);
  }

  // Layer normalization in fp32 rows. The lane blocks are added up first and the sum takes
  // one vec.rsum (which fills every lane with its row's sum), so the mean and 1/std are whole
  // rows that subtract and multiply lane by lane; padding lanes are masked back to zero after
  // the mean is taken out so they do not count in the variance. The fp32 rows and the
  // statistics rows sit on unified-buffer rows whose banks differ, so a vector step that
  // reads values and a statistic does not read one bank twice. Operations on different
  // blocks are issued back to back; dependent ones wait.
  // Where gen_layernorm keeps its fp32 rows (one block of rows per lane block) and its
  // statistics rows: on unified-buffer rows whose banks none of the blocks use.
  struct LnLayout {
    uint64_t block_bytes = 0, stat_off[3] = {0, 0, 0}, mask_off = 0, total = 0;
  };
  LnLayout ln_layout(uint64_t rows, uint64_t blocks) const {
    const auto& ubc = cfg_.core.unified_buffer;
    uint64_t rb = ubc.row_bytes, banks = ubc.banks, row32 = C_ * 4;
    LnLayout l;
    l.block_bytes = align_up(rows * row32, rb);
    std::vector<bool> taken(banks, false);
    for (uint64_t b = 0; b < blocks; ++b) taken[(b * l.block_bytes / rb) % banks] = true;
    uint64_t at = blocks * l.block_bytes;
    for (int i = 0; i < 3; ++i) {
      for (uint64_t k = 0; k < banks && taken[(at / rb) % banks]; ++k) at += rb;
      taken[(at / rb) % banks] = true;
      l.stat_off[i] = at;
      at += l.block_bytes;
    }
    l.mask_off = at;
    l.total = at + row32 + rb;  // a row of room to align the start to a bank row
    return l;
  }
  // A bf16 layer norm of `out` (a matmul's output) plus a residual added in the matmul's
  // epilogues: its work rows are allocated now and each output block's epilogue converts
  // the block's rows to fp32 into them (the conversion the layer norm starts with), which
  // overlaps the matmuls instead of running after them. Returns the extra phase, or nothing.
  FusedPhases prepare_layernorm(Value out, const Act& y, tpu::LayerNormOp* prepared = nullptr) {
    if (q8_ || is_int32(out) || !out.hasOneUse()) return {};
    mlir::Operation* add = *out.getUsers().begin();
    if (!fused_.count(add) || !mlir::isa<tpu::AddOp>(add)) return {};
    Value v = through_row_reshapes(add->getResult(0));
    if (!v.hasOneUse()) return {};
    auto ln = mlir::dyn_cast<tpu::LayerNormOp>(*v.getUsers().begin());
    if (!ln || ln.getInput() != v) return {};
    LnLayout lay = ln_layout(y.rows, y.blocks);
    if (ub_.largest_free() < lay.total) return {};
    uint64_t work = ub_take(lay.total, fmt::format("the fp32 rows and statistics of '{}'", ln.getLayer().str()));
    ln_prepared_[ln.getOperation()] = work;
    if (prepared) *prepared = ln;
    uint64_t base = align_up(work, cfg_.core.unified_buffer.row_bytes), row32 = C_ * 4;
    return [this, y, base, lay, row32](uint64_t n, uint64_t off, uint64_t rows) {
      uint64_t src = y.base + n * y.block_bytes + off, dst = base + n * lay.block_bytes + off / (C_ * esz_) * row32;
      std::string pre, d = reg_ref(dst, 6, pre), a = reg_ref(src, 7, pre);
      return std::vector<std::string>{pre + fmt::format("  vec.cvt dst=ub[{}] a=ub[{}] rows={} dt=bf16 odt=fp32 flag={{flag}}\n", d, a, rows)};
    };
  }

  // Issues `steps` in order on f20 and waits for the last.
  void emit_steps(const std::vector<VecStep>& steps) {
    uint64_t in_flight = 0;
    for (const VecStep& st : steps) {
      if (st.waits && in_flight) code(fmt::format("  wait f20, {}", in_flight)), in_flight = 0;
      std::string text = st.text;
      for (size_t at = text.find("{flag}"); at != std::string::npos; at = text.find("{flag}")) text.replace(at, 6, "f20");
      code_ += text;
      ++in_flight;
    }
    if (in_flight) code(fmt::format("  wait f20, {}", in_flight));
  }
  // The latency of the vector operation in `text` (by its class, docs/isa.md).
  uint64_t vec_latency(const std::string& text) const {
    size_t at = text.find("vec.");
    if (at == std::string::npos) throw InternalError("not a vector operation: " + text);
    const isa::OpDef* def = isa::find_op(text.substr(at, text.find(' ', at) - at));
    if (!def) throw InternalError("unknown vector operation: " + text);
    const auto& l = cfg_.core.vector.latency_cycles;
    switch (def->op_class) {
      case isa::OpClass::VecMul: return l.multiply;
      case isa::OpClass::VecTranscendental: return l.transcendental;
      case isa::OpClass::VecReduce: return l.reduce;
      case isa::OpClass::VecRescale: return l.rescale;
      case isa::OpClass::VecConvert: return l.convert;
      case isa::OpClass::VecPool: return l.pool;
      default: return l.alu;
    }
  }
  // Issue cycles of a vector operation over `rows` rows (docs/microarch.md, banks aside).
  uint64_t vec_occ(uint64_t rows) const {
    const auto& vc = cfg_.core.vector;
    return ceil_div(rows, std::max<uint32_t>(1, vc.sublanes)) * ceil_div(C_, std::max<uint32_t>(1, vc.lanes));
  }

  // The per-channel scale and shift after a bf16 layer norm (its only user), which the
  // layer norm then applies to its fp32 rows before their one rounding to bf16.
  tpu::AffineOp ln_affine(tpu::LayerNormOp ln) {
    if (q8_ || !ln.getOutput().hasOneUse()) return {};
    auto af = mlir::dyn_cast<tpu::AffineOp>(*ln.getOutput().getUsers().begin());
    if (!af || folded_scales_.count(af.getOperation()) || shape_of(af.getOutput()) != shape_of(ln.getOutput())) return {};
    return af;
  }
  // The row of ones (valid lanes) the layer norm masks its last lane block with, when that
  // block is partial.
  void ln_load_mask(const Act& x, uint64_t base, const LnLayout& lay) {
    uint64_t valid = x.features - (x.blocks - 1) * C_, row32 = C_ * 4;
    if (valid == C_) return;
    std::vector<uint8_t> m(row32, 0);
    for (uint64_t i = 0; i < valid; ++i) {
      float one = 1.0f;
      std::memcpy(&m[i * 4], &one, 4);
    }
    std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={}", row32, hbm_const(m), base + lay.mask_off));
    code(fmt::format("  dma.load desc={} src=r0 dst=r0 flag=f1", d));
    code("  wait f1");
  }
  // The vector operations of a layer norm of rows [r0, r0 + rows) of x into y, with its fp32
  // rows and statistics at `base` (ln_layout); `converted`: the fp32 rows are there already;
  // `af`: the gamma/beta step applied too (ln_affine).
  std::vector<VecStep> ln_steps(tpu::LayerNormOp op, const Act& x, const Act& y, uint64_t base, const LnLayout& lay,
                                uint64_t r0, uint64_t rows, bool converted, tpu::AffineOp af) {
    uint64_t row32 = C_ * 4, off = r0 * row32;
    uint64_t sum = base + lay.stat_off[0] + off, part = base + lay.stat_off[1] + off, sq = base + lay.stat_off[2] + off;
    uint64_t mask = base + lay.mask_off, valid = x.features - (x.blocks - 1) * C_, occ = vec_occ(rows);
    auto block = [&](uint64_t b) { return base + b * lay.block_bytes + off; };
    auto io = [&](const Act& a, uint64_t b) { return a.base + b * a.block_bytes + r0 * C_ * esz_; };
    std::vector<VecStep> steps;
    std::string pre;
    int reg = 6;
    auto U = [&](uint64_t a) {
      if (a <= 0xFFFFFF) return fmt::format("ub[r0+{}]", a);
      pre += fmt::format("  li r{}, {}\n", reg, a);
      return fmt::format("ub[r{}+0]", reg++);
    };
    bool wait_next = false;
    // `wait`: the next operation waits for this one (and every one before it).
    auto vec = [&](const std::string& line, bool wait) {
      steps.push_back({pre + "  " + line + " flag={flag}\n", occ, wait_next});
      pre.clear(), reg = 6, wait_next = wait;
    };
    std::string in_scale = q8_ ? new_param(fmt::format("scale=[{}]", double(scale(op.getInput())))) : "";
    for (uint64_t b = 0; b < x.blocks && !converted; ++b) {
      vec(fmt::format("vec.cvt dst={} a={} rows={} dt={} odt=fp32", U(block(b)), U(io(x, b)), rows, dt_), q8_);
      if (q8_) vec(fmt::format("vec.affine dst={0} a={0} rows={1} dt=fp32 param={2}", U(block(b)), rows, in_scale), true);
    }
    if (!converted) wait_next = true;
    // The blocks added up by add_block (into `part`, or `single` when there is one block),
    // then their row sums into `sum`.
    auto row_sums = [&](const std::function<void(uint64_t)>& add_block, uint64_t single) {
      for (uint64_t b = 0; b < x.blocks; ++b) add_block(b);
      vec(fmt::format("vec.rsum dst={} a={} rows={} dt=fp32 odt=fp32", U(sum), U(x.blocks == 1 ? single : part), rows), true);
    };
    row_sums([&](uint64_t b) {
      if (b == 1) vec(fmt::format("vec.add dst={} a={} b={} rows={} dt=fp32", U(part), U(block(0)), U(block(1)), rows), true);
      if (b > 1) vec(fmt::format("vec.add dst={0} a={0} b={1} rows={2} dt=fp32", U(part), U(block(b)), rows), true);
    }, block(0));
    vec(fmt::format("vec.affine dst={0} a={0} rows={1} dt=fp32 param={2}", U(sum), rows,
                    new_param(fmt::format("scale=[{}]", 1.0 / double(x.features)))), true);
    for (uint64_t b = 0; b < x.blocks; ++b) {
      bool masked = b + 1 == x.blocks && valid < C_;
      vec(fmt::format("vec.sub dst={0} a={0} b={1} rows={2} dt=fp32", U(block(b)), U(sum), rows), masked || b + 1 == x.blocks);
      if (masked) vec(fmt::format("vec.mul dst={0} a={0} b={1} rows={2} dt=fp32 bcast=1", U(block(b)), U(mask), rows), true);
    }
    // Squares block by block, summed like the values.
    row_sums([&](uint64_t b) {
      uint64_t dst = b == 0 ? part : sq;
      vec(fmt::format("vec.mul dst={} a={} b={} rows={} dt=fp32", U(dst), U(block(b)), U(block(b)), rows), true);
      if (b > 0) vec(fmt::format("vec.add dst={0} a={0} b={1} rows={2} dt=fp32", U(part), U(sq), rows), true);
    }, part);
    std::string var_eps = new_param(fmt::format("scale=[{}] bias=[{}]", 1.0 / double(x.features), op.getEpsilon().convertToDouble()));
    vec(fmt::format("vec.affine dst={0} a={0} rows={1} dt=fp32 param={2}", U(sum), rows, var_eps), true);
    vec(fmt::format("vec.rsqrt dst={0} a={0} rows={1} dt=fp32", U(sum), rows), true);
    std::string out_scale = q8_ ? new_param(fmt::format("scale=[{}]", 1.0 / double(scale(op.getOutput())))) : "";
    std::vector<float> gamma, beta;
    if (af) gamma = const_floats(af.getScale(), af.getLayer().str()), beta = const_floats(af.getBias(), af.getLayer().str());
    for (uint64_t b = 0; b < x.blocks; ++b) {
      vec(fmt::format("vec.mul dst={0} a={0} b={1} rows={2} dt=fp32", U(block(b)), U(sum), rows), true);
      if (q8_) vec(fmt::format("vec.affine dst={0} a={0} rows={1} dt=fp32 param={2}", U(block(b)), rows, out_scale), true);
      if (af)
        vec(fmt::format("vec.affine dst={0} a={0} rows={1} dt=fp32 param={2}", U(block(b)), rows, affine_param(gamma, beta, b, 1.0, 1.0)),
            true);
      vec(fmt::format("vec.cvt dst={} a={} rows={} dt=fp32 odt={}", U(io(y, b)), U(block(b)), rows, dt_), false);
    }
    return steps;
  }
  // The gamma/beta step `af` as done by the layer norm that produced y.
  void fuse_ln_affine(tpu::AffineOp af, const Act& y, const std::string& into_layer) {
    Act fy = y;
    fy.shape = shape_of(af.getOutput());
    fused_[af.getOperation()] = fy;
    fused_bounds_.push_back({into_layer, "affine", fy.shape});
  }

  void gen_layernorm(tpu::LayerNormOp op) {
    std::string layer = op.getLayer().str();
    tag(layer);
    const Act& x = act(op.getInput());
    Act y = new_act(shape_of(op.getOutput()), fmt::format("the output of '{}'", layer));
    LnLayout lay = ln_layout(x.rows, x.blocks);
    // The fp32 rows may already be there: converted in the epilogues of the matmul whose
    // output (with a residual added) this normalizes (prepare_layernorm).
    bool converted = false;
    uint64_t work = 0;
    if (auto it = ln_prepared_.find(op.getOperation()); it != ln_prepared_.end()) {
      work = it->second, converted = true;
      ln_prepared_.erase(it);
    } else {
      work = ub_take(lay.total, fmt::format("the fp32 rows and statistics of '{}'", layer));
    }
    uint64_t base = align_up(work, cfg_.core.unified_buffer.row_bytes);
    ln_load_mask(x, base, lay);
    tpu::AffineOp af = ln_affine(op);
    emit_steps(ln_steps(op, x, y, base, lay, 0, x.rows, converted, af));
    ub_.release(work);
    add_bound(layer, 0, 0);
    if (af) fuse_ln_affine(af, y, layer);
    add_fused_bounds();
    define(op.getOutput(), y);
  }

  // Softmax in fp32 rows: per lane block, the values (+ masks), running row max and sum over
  // the blocks (vec.rmax / vec.rsum fill every lane with the row's result). Rows go in
  // chunks as large as the free unified buffer holds (attention's batch x heads x queries
  // rows can be many).
  void gen_softmax(tpu::SoftmaxOp op) {
    std::string layer = op.getLayer().str();
    tag(layer);
    // An fp32 model input (read_fp32) is read from HBM row by row; x then only gives the shape.
    auto fp32_in = input_hbm_.find(op.getInput().getAsOpaquePointer());
    bool from_hbm = fp32_in != input_hbm_.end();
    Act shape_only;
    if (from_hbm) {
      shape_only.shape = shape_of(op.getInput());
      shape_only.features = uint64_t(shape_only.shape.back());
      shape_only.rows = numel(shape_only.shape) / shape_only.features;
      shape_only.blocks = ceil_div(shape_only.features, R_);
    }
    const Act& x = from_hbm ? shape_only : act(op.getInput());
    Act y = new_act(shape_of(op.getOutput()), fmt::format("the output of '{}'", layer));
    uint64_t row32 = C_ * 4, rows = x.rows, xrow = R_ * esz_;
    std::string in_scale, out_scale;
    if (q8_) {
      in_scale = new_param(fmt::format("scale=[{}]", double(scale(op.getInput()))));
      out_scale = new_param(fmt::format("scale=[{}]", 1.0 / double(scale(op.getOutput()))));
    }
    // Mask rows: 0 on valid lanes, -inf on padding, so padding never wins the max.
    std::vector<uint8_t> pad_mask(x.blocks * row32);
    for (uint64_t b = 0; b < x.blocks; ++b) {
      uint64_t valid = std::min<uint64_t>(C_, x.features - b * C_);
      for (uint64_t i = 0; i < C_; ++i) {
        float f = i < valid ? 0.0f : -std::numeric_limits<float>::infinity();
        std::memcpy(&pad_mask[b * row32 + i * 4], &f, 4);
      }
    }
    uint64_t masks = ub_take(pad_mask.size(), fmt::format("the lane masks of '{}'", layer));
    {
      uint64_t n = pad_mask.size(), hbm = hbm_const(std::move(pad_mask));
      code(fmt::format("  dma.load desc={} src=r0 dst=r0 flag=f1", new_desc(fmt::format("bytes={} src_off={} dst_off={}", n, hbm, masks))));
      code("  wait f1");
    }
    // The model's own mask [M, N] (fp32, blocked like the values), added to each group of M rows.
    uint64_t mask_rows = 0, user_mask = 0;
    if (op.getMask()) {
      auto mk = const_floats(op.getMask(), layer);
      mask_rows = mk.size() / x.features;
      if (rows % mask_rows) throw InternalError("softmax mask rows do not divide the input rows");
      std::vector<uint8_t> bytes(x.blocks * mask_rows * row32, 0);
      for (uint64_t i = 0; i < mask_rows; ++i)
        for (uint64_t j = 0; j < x.features; ++j)
          std::memcpy(&bytes[((j / C_) * mask_rows + i) * row32 + (j % C_) * 4], &mk[i * x.features + j], 4);
      user_mask = ub_take(bytes.size(), fmt::format("the attention mask of '{}'", layer));
      uint64_t n = bytes.size(), hbm = hbm_const(std::move(bytes));
      std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={}", n, hbm, user_mask));
      code(fmt::format("  dma.load desc={} src=r0 dst=r0 flag=f1", d));
      code("  wait f1");
    }
    // Work rows per chunk: one per block for the values, plus the max, sum and a spare row.
    uint64_t unit = std::max<uint64_t>(mask_rows, 1), cr = rows;
    auto work_bytes = [&](uint64_t n) { return (x.blocks + 3) * align_up(n * row32, 64); };
    while (cr > unit && work_bytes(cr) > ub_.largest_free()) cr = std::max(unit, (cr / 2 + unit - 1) / unit * unit);
    uint64_t span = align_up(cr * row32, 64);
    uint64_t vals = ub_take(work_bytes(cr), fmt::format("the fp32 work rows of '{}'", layer));
    uint64_t mx = vals + x.blocks * span, sum = mx + span, tmp = sum + span;
    for (uint64_t r0 = 0; r0 < rows; r0 += cr) {
      uint64_t n = std::min(cr, rows - r0);
      for (uint64_t b = 0; b < x.blocks; ++b) {
        uint64_t v = vals + b * span;
        if (from_hbm) {
          uint64_t fw = std::min<uint64_t>(C_, x.features - b * C_);
          if (fw < C_) clear(v, span);
          std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}]", fw * 4,
                                               fp32_in->second + (r0 * x.features + b * C_) * 4, v, n, x.features * 4, row32));
          code(fmt::format("  dma.load desc={} src=r0 dst=r0 flag=f1", d));
          code("  wait f1");
          code(fmt::format("  li r2, {}", v));
        } else {
          code(fmt::format("  li r1, {} || li r2, {}", x.base + b * x.block_bytes + r0 * xrow, v));
          vec_wait(fmt::format("vec.cvt dst=ub[r2+0] a=ub[r1+0] rows={} dt={} odt=fp32", n, dt_));
          if (q8_) vec_wait(fmt::format("vec.affine dst=ub[r2+0] a=ub[r2+0] rows={} dt=fp32 param={}", n, in_scale));
        }
        if (x.features - b * C_ < C_) {  // only a partial block has padding lanes to mask
          code(fmt::format("  li r3, {}", masks + b * row32));
          vec_wait(fmt::format("vec.add dst=ub[r2+0] a=ub[r2+0] b=ub[r3+0] rows={} dt=fp32 bcast=1", n));
        }
        for (uint64_t g = 0; mask_rows && g < n / mask_rows; ++g) {
          code(fmt::format("  li r3, {} || li r4, {}", v + g * mask_rows * row32, user_mask + b * mask_rows * row32));
          vec_wait(fmt::format("vec.add dst=ub[r3+0] a=ub[r3+0] b=ub[r4+0] rows={} dt=fp32", mask_rows));
        }
        code(fmt::format("  li r4, {}", b == 0 ? mx : tmp));
        vec_wait(fmt::format("vec.rmax dst=ub[r4+0] a=ub[r2+0] rows={} dt=fp32", n));
        if (b) {
          code(fmt::format("  li r5, {} || li r6, {}", mx, tmp));
          vec_wait(fmt::format("vec.max dst=ub[r5+0] a=ub[r5+0] b=ub[r6+0] rows={} dt=fp32", n));
        }
      }
      for (uint64_t b = 0; b < x.blocks; ++b) {
        uint64_t v = vals + b * span;
        code(fmt::format("  li r2, {} || li r5, {}", v, mx));
        vec_wait(fmt::format("vec.sub dst=ub[r2+0] a=ub[r2+0] b=ub[r5+0] rows={} dt=fp32", n));
        vec_wait(fmt::format("vec.exp dst=ub[r2+0] a=ub[r2+0] rows={} dt=fp32", n));
        code(fmt::format("  li r4, {}", b == 0 ? sum : tmp));
        vec_wait(fmt::format("vec.rsum dst=ub[r4+0] a=ub[r2+0] rows={} dt=fp32 odt=fp32", n));
        if (b) {
          code(fmt::format("  li r5, {} || li r6, {}", sum, tmp));
          vec_wait(fmt::format("vec.add dst=ub[r5+0] a=ub[r5+0] b=ub[r6+0] rows={} dt=fp32", n));
        }
      }
      code(fmt::format("  li r5, {}", sum));
      vec_wait(fmt::format("vec.recip dst=ub[r5+0] a=ub[r5+0] rows={} dt=fp32", n));
      for (uint64_t b = 0; b < x.blocks; ++b) {
        uint64_t v = vals + b * span;
        code(fmt::format("  li r2, {} || li r3, {}", v, y.base + b * y.block_bytes + r0 * xrow));
        vec_wait(fmt::format("vec.mul dst=ub[r2+0] a=ub[r2+0] b=ub[r5+0] rows={} dt=fp32", n));
        if (q8_) vec_wait(fmt::format("vec.affine dst=ub[r2+0] a=ub[r2+0] rows={} dt=fp32 param={}", n, out_scale));
        vec_wait(fmt::format("vec.cvt dst=ub[r3+0] a=ub[r2+0] rows={} dt=fp32 odt={}", n, dt_));
      }
    }
    ub_.release(vals);
    ub_.release(masks);
    if (mask_rows) ub_.release(user_mask);
    add_bound(layer, 0, 0);
    define(op.getOutput(), y);
  }

  // A reshape that only regroups the last dimension (attention's [S, H*d] <-> [S, H, d]):
  // row-major order is kept, so with y's rows a split of x's (b = y.features dividing
  // x.features) output row (r, j) is x row r's lanes [j*b, j*b + b), and a merge is the
  // reverse. Unified-buffer copies of lane runs, one per run for all rows at once; nothing
  // when some run would not start on a unified-buffer word (then it goes through HBM).
  std::optional<Act> split_or_merge_rows(const Act& x, const std::vector<int64_t>& ys, const std::string& layer,
                                         bool clear_padding = true) {
    uint64_t yf = uint64_t(ys.back()), align = cfg_.core.unified_buffer.alignment_bytes;
    bool split = yf < x.features && x.features % yf == 0, merge = yf > x.features && yf % x.features == 0;
    if (!split && !merge) return std::nullopt;
    uint64_t b = split ? yf : x.features, a = split ? x.features / yf : yf / x.features;
    struct Run {
      uint64_t j, wide_lane, narrow_lane, lanes;  // narrow row j of a wide row, lanes [wide_lane, +lanes)
    };
    std::vector<Run> runs;
    for (uint64_t j = 0; j < a; ++j)
      for (uint64_t o = 0; o < b;) {
        uint64_t L = j * b + o, n = std::min({R_ - L % R_, R_ - o % R_, b - o});
        if ((L % R_) * esz_ % align || (o % R_) * esz_ % align) return std::nullopt;
        runs.push_back({j, L, o, n});
        o += n;
      }
    Act y = new_act(ys, fmt::format("the output of '{}'", layer));
    if (y.features % R_ && clear_padding) clear(y.base + (y.blocks - 1) * y.block_bytes, y.block_bytes);
    const Act& wide = split ? x : y;
    const Act& narrow = split ? y : x;
    uint64_t wide_stride = R_ * esz_, narrow_stride = a * R_ * esz_;
    for (const Run& r : runs) {
      uint64_t wide_at = wide.base + (r.wide_lane / R_) * wide.block_bytes + (r.wide_lane % R_) * esz_;
      uint64_t narrow_at =
          narrow.base + (r.narrow_lane / R_) * narrow.block_bytes + r.j * R_ * esz_ + (r.narrow_lane % R_) * esz_;
      std::string shape = fmt::format("bytes={} dim=[{}, {}, {}]", r.lanes * esz_, wide.rows, split ? wide_stride : narrow_stride,
                                      split ? narrow_stride : wide_stride);
      if (split) ub_copy_async(wide_at, narrow_at, shape);
      else ub_copy_async(narrow_at, wide_at, shape);
    }
    copies_wait();
    add_bound(layer, 0, 0);
    return y;
  }

  void gen_reshape(tpu::ReshapeOp op) {
    std::string layer = op.getLayer().str();
    const Act& x = act(op.getInput());
    auto ys = shape_of(op.getOutput());
    if (uint64_t(ys.back()) == x.features) {  // same rows x features: an alias
      Act y = x;
      y.shape = ys;
      y.rows = numel(ys) / y.features;
      define(op.getOutput(), y);  // release() frees the shared base when neither is used
      if (const HeadView* hv = view_of(op.getInput())) views_[op.getOutput().getAsOpaquePointer()] = *hv;
      return;
    }
    tag(layer);
    if (make_head_view(op, x) || make_head_transpose(op, x)) return;
    // The lowering only reshapes an image to 2-D for a matmul that expects NHWC order.
    uint64_t lanes_per_word = std::max<uint64_t>(1, cfg_.core.unified_buffer.alignment_bytes / esz_);
    bool image_flatten = x.shape.size() == 4 && ys.size() == 2 && uint64_t(ys[0]) == uint64_t(x.shape[0]) &&
                         x.features % lanes_per_word == 0;
    if (!image_flatten) {
      // Transposes copy only the valid lanes of their input, so a head split feeding them
      // need not clear its padding lanes (a load of zeros as large as the output block).
      bool only_transposes = !op.getOutput().use_empty();
      for (mlir::Operation* u : op.getOutput().getUsers()) only_transposes &= mlir::isa<tpu::TransposeOp>(u);
      if (auto y = split_or_merge_rows(x, ys, layer, !only_transposes)) return define(op.getOutput(), *y);
      // Any other reshape: through HBM, stored row-major and reloaded in the new shape.
      uint64_t scratch = hbm_alloc(x.rows * x.features * esz_);
      store_act(x, scratch);
      Act y = new_act(ys, fmt::format("the output of '{}'", layer));
      load_act(y, scratch);
      add_bound(layer, 0, 2 * x.rows * x.features * esz_);
      define(op.getOutput(), y);
      return;
    }
    // Flatten an NHWC image [N, H, W, C] to [N, H*W*C]: row n gathers its pixels' channels.
    Act y = new_act(ys, fmt::format("the output of '{}'", layer));
    clear(y.base, y.bytes());
    uint64_t P = uint64_t(x.shape[1] * x.shape[2]), Cc = x.features, N = uint64_t(x.shape[0]);
    for (uint64_t n = 0; n < N; ++n)
      for (uint64_t b = 0; b < x.blocks; ++b) {
        uint64_t fw = std::min<uint64_t>(R_, Cc - b * R_);
        // Element (p, c) of image n goes to flat index p*C + c: block (p*C + c) / R, lane % R.
        // Rows of the flat tensor are images, so within a block element i sits at lane i % R
        // of row n: the whole flat row is contiguous only per block; copy pixel by pixel
        // when a pixel's channels straddle blocks.
        for (uint64_t p = 0; p < P; ++p) {
          uint64_t flat = p * Cc + b * R_;
          uint64_t yb = flat / R_, lane = flat % R_;
          uint64_t src = x.base + b * x.block_bytes + (n * P + p) * R_ * esz_;
          uint64_t first = std::min(fw, R_ - lane);
          uint64_t dst = y.base + yb * y.block_bytes + n * R_ * esz_ + lane * esz_;
          copy_bytes(src, dst, first * esz_);
          if (first < fw) copy_bytes(src + first * esz_, y.base + (yb + 1) * y.block_bytes + n * R_ * esz_, (fw - first) * esz_);
        }
      }
    add_bound(layer, 0, 0);
    define(op.getOutput(), y);
  }

  void copy_bytes(uint64_t src, uint64_t dst, uint64_t bytes) {
    uint64_t al = cfg_.core.unified_buffer.alignment_bytes;
    if (src % al || dst % al)
      throw CompileError(fmt::format("a flatten needs unaligned unified-buffer copies (alignment {}); channel counts "
                                     "should be multiples of {}",
                                     al, al / esz_));
    std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={}", bytes, src, dst));
    code(fmt::format("  dma.copy desc={} src=r0 dst=r0 flag=f1", d));
    code("  wait f1");
  }

  // ---- integer tensors (docs/compiler.md, "Integer inputs and outputs") ----

  static bool is_int32(Value v) { return mlir::cast<mlir::RankedTensorType>(v.getType()).getElementType().isInteger(32); }

  // An activation of int32 rows (4-byte lanes, blocked like any other).
  Act int32_act(const std::vector<int64_t>& shape, const std::string& what, bool temporary = false) {
    Act a;
    a.shape = shape;
    a.features = uint64_t(shape.back());
    a.rows = numel(shape) / a.features;
    a.blocks = ceil_div(a.features, R_);
    a.block_bytes = align_up(a.rows * R_ * 4, 64);
    a.base = ub_take(a.bytes(), what, temporary || output_high_);
    return a;
  }
  // The output of a layer: int32 rows for an i32 result, else the activation dtype's.
  Act out_act(Value v, const std::string& what) { return is_int32(v) ? int32_act(shape_of(v), what) : new_act(shape_of(v), what); }

  // Blocked-layout DMA of rows of `esz`-byte elements between HBM (row-major) and UB.
  void load_rows(const Act& a, uint64_t hbm, uint64_t esz) {
    for (uint64_t b = 0; b < a.blocks; ++b) {
      uint64_t fw = std::min<uint64_t>(R_, a.features - b * R_);
      std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}]", fw * esz, hbm + b * R_ * esz,
                                           a.base + b * a.block_bytes, a.rows, a.features * esz, R_ * esz));
      if (fw < R_) clear(a.base + b * a.block_bytes, a.block_bytes);
      code(fmt::format("  dma.load desc={} src=r0 dst=r0 flag=f1", d));
      code("  wait f1");
    }
  }
  void store_rows(const Act& a, uint64_t hbm, uint64_t esz) {
    for (uint64_t b = 0; b < a.blocks; ++b) {
      uint64_t fw = std::min<uint64_t>(R_, a.features - b * R_);
      std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}]", fw * esz, a.base + b * a.block_bytes,
                                           hbm + b * R_ * esz, a.rows, R_ * esz, a.features * esz));
      code(fmt::format("  dma.store desc={} src=r0 dst=r0 flag=f1", d));
      code("  wait f1");
    }
  }

  // int32 -> activation (an integer model input: loaded from HBM, then vec.cvt; INT8
  // through fp32 rows scaled to the calibrated scale), or activation -> int32 (rounded
  // half to even) for an integer model output.
  void gen_cast(tpu::CastOp op) {
    std::string layer = op.getLayer().str();
    tag(layer);
    Value in = op.getInput(), out = op.getOutput();
    if (is_int32(in) == is_int32(out)) {
      define(out, act(in));
      uses_[in.getAsOpaquePointer()]++;  // the alias keeps the buffer
      return;
    }
    if (is_int32(in)) {
      Act src;
      bool loaded = false;
      if (auto it = int_hbm_.find(in.getAsOpaquePointer()); it != int_hbm_.end()) {
        src = int32_act(shape_of(in), fmt::format("the int32 rows of '{}'", layer), true);
        load_rows(src, it->second, 4);
        loaded = true;
      } else {
        src = act(in);
      }
      Act y = new_act(shape_of(out), fmt::format("the output of '{}'", layer));
      std::string p = q8_ ? new_param(fmt::format("scale=[{}] bias=[0]", 1.0 / double(scale(out)))) : "";
      for (uint64_t b = 0; b < y.blocks; ++b) {
        code(fmt::format("  li r1, {} || li r2, {}", src.base + b * src.block_bytes, y.base + b * y.block_bytes));
        if (!q8_) {
          vec_wait(fmt::format("vec.cvt dst=ub[r2+0] a=ub[r1+0] rows={} dt=int32 odt=bf16", y.rows));
          continue;
        }
        if (!loaded) throw InternalError("an int32 activation converted in place");
        vec_wait(fmt::format("vec.cvt dst=ub[r1+0] a=ub[r1+0] rows={} dt=int32 odt=fp32", y.rows));
        vec_wait(fmt::format("vec.affine dst=ub[r1+0] a=ub[r1+0] rows={} dt=fp32 param={}", y.rows, p));
        vec_wait(fmt::format("vec.cvt dst=ub[r2+0] a=ub[r1+0] rows={} dt=fp32 odt=int8", y.rows));
      }
      if (loaded) ub_.release(src.base);
      add_bound(layer, 0, numel(shape_of(in)) * 4);
      define(out, y);
      return;
    }
    const Act& x = act(in);
    Act y = int32_act(shape_of(out), fmt::format("the output of '{}'", layer));
    std::string p = q8_ ? new_param(fmt::format("scale=[{}] bias=[0]", double(scale(in)))) : "";
    for (uint64_t b = 0; b < y.blocks; ++b) {
      code(fmt::format("  li r1, {} || li r2, {}", x.base + b * x.block_bytes, y.base + b * y.block_bytes));
      if (!q8_) {
        vec_wait(fmt::format("vec.cvt dst=ub[r2+0] a=ub[r1+0] rows={} dt=bf16 odt=int32", y.rows));
        continue;
      }
      vec_wait(fmt::format("vec.cvt dst=ub[r2+0] a=ub[r1+0] rows={} dt=int8 odt=fp32", y.rows));
      vec_wait(fmt::format("vec.affine dst=ub[r2+0] a=ub[r2+0] rows={} dt=fp32 param={}", y.rows, p));
      vec_wait(fmt::format("vec.cvt dst=ub[r2+0] a=ub[r2+0] rows={} dt=fp32 odt=int32", y.rows));
    }
    add_bound(layer, 0, 0);
    define(out, y);
  }

  // Embedding lookup by run-time ids: the chip cannot address memory by a loaded value, so
  // each id becomes a one-hot row over the table's V rows and the lookup is one-hot x table
  // on the MXUs (the table as weights, per-channel int8 or bf16). Per chunk of ids:
  //  - the ids (int32 in HBM) land one per UB row in lane 0; vec.rsum spreads each over
  //    its row as fp32 (exact below 2^24); a negative id gets V added (min(max(-V id, 0), V));
  //  - e = id - lane; per block k of R table rows: one-hot = 1 - min(e_k^2, 1), exactly 1
  //    where e_k = id - kR - lane = 0 and 0 elsewhere, converted to the MXU dtype;
  //  - matmuls of the one-hot blocks with the table's tiles; each output is one table row
  //    times 1 plus zeros, so the selection is exact (INT8: the row's codes, then the
  //    per-channel RESCALE to the output's scale). Ids outside [-V, V) match no row: zeros.
  // Schedule: every output block (column block n, table-row range s) keeps its accumulator
  // rows for the whole lookup; the MXUs walk the table's row blocks in step, one matmul per
  // block and step, and between those rounds the vector unit builds the one-hot blocks the
  // next steps need, so building them overlaps the matmuls. The row ranges (ks of them)
  // spread the blocks evenly over the MXUs; their partial results are added at the end
  // (exact: one row plus zeros).
  void gen_embedding(tpu::EmbeddingOp op) {
    std::string layer = op.getLayer().str();
    tag(layer);
    auto it = int_hbm_.find(op.getIds().getAsOpaquePointer());
    if (it == int_hbm_.end())
      throw CompileError(fmt::format("node '{}': embedding ids must be an integer model input", layer));
    require_fp32_lane_moves(layer, "loading one token id per row copies");
    uint64_t ids_hbm = it->second, S = numel(shape_of(op.getIds()));
    auto ts = shape_of(op.getTable());
    uint64_t V = uint64_t(ts[0]), D = uint64_t(ts[1]);
    auto w = const_floats(op.getTable(), layer);
    Act y = new_act(shape_of(op.getOutput()), fmt::format("the output of '{}'", layer));
    std::vector<double> acc_scale;
    if (q8_) {
      QWeights qw = quantize(w, V, D);
      w = std::move(qw.q);
      acc_scale = qw.s;  // the one-hot's scale is 1
    }
    uint64_t kt = ceil_div(V, R_), nt = ceil_div(D, C_), nm = cfg_.core.mxu.count;
    // The one-hot rows of a single id must fit before the table is tiled (a large table on a
    // small config fails here, quickly, with the unified buffer's error).
    if (uint64_t one = kt * align_up(R_ * esz_, 64) + (nm + 2) * align_up(C_ * 4, 64); ub_.largest_free() < one)
      ub_take(one, fmt::format("the one-hot rows of '{}' (1 id x {} table rows)", layer, V));
    // The table's tiles packed back to back in one HBM segment (a vocabulary makes many
    // small tiles; one page each would multiply the table's HBM footprint on small arrays).
    std::vector<std::vector<TileRef>> tiles(nt, std::vector<TileRef>(kt));
    {
      std::vector<uint8_t> blob;
      blob.reserve(V * D * esz_);
      std::vector<std::vector<uint64_t>> at(nt, std::vector<uint64_t>(kt));
      for (uint64_t n = 0; n < nt; ++n)
        for (uint64_t k = 0; k < kt; ++k) {
          uint64_t kw = std::min<uint64_t>(R_, V - k * R_), nw = std::min<uint64_t>(C_, D - n * C_);
          at[n][k] = blob.size();
          for (uint64_t r = 0; r < kw; ++r)
            for (uint64_t c = 0; c < nw; ++c) {
              float v = w[(k * R_ + r) * D + n * C_ + c];
              if (q8_) {
                blob.push_back(uint8_t(int8_t(v)));
              } else {
                uint16_t h = bf16_of(v);
                blob.push_back(uint8_t(h & 0xFF)), blob.push_back(uint8_t(h >> 8));
              }
            }
          tiles[n][k].desc = new_desc(fmt::format("bytes={} dtype={} dim=[{}, {}, 0]", nw * esz_, dt_, kw, nw * esz_));
        }
      uint64_t base = hbm_const(std::move(blob));
      for (uint64_t n = 0; n < nt; ++n)
        for (uint64_t k = 0; k < kt; ++k) tiles[n][k].addr = base + at[n][k];
    }
    auto eps = epilogue_params(D, acc_scale, q8_ ? scale(op.getOutput()) : 1.0, -std::numeric_limits<double>::infinity(),
                               std::numeric_limits<double>::infinity());
    // Row ranges: the fewest that minimize the busiest MXU's matmuls.
    uint64_t ks = 1;
    for (uint64_t k2 = 2; k2 <= std::min<uint64_t>(nm, kt); ++k2)
      if (ceil_div(nt * k2, nm) * ceil_div(kt, k2) < ceil_div(nt * ks, nm) * ceil_div(kt, ks)) ks = k2;
    std::vector<uint64_t> k_start(ks + 1);
    for (uint64_t s = 0; s <= ks; ++s) k_start[s] = s * kt / ks;
    uint64_t items = nt * ks, per_mxu = ceil_div(items, nm), steps = ceil_div(kt, ks);
    // The lane numbers 0..R-1 as one fp32 row, and the parameters of the one-hot steps.
    std::vector<uint8_t> lanes(C_ * 4);
    for (uint64_t i = 0; i < C_; ++i) {
      float f = float(i);
      std::memcpy(&lanes[i * 4], &f, 4);
    }
    uint64_t row32 = C_ * 4, acc_rows = cfg_.core.accumulators.rows;
    uint64_t iota = ub_take(row32, fmt::format("the lane numbers of '{}'", layer));
    {
      std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={}", row32, hbm_const(std::move(lanes)), iota));
      code(fmt::format("  dma.load desc={} src=r0 dst=r0 flag=f1", d));
      code("  wait f1");
    }
    std::string neg_scale = new_param(fmt::format("scale=[{}] bias=[0]", -double(V)));
    std::string neg_clamp = new_param(fmt::format("min=0 max={}", V));
    std::string at_most_1 = new_param("max=1");
    std::string one_minus = new_param("scale=[-1] bias=[1]");
    std::string next_block = new_param(fmt::format("scale=[1] bias=[{}]", -double(R_)));
    // Ids per chunk: as many as half the free unified buffer holds (one-hot rows, the id
    // rows, a work row and one e row per range each) and one MXU's accumulators hold.
    uint64_t per_row = kt * R_ * esz_ + (ks + 2) * row32;
    uint64_t chunk = std::min<uint64_t>({S, 8192, acc_rows, std::max<uint64_t>(1, ub_.largest_free() / 2 / per_row)});
    uint64_t pb = align_up(chunk * R_ * esz_, 64);  // one lane block of a partial result
    uint64_t parts = ks > 1 ? ub_take((ks - 1) * nt * pb, fmt::format("the partial results of '{}'", layer)) : 0;
    uint64_t chunks = 0;
    for (uint64_t t0 = 0; t0 < S; t0 += chunk, ++chunks) {
      uint64_t T = std::min(chunk, S - t0);
      uint64_t bb = align_up(T * R_ * esz_, 64), fb = align_up(T * row32, 64);
      uint64_t hot = ub_take(kt * bb + (ks + 2) * fb, fmt::format("the one-hot rows of '{}' ({} ids x {} table rows)", layer, T, V));
      uint64_t idr = hot + kt * bb, tmp = idr + fb, e0 = tmp + fb;  // e rows of range s at e0 + s * fb
      clear(idr, fb);
      std::string d = new_desc(fmt::format("bytes=4 src_off={} dst_off={} dim=[{}, 4, {}]", ids_hbm + t0 * 4, idr, T, row32));
      code(fmt::format("  dma.load desc={} src=r0 dst=r0 flag=f1", d));
      code("  wait f1");
      code(fmt::format("  li r1, {} || li r2, {}", idr, e0));
      code(fmt::format("  li r3, {} || li r4, {}", tmp, iota));
      vec_wait(fmt::format("vec.rsum dst=ub[r2+0] a=ub[r1+0] rows={} dt=int32 odt=fp32", T));
      vec_wait(fmt::format("vec.affine dst=ub[r3+0] a=ub[r2+0] rows={} dt=fp32 param={}", T, neg_scale));
      vec_wait(fmt::format("vec.clamp dst=ub[r3+0] a=ub[r3+0] rows={} dt=fp32 param={}", T, neg_clamp));
      vec_wait(fmt::format("vec.add dst=ub[r2+0] a=ub[r2+0] b=ub[r3+0] rows={} dt=fp32", T));
      vec_wait(fmt::format("vec.sub dst=ub[r2+0] a=ub[r2+0] b=ub[r4+0] rows={} dt=fp32 bcast=1", T));
      for (uint64_t s = 1; s < ks; ++s) {  // e of range s starts at its first row block
        code(fmt::format("  li r1, {}", e0 + s * fb));
        vec_wait(fmt::format("vec.affine dst=ub[r1+0] a=ub[r2+0] rows={} dt=fp32 param={}", T,
                             new_param(fmt::format("scale=[1] bias=[{}]", -double(k_start[s] * R_)))));
      }
      // One-hot block k_start[s] + j, and e of range s moved on to the next block.
      std::vector<std::pair<uint64_t, uint64_t>> gens;  // (range, step) in the order the steps need them
      for (uint64_t j = 0; j < steps; ++j)
        for (uint64_t s = 0; s < ks; ++s)
          if (k_start[s] + j < k_start[s + 1]) gens.push_back({s, j});
      size_t next_gen = 0;
      auto gen_one = [&] {
        auto [s, j] = gens[next_gen++];
        uint64_t k = k_start[s] + j;
        code(fmt::format("  li r2, {} || li r3, {}", e0 + s * fb, tmp));
        code(fmt::format("  li r5, {}", hot + k * bb));
        vec_wait(fmt::format("vec.mul dst=ub[r3+0] a=ub[r2+0] b=ub[r2+0] rows={} dt=fp32", T));
        vec_wait(fmt::format("vec.clamp dst=ub[r3+0] a=ub[r3+0] rows={} dt=fp32 param={}", T, at_most_1));
        vec_wait(fmt::format("vec.cvt dst=ub[r5+0] a=ub[r3+0] rows={} dt=fp32 odt={}", T, dt_));
        vec_wait(fmt::format("vec.affine dst=ub[r5+0] a=ub[r5+0] rows={} dt={} param={}", T, dt_, one_minus));
        if (k + 1 < k_start[s + 1]) vec_wait(fmt::format("vec.affine dst=ub[r2+0] a=ub[r2+0] rows={} dt=fp32 param={}", T, next_block));
      };
      auto gens_through = [&](uint64_t j) {  // gens for steps <= j
        size_t c = 0;
        while (c < gens.size() && gens[c].second <= j) ++c;
        return c;
      };
      // Items (column block n, range s), item i on MXU i % nm in slot i / nm; slots of one
      // MXU that fit its accumulators at once form a pass.
      uint64_t slots = std::max<uint64_t>(1, acc_rows / T);
      for (uint64_t p0 = 0; p0 < per_mxu; p0 += slots) {
        uint64_t p1 = std::min(per_mxu, p0 + slots);
        struct Mm {
          uint64_t item, k;
        };
        std::vector<std::vector<std::vector<Mm>>> rounds;  // [round][mxu] -> at most one matmul
        for (uint64_t j = 0; j < steps; ++j)
          for (uint64_t q = p0; q < p1; ++q) {
            std::vector<std::vector<Mm>> r(nm);
            for (uint64_t m = 0; m < nm; ++m) {
              uint64_t i = q * nm + m;
              if (i >= items) continue;
              uint64_t s = i / nt;
              if (k_start[s] + j < k_start[s + 1]) r[m].push_back({i, k_start[s] + j});
            }
            rounds.push_back(std::move(r));
          }
        std::vector<std::vector<const Mm*>> stream(nm);  // each MXU's matmuls in order
        for (const auto& r : rounds)
          for (uint64_t m = 0; m < nm; ++m)
            for (const Mm& mm : r[m]) stream[m].push_back(&mm);
        auto tile_of = [&](const Mm& mm) -> const TileRef& { return tiles[mm.item % nt][mm.k]; };
        hoist_at_.reset();  // MXU work outside run_blocks: no later prologue may move before it
        for (uint64_t m = 0; m < nm; ++m) {  // two tiles into each FIFO, one into each shadow
          for (size_t t = 0; t < std::min<size_t>(2, stream[m].size()); ++t) {
            code(fmt::format("  li r{}, {}", 16 + m, tile_of(*stream[m][t]).addr));
            code(fmt::format("  dma.wfifo desc={} src=r{} mxu={}", tile_of(*stream[m][t]).desc, 16 + m, m));
          }
          if (!stream[m].empty()) code(fmt::format("  mxu.wload mxu={}", m));
        }
        std::vector<size_t> pos(nm, 0);
        for (size_t ri = 0; ri < rounds.size(); ++ri) {
          uint64_t j = ri / (p1 - p0);
          if (p0 == 0)
            for (size_t need = gens_through(j); next_gen < need;) gen_one();  // this step's one-hot blocks first
          for (uint64_t m = 0; m < nm; ++m)
            for (const Mm& mm : rounds[ri][m]) {
              size_t t = pos[m]++;
              uint64_t s = mm.item / nt, slot = mm.item / nm - p0;
              std::string op = fmt::format("mxu.matmul mxu={} src={} dst=r0+{} rows={} dtype={} swap=1{}{}", m,
                                           addr_ref(hot + mm.k * bb, 10 + int(m)), slot * T, T, dt_,
                                           mm.k > k_start[s] ? " acc=1" : "", t + 1 == stream[m].size() ? fmt::format(" flag=f{}", 2 + m) : "");
              if (t + 1 < stream[m].size()) op += fmt::format(" || mxu.wload mxu={}", m);
              if (t + 2 < stream[m].size()) {
                code(fmt::format("  li r{}, {}", 16 + m, tile_of(*stream[m][t + 2]).addr));
                op += fmt::format(" || dma.wfifo desc={} src=r{} mxu={}", tile_of(*stream[m][t + 2]).desc, 16 + m, m);
              }
              code("  " + op);
            }
          if (p0 == 0 && next_gen < gens.size()) gen_one();  // builds ahead while the MXUs stream
        }
        // Epilogues: accumulators -> output rows (a range's partial results aside).
        for (uint64_t m = 0; m < nm; ++m)
          if (!stream[m].empty()) code(fmt::format("  wait f{}", 2 + m));
        for (uint64_t q = p0; q < p1; ++q)
          for (uint64_t m = 0; m < nm; ++m) {
            uint64_t i = q * nm + m;
            if (i >= items) continue;
            uint64_t s = i / nt, n = i % nt;
            uint64_t out = s == 0 ? y.base + n * y.block_bytes + t0 * C_ * esz_ : parts + ((s - 1) * nt + n) * pb;
            for (std::string ph : epilogue(uint32_t(m), (q - p0) * T, T, kNoBias, eps[n], out)) {
              for (size_t at = ph.find("{flag}"); at != std::string::npos; at = ph.find("{flag}")) ph.replace(at, 6, "f20");
              code_ += ph;
              code("  wait f20");
            }
          }
      }
      for (uint64_t s = 1; s < ks; ++s)
        for (uint64_t n = 0; n < nt; ++n) {
          code(fmt::format("  li r1, {} || li r2, {}", y.base + n * y.block_bytes + t0 * C_ * esz_, parts + ((s - 1) * nt + n) * pb));
          vec_wait(fmt::format("vec.add dst=ub[r1+0] a=ub[r1+0] b=ub[r2+0] rows={} dt={}", T, dt_));
        }
      ub_.release(hot);
    }
    if (ks > 1) ub_.release(parts);
    ub_.release(iota);
    add_bound(layer, S * V * D, chunks * V * D * esz_ + S * 4);
    define(op.getOutput(), y);
  }

  const config::Config& cfg_;
  CompileOptions opt_;
  UbAllocator ub_;
  uint32_t R_ = 0, C_ = 0;
  uint64_t esz_ = 2, acc_region_ = 0;
  bool q8_ = false;
  std::string dt_ = "bf16";
  std::map<const void*, float> scales_;
  struct SharedWeights {
    std::vector<std::vector<TileRef>> tiles;  // [n block][k block]
    std::vector<double> scales;               // INT8: per output channel
  };
  std::map<const void*, SharedWeights> weight_cache_;  // by tpu.matmul weight constant
  std::string current_op_;  // the op being generated, for its layer's bound
  bool output_high_ = false;  // its output goes to the top of the unified buffer
  std::vector<int64_t> current_shape_;
  std::map<const void*, uint64_t> input_hbm_;  // model inputs left in HBM for packed convolutions
  std::map<const void*, uint64_t> int_hbm_;    // integer model inputs (int32 in HBM)
  bool int_out_ = false;     // the op being generated has an int32 result
  uint64_t out_esz_ = 2;     // bytes per element of that op's output rows
  std::map<mlir::Operation*, Act> fused_adds_;  // adds done in a convolution's epilogue, and their output
  std::map<mlir::Operation*, Act> fused_pools_;  // pools done along the convolution before them, and their output
  uint64_t hbm_next_ = 0, zero_hbm_ = 0, const_bytes_ = 0;
  int ndesc_ = 0, nparam_ = 0;
  uint64_t copies_in_flight_ = 0;  // ub_copy_async copies not yet waited for (on f1)
  std::optional<size_t> hoist_at_;  // where in code_ the last stream issued its last matmul (run_blocks)
  std::map<mlir::Operation*, Act> fused_;  // elementwise ops done in a matmul's epilogues, and their outputs
  std::set<mlir::Operation*> done_;  // ops generated ahead of their turn (gen_matmul_group)
  std::map<const void*, uint64_t> bias_lanes_;  // activations with bias lanes from this lane on
  std::map<uint64_t, uint64_t> bias_lanes_rows_;  // the constants' row in the unified buffer, by first lane
  std::set<mlir::Operation*> folded_scales_;  // attention scales applied to the queries (attention_scale)
  std::map<mlir::Operation*, uint64_t> ln_prepared_;  // layer norms whose fp32 rows a matmul's epilogues fill (prepare_layernorm)
  std::set<mlir::Operation*> deferred_;  // ops with nothing to generate whose operands are released in turn
  std::map<const void*, HeadView> views_;  // head split + transpose results read in place (make_head_view)
  std::set<const void*> slack_values_;  // activations allocated with a row of room after them
  std::map<const void*, RhsCopy> stored_rhs_;  // batch-matmul right-hand sides stored early (store_rhs_early)
  std::vector<std::tuple<std::string, std::string, std::vector<int64_t>>> fused_bounds_;
  std::map<std::string, std::string> desc_names_, param_names_;
  std::string decls_, code_;
  std::vector<isa::ConstSegment> segments_;
  std::map<const void*, Act> acts_;
  std::map<const void*, int> uses_;
  std::vector<LayerBound> bounds_;
};

}  // namespace

CompileResult generate_program(mlir::ModuleOp module, const config::Config& cfg, const CompileOptions& options,
                               const std::map<const void*, float>& scales) {
  return Codegen(cfg, options, scales).run(module);
}

void check_inputs_fit(mlir::ModuleOp module, const config::Config& cfg, const CompileOptions& options) {
  Codegen(cfg, options, {}).check_inputs_fit(module);
}

}  // namespace vtpu::compiler
