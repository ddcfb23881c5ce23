// ONNX operators on constants (constant_ops.h): elementwise arithmetic, comparisons and logic
// with NumPy broadcasting, Where, Cast, and the data-movement operators exporters apply to
// shape vectors (Concat, Slice, Gather, Expand, Transpose, ConstantOfShape, Range, reductions).
#include "import/constant_ops.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "import/attributes.h"
#include "vtpu/numerics/float.h"

namespace vtpu::compiler::onnx_import {

std::vector<int64_t> slice_indices(int64_t dim, int64_t start, int64_t end, int64_t step) {
  std::vector<int64_t> idx;
  if (dim <= 0) return idx;
  auto adjust = [&](int64_t v) { return v < 0 ? v + dim : v; };  // cannot overflow: dim > 0
  int64_t s = adjust(start), e = adjust(end);
  if (step > 0) s = std::clamp<int64_t>(s, 0, dim), e = std::clamp<int64_t>(e, 0, dim);
  else s = std::clamp<int64_t>(s, 0, dim - 1), e = std::clamp<int64_t>(e, -1, dim - 1);
  for (__int128 k = s; step > 0 ? k < e : k > e; k += step) idx.push_back(int64_t(k));  // a step of INT64_MAX must not wrap
  return idx;
}

namespace {

using Ints = std::vector<int64_t>;

// Two's-complement arithmetic: ONNX's integer Add, Sub, Mul and Neg wrap around.
int64_t wrap_add(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }
int64_t wrap_sub(int64_t a, int64_t b) { return int64_t(uint64_t(a) - uint64_t(b)); }
int64_t wrap_mul(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }
int64_t wrap_neg(int64_t a) { return int64_t(0 - uint64_t(a)); }

// Integer Div truncates toward zero; INT64_MIN / -1 wraps to INT64_MIN.
int64_t int_div(int64_t a, int64_t b) {
  if (b == 0) throw ConstantError(fmt::format("integer division of {} by zero", a));
  if (b == -1) return wrap_neg(a);
  return a / b;
}

// Integer Mod: the sign of the divisor (Python's %), or with fmod=1 of the dividend (C's %).
int64_t int_mod(int64_t a, int64_t b, bool fmod) {
  if (b == 0) throw ConstantError(fmt::format("integer Mod of {} by zero", a));
  if (b == -1) return 0;
  int64_t r = a % b;
  if (!fmod && r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// Integer Pow: exact (wrapping) for exponents >= 0; a negative exponent truncates the
// fraction, so only bases 1 and -1 give other than 0.
int64_t int_pow(int64_t a, int64_t e) {
  if (e < 0) {
    if (a == 0) throw ConstantError("integer Pow of 0 to a negative exponent");
    if (a == 1) return 1;
    if (a == -1) return (e % 2) ? -1 : 1;
    return 0;
  }
  int64_t r = 1;
  for (; e; e >>= 1, a = wrap_mul(a, a))
    if (e & 1) r = wrap_mul(r, a);
  return r;
}

// NumPy broadcasting: the result's shape, and for each input the flat index of its element
// under each flat index of the result.
Ints broadcast_shape(const std::vector<const Constant*>& cs, const std::string& op) {
  size_t r = 0;
  for (auto* c : cs) r = std::max(r, c->shape.size());
  Ints shape(r, 1);
  for (auto* c : cs)
    for (size_t k = 0; k < c->shape.size(); ++k) {
      int64_t& d = shape[r - c->shape.size() + k];
      int64_t e = c->shape[k];
      if (d != e && d != 1 && e != 1)
        throw ConstantError(fmt::format("{} of constants whose shapes do not broadcast", op));
      d = d == 1 ? e : d;
    }
  return shape;
}

Ints broadcast_index(const Ints& in, const Ints& out) {
  size_t r = out.size();
  Ints idx;
  idx.reserve(size_t(numel(out)));
  for (int64_t flat = 0; flat < numel(out); ++flat) {
    int64_t at = 0, stride = 1, f = flat;
    for (size_t k = r; k-- > 0;) {
      int64_t i = f % out[k];
      f /= out[k];
      if (k + in.size() < r) continue;
      size_t ck = k + in.size() - r;
      if (in[ck] != 1) at += i * stride;
      stride *= in[ck];
    }
    idx.push_back(at);
  }
  return idx;
}

bool all_integer(const std::vector<const Constant*>& cs) {
  return std::all_of(cs.begin(), cs.end(), [](const Constant* c) { return c->integer; });
}

// Elementwise operators of two or more operands (Max, Min and Sum take any number).
std::optional<Constant> elementwise(const onnx::NodeProto& n, const std::vector<const Constant*>& cs) {
  const std::string& op = n.op_type();
  bool fmod = attr_i(n, "fmod", 0) != 0;
  using IntFn = std::function<int64_t(int64_t, int64_t)>;
  using FloatFn = std::function<float(float, float)>;
  static const std::map<std::string, std::pair<IntFn, FloatFn>> kOps = {
      {"Add", {wrap_add, [](float a, float b) { return a + b; }}},
      {"Sum", {wrap_add, [](float a, float b) { return a + b; }}},
      {"Sub", {wrap_sub, [](float a, float b) { return a - b; }}},
      {"Mul", {wrap_mul, [](float a, float b) { return a * b; }}},
      {"Div", {int_div, [](float a, float b) { return a / b; }}},
      {"Max", {[](int64_t a, int64_t b) { return std::max(a, b); }, [](float a, float b) { return std::max(a, b); }}},
      {"Min", {[](int64_t a, int64_t b) { return std::min(a, b); }, [](float a, float b) { return std::min(a, b); }}},
      {"Equal", {[](int64_t a, int64_t b) { return int64_t(a == b); }, [](float a, float b) { return float(a == b); }}},
      {"Less", {[](int64_t a, int64_t b) { return int64_t(a < b); }, [](float a, float b) { return float(a < b); }}},
      {"LessOrEqual", {[](int64_t a, int64_t b) { return int64_t(a <= b); }, [](float a, float b) { return float(a <= b); }}},
      {"Greater", {[](int64_t a, int64_t b) { return int64_t(a > b); }, [](float a, float b) { return float(a > b); }}},
      {"GreaterOrEqual", {[](int64_t a, int64_t b) { return int64_t(a >= b); }, [](float a, float b) { return float(a >= b); }}},
      {"And", {[](int64_t a, int64_t b) { return int64_t(a && b); }, [](float a, float b) { return float(a != 0 && b != 0); }}},
      {"Or", {[](int64_t a, int64_t b) { return int64_t(a || b); }, [](float a, float b) { return float(a != 0 || b != 0); }}},
      {"Xor", {[](int64_t a, int64_t b) { return int64_t(bool(a) != bool(b)); }, [](float a, float b) { return float((a != 0) != (b != 0)); }}},
  };
  // Mod's integer form depends on the node's fmod attribute.
  std::pair<IntFn, FloatFn> mod = {[fmod](int64_t a, int64_t b) { return int_mod(a, b, fmod); },
                                   [](float a, float b) { return std::fmod(a, b); }};
  const std::pair<IntFn, FloatFn>* fns = op == "Mod" ? &mod : kOps.count(op) ? &kOps.at(op) : nullptr;
  static const std::set<std::string> kVariadic = {"Max", "Min", "Sum"};
  static const std::set<std::string> kBoolResult = {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual",
                                                    "And", "Or", "Xor"};
  if (op != "Pow" && !fns) return std::nullopt;
  if (kVariadic.count(op) ? cs.empty() : cs.size() != 2) return std::nullopt;
  if (op == "Mod" && !all_integer(cs) && !fmod)
    throw ConstantError("Mod of floating values needs fmod=1 (the ONNX definition)");
  Ints shape = broadcast_shape(cs, op);
  std::vector<Ints> idx;
  for (auto* c : cs) idx.push_back(broadcast_index(c->shape, shape));
  size_t count = size_t(numel(shape));
  // Pow's result has the base's type, whatever the exponent's; the others need one type.
  bool ints = op == "Pow" ? cs[0]->integer : all_integer(cs);
  if (ints) {
    Ints r(count);
    for (size_t i = 0; i < count; ++i) {
      if (op == "Pow") {
        int64_t a = cs[0]->ints[size_t(idx[0][i])];
        r[i] = cs[1]->integer ? int_pow(a, cs[1]->ints[size_t(idx[1][i])])
                              : saturate_to_int64(std::pow(double(a), double(cs[1]->data[size_t(idx[1][i])])));
        continue;
      }
      const IntFn& f = fns->first;
      r[i] = cs[0]->ints[size_t(idx[0][i])];
      for (size_t k = 1; k < cs.size(); ++k) r[i] = f(r[i], cs[k]->ints[size_t(idx[k][i])]);
    }
    return Constant::of_ints(shape, r);
  }
  std::vector<float> r(count);
  for (size_t i = 0; i < count; ++i) {
    if (op == "Pow") {
      r[i] = std::pow(cs[0]->data[size_t(idx[0][i])], cs[1]->data[size_t(idx[1][i])]);
      continue;
    }
    const FloatFn& f = fns->second;
    r[i] = cs[0]->data[size_t(idx[0][i])];
    for (size_t k = 1; k < cs.size(); ++k) r[i] = f(r[i], cs[k]->data[size_t(idx[k][i])]);
  }
  if (!kBoolResult.count(op)) return Constant{shape, r};
  Ints b(r.begin(), r.end());
  return Constant::of_ints(shape, b);
}

std::optional<Constant> unary(const std::string& op, const Constant& x) {
  using IntFn = std::function<int64_t(int64_t)>;
  using FloatFn = std::function<float(float)>;
  auto same = [](int64_t a) { return a; };
  // Integer forms of the floating-only operators (Floor, Ceil, Round) are the identity.
  static const std::map<std::string, std::pair<IntFn, FloatFn>> kOps = {
      {"Neg", {wrap_neg, [](float a) { return -a; }}},
      {"Abs", {[](int64_t a) { return a < 0 ? wrap_neg(a) : a; }, [](float a) { return std::fabs(a); }}},
      {"Sign", {[](int64_t a) { return int64_t(a > 0) - int64_t(a < 0); }, [](float a) { return float((a > 0) - (a < 0)); }}},
      {"Not", {[](int64_t a) { return int64_t(a == 0); }, [](float a) { return float(a == 0); }}},
      {"Floor", {same, [](float a) { return std::floor(a); }}},
      {"Ceil", {same, [](float a) { return std::ceil(a); }}},
      {"Round", {same, [](float a) { return std::nearbyint(a); }}},  // halves to even, the default rounding mode
      {"Sqrt", {nullptr, [](float a) { return std::sqrt(a); }}},
      {"Reciprocal", {nullptr, [](float a) { return 1.0f / a; }}},
  };
  auto it = kOps.find(op);
  if (it == kOps.end()) return std::nullopt;
  if (x.integer && it->second.first) {
    Ints r;
    for (int64_t v : x.ints) r.push_back(it->second.first(v));
    return Constant::of_ints(x.shape, r);
  }
  Constant r{x.shape, x.data};
  for (float& v : r.data) v = it->second.second(v);
  if (op != "Not") return r;
  return Constant::of_ints(x.shape, Ints(r.data.begin(), r.data.end()));
}

Constant where(const Constant& cond, const Constant& a, const Constant& b) {
  Ints shape = broadcast_shape({&cond, &a, &b}, "Where");
  Ints ic = broadcast_index(cond.shape, shape), ia = broadcast_index(a.shape, shape), ib = broadcast_index(b.shape, shape);
  bool ints = a.integer && b.integer;
  Constant r;
  r.shape = shape;
  r.integer = ints;
  for (size_t i = 0; i < ic.size(); ++i) {
    bool c = cond.integer ? cond.ints[size_t(ic[i])] != 0 : cond.data[size_t(ic[i])] != 0;
    const Constant& from = c ? a : b;
    size_t at = size_t(c ? ia[i] : ib[i]);
    r.data.push_back(from.data[at]);
    if (ints) r.ints.push_back(from.ints[at]);
  }
  return r;
}

// Cast to any numeric type: integers wrap to the target's width, floats truncate toward zero
// into integers (saturating where ONNX leaves out-of-range values undefined), bool is != 0;
// floating targets round to their precision (double is carried as float).
Constant cast(const Constant& x, int to) {
  if (is_integer_elem_type(to)) {
    Ints r;
    for (size_t i = 0; i < x.data.size(); ++i) r.push_back(cast_integer(x.int_at(i), to));
    if (to == onnx::TensorProto::BOOL && !x.integer)
      for (size_t i = 0; i < x.data.size(); ++i) r[i] = x.data[i] != 0;
    return Constant::of_ints(x.shape, r);
  }
  Constant r{x.shape, {}};
  for (size_t i = 0; i < x.data.size(); ++i) {
    float v = x.integer ? float(x.ints[i]) : x.data[i];
    if (to == onnx::TensorProto::FLOAT16) v = float(static_cast<_Float16>(v));
    else if (to == onnx::TensorProto::BFLOAT16) v = numerics::f32_from_bits(uint32_t(numerics::f32_to_bf16(numerics::f32_bits(v))) << 16);
    else if (to != onnx::TensorProto::FLOAT && to != onnx::TensorProto::DOUBLE)
      throw ConstantError(fmt::format("Cast to {} is not supported (a floating, integer or bool type)",
                                      onnx::TensorProto::DataType_Name(onnx::TensorProto::DataType(to))));
    r.data.push_back(v);
  }
  return r;
}

int64_t axis_of(int64_t axis, int64_t rank, const std::string& op) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) throw ConstantError(fmt::format("{} axis {} is out of range for {} dimensions", op, axis, rank));
  return a;
}

Constant concat(const onnx::NodeProto& n, const std::vector<const Constant*>& cs) {
  int64_t r = int64_t(cs[0]->shape.size()), axis = axis_of(attr_i(n, "axis", 0), r, "Concat");
  Ints shape = cs[0]->shape;
  shape[size_t(axis)] = 0;
  for (auto* c : cs) {
    if (int64_t(c->shape.size()) != r) throw ConstantError("Concat of constants of different ranks");
    shape[size_t(axis)] += c->shape[size_t(axis)];
  }
  bool ints = all_integer(cs);
  Constant out;
  out.shape = shape;
  out.integer = ints;
  int64_t outer = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= shape[size_t(k)];
  for (int64_t o = 0; o < outer; ++o)
    for (auto* c : cs) {
      int64_t chunk = outer ? numel(c->shape) / outer : 0;
      out.data.insert(out.data.end(), c->data.begin() + o * chunk, c->data.begin() + (o + 1) * chunk);
      if (ints) out.ints.insert(out.ints.end(), c->ints.begin() + o * chunk, c->ints.begin() + (o + 1) * chunk);
    }
  return out;
}

// Flat index of each element of a row-major tensor of `shape` for an index per dimension.
struct Strides {
  Ints stride;
  explicit Strides(const Ints& shape) : stride(shape.size(), 1) {
    for (size_t k = shape.size(); k-- > 1;) stride[k - 1] = stride[k] * shape[k];
  }
};

// Every flat index of a tensor of `shape` read as per-dimension picks `pick[d]` of `x`.
Ints gather_index(const Ints& x_shape, const std::vector<Ints>& pick) {
  Strides s(x_shape);
  Ints idx{0};
  for (size_t d = 0; d < pick.size(); ++d) {
    Ints next;
    for (int64_t base : idx)
      for (int64_t p : pick[d]) next.push_back(base + p * s.stride[d]);
    idx = std::move(next);
  }
  return idx;
}

Constant transpose(const onnx::NodeProto& n, const Constant& c) {
  int64_t r = int64_t(c.shape.size());
  Ints perm = attr_ints(n, "perm", {});
  if (perm.empty())
    for (int64_t k = r; k-- > 0;) perm.push_back(k);
  if (int64_t(perm.size()) != r) throw ConstantError("perm does not match the constant's rank");
  Strides s(c.shape);
  Ints shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= r) throw ConstantError(fmt::format("perm entry {} is out of range for a {}-D constant", p, r));
    shape.push_back(c.shape[size_t(p)]);
  }
  Ints idx(size_t(numel(shape)));
  Ints at(size_t(r), 0);
  for (size_t i = 0; i < idx.size(); ++i) {
    int64_t src = 0;
    for (int64_t k = 0; k < r; ++k) src += at[size_t(k)] * s.stride[size_t(perm[size_t(k)])];
    idx[i] = src;
    for (int64_t k = r - 1; k >= 0 && ++at[size_t(k)] == shape[size_t(k)]; --k) at[size_t(k)] = 0;
  }
  return c.take(shape, idx);
}

