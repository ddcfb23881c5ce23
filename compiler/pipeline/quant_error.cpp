// INT8's quantization error layer by layer (compiler.h, quantization_errors): two runs of the
// fp32 reference interpreter, the second rounding every activation to its INT8 scale as it
// is made, compared at each layer's output.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <set>

#include "pipeline/pipeline.h"

namespace vtpu::compiler {

std::vector<LayerQuantError> quantization_errors(const std::filesystem::path& model, const CompileOptions& options,
                                                 const std::vector<float>& scales,
                                                 const std::map<std::string, std::vector<float>>& inputs) {
  Frontend front(model, options);
  front.import();
  front.lower();
  auto fn = front.main();
  std::map<const void*, float> scale = scales_by_value(fn, scales, model, options.batch, options.batch);
  // Integer values (token ids, int32 outputs) are carried exactly, not rounded.
  std::set<const void*> integer;
  for (mlir::Value a : fn.getArguments())
    if (mlir::cast<mlir::RankedTensorType>(a.getType()).getElementType().isInteger(32)) integer.insert(a.getAsOpaquePointer());
  // Each layer's output: the result of the last op carrying its name.
  std::vector<std::pair<std::string, std::string>> layers;  // name, op
  std::map<std::string, const void*> output_of;
  for (mlir::Operation& op : fn.getBody().front()) {
    if (!op.getNumResults()) continue;
    mlir::Value r = op.getResult(0);
    if (mlir::cast<mlir::RankedTensorType>(r.getType()).getElementType().isInteger(32)) integer.insert(r.getAsOpaquePointer());
    auto name = op.getAttrOfType<mlir::StringAttr>("layer");
    if (!name) continue;
    if (!output_of.count(name.str())) layers.push_back({name.str(), op.getName().stripDialect().str()});
    output_of[name.str()] = r.getAsOpaquePointer();
  }
  std::set<const void*> wanted;
  for (const auto& [n, v] : output_of) wanted.insert(v);

  std::vector<RefTensor> in = named_inputs(fn, inputs, "quantization error: no data for input '{}'",
                                           "quantization error: input '{}' has {} values, needs {}");
  std::map<const void*, std::vector<float>> exact;
  evaluate_reference(fn, in, [&](const void* v, RefTensor& t) {
    if (wanted.count(v)) exact[v] = t.data;
  });
  std::map<const void*, LayerQuantError> got;
  evaluate_reference(fn, in, [&](const void* v, RefTensor& t) {
    auto s = scale.find(v);
    uint64_t clipped = 0;
    if (s != scale.end() && s->second > 0 && !integer.count(v))
      for (float& x : t.data) {
        float q = std::nearbyint(x / s->second);
        if (q > 127 || q < -128) ++clipped;
        x = std::clamp(q, -128.0f, 127.0f) * s->second;
      }
    if (!wanted.count(v)) return;
    const std::vector<float>& e = exact.at(v);
    double signal = 0, noise = 0;
    for (size_t i = 0; i < e.size() && i < t.data.size(); ++i) {
      if (!std::isfinite(e[i]) || !std::isfinite(t.data[i])) continue;
      signal += double(e[i]) * e[i];
      noise += (double(t.data[i]) - e[i]) * (double(t.data[i]) - e[i]);
    }
    LayerQuantError& r = got[v];
    r.sqnr_db = noise > 0 ? 10 * std::log10(std::max(signal, 1e-300) / noise) : std::numeric_limits<double>::infinity();
    r.clipped = t.data.empty() ? 0 : double(clipped) / double(t.data.size());
  });
  std::vector<LayerQuantError> rows;
  for (const auto& [name, op] : layers) {
    LayerQuantError r = got.count(output_of[name]) ? got[output_of[name]] : LayerQuantError{};
    r.layer = name, r.op = op;
    rows.push_back(r);
  }
  return rows;
}

}  // namespace vtpu::compiler
