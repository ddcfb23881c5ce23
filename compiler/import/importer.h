#pragma once
// Internal to compiler/import: the ONNX importer's one context class. Its methods are defined
// in files grouped by concern (docs/compiler.md, "Pipeline"):
//   driver.cpp         the graph: model file, inputs, outputs, the function @main
//   dispatch.cpp       one node: its operator's handler, attributes, 1-D and empty-tensor forms
//   tensors.cpp        values, TOSA building blocks
//   constant.cpp       constants (constant.h): initializers of every element type, integers exactly
//   constant_ops.cpp   operators evaluated on constants (constant_ops.h), as the ONNX definitions say
//   folding.cpp        which nodes fold at import: Constant, Shape, Size, and nodes of constant inputs
//   opset.cpp          opset 18 models rewritten as opset 17 ones, before validation
//   fixed_inputs.cpp   inputs the user fixes to values (--fix), made initializers before validation
//   control.cpp        If whose condition is known when compiling: the branch it takes
//   matmul.cpp conv.cpp pool.cpp elementwise.cpp shape.cpp normalization.cpp reduce.cpp
//   recurrent.cpp resize.cpp quantization.cpp     one file per operator family
//
// Layout: 4-D activations are kept NHWC, the layout the chip stores images in (pixels x
// channels), so convolutions and pools map straight onto TOSA's NHWC ops. A 4-D model input is
// declared NHWC (the runtime transposes NCHW data when it places it); where ONNX semantics
// depend on NCHW order (Flatten/Reshape of an image) the importer inserts a tosa.transpose,
// which the lowering folds into the next layer's weights. Every op gets the ONNX node's name
// as its location; it becomes the program's tag.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dialect/tpu_dialect.h"
#include "import/attributes.h"
#include "import/constant.h"
#include "import/constant_ops.h"
#include "import/model_file.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "vtpu/compiler/compiler.h"

namespace vtpu::compiler::onnx_import {

using mlir::Value;

// An ONNX value as the importer carries it.
struct Tensor {
  Value value;                 // none for an empty tensor (a 0 in its shape): no data, no code
  std::vector<int64_t> shape;  // logical ONNX shape (NCHW for images)
  bool nhwc = false;           // the MLIR value is the NHWC transpose of `shape`
  bool empty() const { return std::find(shape.begin(), shape.end(), 0) != shape.end(); }
};

// fixed_inputs.cpp: each input of `fixed` (CompileOptions::fixed) made an initializer of
// `model` holding the user's values. Throws UserError naming the --fix.
void fix_inputs(onnx::ModelProto& model, const FixedInputs& fixed, const InputShapes& shapes);
// opset.cpp: an opset 18 model rewritten as opset 17 (the opset libonnx defines); other
// models untouched. Throws CompileError naming what has no opset 17 form.
void opset_18_as_17(onnx::ModelProto& model, const std::filesystem::path& path);
// control.cpp: the names n reads: its inputs, and what its subgraphs (If's branches) read from
// the scopes around them.
std::vector<std::string> names_read(const onnx::NodeProto& n);

class Importer {
 public:
  Importer(mlir::MLIRContext& ctx, const std::filesystem::path& path, const CompileOptions& opt)
      : ctx_(ctx), b_(&ctx), path_(path), opt_(opt) {}

  // driver.cpp
  mlir::OwningOpRef<mlir::ModuleOp> run();

 private:
  // ---- driver.cpp: the graph ----
  struct GraphOutputs {
    std::vector<Value> values;
    std::vector<mlir::Type> types;
    std::vector<std::string> names;
    std::vector<bool> nhwc;
    std::vector<std::string> model_types;  // isa::TensorInfo::model_type of each
  };
  [[noreturn]] void fail(const std::string& what, const std::string& node) const;
  void load();
  mlir::func::FuncOp declare_inputs(mlir::ModuleOp module);
  std::vector<int64_t> input_shape(const onnx::ValueInfoProto& in);
  GraphOutputs collect_outputs();
  Value graph_output(const onnx::ValueInfoProto& out, bool& nhwc);
  void remove_unused(mlir::Block* entry);
  void annotate(mlir::func::FuncOp fn, const GraphOutputs& outs);

  // ---- dispatch.cpp: one node ----
  void import_node(const onnx::NodeProto& n);
  bool lift_1d(const onnx::NodeProto& n);
  bool empty_input(const onnx::NodeProto& n);
  const Tensor& sub_node(const onnx::NodeProto& m);
  static void set_ints(onnx::NodeProto& m, const std::string& name, const std::vector<int64_t>& v);
  onnx::NodeProto derived_node(const onnx::NodeProto& n, const std::string& tag, std::initializer_list<const char*> drop);
  std::vector<int64_t> per_axis(const onnx::NodeProto& n, const std::string& name, int64_t dflt, size_t rank);
  void only_attrs(const onnx::NodeProto& n, std::initializer_list<const char*> allowed);
  std::string node_name(const onnx::NodeProto& n) const;

