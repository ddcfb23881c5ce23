// The typed emitters generated from the ISA table (vtpu/isa/emit.h): each prints text the
// assembler encodes into exactly the fields its arguments name, and leaves optional
// operands at their defaults when not given.
#include <gtest/gtest.h>

#include "vtpu/isa/assembler.h"
#include "vtpu/isa/bundle.h"
#include "vtpu/isa/emit.h"

namespace vtpu::isa {
namespace {

TEST(Emit, OperationsEncodeTheirArguments) {
  using namespace emit;
  std::string src = ".desc d0 bytes=64\n.vparam p0 scale=[2]\n";
  src += "  " + li(Reg{3}, -7) + " || " + dma_load(Desc{"d0"}, Reg{3}, Reg{0}, flag(5)) + "\n";
  src += "  " + mxu_matmul(2, addr(4, 64), addr(0, 9), 8, Dtype::Int8, 32, true, true, flag(3)) + "\n";
  src += "  " + vec_add(acc(addr(0, 1)), acc(addr(0, 1)), ub(addr(6, 128)), 16, Dtype::Fp32, true, Flag{"f24"}) + " || " +
         wait(flag(7), 4) + "\n";
  src += "  " + vec_affine(ub(addr(0, 0)), ub(addr(0, 64)), 2, Dtype::Bf16, Param{"p0"}) + "\n";
  src += "  " + halt() + "\n";
  Program p = assemble(src, "emit.s");
  auto b = decode_program(p);
  ASSERT_EQ(b.size(), 5u) << src;
  EXPECT_EQ(field(b[0].at(SlotId::S0), SlotId::S0, "rd"), 3);
  EXPECT_EQ(field(b[0].at(SlotId::S0), SlotId::S0, "imm"), -7);
  EXPECT_EQ(field(b[0].at(SlotId::Dma), SlotId::Dma, "src"), 3);
  EXPECT_EQ(field(b[0].at(SlotId::Dma), SlotId::Dma, "flag"), 5);
  const Operation& mm = b[1].at(SlotId::MxuMatmul);
  EXPECT_EQ(field(mm, SlotId::MxuMatmul, "mxu"), 2);
  EXPECT_EQ(field(mm, SlotId::MxuMatmul, "src_reg"), 4);
  EXPECT_EQ(field(mm, SlotId::MxuMatmul, "src_off"), 64);
  EXPECT_EQ(field(mm, SlotId::MxuMatmul, "dst_off"), 9);
  EXPECT_EQ(field(mm, SlotId::MxuMatmul, "rows"), 8);
  EXPECT_EQ(field(mm, SlotId::MxuMatmul, "dtype"), int64_t(Dtype::Int8));
  EXPECT_EQ(field(mm, SlotId::MxuMatmul, "stride"), 32);
  EXPECT_EQ(field(mm, SlotId::MxuMatmul, "acc"), 1);
  EXPECT_EQ(field(mm, SlotId::MxuMatmul, "swap"), 1);
  EXPECT_EQ(field(mm, SlotId::MxuMatmul, "flag"), 3);
  const Operation& add = b[2].at(SlotId::Vector);
  EXPECT_EQ(field(add, SlotId::Vector, "dst_mem"), int64_t(MemSpace::Accumulator));
  EXPECT_EQ(field(add, SlotId::Vector, "b_mem"), int64_t(MemSpace::UnifiedBuffer));
  EXPECT_EQ(field(add, SlotId::Vector, "b_reg"), 6);
  EXPECT_EQ(field(add, SlotId::Vector, "b_off"), 128);
  EXPECT_EQ(field(add, SlotId::Vector, "dt"), int64_t(Dtype::Fp32));
  EXPECT_EQ(field(add, SlotId::Vector, "bcast"), 1);
  EXPECT_EQ(field(add, SlotId::Vector, "flag"), 24);
  EXPECT_EQ(field(b[2].at(SlotId::Control), SlotId::Control, "count"), 4);
  const Operation& af = b[3].at(SlotId::Vector);
  EXPECT_EQ(field(af, SlotId::Vector, "param"), 0);
  EXPECT_EQ(field(af, SlotId::Vector, "flag"), 0);  // not given: the default, no flag
  EXPECT_EQ(b[4].at(SlotId::Control).def->mnemonic, "halt");
}

// Optional operands not given are left out of the text, so the assembler applies the
// table's defaults: a matmul without acc/swap/stride overwrites, keeps its weights, reads
// packed rows.
TEST(Emit, OptionalOperandsLeftOutTakeTheTablesDefaults) {
  using namespace emit;
  EXPECT_EQ(mxu_matmul(0, addr(0, 0), addr(0, 0), 4, Dtype::Bf16), "mxu.matmul mxu=0 src=r0+0 dst=r0+0 rows=4 dtype=bf16");
  EXPECT_EQ(wait(flag(1)), "wait f1");
  EXPECT_EQ(wait(flag(1), 3), "wait f1, 3");
}

}  // namespace
}  // namespace vtpu::isa
