// Any byte string given as an ONNX model either parses and passes validation or is
// rejected with a UserError (CompileError) by compiler/validate, the checks the importer
// runs before it reads a model (issue 19): never a crash, an uncaught exception, a leak or
// undefined behaviour, whatever the graph, attributes, initializers or external-data entries
// say. External data is looked up beside a model file that does not exist, so an entry
// naming a real file outside the model's directory must be refused before it is opened.
#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>

#include "validate.h"
#include "vtpu/support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnx::ModelProto m;
  if (!m.ParseFromArray(data, int(size))) return 0;
  try {
    vtpu::compiler::validate_onnx(m, "/nonexistent-fuzz-dir/model.onnx", 0);
  } catch (const vtpu::UserError&) {
  }
  return 0;
}