  // ---- tensors.cpp: values and TOSA building blocks ----
  // An initializer or tensor attribute (constant.h), errors named after the tensor.
  Constant read_tensor(const onnx::TensorProto& t);
  std::vector<Constant> read_initializers(const google::protobuf::RepeatedPtrField<onnx::TensorProto>& inits);
  static bool is_float_type(int t);
  static bool is_integer_type(int t);
  static bool is_integer_io(int t);
  bool is_integral(const std::string& name) const;
  mlir::RankedTensorType tensor_type(const std::vector<int64_t>& shape);
  static std::vector<int64_t> to_nhwc(const std::vector<int64_t>& s);
  Value constant(const std::vector<int64_t>& shape, std::vector<float> data, mlir::Location loc);
  Value transpose(Value v, const std::vector<int32_t>& perm, mlir::Location loc);
  Value to_nchw_value(const Tensor& t, mlir::Location loc);
  Value reshape(Value v, const std::vector<int64_t>& shape, mlir::Location loc);
  const Tensor& input(const onnx::NodeProto& n, int i);
  const Constant& const_input(const onnx::NodeProto& n, int i, const char* what);
  // The same as a value of its own: moved out of the table when n is the last node to read it
  // (a model's weights are then not copied once more), else a copy.
  Constant take_const_input(const onnx::NodeProto& n, int i, const char* what);
  void define(const onnx::NodeProto& n, Tensor t);

  // ---- folding.cpp: constants at import ----
  bool fold_constant(const onnx::NodeProto& n);
  // n's output from its inputs' constants (fold_node, constant_ops.h); nothing when n's
  // operator does not fold. Errors name the node.
  std::optional<Constant> folded(const onnx::NodeProto& n);

  // ---- control.cpp: If whose condition is known when compiling ----
  void if_node(const onnx::NodeProto& n);

  // ---- logical.cpp: comparisons, logical operators, Where, Cast to bool at run time ----
  bool integer_typed(const std::string& name) const;
  std::pair<Value, Value> logical_operands(const onnx::NodeProto& n, Tensor& out, mlir::Location loc);
  void boolean_op(const onnx::NodeProto& n, mlir::Location loc);
  void cast_to_bool(const onnx::NodeProto& n, mlir::Location loc);
  void where(const onnx::NodeProto& n, mlir::Location loc);
  std::vector<std::string> inputs_behind(const std::string& name);
  std::pair<std::string, std::string> fix_advice(const std::vector<std::string>& names);

  // ---- matmul.cpp ----
  void gemm(const onnx::NodeProto& n, mlir::Location loc);
  void matmul(const onnx::NodeProto& n, mlir::Location loc);
  void batch_matmul(const onnx::NodeProto& n, mlir::Location loc);
  Tensor batch_matmul_of(const onnx::NodeProto& n, Tensor a, Tensor c, mlir::Location loc);
  Tensor matmul_const(const onnx::NodeProto& n, const Tensor& a, const Constant& w, mlir::Location loc);
  void integer_op(const onnx::NodeProto& n, mlir::Location loc);

  // ---- conv.cpp ----
  // The geometry of a convolution when it is not the node's own (ConvTranspose's inner conv).
  struct ConvGeometry {
    std::vector<int64_t> stride, dilation, pad;  // pad in TOSA order: top, bottom, left, right
  };
  void conv(const onnx::NodeProto& n, mlir::Location loc);
  void conv_3d(const onnx::NodeProto& n, const Tensor& x, mlir::Location loc);
  Tensor conv_of(const onnx::NodeProto& n, const Tensor& x, Constant w, std::vector<float> bias, mlir::Location loc,
                 const ConvGeometry* geometry = nullptr);
  void conv_transpose(const onnx::NodeProto& n, mlir::Location loc);
  void conv_transpose_3d(const onnx::NodeProto& n, const Tensor& x, mlir::Location loc);
  std::vector<int64_t> explicit_pads(const onnx::NodeProto& n, const std::vector<int64_t>& in, const std::vector<int64_t>& k,
                                     const std::vector<int64_t>& stride, const std::vector<int64_t>& dil);
  std::vector<int64_t> pads_of(const onnx::NodeProto& n, const std::vector<int64_t>& in_hw, const std::vector<int64_t>& kernel,
                               const std::vector<int64_t>& stride, const std::vector<int64_t>& dilation);

