// The fp32 interpreter's walk over @main (reference/reference.h): arguments in, each tpu op's
// eval() (by operator family: matmul.cpp, conv.cpp, pool.cpp, elementwise.cpp, shape.cpp,
// normalization.cpp, reduce.cpp), constants read where they are used, results out.
#include <fmt/format.h>

#include <algorithm>

#include "llvm/ADT/TypeSwitch.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "reference/interpreter.h"

namespace vtpu::compiler {
namespace reference {

std::vector<float> consts(mlir::Value v) {
  auto c = v.getDefiningOp<mlir::tosa::ConstOp>();
  if (!c) throw InternalError("reference: expected a constant");
  return tpu::float_values(c.getValue());
}

tpu::FloatData const_view(mlir::Value v) {
  auto c = v.getDefiningOp<mlir::tosa::ConstOp>();
  if (!c) throw InternalError("reference: expected a constant");
  return tpu::float_data(c.getValue());
}

namespace {

// A result of @main: a computed value, or a constant output (int32 ones as their integers).
RefTensor result(const Env& env, mlir::Value v) {
  auto c = v.getDefiningOp<mlir::tosa::ConstOp>();
  if (!c) return env.get(v);
  RefTensor t;
  t.shape = tpu::shape_of(v);
  auto attr = mlir::cast<mlir::ElementsAttr>(c.getValue());
  if (attr.getElementType().isInteger(32))
    for (int32_t x : mlir::cast<mlir::DenseElementsAttr>(attr).getValues<int32_t>()) t.data.push_back(float(x));
  else
    t.data = consts(v);
  return t;
}

// One tpu op's value.
RefTensor evaluate(mlir::Operation& op, const Env& env) {
  RefTensor y;
  y.shape = tpu::shape_of(op.getResult(0));
  size_t n = 1;
  for (int64_t d : y.shape) n *= size_t(d);
  y.data.assign(n, 0.0f);
  auto run = [&](auto typed) { eval(typed, env, y); };
  llvm::TypeSwitch<mlir::Operation*>(&op)
      .Case<tpu::MatmulOp, tpu::BatchMatmulOp, tpu::EmbeddingOp, tpu::Conv2DOp, tpu::ZeroInsertOp, tpu::PoolOp, tpu::PoolArgmaxOp,
            tpu::AddOp, tpu::BinaryOp, tpu::ClampOp, tpu::UnaryOp, tpu::AffineOp, tpu::CastOp, tpu::FakeQuantOp, tpu::ConstantOp,
            tpu::SliceOp, tpu::ConcatOp, tpu::TransposeOp, tpu::BroadcastOp, tpu::ReshapeOp, tpu::ResizeNearestOp, tpu::LayerNormOp,
            tpu::SoftmaxOp, tpu::ArgMaxOp>(run)
      .Default([](mlir::Operation* o) {
        throw InternalError(fmt::format("reference: no semantics for {}", o->getName().getStringRef().str()));
      });
  return y;
}

}  // namespace
}  // namespace reference

std::vector<RefTensor> evaluate_reference(mlir::func::FuncOp fn, const std::vector<RefTensor>& inputs,
                                          const std::function<void(const void* value, RefTensor&)>& seen) {
  reference::Env env;
  if (inputs.size() != fn.getNumArguments()) throw InternalError("reference: wrong number of inputs");
  // Each value's last reader, so that it is freed once read for the last time.
  std::map<const void*, mlir::Operation*> last_reader;
  for (mlir::Operation& op : fn.getBody().front())
    for (mlir::Value v : op.getOperands()) last_reader[v.getAsOpaquePointer()] = &op;
  auto made = [&](const void* v) {
    RefTensor& t = env.values.at(v);
    if (seen) seen(v, t);  // which may change it: later ops read what it leaves
    if (!last_reader.count(v)) env.values.erase(v);  // read by nothing
  };
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    env.values[fn.getArgument(i).getAsOpaquePointer()] = inputs[i];
    made(fn.getArgument(i).getAsOpaquePointer());
  }
  std::vector<RefTensor> outs;
  for (mlir::Operation& op : fn.getBody().front()) {
    if (mlir::isa<mlir::tosa::ConstOp>(op)) continue;
    if (auto ret = mlir::dyn_cast<mlir::func::ReturnOp>(op)) {
      for (mlir::Value v : ret.getOperands()) outs.push_back(reference::result(env, v));
      break;
    }
    env.values[op.getResult(0).getAsOpaquePointer()] = reference::evaluate(op, env);
    made(op.getResult(0).getAsOpaquePointer());
    for (mlir::Value v : op.getOperands()) {
      auto it = last_reader.find(v.getAsOpaquePointer());
      if (it != last_reader.end() && it->second == &op) env.values.erase(v.getAsOpaquePointer());
    }
  }
  return outs;
}

}  // namespace vtpu::compiler
