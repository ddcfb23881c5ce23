// Comparisons, logical operators, Where and Cast to bool of values computed at run time
// (compiler/import/logical.cpp): 0/1 arithmetic exact for integer operands, checked against
// the ONNX definitions computed here; float comparisons and INT8 mask values refused by name.
#include "e2e_fixture.h"

#include <fmt/format.h>

namespace vtpu::compiler {
namespace {

// y = Where(ag, x, Where(xo, x, -5)) over every comparison and logical operator of integer
// inputs a [3, 6] and b [1, 6] (broadcast), x in eighths (exact in bf16).
TEST_P(CompileE2E, ComparisonsAndLogicalOpsOfIntegersMatchDefinition) {
  OnnxBuilder m(14);
  m.input("x", {3, 6});
  m.input("a", {3, 6}, onnx::TensorProto::INT64);
  m.input("b", {1, 6}, onnx::TensorProto::INT64);
  m.init("neg", {1}, 0, {-5.0f});
  m.node("Equal", "eq", {"a", "b"}, {"e"});
  m.node("Greater", "gt", {"a", "b"}, {"g"});
  m.node("LessOrEqual", "le", {"a", "b"}, {"le"});
  m.node("Less", "lt", {"a", "b"}, {"l"});
  m.node("GreaterOrEqual", "ge", {"a", "b"}, {"ge"});
  m.node("Not", "not_eq", {"e"}, {"ne"});
  m.node("And", "and", {"g", "ne"}, {"ag"});
  m.node("Or", "or", {"e", "l"}, {"og"});
  m.node("Xor", "xor", {"og", "ge"}, {"xo"});
  m.node("Where", "w1", {"xo", "x", "neg"}, {"w"});
  m.node("Where", "w2", {"ag", "x", "w"}, {"y"});
  m.output("y", {3, 6});
  auto path = m.save("vtpu_logical_" + id() + ".onnx");
  Vec x(18), a(18), b(6);
  std::mt19937 rng(3);
  for (auto& v : x) v = float(int(rng() % 33) - 16) / 8.0f;
  for (auto& v : a) v = float(int(rng() % 7) - 3);
  for (auto& v : b) v = float(int(rng() % 7) - 3);
  Vec got = compile_and_run(path, {{"x", x}, {"a", a}, {"b", b}});
  Vec want(18);
  int selected = 0;
  for (size_t i = 0; i < 18; ++i) {
    float ai = a[i], bi = b[i % 6];
    bool e = ai == bi, g = ai > bi, l = ai < bi, ge = ai >= bi;
    bool ag = g && !e, xo = (e || l) != ge;
    float w = xo ? x[i] : -5.0f;
    want[i] = ag ? x[i] : w;
    selected += !ag && !xo;
  }
  ASSERT_GT(selected, 0) << "the inputs should take the -5 branch somewhere";
  expect_close(got, want, tolerance(0.01));
}

// Hugging Face's attention mask: 1 - float(mask), where it is nonzero the float32 minimum,
// added to the scores before the softmax. bf16: the masked keys get no weight; INT8: refused
// (one scale cannot hold -3.4e38 beside the scores).
TEST_P(CompileE2E, AMaskFromAnIntegerInputMatchesDefinition) {
  const int64_t Q = 2, K = 8;
  OnnxBuilder m(14);
  m.input("x", {Q, K});
  m.input("mask", {Q, K}, onnx::TensorProto::INT64);
  m.init("one", {}, 0, {1.0f});
  m.init("fmin", {}, 0, {std::numeric_limits<float>::lowest()});
  OnnxBuilder::attr(m.node("Cast", "to_float", {"mask"}, {"mf"}), "to", int64_t(onnx::TensorProto::FLOAT));
  m.node("Sub", "invert", {"one", "mf"}, {"inv"});
  OnnxBuilder::attr(m.node("Cast", "to_bool", {"inv"}, {"invb"}), "to", int64_t(onnx::TensorProto::BOOL));
  m.node("Where", "fill", {"invb", "fmin", "inv"}, {"add_mask"});
  m.node("Add", "masked", {"x", "add_mask"}, {"s"});
  OnnxBuilder::attr(m.node("Softmax", "softmax", {"s"}, {"y"}), "axis", int64_t(-1));
  m.output("y", {Q, K});
  auto path = m.save("vtpu_hf_mask_" + id() + ".onnx");
  Vec x = uniform_values(size_t(Q * K), 8, 400.0f), mask = {1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 0};
  if (int8()) {
    try {
      compile_and_run(path, {{"x", x}, {"mask", mask}});
      FAIL() << "INT8 cannot hold the mask value beside the scores";
    } catch (const CompileError& e) {
      EXPECT_NE(std::string(e.what()).find("node 'fill': Where puts the constant"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("--dtype bf16"), std::string::npos) << e.what();
    }
    return;
  }
  Vec got = compile_and_run(path, {{"x", x}, {"mask", mask}});
  Vec masked = x;  // the masked keys' scores -inf: no weight
  for (size_t i = 0; i < masked.size(); ++i)
    if (!mask[i]) masked[i] = -std::numeric_limits<float>::infinity();
  Vec want = softmax_rows(masked, Q, K);
  expect_close(got, want, tolerance(0.01));
}

// Comparisons of float values: the difference times 2^100 twice clamps to exactly 0 or 1 in
// bf16, down to the smallest differences of neighbouring values; INT8 refuses them by name.
TEST_P(CompileE2E, ComparisonsOfFloatsMatchDefinitionInBf16) {
  OnnxBuilder m(14);
  m.input("x", {2, 8});
  m.input("t", {2, 8});
  m.node("Greater", "gt", {"x", "t"}, {"g"});
  m.node("LessOrEqual", "le", {"x", "t"}, {"le"});
  m.node("Equal", "eq", {"x", "t"}, {"e"});
  m.node("GreaterOrEqual", "ge", {"x", "t"}, {"ge"});
  m.node("Less", "lt", {"x", "t"}, {"l"});
  for (const char* v : {"g", "le", "e", "ge", "l"})
    OnnxBuilder::attr(m.node("Cast", std::string("f_") + v, {v}, {std::string(v) + "f"}), "to", int64_t(onnx::TensorProto::FLOAT));
  OnnxBuilder::attr(m.node("Concat", "all", {"gf", "lef", "ef", "gef", "lf"}, {"y"}), "axis", int64_t(1));
  m.output("y", {2, 40});
  auto path = m.save("vtpu_float_compare_" + id() + ".onnx");
  // Equal pairs, and neighbours one bf16 step apart (1 and 1 + 2^-7, -3 and -3 - 2^-6, ...).
  Vec x = {1.0f, 1.0078125f, -3.0f, -3.015625f, 0.0f, 1e-30f, 1e30f, -2.5f, 0.5f, 0.5f, -0.25f, 7.0f, 7.0f, 1e-3f, -1e-3f, 4.0f};
  Vec t = {1.0078125f, 1.0f, -3.015625f, -3.0f, 0.0f, 0.0f, 1e30f, 2.5f, 0.5f, 0.25f, -0.25f, 7.0f, -7.0f, 1e-3f, 1e-3f, 4.0f};
  if (int8()) {
    try {
      compile_and_run(path, {{"x", x}, {"t", t}});
      FAIL() << "INT8 cannot compare floats";
    } catch (const CompileError& e) {
      EXPECT_NE(std::string(e.what()).find("node 'gt': Greater of float values computed at run time ('x' from input(s) x) "
                                           "is not supported in INT8"),
                std::string::npos)
          << e.what();
    }
    return;
  }
  Vec got = compile_and_run(path, {{"x", x}, {"t", t}});
  Vec want;
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k < 5; ++k)
      for (int j = 0; j < 8; ++j) {
        float a = x[size_t(r * 8 + j)], b = t[size_t(r * 8 + j)];
        bool v = k == 0 ? a > b : k == 1 ? a <= b : k == 2 ? a == b : k == 3 ? a >= b : a < b;
        want.push_back(v ? 1.0f : 0.0f);
      }
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace vtpu::compiler