Constant gather(const onnx::NodeProto& n, const Constant& x, const Constant& ind) {
  int64_t r = int64_t(x.shape.size()), axis = axis_of(attr_i(n, "axis", 0), r, "Gather");
  int64_t dim = x.shape[size_t(axis)];
  Ints picks;
  for (size_t i = 0; i < ind.data.size(); ++i) {
    int64_t k = ind.int_at(i);
    if (k < -dim || k >= dim) throw ConstantError(fmt::format("Gather index {} is out of range for a dimension of {}", k, dim));
    picks.push_back(k < 0 ? k + dim : k);
  }
  std::vector<Ints> pick;
  Ints shape;
  for (int64_t d = 0; d < r; ++d) {
    if (d == axis) {
      pick.push_back(picks);
      shape.insert(shape.end(), ind.shape.begin(), ind.shape.end());
      continue;
    }
    Ints all(size_t(x.shape[size_t(d)]));
    for (size_t k = 0; k < all.size(); ++k) all[k] = int64_t(k);
    pick.push_back(all);
    shape.push_back(x.shape[size_t(d)]);
  }
  return x.take(shape, gather_index(x.shape, pick));
}

// Slice: starts, ends, axes and steps as inputs (opset 10 on) or attributes (before).
Constant slice(const onnx::NodeProto& n, const std::vector<const Constant*>& in) {
  const Constant& x = *in[0];
  auto ints = [&](size_t i, const char* name) {
    if (in.size() == 1) return attr_ints(n, name, {});
    return i < in.size() && in[i] ? in[i]->int_values() : Ints{};
  };
  Ints starts = ints(1, "starts"), ends = ints(2, "ends"), axes = ints(3, "axes"), steps = ints(4, "steps");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() || steps.size() != starts.size())
    throw ConstantError("Slice starts, ends, axes and steps must have one length");
  int64_t r = int64_t(x.shape.size());
  std::vector<Ints> pick(static_cast<size_t>(r));
  std::vector<bool> seen(static_cast<size_t>(r), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axis_of(axes[i], r, "Slice");
    if (seen[size_t(a)]) throw ConstantError(fmt::format("Slice axis {} is repeated", axes[i]));
    if (steps[i] == 0) throw ConstantError("Slice step 0 is not allowed");
    seen[size_t(a)] = true;
    pick[size_t(a)] = slice_indices(x.shape[size_t(a)], starts[i], ends[i], steps[i]);
  }
  Ints shape;
  for (int64_t d = 0; d < r; ++d) {
    if (!seen[size_t(d)])
      for (int64_t k = 0; k < x.shape[size_t(d)]; ++k) pick[size_t(d)].push_back(k);
    shape.push_back(int64_t(pick[size_t(d)].size()));
  }
  return x.take(shape, numel(shape) ? gather_index(x.shape, pick) : Ints{});
}

