#pragma once
// ONNX operators on constants, with the results the ONNX operator definitions give
// (onnx.ai/onnx/operators, written out by hand here, not computed by vtpu): int64 edge values
// (INT64_MAX and INT64_MIN bounds, wrap-around, truncating division of negatives, values past
// 2^53 that float would round), bools, casts between widths. compiler/tests/test_constant_ops.cpp
// checks vtpu's constant folder against them; tests/ort/test_ort_constant_ops.cpp checks
// onnxruntime against them, so every expected value here is also what onnxruntime computes,
// except in the cases marked ort = false (it traps on them, or departs from the definition:
// each says how).
#include <onnx/onnx_pb.h>

#include <cctype>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace vtpu::test {

struct Val {
  int type = onnx::TensorProto::INT64;
  std::vector<int64_t> shape;
  std::vector<int64_t> ints;   // integer and bool types
  std::vector<double> floats;  // floating types
};

inline Val i64(std::vector<int64_t> shape, std::vector<int64_t> v) { return {onnx::TensorProto::INT64, shape, v, {}}; }
inline Val i64(int64_t scalar) { return {onnx::TensorProto::INT64, {}, {scalar}, {}}; }
inline Val typed(int type, std::vector<int64_t> shape, std::vector<int64_t> v) { return {type, shape, v, {}}; }
inline Val boolean(std::vector<int64_t> shape, std::vector<int64_t> v) { return typed(onnx::TensorProto::BOOL, shape, v); }
inline Val f32(std::vector<int64_t> shape, std::vector<double> v) { return {onnx::TensorProto::FLOAT, shape, {}, v}; }
inline Val floating(int type, std::vector<int64_t> shape, std::vector<double> v) { return {type, shape, {}, v}; }

struct Attr {
  std::string name;
  std::variant<int64_t, std::vector<int64_t>, Val> value;
};

struct FoldCase {
  std::string what;  // the rule of the definition this case checks
  std::string op;
  std::vector<std::optional<Val>> inputs;  // nullopt: an absent optional input
  std::vector<Attr> attrs;
  Val expected;
  std::string error;  // non-empty: the folder refuses with a message containing this
  int opset = 17;
  bool ort = true;  // onnxruntime runs it (false: it traps, as on INT64_MIN / -1, or departs from the definition)
};

