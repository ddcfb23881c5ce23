#pragma once
// An ONNX model read from its file, with the bytes of its large initializers left where they
// are. Parsing a ModelProto copies every raw_data field into a string of its own: for
// ResNet-50, 100 MB copied into freshly allocated memory before the importer reads a value
// (a tenth of a cold compile). ModelFile maps the file, parses a copy of it from which the
// large initializers' raw_data bytes are cut (the field stays, empty, so has_raw_data() still
// says where the values are), and answers raw_data() for those tensors from the mapped pages.
// docs/compiler.md, "Compile time".
#include <cstdint>
#include <filesystem>
#include <string_view>

#include <onnx/onnx_pb.h>

#include "validate.h"  // OutsideRawData

namespace vtpu::compiler::onnx_import {

class ModelFile {
 public:
  // The graph's initializers whose raw_data holds at least this many bytes stay in the file.
  static constexpr size_t kOutsideBytes = 64 * 1024;

  ModelFile() = default;
  ModelFile(const ModelFile&) = delete;
  ModelFile& operator=(const ModelFile&) = delete;
  ~ModelFile();

  // Parses the model at `path`; false if protobuf cannot parse it. Throws UserError if the
  // file cannot be opened. A file that is not a regular file under 2 GiB, or whose encoding
  // the cutting does not follow (groups, a repeated raw_data), is parsed whole, as protobuf
  // reads it.
  bool read(const std::filesystem::path& path);

  onnx::ModelProto& proto() { return model_; }
  const onnx::ModelProto& proto() const { return model_; }
  // The raw_data bytes of `t`: from the mapped file if they were left there, else the proto's.
  std::string_view raw_data(const onnx::TensorProto& t) const;
  const OutsideRawData& outside() const { return outside_; }

 private:
  bool read_mapped(const std::filesystem::path& path);
  onnx::ModelProto model_;
  const uint8_t* map_ = nullptr;
  size_t map_size_ = 0;
  OutsideRawData outside_;
};

}  // namespace vtpu::compiler::onnx_import
