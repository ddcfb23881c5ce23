// Fusion of elementwise ops into a matmul's epilogues (docs/compiler.md, "Code generation").
#include "codegen_internal.h"

namespace vtpu::compiler::codegen {

// The ops the planner put into `producer`'s epilogues as `role`, in block order.
std::vector<mlir::Operation*> Codegen::planned(mlir::Operation* producer, llvm::StringRef role) const {
  std::vector<mlir::Operation*> ops;
  auto id = producer->getAttrOfType<mlir::IntegerAttr>(kIdAttr);
  if (!id) return ops;
  auto it = planned_.find(id.getInt());
  if (it == planned_.end()) return ops;
  for (mlir::Operation* op : it->second)
    if (op->getAttr(kFusedIntoAttr) == id && (role.empty() || has_role(op, role))) ops.push_back(op);
  return ops;
}

llvm::StringRef Codegen::epilogue_kind(mlir::Operation* op) {
  auto k = op->getAttrOfType<mlir::StringAttr>(kEpilogueAttr);
  return k ? k.getValue() : llvm::StringRef();
}

bool Codegen::has_role(mlir::Operation* op, llvm::StringRef role) {
  auto r = op->getAttrOfType<mlir::StringAttr>(kRoleAttr);
  return r && r.getValue() == role;
}

// The emitter does not do what the plan says for `role` (a buffer does not fit, an operand
// is not in the unified buffer): those ops lose their plan, and so does `producer`'s
// epilogue when nothing is left in it.
void Codegen::decline(mlir::Operation* producer, llvm::StringRef role) {
  for (mlir::Operation* op : planned(producer, role)) drop_plan_role(op);
  if (planned(producer, "").empty()) producer->removeAttr(kEpilogueAttr);
}

// An op's part as another's epilogue (not its own plan as a producer).
void Codegen::drop_plan_role(mlir::Operation* op) {
  op->removeAttr(kFusedIntoAttr);
  op->removeAttr(kRoleAttr);
  op->removeAttr(kSlotAttr);
}

// The other operand of the add that is out's only user (through reshapes that keep the
// rows), when it is in the unified buffer: a residual the op producing `out` may be fused with.
std::optional<uint64_t> Codegen::residual_base(Value out) {
  Value v = through_row_reshapes(out);
  if (!v.hasOneUse()) return std::nullopt;
  auto ad = mlir::dyn_cast<tpu::AddOp>(*v.getUsers().begin());
  if (!ad) return std::nullopt;
  auto it = acts_.find((ad.getLhs() == v ? ad.getRhs() : ad.getLhs()).getAsOpaquePointer());
  if (it == acts_.end()) return std::nullopt;
  return it->second.base;
}

// A chain of bf16 elementwise ops after a matmul (GPT-2's tanh-form GELU: x*x*x, scales, an
// add, tanh, a product with x) whose every operand is the matmul's output or an earlier
// link, and whose every link but the last is read only inside the chain: it runs in the
// matmul's epilogues, one vector operation per link on each output block's rows (the same
// operations in the same order as the separate layers, so the same bits). Links live in
// the output's buffer and one scratch buffer, reused once a value is dead. Returns the
// extra phases of output block (n block, byte offset in the block, rows), or nothing.
Codegen::FusedPhases Codegen::fuse_chain(mlir::Operation* producer, const Act& y, const std::string& into_layer) {
  Value out = producer->getResult(0);
  std::vector<mlir::Operation*> chain = planned(producer, "link");
  auto shape = shape_of(out);
  // A link's activation operands (an affine step's scale and shift are constants).
  auto activations = [](mlir::Operation* n) {
    if (auto a = mlir::dyn_cast<tpu::AffineOp>(n)) return std::vector<Value>{a.getInput()};
    return std::vector<Value>(n->getOperands().begin(), n->getOperands().end());
  };
  std::map<const void*, int> slot{{out.getAsOpaquePointer(), 0}};
  std::vector<int> dst;
  for (mlir::Operation* n : chain) {
    dst.push_back(int(n->getAttrOfType<mlir::IntegerAttr>(kSlotAttr).getInt()));
    slot[n->getResult(0).getAsOpaquePointer()] = dst.back();
  }
  // The scratch buffer is freed with the last link living there (release() frees a buffer
  // once no value shares it).
  Act t = y;
  if (std::count(dst.begin(), dst.end(), 1)) {
    if (ub_.largest_free() < y.bytes() + (1 << 16)) return decline(producer, "link"), FusedPhases();
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
      auto u = [&](int s, int reg) { return ub_ref(reg_ref(at(s).base + n * at(s).block_bytes + off, reg, pre)); };
      emit::Mem d = u(l.dst, 6), a = u(l.srcs[0], 7);
      std::string text;
      if (l.op == "affine") text = emit::vec_affine(d, a, rows, isa::Dtype::Bf16, emit::Param{l.params[n]}, kPendingFlag);
      else if (l.srcs.size() == 2) {
        emit::Mem b = u(l.srcs[1], 8);
        text = vec_binary(l.op, d, a, b, rows, isa::Dtype::Bf16, std::nullopt, kPendingFlag);
      } else text = vec_unary(l.op, d, a, rows, isa::Dtype::Bf16, kPendingFlag);
      ph.push_back(pre + "  " + text + "\n");
      if (!l.clamp.empty()) {
        pre.clear();
        emit::Mem c = u(l.dst, 6);
        ph.push_back(pre + "  " + emit::vec_clamp(c, c, rows, isa::Dtype::Bf16, emit::Param{l.clamp}, kPendingFlag) + "\n");
      }
    }
    return ph;
  };
}