inline std::vector<FoldCase> fold_cases() {
  const int64_t MAX = std::numeric_limits<int64_t>::max(), MIN = std::numeric_limits<int64_t>::min();
  const int64_t P53 = int64_t(1) << 53, P62 = int64_t(1) << 62, P32 = int64_t(1) << 32;
  using T = onnx::TensorProto;
  // Most cases leave error, opset and ort at their defaults.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
  std::vector<FoldCase> c = {
      // ---- arithmetic: int64 two's complement, as the definitions' integer types are ----
      {"Add wraps around", "Add", {i64({3}, {MAX, MIN, 5}), i64({3}, {1, -1, -7})}, {}, i64({3}, {MIN, MAX, -2})},
      {"Add is exact past 2^53", "Add", {i64({1}, {P53 + 1}), i64({1}, {2})}, {}, i64({1}, {P53 + 3})},
      {"Add broadcasts", "Add", {i64({2, 1}, {1, 2}), i64({3}, {10, 20, 30})}, {}, i64({2, 3}, {11, 21, 31, 12, 22, 32})},
      {"Sub wraps around", "Sub", {i64({2}, {MIN, 0}), i64({2}, {1, MIN})}, {}, i64({2}, {MAX, MIN})},
      {"Mul wraps around", "Mul", {i64({3}, {P62, P32 + 1, -3}), i64({3}, {2, P32 - 1, 4})}, {}, i64({3}, {MIN, -1, -12})},
      {"Div truncates toward zero", "Div", {i64({4}, {7, -7, 7, -7}), i64({4}, {2, 2, -2, -2})}, {}, i64({4}, {3, -3, -3, 3})},
      {"Div of INT64_MAX", "Div", {i64({2}, {MAX, MIN}), i64({2}, {2, 2})}, {}, i64({2}, {MAX / 2, MIN / 2})},
      {"Div of INT64_MIN by -1 wraps", "Div", {i64({1}, {MIN}), i64({1}, {-1})}, {}, i64({1}, {MIN}), "", 17, false},
      {"Div by zero", "Div", {i64({1}, {5}), i64({1}, {0})}, {}, {}, "by zero", 17, false},
      {"Div of floats is not truncated", "Div", {f32({2}, {7, -7}), f32({1}, {2})}, {}, f32({2}, {3.5, -3.5})},
      {"Mod takes the divisor's sign", "Mod", {i64({4}, {7, -7, 7, -7}), i64({4}, {3, 3, -3, -3})}, {}, i64({4}, {1, 2, -2, -1})},
      {"Mod fmod=1 takes the dividend's sign", "Mod", {i64({4}, {7, -7, 7, -7}), i64({4}, {3, 3, -3, -3})}, {{"fmod", int64_t(1)}},
       i64({4}, {1, -1, 1, -1})},
      {"Mod of INT64_MIN", "Mod", {i64({2}, {MIN, MIN}), i64({2}, {3, MAX})}, {}, i64({2}, {1, MAX - 1})},
      {"Mod by zero", "Mod", {i64({1}, {5}), i64({1}, {0})}, {}, {}, "by zero", 17, false},
      {"Mod of floats with fmod=1", "Mod", {f32({2}, {-7, 7.5}), f32({2}, {3, 2})}, {{"fmod", int64_t(1)}}, f32({2}, {-1, 1.5})},
      {"Pow of integers", "Pow", {i64({3}, {2, -3, 3}), i64({3}, {62, 3, 33})}, {}, i64({3}, {P62, -27, 5559060566555523})},
      // onnxruntime takes integer powers through double and gives 4052555153018976256.
      {"Pow of integers is exact past 2^53", "Pow", {i64({1}, {3}), i64({1}, {39})}, {}, i64({1}, {4052555153018976267}), "", 17,
       false},
      {"Pow wraps around", "Pow", {i64({1}, {2}), i64({1}, {63})}, {}, i64({1}, {MIN})},
      {"Pow to negative exponents truncates", "Pow", {i64({3}, {2, -1, 1}), i64({3}, {-1, -3, -2})}, {}, i64({3}, {0, -1, 1})},
      {"Pow of an integer base to a float exponent stays integer", "Pow", {i64({1}, {9}), f32({1}, {0.5})}, {}, i64({1}, {3})},
      {"Max", "Max", {i64({2}, {MAX, MIN}), i64({2}, {MIN, MAX})}, {}, i64({2}, {MAX, MAX})},
      {"Min of three, broadcast", "Min", {i64({1}, {5}), i64({2}, {MIN + 1, 3}), i64({1}, {4})}, {}, i64({2}, {MIN + 1, 3})},
      {"Sum of three, broadcast (floating types only)", "Sum", {f32({1}, {1}), f32({2}, {2, 3}), f32({1}, {0.5})}, {},
       f32({2}, {3.5, 4.5})},
      {"Neg of INT64_MIN wraps", "Neg", {i64({3}, {MIN, MAX, 0})}, {}, i64({3}, {MIN, MIN + 1, 0})},
      {"Abs of INT64_MIN wraps", "Abs", {i64({3}, {MIN, -5, MAX})}, {}, i64({3}, {MIN, 5, MAX})},
      {"Sign", "Sign", {i64({3}, {MIN, 0, MAX})}, {}, i64({3}, {-1, 0, 1})},
      // ---- comparisons and logic: exact on int64, bool results ----
      {"Equal tells 2^53 from 2^53 + 1", "Equal", {i64({2}, {P53, MIN}), i64({2}, {P53 + 1, MIN})}, {}, boolean({2}, {0, 1})},
      {"Less at INT64_MAX", "Less", {i64({2}, {MAX - 1, MAX}), i64({1}, {MAX})}, {}, boolean({2}, {1, 0})},
      {"LessOrEqual", "LessOrEqual", {i64({2}, {MAX - 1, MAX}), i64({1}, {MAX})}, {}, boolean({2}, {1, 1})},
      {"Greater at INT64_MIN", "Greater", {i64({2}, {MIN + 1, MIN}), i64({1}, {MIN})}, {}, boolean({2}, {1, 0})},
      {"GreaterOrEqual", "GreaterOrEqual", {i64({2}, {MIN + 1, MIN}), i64({1}, {MIN + 1})}, {}, boolean({2}, {1, 0})},
      {"And", "And", {boolean({4}, {0, 0, 1, 1}), boolean({4}, {0, 1, 0, 1})}, {}, boolean({4}, {0, 0, 0, 1})},
      {"Or", "Or", {boolean({4}, {0, 0, 1, 1}), boolean({4}, {0, 1, 0, 1})}, {}, boolean({4}, {0, 1, 1, 1})},
      {"Xor", "Xor", {boolean({4}, {0, 0, 1, 1}), boolean({4}, {0, 1, 0, 1})}, {}, boolean({4}, {0, 1, 1, 0})},
      {"Not", "Not", {boolean({2}, {0, 1})}, {}, boolean({2}, {1, 0})},
      {"Where picks exactly", "Where", {boolean({3}, {1, 0, 1}), i64({3}, {MAX, MAX, MAX}), i64(MIN)}, {}, i64({3}, {MAX, MIN, MAX})},
      {"Where broadcasts the condition", "Where", {boolean({2, 1}, {1, 0}), i64({2}, {1, 2}), i64({2}, {3, 4})}, {},
       i64({2, 2}, {1, 2, 3, 4})},
      // ---- Cast: integers wrap to the target's width, floats truncate toward zero ----
      {"Cast int64 to int32 keeps the low bits", "Cast", {i64({3}, {P32 + 5, -1, int64_t(1) << 31})}, {{"to", int64_t(T::INT32)}},
       typed(T::INT32, {3}, {5, -1, -(int64_t(1) << 31)})},
      {"Cast int64 to int8", "Cast", {i64({2}, {200, -129})}, {{"to", int64_t(T::INT8)}}, typed(T::INT8, {2}, {-56, 127})},
      {"Cast int64 to uint8", "Cast", {i64({2}, {-1, 256})}, {{"to", int64_t(T::UINT8)}}, typed(T::UINT8, {2}, {255, 0})},
      {"Cast int64 to bool", "Cast", {i64({3}, {0, MIN, 2})}, {{"to", int64_t(T::BOOL)}}, boolean({3}, {0, 1, 1})},
      {"Cast int64 to float rounds to nearest", "Cast", {i64({2}, {P53 + 1, 16777217})}, {{"to", int64_t(T::FLOAT)}},
       f32({2}, {double(P53), 16777216})},
      {"Cast int64 to int64 keeps INT64_MAX", "Cast", {i64({1}, {MAX})}, {{"to", int64_t(T::INT64)}}, i64({1}, {MAX})},
      {"Cast float to int64 truncates toward zero", "Cast", {f32({3}, {-2.7, 2.7, -0.5})}, {{"to", int64_t(T::INT64)}},
       i64({3}, {-2, 2, 0})},
      {"Cast float to bool", "Cast", {f32({2}, {0, -0.5})}, {{"to", int64_t(T::BOOL)}}, boolean({2}, {0, 1})},
      {"Cast bool to int64", "Cast", {boolean({2}, {1, 0})}, {{"to", int64_t(T::INT64)}}, i64({2}, {1, 0})},
      {"Cast int64 to float16 rounds to half", "Cast", {i64({2}, {2049, -3})}, {{"to", int64_t(T::FLOAT16)}},
       floating(T::FLOAT16, {2}, {2048, -3})},
      {"Cast int64 to double", "Cast", {i64({1}, {3})}, {{"to", int64_t(T::DOUBLE)}}, floating(T::DOUBLE, {1}, {3})},
      // ---- data movement of shape vectors ----
      {"Concat keeps INT64_MIN", "Concat", {i64({2}, {MAX, 1}), i64({1}, {MIN})}, {{"axis", int64_t(0)}}, i64({3}, {MAX, 1, MIN})},
      {"Concat along axis -1", "Concat", {i64({2, 1}, {1, 2}), i64({2, 2}, {3, 4, 5, 6})}, {{"axis", int64_t(-1)}},
       i64({2, 3}, {1, 3, 4, 2, 5, 6})},
      {"Gather of a scalar index -1", "Gather", {i64({4}, {10, MAX, MIN, 40}), i64(-1)}, {}, i64(40)},
      {"Gather of a 2-D index", "Gather", {i64({4}, {10, MAX, MIN, 40}), i64({1, 2}, {0, -3})}, {}, i64({1, 2}, {10, MAX})},
      {"Gather along axis 1", "Gather", {i64({2, 3}, {1, 2, 3, 4, 5, 6}), i64({2}, {2, 0})}, {{"axis", int64_t(1)}},
       i64({2, 2}, {3, 1, 6, 4})},
      {"Gather out of range", "Gather", {i64({2}, {1, 2}), i64(2)}, {}, {}, "out of range", 17, false},
      {"Transpose", "Transpose", {i64({2, 3}, {1, 2, 3, 4, 5, 6})}, {{"perm", std::vector<int64_t>{1, 0}}},
       i64({3, 2}, {1, 4, 2, 5, 3, 6})},
      {"Expand of INT64_MAX", "Expand", {i64({1}, {MAX}), i64({1}, {3})}, {}, i64({3}, {MAX, MAX, MAX})},
      {"Expand broadcasts both ways", "Expand", {i64({2, 1}, {1, 2}), i64({2}, {1, 3})}, {}, i64({2, 3}, {1, 1, 1, 2, 2, 2})},
      {"ConstantOfShape of an int64 value", "ConstantOfShape", {i64({2}, {2, 3})}, {{"value", i64({1}, {MIN})}},
       i64({2, 3}, {MIN, MIN, MIN, MIN, MIN, MIN})},
      {"ConstantOfShape of an empty shape is a scalar", "ConstantOfShape", {i64({0}, {})}, {{"value", i64({1}, {7})}}, i64(7)},
      {"ConstantOfShape defaults to float 0", "ConstantOfShape", {i64({1}, {2})}, {}, f32({2}, {0, 0})},
      // onnxruntime counts the elements in double, where MAX - 2 and MAX are one number: it gives none.
      {"Range near INT64_MAX", "Range", {i64(MAX - 2), i64(MAX), i64(1)}, {}, i64({2}, {MAX - 2, MAX - 1}), "", 17, false},
      {"Range of large values", "Range", {i64(P53 - 4), i64(P53 + 4), i64(3)}, {}, i64({3}, {P53 - 4, P53 - 1, P53 + 2})},
      {"Range with a negative delta", "Range", {i64(10), i64(1), i64(-3)}, {}, i64({3}, {10, 7, 4})},
      {"Range with a partial last step", "Range", {i64(0), i64(10), i64(3)}, {}, i64({4}, {0, 3, 6, 9})},
      {"Range of no elements", "Range", {i64(5), i64(5), i64(1)}, {}, i64({0}, {})},
      {"Range of floats", "Range", {f32({}, {0.5}), f32({}, {2}), f32({}, {0.5})}, {}, f32({3}, {0.5, 1, 1.5})},
      {"Range with delta 0", "Range", {i64(0), i64(3), i64(0)}, {}, {}, "delta 0", 17, false},
      // ---- Slice: bounds as exporters write them ----
      {"Slice to INT64_MAX (x[3:])", "Slice", {i64({5}, {0, 1, 2, 3, 4}), i64({1}, {3}), i64({1}, {MAX})}, {}, i64({2}, {3, 4})},
      {"Slice backward to INT64_MIN (x[::-1])", "Slice",
       {i64({5}, {0, 1, 2, 3, 4}), i64({1}, {-1}), i64({1}, {MIN}), i64({1}, {0}), i64({1}, {-1})}, {},
       i64({5}, {4, 3, 2, 1, 0})},
      {"Slice from INT64_MAX backward", "Slice",
       {i64({5}, {0, 1, 2, 3, 4}), i64({1}, {MAX}), i64({1}, {MIN}), std::nullopt, i64({1}, {-2})}, {}, i64({3}, {4, 2, 0})},
      {"Slice from INT64_MIN forward", "Slice", {i64({5}, {0, 1, 2, 3, 4}), i64({1}, {MIN}), i64({1}, {2})}, {}, i64({2}, {0, 1})},
      {"Slice start before the first element, backward", "Slice",
       {i64({5}, {0, 1, 2, 3, 4}), i64({1}, {-10}), i64({1}, {MIN}), std::nullopt, i64({1}, {-1})}, {}, i64({1}, {0})},
      {"Slice with a step", "Slice",
       {i64({5}, {0, 1, 2, 3, 4}), i64({1}, {1}), i64({1}, {MAX}), std::nullopt, i64({1}, {2})}, {}, i64({2}, {1, 3})},
      {"Slice with step INT64_MAX", "Slice",
       {i64({5}, {0, 1, 2, 3, 4}), i64({1}, {1}), i64({1}, {MAX}), std::nullopt, i64({1}, {MAX})}, {}, i64({1}, {1})},
      {"Slice with step INT64_MIN", "Slice",
       {i64({5}, {0, 1, 2, 3, 4}), i64({1}, {MAX}), i64({1}, {MIN}), std::nullopt, i64({1}, {MIN})}, {}, i64({1}, {4})},
      {"Slice that is empty", "Slice", {i64({5}, {0, 1, 2, 3, 4}), i64({1}, {3}), i64({1}, {1})}, {}, i64({0}, {})},
      {"Slice of a 2-D integer constant on axis -1", "Slice",
       {i64({2, 3}, {1, 2, 3, 4, 5, 6}), i64({1}, {1}), i64({1}, {MAX}), i64({1}, {-1})}, {}, i64({2, 2}, {2, 3, 5, 6})},
      {"Slice-1 with attributes (opset 9)", "Slice", {i64({5}, {0, 1, 2, 3, 4})},
       {{"starts", std::vector<int64_t>{1}}, {"ends", std::vector<int64_t>{MAX}}}, i64({4}, {1, 2, 3, 4}), "", 9},
      {"Slice step 0", "Slice",
       {i64({2}, {1, 2}), i64({1}, {0}), i64({1}, {2}), std::nullopt, i64({1}, {0})}, {}, {}, "step 0", 17, false},
      // ---- reductions of shape vectors ----
      {"ReduceProd of a shape", "ReduceProd", {i64({3}, {2, 3, 4})}, {{"keepdims", int64_t(0)}}, i64(24)},
      {"ReduceSum over an axis input", "ReduceSum", {i64({2, 2}, {1, 2, 3, 4}), i64({1}, {1})}, {}, i64({2, 1}, {3, 7})},
      {"ReduceMax of INT64 extremes", "ReduceMax", {i64({3}, {MIN, MAX, 0})}, {{"keepdims", int64_t(0)}}, i64(MAX)},
      {"ReduceMin of INT64 extremes", "ReduceMin", {i64({3}, {MIN, MAX, 0})}, {{"keepdims", int64_t(0)}}, i64(MIN)},
      // ---- floating elementwise ----
      {"Round halves to even", "Round", {f32({4}, {0.5, 1.5, 2.5, -0.5})}, {}, f32({4}, {0, 2, 2, -0.0})},
      {"Floor", "Floor", {f32({2}, {-1.5, 1.5})}, {}, f32({2}, {-2, 1})},
      {"Ceil", "Ceil", {f32({2}, {-1.5, 1.5})}, {}, f32({2}, {-1, 2})},
      {"Sqrt", "Sqrt", {f32({1}, {6.25})}, {}, f32({1}, {2.5})},
      {"Reciprocal", "Reciprocal", {f32({1}, {4})}, {}, f32({1}, {0.25})},
      {"Shapes that do not broadcast", "Add", {i64({2}, {1, 2}), i64({3}, {1, 2, 3})}, {}, {}, "broadcast", 17, false},
  };
#pragma GCC diagnostic pop
  return c;
}

