// Guards in front of libonnx shape-inference functions that read past their vectors when a
// node's ranks disagree (issue 19: a model must never crash the compiler). libonnx 1.12's
// convPoolShapeInference, for one, takes the kernel's rank from the weight and the strides'
// from the input, so a Conv of a rank-2 input and a rank-4 weight indexes an empty vector
// (tests/fuzz/corpus/onnx/crash_libfuzzer_conv_rank). Each guard checks what the inference
// function assumes, with the shapes known at that node, and fails as shape inference does
// (an InferenceError naming the node), then runs the original function.
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include <map>
#include <memory>
#include <mutex>

#include "checks.h"

namespace vtpu::compiler::validate {
namespace {

int rank_of(onnx::InferenceContext& ctx, size_t i) {
  if (i >= ctx.getNumInputs() || !onnx::hasInputShape(ctx, i)) return -1;
  return ctx.getInputType(i)->tensor_type().shape().dim_size();
}

// A convolution or pooling node: X (input 0) is [N, C, spatial...], the weight (if any) has
// X's rank, and the per-axis attributes have one entry (pads: two) per spatial axis.
void check_conv_pool_ranks(onnx::InferenceContext& ctx, const std::string& op, int weight_input) {
  const int r = rank_of(ctx, 0);
  if (r < 0) return;
  if (r < 3)
    fail_shape_inference(op, " input X has rank ", r, "; it must be [N, C, spatial...] (rank 3 or more)");
  if (weight_input >= 0) {
    const int w = rank_of(ctx, size_t(weight_input));
    if (w >= 0 && w != r)
      fail_shape_inference(op, " weight (input ", weight_input, ") has rank ", w, " but input X has rank ", r,
                           "; they must match");
  }
  const int spatial = r - 2;
  for (const char* name : {"kernel_shape", "strides", "dilations", "pads", "output_padding"}) {
    const onnx::AttributeProto* a = ctx.getAttribute(name);
    if (!a) continue;
    const int want = std::string(name) == "pads" ? 2 * spatial : spatial;
    if (a->ints_size() != want)
      fail_shape_inference(op, " attribute ", name, " has ", a->ints_size(), " values; input X of rank ", r,
                           " needs ", want);
  }
}

// The weight's input index of each guarded operator (-1: none).
const std::map<std::string, int>& guarded_ops() {
  static const std::map<std::string, int> ops = {
      {"Conv", 1},       {"ConvInteger", 1}, {"QLinearConv", 3}, {"ConvTranspose", 1},
      {"AveragePool", -1}, {"MaxPool", -1},  {"LpPool", -1}};
  return ops;
}

class GuardedRegistry final : public onnx::ISchemaRegistry {
 public:
  const onnx::OpSchema* GetSchema(const std::string& key, const int max_version,
                                  const std::string& domain) const override {
    const onnx::OpSchema* s = onnx::OpSchemaRegistry::Instance()->GetSchema(key, max_version, domain);
    auto op = guarded_ops().find(key);
    if (!s || op == guarded_ops().end() || !(domain.empty() || domain == "ai.onnx")) return s;
    std::lock_guard<std::mutex> lock(mutex_);
    auto& copy = copies_[s];
    if (!copy) {
      copy = std::make_unique<onnx::OpSchema>(*s);
      onnx::InferenceFunction original = s->GetTypeAndShapeInferenceFunction();
      const int weight = op->second;
      copy->TypeAndShapeInferenceFunction([original, key, weight](onnx::InferenceContext& ctx) {
        check_conv_pool_ranks(ctx, key, weight);
        if (original) original(ctx);
      });
    }
    return copy.get();
  }

 private:
  mutable std::mutex mutex_;
  mutable std::map<const onnx::OpSchema*, std::unique_ptr<onnx::OpSchema>> copies_;
};

}  // namespace

const onnx::ISchemaRegistry* guarded_schemas() {
  static const GuardedRegistry registry;
  return &registry;
}

}  // namespace vtpu::compiler::validate
