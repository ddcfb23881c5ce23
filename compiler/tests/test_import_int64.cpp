// Integer and shape arithmetic through the importer, as exporters write it: torch's `x[:, 3:]`
// (a Slice to INT64_MAX), backward slices to INT64_MIN, Shape -> Gather -> Add -> Div -> Mul
// chains that feed a Reshape or leave as outputs, values past 2^24 that float would round, and
// Casts of int64 constants. Expected values are worked out here from the ONNX definitions.
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdint>
#include <limits>

#include "vtpu/compiler/compiler.h"
#include "vtpu/config/config.h"
#include "vtpu/models/onnx_builder.h"

namespace {

using namespace vtpu;
using vtpu::testing::OnnxBuilder;
using Values = std::map<std::string, std::vector<float>>;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();

std::vector<float> iota(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(i) - 3.5f;
  return v;
}

// An int64 initializer of any shape (OnnxBuilder's init_i64 is 1-D).
void scalar_i64(OnnxBuilder& m, const std::string& name, int64_t v) {
  m.init_i64(name, {v});
  m.node("Squeeze", name + ".s", {name}, {name + "_s"});  // a rank-0 value, as torch writes scalars
}

std::filesystem::path save(OnnxBuilder& m, const std::string& what) {
  return m.save(fmt::format("vtpu_int64_{}_{}.onnx", what, ::getpid()));
}

TEST(ImportInt64, SliceToInt64MaxKeepsTheTail) {
  // torch: y = x[:, 3:] exports Slice(starts=[3], ends=[INT64_MAX], axes=[1]).
  OnnxBuilder m(13);
  m.input("x", {2, 8});
  m.init_i64("starts", {3});
  m.init_i64("ends", {kMax});
  m.init_i64("axes", {1});
  m.node("Slice", "tail", {"x", "starts", "ends", "axes"}, {"y"});
  m.output("y", {2, 5});
  auto model = save(m, "tail");
  std::vector<float> x = iota(16);
  Values out = compiler::reference_outputs(model, {{"x", x}});
  std::vector<float> want;
  for (int r = 0; r < 2; ++r)
    for (int c = 3; c < 8; ++c) want.push_back(x[size_t(r * 8 + c)]);
  EXPECT_EQ(out.at("y"), want);
  // And the chip's program has that 2 x 5 output.
  auto prog = compiler::compile_onnx(model, config::load_preset("tpu-v4-core"), {}).program;
  std::vector<int64_t> shape;
  for (const auto& t : prog.tensors)
    if (t.name == "y") shape = t.shape;
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 5}));
}

TEST(ImportInt64, BackwardSliceToInt64MinReverses) {
  // x[:, ::-1] and x[:, -2::-2] (steps -1 and -2; ends INT64_MIN as torch writes them).
  OnnxBuilder m(13);
  m.input("x", {1, 5});
  m.init_i64("s1", {-1}), m.init_i64("e", {kMin}), m.init_i64("a", {1}), m.init_i64("st1", {-1});
  m.init_i64("s2", {-2}), m.init_i64("st2", {-2});
  m.node("Slice", "rev", {"x", "s1", "e", "a", "st1"}, {"r"});
  m.node("Slice", "rev2", {"x", "s2", "e", "a", "st2"}, {"r2"});
  m.output("r", {1, 5});
  m.output("r2", {1, 2});
  Values out = compiler::reference_outputs(save(m, "rev"), {{"x", {1, 2, 3, 4, 5}}});
  EXPECT_EQ(out.at("r"), (std::vector<float>{5, 4, 3, 2, 1}));
  EXPECT_EQ(out.at("r2"), (std::vector<float>{4, 2}));
}

TEST(ImportInt64, OpsetNineSliceAttributes) {
  // Slice-1 (paddle2onnx at opset 9): starts, ends and axes are attributes.
  OnnxBuilder m(9);
  m.input("x", {2, 6});
  auto* s = m.node("Slice", "tail", {"x"}, {"y"});
  OnnxBuilder::attr(s, "starts", std::vector<int64_t>{2});
  OnnxBuilder::attr(s, "ends", std::vector<int64_t>{kMax});
  OnnxBuilder::attr(s, "axes", std::vector<int64_t>{1});
  m.output("y", {2, 4});
  std::vector<float> x = iota(12);
  Values out = compiler::reference_outputs(save(m, "slice1"), {{"x", x}});
  EXPECT_EQ(out.at("y"), (std::vector<float>{x[2], x[3], x[4], x[5], x[8], x[9], x[10], x[11]}));
}

