// TOSA -> tpu dialect.
//
// Passes (all on func @main, registered for vtpu-opt):
//   --tpu-cancel-transposes  removes transpose pairs that compose to the identity
//   --tpu-fold-batchnorm     folds per-channel tosa.mul/tosa.add by constants into the
//                            preceding conv2d / fully_connected weights and bias
//   --tpu-lower-tosa         fuses conv/matmul + bias + clamp, matches softmax, folds a
//                            flatten's NCHW transpose into the next matmul's weights, and
//                            turns each layer into one tpu op
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "tpu_dialect.h"
#include "vtpu/compiler/compiler.h"

namespace vtpu::tpu {
namespace {

using mlir::Value;
namespace tosa = mlir::tosa;

std::string layer_name(mlir::Operation* op) {
  if (auto n = mlir::dyn_cast<mlir::NameLoc>(op->getLoc())) return n.getName().str();
  return op->getName().getStringRef().str();
}

[[noreturn]] void fail(mlir::Operation* op, const std::string& what) {
  throw compiler::CompileError(fmt::format("node '{}': {}", layer_name(op), what));
}

// The float data of a tosa.const, or nullopt. Looks through the reshapes the importer adds
// for ONNX broadcasting, and through transposes that cannot reorder the data (at most one
// dimension above 1), so `x + bias[C]` is seen as a constant operand.
std::optional<std::vector<float>> const_data(Value v) {
  while (true) {
    if (auto rs = v.getDefiningOp<tosa::ReshapeOp>()) {
      v = rs.getInput1();
      continue;
    }
    if (auto tr = v.getDefiningOp<tosa::TransposeOp>()) {
      auto t = mlir::cast<mlir::RankedTensorType>(tr.getInput1().getType());
      if (llvm::count_if(t.getShape(), [](int64_t d) { return d != 1; }) > 1) return std::nullopt;
      v = tr.getInput1();
      continue;
    }
    break;
  }
  auto c = v.getDefiningOp<tosa::ConstOp>();
  if (!c) return std::nullopt;
  auto attr = mlir::dyn_cast<mlir::DenseElementsAttr>(c.getValue());
  if (!attr || !attr.getElementType().isF32()) return std::nullopt;
  std::vector<float> out;
  out.reserve(size_t(attr.getNumElements()));
  for (float f : attr.getValues<float>()) out.push_back(f);
  return out;
}

Value make_const(mlir::OpBuilder& b, mlir::Location loc, const std::vector<int64_t>& shape, const std::vector<float>& data) {
  auto type = mlir::RankedTensorType::get(shape, b.getF32Type());
  return b.create<tosa::ConstOp>(loc, type, mlir::DenseElementsAttr::get(type, llvm::ArrayRef<float>(data)));
}

// True if v is a tosa.const seen through any reshapes and transposes (weights in the making).
bool is_constant(Value v) {
  while (mlir::Operation* d = v.getDefiningOp()) {
    if (mlir::isa<tosa::ConstOp>(d)) return true;
    if (!mlir::isa<tosa::ReshapeOp, tosa::TransposeOp>(d)) return false;
    v = d->getOperand(0);
  }
  return false;
}

std::vector<int32_t> perm_of(tosa::TransposeOp t) {
  std::vector<int32_t> p;
  auto c = t.getPerms().getDefiningOp<tosa::ConstOp>();
  if (!c) return p;
  for (auto v : mlir::cast<mlir::DenseElementsAttr>(c.getValue()).getValues<llvm::APInt>()) p.push_back(int32_t(v.getSExtValue()));
  return p;
}

mlir::Operation* single_user(Value v) {
  if (!v.hasOneUse()) return nullptr;
  return *v.getUsers().begin();
}

// v repeated to `shape` along its size-1 dimensions (tpu.broadcast), or v itself if it
// already has that shape. A size-1 last (lane) dimension is repeated first by a matmul of
// the [rows, 1] column with a row of ones (exact: one product each).
Value broadcast_to(mlir::OpBuilder& b, mlir::Operation* op, Value v, mlir::Type type, const std::string& name) {
  auto want = mlir::cast<mlir::RankedTensorType>(type);
  auto have = shape_of(v);
  if (have == std::vector<int64_t>(want.getShape().begin(), want.getShape().end())) return v;
  if (have.size() != size_t(want.getRank())) fail(op, "broadcast operands must have the result's rank");
  int64_t N = want.getShape().back();
  if (have.back() != N) {
    if (have.back() != 1) fail(op, fmt::format("dimension of {} cannot broadcast to {}", have.back(), N));
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < have.size(); ++i) rows *= have[i];
    auto f32 = [&](std::vector<int64_t> s) { return mlir::RankedTensorType::get(s, b.getF32Type()); };
    auto loc = op->getLoc();
    auto layer = b.getStringAttr(name + ".lanes");
    Value col = have.size() == 2 ? v : b.create<ReshapeOp>(loc, f32({rows, 1}), v, layer).getResult();
    Value wide = b.create<MatmulOp>(loc, f32({rows, N}), col, make_const(b, loc, {1, N}, std::vector<float>(size_t(N), 1.0f)),
                                    make_const(b, loc, {N}, std::vector<float>(size_t(N), 0.0f)),
                                    b.getF64FloatAttr(-std::numeric_limits<double>::infinity()),
                                    b.getF64FloatAttr(std::numeric_limits<double>::infinity()), layer);
    have.back() = N;
    v = have.size() == 2 ? wide : b.create<ReshapeOp>(loc, f32(have), wide, layer).getResult();
    if (have == std::vector<int64_t>(want.getShape().begin(), want.getShape().end())) return v;
  }
  return b.create<BroadcastOp>(op->getLoc(), type, v, b.getStringAttr(name + ".broadcast"));
}

// [top, bottom, left, right] if v is a tosa.pad with zeros of an NHWC tensor's H and W only.
std::optional<std::vector<int64_t>> zero_spatial_pad(Value v) {
  auto pd = v.getDefiningOp<tosa::PadOp>();
  if (!pd || !v.hasOneUse()) return std::nullopt;
  if (pd.getPadConst()) {
    auto k = const_data(pd.getPadConst());
    if (!k || k->size() != 1 || (*k)[0] != 0.0f) return std::nullopt;
  }
  mlir::DenseIntElementsAttr p;
  if (!mlir::matchPattern(pd.getPadding(), mlir::m_Constant(&p)) || p.getNumElements() != 8) return std::nullopt;
  std::vector<int64_t> v8;
  for (const llvm::APInt& x : p.getValues<llvm::APInt>()) v8.push_back(x.getSExtValue());
  if (v8[0] || v8[1] || v8[6] || v8[7]) return std::nullopt;
  return std::vector<int64_t>{v8[2], v8[3], v8[4], v8[5]};
}

// A constant operand of a binary op that broadcasts one value per channel (last dim).
std::optional<std::vector<float>> per_channel_const(mlir::Operation* op, Value from, int64_t channels) {
  for (Value operand : op->getOperands()) {
    if (operand == from) continue;
    auto d = const_data(operand);
    if (!d) return std::nullopt;
    auto s = shape_of(operand);
    int64_t n = 1;
    for (int64_t x : s) n *= x;
    if (n == channels && !s.empty() && s.back() == channels) return d;
    if (n == 1) return std::vector<float>(size_t(channels), (*d)[0]);
    return std::nullopt;
  }
  return std::nullopt;
}

// Passes report what they cannot handle as an error diagnostic on the function and fail,
// so vtpu-opt prints it and the compiler turns it into a CompileError.
template <typename Body, typename Fail>
void guarded(mlir::Operation* op, Body&& body, Fail&& signal_failure) {
  try {
    body();
  } catch (const compiler::CompileError& e) {
    op->emitError(e.what());
    signal_failure();
  }
}

// ---------------------------------------------------------------------------------------

struct CancelTransposes : mlir::PassWrapper<CancelTransposes, mlir::OperationPass<mlir::func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CancelTransposes)
  llvm::StringRef getArgument() const final { return "tpu-cancel-transposes"; }
  llvm::StringRef getDescription() const final { return "Remove tosa.transpose pairs that compose to the identity"; }
  void runOnOperation() override {
    bool changed = true;
    while (changed) {
      changed = false;
      getOperation().walk([&](tosa::TransposeOp outer) {
        auto inner = outer.getInput1().getDefiningOp<tosa::TransposeOp>();
        if (!inner) return;
        auto p1 = perm_of(inner), p2 = perm_of(outer);
        if (p1.empty() || p1.size() != p2.size()) return;
        for (size_t i = 0; i < p2.size(); ++i)
          if (p1[size_t(p2[i])] != int32_t(i)) return;
        outer.getResult().replaceAllUsesWith(inner.getInput1());
        changed = true;
      });
      // Drop transposes nobody uses any more.
      getOperation().walk([&](tosa::TransposeOp t) {
        if (t.getResult().use_empty()) t.erase();
      });
    }
  }
};

