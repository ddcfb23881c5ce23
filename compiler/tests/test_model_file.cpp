// compiler/import/model_file.h: large initializers' bytes left in the mapped file, the rest
// parsed by protobuf; the same values as protobuf's own parse, and protobuf's answer whenever
// the encoding is one the cutting does not follow.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "import/constant.h"
#include "import/model_file.h"
#include "validate.h"
#include "vtpu/compiler/compiler.h"
#include "vtpu/support/error.h"

namespace {

using namespace vtpu;
using compiler::onnx_import::ModelFile;

constexpr int64_t kBig = 40000;  // floats: 160,000 bytes, kept in the file

std::string raw_of(const std::vector<float>& v) { return {reinterpret_cast<const char*>(v.data()), v.size() * 4}; }

// y = Add(x, big) with a small raw initializer and a float_data one beside it (unused by
// nodes: they only have to read back), and a subgraph-free graph.
onnx::ModelProto model(const std::vector<float>& big) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto add_init = [&](const std::string& name, std::vector<int64_t> dims) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    return t;
  };
  add_init("big", {kBig})->set_raw_data(raw_of(big));
  add_init("small", {4})->set_raw_data(raw_of({1, 2, 3, 4}));
  auto* typed = add_init("typed", {2});
  typed->add_float_data(5), typed->add_float_data(6);
  auto* in = g->add_input();
  in->set_name("x");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  in->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(kBig);
  auto* n = g->add_node();
  n->set_op_type("Add"), n->add_input("x"), n->add_input("big"), n->add_output("y"), n->set_name("add");
  auto* out = g->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return m;
}

std::vector<float> ramp() {
  std::vector<float> v(kBig);
  for (int64_t i = 0; i < kBig; ++i) v[size_t(i)] = float(i) * 0.25f - 7.0f;
  return v;
}