TEST(ImportInt64, ShapeGatherArithmeticTruncatesIntoAReshape) {
  // n = Shape(x)[1] = 6; k = (n + 1) / 2 * 2 = 7 / 2 * 2 = 3 * 2 = 6 (integer Div truncates;
  // in float it would be 7 and the Reshape to [1, 7, -1] of 48 elements would be refused).
  OnnxBuilder m(13);
  m.input("x", {1, 6, 8});
  m.node("Shape", "shape", {"x"}, {"s"});
  scalar_i64(m, "one", 1);
  scalar_i64(m, "two", 2);
  scalar_i64(m, "idx", 1);
  m.node("Gather", "n", {"s", "idx_s"}, {"n"});  // a scalar: 6
  m.node("Add", "n1", {"n", "one_s"}, {"n1"});
  m.node("Div", "half", {"n1", "two_s"}, {"h"});
  m.node("Mul", "k", {"h", "two_s"}, {"k"});
  m.init_i64("axes0", {0});
  m.node("Unsqueeze", "k1", {"k", "axes0"}, {"k1"});
  m.init_i64("lead", {1}), m.init_i64("rest", {-1});
  OnnxBuilder::attr(m.node("Concat", "shape2", {"lead", "k1", "rest"}, {"shape2"}), "axis", int64_t(0));
  m.node("Reshape", "reshape", {"x", "shape2"}, {"y"});
  m.output("y", {1, 6, 8});
  std::vector<float> x = iota(48);
  Values out = compiler::reference_outputs(save(m, "chain"), {{"x", x}});
  EXPECT_EQ(out.at("y"), x);
}

TEST(ImportInt64, FoldedIntegerOutputsAreExact) {
  // Outputs computed from Shape at import: ((6 - 13) / 2) * 2 = -3 * 2 = -6 (truncating Div;
  // floor division or float would give -8 or -7), and 6 * 2^40 - (6 * 2^40 - 5) = 5, whose
  // terms float32 cannot hold exactly. A Relu of x keeps the program non-empty.
  OnnxBuilder m(13);
  m.input("x", {1, 6});
  m.node("Relu", "relu", {"x"}, {"r"});
  m.node("Shape", "shape", {"x"}, {"s"});
  m.init_i64("idx", {1});
  m.node("Gather", "n", {"s", "idx"}, {"n"});  // [6]
  m.init_i64("thirteen", {13}), m.init_i64("two", {2}), m.init_i64("big", {int64_t(1) << 40});
  m.init_i64("big6m5", {6 * (int64_t(1) << 40) - 5});
  m.node("Sub", "d", {"n", "thirteen"}, {"d"});
  m.node("Div", "q", {"d", "two"}, {"q"});
  m.node("Mul", "p", {"q", "two"}, {"p"});
  m.node("Mul", "nb", {"n", "big"}, {"nb"});
  m.node("Sub", "five", {"nb", "big6m5"}, {"five"});
  m.output("r", {1, 6});
  m.output("p", {1}, onnx::TensorProto::INT64);
  m.output("five", {1}, onnx::TensorProto::INT64);
  auto model = save(m, "outputs");
  Values out = compiler::reference_outputs(model, {{"x", iota(6)}});
  EXPECT_EQ(out.at("p"), (std::vector<float>{-6}));
  EXPECT_EQ(out.at("five"), (std::vector<float>{5}));
  EXPECT_NO_THROW(compiler::compile_onnx(model, config::load_preset("tpu-v4-core"), {}));
}

