#pragma once
// Internal: what a config must offer the code generator (compile_onnx checks it first). The
// registers a program names are checked by the simulator, against the config it runs on:
// code generation reads no scalar-unit key (compiler::config_fingerprint).
#include "vtpu/compiler/compiler.h"

namespace vtpu::compiler {

// Throws CompileError for a config the code generator cannot serve: a weight FIFO of one
// tile (the generator keeps a tile in flight while the MXU works from another).
void check_config_for_compiler(const config::Config& cfg);

}  // namespace vtpu::compiler
