#pragma once
// Internal: what a config must offer the code generator, and the compiled program against
// the config it is for (compile_onnx runs both).
#include "vtpu/compiler/compiler.h"

namespace vtpu::compiler {

// Throws CompileError for a config the code generator cannot serve: a weight FIFO of one
// tile (the generator keeps a tile in flight while the MXU works from another).
void check_config_for_compiler(const config::Config& cfg);

// Throws CompileError when the program names registers or sync flags the config's scalar
// unit does not have (core.scalar.registers, core.scalar.sync_flags).
void check_program_for_config(const isa::Program& program, const config::Config& cfg);

}  // namespace vtpu::compiler