// ---- the cases as ONNX protos ----

// `v` as a TensorProto: raw little-endian bytes, or (raw = false) the typed fields.
inline onnx::TensorProto tensor_of(const Val& v, const std::string& name, bool raw = true) {
  using T = onnx::TensorProto;
  T t;
  t.set_name(name);
  t.set_data_type(v.type);
  for (int64_t d : v.shape) t.add_dims(d);
  auto put = [&](auto x) {
    std::string& b = *t.mutable_raw_data();
    b.append(reinterpret_cast<const char*>(&x), sizeof x);
  };
  for (int64_t x : v.ints) {
    if (!raw) {
      if (v.type == T::INT64) t.add_int64_data(x);
      else if (v.type == T::UINT64 || v.type == T::UINT32) t.add_uint64_data(uint64_t(x));
      else t.add_int32_data(int32_t(x));
      continue;
    }
    switch (v.type) {
      case T::INT64: case T::UINT64: put(int64_t(x)); break;
      case T::INT32: case T::UINT32: put(int32_t(x)); break;
      case T::INT16: case T::UINT16: put(int16_t(x)); break;
      default: put(int8_t(x)); break;  // INT8, UINT8, BOOL
    }
  }
  for (double x : v.floats) {
    if (v.type == T::DOUBLE) put(x);
    else if (v.type == T::FLOAT16) put(static_cast<_Float16>(x));
    else put(float(x));
  }
  if (raw && v.ints.empty() && v.floats.empty()) t.set_raw_data("");
  return t;
}

