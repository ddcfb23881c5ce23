// The graph: the model file, @main's arguments (graph inputs that are not initializers), its
// nodes in order, its results (graph outputs), and the attributes the rest of the compiler
// reads from @main (docs/compiler.md, "Integer inputs and outputs", empty tensors).
#include <fmt/format.h>

#include "import/import_onnx.h"
#include "import/importer.h"
#include "validate.h"
#include "vtpu/support/parallel.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace vtpu::compiler {

mlir::OwningOpRef<mlir::ModuleOp> import_onnx(mlir::MLIRContext& ctx, const std::filesystem::path& model,
                                              const CompileOptions& options) {
  return onnx_import::Importer(ctx, model, options).run();
}

}  // namespace vtpu::compiler

namespace vtpu::compiler::onnx_import {

mlir::OwningOpRef<mlir::ModuleOp> Importer::run() {
  load();
  opset_18_as_17(file_.proto(), path_);
  if (opset_ == 18) opset_ = 17;
  fix_inputs(file_.proto(), opt_.fixed, opt_.shapes);  // fixed inputs are initializers from here on
  validate_onnx(file_.proto(), path_, opt_.batch, opt_.shapes, &file_.outside(), &elem_types_);  // compiler/validate: nothing below sees a model onnxruntime would refuse
  // Owned from here: a user error thrown below (an unsupported node, a bad attribute) must
  // not leak the half-built module.
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(b_.getUnknownLoc());
  // The initializers' values, each read once; the proto's bytes (small initializers; large
  // ones are read from the mapped file, model_file.h) are released once read.
  auto& inits = *file_.proto().mutable_graph()->mutable_initializer();
  std::vector<Constant> values = read_initializers(inits);
  for (int i = 0; i < inits.size(); ++i) {
    auto& init = inits[i];
    constants_[init.name()] = std::move(values[size_t(i)]);
    if (init.has_raw_data()) {
      std::string().swap(*init.mutable_raw_data());
      init.clear_raw_data();
    }
  }
  mlir::func::FuncOp fn = declare_inputs(*module);
  // A constant is released once the last node that reads it is imported: a layer's weights
  // are not held as floats beside their MLIR attribute (ResNet-50: 100 MB less memory to
  // touch). Graph outputs are kept: collect_outputs reads them at the end.
  // A node's reads include what its subgraphs (If's branches) read from outside them.
  std::vector<std::vector<std::string>> reads;
  for (const auto& node : file_.proto().graph().node()) {
    reads.push_back(names_read(node));
    for (const auto& in : reads.back()) ++readers_[in];
  }
  for (const auto& out : file_.proto().graph().output()) graph_outputs_.insert(out.name());
  for (int i = 0; i < file_.proto().graph().node_size(); ++i) {
    import_node(file_.proto().graph().node(i));
    for (const auto& in : reads[size_t(i)])
      if (--readers_[in] == 0 && !graph_outputs_.count(in)) constants_.erase(in);
  }
  GraphOutputs outs = collect_outputs();
  b_.create<mlir::func::ReturnOp>(b_.getUnknownLoc(), outs.values);
  remove_unused(&fn.getBody().front());
  fn.setType(b_.getFunctionType(fn.getArgumentTypes(), outs.types));
  annotate(fn, outs);
  if (mlir::failed(mlir::verify(*module)))
    throw InternalError("the importer built invalid TOSA for " + path_.string());
  return module;
}

// The initializers' values in order, read in two halves of the bytes on two threads where
// VTPU_THREADS allows (vtpu/support/parallel.h): most of the time goes into the first touch of
// the fresh memory the values are copied to (a model's weights, 100 MB for ResNet-50), which
// the second processor can share. An error is the first half's before the second's, so the
// first bad initializer in file order, as when they are read one by one.
std::vector<Constant> Importer::read_initializers(const google::protobuf::RepeatedPtrField<onnx::TensorProto>& inits) {
  std::vector<Constant> values(size_t(inits.size()));
  auto bytes = [this](const onnx::TensorProto& t) {
    return double(file_.raw_data(t).size()) + 4.0 * (t.float_data_size() + t.int32_data_size()) + 8.0 * t.int64_data_size();
  };
  double total = 0, first = 0;
  for (const auto& t : inits) total += bytes(t);
  int bounds[3] = {0, 0, inits.size()};
  while (bounds[1] < inits.size() && 2 * first < total) first += bytes(inits[bounds[1]++]);
  // A byte copied into fresh memory costs about what parallel_for counts a multiply-add.
  parallel_for(2, total / 2, [&](int64_t lo, int64_t hi) {
    for (int i = bounds[lo]; i < bounds[hi]; ++i) values[size_t(i)] = read_tensor(inits[i]);
  });
  return values;
}

// @main with one argument per graph input that is not an initializer (images NHWC, integer
// inputs i32), the builder at its entry block.
mlir::func::FuncOp Importer::declare_inputs(mlir::ModuleOp module) {
  const onnx::GraphProto& g = file_.proto().graph();
  std::vector<mlir::Type> in_types;
  std::vector<std::string> in_names;
  std::vector<std::vector<int64_t>> in_shapes;
  for (const auto& in : g.input()) {
    if (constants_.count(in.name())) continue;
    auto shape = input_shape(in);
    if (Tensor{Value(), shape}.empty()) {  // no data: a program tensor of 0 bytes, no argument
      values_[in.name()] = {Value(), shape, false};
      empty_io_.push_back({"input", in.name(), shape, is_integer_io(in.type().tensor_type().elem_type())});
      continue;
    }
    in_names.push_back(in.name());
    in_shapes.push_back(shape);
    // Integer inputs (token ids, quantized activations) enter as int32 program tensors.
    bool integer = is_integer_io(in.type().tensor_type().elem_type());
    if (integer) in_elem_[in.name()] = in.type().tensor_type().elem_type();
    auto stored = shape.size() == 4 ? to_nhwc(shape) : shape;
    in_types.push_back(integer ? mlir::RankedTensorType::get(stored, b_.getI32Type()) : tensor_type(stored));
  }
  if (in_names.empty() && empty_io_.empty())
    throw CompileError(fmt::format("{}: the model has no inputs (every graph input is an initializer); vtpu runs models "
                                   "that take data",
                                   path_.string()));

  b_.setInsertionPointToEnd(module.getBody());
  auto fn = b_.create<mlir::func::FuncOp>(b_.getUnknownLoc(), "main", b_.getFunctionType(in_types, {}));
  mlir::Block* entry = fn.addEntryBlock();
  b_.setInsertionPointToStart(entry);
  for (size_t i = 0; i < in_names.size(); ++i) {
    Tensor t{entry->getArgument(unsigned(i)), in_shapes[i], in_shapes[i].size() == 4};
    if (mlir::cast<mlir::RankedTensorType>(t.value.getType()).getElementType().isInteger(32)) {
      int_args_[in_names[i]] = t;  // converted to the activation domain on first use (input())
      fn_ = fn;
      arg_index_[in_names[i]] = unsigned(i);
      // The range INT8 calibration draws samples from: the element type's (ids: the
      // table's rows, set by the Gather that reads them).
      int et = in_elem_[in_names[i]];
      int64_t lo = et == onnx::TensorProto::INT8 ? -128 : et == onnx::TensorProto::INT16 ? -32768 : 0;
      int64_t hi = et == onnx::TensorProto::INT8 ? 127 : et == onnx::TensorProto::INT16 ? 32767
                   : et == onnx::TensorProto::UINT16 ? 65535 : et == onnx::TensorProto::BOOL ? 1 : 255;
      fn.setArgAttr(unsigned(i), tpu::kIntLoAttr, b_.getI64IntegerAttr(lo));
      fn.setArgAttr(unsigned(i), tpu::kIntHiAttr, b_.getI64IntegerAttr(hi));
    } else {
      values_[in_names[i]] = t;
    }
    fn.setArgAttr(unsigned(i), tpu::kNameAttr, b_.getStringAttr(in_names[i]));
    if (in_shapes[i].size() == 4) fn.setArgAttr(unsigned(i), tpu::kNhwcAttr, b_.getUnitAttr());
  }
  return fn;
}

namespace {
// isa::TensorInfo::model_type of an output of ONNX element type `et`: empty for float32,
// bfloat16 and int32, which the program's tensors hold as they are.
std::string model_type_of(int et) {
  switch (et) {
    case onnx::TensorProto::FLOAT16: return "float16";
    case onnx::TensorProto::DOUBLE: return "float64";
    case onnx::TensorProto::INT64: return "int64";
    case onnx::TensorProto::INT16: return "int16";
    case onnx::TensorProto::INT8: return "int8";
    case onnx::TensorProto::UINT64: return "uint64";
    case onnx::TensorProto::UINT32: return "uint32";
    case onnx::TensorProto::UINT16: return "uint16";
    case onnx::TensorProto::UINT8: return "uint8";
    case onnx::TensorProto::BOOL: return "bool";
    default: return "";
  }
}
}  // namespace

// The graph outputs in order; empty ones are recorded in empty_io_ instead.
Importer::GraphOutputs Importer::collect_outputs() {
  GraphOutputs r;
  for (const auto& out : file_.proto().graph().output()) {
    bool nhwc = false;
    Value v = graph_output(out, nhwc);
    if (!v) continue;
    r.values.push_back(v);
    r.types.push_back(v.getType());
    r.names.push_back(out.name());
    r.nhwc.push_back(nhwc);
    r.model_types.push_back(model_type_of(out.type().has_tensor_type() ? out.type().tensor_type().elem_type() : 0));
  }
  return r;
}

// The value a graph output returns (none for an empty one), `nhwc` set for an image.
Value Importer::graph_output(const onnx::ValueInfoProto& out, bool& nhwc) {
  auto it = values_.find(out.name());
  if (it == values_.end() && int_args_.count(out.name()))
    fail(fmt::format("graph output '{}' is a graph input; the compiler needs at least one operator between them",
                     out.name()),
         out.name());
  if (it == values_.end() && constants_.count(out.name())) {
    // A constant output (a Shape of a static shape, a folded computation): its values
    // are preloaded into the output's bytes; an integer one as int32.
    const Constant& c = constants_.at(out.name());
    int et = out.type().has_tensor_type() ? out.type().tensor_type().elem_type() : 0;
    const std::vector<int64_t>& shape = c.shape;  // a scalar stays rank 0
    mlir::Location l = mlir::NameLoc::get(b_.getStringAttr(out.name()));
    Value v;
    if (is_integer_io(et)) {
      auto type = mlir::RankedTensorType::get(shape, b_.getI32Type());
      std::vector<int32_t> d;
      for (size_t i = 0; i < c.data.size(); ++i) {
        int64_t x = c.int_at(i);
        if (x < INT32_MIN || x > INT32_MAX)
          fail(fmt::format("graph output '{}' holds {} at element {}, which the program's int32 outputs cannot hold", out.name(),
                           x, i),
               out.name());
        d.push_back(int32_t(x));
      }
      v = b_.create<mlir::tosa::ConstOp>(l, type, mlir::DenseElementsAttr::get(type, llvm::ArrayRef<int32_t>(d)));
    } else {
      v = constant(shape, c.data, l);
    }
    values_[out.name()] = {v, shape, false};
    it = values_.find(out.name());
  }
  if (it == values_.end()) fail(fmt::format("graph output '{}' is never produced", out.name()), out.name());
  if (it->second.empty()) {
    int et = out.type().has_tensor_type() ? out.type().tensor_type().elem_type() : 0;
    empty_io_.push_back({"output", out.name(), it->second.shape, is_integer_io(et)});
    return Value();
  }
  // Images leave in the chip's NHWC layout, like they enter (the runtime transposes).
  Value v = it->second.value;
  int out_et = out.type().has_tensor_type() ? out.type().tensor_type().elem_type() : 0;
  if (!is_float_type(out_et) && out_et != onnx::TensorProto::UNDEFINED) {
    int et = out.type().tensor_type().elem_type();
    if (!is_integer_io(et))
      fail(fmt::format("graph output '{}' has element type {}; outputs must be float32, float16, bfloat16, double, bool or "
                       "an integer type (int64, int32, int16, uint16, int8, uint8)",
                       out.name(), onnx::TensorProto::DataType_Name(onnx::TensorProto::DataType(et))),
           out.name());
    // An integer output leaves as an int32 program tensor (a constant one already is).
    auto vt = mlir::cast<mlir::RankedTensorType>(v.getType());
    if (!vt.getElementType().isInteger(32))
      v = b_.create<tpu::CastOp>(mlir::NameLoc::get(b_.getStringAttr(out.name())),
                                 mlir::RankedTensorType::get(vt.getShape(), b_.getI32Type()), v,
                                 b_.getStringAttr("output " + out.name()));
  }
  nhwc = it->second.nhwc;
  return v;
}

// Values no output needs (a Sqrt a Div looked through, unused node outputs) go, so the
// lowering's patterns see single users where the model has them.
void Importer::remove_unused(mlir::Block* entry) {
  for (bool erased = true; erased;) {
    erased = false;
    for (mlir::Operation& op : llvm::make_early_inc_range(llvm::reverse(entry->getOperations())))
      if (!mlir::isa<mlir::func::ReturnOp>(op) && op.use_empty() && mlir::isMemoryEffectFree(&op)) op.erase(), erased = true;
  }
}

// What the program needs to know about @main's interface: empty inputs and outputs
// ([role, name, dims..., "int32" or "float"] each, declared by codegen) and each result's name
// and layout.
void Importer::annotate(mlir::func::FuncOp fn, const GraphOutputs& outs) {
  std::vector<mlir::Attribute> empties;
  for (const EmptyIo& e : empty_io_) {
    std::vector<mlir::Attribute> fields{b_.getStringAttr(e.role), b_.getStringAttr(e.name), b_.getDenseI64ArrayAttr(e.shape),
                                        b_.getBoolAttr(e.integer)};
    empties.push_back(b_.getArrayAttr(fields));
  }
  if (!empties.empty()) fn->setAttr(tpu::kEmptyTensorsAttr, b_.getArrayAttr(empties));
  for (size_t i = 0; i < outs.names.size(); ++i) {
    fn.setResultAttr(unsigned(i), tpu::kNameAttr, b_.getStringAttr(outs.names[i]));
    if (outs.nhwc[i]) fn.setResultAttr(unsigned(i), tpu::kNhwcAttr, b_.getUnitAttr());
    if (!outs.model_types[i].empty())
      fn.setResultAttr(unsigned(i), tpu::kModelTypeAttr, b_.getStringAttr(outs.model_types[i]));
  }
}

void Importer::fail(const std::string& what, const std::string& node) const {
  throw CompileError(fmt::format("{}: node '{}': {}", path_.string(), node, what));
}

void Importer::load() {
  if (!file_.read(path_))
    throw UserError(fmt::format("{}: not a valid ONNX model (protobuf parse failed)", path_.string()));
  for (const auto& o : file_.proto().opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = o.version();
  // From opset 7 on, the supported operators mean the same as in 17 apart from what the
  // importer checks per node (Clip's bounds as attributes before 11, Softmax's axis before 13,
  // BatchNormalization's `spatial` before 9); opset 18 is read as 17 (opset.cpp).
  if (opset_ && (opset_ < 7 || opset_ > 18))
    throw CompileError(fmt::format("{}: opset {} is not supported (7 to 18); convert the model with "
                                   "onnx.version_converter",
                                   path_.string(), opset_));
}

std::vector<int64_t> Importer::input_shape(const onnx::ValueInfoProto& in) {
  auto fail_input = [&](const std::string& what) {
    throw CompileError(fmt::format("{}: input '{}': {}", path_.string(), in.name(), what));
  };
  if (!in.type().has_tensor_type()) fail_input("only tensor inputs are supported");
  const auto& t = in.type().tensor_type();
  if (!is_float_type(t.elem_type()) && !is_integer_io(t.elem_type()))
    fail_input(fmt::format("element type {} is not supported: model inputs must be float32, float16, bfloat16, double, bool "
                           "or an integer type (int64, int32, int16, int8 and their unsigned forms; carried as int32)",
                           onnx::TensorProto::DataType_Name(onnx::TensorProto::DataType(t.elem_type()))));
  std::vector<int64_t> shape = input_dims(in, opt_.batch, opt_.shapes);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] >= 0) continue;
    std::vector<std::string> example;
    for (const auto& d : t.shape().dim())
      example.push_back(d.has_dim_value() ? std::to_string(d.dim_value()) : d.dim_param().empty() ? "N" : d.dim_param());
    example[0] = std::to_string(shape[0]);
    fail_input(fmt::format("dimension {} is symbolic ('{}' in {}) and the compiler needs static shapes; give every "
                           "dimension with --shape {}={}, with numbers for the names",
                           i, t.shape().dim(int(i)).dim_param(), model_dims(in), in.name(), fmt::join(example, "x")));
  }
  return shape;
}

}  // namespace vtpu::compiler::onnx_import
