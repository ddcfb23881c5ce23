// Inputs the user fixes to values (CompileOptions::fixed, `--fix NAME=VALUES`): each becomes an
// initializer of the model as read, before validation, so the validator, shape inference and
// the importer see a constant where the model has an input, and everything it decides (an If
// on a sample rate, shape arithmetic) folds. ONNX reads an initializer that has the name of a
// graph input as that input's value, so the input stays declared (docs/compiler.md, "Fixed
// inputs").
#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>

#include "import/importer.h"
#include "validate.h"

namespace vtpu::compiler {

// Each value parsed whole afterwards: an integer for an integer input (int64 exactly),
// true/false or 0/1 for a bool one, a number for a float one.
std::vector<std::string> fixed_values(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return parts;
    start = comma + 1;
  }
}

namespace onnx_import {

void fix_inputs(onnx::ModelProto& model, const FixedInputs& fixed, const InputShapes& shapes) {
  if (fixed.empty()) return;
  onnx::GraphProto* g = model.mutable_graph();
  std::set<std::string> inits;
  for (const auto& t : g->initializer()) inits.insert(t.name());
  for (const auto& [name, text] : fixed) {
    std::string spec = fmt::format("--fix {}={}", name, text);
    const onnx::ValueInfoProto* in = nullptr;
    std::string names;
    for (const auto& v : g->input())
      if (!inits.count(v.name())) {
        names += " " + v.name();
        if (v.name() == name) in = &v;
      }
    if (!in) throw UserError(fmt::format("{}: the model has no input '{}'; its inputs are:{}", spec, name, names));
    if (!in->type().has_tensor_type())
      throw UserError(fmt::format("{}: input '{}' is not a tensor; only tensor inputs can be fixed", spec, name));
    int et = in->type().tensor_type().elem_type();
    bool integer = is_integer_elem_type(et);
    if (!integer && et != onnx::TensorProto::FLOAT && et != onnx::TensorProto::DOUBLE)
      throw UserError(fmt::format("{}: input '{}' is of type {}; inputs of an integer type, bool, float or double can be "
                                  "fixed",
                                  spec, name, onnx::TensorProto::DataType_Name(onnx::TensorProto::DataType(et))));
    // Its dimensions: the user's (--shape) or the model's, every one known.
    std::vector<int64_t> dims;
    if (auto s = shapes.find(name); s != shapes.end()) {
      dims = input_dims(*in, 0, shapes);
    } else {
      for (const auto& d : in->type().tensor_type().shape().dim()) {
        if (!d.has_dim_value() || d.dim_value() < 0)
          throw UserError(fmt::format("{}: input '{}' has symbolic dimensions {}; give them with --shape {}=...", spec, name,
                                      model_dims(*in), name));
        dims.push_back(d.dim_value());
      }
    }
    int64_t count = 1;
    for (int64_t d : dims) {
      if (d > 0 && count > (int64_t(1) << 20) / d)
        throw UserError(fmt::format("{}: input '{}' of shape [{}] is too large to fix (more than 2^20 elements); fixed "
                                    "inputs are small values such as a sample rate or a mode",
                                    spec, name, fmt::join(dims, ", ")));
      count *= d;
    }
    std::vector<std::string> parts = fixed_values(text);
    if (int64_t(parts.size()) != count && parts.size() != 1)
      throw UserError(fmt::format("{}: input '{}' of shape [{}] has {} element(s); give {} value(s), or one for all of "
                                  "them",
                                  spec, name, fmt::join(dims, ", "), count, count));
    onnx::TensorProto t;
    t.set_name(name);
    t.set_data_type(et);
    for (int64_t d : dims) t.add_dims(d);
    for (int64_t i = 0; i < count; ++i) {
      const std::string& p = parts[parts.size() == 1 ? 0 : size_t(i)];
      auto bad = [&](const char* kind) {
        throw UserError(fmt::format("{}: value {} ('{}') is not {} (input '{}' is of type {})", spec, i, p, kind, name,
                                    onnx::TensorProto::DataType_Name(onnx::TensorProto::DataType(et))));
      };
      char* end = nullptr;
      errno = 0;
      if (et == onnx::TensorProto::BOOL) {
        if (p != "0" && p != "1" && p != "true" && p != "false") bad("true, false, 0 or 1");
        t.add_int32_data(p == "1" || p == "true");
      } else if (integer) {
        long long v = std::strtoll(p.c_str(), &end, 10);
        if (p.empty() || *end || errno == ERANGE) bad("an integer");
        if (cast_integer(v, et) != v || (et == onnx::TensorProto::UINT64 && v < 0)) bad("in the range of the input's type");
        if (et == onnx::TensorProto::INT64) t.add_int64_data(v);
        else if (et == onnx::TensorProto::UINT64 || et == onnx::TensorProto::UINT32) t.add_uint64_data(uint64_t(v));
        else t.add_int32_data(int32_t(v));
      } else {
        double v = std::strtod(p.c_str(), &end);
        if (p.empty() || *end) bad("a number");
        if (et == onnx::TensorProto::DOUBLE) t.add_double_data(v);
        else t.add_float_data(float(v));
      }
    }
    *g->add_initializer() = std::move(t);
    inits.insert(name);
  }
}

}  // namespace onnx_import
}  // namespace vtpu::compiler
