#include "target_limits.h"

#include <fmt/format.h>

namespace vtpu::compiler {

void check_config_for_compiler(const config::Config& cfg) {
  if (cfg.core.mxu.weight_fifo_tiles < 2)
    throw CompileError(fmt::format(
        "config '{}': core.mxu.weight_fifo_tiles is {}; the compiler streams each weight tile into the FIFO while the "
        "MXU works from the one before (double buffering) and needs a FIFO of at least 2 tiles; set it to 2 or more",
        cfg.name, cfg.core.mxu.weight_fifo_tiles));
}

void check_program_for_config(const isa::Program& program, const config::Config& cfg) {
  auto v = isa::first_register_or_flag_past(isa::decode_program(program), cfg.core.scalar.registers,
                                            cfg.core.scalar.sync_flags);
  if (v)
    throw CompileError(fmt::format("config '{}' cannot run the compiled program: bundle {}: {}; the compiler needs more "
                                   "of them",
                                   cfg.name, v->bundle, v->message));
}

}  // namespace vtpu::compiler
