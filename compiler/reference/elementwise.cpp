// Reference semantics of the elementwise ops: tpu.add, binary, clamp, unary, affine, cast,
// fake_quant and constant.
#include <fmt/format.h>

#include <cmath>
#include <string>

#include "reference/interpreter.h"

namespace vtpu::compiler::reference {

using mlir::Value;
using tpu::shape_of;

void eval(tpu::AddOp a, const Env& env, RefTensor& y) {
  size_t n = y.data.size();
  const RefTensor &l = env.get(a.getLhs()), &r = env.get(a.getRhs());
  double lo = a.getClampMin().convertToDouble(), hi = a.getClampMax().convertToDouble();
  for (size_t i = 0; i < n; ++i) y.data[i] = clampf(double(l.data[i]) + r.data[i], lo, hi);
}

void eval(tpu::BinaryOp bo, const Env& env, RefTensor& y) {
  size_t n = y.data.size();
  const RefTensor &l = env.get(bo.getLhs()), &r = env.get(bo.getRhs());
  std::string k = bo.getKind().str();
  for (size_t i = 0; i < n; ++i) {
    double a = l.data[i], c = r.data[i];
    y.data[i] = float(k == "sub"   ? a - c
                      : k == "mul" ? a * c
                      : k == "div" ? (c == 0 ? 0.0 : std::trunc(a / c))
                      : k == "max" ? std::max(a, c)
                                   : std::min(a, c));
  }
}

void eval(tpu::ClampOp cl, const Env& env, RefTensor& y) {
  size_t n = y.data.size();
  const RefTensor& x = env.get(cl.getInput());
  double lo = cl.getClampMin().convertToDouble(), hi = cl.getClampMax().convertToDouble();
  for (size_t i = 0; i < n; ++i) y.data[i] = clampf(x.data[i], lo, hi);
}

void eval(tpu::UnaryOp un, const Env& env, RefTensor& y) {
  size_t n = y.data.size();
  const RefTensor& x = env.get(un.getInput());
  std::string fn = un.getFn().str();
  for (size_t i = 0; i < n; ++i) {
    double v = x.data[i];
    double r;
    if (fn == "sigmoid") r = 1.0 / (1.0 + std::exp(-v));
    else if (fn == "tanh") r = std::tanh(v);
    else if (fn == "erf") r = std::erf(v);
    else if (fn == "exp") r = std::exp(v);
    else if (fn == "recip") r = 1.0 / v;
    else if (fn == "rsqrt") r = 1.0 / std::sqrt(v);
    else if (fn == "log") r = std::log(v);
    else if (fn == "sqrt") r = std::sqrt(v);
    else if (fn == "gelu") r = 0.5 * v * (1.0 + std::erf(v * M_SQRT1_2));
    else throw CompileError(fmt::format("tpu.unary: unknown function '{}'", fn));
    y.data[i] = float(r);
  }
}

void eval(tpu::AffineOp af, const Env& env, RefTensor& y) {
  size_t n = y.data.size();
  const RefTensor& x = env.get(af.getInput());
  auto sc = consts(af.getScale()), bi = consts(af.getBias());
  size_t C = sc.size();
  for (size_t i = 0; i < n; ++i) y.data[i] = float(double(x.data[i]) * sc[i % C] + bi[i % C]);
}

void eval(tpu::CastOp ca, const Env& env, RefTensor& y) {
  size_t n = y.data.size();
  // Integers are carried as floats; to an integer tensor they round (half to even).
  const RefTensor& x = env.get(ca.getInput());
  bool to_int = mlir::cast<mlir::RankedTensorType>(ca.getOutput().getType()).getElementType().isInteger(32);
  for (size_t i = 0; i < n; ++i) y.data[i] = to_int ? std::nearbyint(x.data[i]) : x.data[i];
}

void eval(tpu::FakeQuantOp fq, const Env& env, RefTensor& y) {
  size_t n = y.data.size();
  const RefTensor& x = env.get(fq.getInput());
  float sc = float(fq.getScale().convertToDouble()), lo = float(fq.getLo().convertToDouble()), hi = float(fq.getHi().convertToDouble());
  for (size_t i = 0; i < n; ++i) y.data[i] = sc * std::nearbyint(std::clamp(x.data[i] / sc, lo, hi));
}

void eval(tpu::ConstantOp k, const Env& env, RefTensor& y) {
  y.data = tpu::float_values(k.getValue());
}

}  // namespace vtpu::compiler::reference