  // ---- pool.cpp ----
  void pool(const onnx::NodeProto& n, mlir::Location loc);
  void pool_3d(const onnx::NodeProto& n, const Tensor& x, mlir::Location loc);
  void global_pool(const onnx::NodeProto& n, mlir::Location loc);

  // ---- elementwise.cpp ----
  void relu(const onnx::NodeProto& n, mlir::Location loc);
  void clip(const onnx::NodeProto& n, mlir::Location loc);
  void clamp(const onnx::NodeProto& n, mlir::Location loc, float lo, float hi);
  Value make_clamp(Value v, float lo, float hi, mlir::Location loc);
  Value scaled(Value v, const std::vector<int64_t>& shape, float k, float c, mlir::Location loc);  // v * k + c
  Value magnitude(Value v, const std::vector<int64_t>& shape, mlir::Location loc);                 // |v|
  void binary(const onnx::NodeProto& n, mlir::Location loc);
  std::pair<Value, Value> broadcast_pair(const onnx::NodeProto& n, const Tensor& a, const Tensor& c, Tensor& out,
                                         mlir::Location loc);
  void variadic(const onnx::NodeProto& n, mlir::Location loc);
  void unary_table(const onnx::NodeProto& n, mlir::Location loc);
  void pow(const onnx::NodeProto& n, mlir::Location loc);
  void leaky_relu(const onnx::NodeProto& n, mlir::Location loc);
  void prelu(const onnx::NodeProto& n, mlir::Location loc);
  void hard_swish(const onnx::NodeProto& n, mlir::Location loc);
  void scale_shift(const onnx::NodeProto& n, mlir::Location loc);
  void elementwise_extra(const onnx::NodeProto& n, mlir::Location loc);
  void cast(const onnx::NodeProto& n, mlir::Location loc);

  // ---- shape.cpp: layout, slicing and data movement ----
  void identity(const onnx::NodeProto& n, mlir::Location loc);
  void flatten(const onnx::NodeProto& n, mlir::Location loc);
  void reshape_op(const onnx::NodeProto& n, mlir::Location loc);
  void squeeze(const onnx::NodeProto& n, mlir::Location loc);
  void reshape_to(const onnx::NodeProto& n, const std::vector<int64_t>& shape, mlir::Location loc);
  std::vector<int64_t> reshaped_shape(const onnx::NodeProto& n, const std::vector<int64_t>& in);
  void transpose_op(const onnx::NodeProto& n, mlir::Location loc);
  void slice(const onnx::NodeProto& n, mlir::Location loc);
  Tensor window(const Tensor& x, const std::vector<int64_t>& start, const std::vector<int64_t>& size, mlir::Location loc);
  Tensor pick(const Tensor& x, int64_t axis, const std::vector<int64_t>& idx, mlir::Location loc);
  void split(const onnx::NodeProto& n, mlir::Location loc);
  void concat(const onnx::NodeProto& n, mlir::Location loc);
  void tile(const onnx::NodeProto& n, mlir::Location loc);
  void expand(const onnx::NodeProto& n, mlir::Location loc);
  void gather(const onnx::NodeProto& n, mlir::Location loc);
  void gather_runtime(const onnx::NodeProto& n, mlir::Location loc);
  void pad(const onnx::NodeProto& n, mlir::Location loc);
  Value pad_image(const onnx::NodeProto& n, Value in, const std::vector<int64_t>& s, int64_t top, int64_t bottom, int64_t left,
                  int64_t right, const std::string& mode, float value, mlir::Location loc);
  void pad_any(const onnx::NodeProto& n, const Tensor& x, const std::vector<int64_t>& p, const std::string& mode, float value,
               mlir::Location loc);
  Value padded_image(const onnx::NodeProto& n, Value in, const std::vector<int64_t>& s, int64_t top, int64_t bottom, int64_t left,
                     int64_t right, float value, mlir::Location loc);

  // ---- normalization.cpp ----
  void batchnorm(const onnx::NodeProto& n, mlir::Location loc);
  void batchnorm_training(const onnx::NodeProto& n, const Tensor& x, const std::vector<float>& gamma, const std::vector<float>& beta,
                          const std::vector<float>& mean_in, const std::vector<float>& var_in, float eps, mlir::Location loc);
  void instance_norm(const onnx::NodeProto& n, mlir::Location loc);
  void layernorm(const onnx::NodeProto& n, mlir::Location loc);
  void softmax(const onnx::NodeProto& n, mlir::Location loc);
  Value softmax_last(Value v, const std::vector<int64_t>& shape, mlir::Location loc, bool log = false);

  // ---- reduce.cpp ----
  void reduce(const onnx::NodeProto& n, mlir::Location loc);
  void argmax(const onnx::NodeProto& n, mlir::Location loc);

