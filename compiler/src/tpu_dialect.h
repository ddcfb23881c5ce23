#pragma once
// Internal: the tpu dialect, now compiler/dialect/tpu_dialect.h (the passes are in
// compiler/transforms/passes.h). Kept under this name for code generation, which includes it
// from compiler/src.
#include "dialect/tpu_dialect.h"