Constant range(const Constant& start, const Constant& limit, const Constant& delta) {
  if (start.data.size() != 1 || limit.data.size() != 1 || delta.data.size() != 1)
    throw ConstantError("Range takes scalar start, limit and delta");
  if (start.integer && limit.integer && delta.integer) {
    int64_t s = start.ints[0], l = limit.ints[0], d = delta.ints[0];
    if (d == 0) throw ConstantError("Range with delta 0");
    // max(ceil((limit - start) / delta), 0) elements, without overflow.
    __int128 span = __int128(l) - s, count = span / d + (span % d != 0 && ((span < 0) == (d < 0)));
    if (count > (int64_t(1) << 31)) throw ConstantError(fmt::format("Range of {} elements is too large to fold", int64_t(count)));
    Ints v;
    for (int64_t i = 0; i < int64_t(count); ++i) v.push_back(int64_t(s + __int128(i) * d));
    return Constant::of_ints({int64_t(v.size())}, v);
  }
  float s = start.data[0], l = limit.data[0], d = delta.data[0];
  if (d == 0) throw ConstantError("Range with delta 0");
  float count = std::max(std::ceil((l - s) / d), 0.0f);
  if (!(count <= float(int64_t(1) << 31))) throw ConstantError("Range of too many elements to fold");
  Constant r{{int64_t(count)}, {}};
  for (float v = s; int64_t(r.data.size()) < int64_t(count); v += d) r.data.push_back(v);  // the definition accumulates
  return r;
}

