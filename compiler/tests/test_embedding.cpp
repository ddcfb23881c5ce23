// Embedding lookups of run-time ids: models built in C++, compiled, run on the simulator and compared with a plain
// fp32 forward pass written from the ONNX operator definitions (e2e_fixture.h).
#include <cmath>
#include <limits>

#include "e2e_fixture.h"

namespace vtpu::compiler {
namespace {

// An embedding lookup: Gather(table, ids) with int64 ids given at run time, among them
// negative ids (counting from the end) and ids outside [-V, V) (zero rows). bf16 must select
// the table's rows exactly; INT8 its per-channel codes (within the quantization).
TEST_P(CompileE2E, EmbeddingLookupOfRuntimeIdsSelectsTableRows) {
  OnnxBuilder m;
  const int64_t V = 300, D = 20;
  m.input("ids", {2, 6}, onnx::TensorProto::INT64);
  const Vec& table = m.init("table", {V, D}, 1.0f);
  m.node("Gather", "embed", {"table", "ids"}, {"e"});
  m.node("Relu", "relu", {"e"}, {"y"});  // an ordinary layer reads the embeddings
  m.output("y", {2, 6, D});
  auto path = m.save("vtpu_embedding_" + id() + ".onnx");
  Vec ids{0, 1, 299, 137, -1, -300, 300, -301, 42, 255, 256, 7};
  Vec got = compile_and_run(path, {{"ids", ids}});
  ASSERT_EQ(got.size(), ids.size() * D);
  double mx = 0;
  for (float t : table) mx = std::max(mx, double(std::fabs(t)));
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t id = int64_t(ids[i]) < 0 ? int64_t(ids[i]) + V : int64_t(ids[i]);
    for (int64_t d = 0; d < D; ++d) {
      float want = id >= 0 && id < V ? std::max(0.0f, table[size_t(id * D + d)]) : 0.0f;
      float g = got[i * D + size_t(d)];
      if (int8()) EXPECT_NEAR(g, want, 0.02 * mx) << "id " << ids[i] << " column " << d;
      else EXPECT_EQ(g, numerics::f32_from_bits(uint32_t(numerics::f32_to_bf16(numerics::f32_bits(want))) << 16))
          << "id " << ids[i] << " column " << d;
    }
  }
}

// Many ids and a wider table: on the tiny presets the ids go in several chunks (the one-hot
// rows fill the unified buffer) and the output blocks in several passes (they do not all fit
// the accumulators at once). Selection must stay exact (bf16).
TEST_P(CompileE2E, EmbeddingLookupOfManyIdsInChunksAndPasses) {
  OnnxBuilder m;
  const int64_t V = 300, D = 80, S = 200;
  m.input("ids", {S}, onnx::TensorProto::INT32);
  const Vec& table = m.init("table", {V, D}, 1.0f);
  m.node("Gather", "embed", {"table", "ids"}, {"y"});
  m.output("y", {S, D});
  auto path = m.save("vtpu_embedding_many_" + id() + ".onnx");
  std::mt19937 rng(3);
  Vec ids(static_cast<size_t>(S));
  for (auto& x : ids) x = float(int(rng() % (2 * V + 10)) - V - 5);
  Vec got = compile_and_run(path, {{"ids", ids}});
  ASSERT_EQ(got.size(), size_t(S * D));
  double mx = 0;
  for (float t : table) mx = std::max(mx, double(std::fabs(t)));
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t id = int64_t(ids[i]) < 0 ? int64_t(ids[i]) + V : int64_t(ids[i]);
    for (int64_t d = 0; d < D; ++d) {
      float want = id >= 0 && id < V ? table[size_t(id * D + d)] : 0.0f;
      float g = got[i * D + size_t(d)];
      if (int8()) EXPECT_NEAR(g, want, 0.01 * mx) << "id " << ids[i] << " column " << d;
      else EXPECT_EQ(g, numerics::f32_from_bits(uint32_t(numerics::f32_to_bf16(numerics::f32_bits(want))) << 16))
          << "id " << ids[i] << " column " << d;
    }
  }
}

// A table with NaN, +Inf and -Inf entries: a Gather gives those entries to exactly the ids
// that select their rows and every other output stays the table's value (a one-hot x table
// matmul alone would make whole columns NaN: 0 x NaN). INT8 cannot hold them: a clear error.
TEST_P(CompileE2E, EmbeddingLookupOfANonFiniteTableGivesGathersAnswer) {
  OnnxBuilder m;
  const int64_t V = 40, D = 12;
  m.input("ids", {8}, onnx::TensorProto::INT64);
  Vec table = uniform_values(size_t(V * D), 5, 100.0f);
  const float inf = std::numeric_limits<float>::infinity();
  table[3 * D + 1] = std::nanf(""), table[3 * D + 5] = inf, table[17 * D + 11] = -inf, table[39 * D + 0] = std::nanf("");
  m.init("table", {V, D}, 0, table);
  m.node("Gather", "embed", {"table", "ids"}, {"y"});
  m.output("y", {8, D});
  auto path = m.save("vtpu_embedding_nonfinite_" + id() + ".onnx");
  Vec ids{3, 0, 17, -1, 3, 25, -23, 41};
  if (int8()) {
    try {
      CompileOptions opt = options();
      opt.calibration = {{{"ids", ids}}};
      compile_onnx(path, config::load_preset(preset()), opt);
      ADD_FAILURE() << "an INT8 table with NaN compiled";
    } catch (const CompileError& e) {
      EXPECT_NE(std::string(e.what()).find("INT8 cannot represent"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("node 'embed'"), std::string::npos) << e.what();
    }
    return;
  }
  Vec got = compile_and_run(path, {{"ids", ids}});
  ASSERT_EQ(got.size(), ids.size() * D);
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t id = int64_t(ids[i]) < 0 ? int64_t(ids[i]) + V : int64_t(ids[i]);
    for (int64_t d = 0; d < D; ++d) {
      float want = id >= 0 && id < V ? table[size_t(id * D + d)] : 0.0f, g = got[i * D + size_t(d)];
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(g)) << "id " << ids[i] << " column " << d << ": " << g;
      } else {
        EXPECT_EQ(g, numerics::f32_from_bits(uint32_t(numerics::f32_to_bf16(numerics::f32_bits(want))) << 16))
            << "id " << ids[i] << " column " << d;
      }
    }
  }
}

}  // namespace
}  // namespace vtpu::compiler
