// The expected values of compiler/tests/constant_ops_cases.h (written from the ONNX operator
// definitions; the constant folder is tested against them) are what onnxruntime computes: every
// case onnxruntime can run, as one node of a model per opset whose inputs are initializers,
// each output compared exactly.
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <unistd.h>

#include "constant_ops_cases.h"
#include "vtpu/numerics/float.h"
#include "vtpu/runtime/npy.h"
#include "vtpu/runtime/onnxruntime.h"

namespace {

namespace fs = std::filesystem;
using namespace vtpu;

// The element values of a .npy array onnxruntime wrote, as integers or as doubles.
struct Read {
  std::vector<int64_t> ints;
  std::vector<double> floats;
};
Read values_of(const runtime::NpyArray& a) {
  Read r;
  auto each = [&](auto tag, auto&& put) {
    using E = decltype(tag);
    for (size_t off = 0; off + sizeof(E) <= a.data.size(); off += sizeof(E)) {
      E x;
      std::memcpy(&x, a.data.data() + off, sizeof x);
      put(x);
    }
  };
  auto as_int = [&](auto x) { r.ints.push_back(int64_t(x)); };
  auto as_float = [&](auto x) { r.floats.push_back(double(x)); };
  const std::string& d = a.descr;
  if (d == "<i8" || d == "<u8") each(int64_t{}, as_int);
  else if (d == "<i4") each(int32_t{}, as_int);
  else if (d == "<u4") each(uint32_t{}, as_int);
  else if (d == "<i2") each(int16_t{}, as_int);
  else if (d == "<u2") each(uint16_t{}, as_int);
  else if (d == "|i1") each(int8_t{}, as_int);
  else if (d == "|u1" || d == "|b1") each(uint8_t{}, as_int);
  else if (d == "<f4") each(float{}, as_float);
  else if (d == "<f8") each(double{}, as_float);
  else if (d == "<f2") each(uint16_t{}, [&](uint16_t h) { r.floats.push_back(numerics::f32_from_bits(numerics::f16_to_f32_bits(h))); });
  else ADD_FAILURE() << "onnxruntime wrote an array of type " << d;
  return r;
}

TEST(OrtConstantOps, ExpectedValuesAreOnnxRuntimes) {
  auto cases = test::fold_cases();
  std::map<int, std::vector<size_t>> by_opset;
  for (size_t i = 0; i < cases.size(); ++i)
    if (cases[i].ort && cases[i].error.empty()) by_opset[cases[i].opset].push_back(i);
  fs::path dir = fs::temp_directory_path() / fmt::format("vtpu_ort_constant_ops_{}", ::getpid());
  fs::create_directories(dir);
  int checked = 0;
  for (const auto& [opset, which] : by_opset) {
    onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(opset);
    onnx::GraphProto* g = m.mutable_graph();
    g->set_name("constant_ops");
    for (size_t i : which) {
      const test::FoldCase& c = cases[i];
      std::string prefix = fmt::format("c{}_", i), out = fmt::format("c{}_out", i);
      *g->add_node() = test::node_of(c, prefix, out);
      for (size_t k = 0; k < c.inputs.size(); ++k)
        if (c.inputs[k]) *g->add_initializer() = test::tensor_of(*c.inputs[k], prefix + std::to_string(k));
      onnx::ValueInfoProto* o = g->add_output();
      o->set_name(out);
      o->mutable_type()->mutable_tensor_type()->set_elem_type(c.expected.type);
    }
    fs::path model = dir / fmt::format("opset{}.onnx", opset);
    std::ofstream(model, std::ios::binary) << m.SerializeAsString();
    runtime::OrtRun o = runtime::run_onnxruntime(model, {}, dir);
    ASSERT_TRUE(o.ok) << "opset " << opset << ": " << o.why_not;
    for (size_t i : which) {
      const test::FoldCase& c = cases[i];
      ASSERT_TRUE(o.outputs.count(fmt::format("c{}_out", i))) << c.what;
      const runtime::NpyArray& a = o.outputs.at(fmt::format("c{}_out", i));
      EXPECT_EQ(a.shape, c.expected.shape) << c.what;
      Read r = values_of(a);
      if (!c.expected.ints.empty() || r.floats.empty()) {
        EXPECT_EQ(r.ints, c.expected.ints) << c.what;
      } else {
        ASSERT_EQ(r.floats.size(), c.expected.floats.size()) << c.what;
        for (size_t k = 0; k < r.floats.size(); ++k)
          EXPECT_EQ(r.floats[k], double(float(c.expected.floats[k]))) << c.what << " element " << k;
      }
      ++checked;
    }
  }
  std::printf("%d cases checked against onnxruntime\n", checked);
  EXPECT_GT(checked, 60);
  fs::remove_all(dir);
}

}  // namespace
