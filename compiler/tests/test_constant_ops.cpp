// The importer's constant folder (compiler/import/constant_ops.h) against the ONNX operator
// definitions: every folded operator on int64 edge values (constant_ops_cases.h, whose
// expected values tests/ort/test_ort_constant_ops.cpp checks against onnxruntime), and initializers
// of every integer type read exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "constant_ops_cases.h"
#include "import/constant_ops.h"

namespace {

using namespace vtpu;
using compiler::onnx_import::Constant;
using compiler::onnx_import::ConstantError;
using compiler::onnx_import::fold_node;
using compiler::onnx_import::read_tensor;

class ConstantOps : public ::testing::TestWithParam<test::FoldCase> {};

TEST_P(ConstantOps, FoldsAsTheDefinitionSays) {
  const test::FoldCase& c = GetParam();
  onnx::NodeProto n = test::node_of(c, "x", "y");
  std::vector<Constant> values;
  values.reserve(c.inputs.size());
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (c.inputs[i]) values.push_back(read_tensor(test::tensor_of(*c.inputs[i], n.input(int(i))), ""));
  std::vector<const Constant*> in;
  for (size_t i = 0, k = 0; i < c.inputs.size(); ++i) in.push_back(c.inputs[i] ? &values[k++] : nullptr);
  if (!c.error.empty()) {
    try {
      fold_node(n, in, "");
      FAIL() << c.what << ": folded, the definition refuses it (" << c.error << ")";
    } catch (const ConstantError& e) {
      EXPECT_NE(std::string(e.what()).find(c.error), std::string::npos) << c.what << ": " << e.what();
    }
    return;
  }
  std::optional<Constant> r = fold_node(n, in, "");
  ASSERT_TRUE(r.has_value()) << c.what << ": not folded";
  EXPECT_EQ(r->shape, c.expected.shape) << c.what;
  ASSERT_EQ(r->data.size(), size_t(compiler::onnx_import::numel(c.expected.shape))) << c.what;
  if (compiler::onnx_import::is_integer_elem_type(c.expected.type)) {
    ASSERT_TRUE(r->integer) << c.what << ": an integer result became floating";
    EXPECT_EQ(r->ints, c.expected.ints) << c.what;
    for (size_t i = 0; i < r->ints.size(); ++i) EXPECT_EQ(r->data[i], float(r->ints[i])) << c.what << " element " << i;
  } else {
    EXPECT_FALSE(r->integer) << c.what << ": a floating result became integer";
    for (size_t i = 0; i < r->data.size(); ++i) {
      EXPECT_EQ(r->data[i], float(c.expected.floats[i])) << c.what << " element " << i;
      EXPECT_EQ(std::signbit(r->data[i]), std::signbit(c.expected.floats[i])) << c.what << " element " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Definitions, ConstantOps, ::testing::ValuesIn(test::fold_cases()),
                         [](const auto& info) { return test::case_name(info.param, info.index); });

// Every integer type in each of the forms ONNX stores it: raw little-endian bytes, or the
// typed fields (int64_data; uint64_data for uint32/uint64; int32_data for the narrower ones).
TEST(ConstantOps, InitializersOfEveryIntegerTypeAreExact) {
  using T = onnx::TensorProto;
  const int64_t MAX = std::numeric_limits<int64_t>::max(), MIN = std::numeric_limits<int64_t>::min();
  struct Form {
    int type;
    std::vector<int64_t> values;
  };
  for (const Form& f : {Form{T::INT64, {MAX, MIN, (int64_t(1) << 53) + 1}}, Form{T::INT32, {INT32_MAX, INT32_MIN}},
                        Form{T::INT16, {-32768, 32767}}, Form{T::UINT16, {65535, 0}}, Form{T::INT8, {-128, 127}},
                        Form{T::UINT8, {255, 0}}, Form{T::BOOL, {1, 0}}, Form{T::UINT32, {4294967295, 1}},
                        Form{T::UINT64, {MAX, 7}}}) {
    for (bool raw : {true, false}) {
      T t = test::tensor_of(test::typed(f.type, {int64_t(f.values.size())}, f.values), "t", raw);
      Constant c = read_tensor(t, "");
      EXPECT_TRUE(c.integer) << T::DataType_Name(T::DataType(f.type));
      EXPECT_EQ(c.ints, f.values) << T::DataType_Name(T::DataType(f.type)) << (raw ? " raw" : " typed");
    }
  }
  // A typed field with fewer values than the shape says is refused, not padded.
  T t = test::tensor_of(test::i64({3}, {1, 2, 3}), "short", false);
  t.mutable_int64_data()->RemoveLast();
  EXPECT_THROW(read_tensor(t, ""), ConstantError);
}

}  // namespace