// An elementwise op that is the only consumer of a matmul's output (through reshapes that
// keep the rows), in bf16: a table function (BERT's GELU), a per-channel affine step
// (attention's 1 / sqrt(d)) or an add of an activation already computed (a residual),
// with its clamp. It then runs in the matmul's epilogues, on each output block right
// after the block's conversion to bf16: the same vector operations on the same values as
// its own pass would run (so the same bits), but overlapping the next blocks' matmuls.
// Returns the extra epilogue phases of output block (n block, byte offset in the block,
// rows), or nothing when there is no such op.
Codegen::FusedPhases Codegen::fuse_elementwise(mlir::Operation* producer, const Act& y, const std::string& into_layer) {
  Value v = through_row_reshapes(producer->getResult(0));
  mlir::Operation* u = planned(producer, "elementwise").at(0);
  FusedPhases f;
  if (auto un = mlir::dyn_cast<tpu::UnaryOp>(u)) {
    std::string fn = un.getFn().str();
    f = [this, y, fn](uint64_t n, uint64_t off, uint64_t rows) {
      std::string pre, o = reg_ref(y.base + n * y.block_bytes + off, 6, pre);
      return std::vector<std::string>{pre + "  " + vec_unary(fn, ub_ref(o), ub_ref(o), rows, isa::Dtype::Bf16, kPendingFlag) + "\n"};
    };
  } else if (auto af = mlir::dyn_cast<tpu::AffineOp>(u)) {
    std::vector<std::string> params;
    for (uint64_t blk = 0; blk < y.blocks; ++blk)
      params.push_back(affine_param(const_floats(af.getScale(), af.getLayer().str()), const_floats(af.getBias(), af.getLayer().str()), blk, 1.0, 1.0));
    f = [this, y, params](uint64_t n, uint64_t off, uint64_t rows) {
      std::string pre, o = reg_ref(y.base + n * y.block_bytes + off, 6, pre);
      return std::vector<std::string>{
          pre + "  " + emit::vec_affine(ub_ref(o), ub_ref(o), rows, isa::Dtype::Bf16, emit::Param{params[n]}, kPendingFlag) + "\n"};
    };
  } else if (auto ad = mlir::dyn_cast<tpu::AddOp>(u)) {
    Value other = ad.getLhs() == v ? ad.getRhs() : ad.getLhs();
    auto it = acts_.find(other.getAsOpaquePointer());
    if (it == acts_.end() || it->second.rows != y.rows || it->second.blocks != y.blocks)  // not in the unified buffer
      return decline(producer, "elementwise"), decline(producer, "layernorm"), FusedPhases();
    Act b = it->second;
    std::string cp = clamp_param(ad.getClampMin().convertToDouble(), ad.getClampMax().convertToDouble());
    f = [this, y, b, cp](uint64_t n, uint64_t off, uint64_t rows) {
      std::string pre, o = reg_ref(y.base + n * y.block_bytes + off, 6, pre), bo = reg_ref(b.base + n * b.block_bytes + off, 7, pre);
      std::vector<std::string> ph{
          pre + "  " + emit::vec_add(ub_ref(o), ub_ref(o), ub_ref(bo), rows, isa::Dtype::Bf16, std::nullopt, kPendingFlag) + "\n"};
      if (!cp.empty()) {
        std::string pre2, o2 = reg_ref(y.base + n * y.block_bytes + off, 6, pre2);
        ph.push_back(pre2 + "  " + emit::vec_clamp(ub_ref(o2), ub_ref(o2), rows, isa::Dtype::Bf16, emit::Param{cp}, kPendingFlag) + "\n");
      }
      return ph;
    };
  } else {
    throw InternalError("planned an epilogue op codegen does not fuse: " + u->getName().getStringRef().str());
  }
  Act fy = y;
  fy.shape = shape_of(u->getResult(0));
  fused_[u] = fy;
  fused_bounds_.push_back({into_layer, u->getName().stripDialect().str(), fy.shape});
  return f;
}

}  // namespace vtpu::compiler::codegen