struct FoldBatchNorm : mlir::PassWrapper<FoldBatchNorm, mlir::OperationPass<mlir::func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FoldBatchNorm)
  llvm::StringRef getArgument() const final { return "tpu-fold-batchnorm"; }
  llvm::StringRef getDescription() const final {
    return "Fold per-channel scale/shift constants into the preceding conv2d or fully_connected";
  }
  void runOnOperation() override { guarded(getOperation(), [&] { fold(); }, [&] { signalPassFailure(); }); }
  void fold() {
    mlir::OpBuilder b(&getContext());
    // Collect first: folding erases the ops that follow each layer.
    std::vector<mlir::Operation*> layers;
    getOperation().walk([&](mlir::Operation* op) {
      if (mlir::isa<tosa::Conv2DOp, tosa::DepthwiseConv2DOp, tosa::FullyConnectedOp>(op)) layers.push_back(op);
    });
    for (mlir::Operation* op : layers) {
      // Output channels lead the weights of conv2d and fully_connected ([C_out, ...]) and
      // trail those of depthwise_conv2d ([KH, KW, C, M], channel c * M + m).
      bool channels_last = mlir::isa<tosa::DepthwiseConv2DOp>(op);
      while (true) {
        Value out = op->getResult(0);
        mlir::Operation* user = single_user(out);
        if (!user || !mlir::isa<tosa::MulOp, tosa::AddOp>(user)) break;
        int64_t C = shape_of(out).back();
        auto k = per_channel_const(user, out, C);
        if (!k) break;
        auto w = const_data(op->getOperand(1)), bias = const_data(op->getOperand(2));
        if (!w || !bias) break;
        if (mlir::isa<tosa::MulOp>(user)) {
          if (mlir::cast<tosa::MulOp>(user).getShift() != 0) break;
          size_t per = w->size() / size_t(C);
          for (size_t i = 0; i < w->size(); ++i) (*w)[i] *= (*k)[channels_last ? i % size_t(C) : i / per];
          for (size_t c = 0; c < size_t(C); ++c) (*bias)[c] *= (*k)[c];
        } else {
          for (size_t c = 0; c < size_t(C); ++c) (*bias)[c] += (*k)[c];
        }
        b.setInsertionPoint(op);
        for (unsigned i : {1u, 2u}) {
          Value old = op->getOperand(i);
          op->setOperand(i, make_const(b, op->getLoc(), shape_of(old), i == 1 ? *w : *bias));
          if (old.use_empty()) old.getDefiningOp()->erase();
        }
        user->getResult(0).replaceAllUsesWith(out);
        user->erase();
      }
    }
  }
};

// ---------------------------------------------------------------------------------------