TEST(ImportInt64, CastOfInt64Constants) {
  // Cast(int64 -> float) of [2^24 + 1, -3, 7] adds [16777216, -3, 7] (round to nearest);
  // Cast(int64 -> bool -> float) of [0, 5, INT64_MIN] multiplies by [0, 1, 1].
  OnnxBuilder m(13);
  m.input("x", {1, 3});
  m.init_i64("c", {(int64_t(1) << 24) + 1, -3, 7});
  m.init_i64("m", {0, 5, kMin});
  auto* cast = m.node("Cast", "cast", {"c"}, {"cf"});
  OnnxBuilder::attr(cast, "to", int64_t(onnx::TensorProto::FLOAT));
  OnnxBuilder::attr(m.node("Cast", "to_bool", {"m"}, {"mb"}), "to", int64_t(onnx::TensorProto::BOOL));
  OnnxBuilder::attr(m.node("Cast", "to_float", {"mb"}, {"mf"}), "to", int64_t(onnx::TensorProto::FLOAT));
  m.node("Add", "add", {"x", "cf"}, {"y"});
  m.node("Mul", "mask", {"y", "mf"}, {"z"});
  m.output("z", {1, 3});
  Values out = compiler::reference_outputs(save(m, "cast"), {{"x", {0.5f, 0.25f, -1.0f}}});
  EXPECT_EQ(out.at("z"), (std::vector<float>{0.0f, -2.75f, 6.0f}));
}

TEST(ImportInt64, IntegerOutputsOutsideInt32AreRefused) {
  // The program's integer outputs are int32: a folded value that does not fit is an error
  // naming the output, not a silently wrapped number.
  OnnxBuilder m(13);
  m.input("x", {1, 2});
  m.node("Relu", "relu", {"x"}, {"r"});
  m.init_i64("big", {int64_t(1) << 40});
  m.node("Identity", "id", {"big"}, {"b"});
  m.output("r", {1, 2});
  m.output("b", {1}, onnx::TensorProto::INT64);
  try {
    compiler::reference_outputs(save(m, "big"), {{"x", {1, 2}}});
    FAIL() << "an output of 2^40 was accepted";
  } catch (const compiler::CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("graph output 'b' holds 1099511627776"), std::string::npos) << e.what();
  }
}


// torch's exporter at opsets 6-8 wrote shapes as int64 Constant nodes, although ONNX's
// Constant took only floats until opset 9 (pytorch-converted test_PixelShuffle). onnxruntime
// loads such a model (it turns Constant nodes into initializers first), so the compiler must
// too; an int64 value where an operator's own type constraint forbids it is still refused.
TEST(ImportInt64, OldExportersInt64ConstantLoadsAsOnnxruntimeLoadsIt) {
  OnnxBuilder m(7);
  m.input("x", {2, 6});
  auto* c = m.node("Constant", "shape", {}, {"shape"});
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  a->mutable_t()->add_dims(2);
  for (int64_t v : {3, 4}) a->mutable_t()->add_int64_data(v);
  m.node("Reshape", "r", {"x", "shape"}, {"y"});
  m.output("y", {3, 4});
  auto model = save(m, "old_constant");
  std::vector<float> x = iota(12);
  EXPECT_EQ(compiler::reference_outputs(model, {{"x", x}}).at("y"), x);
  auto prog = compiler::compile_onnx(model, config::load_preset("tpu-v4-core"), {}).program;
  std::vector<int64_t> shape;
  for (const auto& t : prog.tensors)
    if (t.name == "y") shape = t.shape;
  EXPECT_EQ(shape, (std::vector<int64_t>{3, 4}));

  // The same int64 value as Relu's input: Relu at opset 7 takes floats only.
  OnnxBuilder bad(7);
  auto* k = bad.node("Constant", "k", {}, {"k"});
  *k->add_attribute() = *a;
  bad.node("Relu", "relu", {"k"}, {"y"});
  bad.output("y", {2});
  try {
    compiler::compile_onnx(save(bad, "old_constant_relu"), config::load_preset("tpu-v4-core"), {});
    ADD_FAILURE() << "an int64 Relu input was accepted";
  } catch (const std::exception& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("node name: relu"), std::string::npos) << what;
    EXPECT_NE(what.find("unsupported type: tensor(int64)"), std::string::npos) << what;
  }
}

}  // namespace