// The case's node: inputs `<prefix>0`, `<prefix>1`, ... ("" where absent), output `out`.
inline onnx::NodeProto node_of(const FoldCase& c, const std::string& prefix, const std::string& out) {
  onnx::NodeProto n;
  n.set_op_type(c.op);
  n.set_name(prefix + c.op);
  for (size_t i = 0; i < c.inputs.size(); ++i) n.add_input(c.inputs[i] ? prefix + std::to_string(i) : "");
  n.add_output(out);
  for (const Attr& a : c.attrs) {
    onnx::AttributeProto* p = n.add_attribute();
    p->set_name(a.name);
    if (auto* i = std::get_if<int64_t>(&a.value)) {
      p->set_type(onnx::AttributeProto::INT);
      p->set_i(*i);
    } else if (auto* is = std::get_if<std::vector<int64_t>>(&a.value)) {
      p->set_type(onnx::AttributeProto::INTS);
      for (int64_t x : *is) p->add_ints(x);
    } else {
      p->set_type(onnx::AttributeProto::TENSOR);
      *p->mutable_t() = tensor_of(std::get<Val>(a.value), a.name);
    }
  }
  return n;
}

// A test name: the case's rule in letters and digits.
inline std::string case_name(const FoldCase& c, size_t index) {
  std::string r;
  bool up = true;
  for (char ch : c.what) {
    if (std::isalnum(static_cast<unsigned char>(ch))) r += up ? char(std::toupper(static_cast<unsigned char>(ch))) : ch, up = false;
    else up = true;
  }
  return r + "_" + std::to_string(index);
}

}  // namespace vtpu::test