  // ---- recurrent.cpp: LSTM and GRU, unrolled over their static time steps ----
  // What LSTM and GRU share: X, W [dirs, G*H, I], R [dirs, G*H, H], B [dirs, 2*G*H],
  // sequence_lens (full length only), initial states, direction and layout. The input
  // projections of all steps are one matmul per gate; a step's recurrent matmuls use one
  // weight constant per gate, shared by all steps.
  struct Rnn {
    int64_t T = 0, B = 0, I = 0, H = 0, dirs = 1, gates = 0;
    bool batch_first = false;
    std::string dir;
    const Constant* W = nullptr;
    const Constant* R = nullptr;
    std::vector<float> bias;
    Value x2;  // X as [T * B, I]
    std::map<const float*, Value> weights;
  };
  void lstm(const onnx::NodeProto& n, mlir::Location loc);
  void gru(const onnx::NodeProto& n, mlir::Location loc);
  Rnn rnn_setup(const onnx::NodeProto& n, mlir::Location loc, int64_t gates, std::initializer_list<const char*> activations);
  Value rnn_fc(Rnn& r, Value v, int64_t rows, const float* w, int64_t K, const std::vector<float>& b, mlir::Location loc);
  Value rnn_state(const Rnn& r, const onnx::NodeProto& n, int idx, int64_t d, mlir::Location loc);
  void rnn_run(Rnn& r, const onnx::NodeProto& n, mlir::Location loc,
               const std::function<std::vector<float>(int64_t d, int64_t g)>& xw_bias,
               const std::function<void(int64_t d, std::vector<Value>& xw_t, Value& h, Value& c)>& step, bool with_c);

  // ---- resize.cpp ----
  void resize(const onnx::NodeProto& n, mlir::Location loc);
  void resize_interpolated(const onnx::NodeProto& n, const Tensor& x, const std::vector<int64_t>& out, const std::vector<double>& sc,
                           const std::string& ct, bool cubic, mlir::Location loc);

  // ---- quantization.cpp: quantized models (QDQ and QLinear) ----
  // A quantized activation is carried as its dequantized value, (q - zero_point) * scale,
  // which is exact in float: QuantizeLinear becomes a tpu.fake_quant (round, clamp), and
  // DequantizeLinear of it is the identity. Quantized weights are dequantized here.
  struct QParams {
    std::vector<float> scale, zero;  // one per tensor, or per channel along `axis`
    int64_t axis = 1;
    float qmin = -128, qmax = 127;
  };
  void quantize_linear(const onnx::NodeProto& n, mlir::Location loc);
  void dequantize_linear(const onnx::NodeProto& n, mlir::Location loc);
  void qlinear(const onnx::NodeProto& n, mlir::Location loc);
  QParams qparams(const onnx::NodeProto& n, int scale_at, int zero_at, int64_t axis);
  Constant dequantized(const Constant& q, const QParams& p, const onnx::NodeProto& n);
  Tensor fake_quant(const Tensor& x, const QParams& p, const onnx::NodeProto& n, mlir::Location loc);

  // ---- state ----
  mlir::MLIRContext& ctx_;
  mlir::OpBuilder b_;
  std::filesystem::path path_;
  CompileOptions opt_;
  ModelFile file_;  // the model as read (model_file.h)
  int64_t opset_ = 0;  // of the default domain; 0 if the model does not say
  std::map<std::string, Constant> constants_;
  // Of the main graph's values: how many nodes still to be imported read each (a constant is
  // released after its last reader), and the graph outputs (never released); inside an If's
  // branch (subgraph_depth_ > 0) nothing is moved out.
  std::map<std::string, int64_t> readers_;
  std::set<std::string> graph_outputs_;
  int subgraph_depth_ = 0;
  std::map<std::string, Tensor> values_;
  struct EmptyIo {
    std::string role, name;
    std::vector<int64_t> shape;
    bool integer;
  };
  std::vector<EmptyIo> empty_io_;  // empty graph inputs and outputs, in graph order
  std::map<std::string, Tensor> int_args_;  // integer graph inputs (i32 arguments)
  std::map<std::string, unsigned> arg_index_;
  std::map<std::string, int> in_elem_;  // ONNX element type of each integer input
  std::set<std::string> integer_valued_;  // float activations that hold integers (MatMulInteger's results, ...)
  std::set<std::string> whole_values_;    // float-typed values that hold integers (a Cast of a mask, 1 - mask)
  ElemTypes elem_types_;                  // every value's ONNX element type (validate_onnx's inference)
  std::map<std::string, QParams> quantized_;  // activation name -> how it was quantized
  mlir::func::FuncOp fn_;
};

}  // namespace vtpu::compiler::onnx_import
