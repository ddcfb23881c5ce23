// Bad programs stop with a diagnostic that names the bundle, the unit and the flag or field.
#include <iostream>
#include <random>

#include "sim_test_util.h"

namespace vtpu::sim {
namespace {

using testing::run_asm;

std::string fails(const std::string& preset, const std::string& text, SimOptions opt = {}) {
  return run_asm(preset, text, [](const RunResult& r) { return "ran " + std::to_string(r.stats.total_cycles); }, {},
                 opt);
}

void expect_error(const std::string& got, std::initializer_list<const char*> parts) {
  EXPECT_EQ(got.rfind("SIMERROR: ", 0), 0u) << got;
  for (const char* p : parts) EXPECT_NE(got.find(p), std::string::npos) << "missing '" << p << "' in: " << got;
}

TEST(SimErrors, WaitNobodySignalsIsADeadlock) {
  expect_error(fails("tiny-4x4", "  li r1, 1\n  wait f7, 2\n  halt\n"),
               {"bundle 1", "slot ctl", "wait", "deadlock", "f7 >= 2", "can only reach 0"});
}

TEST(SimErrors, DeadlockListsPendingIncrements) {
  expect_error(fails("tiny-4x4", ".desc d bytes=16\n  dma.load desc=d src=r0 dst=r0 flag=f3\n  wait f3, 2\n  halt\n"),
               {"bundle 1", "f3 >= 2", "can only reach 1", "Pending increments: bundle 0"});
}

TEST(SimErrors, ReadingAccumulatorsBeforeTheMatmulIsDoneIsARace) {
  std::string text = R"(
    .desc w bytes=4 dim=[4, 4, 4]
    .tag layer1
      dma.wfifo desc=w src=r0 mxu=0 flag=f1
      wait f1
      mxu.wload mxu=0
      mxu.matmul mxu=0 src=r0+0 dst=r0+0 rows=4 dtype=int8 swap=1 flag=f2
      vec.copy dst=ub[r0+256] a=acc[r0+0] rows=4 dt=int32
      halt
  )";
  expect_error(fails("tiny-4x4", text), {"race", "bundle 4 (vec.copy) [layer1] reads accumulator rows 0..3",
                                         "bundle 3 (mxu.matmul)", "writes them until cycle", "wait on a flag"});
}

TEST(SimErrors, OverwritingUbWhileADmaReadsItIsARace) {
  std::string text = R"(
    .desc d bytes=64
      dma.store desc=d src=r0 dst=r0 flag=f1
      vec.copy dst=ub[r0+0] a=ub[r0+128] rows=1 dt=int32
      wait f1
      halt
  )";
  expect_error(fails("tiny-4x4", text), {"race", "bundle 1 (vec.copy) writes unified-buffer bytes 0..15",
                                         "bundle 0 (dma.store)"});
}

// Pooling from the accumulators (rows of W x 4 bytes): the window and stride are whole rows,
// the rows it reads are bounded and raced like any other operand's.
TEST(SimErrors, PoolingFromTheAccumulatorsNeedsWholeRows) {
  expect_error(fails("tiny-4x4", ".vparam pw window=[0, 8]\n  vec.maxpool dst=ub[r0+0] a=acc[r0+0] rows=2 dt=int32 "
                                 "param=pw\n  halt\n"),
               {"bundle 0", "vec.maxpool", "rows are 16 bytes", "'pw'", "not 8"});
}

TEST(SimErrors, PoolingFromTheAccumulatorsPastTheirEnd) {
  // Output row i reads rows 250 + 2i and 251 (16-byte rows): rows 250..257 for four output
  // rows, past tiny-4x4's 256.
  expect_error(fails("tiny-4x4", ".vparam pw window=[0, 16] pool_stride=32\n  li r1, 250\n"
                                 "  vec.maxpool dst=ub[r0+0] a=acc[r1+0] rows=4 dt=int32 param=pw\n  halt\n"),
               {"bundle 1", "reaches accumulator rows 250..257"});
}

