#pragma once
// Internal to compiler/import: a node's attributes by name, with defaults for absent ones
// (dispatch.cpp). Used by the importer and by the constant folder alike.
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace vtpu::compiler::onnx_import {

const onnx::AttributeProto* attr(const onnx::NodeProto& n, const std::string& name);
int64_t attr_i(const onnx::NodeProto& n, const std::string& name, int64_t dflt);
float attr_f(const onnx::NodeProto& n, const std::string& name, float dflt);
std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const std::string& name, std::vector<int64_t> dflt);
std::string attr_s(const onnx::NodeProto& n, const std::string& name, std::string dflt);

}  // namespace vtpu::compiler::onnx_import
