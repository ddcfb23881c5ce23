#pragma once
// The sync flags of a compiled program (docs/compiler.md, "Sync flags"), laid out once from
// the config so that a program names no flag past core.scalar.sync_flags:
//   f1                 DMA transfers (loads, stores, copies; waited in issue order)
//   f2 .. f(M+1)       one per MXU: its output blocks' last matmuls
//   f(M+2)             vector operations outside an MXU stream
//   f(M+3)             epilogue operations of the MXU stream scheduler
//   f(M+4) .. f(M+6)   the packed convolution's row loads, row stacks and two-pixel spreads
//   f(M+7), f(M+8)     a pipeline stage's (stage_links.cpp): chunks arrived over ICI, and
//                      chunks sent and acknowledged; only in a stage's program
//   next ..            a tensor-parallel program's all-reduces (tensor_parallel.cpp): the
//                      flags of the collectives library's schedule, moved here; only in
//                      such programs
//   next ..            up to kMostEarlyStores early stores of attention's right-hand sides,
//                      as many as the config's flags leave (none: no early stores)
#include <fmt/format.h>

#include <algorithm>

#include "vtpu/compiler/compiler.h"
#include "vtpu/config/config.h"

namespace vtpu::compiler::codegen {

struct FlagPlan {
  static constexpr int kMostEarlyStores = 8;
  int vector = 0, epilogue = 0;
  int loaded = 0, stacked = 0, spread = 0;
  int first_store = 0, stores = 0;  // early stores on f(first_store) .. f(first_store + stores - 1)
  int arrived = 0, sent = 0;        // a pipeline stage's; 0 in other programs
  int collective = 0, collective_flags = 0;  // all-reduces' f(collective) ..; 0 in other programs

  static int mxu(unsigned m) { return 2 + int(m); }

  // The code generator's own flags: DMA, one per MXU, vector, epilogue, three for packed
  // convolutions, and a pipeline stage's two.
  static int own(const config::Config& cfg, bool stage) { return int(cfg.core.mxu.count) + 6 + (stage ? 2 : 0); }
  // The flags left for a tensor-parallel program's all-reduces past the code generator's own.
  static int left_for_collectives(const config::Config& cfg, bool stage) {
    return int(cfg.core.scalar.sync_flags) - own(cfg, stage);
  }

  static FlagPlan of(const config::Config& cfg, bool stage = false, int collective = 0) {
    const int mxus = int(cfg.core.mxu.count), have = int(cfg.core.scalar.sync_flags);
    const int need = own(cfg, stage) + collective;
    if (have < need)
      throw CompileError(fmt::format("config '{}': the code generator needs {} sync flags for {} MXU(s) (DMA, one per "
                                     "MXU, vector, epilogue and three for packed convolutions{}), but "
                                     "core.scalar.sync_flags is {}; raise it to at least {}",
                                     cfg.name, need, mxus,
                                     std::string(stage ? ", two for a pipeline stage's transfers" : "") +
                                         (collective ? fmt::format(", {} for the all-reduces", collective) : ""),
                                     have,
                                     need));
    FlagPlan p;
    p.vector = mxus + 2;
    p.epilogue = mxus + 3;
    p.loaded = mxus + 4, p.stacked = mxus + 5, p.spread = mxus + 6;
    if (stage) p.arrived = mxus + 7, p.sent = mxus + 8;
    if (collective) p.collective = own(cfg, stage) + 1, p.collective_flags = collective;
    p.first_store = need + 1;
    p.stores = std::min(kMostEarlyStores, have - need);
    return p;
  }
};

}  // namespace vtpu::compiler::codegen