TEST(SimErrors, PoolingFromTheAccumulatorsWhileAMatmulWritesThemIsARace) {
  std::string text = R"(
    .desc w bytes=4 dim=[4, 4, 4]
    .vparam pw window=[0, 16, 32] pool_stride=16
      dma.wfifo desc=w src=r0 mxu=0 flag=f1
      wait f1
      mxu.wload mxu=0
      mxu.matmul mxu=0 src=r0+0 dst=r0+5 rows=4 dtype=int8 swap=1 flag=f2
      vec.avgpool dst=ub[r0+256] a=acc[r0+0] rows=4 dt=int32 param=pw
      halt
  )";
  // Output rows 0..3 read accumulator rows 0..5; the matmul writes rows 5..8 (before this
  // change the check covered row 0 only and missed the race).
  expect_error(fails("tiny-4x4", text), {"race", "bundle 4 (vec.avgpool)", "reads accumulator rows 5..5",
                                         "bundle 3 (mxu.matmul)"});
}

TEST(SimErrors, MatmulSourcePastTheUnifiedBuffer) {
  config::Config cfg = config::load_preset("tiny-4x4");
  std::string text = R"(
    .desc w bytes=4 dim=[4, 4, 4]
      dma.wfifo desc=w src=r0 mxu=0 flag=f1
      wait f1
      mxu.wload mxu=0
      li r5, )" + std::to_string(cfg.core.unified_buffer.bytes - 8) + R"(
      mxu.matmul mxu=0 src=r5+0 dst=r0+0 rows=4 dtype=int8 swap=1 flag=f2
      wait f2
      halt
  )";
  expect_error(fails("tiny-4x4", text), {"bundle 4", "mxu.matmul", "'src'", "past its", "core.unified_buffer.bytes"});
}

TEST(SimErrors, MisalignedDmaOnTheUnifiedBufferSide) {
  config::Config cfg = config::load_preset("tiny-8x8");
  if (cfg.core.unified_buffer.alignment_bytes <= 1) GTEST_SKIP() << "preset has no alignment rule";
  std::string text = "  li r2, 1\n.desc d bytes=64\n  dma.load desc=d src=r0 dst=r2 flag=f1\n  wait f1\n  halt\n";
  expect_error(fails("tiny-8x8", text), {"bundle 1", "dma.load", "'dst'", "not a multiple of",
                                         "core.unified_buffer.alignment_bytes"});
}

TEST(SimErrors, MxuIndexPastTheConfig) {
  expect_error(fails("tiny-4x4", ".desc w bytes=4\n  dma.wfifo desc=w src=r0 mxu=3\n  halt\n"),
               {"bundle 0", "'mxu' = 3", "1 MXU(s)"});
}

TEST(SimErrors, MatmulWithoutWeights) {
  expect_error(fails("tiny-4x4", "  mxu.matmul mxu=0 src=r0+0 dst=r0+0 rows=1 dtype=int8\n  halt\n"),
               {"bundle 0", "MXU 0 has no weights", "swap=1"});
}

TEST(SimErrors, WeightFifoOverflowWithoutLoadsIsADeadlock) {
  config::Config cfg = config::load_preset("tiny-4x4");
  std::string text = ".desc w bytes=4 dim=[4, 4, 4]\n";
  for (uint32_t i = 0; i <= cfg.core.mxu.weight_fifo_tiles; ++i) text += "  dma.wfifo desc=w src=r0 mxu=0\n";
  text += "  halt\n";
  expect_error(fails("tiny-4x4", text), {"weight FIFO of MXU 0 is full", "issue mxu.wload"});
}

TEST(SimErrors, InfiniteLoopHitsTheCycleLimit) {
  SimOptions o;
  o.max_cycles = 5000;
  // A loop that ends, but after 2^32 - 1 iterations (r1 starts at 0): only the limit stops it.
  // (A loop that can never end is reported at once: test_hostile.cpp.)
  expect_error(fails("tiny-4x4", "top: loop r1, top\n  halt\n", o), {"cycle limit 5000", "--max-cycles", "bundle 0"});
}

TEST(SimErrors, RunningPastTheLastBundle) {
  expect_error(fails("tiny-4x4", "  li r1, 1\n"), {"ran past its last bundle", "halt"});
}

TEST(SimErrors, ProgramBuiltForAnotherConfig) {
  std::string out = testing::in_child([] {
    isa::Program p = isa::assemble("halt\n", "t.s");
    p.config_name = "tiny-4x4";
    p.config_fingerprint = config::fingerprint(config::load_preset("tiny-4x4"));
    simulate(config::load_preset("tiny-8x8"), p, {});
    return std::string("ran");
  });
  EXPECT_NE(out.find("built for config 'tiny-4x4'"), std::string::npos) << out;
  EXPECT_NE(out.find("-c tiny-8x8"), std::string::npos) << out;
}