Constant constant_of_shape(const onnx::NodeProto& n, const Constant& shape_in, const std::filesystem::path& dir) {
  Ints shape = shape_in.int_values();
  for (int64_t d : shape)
    if (d < 0) throw ConstantError(fmt::format("ConstantOfShape of a negative dimension {}", d));
  Constant value{{}, {0.0f}};  // float32 zero unless the node says
  if (const auto* a = attr(n, "value")) value = read_tensor(a->t(), dir);
  if (value.data.size() != 1) throw ConstantError("ConstantOfShape value must hold one element");
  return value.take(shape, Ints(size_t(numel(shape)), 0));
}

Constant expand(const Constant& x, const Constant& want) {
  Constant target{want.int_values(), {}};
  for (int64_t d : target.shape)
    if (d < 0) throw ConstantError(fmt::format("Expand to a negative dimension {}", d));
  Ints shape = broadcast_shape({&x, &target}, "Expand");
  return x.take(shape, broadcast_index(x.shape, shape));
}

// ReduceSum, ReduceProd, ReduceMax, ReduceMin of integer constants (the size of a shape's
// tail): axes as an attribute, or an input from opset 13 (ReduceSum) / 18 (the others).
std::optional<Constant> reduce(const onnx::NodeProto& n, const std::vector<const Constant*>& in) {
  const std::string& op = n.op_type();
  if (op != "ReduceSum" && op != "ReduceProd" && op != "ReduceMax" && op != "ReduceMin") return std::nullopt;
  const Constant& x = *in[0];
  if (!x.integer) return std::nullopt;  // floating reductions are the reduce operators' work
  int64_t r = int64_t(x.shape.size());
  Ints axes = attr_ints(n, "axes", {});
  if (in.size() > 1 && in[1]) axes = in[1]->int_values();
  bool keep = attr_i(n, "keepdims", 1) != 0;
  if (axes.empty() && attr_i(n, "noop_with_empty_axes", 0)) return x;
  std::vector<bool> reduced(size_t(r), axes.empty());
  for (int64_t a : axes) reduced[size_t(axis_of(a, r, op))] = true;
  Ints shape, kept_shape;
  for (int64_t d = 0; d < r; ++d) {
    kept_shape.push_back(reduced[size_t(d)] ? 1 : x.shape[size_t(d)]);
    if (!reduced[size_t(d)] || keep) shape.push_back(kept_shape.back());
  }
  if (numel(x.shape) == 0 && (op == "ReduceMax" || op == "ReduceMin"))
    throw ConstantError(fmt::format("{} of an empty tensor", op));
  Ints out(size_t(numel(kept_shape)), op == "ReduceProd" ? 1 : 0);
  std::vector<bool> first(out.size(), true);
  Strides in_s(x.shape), out_s(kept_shape);
  for (int64_t i = 0; i < numel(x.shape); ++i) {
    int64_t o = 0;
    for (int64_t d = 0; d < r; ++d)
      if (!reduced[size_t(d)]) o += (i / in_s.stride[size_t(d)] % x.shape[size_t(d)]) * out_s.stride[size_t(d)];
    int64_t v = x.ints[size_t(i)];
    int64_t& acc = out[size_t(o)];
    if (op == "ReduceSum") acc = wrap_add(acc, v);
    else if (op == "ReduceProd") acc = wrap_mul(acc, v);
    else acc = first[size_t(o)] ? v : op == "ReduceMax" ? std::max(acc, v) : std::min(acc, v);
    first[size_t(o)] = false;
  }
  return Constant::of_ints(shape, out);
}

}  // namespace

