// What the passes ask of TOSA IR (transforms/tosa_utils.h).
#include "transforms/tosa_utils.h"

#include <fmt/format.h>

#include <limits>

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"

namespace vtpu::tpu {

using mlir::Value;
namespace tosa = mlir::tosa;

std::string layer_name(mlir::Operation* op) {
  if (auto n = mlir::dyn_cast<mlir::NameLoc>(op->getLoc())) return n.getName().str();
  return op->getName().getStringRef().str();
}

void fail(mlir::Operation* op, const std::string& what) {
  throw compiler::CompileError(fmt::format("node '{}': {}", layer_name(op), what));
}

mlir::ElementsAttr const_attr(Value v) {
  while (true) {
    if (auto rs = v.getDefiningOp<tosa::ReshapeOp>()) {
      v = rs.getInput1();
      continue;
    }
    if (auto tr = v.getDefiningOp<tosa::TransposeOp>()) {
      auto t = mlir::cast<mlir::RankedTensorType>(tr.getInput1().getType());
      if (llvm::count_if(t.getShape(), [](int64_t d) { return d != 1; }) > 1) return {};
      v = tr.getInput1();
      continue;
    }
    break;
  }
  auto c = v.getDefiningOp<tosa::ConstOp>();
  if (!c) return {};
  if (!tpu::is_f32_elements(c.getValue())) return {};
  return c.getValue();
}

std::optional<std::vector<float>> const_data(Value v) {
  if (mlir::ElementsAttr attr = const_attr(v)) return tpu::float_values(attr);
  return std::nullopt;
}

bool is_constant(Value v) {
  while (mlir::Operation* d = v.getDefiningOp()) {
    if (mlir::isa<tosa::ConstOp>(d)) return true;
    if (!mlir::isa<tosa::ReshapeOp, tosa::TransposeOp>(d)) return false;
    v = d->getOperand(0);
  }
  return false;
}

Value make_const(mlir::OpBuilder& b, mlir::Location loc, const std::vector<int64_t>& shape, std::vector<float> data) {
  auto type = mlir::RankedTensorType::get(shape, b.getF32Type());
  return b.create<tosa::ConstOp>(loc, type, tpu::f32_elements(type, std::move(data)));
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

std::pair<double, double> clamp_bounds(tosa::ClampOp c) {
  double lo = c.getMinFp().convertToDouble(), hi = c.getMaxFp().convertToDouble();
  if (lo <= -std::numeric_limits<float>::max()) lo = -std::numeric_limits<double>::infinity();
  if (hi >= std::numeric_limits<float>::max()) hi = std::numeric_limits<double>::infinity();
  return {lo, hi};
}

}  // namespace vtpu::tpu