struct LowerTosaToTpu : mlir::PassWrapper<LowerTosaToTpu, mlir::OperationPass<mlir::func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerTosaToTpu)
  llvm::StringRef getArgument() const final { return "tpu-lower-tosa"; }
  llvm::StringRef getDescription() const final { return "Lower TOSA layers to tpu ops, fusing bias and activation"; }
  void getDependentDialects(mlir::DialectRegistry& r) const override { r.insert<TpuDialect>(); }

  static constexpr double kInf = std::numeric_limits<double>::infinity();

  // Follows `v` through an optional bias add (per-channel constant) and clamp; returns the
  // value the fused layer replaces and updates bias / bounds.
  Value absorb_epilogue(Value v, std::vector<float>& bias, double& lo, double& hi, std::vector<mlir::Operation*>& dead) {
    int64_t C = shape_of(v).back();
    // A matmul of a 3-D activation is a reshape to 2-D, the matmul, and a reshape back that
    // keeps the last dimension: the layer then produces the reshaped type itself.
    if (auto rs = mlir::dyn_cast_or_null<tosa::ReshapeOp>(single_user(v)); rs && shape_of(rs.getResult()).back() == C) {
      mlir::Operation* u = single_user(rs.getResult());
      if (u && mlir::isa<tosa::AddOp, tosa::ClampOp>(u)) {
        dead.push_back(rs);
        v = rs.getResult();
      }
    }
    if (mlir::Operation* u = single_user(v); u && mlir::isa<tosa::AddOp>(u)) {
      if (auto k = per_channel_const(u, v, C)) {
        for (size_t c = 0; c < size_t(C); ++c) bias[c] += (*k)[c];
        dead.push_back(u);
        v = u->getResult(0);
      }
    }
    if (mlir::Operation* u = single_user(v); u && mlir::isa<tosa::ClampOp>(u)) {
      auto cl = mlir::cast<tosa::ClampOp>(u);
      lo = cl.getMinFp().convertToDouble(), hi = cl.getMaxFp().convertToDouble();
      if (lo <= -std::numeric_limits<float>::max()) lo = -kInf;
      if (hi >= std::numeric_limits<float>::max()) hi = kInf;
      dead.push_back(u);
      v = u->getResult(0);
    }
    return v;
  }

  // An Add of a constant that only a softmax reads, the constant repeating over all but the
  // last two dimensions (an attention mask): the softmax takes it as its mask.
  static bool softmax_mask(mlir::Operation* op) {
    if (!mlir::isa<tosa::AddOp>(op) || bool(const_data(op->getOperand(0))) == bool(const_data(op->getOperand(1)))) return false;
    Value k = const_data(op->getOperand(0)) ? op->getOperand(0) : op->getOperand(1);
    auto ks = shape_of(k), ys = shape_of(op->getResult(0));
    if (ks.size() != ys.size() || ks.size() < 2) return false;
    for (size_t i = 0; i + 2 < ks.size(); ++i)
      if (ks[i] != 1) return false;
    for (size_t i = ks.size() - 2; i < ks.size(); ++i)
      if (ks[i] != 1 && ks[i] != ys[i]) return false;
    mlir::Operation* rm = nullptr;
    for (mlir::Operation* u : op->getResult(0).getUsers()) {
      if (mlir::isa<tosa::ReduceMaxOp>(u)) rm = u;
      else if (!mlir::isa<tosa::SubOp>(u)) return false;
    }
    return rm != nullptr;
  }

  // An elementwise op with a constant operand that is neither per-channel nor a scalar (and
  // not an attention mask) gets that operand as a tpu.constant of the result's shape, so it
  // lowers like an op of two activations.
  void materialize_constants(mlir::func::FuncOp fn, mlir::OpBuilder& b) {
    std::vector<mlir::Operation*> ops;
    fn.walk([&](mlir::Operation* op) {
      if (mlir::isa<tosa::AddOp, tosa::SubOp, tosa::MulOp, tosa::MaximumOp, tosa::MinimumOp>(op)) ops.push_back(op);
    });
    for (mlir::Operation* op : ops) {
      bool k0 = bool(const_data(op->getOperand(0))), k1 = bool(const_data(op->getOperand(1)));
      if (k0 == k1 || softmax_mask(op)) continue;
      Value x = op->getOperand(k0 ? 1 : 0), k = op->getOperand(k0 ? 0 : 1);
      bool affine_ok = mlir::isa<tosa::AddOp, tosa::SubOp, tosa::MulOp>(op) && shape_of(op->getResult(0)) == shape_of(x);
      if (affine_ok && per_channel_const(op, x, shape_of(x).back())) continue;
      auto ys = shape_of(op->getResult(0)), ks = shape_of(k);
      auto data = *const_data(k);
      if (ks.size() != ys.size()) fail(op, "a constant operand of another rank than the result");
      // Expand the size-1 dimensions to the result's shape.
      size_t total = 1;
      for (int64_t d : ys) total *= size_t(d);
      std::vector<float> full(total);
      for (size_t i = 0; i < total; ++i) {
        size_t rem = i, src = 0, stride = 1;
        for (size_t d = ys.size(); d-- > 0;) {
          size_t idx = rem % size_t(ys[d]);
          rem /= size_t(ys[d]);
          src += (ks[d] == 1 ? 0 : idx) * stride;
          stride *= size_t(ks[d]);
        }
        full[i] = data[src];
      }
      b.setInsertionPoint(op);
      auto type = mlir::RankedTensorType::get(ys, b.getF32Type());
      Value c = b.create<ConstantOp>(op->getLoc(), type, mlir::DenseElementsAttr::get(type, llvm::ArrayRef<float>(full)),
                                     b.getStringAttr(layer_name(op) + ".const"));
      op->setOperand(k0 ? 0 : 1, c);
    }
  }

  // GELU as exported: x * (1 + erf(x * (1/sqrt 2))) * 0.5, or (x * 0.5) * (1 + erf(..)),
  // becomes the vector unit's vec.gelu (x * Phi(x)) in one step. Runs before the other
  // rewrites, which would turn the scalar multiplies into affine steps first.
  void fuse_gelu(mlir::func::FuncOp fn, mlir::OpBuilder& b) {
    std::vector<tosa::ErfOp> erfs;
    fn.walk([&](tosa::ErfOp e) { erfs.push_back(e); });
    auto scalar_of = [&](mlir::Operation* m, Value from) -> std::optional<float> {
      if (!m || !mlir::isa<tosa::MulOp, tosa::AddOp>(m) || m->getNumOperands() != 2) return std::nullopt;
      auto k = const_data(m->getOperand(0) == from ? m->getOperand(1) : m->getOperand(0));
      if (!k || k->size() != 1) return std::nullopt;
      return (*k)[0];
    };
    auto near = [](std::optional<float> v, double want) { return v && std::fabs(double(*v) - want) < 1e-6 * std::fabs(want); };
    for (tosa::ErfOp erf : erfs) {
      mlir::Operation* scale_in = erf.getInput().getDefiningOp();
      if (!scale_in || !mlir::isa<tosa::MulOp>(scale_in) || !erf.getInput().hasOneUse()) continue;
      Value x = const_data(scale_in->getOperand(1)) ? scale_in->getOperand(0) : scale_in->getOperand(1);
      mlir::Operation* plus1 = single_user(erf.getResult());
      mlir::Operation* prod = plus1 ? single_user(plus1->getResult(0)) : nullptr;
      if (!near(scalar_of(scale_in, x), M_SQRT1_2) || !mlir::isa_and_nonnull<tosa::AddOp>(plus1) ||
          !near(scalar_of(plus1, erf.getResult()), 1.0) || !mlir::isa_and_nonnull<tosa::MulOp>(prod))
        continue;
      Value other = prod->getOperand(0) == plus1->getResult(0) ? prod->getOperand(1) : prod->getOperand(0);
      mlir::Operation* half = single_user(prod->getResult(0));
      mlir::Operation* last = nullptr;
      mlir::Operation* x_half = nullptr;
      if (other == x && mlir::isa_and_nonnull<tosa::MulOp>(half) && near(scalar_of(half, prod->getResult(0)), 0.5)) {
        last = half;  // (x * (1 + erf)) * 0.5
      } else if (auto* xh = other.getDefiningOp(); xh && mlir::isa<tosa::MulOp>(xh) && other.hasOneUse() &&
                                                  (xh->getOperand(0) == x || xh->getOperand(1) == x) && near(scalar_of(xh, x), 0.5)) {
        last = prod, x_half = xh;  // (x * 0.5) * (1 + erf)
      }
      if (!last || shape_of(last->getResult(0)) != shape_of(x)) continue;
      b.setInsertionPointAfter(last);
      Value y = b.create<UnaryOp>(last->getLoc(), last->getResult(0).getType(), x, b.getStringAttr("gelu"),
                                  b.getStringAttr(layer_name(erf)));
      last->getResult(0).replaceAllUsesWith(y);
      std::vector<mlir::Operation*> chain{last, prod, plus1, erf.getOperation(), scale_in};
      if (x_half && last != half) chain.insert(chain.begin() + 2, x_half);
      for (mlir::Operation* d : chain)
        if (d->use_empty()) d->erase();
    }
  }

  void runOnOperation() override { guarded(getOperation(), [&] { lower(); }, [&] { signalPassFailure(); }); }
  void lower() {
    auto fn = getOperation();
    mlir::OpBuilder b(&getContext());
    fuse_gelu(fn, b);
    materialize_constants(fn, b);
    std::vector<mlir::Operation*> ops;
    fn.walk([&](mlir::Operation* op) {
      if (op != fn.getOperation()) ops.push_back(op);
    });
    llvm::DenseSet<mlir::Operation*> gone;
    llvm::DenseMap<Value, Value> shared_weights;  // fully_connected weight -> tpu.matmul's [K, N] constant
    std::vector<mlir::Operation*> dead;
    auto retire = [&](mlir::Operation* op) { gone.insert(op), dead.push_back(op); };

    for (mlir::Operation* op : ops) {
      if (gone.contains(op)) continue;
      std::string name = layer_name(op);
      b.setInsertionPointAfter(op);
      mlir::Location loc = op->getLoc();
      auto clamp_attrs = [&](double lo, double hi) { return std::pair{b.getF64FloatAttr(lo), b.getF64FloatAttr(hi)}; };

      if (auto fc = mlir::dyn_cast<tosa::FullyConnectedOp>(op)) {
        auto w = const_data(fc.getWeight()), bias = const_data(fc.getBias());
        if (!w || !bias) fail(op, "matmul weights and bias must be constants");
        auto ws = shape_of(fc.getWeight());  // [N, K]
        int64_t N = ws[0], K = ws[1];
        Value x = fc.getInput();
        // A flatten of an NHWC image arrives as transpose(NHWC->NCHW) + reshape; fold the
        // transpose into the weights so the image is flattened in NHWC order.
        std::vector<int64_t> col_of(static_cast<size_t>(K));
        for (int64_t k = 0; k < K; ++k) col_of[size_t(k)] = k;
        if (auto rs = x.getDefiningOp<tosa::ReshapeOp>()) {
          if (auto tr = rs.getInput1().getDefiningOp<tosa::TransposeOp>(); tr && perm_of(tr) == std::vector<int32_t>{0, 3, 1, 2}) {
            auto img = shape_of(tr.getInput1());  // NHWC
            int64_t H = img[1], W = img[2], C = img[3];
            if (H * W * C == K && img[0] == shape_of(x)[0]) {
              // NHWC flat index (h, w, c) holds NCHW flat index (c, h, w).
              for (int64_t h = 0; h < H; ++h)
                for (int64_t ww = 0; ww < W; ++ww)
                  for (int64_t c = 0; c < C; ++c) col_of[size_t((h * W + ww) * C + c)] = (c * H + h) * W + ww;
              Value flat = b.create<ReshapeOp>(rs.getLoc(), rs.getType(), tr.getInput1(), b.getStringAttr(layer_name(rs)));
              x = flat;
            }
          }
        }
        // Matmuls of one weight constant (an unrolled LSTM's recurrent weights) share one
        // [K, N] constant, made at the top of the function, so codegen stores it once.
        bool plain_order = x == fc.getInput();
        Value wkn_const = plain_order ? shared_weights.lookup(fc.getWeight()) : Value();
        if (!wkn_const) {
          std::vector<float> wkn(size_t(K * N));
          for (int64_t k = 0; k < K; ++k)
            for (int64_t n = 0; n < N; ++n) wkn[size_t(k * N + n)] = (*w)[size_t(n * K + col_of[size_t(k)])];
          mlir::OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(&fn.getBody().front());
          wkn_const = make_const(b, loc, {K, N}, wkn);
          if (plain_order) shared_weights[fc.getWeight()] = wkn_const;
        }
        double lo = -kInf, hi = kInf;
        Value last = absorb_epilogue(fc.getResult(), *bias, lo, hi, dead);
        for (mlir::Operation* d : dead) gone.insert(d);
        if (last.getDefiningOp() != op) b.setInsertionPointAfter(last.getDefiningOp());
        auto [clo, chi] = clamp_attrs(lo, hi);
        Value y = b.create<MatmulOp>(loc, last.getType(), x, wkn_const, make_const(b, loc, {N}, *bias), clo, chi,
                                     b.getStringAttr(name));
        last.replaceAllUsesWith(y);
        retire(op);
        continue;
      }
      if (auto cv = mlir::dyn_cast<tosa::Conv2DOp>(op)) {
        auto w = const_data(cv.getWeight()), bias = const_data(cv.getBias());
        if (!w || !bias) fail(op, "convolution weights and bias must be constants");
        auto ws = shape_of(cv.getWeight());  // OHWI
        int64_t CO = ws[0], KH = ws[1], KW = ws[2], CI = ws[3];
        std::vector<float> hwio(w->size());
        for (int64_t o = 0; o < CO; ++o)
          for (int64_t h = 0; h < KH; ++h)
            for (int64_t ww = 0; ww < KW; ++ww)
              for (int64_t i = 0; i < CI; ++i)
                hwio[size_t(((h * KW + ww) * CI + i) * CO + o)] = (*w)[size_t(((o * KH + h) * KW + ww) * CI + i)];
        double lo = -kInf, hi = kInf;
        Value last = absorb_epilogue(cv.getResult(), *bias, lo, hi, dead);
        for (mlir::Operation* d : dead) gone.insert(d);
        if (last.getDefiningOp() != op) b.setInsertionPointAfter(last.getDefiningOp());
        auto [clo, chi] = clamp_attrs(lo, hi);
        Value y = b.create<Conv2DOp>(loc, last.getType(), cv.getInput(), make_const(b, loc, {KH, KW, CI, CO}, hwio),
                                     make_const(b, loc, {CO}, *bias), cv.getStrideAttr(), cv.getPadAttr(),
                                     cv.getDilationAttr(), clo, chi, b.getStringAttr(name), b.getI64IntegerAttr(1));
        last.replaceAllUsesWith(y);
        retire(op);
        continue;
      }
      if (auto mm = mlir::dyn_cast<tosa::MatMulOp>(op)) {
        Value y = b.create<BatchMatmulOp>(loc, mm.getType(), mm.getA(), mm.getB(), b.getStringAttr(name));
        mm.getResult().replaceAllUsesWith(y);
        retire(op);
        continue;
      }
      if (auto dw = mlir::dyn_cast<tosa::DepthwiseConv2DOp>(op)) {
        // [KH, KW, C, M] is already tpu's [KH, KW, CI / groups = 1, CO = C x M].
        auto w = const_data(dw.getWeight()), bias = const_data(dw.getBias());
        if (!w || !bias) fail(op, "depthwise convolution weights and bias must be constants");
        auto ws = shape_of(dw.getWeight());
        int64_t KH = ws[0], KW = ws[1], C = ws[2], CO = ws[2] * ws[3];
        double lo = -kInf, hi = kInf;
        Value last = absorb_epilogue(dw.getResult(), *bias, lo, hi, dead);
        for (mlir::Operation* d : dead) gone.insert(d);
        if (last.getDefiningOp() != op) b.setInsertionPointAfter(last.getDefiningOp());
        auto [clo, chi] = clamp_attrs(lo, hi);
        Value y = b.create<Conv2DOp>(loc, last.getType(), dw.getInput(), make_const(b, loc, {KH, KW, 1, CO}, *w),
                                     make_const(b, loc, {CO}, *bias), dw.getStrideAttr(), dw.getPadAttr(),
                                     dw.getDilationAttr(), clo, chi, b.getStringAttr(name), b.getI64IntegerAttr(C));
        last.replaceAllUsesWith(y);
        retire(op);
        continue;
      }
      if (softmax_mask(op)) continue;  // folded into the softmax below
      if (mlir::isa<tosa::AddOp, tosa::SubOp>(op) &&
          (const_data(op->getOperand(0)) != std::nullopt) != (const_data(op->getOperand(1)) != std::nullopt)) {
        // x + k, x - k or k - x with a per-channel or scalar constant k: one affine step.
        bool k_first = const_data(op->getOperand(0)) != std::nullopt;
        Value x = op->getOperand(k_first ? 1 : 0);
        int64_t C = shape_of(x).back();
        auto k = per_channel_const(op, x, C);
        if (!k || shape_of(op->getResult(0)) != shape_of(x))
          fail(op, "an Add/Sub of a constant that is neither per-channel nor a scalar is not supported yet");
        bool sub = mlir::isa<tosa::SubOp>(op);
        std::vector<float> sc(size_t(C), sub && k_first ? -1.0f : 1.0f);
        if (sub && !k_first)
          for (float& v : *k) v = -v;
        Value y = b.create<AffineOp>(loc, op->getResult(0).getType(), x, make_const(b, loc, {C}, sc),
                                     make_const(b, loc, {C}, *k), b.getStringAttr(name));
        op->getResult(0).replaceAllUsesWith(y);
        retire(op);
        continue;
      }
      if (auto add = mlir::dyn_cast<tosa::AddOp>(op)) {
        if (const_data(add.getInput1()) || const_data(add.getInput2()))
          fail(op, "an Add of two constants is not supported (fold it before export)");
        double lo = -kInf, hi = kInf;
        std::vector<float> unused(size_t(shape_of(add.getResult()).back()), 0.0f);
        Value last = add.getResult();
        if (mlir::Operation* u = single_user(last); u && mlir::isa<tosa::ClampOp>(u)) {
          std::vector<mlir::Operation*> d2;
          last = absorb_epilogue(last, unused, lo, hi, d2);
          for (auto* d : d2) gone.insert(d), dead.push_back(d);
          b.setInsertionPointAfter(last.getDefiningOp());
        }
        auto [clo, chi] = clamp_attrs(lo, hi);
        mlir::OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(op);  // the broadcasts go before the add, whatever it absorbed
        Value lhs = broadcast_to(b, op, add.getInput1(), add.getType(), name);
        Value rhs = broadcast_to(b, op, add.getInput2(), add.getType(), name);
        b.setInsertionPointAfter(last.getDefiningOp());
        Value y = b.create<AddOp>(loc, last.getType(), lhs, rhs, clo, chi, b.getStringAttr(name));
        last.replaceAllUsesWith(y);
        retire(op);
        continue;
      }
      if (auto mp = mlir::dyn_cast<tosa::MaxPool2dOp>(op)) {
        Value y = b.create<PoolOp>(loc, mp.getType(), mp.getInput(), b.getStringAttr("max"), mp.getKernelAttr(),
                                   mp.getStrideAttr(), mp.getPadAttr(), b.getStringAttr(name), nullptr, nullptr);
        mp.getResult().replaceAllUsesWith(y);
        retire(op);
        continue;
      }
      if (auto ap = mlir::dyn_cast<tosa::AvgPool2dOp>(op)) {
        // A zero tosa.pad of H and W in front is ONNX's count_include_pad: fold it in.
        Value x = ap.getInput();
        auto pad = ap.getPadAttr();
        bool count_pad = false;
        if (auto pd = zero_spatial_pad(x)) {
          auto kp = ap.getPad();
          if (std::all_of(kp.begin(), kp.end(), [](int64_t v) { return v == 0; })) {
            count_pad = true;
            pad = b.getDenseI64ArrayAttr(*pd);
            retire(x.getDefiningOp());
            x = x.getDefiningOp()->getOperand(0);
          }
        }
        Value y = b.create<PoolOp>(loc, ap.getType(), x, b.getStringAttr("avg"), ap.getKernelAttr(), ap.getStrideAttr(), pad,
                                   b.getStringAttr(name), count_pad ? b.getUnitAttr() : nullptr, nullptr);
        ap.getResult().replaceAllUsesWith(y);
        retire(op);
        continue;
      }
      if (auto pd = mlir::dyn_cast<tosa::PadOp>(op); pd && zero_spatial_pad(pd.getResult())) {
        mlir::Operation* u = single_user(pd.getResult());
        if (u && mlir::isa<tosa::AvgPool2dOp>(u)) continue;  // folded into the pool
      }
      if (auto rs = mlir::dyn_cast<tosa::ReduceSumOp>(op)) {
        // layer norm: c = x - sum(x) * (1/D); norm = c * rsqrt(sum(c * c) * (1/D) + eps)
        Value x = rs.getInput();
        int64_t D = shape_of(x).back();
        auto is_inv_d = [&](mlir::Operation* m, Value from) -> bool {
          auto mul = mlir::dyn_cast_or_null<tosa::MulOp>(m);
          if (!mul) return false;
          auto k = const_data(mul.getInput1() == from ? mul.getInput2() : mul.getInput1());
          return k && k->size() == 1 && std::fabs((*k)[0] * float(D) - 1.0f) < 1e-6f;
        };
        mlir::Operation* mean = single_user(rs.getResult());
        auto sub = mean && is_inv_d(mean, rs.getResult()) ? mlir::dyn_cast_or_null<tosa::SubOp>(single_user(mean->getResult(0))) : nullptr;
        tosa::MulOp sq, norm;
        if (sub && sub.getInput1() == x)
          for (mlir::Operation* u : sub.getResult().getUsers())
            if (auto m = mlir::dyn_cast<tosa::MulOp>(u)) (m.getInput1() == m.getInput2() ? sq : norm) = m;
        auto rs2 = sq ? mlir::dyn_cast_or_null<tosa::ReduceSumOp>(single_user(sq.getResult())) : nullptr;
        mlir::Operation* var = rs2 ? single_user(rs2.getResult()) : nullptr;
        auto add = var && is_inv_d(var, rs2.getResult()) ? mlir::dyn_cast_or_null<tosa::AddOp>(single_user(var->getResult(0))) : nullptr;
        auto eps = add ? const_data(add.getInput2()) : std::nullopt;
        auto rsq = add ? mlir::dyn_cast_or_null<tosa::RsqrtOp>(single_user(add.getResult())) : nullptr;
        if (!sub || !sq || !norm || !rs2 || !add || !eps || eps->size() != 1 || !rsq || single_user(rsq.getResult()) != norm) {
          // Any other sum over the last axis: a matmul of the rows with a column of ones
          // (fp32 accumulation on the MXU).
          auto xs = shape_of(x);
          int64_t rows = 1;
          for (size_t i = 0; i + 1 < xs.size(); ++i) rows *= xs[i];
          auto f32 = [&](std::vector<int64_t> s) { return mlir::RankedTensorType::get(s, b.getF32Type()); };
          b.setInsertionPoint(op);
          Value x2 = xs.size() == 2 ? x : b.create<ReshapeOp>(loc, f32({rows, D}), x, b.getStringAttr(name)).getResult();
          Value y = b.create<MatmulOp>(loc, f32({rows, 1}), x2, make_const(b, loc, {D, 1}, std::vector<float>(size_t(D), 1.0f)),
                                       make_const(b, loc, {1}, {0.0f}), b.getF64FloatAttr(-kInf), b.getF64FloatAttr(kInf),
                                       b.getStringAttr(name));
          if (shape_of(rs.getResult()) != std::vector<int64_t>{rows, 1}) y = b.create<ReshapeOp>(loc, rs.getType(), y, b.getStringAttr(name));
          rs.getResult().replaceAllUsesWith(y);
          retire(op);
          continue;
        }
        b.setInsertionPointAfter(norm);
        Value y = b.create<LayerNormOp>(loc, norm.getType(), x, b.getF64FloatAttr((*eps)[0]), b.getStringAttr(name));
        norm.getResult().replaceAllUsesWith(y);
        for (mlir::Operation* d : {op, mean, sub.getOperation(), sq.getOperation(), rs2.getOperation(), var, add.getOperation(),
                                   rsq.getOperation(), norm.getOperation()})
          retire(d);
        continue;
      }
      if (auto rm = mlir::dyn_cast<tosa::ReduceMaxOp>(op)) {
        // softmax: mul(exp(x - max(x)), reciprocal(sum(exp(x - max(x)))))
        Value x = rm.getInput();
        auto sub = mlir::dyn_cast_or_null<tosa::SubOp>(single_user(rm.getResult()));
        auto ex = sub ? mlir::dyn_cast_or_null<tosa::ExpOp>(single_user(sub.getResult())) : nullptr;
        tosa::ReduceSumOp sum;
        tosa::MulOp mul;
        if (ex)
          for (mlir::Operation* u : ex.getResult().getUsers()) {
            if (auto s = mlir::dyn_cast<tosa::ReduceSumOp>(u)) sum = s;
            if (auto m = mlir::dyn_cast<tosa::MulOp>(u)) mul = m;
          }
        auto rcp = sum ? mlir::dyn_cast_or_null<tosa::ReciprocalOp>(single_user(sum.getResult())) : nullptr;
        if (!sub || sub.getInput1() != x || !ex || !sum || !mul || !rcp)
          fail(op, "a reduce_max that is not part of a softmax is not supported");
        b.setInsertionPointAfter(mul);
        Value mask;
        if (mlir::Operation* add = x.getDefiningOp(); add && softmax_mask(add)) {
          bool k_first = bool(const_data(add->getOperand(0)));
          auto k = *const_data(add->getOperand(k_first ? 0 : 1));
          auto ks = shape_of(add->getOperand(k_first ? 0 : 1)), xs = shape_of(x);
          int64_t M = xs.size() > 1 ? xs[xs.size() - 2] : 1, N = xs.back();
          int64_t kM = ks.size() > 1 ? ks[ks.size() - 2] : 1, kN = ks.back();
          std::vector<float> full(size_t(M * N));
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) full[size_t(i * N + j)] = k[size_t((i % kM) * kN + j % kN)];
          mask = make_const(b, loc, {M, N}, full);
          x = add->getOperand(k_first ? 1 : 0);
          retire(add);
        }
        Value y = b.create<SoftmaxOp>(loc, mul.getType(), x, mask, b.getStringAttr(name));
        mul.getResult().replaceAllUsesWith(y);
        for (mlir::Operation* d : {op, sub.getOperation(), ex.getOperation(), sum.getOperation(), rcp.getOperation(), mul.getOperation()})
          retire(d);
        continue;
      }
      if (auto rs = mlir::dyn_cast<tosa::ReshapeOp>(op)) {
        if (rs.getResult().use_empty() || const_data(rs.getResult())) {  // constants: removed below if unused
          retire(op);
          continue;
        }
        if (auto tr = rs.getInput1().getDefiningOp<tosa::TransposeOp>()) {
          // Flatten of an NHWC image: the matmul that consumes it folds the order into its
          // weights (see the fully_connected case) and makes its own tpu.reshape.
          mlir::Operation* u = single_user(rs.getResult());
          if (u && mlir::isa<tosa::FullyConnectedOp>(u)) continue;
          fail(op, "reshaping an image in NCHW order is only supported right before a matmul (Flatten + Gemm)");
        }
        Value y = b.create<ReshapeOp>(loc, rs.getType(), rs.getInput1(), b.getStringAttr(name));
        rs.getResult().replaceAllUsesWith(y);
        retire(op);
        continue;
      }
      if (mlir::isa<tosa::SigmoidOp, tosa::TanhOp, tosa::ErfOp, tosa::ExpOp, tosa::ReciprocalOp, tosa::RsqrtOp>(op)) {
        // The names are the vector unit's table functions (vec.<fn>).
        const char* fn = mlir::isa<tosa::SigmoidOp>(op) ? "sigmoid"
                         : mlir::isa<tosa::TanhOp>(op)  ? "tanh"
                         : mlir::isa<tosa::ErfOp>(op)   ? "erf"
                         : mlir::isa<tosa::ExpOp>(op)   ? "exp"
                         : mlir::isa<tosa::RsqrtOp>(op) ? "rsqrt"
                                                        : "recip";
        Value y = b.create<UnaryOp>(loc, op->getResult(0).getType(), op->getOperand(0), b.getStringAttr(fn),
                                    b.getStringAttr(name));
        op->getResult(0).replaceAllUsesWith(y);
        retire(op);
        continue;
      }
      if (mlir::isa<tosa::ConstOp, mlir::func::ReturnOp>(op) || op->getDialect()->getNamespace() == "tpu") continue;
      if (auto sl = mlir::dyn_cast<tosa::SliceOp>(op)) {
        if (is_constant(sl.getInput())) fail(op, "a Slice of a constant is not supported yet");
        Value y = b.create<SliceOp>(loc, sl.getType(), sl.getInput(), sl.getStartAttr(), b.getStringAttr(name));
        sl.getResult().replaceAllUsesWith(y);
        retire(op);
        continue;
      }
      if (auto cc = mlir::dyn_cast<tosa::ConcatOp>(op)) {
        for (Value v : cc.getInput1())
          if (is_constant(v)) fail(op, "a Concat with a constant input is not supported yet");
        Value y = b.create<ConcatOp>(loc, cc.getType(), cc.getInput1(), b.getI64IntegerAttr(cc.getAxis()), b.getStringAttr(name));
        cc.getResult().replaceAllUsesWith(y);
        retire(op);
        continue;
      }
      if (auto tr = mlir::dyn_cast<tosa::TransposeOp>(op)) {
        // Weight layouts are folded by their users, and an image flattened for a matmul folds
        // into its weights; any other transpose of an activation moves data (tpu.transpose).
        if (tr.getResult().use_empty() || is_constant(tr.getResult())) continue;  // removed below if unused
        std::vector<int32_t> p32 = perm_of(tr);
        if (mlir::Operation* u = single_user(tr.getResult()); u && mlir::isa<tosa::ReshapeOp>(u) && p32 == std::vector<int32_t>{0, 3, 1, 2})
          if (mlir::Operation* u2 = single_user(u->getResult(0)); u2 && mlir::isa<tosa::FullyConnectedOp>(u2)) continue;
        if (p32.empty()) fail(op, "a transpose needs constant perms");
        std::vector<int64_t> perm(p32.begin(), p32.end());
        Value y = b.create<TransposeOp>(loc, tr.getType(), tr.getInput1(), b.getDenseI64ArrayAttr(perm), b.getStringAttr(name));
        tr.getResult().replaceAllUsesWith(y);
        retire(op);
        continue;
      }
      if (auto cl = mlir::dyn_cast<tosa::ClampOp>(op)) {
        double lo = cl.getMinFp().convertToDouble(), hi = cl.getMaxFp().convertToDouble();
        if (lo <= -std::numeric_limits<float>::max()) lo = -kInf;
        if (hi >= std::numeric_limits<float>::max()) hi = kInf;
        Value y = b.create<ClampOp>(loc, cl.getType(), cl.getInput(), b.getF64FloatAttr(lo), b.getF64FloatAttr(hi),
                                    b.getStringAttr(name));
        cl.getResult().replaceAllUsesWith(y);
        retire(op);
        continue;
      }
      if (mlir::isa<tosa::SubOp, tosa::MulOp, tosa::MaximumOp, tosa::MinimumOp>(op) && !const_data(op->getOperand(0)) &&
          !const_data(op->getOperand(1))) {
        if (auto m = mlir::dyn_cast<tosa::MulOp>(op); m && m.getShift() != 0) fail(op, "a Mul with a shift is not supported");
        Value lhs = broadcast_to(b, op, op->getOperand(0), op->getResult(0).getType(), name);
        Value rhs = broadcast_to(b, op, op->getOperand(1), op->getResult(0).getType(), name);
        const char* kind = mlir::isa<tosa::SubOp>(op)       ? "sub"
                           : mlir::isa<tosa::MulOp>(op)     ? "mul"
                           : mlir::isa<tosa::MaximumOp>(op) ? "max"
                                                            : "min";
        Value y = b.create<BinaryOp>(loc, op->getResult(0).getType(), lhs, rhs, b.getStringAttr(kind), b.getStringAttr(name));
        op->getResult(0).replaceAllUsesWith(y);
        retire(op);
        continue;
      }
      if (auto mul = mlir::dyn_cast<tosa::MulOp>(op)) {
        // A per-channel scale (+ shift) of an activation: a batch norm no layer absorbed.
        Value x = const_data(mul.getInput1()) ? mul.getInput2() : mul.getInput1();
        int64_t C = shape_of(x).back();
        auto k = per_channel_const(op, x, C);
        if (!k || mul.getShift() != 0) fail(op, "a Mul by a constant that is neither per-channel (last dimension) nor a scalar is not supported yet");
        std::vector<float> bias(size_t(C), 0.0f);
        Value last = mul.getResult();
        if (mlir::Operation* u = single_user(last); u && mlir::isa<tosa::AddOp>(u)) {
          if (auto t = per_channel_const(u, last, C)) {
            bias = *t;
            gone.insert(u), dead.push_back(u);
            last = u->getResult(0);
            b.setInsertionPointAfter(u);
          }
        }
        Value y = b.create<AffineOp>(loc, last.getType(), x, make_const(b, loc, {C}, *k), make_const(b, loc, {C}, bias),
                                     b.getStringAttr(name));
        last.replaceAllUsesWith(y);
        retire(op);
        continue;
      }
      fail(op, fmt::format("{} cannot be lowered to the tpu dialect", op->getName().getStringRef().str()));
    }
    // Erase replaced ops users-first, then constants and transposes nobody uses.
    for (bool progress = true; progress;) {
      progress = false;
      for (auto& d : dead)
        if (d && d->use_empty()) d->erase(), d = nullptr, progress = true;
    }
    bool again = true;
    while (again) {
      again = false;
      fn.walk([&](mlir::Operation* op) {
        if (mlir::isa<tosa::ConstOp, tosa::TransposeOp, tosa::ReshapeOp>(op) && op->use_empty()) {
          op->erase();
          again = true;
        }
      });
    }
    fn.walk([&](mlir::Operation* op) {
      if (op->getDialect() && op->getDialect()->getNamespace() == "tosa" && !mlir::isa<tosa::ConstOp>(op))
        fail(op, fmt::format("{} is left after lowering", op->getName().getStringRef().str()));
    });
    fold_integer_outputs(fn);
  }

  // An integer model output made by a matmul or convolution (MatMulInteger, ConvInteger)
  // leaves the accumulators as int32 directly: the layer takes the cast's i32 type, so its
  // exact fp32 (or int32) sums are never rounded to the activation dtype on the way.
  static void fold_integer_outputs(mlir::func::FuncOp fn) {
    std::vector<CastOp> casts;
    fn.walk([&](CastOp c) { casts.push_back(c); });
    for (CastOp c : casts) {
      auto to = mlir::cast<mlir::RankedTensorType>(c.getOutput().getType());
      mlir::Operation* src = c.getInput().getDefiningOp();
      if (!to.getElementType().isInteger(32) || !src || !mlir::isa<MatmulOp, Conv2DOp>(src) || !c.getInput().hasOneUse())
        continue;
      src->getResult(0).setType(to);
      c.getOutput().replaceAllUsesWith(src->getResult(0));
      c.erase();
    }
  }
};

}  // namespace

std::unique_ptr<mlir::Pass> createFoldBatchNormPass() { return std::make_unique<FoldBatchNorm>(); }
std::unique_ptr<mlir::Pass> createLowerTosaToTpuPass() { return std::make_unique<LowerTosaToTpu>(); }
std::unique_ptr<mlir::Pass> createCancelTransposesPass() { return std::make_unique<CancelTransposes>(); }

void registerPasses() {
  mlir::PassRegistration<CancelTransposes>();
  mlir::PassRegistration<FoldBatchNorm>();
  mlir::PassRegistration<LowerTosaToTpu>();
}

}  // namespace vtpu::tpu
