// `vtpu run --check`: the chip's outputs against an fp32 reference on the same inputs (docs/
// runtime.md). onnxruntime on the original ONNX file when it runs, so that a misread operator
// shows (the compiler's own fp32 interpreter runs the graph the importer built, and would agree
// with a wrong import); otherwise the interpreter, and the report says which one was used.
#include "check.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "vtpu/runtime/onnxruntime.h"
#include "vtpu/support/layout.h"

namespace vtpu::runtime {
namespace {

// The NumPy type onnxruntime takes for an ONNX element type ("" when there is none).
std::string descr_of_onnx(int t) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return "<f4";
    case onnx::TensorProto::FLOAT16: return "<f2";
    case onnx::TensorProto::DOUBLE: return "<f8";
    case onnx::TensorProto::INT64: return "<i8";
    case onnx::TensorProto::INT32: return "<i4";
    case onnx::TensorProto::INT16: return "<i2";
    case onnx::TensorProto::INT8: return "|i1";
    case onnx::TensorProto::UINT64: return "<u8";
    case onnx::TensorProto::UINT32: return "<u4";
    case onnx::TensorProto::UINT16: return "<u2";
    case onnx::TensorProto::UINT8: return "|u1";
    case onnx::TensorProto::BOOL: return "|b1";
    default: return "";
  }
}

struct GraphInput {
  std::string name, descr;
  std::vector<int64_t> dims;  // -1 where symbolic
};

// The model's run-time inputs as the file declares them (not as the compiler reads them).
std::vector<GraphInput> graph_inputs(const std::filesystem::path& model, std::string& why_not) {
  onnx::ModelProto m;
  std::ifstream f(model, std::ios::binary);
  if (!m.ParseFromIstream(&f)) {
    why_not = "the model does not parse";
    return {};
  }
  std::set<std::string> inits;
  for (const auto& t : m.graph().initializer()) inits.insert(t.name());
  std::vector<GraphInput> r;
  for (const auto& in : m.graph().input()) {
    if (inits.count(in.name())) continue;
    GraphInput g{in.name(), descr_of_onnx(in.type().tensor_type().elem_type()), {}};
    if (g.descr.empty()) why_not = fmt::format("input '{}' has an element type the runtime cannot feed onnxruntime", in.name());
    for (const auto& d : in.type().tensor_type().shape().dim()) g.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    r.push_back(g);
  }
  return r;
}

// Rows [r, r + 1) along dimension 0 of a row-major tensor of `shape`.
std::vector<double> row_of(const std::vector<float>& v, const std::vector<int64_t>& shape, int64_t r) {
  size_t per = v.size() / size_t(std::max<int64_t>(shape[0], 1));
  return {v.begin() + long(size_t(r) * per), v.begin() + long(size_t(r + 1) * per)};
}

// An input fixed with --fix as onnxruntime takes it: the user's values (one fills all) in the
// input's shape (the model's dims, or --shape's where the model leaves them symbolic).
// Integers are read as int64 and stored in the input's width, so values past 2^53 stay exact
// (the compiler has checked the text and the range).
NpyArray fixed_feed(const GraphInput& g, const std::string& text, const compiler::CompileOptions& copt) {
  std::vector<int64_t> dims = g.dims;
  if (auto s = copt.shapes.find(g.name); s != copt.shapes.end()) dims = s->second;
  int64_t count = 1;
  for (int64_t d : dims) count *= std::max<int64_t>(d, 0);
  const std::vector<std::string> given = compiler::fixed_values(text);
  auto text_at = [&](int64_t i) -> const std::string& { return given[given.size() == size_t(count) ? size_t(i) : 0]; };
  const char kind = g.descr.size() > 2 ? g.descr[1] : 'f';
  if (kind == 'i' || kind == 'u' || kind == 'b') {
    NpyArray a{g.descr, dims, {}};
    const size_t width = size_t(std::atoi(g.descr.c_str() + 2));
    for (int64_t i = 0; i < count; ++i) {
      const std::string& v = text_at(i);
      int64_t x = v == "true" ? 1 : v == "false" ? 0 : int64_t(std::strtoll(v.c_str(), nullptr, 10));
      uint8_t bytes[8];
      std::memcpy(bytes, &x, 8);  // little-endian: the low `width` bytes are the value
      a.data.insert(a.data.end(), bytes, bytes + width);
    }
    return a;
  }
  std::vector<double> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) values[size_t(i)] = std::strtod(text_at(i).c_str(), nullptr);
  return npy_of(g.descr, dims, values);
}