struct TempFile {
  std::filesystem::path path;
  explicit TempFile(const std::string& bytes)
      : path(std::filesystem::temp_directory_path() / ("vtpu_model_file_" + std::to_string(::getpid()) + "_" +
                                                       std::to_string(reinterpret_cast<uintptr_t>(this)) + ".onnx")) {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  ~TempFile() { std::filesystem::remove(path); }
};

TEST(ModelFile, LargeInitializersStayInTheFileAndReadBackTheSame) {
  onnx::ModelProto m = model(ramp());
  TempFile f(m.SerializeAsString());
  ModelFile file;
  ASSERT_TRUE(file.read(f.path));
  const auto& g = file.proto().graph();
  ASSERT_EQ(g.initializer_size(), 3);
  // Only the large one is outside; its field is there and empty.
  EXPECT_EQ(file.outside().size(), 1u);
  EXPECT_TRUE(g.initializer(0).has_raw_data());
  EXPECT_TRUE(g.initializer(0).raw_data().empty());
  EXPECT_EQ(file.raw_data(g.initializer(0)), raw_of(ramp()));
  EXPECT_EQ(file.raw_data(g.initializer(1)), raw_of({1, 2, 3, 4}));
  // Everything else is what protobuf parses from the file.
  onnx::ModelProto expect = m;
  expect.mutable_graph()->mutable_initializer(0)->set_raw_data("");
  EXPECT_EQ(file.proto().SerializeAsString(), expect.SerializeAsString());
  // The values, as the importer reads them.
  auto c = compiler::onnx_import::read_tensor(g.initializer(0), f.path.parent_path(), file.raw_data(g.initializer(0)));
  EXPECT_EQ(c.data, ramp());
  EXPECT_EQ(compiler::onnx_import::read_tensor(g.initializer(2), "", file.raw_data(g.initializer(2))).data,
            (std::vector<float>{5, 6}));
  compiler::validate_onnx(file.proto(), f.path, 0, {}, &file.outside());  // valid: no throw
}

// A length-delimited field as the wire format writes it.
std::string field(uint32_t number, const std::string& payload) {
  std::string out;
  auto varint = [&](uint64_t v) {
    for (; v >= 0x80; v >>= 7) out.push_back(char((v & 0x7f) | 0x80));
    out.push_back(char(v));
  };
  varint((uint64_t(number) << 3) | 2);
  varint(payload.size());
  return out + payload;
}

TEST(ModelFile, AnEncodingItDoesNotFollowIsLeftToProtobuf) {
  // The first initializer with raw_data twice (protobuf keeps the last one): parsed whole.
  onnx::ModelProto m = model(ramp());
  std::vector<float> other(kBig, 3.0f);
  std::string dup = m.graph().initializer(0).SerializeAsString() + field(9, raw_of(other));
  onnx::ModelProto rest = m, head = m;
  rest.mutable_graph()->mutable_initializer()->DeleteSubrange(0, 1);
  head.clear_graph();
  std::string bytes = head.SerializeAsString() + field(7, field(5, dup) + rest.graph().SerializeAsString());
  TempFile f(bytes);
  ModelFile file;
  ASSERT_TRUE(file.read(f.path));
  EXPECT_TRUE(file.outside().empty());
  onnx::ModelProto plain;
  ASSERT_TRUE(plain.ParseFromString(bytes));
  EXPECT_EQ(file.proto().SerializeAsString(), plain.SerializeAsString());
  EXPECT_EQ(file.raw_data(file.proto().graph().initializer(0)), raw_of(other));
}

TEST(ModelFile, TwoGraphFieldsMergeAsInProtobuf) {
  // A second graph field appends its initializers: followed, and the bytes line up.
  onnx::ModelProto m = model(ramp());
  std::vector<float> other(kBig, 3.0f);
  onnx::ModelProto tail;
  auto* t = tail.mutable_graph()->add_initializer();
  *t = m.graph().initializer(0);
  t->set_name("big2");
  t->set_raw_data(raw_of(other));
  std::string bytes = m.SerializeAsString() + tail.SerializeAsString();
  TempFile f(bytes);
  ModelFile file;
  ASSERT_TRUE(file.read(f.path));
  ASSERT_EQ(file.proto().graph().initializer_size(), 4);
  EXPECT_EQ(file.outside().size(), 2u);
  EXPECT_EQ(file.raw_data(file.proto().graph().initializer(0)), raw_of(ramp()));
  EXPECT_EQ(file.raw_data(file.proto().graph().initializer(3)), raw_of(other));
  EXPECT_EQ(file.proto().graph().initializer(3).name(), "big2");
}

TEST(ModelFile, TruncatedFilesFailAsProtobufSays) {
  std::string bytes = model(ramp()).SerializeAsString();
  for (size_t cut : {size_t(3), bytes.size() / 2, bytes.size() - 1}) {
    TempFile f(bytes.substr(0, cut));
    ModelFile file;
    onnx::ModelProto plain;
    EXPECT_EQ(file.read(f.path), plain.ParseFromString(bytes.substr(0, cut))) << "cut at " << cut;
  }
  ModelFile none;
  EXPECT_THROW(none.read("/nonexistent/dir/model.onnx"), UserError);
}

TEST(ModelFile, TheValidatorChecksTheBytesLeftOutside) {
  onnx::ModelProto m = model(ramp());
  std::string raw = raw_of(ramp());
  raw.resize(raw.size() - 4);  // one float short
  m.mutable_graph()->mutable_initializer(0)->set_raw_data(raw);
  TempFile f(m.SerializeAsString());
  ModelFile file;
  ASSERT_TRUE(file.read(f.path));
  ASSERT_EQ(file.outside().size(), 1u);
  try {
    compiler::validate_onnx(file.proto(), f.path, 0, {}, &file.outside());
    FAIL() << "a short raw_data passed";
  } catch (const compiler::CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("raw_data holds 159996 bytes"), std::string::npos) << e.what();
  }
}

}  // namespace
