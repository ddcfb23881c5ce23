// The code-generation planner (plan.h): matmul streams, what runs in epilogues (a
// convolution's residual add too), a convolution's tap stacks and bias lanes.
#include "plan.h"

#include <map>
#include <set>
#include <string>

#include "ir.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/Pass.h"
#include "vtpu/compiler/compiler.h"
#include "vtpu/config/timing.h"

namespace vtpu::compiler::codegen {

using mlir::Value;

std::vector<int64_t> shape_of(Value v) {
  auto t = mlir::cast<mlir::RankedTensorType>(v.getType());
  return {t.getShape().begin(), t.getShape().end()};
}

uint64_t numel(const std::vector<int64_t>& s) {
  uint64_t n = 1;
  for (int64_t d : s) n *= uint64_t(d);
  return n;
}

bool is_int32(Value v) { return mlir::cast<mlir::RankedTensorType>(v.getType()).getElementType().isInteger(32); }

Value through_row_reshapes(Value v) {
  while (v.hasOneUse()) {
    auto r = mlir::dyn_cast<tpu::ReshapeOp>(*v.getUsers().begin());
    if (!r || shape_of(r.getOutput()).back() != shape_of(v).back()) break;
    v = r.getOutput();
  }
  return v;
}

std::optional<tpu::ReshapeOp> head_view_split(Value v, uint64_t lanes) {
  if (!v.hasOneUse()) return std::nullopt;
  auto split = mlir::dyn_cast<tpu::ReshapeOp>(*v.getUsers().begin());
  if (!split) return std::nullopt;
  auto xs = shape_of(split.getInput()), ys = shape_of(split.getOutput());
  if (xs.size() != 3 || ys.size() != 4 || xs[0] != ys[0] || xs[1] != ys[1] || ys[2] * ys[3] != xs[2] || ys[2] < 2)
    return std::nullopt;
  uint64_t d = uint64_t(ys[3]);
  if (d % lanes != 0 && lanes % d != 0) return std::nullopt;
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

std::optional<Value> rhs_target(Value v) {
  Value t = through_row_reshapes(v);
  if (!t.hasOneUse()) return std::nullopt;
  auto bm = mlir::dyn_cast<tpu::BatchMatmulOp>(*t.getUsers().begin());
  if (!bm || bm.getRhs() != t || bm.getLhs() == t) return std::nullopt;
  return t;
}

namespace {

const char* const kPlanAttrs[] = {kStreamAttr,   kIdAttr,        kEpilogueAttr, kFusedIntoAttr, kRoleAttr,      kSlotAttr,
                                  kTapRowsAttr, kBiasLanesAttr, kConvFormAttr, kHeadsAttr,     kEarlyStoreAttr,
                                  kBackgroundAttr};

class Planner {
 public:
  Planner(const config::Config& cfg, bool int8) : cfg_(cfg), R_(cfg.core.mxu.rows), esz_(int8 ? 1 : 2), q8_(int8) {}

  void run(mlir::func::FuncOp fn) {
    mlir::Block& body = fn.getBody().front();
    for (mlir::Operation& op : body) drop_plan(&op);
    int64_t i = 0;
    for (mlir::Operation& op : body) pos_[&op] = 2 * i++;
    streams(body);
    heads(body);
    for (mlir::Operation& op : body)
      if (auto mm = mlir::dyn_cast<tpu::MatmulOp>(op)) attention_scale(mm);
    for (mlir::Operation& op : body) {
      if (auto mm = mlir::dyn_cast<tpu::MatmulOp>(op)) matmul_epilogue(mm);
      if (auto bm = mlir::dyn_cast<tpu::BatchMatmulOp>(op)) batch_matmul_epilogue(bm);
      if (auto ln = mlir::dyn_cast<tpu::LayerNormOp>(op)) layernorm_affine(ln);
    }
    for (mlir::Operation& op : body)
      if (auto conv = mlir::dyn_cast<tpu::Conv2DOp>(op)) plan_conv_form(conv);
    for (mlir::Operation& op : body)
      if (auto conv = mlir::dyn_cast<tpu::Conv2DOp>(op); conv && conv_form(conv) != "two-pixel") pool_after(conv);
    for (mlir::Operation& op : body)
      if (auto conv = mlir::dyn_cast<tpu::Conv2DOp>(op); conv && by_taps(conv)) {
        tap_rows(conv);
        residual_add(conv);
        bias_lanes(conv);
      }
    for (mlir::Operation& op : body)
      if (auto pool = mlir::dyn_cast<tpu::PoolOp>(op)) pool_background(pool);
    early_stores(body);
  }

 private:
  // Matmuls that read the same activation (attention's query, key and value projections)
  // and follow each other (only constants and reshapes that keep the rows in between, which
  // alias that activation) run as one stream of blocks; see gen_matmul_stream.
  void streams(mlir::Block& body) {
    auto root = [](Value v) {
      while (auto r = v.getDefiningOp<tpu::ReshapeOp>()) {
        if (shape_of(r.getOutput()).back() != shape_of(r.getInput()).back()) break;
        v = r.getInput();
      }
      return v;
    };
    int64_t next = 0;
    for (mlir::Operation& first : body) {
      auto op = mlir::dyn_cast<tpu::MatmulOp>(first);
      if (!op || is_int32(op.getOutput()) || op->hasAttr(kStreamAttr) || op->hasAttr(tpu::kAllReduceAttr)) continue;
      Value x = root(op.getInput());
      std::vector<mlir::Operation*> members{op}, aliases;
      for (mlir::Operation* n = op->getNextNode(); n; n = n->getNextNode()) {
        if (mlir::isa<mlir::tosa::ConstOp>(n)) continue;
        if (auto r = mlir::dyn_cast<tpu::ReshapeOp>(n); r && root(r.getOutput()) == x && r.getOutput() != x) {
          aliases.push_back(r);
          continue;
        }
        auto m = mlir::dyn_cast<tpu::MatmulOp>(n);
        if (!m || root(m.getInput()) != x || is_int32(m.getOutput()) || m->hasAttr(tpu::kAllReduceAttr)) break;
        members.push_back(m);
      }
      if (members.size() < 2) continue;
      // Generated at the first one's turn: the aliases first, then the matmuls together.
      for (mlir::Operation* m : members) set_int(m, kStreamAttr, next), gen_pos_[m] = pos_[op];
      for (mlir::Operation* a : aliases) set_int(a, kStreamAttr, next), gen_pos_[a] = pos_[op] - 1;
      ++next;
    }
  }

  // Attention's layout (kHeadsAttr): head views and head transposes at their splits, then
  // head merges at the transposes that are neither's.
  void heads(mlir::Block& body) {
    for (mlir::Operation& op : body)
      if (auto r = mlir::dyn_cast<tpu::ReshapeOp>(op)) {
        if (head_view(r)) pair(r, "view");
        else if (head_transpose(r)) pair(r, "transpose");
      }
    for (mlir::Operation& op : body)
      if (auto tp = mlir::dyn_cast<tpu::TransposeOp>(op); tp && codegen::heads(tp).empty() && head_merge(tp)) pair(tp, "merge");
  }
  // `first` and its only user are a pair of kind `kind`, the user's result made at first's turn.
  void pair(mlir::Operation* first, const char* kind) {
    mlir::Operation* second = *first->getResult(0).getUsers().begin();
    for (mlir::Operation* op : {first, second}) op->setAttr(kHeadsAttr, mlir::StringAttr::get(op->getContext(), kind));
    made_at_[second] = gen_pos(first);
  }
  // A head split read in place; as a batch matmul's left-hand side the last row's read runs
  // up to a row past the unsplit tensor, which only a float matmul's output has room for.
  bool head_view(tpu::ReshapeOp r) const {
    auto split = head_view_split(r.getInput(), R_);
    if (!split || *split != r) return false;
    if (auto mm = r.getInput().getDefiningOp<tpu::MatmulOp>(); mm && !is_int32(mm.getOutput())) return true;
    std::vector<Value> work{(*r.getOutput().getUsers().begin())->getResult(0)};
    while (!work.empty()) {
      Value u = work.back();
      work.pop_back();
      for (mlir::Operation* user : u.getUsers()) {
        if (auto bm = mlir::dyn_cast<tpu::BatchMatmulOp>(user); bm && bm.getLhs() == u) return false;
        if (!mlir::isa<tpu::BatchMatmulOp>(user)) work.push_back(user->getResult(0));
      }
    }
    return true;
  }
  // A head split [B, S, H*d] -> [B, S, H, d] (H > 1) whose only user is the transpose to
  // [B, H, d, S], on an array whose unified-buffer words hold an fp32 lane.
  bool head_transpose(tpu::ReshapeOp r) const {
    auto xs = shape_of(r.getInput()), ys = shape_of(r.getOutput());
    if (xs.size() != 3 || ys.size() != 4 || xs[0] != ys[0] || xs[1] != ys[1] || ys[2] * ys[3] != xs[2] || ys[3] == xs[2])
      return false;
    if (!r.getOutput().hasOneUse() || cfg_.core.unified_buffer.alignment_bytes > 4) return false;
    auto tp = mlir::dyn_cast<tpu::TransposeOp>(*r.getOutput().getUsers().begin());
    return tp && tp.getPerm() == llvm::ArrayRef<int64_t>{0, 2, 3, 1};
  }
  // A head merge: the transpose [B, H, S, d] -> [B, S, H, d] whose only user is a reshape to
  // [B, S, H*d], heads within lane blocks, each starting on a unified-buffer word.
  bool head_merge(tpu::TransposeOp tp) const {
    auto xs = shape_of(tp.getInput());
    if (xs.size() != 4 || tp.getPerm() != llvm::ArrayRef<int64_t>{0, 2, 1, 3} || !tp.getOutput().hasOneUse()) return false;
    auto r = mlir::dyn_cast<tpu::ReshapeOp>(*tp.getOutput().getUsers().begin());
    if (!r) return false;
    auto ms = shape_of(r.getOutput());
    uint64_t B = uint64_t(xs[0]), H = uint64_t(xs[1]), S = uint64_t(xs[2]), d = uint64_t(xs[3]);
    if (ms.size() != 3 || uint64_t(ms[0]) != B || uint64_t(ms[1]) != S || uint64_t(ms[2]) != H * d) return false;
    if (d % R_ != 0 && R_ % d != 0) return false;
    for (uint64_t h = 0; h < H; ++h)
      if ((h * d % R_) * esz_ % cfg_.core.unified_buffer.alignment_bytes) return false;
    return true;
  }

  // Attention's 1 / sqrt(d) when it is a power of two (d = 64: 1/8): the queries' matmul
  // multiplies its bf16 output by it in its epilogues (exact for a power of two, so
  // (c Q) K^T is c (Q K^T) bit for bit) and the scores' epilogue skips its scaling pass,
  // which on a vector-bound softmax is a pass over every score. Applies when `q` (a
  // matmul's output) is read through a head view only as the left-hand side of one batch
  // matmul whose output feeds, through reshapes, a per-channel affine step with one scale
  // and no bias, then a softmax fused into that batch matmul (rows within one lane block).
  void attention_scale(tpu::MatmulOp op) {
    Value q = op.getOutput();
    if (q8_ || is_int32(q)) return;
    auto split = head_view_split(q, R_);
    if (!split) return;
    auto single_user = [](Value v) -> mlir::Operation* { return v.hasOneUse() ? *v.getUsers().begin() : nullptr; };
    Value v = through_row_reshapes(mlir::cast<tpu::TransposeOp>(single_user(split->getOutput())).getOutput());
    auto bm = mlir::dyn_cast_or_null<tpu::BatchMatmulOp>(single_user(v));
    if (!bm || bm.getLhs() != v || bm.getRhs() == v || uint64_t(shape_of(bm.getRhs())[2]) > R_) return;
    Value s = through_row_reshapes(bm.getOutput());
    auto af = mlir::dyn_cast_or_null<tpu::AffineOp>(single_user(s));
    if (!af) return;
    auto sc = constant(af.getScale()), bi = constant(af.getBias());
    uint64_t N = uint64_t(shape_of(bm.getRhs())[2]);
    if (sc.size() < N || bi.size() < N) return;
    int e = 0;
    if (!(sc[0] > 0) || std::frexp(double(sc[0]), &e) != 0.5) return;
    for (uint64_t i = 0; i < N; ++i)
      if (sc[i] != sc[0] || bi[i] != 0.0f) return;
    auto sm = mlir::dyn_cast_or_null<tpu::SoftmaxOp>(single_user(through_row_reshapes(af.getOutput())));
    if (!sm || sm.getInput() != through_row_reshapes(af.getOutput())) return;
    fuse(op, "scale", af, "scale");
  }
  bool folded(mlir::Operation* op) const { return role(op) == "scale"; }

  void matmul_epilogue(tpu::MatmulOp op) {
    // An all-reduced matmul's epilogue runs after the all-reduce, on its own (tensor_parallel.cpp).
    if (q8_ || is_int32(op.getOutput()) || op->hasAttr(kEpilogueAttr) || op->hasAttr(tpu::kAllReduceAttr)) return;
    if (mlir::Operation* u = elementwise(op.getOutput(), op)) {
      fuse(op, "elementwise", u, "elementwise");
      beside_layernorm(op, u);
      return;
    }
    chain(op);
  }

  // log, recip or rsqrt of a tensor with a partial lane block: its padding lanes' zeros
  // become infinite, which gen_unary sets back to 0; the epilogues do not.
  bool padding_goes_infinite(mlir::Operation* op) const {
    auto un = mlir::dyn_cast<tpu::UnaryOp>(op);
    return un && infinite_at_zero(un.getFn().str()) && uint64_t(shape_of(un.getOutput()).back()) % R_ != 0;
  }
  // sqrt is two table steps (gen_unary), not one epilogue instruction.
  static bool two_steps(mlir::Operation* op) {
    auto un = mlir::dyn_cast<tpu::UnaryOp>(op);
    return un && un.getFn() == "sqrt";
  }

  // An elementwise op that is the only consumer of a matmul's output (through reshapes that
  // keep the rows), in bf16: a table function (BERT's GELU), a per-channel affine step
  // (attention's 1 / sqrt(d)) or an add of an activation computed before the matmul (a
  // residual), with its clamp. It runs in the matmul's epilogues (fuse_elementwise).
  mlir::Operation* elementwise(Value out, mlir::Operation* producer) {
    Value v = through_row_reshapes(out);
    if (!v.hasOneUse()) return nullptr;
    mlir::Operation* u = *v.getUsers().begin();
    auto ys = shape_of(out);
    if (u->getNumResults() != 1 || numel(shape_of(u->getResult(0))) != numel(ys) || shape_of(u->getResult(0)).back() != ys.back())
      return nullptr;
    if (mlir::isa<tpu::UnaryOp>(u)) return padding_goes_infinite(u) || two_steps(u) ? nullptr : u;
    if (mlir::isa<tpu::AffineOp>(u)) return folded(u) ? nullptr : u;
    auto ad = mlir::dyn_cast<tpu::AddOp>(u);
    if (!ad) return nullptr;
    Value other = ad.getLhs() == v ? ad.getRhs() : ad.getLhs();
    if (other == v || !generated_before(other, producer)) return nullptr;
    auto os = shape_of(other);
    if (numel(os) / uint64_t(os.back()) != numel(ys) / uint64_t(ys.back()) || os.back() != ys.back()) return nullptr;
    return u;
  }

  // A chain of bf16 elementwise ops after a matmul (GPT-2's tanh-form GELU: x*x*x, scales, an
  // add, tanh, a product with x) whose every operand is the matmul's output or an earlier
  // link, and whose every link but the last is read only inside the chain: it runs in the
  // matmul's epilogues (fuse_chain). Links live in the output's buffer (slot 0) and one
  // scratch buffer (slot 1): a link writes the slot of an operand it reads for the last
  // time, else a free one; the last link must end in the output's buffer.
  void chain(tpu::MatmulOp op) {
    Value out = op.getOutput();
    if (out.use_empty()) return;
    std::vector<mlir::Operation*> links;
    std::set<const void*> in_chain{out.getAsOpaquePointer()};
    auto shape = shape_of(out);
    for (mlir::Operation* n = op->getNextNode(); n; n = n->getNextNode()) {
      if (mlir::isa<mlir::tosa::ConstOp>(n)) continue;
      bool link = mlir::isa<tpu::BinaryOp, tpu::AddOp, tpu::UnaryOp, tpu::AffineOp>(n) && n->getNumResults() == 1 &&
                  shape_of(n->getResult(0)) == shape;
      if (auto b = mlir::dyn_cast<tpu::BinaryOp>(n); b && b.getKind() == "div") link = false;
      if (mlir::isa<tpu::AffineOp>(n) && folded(n)) link = false;
      if (padding_goes_infinite(n) || two_steps(n)) link = false;
      for (Value v : link ? link_operands(n) : std::vector<Value>{}) link &= in_chain.count(v.getAsOpaquePointer()) > 0;
      if (!link) break;
      links.push_back(n);
      in_chain.insert(n->getResult(0).getAsOpaquePointer());
    }
    if (links.size() < 2) return;
    // Every value but the last is read only by later links.
    std::set<mlir::Operation*> ops(links.begin(), links.end());
    std::vector<Value> values{out};
    for (mlir::Operation* l : links) values.push_back(l->getResult(0));
    for (size_t i = 0; i + 1 < values.size(); ++i)
      for (mlir::Operation* u : values[i].getUsers())
        if (!ops.count(u)) return;
    std::map<const void*, size_t> last;  // value -> index of the last link reading it
    for (size_t i = 0; i < links.size(); ++i)
      for (Value v : link_operands(links[i])) last[v.getAsOpaquePointer()] = i;
    std::map<const void*, int> slot{{out.getAsOpaquePointer(), 0}};
    std::vector<int> dst(links.size());
    for (size_t i = 0; i < links.size(); ++i) {
      std::set<int> busy;
      for (auto& [v, s] : slot)
        if (last.count(v) && last[v] > i) busy.insert(s);
      int d = !busy.count(0) ? 0 : !busy.count(1) ? 1 : -1;
      if (d < 0) return;  // a third live value: not handled
      dst[i] = d;
      slot[links[i]->getResult(0).getAsOpaquePointer()] = d;
    }
    if (dst.back() != 0) return;  // the result must end in the output's buffer
    for (size_t i = 0; i < links.size(); ++i) {
      fuse(op, "chain", links[i], "link");
      set_int(links[i], kSlotAttr, dst[i]);
    }
  }

  // A bf16 layer norm of a matmul's output plus the residual added in its epilogues
  // (BERT's post-norm): the matmul's epilogues also convert the rows to fp32 for it, and it
  // may run beside the matmul's stream (prepare_layernorm, plan_matmul).
  void beside_layernorm(tpu::MatmulOp op, mlir::Operation* add) {
    Value out = op.getOutput();
    if (!mlir::isa<tpu::AddOp>(add) || !out.hasOneUse() || *out.getUsers().begin() != add) return;
    Value v = through_row_reshapes(add->getResult(0));
    if (!v.hasOneUse()) return;
    auto ln = mlir::dyn_cast<tpu::LayerNormOp>(*v.getUsers().begin());
    if (!ln || ln.getInput() != v) return;
    fuse(op, "elementwise", ln, "layernorm");
  }

  // Attention's softmax (optionally after a per-channel affine step, the 1 / sqrt(d) scale)
  // as the only consumer of a bf16 batch matmul whose rows fit one lane block: it runs in
  // the batch matmul's epilogues on the fp32 accumulators (fuse_softmax). Else an
  // elementwise op as after a matmul.
  void batch_matmul_epilogue(tpu::BatchMatmulOp op) {
    Value out = op.getOutput();
    if (q8_ || is_int32(out)) return;
    auto ys = shape_of(out);
    if (ceil_div(uint64_t(ys.back()), R_) == 1) {
      Value v = through_row_reshapes(out);
      tpu::AffineOp af = v.hasOneUse() ? mlir::dyn_cast<tpu::AffineOp>(*v.getUsers().begin()) : tpu::AffineOp();
      if (af) v = through_row_reshapes(af.getOutput());
      auto sm = v.hasOneUse() ? mlir::dyn_cast<tpu::SoftmaxOp>(*v.getUsers().begin()) : tpu::SoftmaxOp();
      bool ok = sm && !sm.getLog() && sm.getInput() == v && numel(shape_of(sm.getOutput())) == numel(ys);
      uint64_t M = uint64_t(shape_of(op.getLhs())[1]);
      if (ok && sm.getMask()) ok = constant(sm.getMask()).size() == M * uint64_t(ys.back());
      if (ok) {
        if (af && !folded(af)) fuse(op, "softmax", af, "softmax-scale");
        fuse(op, "softmax", sm, "softmax");
        context(op, sm);
        return;
      }
    }
    if (mlir::Operation* u = elementwise(out, op)) fuse(op, "elementwise", u, "elementwise");
  }

  // Attention's context (role "context", plan.h): the batch matmul reading the softmax in
  // the scores' epilogues, whose right-hand side is there at the scores' turn but for
  // reshapes that keep the rows, and whose blocks pair with the scores' (one column block
  // each: the same batch, rows and row chunks).
  void context(tpu::BatchMatmulOp scores, tpu::SoftmaxOp sm) {
    Value v = through_row_reshapes(sm.getOutput());
    auto ctx = v.hasOneUse() ? mlir::dyn_cast<tpu::BatchMatmulOp>(*v.getUsers().begin()) : tpu::BatchMatmulOp();
    if (!ctx || ctx.getLhs() != v) return;
    for (Value r = ctx.getRhs(); !generated_before(r, scores, true);) {
      auto rs = r.getDefiningOp<tpu::ReshapeOp>();
      if (!rs || !r.hasOneUse() || shape_of(rs.getOutput()).back() != shape_of(rs.getInput()).back()) return;
      r = rs.getInput();
    }
    auto as = shape_of(ctx.getLhs()), ss = shape_of(scores.getOutput());
    if (as.size() != 3 || numel(as) != numel(ss) || as.back() != ss.back() ||
        shape_of(ctx.getOutput()).back() > int64_t(cfg_.core.mxu.cols))
      return;
    fuse(scores, "softmax", ctx, "context");
    made_at_[ctx] = gen_pos(scores);
  }

  // The per-channel scale and shift after a bf16 layer norm (its only user), which the
  // layer norm then applies to its fp32 rows before their one rounding to bf16.
  void layernorm_affine(tpu::LayerNormOp ln) {
    if (q8_ || !ln.getOutput().hasOneUse()) return;
    auto af = mlir::dyn_cast<tpu::AffineOp>(*ln.getOutput().getUsers().begin());
    if (!af || folded(af) || shape_of(af.getOutput()) != shape_of(ln.getOutput())) return;
    fuse(ln, "affine", af, "ln-affine");
  }

  // How the convolution is generated (kConvFormAttr): packed from HBM (conv_packed.cpp), two
  // output pixels per matmul row (conv_wide.cpp), or by taps (conv.cpp, no attribute).
  void plan_conv_form(tpu::Conv2DOp op) {
    if (packed(op)) {
      op->setAttr(kConvFormAttr, mlir::StringAttr::get(op->getContext(), "packed"));
      if (uint64_t p = packed_rows(op, cfg_, esz_).placed) set_int(op, kPlacedPixelsAttr, int64_t(p));
    } else if (wide_conv(op, cfg_, esz_)) op->setAttr(kConvFormAttr, mlir::StringAttr::get(op->getContext(), "two-pixel"));
  }
  static bool by_taps(tpu::Conv2DOp op) { return conv_form(op).empty(); }
  bool packed(tpu::Conv2DOp op) const {
    Value x = op.getInput();
    if (packed_view(x, R_, esz_, acc_region(cfg_))) return true;  // a band of a model input's rows
    return mlir::isa<mlir::BlockArgument>(x) && !is_int32(x) && packed_input(x, R_, esz_, acc_region(cfg_));
  }

  // A pool that is the only use of a convolution's float output runs beside the
  // convolution's matmuls: after a packed convolution that stacks kernel rows (each image's
  // rows stacked in turn) and has more than one image, image by image (conv_packed.cpp);
  // after one generated by taps, on a square array, output row by output row once the
  // rows its windows read are done (pool.cpp, pool_beside). Not a global pool (one window
  // over the whole image: nothing to overlap) nor a pool in bands.
  void pool_after(tpu::Conv2DOp op) {
    Value out = op.getOutput();
    if (is_int32(out) || !out.hasOneUse() || op->hasAttr(tpu::kBandAttr)) return;
    auto pool = mlir::dyn_cast<tpu::PoolOp>(*out.getUsers().begin());
    if (!pool || pool->hasAttr(tpu::kBandAttr)) return;
    if (conv_form(op) == "packed" && (conv_shape(op).N < 2 || packed_rows(op, cfg_, esz_).S < 2)) return;
    if (conv_form(op) != "packed") {
      auto ys = shape_of(pool.getOutput());
      if (!by_taps(op) || R_ != cfg_.core.mxu.cols || ys.size() != 4 || (ys[1] == 1 && ys[2] == 1)) return;
    }
    fuse(op, "pool", pool, "pool");
  }

  // A pool beside independent convolutions (kBackgroundAttr): a pool whose windows read more
  // than one row, not done elsewhere and not in bands, whose input is computed before
  // convolutions generated by taps that come before it (so none needs its output): the
  // latest of them, until the vector cycles they leave free beside their matmuls cover the
  // pool's, each taking a share of the pool's instructions in proportion to what it leaves
  // free (all of them when they do not cover it: each share still overlaps some matmuls).
  void pool_background(tpu::PoolOp pool) {
    auto k = pool.getKernel();
    auto xs = shape_of(pool.getInput()), ys = shape_of(pool.getOutput());
    if (!role(pool).empty() || pool->hasAttr(tpu::kBandAttr) || is_int32(pool.getOutput()) || k[0] * k[1] < 2 || xs.size() != 4 ||
        (ys[1] == 1 && ys[2] == 1))
      return;
    uint64_t need = config::vector_issue_cycles(cfg_, numel(ys) / uint64_t(ys[3])) * ceil_div(uint64_t(ys[3]), R_) * uint64_t(k[0] * k[1]);
    mlir::Operation* from = pool.getInput().getDefiningOp();
    std::vector<std::pair<mlir::Operation*, uint64_t>> hosts;
    uint64_t have = 0;
    for (mlir::Operation* o = pool->getPrevNode(); o && o != from && have < need; o = o->getPrevNode()) {
      auto conv = mlir::dyn_cast<tpu::Conv2DOp>(o);
      if (!conv || !by_taps(conv) || conv->hasAttr(kBackgroundAttr) || conv->hasAttr(tpu::kBandAttr)) continue;
      if (uint64_t s = spare_vector_cycles(conv)) hosts.push_back({o, s}), have += s;
    }
    if (hosts.empty()) return;
    set_int(pool, kIdAttr, next_id_++);
    pool->setAttr(kRoleAttr, mlir::StringAttr::get(pool->getContext(), "background"));
    uint64_t done = 0;
    for (auto it = hosts.rbegin(); it != hosts.rend(); ++it) {
      int64_t lo = int64_t(done * 1000 / have), hi = int64_t((done + it->second) * 1000 / have);
      done += it->second;
      int64_t v[] = {pool->getAttrOfType<mlir::IntegerAttr>(kIdAttr).getInt(), lo, hi};
      it->first->setAttr(kBackgroundAttr, mlir::DenseI64ArrayAttr::get(pool->getContext(), v));
    }
  }
  // The vector unit's cycles a convolution generated by taps leaves free: its matmul rows
  // (every output row once per tap group, input and output lane block, spread over the
  // MXUs) minus its epilogues (one vector pass per output row and lane block; bf16 two).
  uint64_t spare_vector_cycles(tpu::Conv2DOp op) const {
    ConvShape c = conv_shape(op);
    auto stack = op->getAttrOfType<mlir::IntegerAttr>(kTapRowsAttr);
    uint64_t st = stack ? uint64_t(stack.getInt()) : 1, rows = c.N * c.OH * c.OW, ob = ceil_div(c.CO, cfg_.core.mxu.cols);
    uint64_t mm = rows * ceil_div(c.KH, st) * c.KW * ceil_div(c.CIg * st, R_) * ob / cfg_.core.mxu.count;
    uint64_t ep = config::vector_issue_cycles(cfg_, rows) * ob * (q8_ ? 1 : 2);
    return mm > ep ? mm - ep : 0;
  }

  // Tap stacks (conv.cpp, conv_input): a "same" convolution of one group with more than one
  // kernel row and image row, on at most R/2 channels whose bytes end on an aligned address
  // (the DMA writing the pixels below's channels after them), that is its input's last
  // reader (it then overwrites the input's padding lanes): its matmul rows take as many
  // kernel rows as the kernel has, as R lanes hold groups of its channels, as the image has
  // rows.
  void tap_rows(tpu::Conv2DOp op) {
    ConvShape c = conv_shape(op);
    if (c.same() && c.G == 1 && c.KH > 1 && c.H > 1 && 2 * c.CI <= R_ &&
        (c.CI * esz_) % cfg_.core.unified_buffer.alignment_bytes == 0 && read_last_by(op.getInput(), op, op))
      set_int(op, kTapRowsAttr, int64_t(std::min<uint64_t>({c.KH, R_ / c.CI, c.H})));
  }

  // A residual add in the convolution's epilogues (conv.cpp, fusable_add): the add is the
  // only user of the convolution's float output; its other operand, of the same shape, is
  // a different value computed before the convolution and read by nothing generated after
  // it but the add (each output block's sum is written over it). Only where it pays: when
  // an output block's matmuls (taps x the input's lane blocks) last at least as long as
  // the epilogues the vector unit runs meanwhile (one per MXU, two operations each).
  void residual_add(tpu::Conv2DOp op) {
    Value out = op.getOutput();
    ConvShape c = conv_shape(op);
    if (is_int32(out) || !out.hasOneUse() ||
        c.KH * c.KW * ceil_div(c.CI, R_) * cfg_.core.vector.sublanes < 2 * uint64_t(cfg_.core.mxu.count))
      return;
    auto add = mlir::dyn_cast<tpu::AddOp>(*out.getUsers().begin());
    if (!add || add.getLhs() == add.getRhs() || add->hasAttr(kFusedIntoAttr)) return;
    Value other = add.getLhs() == out ? add.getRhs() : add.getLhs();
    auto ys = shape_of(add.getOutput());
    if (shape_of(other) != ys || shape_of(out) != ys || !generated_before(other, op) || !read_last_by(other, add, op)) return;
    fuse(op, "residual-add", add, "residual-add");
  }

  // Bias on the MXU (INT8): a 1x1 convolution (stride 1, one group, no padding) reading at
  // most C/2 channels of a two-pixel convolution's output, whose padding lanes from C/2 on
  // hold the bias lanes' constants (conv_wide.cpp), adds its bias through weight rows at
  // those lanes (conv.cpp, conv_weights).
  void bias_lanes(tpu::Conv2DOp op) {
    auto from = op.getInput().getDefiningOp<tpu::Conv2DOp>();
    if (!q8_ || !from || conv_form(from) != "two-pixel") return;
    ConvShape c = conv_shape(op);
    uint64_t lanes = cfg_.core.mxu.cols / 2;
    bool padded = (c.pt || c.pb || c.pl || c.pr) && !c.same();
    if (c.KH == 1 && c.KW == 1 && c.sh == 1 && c.sw == 1 && c.G == 1 && !padded && c.CI <= lanes)
      set_int(op, kBiasLanesAttr, int64_t(lanes));
  }

  // Early-store candidates (kEarlyStoreAttr): every op generated at its own turn, or that may
  // be where the emitter declines what was planned, whose result becomes a batch matmul's
  // right-hand side (through reshapes that keep the rows); a head view's or head transpose's
  // split for its transpose's result.
  void early_stores(mlir::Block& body) {
    for (mlir::Operation& op : body) {
      if (!op.getDialect() || op.getDialect()->getNamespace() != "tpu" || op.hasAttr(kStreamAttr) ||
          (made_elsewhere(&op) && !op.hasAttr(kFusedIntoAttr)))
        continue;
      bool candidate = false;
      llvm::StringRef h = codegen::heads(&op);
      if (h == "view" || h == "transpose") {
        candidate = rhs_target((*op.getResult(0).getUsers().begin())->getResult(0)).has_value();
      } else {
        for (Value r : op.getResults()) candidate |= rhs_target(r).has_value();
      }
      if (candidate) op.setAttr(kEarlyStoreAttr, mlir::UnitAttr::get(op.getContext()));
    }
  }

  // Whether every reader of v but `last` is generated before `at` (so, at `at`'s turn,
  // `last` is the one reader of v left).
  bool read_last_by(Value v, mlir::Operation* last, mlir::Operation* at) const {
    for (mlir::Operation* u : v.getUsers())
      if (u != last && (!pos_.count(u) || gen_pos(u) >= gen_pos(at))) return false;
    return true;
  }

  // Whether v is in the unified buffer when `producer` is generated: a model input, or the
  // result of an op generated before it (a stream's matmuls are generated together, after
  // the ops before the stream's first). `made`: counting results made at another op's turn
  // (made_elsewhere) as made there, and integer model inputs (left in HBM) as not there.
  bool generated_before(Value v, mlir::Operation* producer, bool made = false) const {
    mlir::Operation* d = v.getDefiningOp();
    if (!d) return !made || !is_int32(v);
    if (!d->getDialect() || d->getDialect()->getNamespace() != "tpu") return false;
    auto it = made ? made_at_.find(d) : made_at_.end();
    return (it != made_at_.end() ? it->second : gen_pos(d)) < gen_pos(producer);
  }
  int64_t gen_pos(mlir::Operation* op) const {
    auto it = gen_pos_.find(op);
    return it != gen_pos_.end() ? it->second : pos_.at(op);
  }

  // A link's activation operands (an affine step's scale and shift are constants).
  static std::vector<Value> link_operands(mlir::Operation* n) {
    if (auto a = mlir::dyn_cast<tpu::AffineOp>(n)) return {a.getInput()};
    return {n->getOperands().begin(), n->getOperands().end()};
  }
  static std::vector<float> constant(Value v) {
    if (auto c = v.getDefiningOp<mlir::tosa::ConstOp>()) return tpu::float_values(c.getValue());
    return {};
  }
  static uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
  static llvm::StringRef role(mlir::Operation* op) { return str_attr(op, kRoleAttr); }
  static void set_int(mlir::Operation* op, const char* name, int64_t v) {
    op->setAttr(name, mlir::IntegerAttr::get(mlir::IntegerType::get(op->getContext(), 64), v));
  }
  // `op` does `what` as `role` of producer's epilogues (kind `kind`).
  void fuse(mlir::Operation* producer, const char* kind, mlir::Operation* what, const char* role) {
    if (!producer->hasAttr(kIdAttr)) set_int(producer, kIdAttr, next_id_++);
    producer->setAttr(kEpilogueAttr, mlir::StringAttr::get(producer->getContext(), kind));
    what->setAttr(kFusedIntoAttr, producer->getAttr(kIdAttr));
    what->setAttr(kRoleAttr, mlir::StringAttr::get(what->getContext(), role));
  }

  const config::Config& cfg_;
  uint64_t R_, esz_;
  bool q8_;
  int64_t next_id_ = 0;
  std::map<mlir::Operation*, int64_t> pos_, gen_pos_;  // 2 x block order; where a stream's ops are generated
  std::map<mlir::Operation*, int64_t> made_at_;  // where the ops made_elsewhere get their results
};

}  // namespace

llvm::StringRef str_attr(mlir::Operation* op, const char* name) {
  auto a = op->getAttrOfType<mlir::StringAttr>(name);
  return a ? a.getValue() : llvm::StringRef();
}

llvm::StringRef conv_form(mlir::Operation* conv) { return str_attr(conv, kConvFormAttr); }

llvm::StringRef heads(mlir::Operation* op) { return str_attr(op, kHeadsAttr); }

bool made_elsewhere(mlir::Operation* op) {
  llvm::StringRef h = heads(op);
  if (mlir::isa<tpu::TransposeOp>(op)) return h == "view" || h == "transpose";
  if (mlir::isa<tpu::ReshapeOp>(op)) return h == "merge";
  return str_attr(op, kRoleAttr) == "context";
}

void drop_plan(mlir::Operation* op) {
  for (const char* a : kPlanAttrs) op->removeAttr(a);
}

void plan_codegen(mlir::ModuleOp module, const config::Config& cfg, bool int8) {
  for (auto fn : module.getOps<mlir::func::FuncOp>()) Planner(cfg, int8).run(fn);
}

}  // namespace vtpu::compiler::codegen

namespace vtpu::compiler::codegen {

#define GEN_PASS_DECL_PLANCODEGEN
#define GEN_PASS_DEF_PLANCODEGEN
#include "vtpu/compiler/CodegenPasses.h.inc"

namespace {

struct PlanCodegenPass : impl::PlanCodegenBase<PlanCodegenPass> {
  using PlanCodegenBase::PlanCodegenBase;
  void runOnOperation() override {
    try {
      if (dtype != "bf16" && dtype != "int8") throw UserError("dtype must be bf16 or int8, not '" + dtype + "'");
      plan_codegen(getOperation(), config::resolve(config), dtype == "int8");
    } catch (const std::exception& e) {
      getOperation().emitError() << "tpu-plan-codegen: " << e.what();
      signalPassFailure();
    }
  }
};

}  // namespace

void register_codegen_passes() {
  mlir::registerPass([]() -> std::unique_ptr<mlir::Pass> { return createPlanCodegen(); });
}

}  // namespace vtpu::compiler::codegen
