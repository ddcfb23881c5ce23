#pragma once
// Internal: the pieces of the pipeline (docs/compiler.md): the importer (import/import_onnx.h),
// the pipeline and calibration (pipeline/pipeline.h), the reference interpreter
// (reference/reference.h), and code generation (codegen/codegen.h).
#include <map>

#include "codegen/codegen.h"
#include "import/import_onnx.h"
#include "mlir/IR/BuiltinOps.h"
#include "pipeline/pipeline.h"
#include "reference/reference.h"
#include "vtpu/compiler/compiler.h"