// onnxruntime's outputs on `inputs` (model layout) and the fixed inputs' values. A model whose
// file fixes the batch at 1 run with --batch N runs once per batch row, the rows' outputs
// joined.
Reference onnxruntime_reference(const std::filesystem::path& model, const std::map<std::string, std::vector<float>>& inputs,
                                const std::map<std::string, std::vector<int64_t>>& shapes, const compiler::CompileOptions& copt,
                                std::string& why_not) {
  Reference ref;
  std::vector<GraphInput> declared = graph_inputs(model, why_not);
  if (!why_not.empty()) return ref;
  int64_t batch = 0;
  bool per_row = false;
  for (const auto& g : declared) {
    if (copt.fixed.count(g.name)) continue;
    auto it = shapes.find(g.name);
    if (it == shapes.end() || !inputs.count(g.name)) {
      why_not = fmt::format("the program has no input '{}' to feed onnxruntime with", g.name);
      return ref;
    }
    const auto& s = it->second;
    batch = s.empty() ? 1 : s[0];
    if (!s.empty() && g.dims.size() == s.size() && g.dims[0] == 1 && s[0] > 1) per_row = true;
  }
  int64_t runs = per_row ? batch : 1;
  for (int64_t r = 0; r < runs; ++r) {
    std::map<std::string, NpyArray> feeds;
    for (const auto& g : declared) {
      if (auto f = copt.fixed.find(g.name); f != copt.fixed.end()) {
        feeds[g.name] = fixed_feed(g, f->second, copt);
        continue;
      }
      std::vector<int64_t> s = shapes.at(g.name);
      const std::vector<float>& v = inputs.at(g.name);
      std::vector<double> values = per_row ? row_of(v, s, r) : std::vector<double>(v.begin(), v.end());
      if (per_row) s[0] = 1;
      feeds[g.name] = npy_of(g.descr, s, values);
    }
    OrtRun o = run_onnxruntime(model, feeds);
    if (!o.ok) {
      why_not = o.why_not;
      return ref;
    }
    ref.name = fmt::format("onnxruntime {} on {}{}", o.version, model.filename().string(),
                           per_row ? fmt::format(" (batch row by row: the file fixes batch 1)") : "");
    for (const auto& [name, a] : o.outputs) {
      std::vector<float> f = npy_as_floats(a);
      auto& out = ref.outputs[name];
      out.insert(out.end(), f.begin(), f.end());
    }
  }
  ref.short_name = "onnxruntime";
  return ref;
}

}  // namespace

Reference check_reference(const std::filesystem::path& model, const isa::Program& program,
                          const std::map<std::string, std::vector<float>>& program_inputs, const compiler::CompileOptions& copt,
                          const std::string& which) {
  std::string why_not = which == "interpreter" ? "--reference interpreter" : "";
  if (which != "interpreter") {
    // The inputs in the model's layout (images NCHW), as the file declares them.
    std::map<std::string, std::vector<float>> inputs;
    std::map<std::string, std::vector<int64_t>> shapes;
    for (const auto& t : program.tensors) {
      if (t.role != isa::TensorRole::Input || !program_inputs.count(t.name)) continue;
      shapes[t.name] = t.nhwc ? nchw_shape_of(t.shape) : t.shape;
      inputs[t.name] = t.nhwc ? nhwc_to_nchw(program_inputs.at(t.name), t.shape) : program_inputs.at(t.name);
    }
    Reference ref = onnxruntime_reference(model, inputs, shapes, copt, why_not);
    if (why_not.empty()) return ref;
    if (which == "onnxruntime") throw UserError(fmt::format("--reference onnxruntime: {}", why_not));
  }
  Reference ref;
  ref.short_name = "the fp32 interpreter";
  ref.name = fmt::format("vtpu's fp32 interpreter of the imported graph, which shares the importer with the chip's program "
                         "(onnxruntime not used: {})",
                         why_not);
  for (auto& [name, v] : compiler::reference_outputs(model, program_inputs, copt)) {
    ref.outputs[name] = std::move(v);
    for (const auto& t : program.tensors)
      if (t.name == name && t.role == isa::TensorRole::Output && t.nhwc) ref.outputs[name] = nhwc_to_nchw(ref.outputs[name], t.shape);
  }
  return ref;
}

std::map<std::string, std::string> onnx_output_types(const std::filesystem::path& model) {
  std::map<std::string, std::string> types;
  onnx::ModelProto m;
  std::ifstream f(model, std::ios::binary);
  if (!f || !m.ParseFromIstream(&f)) return types;
  for (const auto& out : m.graph().output())
    if (std::string d = descr_of_onnx(out.type().tensor_type().elem_type()); !d.empty()) types[out.name()] = d;
  return types;
}

std::vector<CheckResult> compare_outputs(const std::map<std::string, std::vector<float>>& got, const Reference& ref) {
  std::vector<CheckResult> r;
  for (const auto& [name, v] : got) {
    auto it = ref.outputs.find(name);
    if (it == ref.outputs.end())
      throw InternalError(fmt::format("--check: {} gave no output '{}' (it gave {})", ref.short_name, name, ref.outputs.size()));
    const std::vector<float>& want = it->second;
    if (want.size() != v.size())
      throw InternalError(fmt::format("--check: output '{}' has {} values on the chip and {} in {}", name, v.size(), want.size(),
                                      ref.short_name));
    CheckResult c{name};
    c.values = v.size();
    for (size_t i = 0; i < v.size(); ++i) {
      double g = v[i], w = want[i];
      if (!std::isfinite(g) || !std::isfinite(w)) {
        bool same = (std::isnan(g) && std::isnan(w)) || g == w;  // NaN and NaN, or an infinity of one sign
        c.nonfinite_mismatches += !same;
        continue;
      }
      c.max_abs_error = std::max(c.max_abs_error, std::fabs(g - w));
      c.max_reference = std::max(c.max_reference, std::fabs(w));
    }
    r.push_back(c);
  }
  return r;
}

}  // namespace vtpu::runtime