std::optional<Constant> fold_node(const onnx::NodeProto& n, const std::vector<const Constant*>& in,
                                  const std::filesystem::path& dir) {
  const std::string& op = n.op_type();
  std::vector<const Constant*> given;
  for (auto* c : in)
    if (c) given.push_back(c);
  if (given.empty()) return std::nullopt;
  auto at = [&](size_t i) -> const Constant& {
    if (i >= in.size() || !in[i]) throw ConstantError(fmt::format("{} needs input {}", op, i));
    return *in[i];
  };
  if (auto r = elementwise(n, given)) return r;
  if (in.size() == 1)
    if (auto r = unary(op, at(0))) return r;
  if (auto r = reduce(n, in)) return r;
  if (op == "Where") return where(at(0), at(1), at(2));
  if (op == "Cast") return cast(at(0), int(attr_i(n, "to", onnx::TensorProto::FLOAT)));
  if (op == "Concat") return concat(n, given);
  if (op == "Transpose") return transpose(n, at(0));
  if (op == "Gather") return gather(n, at(0), at(1));
  if (op == "Expand") return expand(at(0), at(1));
  if (op == "Range") return range(at(0), at(1), at(2));
  if (op == "ConstantOfShape") return constant_of_shape(n, at(0), dir);
  // Slices of any constant: shape vectors, integers, and weights (torch's LSTM export cuts
  // each gate's weights out of one matrix and joins them in ONNX's gate order, and the LSTM
  // needs the result as a constant).
  if (op == "Slice") return slice(n, in);
  return std::nullopt;
}

}  // namespace vtpu::compiler::onnx_import