TEST(SimErrors, TransferPastHbm) {
  config::Config cfg = config::load_preset("tiny-4x4");
  std::string text = ".desc d bytes=64 src_off=" + std::to_string(cfg.memory.bytes - 32) +
                     "\n  dma.load desc=d src=r0 dst=r0 flag=f1\n  wait f1\n  halt\n";
  expect_error(fails("tiny-4x4", text), {"bundle 0", "'src'", "memory.bytes"});
}

}  // namespace
}  // namespace vtpu::sim

namespace vtpu::sim {
namespace {

// Random programs of random operations with random fields either run or stop with a
// SimError (a user error naming the bundle); never a crash, an internal error or a hang.
TEST(SimRobustness, RandomProgramsRunOrFailCleanly) {
  std::mt19937_64 rng(2024);
  int ran = 0, rejected = 0;
  for (int iter = 0; iter < 300; ++iter) {
    isa::Program p;
    for (int i = 0; i < 4; ++i) {
      isa::DmaDescriptor d;
      d.name = "d" + std::to_string(i);
      d.bytes = uint32_t(1 + rng() % 64) * (i == 0 ? 1 : 4);
      d.src_offset = rng() % 4096, d.dst_offset = rng() % 4096;
      if (rng() % 2) d.dims.push_back({uint32_t(1 + rng() % 4), int64_t(rng() % 512), int64_t(rng() % 512)});
      d.dtype = rng() % 2 ? isa::Dtype::Int8 : isa::Dtype::Bf16;
      p.descriptors.push_back(d);
      isa::VectorParams v;
      v.name = "p" + std::to_string(i);
      v.multiplier = {int32_t(rng() % 2000000000)};
      v.shift = {int32_t(2 + rng() % 60)};
      v.window = {0, int32_t(4 * (rng() % 8))};
      v.scale = {1.5f};
      p.params.push_back(v);
    }
    size_t n = 5 + rng() % 40;
    for (size_t b = 0; b < n; ++b) {
      isa::Bundle bundle;
      for (const isa::SlotDef& sd : isa::table().slots) {
        if (rng() % 3) continue;
        std::vector<const isa::OpDef*> cands;
        for (const isa::OpDef& op : isa::table().ops)
          if (op.slot_class == sd.slot_class) cands.push_back(&op);
        const isa::OpDef* def = cands[rng() % cands.size()];
        if (def->mnemonic == "dma.send") continue;
        isa::Operation op = isa::make_op(*def);
        for (const isa::OperandDef& od : def->operands) {
          unsigned k = od.kind == isa::OperandKind::Field ? 1 : od.kind == isa::OperandKind::Addr ? 2 : 3;
          for (unsigned i = 0; i < k; ++i) {
            int fi = sd.field_index(od.fields[i]);
            const isa::FieldDef& f = sd.fields[size_t(fi)];
            int64_t v;
            // Bias towards programs that get far: existing MXU, aligned small offsets.
            if (f.name == "mxu" || f.name == "unit") v = 0;
            else if (f.name.ends_with("_off")) v = int64_t(rng() % 64) * 64;
            else if (f.kind == isa::FieldKind::Desc || f.kind == isa::FieldKind::Param) v = int64_t(rng() % 4);
            else if (f.kind == isa::FieldKind::Target) v = int64_t(rng() % n);
            else if (f.kind == isa::FieldKind::UImm && f.width > 8) v = int64_t(rng() % 300) + f.min;  // small rows/offsets
            else v = f.min + int64_t(rng() % uint64_t(f.max - f.min + 1));
            op.fields[size_t(fi)] = v;
          }
        }
        bundle.at(sd.id) = op;
      }
      p.code.push_back(isa::encode(bundle));
    }
    isa::Bundle halt;
    halt.at(isa::SlotId::Control) = isa::make_op(*isa::find_op("halt"));
    p.code.push_back(isa::encode(halt));
    std::string out = testing::in_child([&] {
      SimOptions o;
      o.max_cycles = 200000;
      std::map<std::string, std::vector<uint8_t>> in;
      auto r = simulate(config::load_preset("tiny-4x4"), p, in, o);
      return std::string("ran");
    });
    if (out == "ran") ++ran;
    else if (out.rfind("SIMERROR: ", 0) == 0) {
      ++rejected;
      if (std::getenv("VTPU_TEST_VERBOSE")) std::cout << out.substr(0, 160) << "\n";
    }
    else FAIL() << "iteration " << iter << ": " << out << "\n" << isa::disassemble(p);
  }
  EXPECT_EQ(ran + rejected, 300);
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace vtpu::sim
