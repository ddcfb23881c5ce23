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

}  // namespace vtpu::compiler
