// A batch larger than the unified buffer runs in chunks (compiler/pipeline/batch_chunks.cpp,
// codegen/batch_chunks.cpp): the program of the whole batch gives, chunk by chunk, the same
// bytes as the program of one chunk compiled alone with the same INT8 scales, and takes about
// as many cycles as that program once per chunk. Models whose samples mix keep the error.
#include <unistd.h>

#include "e2e_fixture.h"
#include "vtpu/models/zoo.h"

namespace vtpu::compiler {
namespace {

// The chunk count the program loops over ("li r31, K" before the loop's label), 1 for none.
int64_t chunks_of(const std::string& assembly) {
  size_t at = assembly.find("\nbatch_chunk:");
  if (at == std::string::npos) return 1;
  size_t line = assembly.rfind("li r31, ", at);
  return line == std::string::npos ? -1 : std::stoll(assembly.substr(line + 8));
}

// compile_onnx's options for `precision` at batch `batch`.
CompileOptions at_batch(Precision precision, int64_t batch) {
  CompileOptions o;
  o.precision = precision;
  o.batch = batch;
  return o;
}

// Compiles `path` for `big` (the whole batch at once) and `small` (in chunks, with the whole
// batch's INT8 scales) and expects the same output bytes for input values `v`.
void expect_chunks_give_the_whole_batchs_bytes(const std::string& path, const config::Config& big, const config::Config& small,
                                               Precision precision, const Vec& v) {
  CompileResult whole = compile_onnx(path, big, at_batch(precision, 0));
  ASSERT_EQ(chunks_of(whole.assembly), 1) << "the batch does not fit " << big.core.unified_buffer.bytes << " bytes whole";
  CompileOptions o = at_batch(precision, 0);
  o.calibration_scales = whole.calibration_scales;
  CompileResult parts = compile_onnx(path, small, o);
  EXPECT_GT(chunks_of(parts.assembly), 1);
  const isa::TensorInfo& in = only(whole.program, isa::TensorRole::Input);
  const isa::TensorInfo& out = only(whole.program, isa::TensorRole::Output);
  SimRun a = run_program(big, whole.program, {{in.name, encode(whole.program, in.name, v)}}, out.name);
  SimRun b = run_program(small, parts.program, {{in.name, encode(parts.program, in.name, v)}}, out.name);
  ASSERT_TRUE(a.error.empty()) << a.error;
  ASSERT_TRUE(b.error.empty()) << b.error;
  EXPECT_EQ(a.output, b.output);
}

TEST(BatchChunks, ABatchLargerThanTheUnifiedBufferRunsChunkByChunkAsOneChunkAlone) {
  auto lenet = models::materialize("lenet5", models::default_dir());
  config::Config cfg = config::load_preset("tiny-16x16");  // 256 KiB: LeNet-5 at batch 16 does not fit
  const int64_t batch = 16;
  for (Precision precision : {Precision::Int8, Precision::Bf16}) {
    SCOPED_TRACE(precision == Precision::Int8 ? "int8" : "bf16");
    CompileOptions o = at_batch(precision, batch);
    CompileResult whole = compile_onnx(lenet, cfg, o);
    int64_t k = chunks_of(whole.assembly);
    ASSERT_GT(k, 1) << "the batch fits whole: the test needs a batch that does not";
    ASSERT_EQ(batch % k, 0);
    const int64_t n = batch / k;
    const isa::TensorInfo& x = only(whole.program, isa::TensorRole::Input);
    const isa::TensorInfo& y = only(whole.program, isa::TensorRole::Output);
    EXPECT_EQ(x.shape[0], batch);
    EXPECT_EQ(y.shape[0], batch);

    // One chunk compiled alone, with the whole batch's INT8 scales: it fits without chunks.
    CompileOptions oc = o;
    oc.batch = n;
    oc.calibration_scales = whole.calibration_scales;
    CompileResult part = compile_onnx(lenet, cfg, oc);
    EXPECT_EQ(chunks_of(part.assembly), 1);
    const isa::TensorInfo& xp = only(part.program, isa::TensorRole::Input);
    EXPECT_EQ(xp.quant_scale, x.quant_scale);

    Vec in = uniform_values(size_t(x.bytes() / isa::dtype_bytes(x.dtype)), 7, 1000.0f);
    SimRun all = run_program(cfg, whole.program, {{x.name, encode(whole.program, x.name, in)}}, y.name);
    ASSERT_TRUE(all.error.empty()) << all.error;
    ASSERT_EQ(all.output.size(), y.bytes());
    size_t in_per = in.size() / size_t(k), out_per = all.output.size() / size_t(k);
    uint64_t parts_cycles = 0;
    for (int64_t c = 0; c < k; ++c) {
      Vec slice(in.begin() + long(size_t(c) * in_per), in.begin() + long(size_t(c + 1) * in_per));
      SimRun one = run_program(cfg, part.program, {{xp.name, encode(part.program, xp.name, slice)}}, y.name);
      ASSERT_TRUE(one.error.empty()) << one.error;
      EXPECT_EQ(one.output, all.output.substr(size_t(c) * out_per, out_per)) << "chunk " << c << " of " << k;
      parts_cycles += one.cycles;
    }
    // The same code per chunk, plus a bundle or two of loop per chunk; the classifier's
    // layers once for the whole batch (the next test) make it no slower, and faster.
    EXPECT_LE(all.cycles, parts_cycles * 105 / 100);
  }
}

TEST(BatchChunks, AClassifiersLastLayersRunOnceAtTheWholeBatchAfterTheChunks) {
  // LeNet-5 at batch 16 on tiny-16x16 runs its convolutions in chunks; its fully connected
  // layers and softmax (one row per sample) run once after the chunk loop at batch 16,
  // reading the flattened features the chunks stored in HBM: their weights are loaded once,
  // not once per chunk, so the program is faster than the chunk's program run per chunk.
  auto lenet = models::materialize("lenet5", models::default_dir());
  config::Config cfg = config::load_preset("tiny-16x16");
  const int64_t batch = 16;
  for (Precision precision : {Precision::Int8, Precision::Bf16}) {
    SCOPED_TRACE(precision == Precision::Int8 ? "int8" : "bf16");
    CompileOptions o = at_batch(precision, batch);
    CompileResult whole = compile_onnx(lenet, cfg, o);
    const std::string& a = whole.assembly;
    int64_t k = chunks_of(a);
    ASSERT_GT(k, 1);
    size_t loop = a.find("loop r31, batch_chunk");
    ASSERT_NE(loop, std::string::npos);
    for (const char* layer : {".tag \"fc1\"", ".tag \"fc2\"", ".tag \"fc3\"", ".tag \"softmax\""}) {
      size_t at = a.find(layer);
      ASSERT_NE(at, std::string::npos) << layer;
      EXPECT_GT(at, loop) << layer << " runs inside the chunk loop";
      EXPECT_EQ(a.find(layer, at + 1), std::string::npos) << layer << " is generated twice";
    }
    EXPECT_LT(a.find(".tag \"conv2\""), loop);
    // The features crossing to the tail are no program tensor: the model's input and output only.
    EXPECT_EQ(whole.program.tensors.size(), 2u);
    // Against the program of one chunk, run once per chunk (same scales): the same bytes, in
    // fewer cycles.
    CompileOptions oc = o;
    oc.batch = batch / k;
    oc.calibration_scales = whole.calibration_scales;
    CompileResult part = compile_onnx(lenet, cfg, oc);
    const isa::TensorInfo& x = only(whole.program, isa::TensorRole::Input);
    const isa::TensorInfo& y = only(whole.program, isa::TensorRole::Output);
    const isa::TensorInfo& xp = only(part.program, isa::TensorRole::Input);
    Vec in = uniform_values(size_t(x.bytes() / isa::dtype_bytes(x.dtype)), 11, 1000.0f);
    SimRun all = run_program(cfg, whole.program, {{x.name, encode(whole.program, x.name, in)}}, y.name);
    ASSERT_TRUE(all.error.empty()) << all.error;
    std::string parts;
    uint64_t parts_cycles = 0;
    size_t in_per = in.size() / size_t(k);
    for (int64_t c = 0; c < k; ++c) {
      Vec slice(in.begin() + long(size_t(c) * in_per), in.begin() + long(size_t(c + 1) * in_per));
      SimRun one = run_program(cfg, part.program, {{xp.name, encode(part.program, xp.name, slice)}}, y.name);
      ASSERT_TRUE(one.error.empty()) << one.error;
      parts += one.output;
      parts_cycles += one.cycles;
    }
    EXPECT_EQ(all.output, parts);
    EXPECT_LT(all.cycles, parts_cycles);
    // The bounds: the chunks' layers scaled to the batch, the tail's at the batch already;
    // useful MACs of every layer are the whole batch's either way.
    CompileOptions ob = o;
    config::Config big = cfg;
    big.core.unified_buffer.bytes = 16 << 20;
    CompileResult fits = compile_onnx(lenet, big, ob);
    ASSERT_EQ(chunks_of(fits.assembly), 1);
    ASSERT_EQ(fits.bounds.size(), whole.bounds.size());
    for (size_t i = 0; i < fits.bounds.size(); ++i) {
      EXPECT_EQ(whole.bounds[i].layer, fits.bounds[i].layer);
      EXPECT_EQ(whole.bounds[i].macs, fits.bounds[i].macs) << whole.bounds[i].layer;
      EXPECT_EQ(whole.bounds[i].shape, fits.bounds[i].shape) << whole.bounds[i].layer;
    }
  }
}

TEST(BatchChunks, APrimeBatchRunsInFewerChunksTheLastPadded) {
  // LeNet-5 at batch 17 on tiny-16x16: no divisor but 1 fits, so chunks of one took 17 passes;
  // chunks of 9 take 2, the second with a row of padding. The outputs are those of the whole
  // batch on the same chip with a unified buffer that holds it, and so are the useful MACs.
  auto lenet = models::materialize("lenet5", models::default_dir());
  config::Config cfg = config::load_preset("tiny-16x16"), big = cfg;
  big.name = "tiny-16x16-4MiB";
  big.core.unified_buffer.bytes = 4 << 20;
  const int64_t batch = 17;
  for (Precision precision : {Precision::Int8, Precision::Bf16}) {
    SCOPED_TRACE(precision == Precision::Int8 ? "int8" : "bf16");
    CompileOptions o;
    o.precision = precision;
    o.batch = batch;
    CompileResult chunked = compile_onnx(lenet, cfg, o);
    CompileResult whole = compile_onnx(lenet, big, o);
    EXPECT_EQ(chunks_of(whole.assembly), 1);
    int64_t k = chunks_of(chunked.assembly);
    EXPECT_GT(k, 1);
    EXPECT_LT(k, batch / 4) << "chunks of one or two";
    const isa::TensorInfo& x = only(chunked.program, isa::TensorRole::Input);
    const isa::TensorInfo& y = only(chunked.program, isa::TensorRole::Output);
    EXPECT_EQ(x.shape[0], batch);
    EXPECT_EQ(y.shape[0], batch);
    EXPECT_EQ(x.quant_scale, only(whole.program, isa::TensorRole::Input).quant_scale);
    uint64_t macs_chunked = 0, macs_whole = 0;
    for (const auto& b : chunked.bounds) macs_chunked += b.macs;
    for (const auto& b : whole.bounds) macs_whole += b.macs;
    EXPECT_EQ(macs_chunked, macs_whole);
    Vec in = uniform_values(size_t(x.bytes() / isa::dtype_bytes(x.dtype)), 9, 1000.0f);
    SimRun a = run_program(cfg, chunked.program, {{x.name, encode(chunked.program, x.name, in)}}, y.name);
    SimRun b = run_program(big, whole.program, {{x.name, encode(whole.program, x.name, in)}}, y.name);
    ASSERT_TRUE(a.error.empty()) << a.error;
    ASSERT_TRUE(b.error.empty()) << b.error;
    EXPECT_EQ(a.output, b.output);
  }
}

TEST(BatchChunks, AnInt8InputLargerThanTheUnifiedBufferRunsInChunksAsInBf16) {
  // A 2048 x 2048 GEMM's input alone (4 MiB in INT8) is 16 times tiny-16x16's buffer. INT8
  // checks its inputs fit before calibrating; one row at a time does, so it runs in chunks
  // of rows as bf16 does (before: refused, "input 'a' needs 4194304 bytes").
  auto gemm = models::materialize("gemm2048", models::default_dir());
  config::Config cfg = config::load_preset("tiny-16x16");
  for (Precision precision : {Precision::Int8, Precision::Bf16}) {
    SCOPED_TRACE(precision == Precision::Int8 ? "int8" : "bf16");
    CompileResult r = compile_onnx(gemm, cfg, at_batch(precision, 0));
    EXPECT_GT(chunks_of(r.assembly), 1);
    EXPECT_EQ(only(r.program, isa::TensorRole::Input).shape[0], 2048);
  }
  // A sample that does not fit still fails before calibrating, with the input named.
  OnnxBuilder m;
  m.input("x", {4, 300000});
  m.node("Relu", "relu", {"x"}, {"y"});
  m.output("y", {4, 300000});
  auto path = m.save("vtpu_chunks_wide_" + std::to_string(::getpid()) + ".onnx");
  try {
    compile_onnx(path, cfg, at_batch(Precision::Int8, 0));
    FAIL() << "a 300,000-byte sample fit a 256 KiB unified buffer";
  } catch (const DoesNotFitError& e) {
    EXPECT_NE(std::string(e.what()).find("input 'x'"), std::string::npos) << e.what();
  }
}

TEST(BatchChunks, ARecurrentModelsTimeMajorRowsKeepItsSamplesApart) {
  // Two stacked batch-first LSTMs: the importer makes each layer's values time-major ([T * B,
  // H] rows, a step's samples together), which transpose, slice and concat along the first
  // dimension; no op mixes two samples, so a batch the unified buffer does not hold runs in
  // chunks (pipeline/sample_layout.cpp), its output bytes those of the whole batch run on a
  // buffer that holds it. Before: refused ("a transpose moves the batch dimension").
  const int64_t B = 32, T = 8, H = 128;
  OnnxBuilder m(17);  // LSTM's layout attribute: opset 14
  m.input("x", {B, T, H});
  std::string x = "x";
  m.init_i64("axes", {2});
  for (int l = 0; l < 2; ++l) {
    std::string n = "lstm" + std::to_string(l);
    m.init(n + ".W", {1, 4 * H, H}, 0.15f);
    m.init(n + ".R", {1, 4 * H, H}, 0.15f);
    m.init(n + ".B", {1, 8 * H}, 0.1f);
    auto* lstm = m.node("LSTM", n, {x, n + ".W", n + ".R", n + ".B"}, {n + ".y"});
    OnnxBuilder::attr(lstm, "hidden_size", H);
    OnnxBuilder::attr(lstm, "layout", int64_t(1));
    m.node("Squeeze", n + ".sq", {n + ".y", "axes"}, {n + ".out"});
    x = n + ".out";
  }
  m.output(x, {B, T, H});
  auto path = m.save("vtpu_chunks_lstm_" + std::to_string(::getpid()) + ".onnx");
  config::Config big = config::load_preset("tiny-16x16"), small = big;
  big.core.unified_buffer.bytes = 4 << 20;
  small.core.unified_buffer.bytes = 64 * 1024;
  for (Precision precision : {Precision::Int8, Precision::Bf16}) {
    SCOPED_TRACE(precision == Precision::Int8 ? "int8" : "bf16");
    expect_chunks_give_the_whole_batchs_bytes(path, big, small, precision, uniform_values(size_t(B * T * H), 11, 1000.0f));
  }
}

TEST(BatchChunks, OneRowSamplesOnASmallArrayRunInCompactLaneBlocks) {
  // Two 1024-wide layers on tiny-8x8: a sample is one row of 128 lane blocks of 16 bytes
  // (bf16), each padded to 64 bytes in the usual layout, so one sample at a time does not
  // fit a 12 KiB buffer; with blocks on the buffer's 16-byte rows it does (the compiler's
  // last attempt, CompileOptions::compact_ub_blocks). Before: refused. The chunks' output
  // bytes are the whole batch's on a buffer that holds it in the usual layout.
  const int64_t B = 8, F = 1024;
  OnnxBuilder m;
  m.input("x", {B, F});
  m.init("w1", {F, F}, 0.05f);
  m.init("w2", {F, F}, 0.05f);
  m.node("MatMul", "fc1", {"x", "w1"}, {"h"});
  m.node("Relu", "relu", {"h"}, {"r"});
  m.node("MatMul", "fc2", {"r", "w2"}, {"y"});
  m.output("y", {B, F});
  auto path = m.save("vtpu_chunks_compact_" + std::to_string(::getpid()) + ".onnx");
  config::Config big = config::load_preset("tiny-8x8"), small = big;
  big.core.unified_buffer.bytes = 4 << 20;
  small.core.unified_buffer.bytes = 12 * 1024;
  ASSERT_LT(small.core.unified_buffer.row_bytes, 64u);
  for (Precision precision : {Precision::Int8, Precision::Bf16}) {
    SCOPED_TRACE(precision == Precision::Int8 ? "int8" : "bf16");
    expect_chunks_give_the_whole_batchs_bytes(path, big, small, precision, uniform_values(size_t(B * F), 5, 1000.0f));
  }
}

TEST(BatchChunks, SamplesThatMixKeepTheWholeBatchsError) {
  // A concat along the batch: each chunk's output would not be a slice of the whole's.
  // And a reshape of [8, 4, 4096] to [4, 8, 4096] transposed back: it looks like a
  // recurrent layer's time-major rows (sample_layout.cpp), but row 1 of the reshape holds
  // halves of samples 2 and 3, so the transpose's sample 1 is made of two samples.
  config::Config cfg = config::load_preset("tiny-16x16");
  for (bool concat : {true, false}) {
    SCOPED_TRACE(concat ? "concat" : "reshape");
    OnnxBuilder m;
    if (concat) {
      m.input("x", {8, 16384});
      OnnxBuilder::attr(m.node("Concat", "cat", {"x", "x"}, {"y"}), "axis", int64_t(0));
      m.output("y", {16, 16384});
    } else {
      m.input("x", {8, 4, 4096});
      m.init_i64("shape", {4, -1, 4096});  // valid at any batch, so chunks would compile
      m.node("Reshape", "reshape", {"x", "shape"}, {"r"});
      OnnxBuilder::attr(m.node("Transpose", "transpose", {"r"}, {"y"}), "perm", std::vector<int64_t>{1, 0, 2});
      m.output("y", {8, 4, 4096});
    }
    auto path = m.save("vtpu_chunks_mix_" + std::to_string(::getpid()) + ".onnx");
    try {
      compile_onnx(path, cfg, {});
      FAIL() << "the output fit a 256 KiB unified buffer";
    } catch (const DoesNotFitError& e) {
      EXPECT_EQ(e.key(), "core.unified_buffer.bytes");
      EXPECT_EQ(std::string(e.what()).find("one sample at a time"), std::string::npos) << e.what();
    }
  }
}

TEST(BatchChunks, WhenOneSampleDoesNotFitItRunsInRowBandsOneSampleAtATime) {
  // 16 KiB holds no LeNet-5 sample whole (its first convolution's output is 28x28 pixels of
  // 16 lanes): the batch runs one sample per pass, each in row bands through HBM
  // (pipeline/bands.cpp), with the outputs of a buffer that holds the whole batch.
  auto lenet = models::materialize("lenet5", models::default_dir());
  config::Config cfg = config::load_preset("tiny-16x16"), big = cfg;
  cfg.name = "tiny-16x16-16KiB";
  cfg.core.unified_buffer.bytes = 16 * 1024;
  big.name = "tiny-16x16-4MiB";
  big.core.unified_buffer.bytes = 4 << 20;
  CompileOptions o;
  o.batch = 4;
  o.precision = Precision::Int8;
  CompileResult whole = compile_onnx(lenet, big, o);
  o.calibration_scales = whole.calibration_scales;
  CompileResult banded = compile_onnx(lenet, cfg, o);
  EXPECT_EQ(chunks_of(banded.assembly), 4);
  const isa::TensorInfo& x = only(banded.program, isa::TensorRole::Input);
  const isa::TensorInfo& y = only(banded.program, isa::TensorRole::Output);
  Vec in = uniform_values(size_t(x.bytes() / isa::dtype_bytes(x.dtype)), 5, 1000.0f);
  SimRun a = run_program(cfg, banded.program, {{x.name, encode(banded.program, x.name, in)}}, y.name);
  SimRun b = run_program(big, whole.program, {{x.name, encode(whole.program, x.name, in)}}, y.name);
  ASSERT_TRUE(a.error.empty()) << a.error;
  ASSERT_TRUE(b.error.empty()) << b.error;
  EXPECT_EQ(a.output, b.output);
}

TEST(BatchChunks, WhenOneSampleDoesNotFitEvenInBandsTheErrorSaysSo) {
  auto lenet = models::materialize("lenet5", models::default_dir());
  config::Config cfg = config::load_preset("tiny-16x16");
  cfg.core.unified_buffer.bytes = 2 * 1024;
  CompileOptions o;
  o.batch = 4;
  try {
    compile_onnx(lenet, cfg, o);
    FAIL() << "2 KiB of unified buffer should not hold one sample of LeNet-5, even in row bands";
  } catch (const DoesNotFitError& e) {
    EXPECT_EQ(e.key(), "core.unified_buffer.bytes");
    EXPECT_NE(std::string(e.what()).find("one sample at a time does not fit either; "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("row bands"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vtpu::compiler
