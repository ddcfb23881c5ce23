// ONNX (libonnx protobuf) -> upstream TOSA in MLIR.
//
// Layout choice happens here: 4-D activations are kept NHWC, the layout the chip stores
// images in (pixels x channels), so convolutions and pools map straight onto TOSA's NHWC
// ops. A 4-D model input is declared NHWC (the runtime transposes NCHW data when it places
// it); where ONNX semantics depend on NCHW order (Flatten/Reshape of an image) the importer
// inserts a tosa.transpose, which the lowering folds into the next layer's weights.
// Every op gets the ONNX node's name as its location; it becomes the program's tag.
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <onnx/onnx_pb.h>
#include <set>

#include "import.h"
#include "validate.h"
#include "vtpu/numerics/float.h"
#include "tpu_dialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace vtpu::compiler {
namespace {

using mlir::Value;

struct Tensor {
  Value value;                 // none for an empty tensor (a 0 in its shape): no data, no code
  std::vector<int64_t> shape;  // logical ONNX shape (NCHW for images)
  bool nhwc = false;           // the MLIR value is the NHWC transpose of `shape`
  bool empty() const { return std::find(shape.begin(), shape.end(), 0) != shape.end(); }
};

// An initializer: float data and its shape.
struct Constant {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

class Importer {
 public:
  Importer(mlir::MLIRContext& ctx, const std::filesystem::path& path, const CompileOptions& opt)
      : ctx_(ctx), b_(&ctx), path_(path), opt_(opt) {}

  mlir::OwningOpRef<mlir::ModuleOp> run() {
    load();
    validate_onnx(model_, path_, opt_.batch);  // compiler/validate: nothing below sees a model onnxruntime would refuse
    auto module = mlir::ModuleOp::create(b_.getUnknownLoc());
    const onnx::GraphProto& g = model_.graph();
    for (const auto& init : g.initializer()) {
      constants_[init.name()] = read_tensor(init);
      if (is_integer_type(init.data_type())) int_consts_.insert(init.name());
    }

    // Inputs: graph inputs that are not initializers.
    std::vector<mlir::Type> in_types;
    std::vector<std::string> in_names;
    std::vector<std::vector<int64_t>> in_shapes;
    for (const auto& in : g.input()) {
      if (constants_.count(in.name())) continue;
      auto shape = input_shape(in);
      if (Tensor{Value(), shape}.empty()) {  // no data: a program tensor of 0 bytes, no argument
        values_[in.name()] = {Value(), shape, false};
        empty_io_.push_back({"input", in.name(), shape, is_integer_type(in.type().tensor_type().elem_type())});
        continue;
      }
      in_names.push_back(in.name());
      in_shapes.push_back(shape);
      // Integer inputs (token ids, quantized activations) enter as int32 program tensors.
      bool integer = is_integer_type(in.type().tensor_type().elem_type());
      if (integer) in_elem_[in.name()] = in.type().tensor_type().elem_type();
      auto stored = shape.size() == 4 ? to_nhwc(shape) : shape;
      in_types.push_back(integer ? mlir::RankedTensorType::get(stored, b_.getI32Type()) : tensor_type(stored));
    }
    if (in_names.empty() && empty_io_.empty()) fail("the model has no inputs", g.name());

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
                     : et == onnx::TensorProto::UINT16 ? 65535 : 255;
        fn.setArgAttr(unsigned(i), "vtpu.int_lo", b_.getI64IntegerAttr(lo));
        fn.setArgAttr(unsigned(i), "vtpu.int_hi", b_.getI64IntegerAttr(hi));
      } else {
        values_[in_names[i]] = t;
      }
      fn.setArgAttr(unsigned(i), "vtpu.name", b_.getStringAttr(in_names[i]));
      if (in_shapes[i].size() == 4) fn.setArgAttr(unsigned(i), "vtpu.nhwc", b_.getUnitAttr());
    }
    for (const auto& node : g.node()) import_node(node);

    std::vector<Value> outs;
    std::vector<mlir::Type> out_types;
    std::vector<std::string> out_names;
    std::vector<bool> out_nhwc;
    for (const auto& out : g.output()) {
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
        if (is_integer_type(et)) {
          auto type = mlir::RankedTensorType::get(shape, b_.getI32Type());
          std::vector<int32_t> d(c.data.begin(), c.data.end());
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
        empty_io_.push_back({"output", out.name(), it->second.shape, is_integer_type(et)});
        continue;
      }
      // Images leave in the chip's NHWC layout, like they enter (the runtime transposes).
      Value v = it->second.value;
      int out_et = out.type().has_tensor_type() ? out.type().tensor_type().elem_type() : 0;
      if (!is_float_type(out_et) && out_et != onnx::TensorProto::UNDEFINED) {
        int et = out.type().tensor_type().elem_type();
        if (!is_integer_type(et))
          fail(fmt::format("graph output '{}' has element type {}; outputs must be float32, float16, bfloat16, double or "
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
      outs.push_back(v);
      out_types.push_back(v.getType());
      out_names.push_back(out.name());
      out_nhwc.push_back(it->second.nhwc);
    }
    b_.create<mlir::func::ReturnOp>(b_.getUnknownLoc(), outs);
    // Values no output needs (a Sqrt a Div looked through, unused node outputs) go, so the
    // lowering's patterns see single users where the model has them.
    for (bool erased = true; erased;) {
      erased = false;
      for (mlir::Operation& op : llvm::make_early_inc_range(llvm::reverse(entry->getOperations())))
        if (!mlir::isa<mlir::func::ReturnOp>(op) && op.use_empty() && mlir::isMemoryEffectFree(&op)) op.erase(), erased = true;
    }
    fn.setType(b_.getFunctionType(in_types, out_types));
    // Empty inputs and outputs: [role, name, dims..., "int32" or "float"] each, declared by codegen.
    std::vector<mlir::Attribute> empties;
    for (const EmptyIo& e : empty_io_) {
      std::vector<mlir::Attribute> fields{b_.getStringAttr(e.role), b_.getStringAttr(e.name), b_.getDenseI64ArrayAttr(e.shape),
                                          b_.getBoolAttr(e.integer)};
      empties.push_back(b_.getArrayAttr(fields));
    }
    if (!empties.empty()) fn->setAttr("vtpu.empty_tensors", b_.getArrayAttr(empties));
    for (size_t i = 0; i < out_names.size(); ++i) {
      fn.setResultAttr(unsigned(i), "vtpu.name", b_.getStringAttr(out_names[i]));
      if (out_nhwc[i]) fn.setResultAttr(unsigned(i), "vtpu.nhwc", b_.getUnitAttr());
    }
    if (mlir::failed(mlir::verify(module)))
      throw InternalError("the importer built invalid TOSA for " + path_.string());
    return module;
  }

 private:
  [[noreturn]] void fail(const std::string& what, const std::string& node) const {
    throw CompileError(fmt::format("{}: node '{}': {}", path_.string(), node, what));
  }

  void load() {
    std::ifstream f(path_, std::ios::binary);
    if (!f) throw UserError(fmt::format("{}: cannot open the model (does the file exist?)", path_.string()));
    if (!model_.ParseFromIstream(&f))
      throw UserError(fmt::format("{}: not a valid ONNX model (protobuf parse failed)", path_.string()));
    for (const auto& o : model_.opset_import())
      if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = o.version();
    // From opset 7 on, the supported operators mean the same as in 17 apart from what the
    // importer checks per node (Clip's bounds as attributes before 11, Softmax's axis before 13,
    // BatchNormalization's `spatial` before 9).
    if (opset_ && (opset_ < 7 || opset_ > 17))
      throw CompileError(fmt::format("{}: opset {} is not supported (7 to 17); convert the model with "
                                     "onnx.version_converter",
                                     path_.string(), opset_));
  }

  std::vector<int64_t> input_shape(const onnx::ValueInfoProto& in) {
    if (!in.type().has_tensor_type())
      fail("only tensor inputs are supported", in.name());
    const auto& t = in.type().tensor_type();
    if (!is_float_type(t.elem_type()) && !is_integer_type(t.elem_type()))
      fail(fmt::format("input '{}' has element type {}, which is not supported: model inputs must be float32, float16, "
                       "bfloat16, double or an integer type (int64, int32, int16, int8 and their unsigned forms; carried as int32)",
                       in.name(), onnx::TensorProto::DataType_Name(onnx::TensorProto::DataType(t.elem_type()))),
           in.name());
    std::vector<int64_t> shape;
    for (int i = 0; i < t.shape().dim_size(); ++i) {
      const auto& d = t.shape().dim(i);
      int64_t v = d.has_dim_value() ? d.dim_value() : -1;
      if (i == 0 && (opt_.batch > 0 || v < 0)) v = opt_.batch > 0 ? opt_.batch : 1;
      if (v < 0) fail(fmt::format("dimension {} of input '{}' is symbolic; the compiler needs static shapes", i, in.name()), in.name());
      shape.push_back(v);
    }
    return shape;
  }

  Constant read_tensor(const onnx::TensorProto& t) {
    Constant c;
    for (int64_t d : t.dims()) c.shape.push_back(d);
    int64_t n = numel(c.shape);
    std::string raw;
    if (t.data_location() == onnx::TensorProto::EXTERNAL) {
      std::string loc;
      int64_t offset = 0, length = -1;
      for (const auto& kv : t.external_data()) {
        if (kv.key() == "location") loc = kv.value();
        else if (kv.key() == "offset") offset = std::stoll(kv.value());
        else if (kv.key() == "length") length = std::stoll(kv.value());
      }
      auto file = path_.parent_path() / loc;
      std::ifstream f(file, std::ios::binary);
      if (!f) fail(fmt::format("external data file '{}' cannot be opened", file.string()), t.name());
      f.seekg(offset);
      raw.assign(size_t(length >= 0 ? length : n * 8), '\0');
      f.read(raw.data(), std::streamsize(raw.size()));
      raw.resize(size_t(f.gcount()));
    } else if (t.has_raw_data()) {
      raw = t.raw_data();
    }
    c.data.resize(size_t(n));
    auto from_raw = [&](auto type_tag) {
      using T = decltype(type_tag);
      if (raw.size() != size_t(n) * sizeof(T))
        fail(fmt::format("initializer holds {} bytes, its shape needs {}", raw.size(), size_t(n) * sizeof(T)), t.name());
      for (int64_t i = 0; i < n; ++i) {
        T v;
        std::memcpy(&v, raw.data() + size_t(i) * sizeof(T), sizeof(T));
        c.data[size_t(i)] = float(v);
      }
    };
    switch (t.data_type()) {
      case onnx::TensorProto::FLOAT:
        if (!raw.empty()) from_raw(float{});
        else if (t.float_data_size() == n) for (int64_t i = 0; i < n; ++i) c.data[size_t(i)] = t.float_data(int(i));
        else fail("float initializer has the wrong number of values", t.name());
        break;
      // Models exported in half or double precision: the values as fp32 (the program's
      // precision, bf16 or int8, is chosen by --dtype as for fp32 models).
      case onnx::TensorProto::FLOAT16:
      case onnx::TensorProto::BFLOAT16: {
        bool half = t.data_type() == onnx::TensorProto::FLOAT16;
        std::vector<uint16_t> bits(static_cast<size_t>(n));
        if (!raw.empty()) {
          if (raw.size() != size_t(n) * 2)
            fail(fmt::format("initializer holds {} bytes, its shape needs {}", raw.size(), size_t(n) * 2), t.name());
          std::memcpy(bits.data(), raw.data(), raw.size());
        } else if (t.int32_data_size() == n) {  // one 16-bit pattern per int32
          for (int64_t i = 0; i < n; ++i) bits[size_t(i)] = uint16_t(t.int32_data(int(i)));
        } else {
          fail("float16 initializer has the wrong number of values", t.name());
        }
        for (int64_t i = 0; i < n; ++i)
          c.data[size_t(i)] = numerics::f32_from_bits(half ? numerics::f16_to_f32_bits(bits[size_t(i)])
                                                           : numerics::bf16_to_f32_bits(bits[size_t(i)]));
        break;
      }
      case onnx::TensorProto::DOUBLE:
        if (!raw.empty()) from_raw(double{});
        else if (t.double_data_size() == n) for (int64_t i = 0; i < n; ++i) c.data[size_t(i)] = float(t.double_data(int(i)));
        else fail("double initializer has the wrong number of values", t.name());
        break;
      case onnx::TensorProto::INT64:
        if (!raw.empty()) from_raw(int64_t{});
        else for (int64_t i = 0; i < n && i < t.int64_data_size(); ++i) c.data[size_t(i)] = float(t.int64_data(int(i)));
        break;
      case onnx::TensorProto::INT32:
        if (!raw.empty()) from_raw(int32_t{});
        else for (int64_t i = 0; i < n && i < t.int32_data_size(); ++i) c.data[size_t(i)] = float(t.int32_data(int(i)));
        break;
      case onnx::TensorProto::INT8:  // quantized weights and zero points (int32_data holds them unpacked)
        if (!raw.empty()) from_raw(int8_t{});
        else for (int64_t i = 0; i < n && i < t.int32_data_size(); ++i) c.data[size_t(i)] = float(int8_t(t.int32_data(int(i))));
        break;
      case onnx::TensorProto::UINT8:
        if (!raw.empty()) from_raw(uint8_t{});
        else for (int64_t i = 0; i < n && i < t.int32_data_size(); ++i) c.data[size_t(i)] = float(uint8_t(t.int32_data(int(i))));
        break;
      default:
        fail(fmt::format("initializer element type {} is not supported (float, float16, bfloat16, double, int64, int32, int8, uint8)",
                         onnx::TensorProto::DataType_Name(onnx::TensorProto::DataType(t.data_type()))),
             t.name());
    }
    return c;
  }

  // Floating element types a model's inputs and outputs may have: given and returned as
  // float32, computed in the program's precision.
  static bool is_float_type(int t) {
    return t == onnx::TensorProto::FLOAT || t == onnx::TensorProto::FLOAT16 || t == onnx::TensorProto::BFLOAT16 ||
           t == onnx::TensorProto::DOUBLE;
  }

  // ONNX integer element types carried as int32: exact for the narrow ones; for int64,
  // uint32 and uint64 (token ids, small counts) the runtime checks every value it places
  // and refuses one int32 cannot hold.
  static bool is_integer_type(int t) {
    return t == onnx::TensorProto::INT64 || t == onnx::TensorProto::INT32 || t == onnx::TensorProto::INT16 ||
           t == onnx::TensorProto::UINT16 || t == onnx::TensorProto::INT8 || t == onnx::TensorProto::UINT8 ||
           t == onnx::TensorProto::UINT32 || t == onnx::TensorProto::UINT64;
  }

  mlir::RankedTensorType tensor_type(const std::vector<int64_t>& shape) {
    return mlir::RankedTensorType::get(shape, b_.getF32Type());
  }
  static std::vector<int64_t> to_nhwc(const std::vector<int64_t>& s) { return {s[0], s[2], s[3], s[1]}; }

  Value constant(const std::vector<int64_t>& shape, const std::vector<float>& data, mlir::Location loc) {
    auto type = tensor_type(shape);
    auto attr = mlir::DenseElementsAttr::get(type, llvm::ArrayRef<float>(data));
    return b_.create<mlir::tosa::ConstOp>(loc, type, attr);
  }

  Value transpose(Value v, const std::vector<int32_t>& perm, mlir::Location loc) {
    auto in = mlir::cast<mlir::RankedTensorType>(v.getType());
    std::vector<int64_t> out;
    for (int32_t p : perm) out.push_back(in.getShape()[size_t(p)]);
    auto ptype = mlir::RankedTensorType::get({int64_t(perm.size())}, b_.getI32Type());
    Value perms = b_.create<mlir::tosa::ConstOp>(loc, ptype, mlir::DenseElementsAttr::get(ptype, llvm::ArrayRef<int32_t>(perm)));
    return b_.create<mlir::tosa::TransposeOp>(loc, tensor_type(out), v, perms);
  }
  Value to_nchw_value(const Tensor& t, mlir::Location loc) { return transpose(t.value, {0, 3, 1, 2}, loc); }

  Value reshape(Value v, const std::vector<int64_t>& shape, mlir::Location loc) {
    return b_.create<mlir::tosa::ReshapeOp>(loc, tensor_type(shape), v, b_.getDenseI64ArrayAttr(shape));
  }

  const onnx::AttributeProto* attr(const onnx::NodeProto& n, const std::string& name) {
    for (const auto& a : n.attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  int64_t attr_i(const onnx::NodeProto& n, const std::string& name, int64_t dflt) {
    auto* a = attr(n, name);
    return a ? a->i() : dflt;
  }
  float attr_f(const onnx::NodeProto& n, const std::string& name, float dflt) {
    auto* a = attr(n, name);
    return a ? a->f() : dflt;
  }
  std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const std::string& name, std::vector<int64_t> dflt) {
    auto* a = attr(n, name);
    if (!a) return dflt;
    return {a->ints().begin(), a->ints().end()};
  }
  // An attribute with one value per spatial axis (`rank` of them), `dflt` on each when absent.
  std::vector<int64_t> per_axis(const onnx::NodeProto& n, const std::string& name, int64_t dflt, size_t rank) {
    auto v = attr_ints(n, name, std::vector<int64_t>(rank, dflt));
    if (v.size() != rank) fail(fmt::format("{} {} must have {} values for a {}-D input", n.op_type(), name, rank, rank), node_name(n));
    return v;
  }
  std::string attr_s(const onnx::NodeProto& n, const std::string& name, std::string dflt) {
    auto* a = attr(n, name);
    return a ? a->s() : dflt;
  }
  void only_attrs(const onnx::NodeProto& n, std::initializer_list<const char*> allowed) {
    for (const auto& a : n.attribute()) {
      bool ok = false;
      for (const char* x : allowed) ok |= a.name() == x;
      if (!ok) fail(fmt::format("{} attribute '{}' is not supported", n.op_type(), a.name()), node_name(n));
    }
  }

  std::string node_name(const onnx::NodeProto& n) const {
    return n.name().empty() ? n.op_type() + "_" + (n.output_size() ? n.output(0) : std::string()) : n.name();
  }

  const Tensor& input(const onnx::NodeProto& n, int i) {
    if (i >= n.input_size() || n.input(i).empty()) fail(fmt::format("{} needs input {}", n.op_type(), i), node_name(n));
    auto it = values_.find(n.input(i));
    if (it != values_.end()) return it->second;
    if (auto ia = int_args_.find(n.input(i)); ia != int_args_.end()) {
      // An integer graph input used as an activation: converted on chip from its int32 tensor.
      Tensor t = ia->second;
      auto it32 = mlir::cast<mlir::RankedTensorType>(t.value.getType());
      mlir::Location l = mlir::NameLoc::get(b_.getStringAttr("input " + n.input(i)));
      t.value = b_.create<tpu::CastOp>(l, tensor_type(it32.getShape().vec()), t.value, b_.getStringAttr("input " + n.input(i)));
      values_[n.input(i)] = t;
      return values_[n.input(i)];
    }
    auto c = constants_.find(n.input(i));
    if (c == constants_.end()) fail(fmt::format("input '{}' is not produced by any node", n.input(i)), node_name(n));
    mlir::Location loc = mlir::NameLoc::get(b_.getStringAttr(n.input(i)));
    values_[n.input(i)] = {constant(c->second.shape, c->second.data, loc), c->second.shape, false};
    return values_[n.input(i)];
  }
  const Constant& const_input(const onnx::NodeProto& n, int i, const char* what) {
    auto c = constants_.find(n.input(i));
    if (c == constants_.end())
      fail(fmt::format("{} must be a constant (an initializer) for the vtpu compiler", what), node_name(n));
    return c->second;
  }
  void define(const onnx::NodeProto& n, Tensor t) { values_[n.output(0)] = std::move(t); }

  // ---- operators ----

  // A 1-D Conv, ConvTranspose, MaxPool or AveragePool ([N, C, L] input) is the 2-D operator
  // over a height-1 image: the node is rewritten with a leading 1 in its spatial attributes
  // (pads [b, e] -> [0, b, 0, e]), a [N, C, 1, L] input and a [.., 1, K] kernel, imported,
  // and its [N, C', 1, L'] output reshaped back.
  bool lift_1d(const onnx::NodeProto& n) {
    const std::string& op = n.op_type();
    if (op != "Conv" && op != "ConvTranspose" && op != "MaxPool" && op != "AveragePool") return false;
    if (n.input_size() < 1 || !values_.count(n.input(0)) || values_.at(n.input(0)).shape.size() != 3) return false;
    if (n.output_size() > 1 && !n.output(1).empty()) return false;  // MaxPool's Indices: refused as usual
    mlir::Location loc = mlir::NameLoc::get(b_.getStringAttr(node_name(n)));
    const std::string tag = "#as_2d";
    onnx::NodeProto m = n;
    if (m.name().empty()) m.set_name(node_name(n));
    Tensor x = values_.at(n.input(0));
    std::vector<int64_t> x4{x.shape[0], x.shape[1], 1, x.shape[2]};
    values_[n.input(0) + tag] = {reshape(x.value, x4, loc), x4, false};
    m.set_input(0, n.input(0) + tag);
    if (op == "Conv" || op == "ConvTranspose") {
      const Constant& w = const_input(n, 1, op == "Conv" ? "Conv weight" : "ConvTranspose weight");
      if (w.shape.size() != 3) fail(fmt::format("the 1-D {} weight must be 3-D, not {}-D", op, w.shape.size()), node_name(n));
      constants_[n.input(1) + tag] = {{w.shape[0], w.shape[1], 1, w.shape[2]}, w.data};
      m.set_input(1, n.input(1) + tag);
    }
    for (auto& a : *m.mutable_attribute()) {
      auto* v = a.mutable_ints();
      if (a.name() == "kernel_shape" || a.name() == "strides" || a.name() == "dilations" || a.name() == "output_shape")
        v->Add(1), std::rotate(v->begin(), v->end() - 1, v->end());
      else if (a.name() == "output_padding")
        v->Add(0), std::rotate(v->begin(), v->end() - 1, v->end());
      else if (a.name() == "pads" && v->size() == 2) {
        int64_t begin = v->Get(0), end = v->Get(1);
        v->Clear();
        for (int64_t p : {int64_t(0), begin, int64_t(0), end}) v->Add(p);
      }
    }
    m.set_output(0, n.output(0) + tag);
    while (m.output_size() > 1) m.mutable_output()->RemoveLast();
    import_node(m);
    const Tensor& y = values_.at(m.output(0));
    std::vector<int64_t> y3{y.shape[0], y.shape[1], y.shape[3]};
    define(n, {reshape(y.nhwc ? to_nchw_value(y, loc) : y.value, y3, loc), y3, false});
    return true;
  }

  // A node reading an empty tensor: shape-only operators and elementwise ones give empty
  // outputs (nothing to compute); Concat drops its empty inputs. Anything else is refused.
  bool empty_input(const onnx::NodeProto& n) {
    bool any = false;
    for (int i = 0; i < n.input_size(); ++i)
      if (auto it = values_.find(n.input(i)); it != values_.end() && it->second.empty()) any = true;
    const std::string& op = n.op_type();
    // These work out their output shapes themselves and make empty outputs of empty inputs.
    static const std::set<std::string> kShapeOps = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Slice", "Split"};
    if (!any || kShapeOps.count(op)) return false;
    const Tensor& x = values_.at(n.input(0));
    if (op == "Concat") {
      onnx::NodeProto m = n;
      m.clear_input();
      std::vector<int64_t> shape;
      for (int i = 0; i < n.input_size(); ++i) {
        const Tensor& t = input(n, i);
        if (!t.empty()) m.add_input(n.input(i));
        else if (shape.empty()) shape = t.shape;
      }
      if (m.input_size() == 1) values_[n.output(0)] = input(m, 0);
      if (m.input_size() > 1) import_node(m);
      if (m.input_size() > 0) return true;
      int64_t axis = attr_i(n, "axis", 1);
      if (axis < 0) axis += int64_t(shape.size());
      shape[size_t(axis)] = 0;
      for (int i = 0; i < n.input_size(); ++i) shape[size_t(axis)] += input(n, i).shape[size_t(axis)];
      define(n, {Value(), shape, false});
      return true;
    }
    static const std::set<std::string> kSame = {"Identity", "Dropout", "Relu", "Sigmoid", "Tanh", "Erf", "Exp", "Reciprocal",
                                                "Sqrt", "Neg", "Clip", "LeakyRelu", "HardSigmoid", "Cast"};
    if (!kSame.count(op)) {
      std::string which;
      for (int i = 0; i < n.input_size(); ++i)
        if (auto it = values_.find(n.input(i)); it != values_.end() && it->second.empty())
          which = fmt::format("input '{}' of shape [{}]", n.input(i), fmt::join(it->second.shape, ", "));
      fail(fmt::format("{} of an empty tensor ({}) is not supported; Reshape, Concat and elementwise operators "
                       "take empty inputs",
                       op, which),
           node_name(n));
    }
    for (int i = 0; i < n.output_size(); ++i)
      if (!n.output(i).empty()) values_[n.output(i)] = {Value(), x.shape, false};
    return true;
  }

  // Constant nodes, and shape-only operators on constants (a transposed or reshaped weight,
  // as exporters write them), become constants at import: their users then see initializers.
  bool fold_constant(const onnx::NodeProto& n) {
    const std::string& op = n.op_type();
    if (op == "Constant") {
      Constant c;
      if (const auto* a = attr(n, "value")) {
        c = read_tensor(a->t());
        if (is_integer_type(a->t().data_type())) int_consts_.insert(n.output(0));
      }
      else if ((a = attr(n, "value_float"))) c = {{}, {a->f()}};
      else if ((a = attr(n, "value_floats"))) c = {{a->floats_size()}, {a->floats().begin(), a->floats().end()}};
      else if ((a = attr(n, "value_int"))) c = {{}, {float(a->i())}}, int_consts_.insert(n.output(0));
      else if ((a = attr(n, "value_ints"))) {
        int_consts_.insert(n.output(0));
        c.shape = {a->ints_size()};
        for (int64_t v : a->ints()) c.data.push_back(float(v));
      } else {
        fail("Constant needs a value, value_float(s) or value_int(s) attribute (sparse and string values are not supported)",
             node_name(n));
      }
      constants_[n.output(0)] = c;
      return true;
    }
    if (op == "Shape" || op == "Size") {  // shapes are static: a constant
      auto it = values_.find(n.input(0));
      const std::vector<int64_t>* shape = it != values_.end() ? &it->second.shape : nullptr;
      if (!shape)
        if (auto c = constants_.find(n.input(0)); c != constants_.end()) shape = &c->second.shape;
      if (!shape) return false;
      int64_t r = int64_t(shape->size()), start = attr_i(n, "start", 0), end = attr_i(n, "end", r);
      start = std::clamp<int64_t>(start < 0 ? start + r : start, 0, r), end = std::clamp<int64_t>(end < 0 ? end + r : end, 0, r);
      Constant c;
      int_consts_.insert(n.output(0));
      if (op == "Size") {
        c = {{}, {float(numel(*shape))}};
      } else {
        for (int64_t k = start; k < end; ++k) c.data.push_back(float((*shape)[size_t(k)]));
        c.shape = {int64_t(c.data.size())};
      }
      constants_[n.output(0)] = c;
      return true;
    }
    bool all_const = n.input_size() > 0;
    for (int i = 0; i < n.input_size(); ++i) all_const &= n.input(i).empty() || (constants_.count(n.input(i)) && !values_.count(n.input(i)));
    if (all_const && fold_arithmetic(n)) return true;
    static const std::set<std::string> kShapeOps = {"Identity", "Dropout", "Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze"};
    if (!kShapeOps.count(op) || n.input_size() < 1 || !constants_.count(n.input(0)) || values_.count(n.input(0))) return false;
    Constant c = constants_.at(n.input(0));
    int64_t r = int64_t(c.shape.size());
    if (op == "Transpose") {
      std::vector<int64_t> perm = attr_ints(n, "perm", {});
      if (perm.empty())
        for (int64_t k = r; k-- > 0;) perm.push_back(k);
      if (int64_t(perm.size()) != r) fail("perm does not match the constant's rank", node_name(n));
      std::vector<int64_t> shape, in_stride(size_t(r), 1);
      for (int64_t k = r - 2; k >= 0; --k) in_stride[size_t(k)] = in_stride[size_t(k + 1)] * c.shape[size_t(k + 1)];
      for (int64_t p : perm) {
        if (p < 0 || p >= r) fail(fmt::format("perm entry {} is out of range for a {}-D constant", p, r), node_name(n));
        shape.push_back(c.shape[size_t(p)]);
      }
      std::vector<float> out(c.data.size());
      std::vector<int64_t> idx(size_t(r), 0);
      for (size_t i = 0; i < out.size(); ++i) {
        int64_t src = 0;
        for (int64_t k = 0; k < r; ++k) src += idx[size_t(k)] * in_stride[size_t(perm[size_t(k)])];
        out[i] = c.data[size_t(src)];
        for (int64_t k = r - 1; k >= 0 && ++idx[size_t(k)] == shape[size_t(k)]; --k) idx[size_t(k)] = 0;
      }
      c = {shape, out};
    } else if (op != "Identity" && op != "Dropout") {
      c.shape = reshaped_shape(n, c.shape);
    }
    constants_[n.output(0)] = c;
    if (int_consts_.count(n.input(0))) int_consts_.insert(n.output(0));
    return true;
  }

  // Arithmetic on constants, as shape computations in exported graphs have it (Shape ->
  // Gather -> Mul -> Concat -> Reshape): elementwise ops with NumPy broadcasting, Concat,
  // ConstantOfShape, Range, Slice, Expand. False: not one of them.
  bool fold_arithmetic(const onnx::NodeProto& n) {
    const std::string& op = n.op_type();
    static const std::map<std::string, std::function<float(float, float)>> kBinary = {
        {"Add", [](float a, float b) { return a + b; }},
        {"Sub", [](float a, float b) { return a - b; }},
        {"Mul", [](float a, float b) { return a * b; }},
        {"Div", [](float a, float b) { return a / b; }},
        {"Pow", [](float a, float b) { return std::pow(a, b); }},
        {"Max", [](float a, float b) { return std::max(a, b); }},
        {"Min", [](float a, float b) { return std::min(a, b); }},
        {"Equal", [](float a, float b) { return float(a == b); }},
        {"Less", [](float a, float b) { return float(a < b); }},
        {"Greater", [](float a, float b) { return float(a > b); }},
        {"And", [](float a, float b) { return float(a != 0 && b != 0); }},
        {"Or", [](float a, float b) { return float(a != 0 || b != 0); }}};
    static const std::map<std::string, std::function<float(float)>> kUnary = {
        {"Neg", [](float a) { return -a; }},      {"Abs", [](float a) { return std::fabs(a); }},
        {"Sqrt", [](float a) { return std::sqrt(a); }}, {"Floor", [](float a) { return std::floor(a); }},
        {"Ceil", [](float a) { return std::ceil(a); }}, {"Not", [](float a) { return float(a == 0); }},
        {"Reciprocal", [](float a) { return 1.0f / a; }}};
    auto in = [&](int i) -> const Constant& { return constants_.at(n.input(i)); };
    // NumPy broadcasting of several constants: the result's shape and each input's flat index.
    auto broadcast = [&](const std::vector<const Constant*>& cs, std::vector<int64_t>& shape) {
      size_t r = 0;
      for (auto* c : cs) r = std::max(r, c->shape.size());
      shape.assign(r, 1);
      for (auto* c : cs)
        for (size_t k = 0; k < c->shape.size(); ++k) {
          int64_t& d = shape[r - c->shape.size() + k];
          int64_t e = c->shape[k];
          if (d != e && d != 1 && e != 1) fail(fmt::format("{} of constants whose shapes do not broadcast", op), node_name(n));
          d = d == 1 ? e : d;
        }
      return [=](const Constant& c, int64_t flat) {
        int64_t at = 0, stride = 1;
        for (size_t k = r; k-- > 0;) {
          int64_t i = flat % shape[k];
          flat /= shape[k];
          size_t ck = k + c.shape.size();
          if (ck < r) continue;
          ck -= r;
          if (c.shape[ck] != 1) at += i * stride;
          stride *= c.shape[ck];
        }
        return at;
      };
    };
    Constant out;
    bool ints = true;  // integer constants stay integers (Div truncates, as ONNX's does)
    for (int i = 0; i < n.input_size(); ++i) ints &= n.input(i).empty() || int_consts_.count(n.input(i)) > 0;
    if (auto b = kBinary.find(op); b != kBinary.end() && n.input_size() == 2) {
      auto idx = broadcast({&in(0), &in(1)}, out.shape);
      for (int64_t i = 0; i < numel(out.shape); ++i) {
        float v = b->second(in(0).data[size_t(idx(in(0), i))], in(1).data[size_t(idx(in(1), i))]);
        out.data.push_back(ints && op == "Div" ? std::trunc(v) : v);
      }
    } else if (auto u = kUnary.find(op); u != kUnary.end()) {
      out = in(0);
      for (float& v : out.data) v = u->second(v);
    } else if (op == "Where") {
      auto idx = broadcast({&in(0), &in(1), &in(2)}, out.shape);
      for (int64_t i = 0; i < numel(out.shape); ++i)
        out.data.push_back(in(0).data[size_t(idx(in(0), i))] != 0 ? in(1).data[size_t(idx(in(1), i))] : in(2).data[size_t(idx(in(2), i))]);
    } else if (op == "Expand") {
      std::vector<int64_t> want;
      for (float f : in(1).data) want.push_back(int64_t(f));
      Constant target{want, std::vector<float>(size_t(numel(want)), 0.0f)};  // only its shape counts
      auto idx = broadcast({&in(0), &target}, out.shape);
      for (int64_t i = 0; i < numel(out.shape); ++i) out.data.push_back(in(0).data[size_t(idx(in(0), i))]);
    } else if (op == "Concat") {
      int64_t r = int64_t(in(0).shape.size()), axis = attr_i(n, "axis", 0);
      if (axis < 0) axis += r;
      out.shape = in(0).shape;
      out.shape[size_t(axis)] = 0;
      for (int i = 0; i < n.input_size(); ++i) out.shape[size_t(axis)] += in(i).shape[size_t(axis)];
      int64_t outer = 1;
      for (int64_t k = 0; k < axis; ++k) outer *= out.shape[size_t(k)];
      for (int64_t o = 0; o < outer; ++o)
        for (int i = 0; i < n.input_size(); ++i) {
          int64_t chunk = numel(in(i).shape) / std::max<int64_t>(outer, 1);
          out.data.insert(out.data.end(), in(i).data.begin() + o * chunk, in(i).data.begin() + (o + 1) * chunk);
        }
    } else if (op == "ConstantOfShape") {
      for (float f : in(0).data) out.shape.push_back(int64_t(f));
      float v = 0.0f;
      if (const auto* a = attr(n, "value")) v = read_tensor(a->t()).data.at(0);
      out.data.assign(size_t(numel(out.shape)), v);
    } else if (op == "Range") {
      float start = in(0).data.at(0), limit = in(1).data.at(0), delta = in(2).data.at(0);
      if (delta == 0) fail("Range with delta 0", node_name(n));
      for (float v = start; delta > 0 ? v < limit : v > limit; v += delta) out.data.push_back(v);
      out.shape = {int64_t(out.data.size())};
    } else if (op == "Slice" && n.input_size() >= 3) {
      const Constant& x = in(0);
      if (x.shape.size() != 1) return false;  // shape vectors; larger constants go through the usual Slice
      int64_t dim = x.shape[0], st = int64_t(in(1).data.at(0)), en = int64_t(std::clamp<double>(in(2).data.at(0), -1e18, 1e18));
      int64_t step = n.input_size() > 4 && !n.input(4).empty() ? int64_t(in(4).data.at(0)) : 1;
      if (step == 0) fail("Slice step 0 is not allowed", node_name(n));
      for (int64_t k : slice_indices(dim, st, en, step)) out.data.push_back(x.data[size_t(k)]);
      out.shape = {int64_t(out.data.size())};
    } else {
      return false;
    }
    constants_[n.output(0)] = out;
    if (ints || op == "Equal" || op == "Less" || op == "Greater" || op == "And" || op == "Or" || op == "Not") int_consts_.insert(n.output(0));
    return true;
  }

  void import_node(const onnx::NodeProto& n) {
    const std::string& op = n.op_type();
    if (!n.domain().empty() && n.domain() != "ai.onnx")
      fail(fmt::format("operator domain '{}' is not supported", n.domain()), node_name(n));
    if (lift_1d(n)) return;
    if (fold_constant(n)) return;
    if (empty_input(n)) return;
    mlir::Location loc = mlir::NameLoc::get(b_.getStringAttr(node_name(n)));
    if (op == "Gemm") return gemm(n, loc);
    if (op == "MatMul") return matmul(n, loc);
    if (op == "Conv") return conv(n, loc);
    if (op == "Relu") return clamp(n, loc, 0.0f, std::numeric_limits<float>::infinity());
    if (op == "Clip") return clip(n, loc);
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") return binary(n, loc);
    if (op == "MaxPool" || op == "AveragePool") return pool(n, loc);
    if (op == "GlobalAveragePool" || op == "GlobalMaxPool") return global_pool(n, loc);
    if (op == "Flatten") return flatten(n, loc);
    if (op == "Reshape") return reshape_op(n, loc);
    if (op == "BatchNormalization") return batchnorm(n, loc);
    if (op == "Softmax") return softmax(n, loc);
    if (op == "LayerNormalization") return layernorm(n, loc);
    if (op == "LSTM") return lstm(n, loc);
    if (op == "GRU") return gru(n, loc);
    if (op == "QuantizeLinear") return quantize_linear(n, loc);
    if (op == "DequantizeLinear") return dequantize_linear(n, loc);
    if (op == "QLinearMatMul" || op == "QLinearConv") return qlinear(n, loc);
    if (op == "Resize" || op == "Upsample") return resize(n, loc);
    if (op == "ConvTranspose") return conv_transpose(n, loc);
    if (op == "Gather") return gather(n, loc);
    if (op == "MatMulInteger" || op == "ConvInteger") return integer_op(n, loc);
    if (op == "Cast") return cast(n, loc);
    if (op == "Sigmoid" || op == "Tanh" || op == "Erf" || op == "Exp" || op == "Reciprocal" || op == "Sqrt") {
      const Tensor& x = input(n, 0);
      auto t = x.value.getType();
      Value y;
      if (op == "Sigmoid") y = b_.create<mlir::tosa::SigmoidOp>(loc, t, x.value);
      else if (op == "Tanh") y = b_.create<mlir::tosa::TanhOp>(loc, t, x.value);
      else if (op == "Erf") y = b_.create<mlir::tosa::ErfOp>(loc, t, x.value);
      else if (op == "Exp") y = b_.create<mlir::tosa::ExpOp>(loc, t, x.value);
      else if (op == "Reciprocal") y = b_.create<mlir::tosa::ReciprocalOp>(loc, t, x.value);
      // The vector unit has 1/sqrt; sqrt(x) = 1 / rsqrt(x) holds at 0 and +inf too.
      else y = b_.create<mlir::tosa::ReciprocalOp>(loc, t, b_.create<mlir::tosa::RsqrtOp>(loc, t, x.value));
      define(n, {y, x.shape, x.nhwc});
      return;
    }
    if (op == "InstanceNormalization") return instance_norm(n, loc);
    if (op == "ArgMax" || op == "ArgMin") return argmax(n, loc);
    if (op == "Expand") {
      // x + zeros of the target shape: the usual broadcast of a binary op.
      only_attrs(n, {});
      std::vector<int64_t> want;
      for (float f : const_input(n, 1, "Expand shape").data) want.push_back(int64_t(f));
      Tensor zeros{constant(want, std::vector<float>(size_t(numel(want)), 0.0f), loc), want, false}, out;
      auto [a, c] = broadcast_pair(n, input(n, 0), zeros, out, loc);
      out.value = b_.create<mlir::tosa::AddOp>(loc, tensor_type(out.nhwc ? to_nhwc(out.shape) : out.shape), a, c);
      return define(n, out);
    }
    if (op == "Tile") return tile(n, loc);
    if (op == "Max" || op == "Min" || op == "Sum" || op == "Mean") {
      // Variadic: a chain of pairwise maxima/minima (one input is the identity).
      Tensor acc = input(n, 0);
      for (int i = 1; i < n.input_size(); ++i) {
        Tensor out;
        auto [a, c] = broadcast_pair(n, acc, input(n, i), out, loc);
        auto t = tensor_type(out.nhwc ? to_nhwc(out.shape) : out.shape);
        out.value = op == "Max"   ? Value(b_.create<mlir::tosa::MaximumOp>(loc, t, a, c))
                    : op == "Min" ? Value(b_.create<mlir::tosa::MinimumOp>(loc, t, a, c))
                                  : Value(b_.create<mlir::tosa::AddOp>(loc, t, a, c));
        acc = out;
      }
      if (op == "Mean" && n.input_size() > 1)
        acc.value = b_.create<mlir::tosa::MulOp>(loc, acc.value.getType(), acc.value,
                                                 constant(std::vector<int64_t>(acc.shape.size(), 1), {1.0f / float(n.input_size())}, loc),
                                                 b_.getI8IntegerAttr(0));
      define(n, acc);
      return;
    }
    if (op == "PRelu") return prelu(n, loc);
    if (op == "ReduceMean" || op == "ReduceSum") return reduce(n, loc);
    if (op == "Pad") return pad(n, loc);
    if (op == "Abs" || op == "Softsign" || op == "Elu" || op == "Selu" || op == "Celu") return elementwise_extra(n, loc);
    if (op == "Pow") {
      // A constant exponent of 1, 2, 3 or 4 (products) or 0.5 (sqrt); GELU's tanh form has x^3.
      only_attrs(n, {});
      const Tensor& x = input(n, 0);
      const Constant& e = const_input(n, 1, "Pow exponent");
      if (e.data.size() != 1) fail("Pow needs a scalar exponent", node_name(n));
      float p = e.data[0];
      auto t = x.value.getType();
      Value y = x.value;
      if (p == 0.5f) {
        y = b_.create<mlir::tosa::ReciprocalOp>(loc, t, b_.create<mlir::tosa::RsqrtOp>(loc, t, x.value));
      } else if (p == 2.0f || p == 3.0f || p == 4.0f) {
        for (int i = 1; i < int(p); ++i) y = b_.create<mlir::tosa::MulOp>(loc, t, y, x.value, b_.getI8IntegerAttr(0));
      } else if (p != 1.0f) {
        fail(fmt::format("Pow exponent {} is not supported (1, 2, 3, 4 or 0.5)", p), node_name(n));
      }
      define(n, {y, x.shape, x.nhwc});
      return;
    }
    if (op == "Squeeze" || op == "Unsqueeze") return squeeze(n, loc);
    if (op == "Transpose") return transpose_op(n, loc);
    if (op == "Concat") return concat(n, loc);
    if (op == "Slice") return slice(n, loc);
    if (op == "Split") return split(n, loc);
    if (op == "LeakyRelu") {
      // max(x, alpha * x) for alpha <= 1, min(x, alpha * x) above: one scale and one compare.
      only_attrs(n, {"alpha"});
      const Tensor& x = input(n, 0);
      float alpha = attr_f(n, "alpha", 0.01f);
      auto t = x.value.getType();
      Value ax = b_.create<mlir::tosa::MulOp>(loc, t, x.value, constant(std::vector<int64_t>(x.shape.size(), 1), {alpha}, loc),
                                              b_.getI8IntegerAttr(0));
      Value y = alpha <= 1.0f ? Value(b_.create<mlir::tosa::MaximumOp>(loc, t, x.value, ax))
                              : Value(b_.create<mlir::tosa::MinimumOp>(loc, t, x.value, ax));
      define(n, {y, x.shape, x.nhwc});
      return;
    }
    if (op == "HardSwish") {  // x * HardSigmoid(x) with alpha 1/6, beta 1/2 (MobileNetV3)
      only_attrs(n, {});
      const Tensor& x = input(n, 0);
      std::vector<int64_t> one(x.shape.size(), 1);
      auto t = x.value.getType();
      Value g = b_.create<mlir::tosa::MulOp>(loc, t, x.value, constant(one, {1.0f / 6.0f}, loc), b_.getI8IntegerAttr(0));
      g = make_clamp(b_.create<mlir::tosa::AddOp>(loc, t, g, constant(one, {0.5f}, loc)), 0.0f, 1.0f, loc);
      define(n, {b_.create<mlir::tosa::MulOp>(loc, t, x.value, g, b_.getI8IntegerAttr(0)), x.shape, x.nhwc});
      return;
    }
    if (op == "HardSigmoid" || op == "Neg") {
      // alpha * x + beta (then clamped to [0, 1]) as a scale and shift the vector unit does in one affine.
      only_attrs(n, {"alpha", "beta"});
      const Tensor& x = input(n, 0);
      bool hs = op == "HardSigmoid";
      float alpha = hs ? attr_f(n, "alpha", 0.2f) : -1.0f, beta = hs ? attr_f(n, "beta", 0.5f) : 0.0f;
      std::vector<int64_t> one(x.shape.size(), 1);
      auto t = x.value.getType();
      Value y = b_.create<mlir::tosa::MulOp>(loc, t, x.value, constant(one, {alpha}, loc), b_.getI8IntegerAttr(0));
      if (beta != 0.0f) y = b_.create<mlir::tosa::AddOp>(loc, t, y, constant(one, {beta}, loc));
      if (hs) y = make_clamp(y, 0.0f, 1.0f, loc);
      define(n, {y, x.shape, x.nhwc});
      return;
    }
    if (op == "Identity" || op == "Dropout") {
      values_[n.output(0)] = input(n, 0);
      return;
    }
    fail(fmt::format("operator {} is not supported yet (docs/compiler.md lists the supported operators)", op),
         node_name(n));
  }

  void gemm(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {"alpha", "beta", "transA", "transB"});
    Tensor a = input(n, 0);
    if (a.shape.size() != 2) fail("Gemm input A must be 2-D", node_name(n));
    if (attr_i(n, "transA", 0)) {  // the activation is transposed first (a data move on the chip)
      a.value = transpose(a.value, {1, 0}, loc);
      a.shape = {a.shape[1], a.shape[0]};
    }
    const Constant& w = const_input(n, 1, "Gemm input B");
    float alpha = attr_f(n, "alpha", 1.0f), beta = attr_f(n, "beta", 1.0f);
    bool tb = attr_i(n, "transB", 0) != 0;
    int64_t K = a.shape[1], N = tb ? w.shape[0] : w.shape[1];
    if ((tb ? w.shape[1] : w.shape[0]) != K) fail("Gemm: A and B shapes do not agree", node_name(n));
    // TOSA fully_connected wants weights [N, K].
    std::vector<float> wt(size_t(N * K));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j) wt[size_t(j * K + k)] = alpha * (tb ? w.data[size_t(j * K + k)] : w.data[size_t(k * N + j)]);
    std::vector<float> bias(size_t(N), 0.0f);
    std::vector<float> matrix_bias;  // C of [M, N] or [M, 1]: added after the matmul
    int64_t M = a.shape[0];
    if (n.input_size() > 2 && !n.input(2).empty()) {
      const Constant& c = const_input(n, 2, "Gemm input C");
      bool per_column = numel(c.shape) == N && (c.shape.size() < 2 || c.shape[0] == 1);
      if (per_column) for (int64_t j = 0; j < N; ++j) bias[size_t(j)] = beta * c.data[size_t(j)];
      else if (numel(c.shape) == 1) for (auto& x : bias) x = beta * c.data[0];
      else if (c.shape.size() == 2 && (c.shape[0] == M || c.shape[0] == 1) && (c.shape[1] == N || c.shape[1] == 1)) {
        matrix_bias.resize(size_t(M * N));
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j)
            matrix_bias[size_t(i * N + j)] = beta * c.data[size_t((c.shape[0] == 1 ? 0 : i) * c.shape[1] + (c.shape[1] == 1 ? 0 : j))];
      } else {
        fail(fmt::format("Gemm input C of shape [{}] does not broadcast to [{}, {}]", fmt::join(c.shape, ", "), M, N), node_name(n));
      }
    }
    Value fc = b_.create<mlir::tosa::FullyConnectedOp>(loc, tensor_type({M, N}), a.value,
                                                       constant({N, K}, wt, loc), constant({N}, bias, loc), nullptr);
    if (!matrix_bias.empty()) fc = b_.create<mlir::tosa::AddOp>(loc, tensor_type({M, N}), fc, constant({M, N}, matrix_bias, loc));
    define(n, {fc, {M, N}, false});
  }

  // MatMul of two activations (attention's Q K^T and P V): [..., M, K] x [..., K, N] with the
  // same batch dimensions, as a 3-D tosa.matmul.
  void batch_matmul(const onnx::NodeProto& n, mlir::Location loc) { define(n, batch_matmul_of(n, input(n, 0), input(n, 1), loc)); }
  Tensor batch_matmul_of(const onnx::NodeProto& n, Tensor a, Tensor c, mlir::Location loc) {
    if (a.nhwc) a = {to_nchw_value(a, loc), a.shape, false};
    if (c.nhwc) c = {to_nchw_value(c, loc), c.shape, false};
    if (a.shape.size() < 2 || a.shape.size() != c.shape.size())
      fail(fmt::format("MatMul of two activations needs inputs of one rank >= 2 (got [{}] and [{}])", fmt::join(a.shape, ", "),
                       fmt::join(c.shape, ", ")),
           node_name(n));
    size_t r = a.shape.size();
    int64_t M = a.shape[r - 2], K = a.shape[r - 1], N = c.shape[r - 1], B = 1;
    for (size_t i = 0; i + 2 < r; ++i) {
      if (a.shape[i] != c.shape[i])
        fail(fmt::format("MatMul batch dimension {} differs ({} and {}); broadcasting batch dimensions is not supported", i,
                         a.shape[i], c.shape[i]),
             node_name(n));
      B *= a.shape[i];
    }
    if (c.shape[r - 2] != K) fail(fmt::format("MatMul: [{}] x [{}] do not agree", fmt::join(a.shape, ", "), fmt::join(c.shape, ", ")), node_name(n));
    Value a3 = r == 3 ? a.value : reshape(a.value, {B, M, K}, loc), c3 = r == 3 ? c.value : reshape(c.value, {B, K, N}, loc);
    Value y = b_.create<mlir::tosa::MatMulOp>(loc, tensor_type({B, M, N}), a3, c3);
    std::vector<int64_t> out = a.shape;
    out.back() = N;
    return {r == 3 ? y : reshape(y, out, loc), out, false};
  }

  void matmul(const onnx::NodeProto& n, mlir::Location loc) {
    if (n.input_size() > 1 && !constants_.count(n.input(1))) return batch_matmul(n, loc);
    define(n, matmul_const(n, input(n, 0), const_input(n, 1, "MatMul input B"), loc));
  }
  Tensor matmul_const(const onnx::NodeProto& n, const Tensor& a, const Constant& w, mlir::Location loc) {
    if (a.nhwc) fail("MatMul on an image tensor is not supported", node_name(n));
    if (w.shape.size() != 2) fail("MatMul weight must be 2-D", node_name(n));
    int64_t K = w.shape[0], N = w.shape[1];
    if (a.shape.back() != K) fail("MatMul: shapes do not agree", node_name(n));
    int64_t M = numel(a.shape) / K;
    std::vector<float> wt(size_t(N * K));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j) wt[size_t(j * K + k)] = w.data[size_t(k * N + j)];
    Value x = a.shape.size() == 2 ? a.value : reshape(a.value, {M, K}, loc);
    Value fc = b_.create<mlir::tosa::FullyConnectedOp>(loc, tensor_type({M, N}), x, constant({N, K}, wt, loc),
                                                       constant({N}, std::vector<float>(size_t(N), 0.0f), loc), nullptr);
    std::vector<int64_t> out = a.shape;
    out.back() = N;
    return {out.size() == 2 ? fc : reshape(fc, out, loc), out, false};
  }

  // A 2-D node's pads in TOSA order: top, bottom, left, right.
  std::vector<int64_t> pads_of(const onnx::NodeProto& n, const std::vector<int64_t>& in_hw, const std::vector<int64_t>& kernel,
                               const std::vector<int64_t>& stride, const std::vector<int64_t>& dilation) {
    auto p = explicit_pads(n, in_hw, kernel, stride, dilation);  // top, left, bottom, right
    return {p[0], p[2], p[1], p[3]};
  }

  // Conv with `group`: depthwise (one group per input channel) becomes
  // tosa.depthwise_conv2d; other groupings become one convolution per group on a channel
  // window of the input, joined by a concat (TOSA has no grouped convolution).
  void conv(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
    if (input(n, 0).shape.size() == 5) return conv_3d(n, input(n, 0), loc);
    std::vector<float> bias;
    if (n.input_size() > 2 && !n.input(2).empty()) bias = const_input(n, 2, "Conv bias").data;
    define(n, conv_of(n, input(n, 0), const_input(n, 1, "Conv weight"), bias, loc));
  }
  // A 3-D Conv as a 2-D one with the depth folded into the channels: output channel
  // (co, od) of [N, CO*OD, OH, OW] reads input channel (ci, id) of [N, CI*D, H, W] through
  // the kernel's depth tap kd where id = od*sd - pad + kd*dd (zero weights elsewhere; a
  // group's channels stay contiguous, so groups carry over).
  void conv_3d(const onnx::NodeProto& n, const Tensor& x, mlir::Location loc) {
    const Constant& w = const_input(n, 1, "Conv weight");
    if (w.shape.size() != 5) fail("the 3-D Conv weight must be 5-D [CO, CI/group, KD, KH, KW]", node_name(n));
    int64_t G = attr_i(n, "group", 1), CO = w.shape[0], CIg = w.shape[1], KD = w.shape[2], KH = w.shape[3], KW = w.shape[4];
    int64_t N = x.shape[0], CI = x.shape[1], D = x.shape[2], H = x.shape[3], W = x.shape[4];
    if (G < 1 || CI % G || CO % G || CIg * G != CI)
      fail(fmt::format("Conv weight [{}] does not fit {} input channels in {} groups", fmt::join(w.shape, ", "), CI, G), node_name(n));
    auto stride = per_axis(n, "strides", 1, 3), dil = per_axis(n, "dilations", 1, 3);
    auto p = explicit_pads(n, {D, H, W}, {KD, KH, KW}, stride, dil);
    int64_t OD = (D + p[0] + p[3] - (KD - 1) * dil[0] - 1) / stride[0] + 1;
    if (OD < 1) fail("the Conv output depth would be empty", node_name(n));
    int64_t CIg2 = CIg * D;
    Constant w2;
    w2.shape = {CO * OD, CIg2, KH, KW};
    w2.data.assign(size_t(CO * OD * CIg2 * KH * KW), 0.0f);
    for (int64_t co = 0; co < CO; ++co)
      for (int64_t od = 0; od < OD; ++od)
        for (int64_t kd = 0; kd < KD; ++kd) {
          int64_t id = od * stride[0] - p[0] + kd * dil[0];
          if (id < 0 || id >= D) continue;
          for (int64_t ci = 0; ci < CIg; ++ci)
            for (int64_t hw = 0; hw < KH * KW; ++hw)
              w2.data[size_t(((co * OD + od) * CIg2 + ci * D + id) * KH * KW + hw)] = w.data[size_t(((co * CIg + ci) * KD + kd) * KH * KW + hw)];
        }
    std::vector<float> bias;
    if (n.input_size() > 2 && !n.input(2).empty()) {
      for (float b : const_input(n, 2, "Conv bias").data) bias.insert(bias.end(), size_t(OD), b);
      if (int64_t(bias.size()) != CO * OD) fail(fmt::format("Conv bias does not have {} values", CO), node_name(n));
    }
    onnx::NodeProto m = derived_node(n, "#2d", {"kernel_shape", "strides", "dilations", "pads", "auto_pad"});
    set_ints(m, "strides", {stride[1], stride[2]});
    set_ints(m, "dilations", {dil[1], dil[2]});
    set_ints(m, "pads", {p[1], p[2], p[4], p[5]});
    Tensor x2{reshape(x.value, {N, CI * D, H, W}, loc), {N, CI * D, H, W}, false};
    Tensor y = conv_of(m, x2, w2, bias, loc);
    std::vector<int64_t> out{N, CO, OD, y.shape[2], y.shape[3]};
    define(n, {reshape(y.nhwc ? to_nchw_value(y, loc) : y.value, out, loc), out, false});
  }

  // `bias` empty: none.
  // The geometry of a convolution when it is not the node's own (ConvTranspose's inner conv).
  struct ConvGeometry {
    std::vector<int64_t> stride, dilation, pad;  // pad in TOSA order: top, bottom, left, right
  };
  Tensor conv_of(const onnx::NodeProto& n, const Tensor& x, const Constant& w, std::vector<float> bias, mlir::Location loc,
                 const ConvGeometry* geometry = nullptr) {
    if (x.shape.size() != 4) fail("only 2-D convolutions (4-D inputs) are supported", node_name(n));
    if (w.shape.size() != 4) fail("the Conv weight must be 4-D [CO, CI/group, KH, KW]", node_name(n));
    int64_t G = attr_i(n, "group", 1);
    int64_t CO = w.shape[0], CIg = w.shape[1], KH = w.shape[2], KW = w.shape[3];
    if (G < 1 || x.shape[1] % G || CO % G)
      fail(fmt::format("Conv group {} does not divide the {} input and {} output channels", G, x.shape[1], CO), node_name(n));
    if (CIg * G != x.shape[1])
      fail(fmt::format("Conv weight has {} channels per group but the input has {} channels in {} groups", CIg, x.shape[1], G),
           node_name(n));
    auto stride = geometry ? geometry->stride : attr_ints(n, "strides", {1, 1});
    auto dil = geometry ? geometry->dilation : attr_ints(n, "dilations", {1, 1});
    auto pad = geometry ? geometry->pad : pads_of(n, {x.shape[2], x.shape[3]}, {KH, KW}, stride, dil);
    int64_t OH = (x.shape[2] + pad[0] + pad[1] - ((KH - 1) * dil[0] + 1)) / stride[0] + 1;
    int64_t OW = (x.shape[3] + pad[2] + pad[3] - ((KW - 1) * dil[1] + 1)) / stride[1] + 1;
    if (OH < 1 || OW < 1) fail("the Conv output would be empty", node_name(n));
    if (bias.empty()) bias.assign(size_t(CO), 0.0f);
    if (bias.size() != size_t(CO)) fail(fmt::format("Conv bias has {} values for {} output channels", bias.size(), CO), node_name(n));
    Value in = x.nhwc ? x.value : transpose(x.value, {0, 2, 3, 1}, loc);
    std::vector<int64_t> out{x.shape[0], CO, OH, OW};
    auto pad_a = b_.getDenseI64ArrayAttr(pad), stride_a = b_.getDenseI64ArrayAttr(stride), dil_a = b_.getDenseI64ArrayAttr(dil);
    if (G > 1 && CIg == 1) {
      // Depthwise: [CO, 1, KH, KW] with CO = C x M -> TOSA's [KH, KW, C, M] (same order of co).
      int64_t C = x.shape[1], M = CO / C;
      std::vector<float> wt(w.data.size());
      for (int64_t o = 0; o < CO; ++o)
        for (int64_t h = 0; h < KH; ++h)
          for (int64_t ww = 0; ww < KW; ++ww) wt[size_t((h * KW + ww) * CO + o)] = w.data[size_t((o * KH + h) * KW + ww)];
      Value y = b_.create<mlir::tosa::DepthwiseConv2DOp>(loc, tensor_type(to_nhwc(out)), in, constant({KH, KW, C, M}, wt, loc),
                                                         constant({CO}, bias, loc), pad_a, stride_a, dil_a, nullptr);
      return {y, out, true};
    }
    int64_t COg = CO / G;
    std::vector<Value> parts;
    for (int64_t g = 0; g < G; ++g) {
      // OIHW -> OHWI, output channels [g*COg, (g+1)*COg).
      std::vector<float> wt(size_t(COg * KH * KW * CIg));
      for (int64_t o = 0; o < COg; ++o)
        for (int64_t i = 0; i < CIg; ++i)
          for (int64_t h = 0; h < KH; ++h)
            for (int64_t ww = 0; ww < KW; ++ww)
              wt[size_t(((o * KH + h) * KW + ww) * CIg + i)] = w.data[size_t((((g * COg + o) * CIg + i) * KH + h) * KW + ww)];
      std::vector<float> bg(bias.begin() + g * COg, bias.begin() + (g + 1) * COg);
      Value xg = in;
      if (G > 1)
        xg = b_.create<mlir::tosa::SliceOp>(loc, tensor_type({x.shape[0], x.shape[2], x.shape[3], CIg}), in,
                                             b_.getDenseI64ArrayAttr({0, 0, 0, g * CIg}),
                                             b_.getDenseI64ArrayAttr({x.shape[0], x.shape[2], x.shape[3], CIg}));
      parts.push_back(b_.create<mlir::tosa::Conv2DOp>(loc, tensor_type({x.shape[0], OH, OW, COg}), xg,
                                                      constant({COg, KH, KW, CIg}, wt, loc), constant({COg}, bg, loc), pad_a,
                                                      stride_a, dil_a, nullptr));
    }
    Value y = G == 1 ? parts[0] : b_.create<mlir::tosa::ConcatOp>(loc, tensor_type(to_nhwc(out)), parts, 3).getResult();
    return {y, out, true};
  }

  Value make_clamp(Value v, float lo, float hi, mlir::Location loc) {
    float flo = std::max(lo, -std::numeric_limits<float>::max()), fhi = std::min(hi, std::numeric_limits<float>::max());
    return b_.create<mlir::tosa::ClampOp>(loc, v.getType(), v, b_.getI64IntegerAttr(int64_t(std::max(-1e9f, flo))),
                                          b_.getI64IntegerAttr(int64_t(std::min(1e9f, fhi))), b_.getF32FloatAttr(flo),
                                          b_.getF32FloatAttr(fhi));
  }

  void clamp(const onnx::NodeProto& n, mlir::Location loc, float lo, float hi) {
    const Tensor& x = input(n, 0);
    define(n, {make_clamp(x.value, lo, hi, loc), x.shape, x.nhwc});
  }

  void clip(const onnx::NodeProto& n, mlir::Location loc) {
    float lo = attr_f(n, "min", -std::numeric_limits<float>::infinity());
    float hi = attr_f(n, "max", std::numeric_limits<float>::infinity());
    if (n.input_size() > 1 && !n.input(1).empty()) lo = const_input(n, 1, "Clip min").data.at(0);
    if (n.input_size() > 2 && !n.input(2).empty()) hi = const_input(n, 2, "Clip max").data.at(0);
    clamp(n, loc, lo, hi);
  }

  // Two operands of an elementwise op brought to one rank and layout (ONNX multidirectional
  // broadcasting, right-aligned); `out` gets the result's logical shape and layout.
  std::pair<Value, Value> broadcast_pair(const onnx::NodeProto& n, const Tensor& a, const Tensor& c, Tensor& out,
                                         mlir::Location loc) {
    const Tensor& big = a.shape.size() >= c.shape.size() ? a : c;
    auto align = [&](const Tensor& t) -> Value {
      if (t.shape.size() == big.shape.size()) {
        if (t.nhwc == big.nhwc) return t.value;
        return t.nhwc ? to_nchw_value(t, loc) : transpose(t.value, {0, 2, 3, 1}, loc);
      }
      std::vector<int64_t> s(big.shape.size() - t.shape.size(), 1);
      s.insert(s.end(), t.shape.begin(), t.shape.end());
      Value r = reshape(t.value, s, loc);
      return big.nhwc ? transpose(r, {0, 2, 3, 1}, loc) : r;
    };
    out.shape = big.shape;
    out.nhwc = big.nhwc;
    size_t off_a = big.shape.size() - a.shape.size(), off_c = big.shape.size() - c.shape.size();
    for (size_t i = 0; i < big.shape.size(); ++i) {
      int64_t da = i >= off_a ? a.shape[i - off_a] : 1, dc = i >= off_c ? c.shape[i - off_c] : 1;
      if (da != dc && da != 1 && dc != 1)
        fail(fmt::format("{} operands of shapes [{}] and [{}] do not broadcast", n.op_type(), fmt::join(a.shape, ", "),
                         fmt::join(c.shape, ", ")),
             node_name(n));
      out.shape[i] = std::max(da, dc);
    }
    return {align(a), align(c)};
  }

  // Add, Sub, Mul; Div multiplies by the reciprocal (of a constant: folded here, so x / 8
  // becomes one scale step; of an activation: the vector unit's reciprocal table).
  void binary(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {});  // opset < 7 had `broadcast` and `axis`
    Tensor out;
    Tensor rhs = input(n, 1);
    if (n.op_type() == "Div" && (is_integral(n.input(0)) || is_integral(n.input(1)))) {
      // ONNX truncates an integer quotient: tpu.binary "div" (exact for integers below 2^24).
      if (constants_.count(n.input(0)) || constants_.count(n.input(1)))
        fail("Div of integers with a constant operand is not supported; Cast the operands to float first", node_name(n));
      const Tensor& a = input(n, 0);
      if (a.shape != rhs.shape || a.nhwc != rhs.nhwc)
        fail("Div of integers needs operands of one shape (no broadcasting)", node_name(n));
      Value y = b_.create<tpu::BinaryOp>(loc, a.value.getType(), a.value, rhs.value, b_.getStringAttr("div"),
                                         b_.getStringAttr(node_name(n)));
      define(n, {y, a.shape, a.nhwc});
      return;
    }
    if (n.op_type() == "Div") {
      auto c = constants_.find(n.input(1));
      if (c != constants_.end()) {
        std::vector<float> inv(c->second.data.size());
        for (size_t i = 0; i < inv.size(); ++i) {
          if (c->second.data[i] == 0.0f) fail(fmt::format("Div by a constant holding 0 (element {})", i), node_name(n));
          inv[i] = 1.0f / c->second.data[i];
        }
        rhs.value = constant(c->second.shape, inv, loc);
      } else if (auto r = rhs.value.getDefiningOp<mlir::tosa::ReciprocalOp>()) {
        rhs.value = r.getInput1();  // a / (1 / b) = a * b: Div by a Sqrt (1 / rsqrt) multiplies by the rsqrt
      } else {
        rhs.value = b_.create<mlir::tosa::ReciprocalOp>(loc, rhs.value.getType(), rhs.value);
      }
    }
    auto [x, y] = broadcast_pair(n, input(n, 0), rhs, out, loc);
    auto out_type = tensor_type(out.nhwc ? to_nhwc(out.shape) : out.shape);
    if (n.op_type() == "Add") out.value = b_.create<mlir::tosa::AddOp>(loc, out_type, x, y);
    else if (n.op_type() == "Sub") out.value = b_.create<mlir::tosa::SubOp>(loc, out_type, x, y);
    else out.value = b_.create<mlir::tosa::MulOp>(loc, out_type, x, y, b_.getI8IntegerAttr(0));
    define(n, out);
  }

  // Pad on the H and W of an image. Constant mode: the spread of tpu.zero_insert with
  // stride 1 (its pads), plus the constant on the border when it is not 0. Edge and reflect
  // modes: a concat of single-column (then single-row) slices around the image: the edge
  // column repeated, or the columns next to it mirrored.
  void pad(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {"mode", "pads", "value"});
    std::string mode = attr_s(n, "mode", "constant");
    if (mode != "constant" && mode != "edge" && mode != "reflect")
      fail(fmt::format("Pad mode '{}' is not supported (constant, edge, reflect)", mode), node_name(n));
    const Tensor& x = input(n, 0);
    std::vector<int64_t> p = attr_ints(n, "pads", {});
    float value = attr_f(n, "value", 0.0f);
    if (n.input_size() > 1 && !n.input(1).empty())
      for (float f : const_input(n, 1, "Pad pads").data) p.push_back(int64_t(f));
    if (n.input_size() > 2 && !n.input(2).empty()) {
      const auto& v = const_input(n, 2, "Pad constant_value").data;
      if (v.size() != 1) fail("Pad constant_value must be a scalar", node_name(n));
      value = v[0];
    }
    if (n.input_size() > 3 && !n.input(3).empty()) fail("Pad's axes input is not supported (pad every axis)", node_name(n));
    size_t r = x.shape.size();
    if (p.size() != 2 * r) fail(fmt::format("Pad needs {} pads for a {}-D input, got {}", 2 * r, r, p.size()), node_name(n));
    if (r != 4 || p[0] || p[1] || p[4] || p[5])
      fail("Pad is supported on the H and W of an image (4-D input, no batch or channel padding)", node_name(n));
    for (int64_t v : p)
      if (v < 0) fail("Pad with negative pads (cropping) is not supported; use Slice", node_name(n));
    int64_t N = x.shape[0], C = x.shape[1], OH = x.shape[2] + p[2] + p[6], OW = x.shape[3] + p[3] + p[7];
    Value in = x.nhwc ? x.value : transpose(x.value, {0, 2, 3, 1}, loc);
    if (mode != "constant") {
      // NHWC dimension d (2: W, then 1: H), `before` and `after` new entries.
      auto pad_dim = [&](Value v, int d, int64_t before, int64_t after) {
        if (!before && !after) return v;
        auto shape = mlir::cast<mlir::RankedTensorType>(v.getType()).getShape().vec();
        int64_t len = shape[size_t(d)];
        if (mode == "reflect" && (before >= len || after >= len))
          fail(fmt::format("reflect Pad of {} needs pads below {}", len, len), node_name(n));
        auto entry = [&](int64_t i) {
          std::vector<int64_t> start(4, 0), size = shape;
          start[size_t(d)] = i, size[size_t(d)] = 1;
          return Value(b_.create<mlir::tosa::SliceOp>(loc, tensor_type(size), v, b_.getDenseI64ArrayAttr(start), b_.getDenseI64ArrayAttr(size)));
        };
        std::vector<Value> parts;
        for (int64_t j = 0; j < before; ++j) parts.push_back(entry(mode == "edge" ? 0 : before - j));
        parts.push_back(v);
        for (int64_t j = 0; j < after; ++j) parts.push_back(entry(mode == "edge" ? len - 1 : len - 2 - j));
        shape[size_t(d)] = len + before + after;
        return Value(b_.create<mlir::tosa::ConcatOp>(loc, tensor_type(shape), parts, d));
      };
      Value y = pad_dim(pad_dim(in, 2, p[3], p[7]), 1, p[2], p[6]);
      define(n, {y, {N, C, OH, OW}, true});
      return;
    }
    define(n, {padded_image(n, in, x.shape, p[2], p[6], p[3], p[7], value, loc), {N, C, OH, OW}, true});
  }
  // The NHWC image `in` (logical NCHW shape `s`) with pads top, bottom, left, right holding
  // `value`: tpu.zero_insert with stride 1, plus the value on the border when it is not 0.
  Value padded_image(const onnx::NodeProto& n, Value in, const std::vector<int64_t>& s, int64_t top, int64_t bottom, int64_t left,
                     int64_t right, float value, mlir::Location loc) {
    int64_t N = s[0], C = s[1], OH = s[2] + top + bottom, OW = s[3] + left + right;
    Value y = b_.create<tpu::ZeroInsertOp>(loc, tensor_type({N, OH, OW, C}), in, b_.getDenseI64ArrayAttr({1, 1}),
                                           b_.getDenseI64ArrayAttr({top, bottom, left, right}), b_.getStringAttr(node_name(n)));
    if (value == 0.0f) return y;
    std::vector<float> border(size_t(N * OH * OW * C), 0.0f);
    for (int64_t i = 0; i < N * OH * OW * C; ++i) {
      int64_t h = i / (OW * C) % OH, w = i / C % OW;
      if (h < top || h >= OH - bottom || w < left || w >= OW - right) border[size_t(i)] = value;
    }
    return b_.create<mlir::tosa::AddOp>(loc, tensor_type({N, OH, OW, C}), y, constant({N, OH, OW, C}, border, loc));
  }

  // Elementwise operators made of the vector unit's others: Abs = max(x, -x); Softsign =
  // x / (1 + |x|); Elu = max(x, 0) + alpha * (exp(min(x, 0)) - 1); Selu = gamma * Elu(x) with
  // Selu's alpha; Celu = max(x, 0) + alpha * (exp(min(x, 0) / alpha) - 1).
  void elementwise_extra(const onnx::NodeProto& n, mlir::Location loc) {
    const std::string& op = n.op_type();
    only_attrs(n, {"alpha", "gamma"});
    const Tensor& x = input(n, 0);
    auto t = x.value.getType();
    std::vector<int64_t> one(x.shape.size(), 1);
    auto scale = [&](Value v, float k) { return Value(b_.create<mlir::tosa::MulOp>(loc, t, v, constant(one, {k}, loc), b_.getI8IntegerAttr(0))); };
    float inf = std::numeric_limits<float>::infinity();
    Value y;
    if (op == "Abs" || op == "Softsign") {
      y = b_.create<mlir::tosa::MaximumOp>(loc, t, x.value, scale(x.value, -1.0f));
      if (op == "Softsign") {
        Value den = b_.create<mlir::tosa::AddOp>(loc, t, y, constant(one, {1.0f}, loc));
        y = b_.create<mlir::tosa::MulOp>(loc, t, x.value, b_.create<mlir::tosa::ReciprocalOp>(loc, t, den), b_.getI8IntegerAttr(0));
      }
    } else {
      bool selu = op == "Selu", celu = op == "Celu";
      float alpha = attr_f(n, "alpha", selu ? 1.67326319217681884765625f : 1.0f), gamma = attr_f(n, "gamma", 1.05070102214813232421875f);
      if (celu && !(alpha > 0)) fail("Celu alpha must be positive", node_name(n));
      // Celu: alpha * (exp(min(x, 0) / alpha) - 1) for the negative part.
      Value neg = b_.create<mlir::tosa::ExpOp>(loc, t, celu ? scale(make_clamp(x.value, -inf, 0.0f, loc), 1.0f / alpha)
                                                             : make_clamp(x.value, -inf, 0.0f, loc));
      neg = b_.create<mlir::tosa::AddOp>(loc, t, scale(neg, alpha), constant(one, {-alpha}, loc));
      y = b_.create<mlir::tosa::AddOp>(loc, t, make_clamp(x.value, 0.0f, inf, loc), neg);
      if (selu) y = scale(y, gamma);
    }
    define(n, {y, x.shape, x.nhwc});
  }

  // ArgMax/ArgMin along one axis: the axis moved last, the rest merged into rows, then
  // tpu.argmax, whose row r is element r of the (int32) output: the kept axes' order.
  void argmax(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {"axis", "keepdims", "select_last_index"});
    const Tensor& x = input(n, 0);
    int64_t r = int64_t(x.shape.size()), axis = attr_i(n, "axis", 0);
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r) fail(fmt::format("{} axis {} is out of range for {} dimensions", n.op_type(), axis, r), node_name(n));
    Value v = x.nhwc ? to_nchw_value(x, loc) : x.value;
    std::vector<int32_t> perm;
    std::vector<int64_t> out;
    for (int64_t a = 0; a < r; ++a)
      if (a != axis) perm.push_back(int32_t(a));
    perm.push_back(int32_t(axis));
    if (axis != r - 1) v = transpose(v, perm, loc);
    int64_t K = x.shape[size_t(axis)];
    v = reshape(v, {numel(x.shape) / K, K}, loc);
    bool keep = attr_i(n, "keepdims", 1) != 0;
    for (int64_t a = 0; a < r; ++a)
      if (a != axis) out.push_back(x.shape[size_t(a)]);
      else if (keep) out.push_back(1);
    Value y = b_.create<tpu::ArgMaxOp>(loc, mlir::RankedTensorType::get(out, b_.getI32Type()), v,
                                       n.op_type() == "ArgMin" ? b_.getUnitAttr() : nullptr,
                                       attr_i(n, "select_last_index", 0) ? b_.getUnitAttr() : nullptr, b_.getStringAttr(node_name(n)));
    define(n, {y, out, false});
  }

  // InstanceNormalization: each image's channel normalized over its H and W. The mean and the
  // variance of the centred values are global average pools ([N, 1, 1, C], broadcast back over
  // the pixels); then the per-channel scale and bias.
  void instance_norm(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {"epsilon"});
    const Tensor& x = input(n, 0);
    if (x.shape.size() != 4) fail("InstanceNormalization is supported on images (4-D inputs)", node_name(n));
    int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
    const auto& scale = const_input(n, 1, "InstanceNormalization scale").data;
    const auto& bias = const_input(n, 2, "InstanceNormalization B").data;
    if (int64_t(scale.size()) != C || int64_t(bias.size()) != C)
      fail(fmt::format("InstanceNormalization scale and B need {} values (one per channel)", C), node_name(n));
    Value in = x.nhwc ? x.value : transpose(x.value, {0, 2, 3, 1}, loc);
    auto type = tensor_type({N, H, W, C}), stat = tensor_type({N, 1, 1, C});
    auto shift = b_.getI8IntegerAttr(0);
    auto mean_of = [&](Value v) {
      return Value(b_.create<mlir::tosa::AvgPool2dOp>(loc, stat, v, b_.getDenseI64ArrayAttr({H, W}), b_.getDenseI64ArrayAttr({1, 1}),
                                                      b_.getDenseI64ArrayAttr({0, 0, 0, 0}), mlir::TypeAttr::get(b_.getF32Type()), nullptr));
    };
    Value c = b_.create<mlir::tosa::SubOp>(loc, type, in, mean_of(in));
    Value var = mean_of(b_.create<mlir::tosa::MulOp>(loc, type, c, c, shift));
    Value ve = b_.create<mlir::tosa::AddOp>(loc, stat, var, constant({1, 1, 1, 1}, {attr_f(n, "epsilon", 1e-5f)}, loc));
    Value y = b_.create<mlir::tosa::MulOp>(loc, type, c, b_.create<mlir::tosa::RsqrtOp>(loc, stat, ve), shift);
    y = b_.create<mlir::tosa::MulOp>(loc, type, y, constant({1, 1, 1, C}, scale, loc), shift);
    y = b_.create<mlir::tosa::AddOp>(loc, type, y, constant({1, 1, 1, C}, bias, loc));
    define(n, {y, x.shape, true});
  }

  // Tile: copies of the input side by side along each axis (a concat per repeated axis).
  void tile(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {});
    Tensor x = input(n, 0);
    const auto& reps = const_input(n, 1, "Tile repeats").data;
    if (reps.size() != x.shape.size()) fail(fmt::format("Tile needs {} repeats, got {}", x.shape.size(), reps.size()), node_name(n));
    static const int kPos[4] = {0, 3, 1, 2};
    for (size_t d = 0; d < reps.size(); ++d) {
      int64_t k = int64_t(reps[d]);
      if (k < 1) fail("Tile repeats must be positive", node_name(n));
      if (k == 1) continue;
      std::vector<Value> parts(size_t(k), x.value);
      x.shape[d] *= k;
      int axis = x.nhwc ? kPos[d] : int(d);
      x.value = b_.create<mlir::tosa::ConcatOp>(loc, tensor_type(x.nhwc ? to_nhwc(x.shape) : x.shape), parts, axis);
    }
    define(n, x);
  }

  // PRelu(x, slope) = max(x, 0) + slope * min(x, 0): two clamps, a per-channel scale, an add.
  void prelu(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {});
    const Tensor& x = input(n, 0);
    Tensor out;
    auto [xv, slope] = broadcast_pair(n, x, input(n, 1), out, loc);
    if (out.shape != x.shape) fail("PRelu slope must broadcast to the input's shape", node_name(n));
    auto t = xv.getType();
    Value pos = make_clamp(xv, 0.0f, std::numeric_limits<float>::infinity(), loc);
    Value neg = make_clamp(xv, -std::numeric_limits<float>::infinity(), 0.0f, loc);
    Value scaled = b_.create<mlir::tosa::MulOp>(loc, t, neg, slope, b_.getI8IntegerAttr(0));
    out.value = b_.create<mlir::tosa::AddOp>(loc, t, pos, scaled);
    define(n, out);
  }

  void pool(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "storage_order", "strides"});
    const Tensor& x = input(n, 0);
    if (x.shape.size() == 5) return pool_3d(n, x, loc);
    bool indices = n.output_size() > 1 && !n.output(1).empty();
    if (indices && x.shape.size() != 4) fail("MaxPool's Indices output is supported for 2-D pools only", node_name(n));
    if (x.shape.size() != 4) fail("only 1-D, 2-D and 3-D pooling is supported", node_name(n));
    auto k = attr_ints(n, "kernel_shape", {});
    if (k.size() != 2) fail("kernel_shape must have 2 values", node_name(n));
    auto stride = attr_ints(n, "strides", {1, 1});
    auto dil = attr_ints(n, "dilations", {1, 1});
    if (dil.size() != 2 || dil[0] < 1 || dil[1] < 1) fail("dilations must be 2 positive values", node_name(n));
    bool dilated = dil[0] != 1 || dil[1] != 1, avg = n.op_type() == "AveragePool";
    if (dilated && (indices || avg)) fail("dilations are supported on MaxPool without the Indices output", node_name(n));
    auto pad = pads_of(n, {x.shape[2], x.shape[3]}, k, stride, dil);
    // The extent a window spans: dilation x (kernel - 1) + 1.
    std::vector<int64_t> ke{dil[0] * (k[0] - 1) + 1, dil[1] * (k[1] - 1) + 1};
    if (attr_i(n, "ceil_mode", 0)) {
      // Round the output size up, dropping a last window that would start in the end padding,
      // and pad the end far enough for it. Those pads are never counted in a divisor.
      if (avg && attr_i(n, "count_include_pad", 0))
        fail("AveragePool with ceil_mode=1 and count_include_pad=1 is not supported", node_name(n));
      for (int d = 0; d < 2; ++d) {
        int64_t size = x.shape[size_t(2 + d)], before = pad[size_t(2 * d)], after = pad[size_t(2 * d + 1)];
        int64_t span = size + before + after - ke[size_t(d)], s = stride[size_t(d)];
        int64_t out = (span + s - 1) / s + 1;
        if ((out - 1) * s >= size + before) --out;
        pad[size_t(2 * d + 1)] = std::max(after, (out - 1) * s + ke[size_t(d)] - size - before);
      }
    }
    int64_t OH = (x.shape[2] + pad[0] + pad[1] - ke[0]) / stride[0] + 1, OW = (x.shape[3] + pad[2] + pad[3] - ke[1]) / stride[1] + 1;
    if (OH < 1 || OW < 1) fail("the pooling window is larger than the padded input", node_name(n));
    std::vector<int64_t> out{x.shape[0], x.shape[1], OH, OW};
    Value in = x.nhwc ? x.value : transpose(x.value, {0, 2, 3, 1}, loc);
    if (dilated) {  // TOSA's max_pool2d has no dilation: straight to tpu.pool
      Value y = b_.create<tpu::PoolOp>(loc, tensor_type(to_nhwc(out)), in, b_.getStringAttr("max"), b_.getDenseI64ArrayAttr(k),
                                       b_.getDenseI64ArrayAttr(stride), b_.getDenseI64ArrayAttr(pad), b_.getStringAttr(node_name(n)),
                                       nullptr, b_.getDenseI64ArrayAttr(dil));
      return define(n, {y, out, true});
    }
    bool padded = pad[0] || pad[1] || pad[2] || pad[3];
    if (avg && padded && attr_i(n, "count_include_pad", 0)) {
      // TOSA's avg_pool2d leaves padding out of the divisor; ONNX's count_include_pad=1
      // counts it, which is average pooling of an explicitly zero-padded input.
      auto ptype = mlir::RankedTensorType::get({4, 2}, b_.getI64Type());
      std::vector<int64_t> p{0, 0, pad[0], pad[1], pad[2], pad[3], 0, 0};
      Value pads = b_.create<mlir::tosa::ConstOp>(loc, ptype, mlir::DenseElementsAttr::get(ptype, llvm::ArrayRef<int64_t>(p)));
      auto is = mlir::cast<mlir::RankedTensorType>(in.getType()).getShape();
      in = b_.create<mlir::tosa::PadOp>(loc, tensor_type({is[0], is[1] + pad[0] + pad[1], is[2] + pad[2] + pad[3], is[3]}), in,
                                        pads);
      pad = {0, 0, 0, 0};
    }
    Value y;
    if (avg)
      y = b_.create<mlir::tosa::AvgPool2dOp>(loc, tensor_type(to_nhwc(out)), in, b_.getDenseI64ArrayAttr(k),
                                             b_.getDenseI64ArrayAttr(stride), b_.getDenseI64ArrayAttr(pad),
                                             mlir::TypeAttr::get(b_.getF32Type()), nullptr);
    else
      y = b_.create<mlir::tosa::MaxPool2dOp>(loc, tensor_type(to_nhwc(out)), in, b_.getDenseI64ArrayAttr(k),
                                             b_.getDenseI64ArrayAttr(stride), b_.getDenseI64ArrayAttr(pad));
    define(n, {y, out, true});
    if (indices) {
      int64_t order = attr_i(n, "storage_order", 0);
      if (order != 0 && order != 1) fail(fmt::format("MaxPool storage_order {} is not 0 or 1", order), node_name(n));
      if (numel(x.shape) > (int64_t(1) << 24))
        fail(fmt::format("MaxPool's Indices of a {}-element input: indices are computed in fp32 and must stay below 2^24",
                         numel(x.shape)),
             node_name(n));
      Value z = b_.create<tpu::PoolArgmaxOp>(loc, mlir::RankedTensorType::get(to_nhwc(out), b_.getI32Type()), in,
                                             b_.getDenseI64ArrayAttr(k), b_.getDenseI64ArrayAttr(stride),
                                             b_.getDenseI64ArrayAttr(pad), b_.getI64IntegerAttr(order),
                                             b_.getStringAttr(node_name(n)));
      values_[n.output(1)] = {z, out, true};
    }
  }

  // Imports `m`, a node built to express another one (its names carry a '#' tag), and
  // returns its first output.
  const Tensor& sub_node(const onnx::NodeProto& m) {
    import_node(m);
    return values_.at(m.output(0));
  }
  static void set_ints(onnx::NodeProto& m, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = m.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  // A node like n, named after it with `tag`, with n's attributes except those in `drop`.
  onnx::NodeProto derived_node(const onnx::NodeProto& n, const std::string& tag, std::initializer_list<const char*> drop) {
    onnx::NodeProto m;
    m.set_op_type(n.op_type());
    m.set_name(node_name(n) + tag);
    for (const auto& a : n.attribute())
      if (std::none_of(drop.begin(), drop.end(), [&](const char* d) { return a.name() == d; })) *m.add_attribute() = a;
    m.add_output(n.output(0) + tag);
    return m;
  }
  // Explicit [begin..., end...] pads of a Conv or pooling node over `in`, from auto_pad or pads.
  std::vector<int64_t> explicit_pads(const onnx::NodeProto& n, const std::vector<int64_t>& in, const std::vector<int64_t>& k,
                                     const std::vector<int64_t>& stride, const std::vector<int64_t>& dil) {
    size_t r = in.size();
    std::string ap = attr_s(n, "auto_pad", "NOTSET");
    std::vector<int64_t> p = attr_ints(n, "pads", std::vector<int64_t>(2 * r, 0));
    if (p.size() != 2 * r) fail(fmt::format("pads must have {} values", 2 * r), node_name(n));
    if (ap == "VALID") p.assign(2 * r, 0);
    else if (ap == "SAME_UPPER" || ap == "SAME_LOWER")
      for (size_t i = 0; i < r; ++i) {
        int64_t out = (in[i] + stride[i] - 1) / stride[i];
        int64_t total = std::max<int64_t>(0, (out - 1) * stride[i] + (k[i] - 1) * dil[i] + 1 - in[i]);
        int64_t small = total / 2;
        p[i] = ap == "SAME_UPPER" ? small : total - small;
        p[i + r] = total - p[i];
      }
    else if (ap != "NOTSET") fail(fmt::format("auto_pad '{}' is not supported", ap), node_name(n));
    return p;
  }

  // A 3-D pool is separable. H and W are pooled with the depth folded into the channels
  // ([N, C*D, H, W], channel c*D + d), then the depth across channels: output channel
  // (c, od) is the maximum (or the weighted sum) of input channels (c, od*sd + kd*dd - pd),
  // picked by 1x1 convolutions with 0/1 weights (exact: one nonzero term each). The image
  // stays C*D channels wide (pooling the depth as a height would leave C in the lanes).
  void pool_3d(const onnx::NodeProto& n, const Tensor& x, mlir::Location loc) {
    if (n.output_size() > 1 && !n.output(1).empty()) fail("MaxPool's Indices output is supported for 2-D pools only", node_name(n));
    auto k = attr_ints(n, "kernel_shape", {});
    if (k.size() != 3) fail("kernel_shape of a 3-D pool must have 3 values", node_name(n));
    auto stride = per_axis(n, "strides", 1, 3), dil = per_axis(n, "dilations", 1, 3);
    int64_t N = x.shape[0], C = x.shape[1], D = x.shape[2], H = x.shape[3], W = x.shape[4];
    auto p = explicit_pads(n, {D, H, W}, k, stride, dil);
    onnx::NodeProto hw = derived_node(n, "#hw", {"auto_pad", "kernel_shape", "strides", "dilations", "pads", "storage_order"});
    values_[n.input(0) + "#hw"] = {reshape(x.value, {N, C * D, H, W}, loc), {N, C * D, H, W}, false};
    hw.add_input(n.input(0) + "#hw");
    set_ints(hw, "kernel_shape", {k[1], k[2]});
    set_ints(hw, "strides", {stride[1], stride[2]});
    set_ints(hw, "dilations", {dil[1], dil[2]});
    set_ints(hw, "pads", {p[1], p[2], p[4], p[5]});
    Tensor y1 = sub_node(hw);
    // The depth's windows, with ceil_mode's rule (no window starts in the end padding).
    bool avg = n.op_type() == "AveragePool", ceil = attr_i(n, "ceil_mode", 0) != 0;
    int64_t span = D + p[0] + p[3] - (k[0] - 1) * dil[0] - 1;
    int64_t OD = (ceil ? (span + stride[0] - 1) / stride[0] : span / stride[0]) + 1;
    if (ceil && (OD - 1) * stride[0] >= D + p[0]) --OD;
    if (span < 0 || OD < 1) fail("the pooling window is deeper than the padded input", node_name(n));
    bool count_pad = avg && attr_i(n, "count_include_pad", 0) != 0;
    // taps[od]: the source depth of each tap inside the input; counted: taps inside the declared padding too.
    auto taps = std::vector<std::vector<int64_t>>(size_t(OD));
    std::vector<int64_t> counted(size_t(OD), 0);
    for (int64_t od = 0; od < OD; ++od)
      for (int64_t kd = 0; kd < k[0]; ++kd) {
        int64_t d = od * stride[0] + kd * dil[0] - p[0];
        if (d >= 0 && d < D) taps[size_t(od)].push_back(d);
        if (d >= -p[0] && d < D + p[3]) ++counted[size_t(od)];
      }
    for (const auto& t : taps)
      if (t.empty()) fail("a pooling window lies entirely in the depth padding", node_name(n));
    ConvGeometry one{{1, 1}, {1, 1}, {0, 0, 0, 0}};
    auto pick = [&](const std::function<float(int64_t od, int64_t d)>& weight) {
      Constant w{{C * OD, C * D, 1, 1}, std::vector<float>(size_t(C * OD * C * D), 0.0f)};
      for (int64_t c = 0; c < C; ++c)
        for (int64_t od = 0; od < OD; ++od)
          for (int64_t d = 0; d < D; ++d) w.data[size_t((c * OD + od) * C * D + c * D + d)] = weight(od, d);
      return conv_of(n, y1, w, {}, loc, &one);
    };
    Tensor y;
    if (avg) {
      y = pick([&](int64_t od, int64_t d) {
        const auto& t = taps[size_t(od)];
        float cnt = float(count_pad ? counted[size_t(od)] : int64_t(t.size()));
        return float(std::count(t.begin(), t.end(), d)) / cnt;
      });
    } else {
      // One pick per tap; a tap in the padding repeats the window's first tap (max is idempotent).
      for (int64_t kd = 0; kd < k[0]; ++kd) {
        Tensor t = pick([&](int64_t od, int64_t d) {
          const auto& ts = taps[size_t(od)];
          return float(d == (size_t(kd) < ts.size() ? ts[size_t(kd)] : ts[0]));
        });
        y = kd == 0 ? t : Tensor{b_.create<mlir::tosa::MaximumOp>(loc, y.value.getType(), y.value, t.value), t.shape, true};
      }
    }
    std::vector<int64_t> out{N, C, OD, y1.shape[2], y1.shape[3]};
    define(n, {reshape(to_nchw_value(y, loc), out, loc), out, false});
  }

  void global_pool(const onnx::NodeProto& n, mlir::Location loc) {
    const Tensor& x = input(n, 0);
    if (x.shape.size() != 4) fail(fmt::format("{} needs a 4-D input", n.op_type()), node_name(n));
    std::vector<int64_t> out{x.shape[0], x.shape[1], 1, 1};
    Value in = x.nhwc ? x.value : transpose(x.value, {0, 2, 3, 1}, loc);
    auto k = b_.getDenseI64ArrayAttr({x.shape[2], x.shape[3]}), one = b_.getDenseI64ArrayAttr({1, 1}),
         none = b_.getDenseI64ArrayAttr({0, 0, 0, 0});
    Value y = n.op_type() == "GlobalMaxPool"
                  ? Value(b_.create<mlir::tosa::MaxPool2dOp>(loc, tensor_type(to_nhwc(out)), in, k, one, none))
                  : Value(b_.create<mlir::tosa::AvgPool2dOp>(loc, tensor_type(to_nhwc(out)), in, k, one, none,
                                                             mlir::TypeAttr::get(b_.getF32Type()), nullptr));
    define(n, {y, out, true});
  }

  // Flatten and Reshape follow NCHW order: images go back to NCHW first.
  void reshape_to(const onnx::NodeProto& n, const std::vector<int64_t>& shape, mlir::Location loc) {
    const Tensor& x = input(n, 0);
    if (numel(shape) != numel(x.shape)) fail("reshape changes the number of elements", node_name(n));
    if (x.empty()) return define(n, {Value(), shape, false});
    Value v = x.nhwc ? to_nchw_value(x, loc) : x.value;
    if (shape.size() == 4 && x.nhwc) {
      // Stay in the chip's layout for images.
      Value r = reshape(v, shape, loc);
      define(n, {transpose(r, {0, 2, 3, 1}, loc), shape, true});
      return;
    }
    define(n, {reshape(v, shape, loc), shape, false});
  }

  // Squeeze/Unsqueeze only change the shape: reshapes. Axes are an attribute before opset 13
  // and a constant input from 13 on.
  void squeeze(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {"axes"});
    reshape_to(n, reshaped_shape(n, input(n, 0).shape), loc);
  }

  // The output shape of a Reshape, Flatten, Squeeze or Unsqueeze of a tensor of shape `in`:
  // one set of rules for activations and for constants folded at import. Reshape: 0 copies
  // the input's dimension (is an empty dimension with allowzero=1), -1 is inferred.
  std::vector<int64_t> reshaped_shape(const onnx::NodeProto& n, const std::vector<int64_t>& in) {
    const std::string& op = n.op_type();
    std::vector<int64_t> shape;
    if (op == "Flatten") {
      int64_t axis = attr_i(n, "axis", 1);
      if (axis < 0) axis += int64_t(in.size());
      int64_t outer = 1, inner = 1;
      for (size_t i = 0; i < in.size(); ++i) (int64_t(i) < axis ? outer : inner) *= in[i];
      return {outer, inner};
    }
    if (op == "Reshape") {
      const Constant& s = const_input(n, 1, "Reshape shape");
      bool allowzero = attr_i(n, "allowzero", 0) != 0;
      int64_t known = 1, infer = -1;
      for (size_t i = 0; i < s.data.size(); ++i) {
        int64_t d = int64_t(s.data[i]);
        if (d == 0 && i >= in.size() && !allowzero)
          fail(fmt::format("Reshape shape[{}] = 0 copies a dimension the {}-D input does not have", i, in.size()), node_name(n));
        if (d == 0 && !allowzero) d = in.at(i);
        if (d == -1) infer = int64_t(i), d = 1;
        else known *= d;
        shape.push_back(d);
      }
      if (infer >= 0) {
        if (known == 0) fail("Reshape cannot infer a -1 dimension beside a 0 (allowzero=1)", node_name(n));
        shape[size_t(infer)] = numel(in) / known;
      }
      if (numel(shape) != numel(in))
        fail(fmt::format("Reshape of [{}] to [{}] changes the number of elements", fmt::join(in, ", "), fmt::join(shape, ", ")),
             node_name(n));
      return shape;
    }
    bool unsqueeze = op == "Unsqueeze";  // or Squeeze; axes are an attribute before opset 13, an input from 13 on
    std::vector<int64_t> axes = attr_ints(n, "axes", {});
    if (n.input_size() > 1 && !n.input(1).empty())
      for (float a : const_input(n, 1, unsqueeze ? "Unsqueeze axes" : "Squeeze axes").data) axes.push_back(int64_t(a));
    int64_t rank = int64_t(in.size()) + (unsqueeze ? int64_t(axes.size()) : 0);
    std::vector<bool> picked(size_t(rank), false);
    for (int64_t a : axes) {
      int64_t k = a < 0 ? a + rank : a;
      if (k < 0 || k >= rank || picked[size_t(k)])
        fail(fmt::format("axis {} is out of range or repeated for a {}-D result", a, rank), node_name(n));
      picked[size_t(k)] = true;
    }
    if (unsqueeze) {
      if (axes.empty()) fail("Unsqueeze needs axes", node_name(n));
      size_t j = 0;
      for (int64_t k = 0; k < rank; ++k) shape.push_back(picked[size_t(k)] ? 1 : in[j++]);
    } else {
      for (size_t k = 0; k < in.size(); ++k) {
        bool drop = axes.empty() ? in[k] == 1 : bool(picked[k]);
        if (drop && in[k] != 1) fail(fmt::format("cannot squeeze dimension {} of size {}", k, in[k]), node_name(n));
        if (!drop) shape.push_back(in[k]);
      }
    }
    return shape;
  }

  // A window [start, start + size) per logical dimension, as tosa.slice on the stored layout.
  Tensor window(const Tensor& x, const std::vector<int64_t>& start, const std::vector<int64_t>& size, mlir::Location loc) {
    static const size_t kPos[4] = {0, 3, 1, 2};
    std::vector<int64_t> vs(start.size()), vz(size.size());
    for (size_t d = 0; d < start.size(); ++d) {
      size_t k = x.nhwc ? kPos[d] : d;
      vs[k] = start[d], vz[k] = size[d];
    }
    Value y = b_.create<mlir::tosa::SliceOp>(loc, tensor_type(vz), x.value, b_.getDenseI64ArrayAttr(vs),
                                             b_.getDenseI64ArrayAttr(vz));
    return {y, size, x.nhwc};
  }

  // The indices a Slice picks along a dimension of `dim`: ONNX clamps start and end to [0, dim]
  // for positive steps, to [-1, dim - 1] for negative ones, after adding dim to negatives.
  static std::vector<int64_t> slice_indices(int64_t dim, int64_t start, int64_t end, int64_t step) {
    auto clampi = [&](int64_t v) {
      v = v < 0 ? v + dim : v;
      return step > 0 ? std::clamp<int64_t>(v, 0, dim) : std::clamp<int64_t>(v, -1, dim - 1);
    };
    std::vector<int64_t> idx;
    for (int64_t k = clampi(start), e = clampi(end); step > 0 ? k < e : k > e; k += step) idx.push_back(k);
    return idx;
  }

  void slice(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {});
    const Tensor& x = input(n, 0);
    size_t r = x.shape.size();
    auto ints = [&](int i, const char* what) {
      std::vector<int64_t> v;
      if (n.input_size() > i && !n.input(i).empty())
        for (float f : const_input(n, i, what).data) v.push_back(int64_t(f));
      return v;
    };
    auto starts = ints(1, "Slice starts"), ends = ints(2, "Slice ends"), axes = ints(3, "Slice axes"), steps = ints(4, "Slice steps");
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
    if (starts.size() != ends.size() || axes.size() != starts.size() || (!steps.empty() && steps.size() != starts.size()))
      fail("Slice starts, ends, axes and steps must have one length", node_name(n));
    std::vector<int64_t> start(r, 0), size = x.shape;
    std::vector<std::pair<int64_t, std::vector<int64_t>>> strided;  // axis, indices (in the window) for steps != 1
    std::vector<int64_t> out_shape = x.shape;
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = axes[i] < 0 ? axes[i] + int64_t(r) : axes[i];
      if (a < 0 || a >= int64_t(r)) fail(fmt::format("Slice axis {} is out of range", axes[i]), node_name(n));
      int64_t step = steps.empty() ? 1 : steps[i];
      if (step == 0) fail("Slice step 0 is not allowed", node_name(n));
      std::vector<int64_t> idx = slice_indices(x.shape[size_t(a)], starts[i], ends[i], step);
      out_shape[size_t(a)] = int64_t(idx.size());
      if (idx.empty()) continue;  // an empty output (no data)
      if (step == 1) {
        start[size_t(a)] = idx.front(), size[size_t(a)] = int64_t(idx.size());
      } else {
        int64_t lo = *std::min_element(idx.begin(), idx.end()), hi = *std::max_element(idx.begin(), idx.end());
        start[size_t(a)] = lo, size[size_t(a)] = hi - lo + 1;
        for (auto& k : idx) k -= lo;
        strided.push_back({a, idx});
      }
    }
    if (Tensor{Value(), out_shape}.empty()) return define(n, {Value(), out_shape, false});
    Tensor y = window(x, start, size, loc);
    for (const auto& [a, idx] : strided) y = pick(y, a, idx, loc);
    define(n, y);
  }

  void split(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {"axis", "split"});
    const Tensor& x = input(n, 0);
    int64_t r = int64_t(x.shape.size()), axis = attr_i(n, "axis", 0);
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r) fail(fmt::format("Split axis {} is out of range", axis), node_name(n));
    std::vector<int64_t> parts = attr_ints(n, "split", {});
    if (n.input_size() > 1 && !n.input(1).empty())
      for (float f : const_input(n, 1, "Split sizes").data) parts.push_back(int64_t(f));
    int64_t dim = x.shape[size_t(axis)], outs = n.output_size();
    if (parts.empty()) {
      if (dim % outs) fail(fmt::format("Split of {} into {} equal parts", dim, outs), node_name(n));
      parts.assign(size_t(outs), dim / outs);
    }
    int64_t total = 0;
    for (int64_t p : parts) {
      if (p < 0) fail(fmt::format("Split part {} is negative", p), node_name(n));
      total += p;
    }
    if (int64_t(parts.size()) != outs || total != dim)
      fail(fmt::format("Split sizes add up to {} in {} parts for a dimension of {} and {} outputs", total, parts.size(), dim,
                       outs),
           node_name(n));
    std::vector<int64_t> start(size_t(r), 0);
    for (int64_t i = 0; i < outs; ++i) {
      std::vector<int64_t> size = x.shape;
      size[size_t(axis)] = parts[size_t(i)];
      values_[n.output(int(i))] = Tensor{Value(), size}.empty() ? Tensor{Value(), size, false} : window(x, start, size, loc);
      start[size_t(axis)] += parts[size_t(i)];
    }
  }

  void concat(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {"axis"});
    std::vector<Tensor> xs;
    for (int i = 0; i < n.input_size(); ++i) xs.push_back(input(n, i));
    size_t r = xs[0].shape.size();
    int64_t axis = attr_i(n, "axis", 1);
    if (axis < 0) axis += int64_t(r);
    if (axis < 0 || axis >= int64_t(r)) fail(fmt::format("axis {} is out of range for {}-D inputs", axis, r), node_name(n));
    std::vector<int64_t> shape = xs[0].shape;
    shape[size_t(axis)] = 0;
    for (const Tensor& t : xs) {
      for (size_t d = 0; d < r; ++d)
        if (t.shape.size() != r || (int64_t(d) != axis && t.shape[d] != xs[0].shape[d]))
          fail("Concat inputs must agree in every dimension but the axis", node_name(n));
      shape[size_t(axis)] += t.shape[size_t(axis)];
    }
    // Images stay NHWC (the axis moves with the layout); anything else is joined as given.
    bool nhwc = r == 4 && std::any_of(xs.begin(), xs.end(), [](const Tensor& t) { return t.nhwc; });
    static const int32_t kPos[4] = {0, 3, 1, 2};
    std::vector<Value> vals;
    for (const Tensor& t : xs) vals.push_back(nhwc && !t.nhwc ? transpose(t.value, {0, 2, 3, 1}, loc) : t.value);
    int32_t vaxis = nhwc ? kPos[axis] : int32_t(axis);
    Value y = b_.create<mlir::tosa::ConcatOp>(loc, tensor_type(nhwc ? to_nhwc(shape) : shape), vals, vaxis);
    define(n, {y, shape, nhwc});
  }

  void transpose_op(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {"perm"});
    const Tensor& x = input(n, 0);
    size_t r = x.shape.size();
    std::vector<int64_t> perm = attr_ints(n, "perm", {});
    if (perm.empty())
      for (size_t k = r; k-- > 0;) perm.push_back(int64_t(k));
    std::vector<bool> seen(r, false);
    if (perm.size() != r) fail(fmt::format("perm has {} entries for a {}-D input", perm.size(), r), node_name(n));
    for (int64_t p : perm) {
      if (p < 0 || p >= int64_t(r) || seen[size_t(p)]) fail("perm is not a permutation of the input's dimensions", node_name(n));
      seen[size_t(p)] = true;
    }
    // An image's value is NHWC: logical (NCHW) dimension d is value dimension kPos[d].
    static const int32_t kPos[4] = {0, 3, 1, 2};
    std::vector<int32_t> q;
    std::vector<int64_t> shape;
    for (int64_t p : perm) q.push_back(x.nhwc ? kPos[p] : int32_t(p)), shape.push_back(x.shape[size_t(p)]);
    define(n, {x.empty() ? Value() : transpose(x.value, q, loc), shape, false});
  }

  void flatten(const onnx::NodeProto& n, mlir::Location loc) { reshape_to(n, reshaped_shape(n, input(n, 0).shape), loc); }

  void reshape_op(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {"allowzero"});
    reshape_to(n, reshaped_shape(n, input(n, 0).shape), loc);
  }

  void batchnorm(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {"epsilon", "momentum", "spatial", "training_mode"});
    if (attr_i(n, "spatial", 1) == 0)
      fail("BatchNormalization with spatial=0 (per-element statistics) is not supported", node_name(n));
    const Tensor& x = input(n, 0);
    float eps = attr_f(n, "epsilon", 1e-5f);
    const auto& gamma = const_input(n, 1, "BatchNormalization scale").data;
    const auto& beta = const_input(n, 2, "BatchNormalization bias").data;
    const auto& mean = const_input(n, 3, "BatchNormalization mean").data;
    const auto& var = const_input(n, 4, "BatchNormalization var").data;
    size_t C = gamma.size();
    int64_t channels = x.shape.size() > 1 ? x.shape[1] : 0;
    for (const auto* v : {&beta, &mean, &var})
      if (v->size() != C || int64_t(C) != channels)
        fail(fmt::format("BatchNormalization parameters must have one value per channel ({})", channels), node_name(n));
    if (attr_i(n, "training_mode", 0) != 0) return batchnorm_training(n, x, gamma, beta, mean, var, eps, loc);
    std::vector<float> s(C), t(C);
    for (size_t c = 0; c < C; ++c) {
      if (!(var[c] + eps > 0))
        fail(fmt::format("BatchNormalization variance {} + epsilon {} at channel {} is not positive", var[c], eps, c),
             node_name(n));
      s[c] = gamma[c] / std::sqrt(var[c] + eps);
      t[c] = beta[c] - mean[c] * s[c];
    }
    // y = x * s + t per channel (the last dimension in NHWC).
    std::vector<int64_t> cs = x.nhwc ? std::vector<int64_t>{1, 1, 1, int64_t(C)} : std::vector<int64_t>{1, int64_t(C)};
    if (!x.nhwc && x.shape.size() != 2) fail("BatchNormalization needs an image or a 2-D input", node_name(n));
    Value m = b_.create<mlir::tosa::MulOp>(loc, x.value.getType(), x.value, constant(cs, s, loc), b_.getI8IntegerAttr(0));
    Value a = b_.create<mlir::tosa::AddOp>(loc, x.value.getType(), m, constant(cs, t, loc));
    define(n, {a, x.shape, x.nhwc});
  }

  // Training mode normalizes with the batch's own statistics: the mean and population
  // variance of each channel over every other dimension, and also returns the running
  // statistics moved toward them by `momentum`. A channel's sum over the P = numel / C
  // positions is a matmul of the channel-major [C, P] activation with a column of ones
  // (fp32 accumulation); the variance is taken of the centred values, not E[x^2] - mean^2.
  void batchnorm_training(const onnx::NodeProto& n, const Tensor& x, const std::vector<float>& gamma, const std::vector<float>& beta,
                          const std::vector<float>& mean_in, const std::vector<float>& var_in, float eps, mlir::Location loc) {
    if (!x.nhwc && x.shape.size() != 2) fail("BatchNormalization needs an image or a 2-D input", node_name(n));
    int64_t C = int64_t(gamma.size()), P = numel(x.shape) / C;
    float momentum = attr_f(n, "momentum", 0.9f);
    std::vector<int64_t> row{1, C}, bshape = x.nhwc ? std::vector<int64_t>{1, 1, 1, C} : row;
    auto xtype = x.value.getType();
    auto scalar = [&](float v) { return constant({1, 1}, {v}, loc); };
    // The per-channel mean over positions of v (the stored shape of x) as a [1, C] row.
    auto channel_mean = [&](Value v) {
      Value cp = transpose(reshape(v, {P, C}, loc), {1, 0}, loc);
      Value sum = b_.create<mlir::tosa::FullyConnectedOp>(loc, tensor_type({C, 1}), cp, constant({1, P}, std::vector<float>(size_t(P), 1.0f), loc),
                                                          constant({1}, {0.0f}, loc), nullptr);
      Value m = b_.create<mlir::tosa::MulOp>(loc, tensor_type({C, 1}), sum, scalar(1.0f / float(P)), b_.getI8IntegerAttr(0));
      return transpose(m, {1, 0}, loc);
    };
    Value mean = channel_mean(x.value);
    Value centred = b_.create<mlir::tosa::SubOp>(loc, xtype, x.value, reshape(mean, bshape, loc));
    Value sq = b_.create<mlir::tosa::MulOp>(loc, xtype, centred, centred, b_.getI8IntegerAttr(0));
    Value var = channel_mean(sq);
    Value rstd = b_.create<mlir::tosa::RsqrtOp>(loc, tensor_type(row), b_.create<mlir::tosa::AddOp>(loc, tensor_type(row), var, scalar(eps)));
    Value y = b_.create<mlir::tosa::MulOp>(loc, xtype, centred, reshape(rstd, bshape, loc), b_.getI8IntegerAttr(0));
    y = b_.create<mlir::tosa::MulOp>(loc, xtype, y, constant(bshape, gamma, loc), b_.getI8IntegerAttr(0));
    y = b_.create<mlir::tosa::AddOp>(loc, xtype, y, constant(bshape, beta, loc));
    define(n, {y, x.shape, x.nhwc});
    // running = given * momentum + batch * (1 - momentum)
    auto running = [&](Value batch, const std::vector<float>& given) {
      std::vector<float> g(given);
      for (float& v : g) v *= momentum;
      Value r = b_.create<mlir::tosa::MulOp>(loc, tensor_type(row), batch, scalar(1.0f - momentum), b_.getI8IntegerAttr(0));
      return reshape(b_.create<mlir::tosa::AddOp>(loc, tensor_type(row), r, constant(row, g, loc)), {C}, loc);
    };
    if (n.output_size() > 1 && !n.output(1).empty()) values_[n.output(1)] = {running(mean, mean_in), {C}, false};
    if (n.output_size() > 2 && !n.output(2).empty()) values_[n.output(2)] = {running(var, var_in), {C}, false};
  }

  // ReduceMean/ReduceSum: the reduced axes moved last (a transpose when they are not) and
  // merged, then a row sum (times 1/K for a mean): the form the lowering recognizes inside a
  // layer normalization exported as its parts (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt,
  // Div: opsets before 17), and otherwise makes a matmul with a column of ones. Over H and W
  // of an image: a global average pool (times H*W for a sum).
  void reduce(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {"axes", "keepdims", "noop_with_empty_axes"});
    const Tensor& x = input(n, 0);
    int64_t r = int64_t(x.shape.size());
    std::vector<int64_t> axes = attr_ints(n, "axes", {});
    if (n.input_size() > 1 && !n.input(1).empty())
      for (float f : const_input(n, 1, "axes").data) axes.push_back(int64_t(f));
    for (auto& a : axes) {
      a = a < 0 ? a + r : a;
      if (a < 0 || a >= r) fail(fmt::format("{} axis out of range for a {}-D input", n.op_type(), r), node_name(n));
    }
    std::sort(axes.begin(), axes.end());
    axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
    bool keep = attr_i(n, "keepdims", 1) != 0, mean = n.op_type() == "ReduceMean";
    if (axes.empty() && attr_i(n, "noop_with_empty_axes", 0)) return define(n, x);
    if (axes.empty())
      for (int64_t a = 0; a < r; ++a) axes.push_back(a);
    if (r == 4 && axes == std::vector<int64_t>{2, 3}) {
      std::vector<int64_t> out{x.shape[0], x.shape[1], 1, 1};
      Value in = x.nhwc ? x.value : transpose(x.value, {0, 2, 3, 1}, loc);
      Value y = b_.create<mlir::tosa::AvgPool2dOp>(loc, tensor_type(to_nhwc(out)), in, b_.getDenseI64ArrayAttr({x.shape[2], x.shape[3]}),
                                                   b_.getDenseI64ArrayAttr({1, 1}), b_.getDenseI64ArrayAttr({0, 0, 0, 0}),
                                                   mlir::TypeAttr::get(b_.getF32Type()), nullptr);
      if (!mean)
        y = b_.create<mlir::tosa::MulOp>(loc, y.getType(), y, constant({1, 1, 1, 1}, {float(x.shape[2] * x.shape[3])}, loc),
                                         b_.getI8IntegerAttr(0));
      Tensor t{y, out, true};
      if (keep) return define(n, t);
      values_[n.output(0) + "#4d"] = t;
      onnx::NodeProto m;
      m.set_op_type("Flatten"), m.add_input(n.output(0) + "#4d"), m.add_output(n.output(0)), m.set_name(node_name(n));
      return flatten(m, loc);
    }
    // [kept..., K]: the kept axes in order, then the reduced ones merged.
    Value v = x.nhwc ? to_nchw_value(x, loc) : x.value;
    std::vector<int32_t> perm;
    std::vector<int64_t> kept, out;
    int64_t K = 1;
    for (int64_t a = 0; a < r; ++a)
      if (!std::binary_search(axes.begin(), axes.end(), a)) perm.push_back(int32_t(a)), kept.push_back(x.shape[size_t(a)]);
    for (int64_t a : axes) perm.push_back(int32_t(a)), K *= x.shape[size_t(a)];
    bool moved = false;
    for (size_t i = 0; i < perm.size(); ++i) moved |= perm[i] != int32_t(i);
    if (moved) v = transpose(v, perm, loc);
    std::vector<int64_t> rows = kept;
    rows.push_back(K);
    if (rows.size() != size_t(r)) v = reshape(v, rows, loc);
    std::vector<int64_t> red = kept;
    red.push_back(1);
    Value y = b_.create<mlir::tosa::ReduceSumOp>(loc, tensor_type(red), v, b_.getI32IntegerAttr(int32_t(red.size() - 1)));
    if (mean)
      y = b_.create<mlir::tosa::MulOp>(loc, tensor_type(red), y, constant(std::vector<int64_t>(red.size(), 1), {1.0f / float(K)}, loc),
                                       b_.getI8IntegerAttr(0));
    for (int64_t a = 0; a < r; ++a)
      if (!std::binary_search(axes.begin(), axes.end(), a)) out.push_back(x.shape[size_t(a)]);
      else if (keep) out.push_back(1);
    if (out.empty()) out.push_back(1);  // a full reduction without keepdims: one value
    if (out != red) y = reshape(y, out, loc);
    define(n, {y, out, false});
  }

  // Softmax over the last dimension of v, as TOSA (the lowering matches it back).
  Value softmax_last(Value v, const std::vector<int64_t>& shape, mlir::Location loc) {
    auto type = mlir::cast<mlir::RankedTensorType>(v.getType());
    std::vector<int64_t> red(shape);
    red.back() = 1;
    auto ax = b_.getI32IntegerAttr(int32_t(shape.size() - 1));
    Value mx = b_.create<mlir::tosa::ReduceMaxOp>(loc, tensor_type(red), v, ax);
    Value sub = b_.create<mlir::tosa::SubOp>(loc, type, v, mx);
    Value ex = b_.create<mlir::tosa::ExpOp>(loc, type, sub);
    Value sum = b_.create<mlir::tosa::ReduceSumOp>(loc, tensor_type(red), ex, ax);
    Value rcp = b_.create<mlir::tosa::ReciprocalOp>(loc, tensor_type(red), sum);
    return b_.create<mlir::tosa::MulOp>(loc, type, ex, rcp, b_.getI8IntegerAttr(0));
  }

  // Opset 13 on: softmax along one axis (moved last by a transpose when it is not). Before
  // 13: the input is flattened to 2-D at the axis and the softmax covers the whole tail.
  void softmax(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {"axis"});
    Tensor x = input(n, 0);
    if (x.nhwc) x = {to_nchw_value(x, loc), x.shape, false};
    int64_t r = int64_t(x.shape.size());
    bool old_rule = opset_ && opset_ < 13;
    int64_t axis = attr_i(n, "axis", old_rule ? 1 : -1);
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r) fail(fmt::format("Softmax axis {} is out of range for {} dimensions", axis, r), node_name(n));
    Value y;
    if (axis == r - 1) {
      y = softmax_last(x.value, x.shape, loc);
    } else if (old_rule) {
      int64_t tail = 1;
      for (int64_t i = axis; i < r; ++i) tail *= x.shape[size_t(i)];
      std::vector<int64_t> flat{numel(x.shape) / tail, tail};
      y = reshape(softmax_last(reshape(x.value, flat, loc), flat, loc), x.shape, loc);
    } else {
      std::vector<int32_t> perm;
      for (int32_t i = 0; i < int32_t(r); ++i) perm.push_back(i);
      std::swap(perm[size_t(axis)], perm.back());
      std::vector<int64_t> moved = x.shape;
      std::swap(moved[size_t(axis)], moved.back());
      y = transpose(softmax_last(transpose(x.value, perm, loc), moved, loc), perm, loc);
    }
    define(n, {y, x.shape, false});
  }

  // ---- recurrent layers (LSTM, GRU), unrolled over their static time steps ----
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
  Rnn rnn_setup(const onnx::NodeProto& n, mlir::Location loc, int64_t gates, std::initializer_list<const char*> activations) {
    const std::string& op = n.op_type();
    Rnn r;
    r.gates = gates;
    r.batch_first = attr_i(n, "layout", 0) != 0;
    if (attr(n, "clip")) fail(op + " attribute clip is not supported", node_name(n));
    if (auto* a = attr(n, "activations")) {
      std::vector<const char*> want(activations);
      for (int i = 0; i < a->strings_size(); ++i)
        if (a->strings(i) != want[size_t(i) % want.size()])
          fail(fmt::format("{} activation '{}' is not supported (the defaults only)", op, a->strings(i)), node_name(n));
    }
    r.dir = attr_s(n, "direction", "forward");
    if (r.dir != "forward" && r.dir != "reverse" && r.dir != "bidirectional")
      fail(fmt::format("{} direction '{}' is not one of forward, reverse, bidirectional", op, r.dir), node_name(n));
    Tensor x = input(n, 0);
    if (x.shape.size() != 3) fail(op + " input X must be 3-D [seq, batch, input]", node_name(n));
    if (r.batch_first) x = {transpose(x.value, {1, 0, 2}, loc), {x.shape[1], x.shape[0], x.shape[2]}, false};
    r.T = x.shape[0], r.B = x.shape[1], r.I = x.shape[2];
    if (n.input_size() > 4 && !n.input(4).empty())
      for (float len : const_input(n, 4, "sequence_lens").data)
        if (int64_t(len) != r.T)
          fail(fmt::format("{} sequence_lens holds {}; only full-length sequences ({}) are supported", op, int64_t(len), r.T),
               node_name(n));
    r.W = &const_input(n, 1, "W");
    r.R = &const_input(n, 2, "R");
    r.dirs = r.dir == "bidirectional" ? 2 : 1;
    r.H = attr_i(n, "hidden_size", r.R->shape.size() == 3 ? r.R->shape[2] : 0);
    int64_t G = gates, H = r.H;
    if (r.W->shape != std::vector<int64_t>{r.dirs, G * H, r.I} || r.R->shape != std::vector<int64_t>{r.dirs, G * H, H})
      fail(fmt::format("{0} W must be [{1}, {2}, {3}] and R [{1}, {2}, {4}]", op, r.dirs, G * H, r.I, H), node_name(n));
    r.bias.assign(size_t(r.dirs * 2 * G * H), 0.0f);
    if (n.input_size() > 3 && !n.input(3).empty()) r.bias = const_input(n, 3, "B").data;
    if (r.bias.size() != size_t(r.dirs * 2 * G * H)) fail(fmt::format("{} B must have {} values", op, r.dirs * 2 * G * H), node_name(n));
    r.x2 = reshape(x.value, {r.T * r.B, r.I}, loc);
    return r;
  }
  // v [rows, K] x (gate g's rows of W or R)^T + b: a fully_connected (folded when v is constant).
  Value rnn_fc(Rnn& r, Value v, int64_t rows, const float* w, int64_t K, const std::vector<float>& b, mlir::Location loc) {
    int64_t H = r.H;
    if (auto kc = v.getDefiningOp<mlir::tosa::ConstOp>()) {  // a constant state: the product is a constant too
      std::vector<float> in, out(size_t(rows * H));
      for (float f : mlir::cast<mlir::DenseElementsAttr>(kc.getValue()).getValues<float>()) in.push_back(f);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < H; ++j) {
          double acc = b[size_t(j)];
          for (int64_t k = 0; k < K; ++k) acc += double(in[size_t(i * K + k)]) * w[j * K + k];
          out[size_t(i * H + j)] = float(acc);
        }
      return constant({rows, H}, out, loc);
    }
    Value& wc = r.weights[w];  // [N = H, K], TOSA's fully_connected layout
    if (!wc) wc = constant({H, K}, std::vector<float>(w, w + H * K), loc);
    return b_.create<mlir::tosa::FullyConnectedOp>(loc, tensor_type({rows, H}), v, wc, constant({H}, b, loc), nullptr).getResult();
  }
  // Initial state input `idx` ([dirs, B, H], or [B, dirs, H] batch first) for direction d.
  Value rnn_state(const Rnn& r, const onnx::NodeProto& n, int idx, int64_t d, mlir::Location loc) {
    if (n.input_size() <= idx || n.input(idx).empty()) return nullptr;
    const Tensor& t = input(n, idx);
    int64_t B = r.B, H = r.H, dirs = r.dirs;
    if (t.shape != (r.batch_first ? std::vector<int64_t>{B, dirs, H} : std::vector<int64_t>{dirs, B, H}))
      fail(fmt::format("{} initial state (input {}) must be [{}, {}, {}]", n.op_type(), idx, dirs, B, H), node_name(n));
    if (auto k = constants_.find(n.input(idx)); k != constants_.end()) {  // a constant state: its slice, folded
      std::vector<float> v(size_t(B * H));
      for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < H; ++j)
          v[size_t(b * H + j)] = k->second.data[size_t(r.batch_first ? (b * dirs + d) * H + j : (d * B + b) * H + j)];
      return constant({B, H}, v, loc);
    }
    Value v = r.batch_first ? transpose(t.value, {1, 0, 2}, loc) : t.value;
    Value s = b_.create<mlir::tosa::SliceOp>(loc, tensor_type({1, B, H}), v, b_.getDenseI64ArrayAttr({d, 0, 0}),
                                            b_.getDenseI64ArrayAttr({1, B, H}));
    return reshape(s, {B, H}, loc);
  }
  // Runs the steps of every direction: `step(d, xw_t, h, c)` gets the step's input
  // projections (one [B, H] per gate, biases included as `xw_bias` says) and updates the
  // states. Defines Y, Y_h and (when `with_c`) Y_c.
  void rnn_run(Rnn& r, const onnx::NodeProto& n, mlir::Location loc,
               const std::function<std::vector<float>(int64_t d, int64_t g)>& xw_bias,
               const std::function<void(int64_t d, std::vector<Value>& xw_t, Value& h, Value& c)>& step, bool with_c) {
    int64_t T = r.T, B = r.B, H = r.H, G = r.gates, dirs = r.dirs;
    auto type = tensor_type({B, H});
    std::vector<Value> ys, hs, cs;
    for (int64_t d = 0; d < dirs; ++d) {
      bool reverse = r.dir == "reverse" || d == 1;
      std::vector<Value> xw(static_cast<size_t>(G));
      for (int64_t g = 0; g < G; ++g)
        xw[size_t(g)] = rnn_fc(r, r.x2, T * B, r.W->data.data() + (d * G * H + g * H) * r.I, r.I, xw_bias(d, g), loc);
      Value h = rnn_state(r, n, 5, d, loc), c = with_c ? rnn_state(r, n, 6, d, loc) : Value();
      std::vector<Value> steps(static_cast<size_t>(T));
      for (int64_t s = 0; s < T; ++s) {
        int64_t t = reverse ? T - 1 - s : s;
        std::vector<Value> xw_t;
        for (int64_t g = 0; g < G; ++g)
          xw_t.push_back(b_.create<mlir::tosa::SliceOp>(loc, type, xw[size_t(g)], b_.getDenseI64ArrayAttr({t * B, 0}),
                                                        b_.getDenseI64ArrayAttr({B, H})));
        step(d, xw_t, h, c);
        steps[size_t(t)] = h;
      }
      Value y = T == 1 ? steps[0] : b_.create<mlir::tosa::ConcatOp>(loc, tensor_type({T * B, H}), steps, 0).getResult();
      ys.push_back(reshape(y, {T, 1, B, H}, loc));
      hs.push_back(reshape(h, {1, B, H}, loc));
      if (with_c) cs.push_back(reshape(c, {1, B, H}, loc));
    }
    auto join = [&](std::vector<Value>& v, std::vector<int64_t> shape, int32_t axis) {
      return v.size() == 1 ? v[0] : b_.create<mlir::tosa::ConcatOp>(loc, tensor_type(shape), v, axis).getResult();
    };
    Value outs[3] = {join(ys, {T, dirs, B, H}, 1), join(hs, {dirs, B, H}, 0), with_c ? join(cs, {dirs, B, H}, 0) : Value()};
    std::vector<int64_t> shapes[3] = {{T, dirs, B, H}, {dirs, B, H}, {dirs, B, H}};
    if (r.batch_first) {  // Y [B, T, dirs, H], Y_h and Y_c [B, dirs, H]
      outs[0] = transpose(outs[0], {2, 0, 1, 3}, loc), shapes[0] = {B, T, dirs, H};
      for (int k : {1, 2})
        if (outs[k]) outs[k] = transpose(outs[k], {1, 0, 2}, loc), shapes[k] = {B, dirs, H};
    }
    for (int k = 0; k < n.output_size() && k < 3; ++k)
      if (!n.output(k).empty()) values_[n.output(k)] = {outs[k], shapes[k], false};
  }

  // LSTM (gate order i, o, f, c): i, o, f = sigmoid, g = tanh, c = f * c + i * g,
  // h = o * tanh(c); peepholes add P * c to i and f (previous c) and o (new c).
  void lstm(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {"activations", "direction", "hidden_size", "layout", "clip", "input_forget", "activation_alpha",
                   "activation_beta"});
    if (attr_i(n, "input_forget", 0)) fail("LSTM attribute input_forget=1 is not supported", node_name(n));
    Rnn r = rnn_setup(n, loc, 4, {"Sigmoid", "Tanh", "Tanh"});
    int64_t B = r.B, H = r.H;
    std::vector<float> peep;  // [dirs, 3H]: i, o, f
    if (n.input_size() > 7 && !n.input(7).empty()) {
      peep = const_input(n, 7, "LSTM P").data;
      if (peep.size() != size_t(r.dirs * 3 * H)) fail(fmt::format("LSTM P must have {} values", r.dirs * 3 * H), node_name(n));
    }
    auto type = tensor_type({B, H});
    auto shift = b_.getI8IntegerAttr(0);
    auto peephole = [&](Value gate, Value state, int64_t d, int64_t k) -> Value {
      if (peep.empty() || !state) return gate;
      std::vector<float> pk(peep.begin() + (d * 3 + k) * H, peep.begin() + (d * 3 + k + 1) * H);
      if (auto kc = state.getDefiningOp<mlir::tosa::ConstOp>()) {  // a constant initial state: fold the product
        std::vector<float> prod;
        size_t j = 0;
        for (float v : mlir::cast<mlir::DenseElementsAttr>(kc.getValue()).getValues<float>()) prod.push_back(v * pk[j++ % size_t(H)]);
        return b_.create<mlir::tosa::AddOp>(loc, type, gate, constant({B, H}, prod, loc));
      }
      Value scaled = b_.create<mlir::tosa::MulOp>(loc, type, state, constant({1, H}, pk, loc), shift);
      return b_.create<mlir::tosa::AddOp>(loc, type, gate, scaled);
    };
    std::vector<float> zero(static_cast<size_t>(H), 0.0f);
    auto bias = [&](int64_t d, int64_t g) {  // Wb + Rb
      std::vector<float> b(static_cast<size_t>(H));
      for (int64_t j = 0; j < H; ++j) b[size_t(j)] = r.bias[size_t(d * 8 * H + g * H + j)] + r.bias[size_t(d * 8 * H + 4 * H + g * H + j)];
      return b;
    };
    rnn_run(r, n, loc, bias, [&](int64_t d, std::vector<Value>& gate, Value& h, Value& c) {
      for (int64_t g = 0; g < 4; ++g)
        if (h) gate[size_t(g)] = b_.create<mlir::tosa::AddOp>(loc, type, gate[size_t(g)],
                                                              rnn_fc(r, h, B, r.R->data.data() + (d * 4 * H + g * H) * H, H, zero, loc));
      Value i = b_.create<mlir::tosa::SigmoidOp>(loc, type, peephole(gate[0], c, d, 0));
      Value f = b_.create<mlir::tosa::SigmoidOp>(loc, type, peephole(gate[2], c, d, 2));
      Value cand = b_.create<mlir::tosa::TanhOp>(loc, type, gate[3]);
      Value ig = b_.create<mlir::tosa::MulOp>(loc, type, i, cand, shift);
      c = c ? Value(b_.create<mlir::tosa::AddOp>(loc, type, b_.create<mlir::tosa::MulOp>(loc, type, f, c, shift), ig)) : ig;
      Value o = b_.create<mlir::tosa::SigmoidOp>(loc, type, peephole(gate[1], c, d, 1));
      h = b_.create<mlir::tosa::MulOp>(loc, type, o, b_.create<mlir::tosa::TanhOp>(loc, type, c), shift);
    }, /*with_c=*/true);
  }

  // GRU (gate order z, r, h): z, r = sigmoid; the candidate n = tanh(x Wh + (r * h) Rh + Rbh)
  // (linear_before_reset = 0) or tanh(x Wh + r * (h Rh + Rbh)) (1); h = n + z * (h - n).
  void gru(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {"activations", "direction", "hidden_size", "layout", "clip", "linear_before_reset", "activation_alpha",
                   "activation_beta"});
    Rnn r = rnn_setup(n, loc, 3, {"Sigmoid", "Tanh"});
    bool lbr = attr_i(n, "linear_before_reset", 0) != 0;
    int64_t B = r.B, H = r.H;
    auto type = tensor_type({B, H});
    auto shift = b_.getI8IntegerAttr(0);
    auto rb = [&](int64_t d, int64_t g) {  // Rb of gate g
      return std::vector<float>(r.bias.begin() + d * 6 * H + 3 * H + g * H, r.bias.begin() + d * 6 * H + 3 * H + (g + 1) * H);
    };
    auto bias = [&](int64_t d, int64_t g) {  // Wb (+ Rb except for the candidate with linear_before_reset)
      std::vector<float> b(r.bias.begin() + d * 6 * H + g * H, r.bias.begin() + d * 6 * H + (g + 1) * H);
      if (g < 2 || !lbr)
        for (int64_t j = 0; j < H; ++j) b[size_t(j)] += rb(d, g)[size_t(j)];
      return b;
    };
    std::vector<float> zero(static_cast<size_t>(H), 0.0f);
    rnn_run(r, n, loc, bias, [&](int64_t d, std::vector<Value>& gate, Value& h, Value&) {
      auto recur = [&](Value v, int64_t g, const std::vector<float>& b) {
        return rnn_fc(r, v, B, r.R->data.data() + (d * 3 * H + g * H) * H, H, b, loc);
      };
      Value zpre = gate[0], rpre = gate[1], npre = gate[2];
      if (h) {
        zpre = b_.create<mlir::tosa::AddOp>(loc, type, zpre, recur(h, 0, zero));
        rpre = b_.create<mlir::tosa::AddOp>(loc, type, rpre, recur(h, 1, zero));
      }
      Value z = b_.create<mlir::tosa::SigmoidOp>(loc, type, zpre), rg = b_.create<mlir::tosa::SigmoidOp>(loc, type, rpre);
      if (lbr) {  // r * (h Rh + Rbh); with h = 0 that is r * Rbh
        Value hr = h ? recur(h, 2, rb(d, 2)) : constant({1, H}, rb(d, 2), loc);
        npre = b_.create<mlir::tosa::AddOp>(loc, type, npre, b_.create<mlir::tosa::MulOp>(loc, type, rg, hr, shift));
      } else if (h) {
        npre = b_.create<mlir::tosa::AddOp>(loc, type, npre, recur(b_.create<mlir::tosa::MulOp>(loc, type, rg, h, shift), 2, zero));
      }
      Value cand = b_.create<mlir::tosa::TanhOp>(loc, type, npre);
      Value diff = h ? Value(b_.create<mlir::tosa::SubOp>(loc, type, h, cand))
                     : Value(b_.create<mlir::tosa::MulOp>(loc, type, cand, constant({1, 1}, {-1.0f}, loc), shift));
      h = b_.create<mlir::tosa::AddOp>(loc, type, cand, b_.create<mlir::tosa::MulOp>(loc, type, z, diff, shift));
    }, /*with_c=*/false);
  }

  // x's entries idx[0], idx[1], ... along `axis` (same rank): runs of consecutive indices
  // as one window each, joined by a concat.
  Tensor pick(const Tensor& x, int64_t axis, const std::vector<int64_t>& idx, mlir::Location loc) {
    size_t r = x.shape.size();
    std::vector<Value> parts;
    for (size_t k = 0; k < idx.size();) {
      size_t len = 1;
      while (k + len < idx.size() && idx[k + len] == idx[k] + int64_t(len)) ++len;
      std::vector<int64_t> start(r, 0), size = x.shape;
      start[size_t(axis)] = idx[k], size[size_t(axis)] = int64_t(len);
      parts.push_back(window(x, start, size, loc).value);
      k += len;
    }
    std::vector<int64_t> joined = x.shape;
    joined[size_t(axis)] = int64_t(idx.size());
    if (parts.size() == 1) return {parts[0], joined, x.nhwc};
    static const int32_t kPos[4] = {0, 3, 1, 2};
    int32_t vaxis = x.nhwc ? kPos[axis] : int32_t(axis);
    Value v = b_.create<mlir::tosa::ConcatOp>(loc, tensor_type(x.nhwc ? to_nhwc(joined) : joined), parts, vaxis);
    return {v, joined, x.nhwc};
  }

  // Gather with constant indices: of a constant, folded; of an activation, one slice per
  // index along the axis, joined by a concat (e.g. BERT's [CLS] token, channel picks).
  // Indices that arrive at run time (embedding lookups of token ids) are not supported: the
  // chip has no data-dependent addressing.
  void gather(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {"axis"});
    auto ic = constants_.find(n.input(1));
    if (ic == constants_.end()) return gather_runtime(n, loc);
    const Constant& ind = ic->second;
    bool data_const = constants_.count(n.input(0)) > 0;
    Tensor x = data_const ? Tensor{Value(), constants_.at(n.input(0)).shape, false} : input(n, 0);
    int64_t r = int64_t(x.shape.size()), axis = attr_i(n, "axis", 0);
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r) fail(fmt::format("Gather axis {} is out of range for {} dimensions", axis, r), node_name(n));
    int64_t dim = x.shape[size_t(axis)];
    std::vector<int64_t> idx;
    for (float f : ind.data) {
      int64_t i = int64_t(f) < 0 ? int64_t(f) + dim : int64_t(f);
      if (i < 0 || i >= dim) fail(fmt::format("Gather index {} is out of range for a dimension of {}", int64_t(f), dim), node_name(n));
      idx.push_back(i);
    }
    std::vector<int64_t> out(x.shape.begin(), x.shape.begin() + axis);
    out.insert(out.end(), ind.shape.begin(), ind.shape.end());
    out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
    if (idx.empty()) fail("Gather with no indices (an empty tensor) is not supported", node_name(n));
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.shape[size_t(d)];
    for (int64_t d = axis + 1; d < r; ++d) inner *= x.shape[size_t(d)];
    if (data_const) {
      const auto& v = constants_.at(n.input(0)).data;
      Constant c{out, {}};
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i : idx) c.data.insert(c.data.end(), v.begin() + (o * dim + i) * inner, v.begin() + (o * dim + i + 1) * inner);
      constants_[n.output(0)] = c;
      return;
    }
    Tensor j = pick(x, axis, idx, loc);
    std::vector<int64_t> joined = j.shape;
    if (joined == out) {
      define(n, j);
      return;
    }
    Value v = j.nhwc ? to_nchw_value(j, loc) : j.value;
    define(n, {reshape(v, out, loc), out, false});
  }

  // Gather of a constant table by indices known only at run time (an embedding lookup of
  // token ids): a tpu.embedding (one-hot rows times the table on the MXUs) of the table seen
  // as [V, outer x inner] (V the gathered axis), then the gathered axis moved back into
  // place when it was not the first.
  void gather_runtime(const onnx::NodeProto& n, mlir::Location loc) {
    auto ia = int_args_.find(n.input(1));
    if (ia == int_args_.end())
      fail(fmt::format("Gather indices '{}' are computed at run time from float values; run-time indices must come "
                       "straight from an integer model input (int64/int32 token ids) or be constant",
                       n.input(1)),
           node_name(n));
    auto dc = constants_.find(n.input(0));
    if (dc == constants_.end())
      fail("Gather with run-time indices needs a constant table (an initializer) as its data input: the chip has no "
           "data-dependent addressing, so the lookup is a one-hot matrix times the table on the MXUs",
           node_name(n));
    const Constant& data = dc->second;
    const Tensor& ids = ia->second;
    if (ids.shape.size() == 4)
      fail("Gather with 4-D run-time indices is not supported (reshape them to fewer dimensions)", node_name(n));
    int64_t r = int64_t(data.shape.size()), axis = attr_i(n, "axis", 0);
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r) fail(fmt::format("Gather axis {} is out of range for {} dimensions", axis, r), node_name(n));
    int64_t V = data.shape[size_t(axis)], outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= data.shape[size_t(d)];
    for (int64_t d = axis + 1; d < r; ++d) inner *= data.shape[size_t(d)];
    // The one-hot rows compare fp32 integers: exact below 2^24.
    if (V >= (int64_t(1) << 24)) fail(fmt::format("Gather table of {} rows: run-time indices need fewer than 2^24", V), node_name(n));
    int64_t D = outer * inner, S = numel(ids.shape);
    if (S == 0 || D == 0) fail("Gather with an empty table or no indices is not supported", node_name(n));
    std::vector<float> table(size_t(V * D));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t v = 0; v < V; ++v)
        for (int64_t i = 0; i < inner; ++i) table[size_t(v * D + o * inner + i)] = data.data[size_t((o * V + v) * inner + i)];
    // Calibration (INT8) then draws ids that pick rows of this table.
    if (auto ai = arg_index_.find(n.input(1)); ai != arg_index_.end()) {
      fn_.setArgAttr(ai->second, "vtpu.int_lo", b_.getI64IntegerAttr(0));
      fn_.setArgAttr(ai->second, "vtpu.int_hi", b_.getI64IntegerAttr(V - 1));
    }
    Value y = b_.create<tpu::EmbeddingOp>(loc, tensor_type({S, D}), ids.value, constant({V, D}, table, loc),
                                          b_.getStringAttr(node_name(n)));
    std::vector<int64_t> out(data.shape.begin(), data.shape.begin() + axis);
    out.insert(out.end(), ids.shape.begin(), ids.shape.end());
    out.insert(out.end(), data.shape.begin() + axis + 1, data.shape.end());
    if (outer > 1) {  // [S, outer, inner] -> [outer, S, inner]
      y = reshape(y, {S, outer, inner}, loc);
      y = transpose(y, {1, 0, 2}, loc);
    }
    define(n, {out == shape_of_value(y) ? y : reshape(y, out, loc), out, false});
  }
  static std::vector<int64_t> shape_of_value(Value v) {
    auto t = mlir::cast<mlir::RankedTensorType>(v.getType());
    return {t.getShape().begin(), t.getShape().end()};
  }

  // True for values of an integer type (integer inputs, MatMulInteger's results, ...), which
  // the compiler carries as float activations holding integers.
  bool is_integral(const std::string& name) const { return int_args_.count(name) || integer_valued_.count(name); }

  // MatMulInteger / ConvInteger: (A - a_zero_point) x (B - b_zero_point) as a float matmul
  // or convolution. With bf16 activations this is exact: |a - zp| <= 255 has 8 significant
  // bits and the MXU's fp32 sums of such products are exact below 2^24; an int32 model
  // output then leaves the accumulators as int32 (docs/compiler.md).
  void integer_op(const onnx::NodeProto& n, mlir::Location loc) {
    bool conv = n.op_type() == "ConvInteger";
    if (conv) only_attrs(n, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
    else only_attrs(n, {});
    Tensor a = input(n, 0);
    auto zero = [&](int i, const char* what) -> std::vector<float> {
      if (n.input_size() <= i || n.input(i).empty()) return {0.0f};
      return const_input(n, i, what).data;
    };
    std::vector<float> a_zp = zero(2, conv ? "ConvInteger x_zero_point" : "MatMulInteger a_zero_point");
    std::vector<float> b_zp = zero(3, conv ? "ConvInteger w_zero_point" : "MatMulInteger b_zero_point");
    Constant w = const_input(n, 1, conv ? "ConvInteger weight w" : "MatMulInteger input B");
    // The weights minus their zero point: per tensor, or per output channel (ConvInteger:
    // the first axis of w; MatMulInteger: B's columns).
    int64_t channels = conv ? w.shape[0] : w.shape.back();
    if (b_zp.size() != 1 && int64_t(b_zp.size()) != channels)
      fail(fmt::format("{} weight zero point has {} values; it must be a scalar or one per output channel ({})", n.op_type(),
                       b_zp.size(), channels),
           node_name(n));
    int64_t per = numel(w.shape) / channels;
    for (size_t i = 0; i < w.data.size(); ++i) {
      size_t ch = b_zp.size() == 1 ? 0 : conv ? i / size_t(per) : i % size_t(channels);
      w.data[i] -= b_zp[ch];
    }
    // The activation minus its zero point: per tensor, or (MatMulInteger) per row of A.
    std::vector<int64_t> zs(a.shape.size(), 1);
    if (a_zp.size() != 1) {
      if (conv || a.shape.size() < 2 || int64_t(a_zp.size()) != a.shape[a.shape.size() - 2])
        fail(fmt::format("{} activation zero point has {} values; it must be a scalar{}", n.op_type(), a_zp.size(),
                         conv ? "" : " or one per row of A"),
             node_name(n));
      zs[zs.size() - 2] = int64_t(a_zp.size());
    }
    if (std::any_of(a_zp.begin(), a_zp.end(), [](float z) { return z != 0.0f; })) {
      auto t = a.value.getType();
      a.value = b_.create<mlir::tosa::SubOp>(loc, t, a.value, constant(zs, a_zp, loc));
    }
    Tensor y = conv ? conv_of(n, a, w, {}, loc) : (w.shape.size() == 2 ? matmul_const(n, a, w, loc) : Tensor{});
    if (!y.value) fail("MatMulInteger needs a 2-D constant B", node_name(n));
    integer_valued_.insert(n.output(0));
    define(n, y);
  }

  // Cast: integers are carried as float values (int32 in HBM at the model's edges), so a
  // cast between integer types, or from integers to float, is the identity. A cast of
  // float values to an integer type would round them, which is not supported.
  void cast(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {"to", "saturate"});
    (void)loc;
    int to = int(attr_i(n, "to", 0));
    bool to_int = is_integer_type(to);
    if (!to_int && to != onnx::TensorProto::FLOAT)
      fail(fmt::format("Cast to {} is not supported (float32 or an integer type)",
                       onnx::TensorProto::DataType_Name(onnx::TensorProto::DataType(to))),
           node_name(n));
    if (auto ia = int_args_.find(n.input(0)); ia != int_args_.end() && to_int) {
      int_args_[n.output(0)] = ia->second;  // still the integer input (e.g. int64 ids cast to int32 for a Gather)
      if (auto ai = arg_index_.find(n.input(0)); ai != arg_index_.end()) arg_index_[n.output(0)] = ai->second;
      return;
    }
    if (auto c = constants_.find(n.input(0)); c != constants_.end()) {
      Constant k = c->second;
      if (to_int)
        for (float& v : k.data) v = std::trunc(v);
      constants_[n.output(0)] = k;
      if (to_int) int_consts_.insert(n.output(0));
      return;
    }
    bool integral = is_integral(n.input(0));
    if (to_int && !integral)
      fail(fmt::format("Cast of float values '{}' to {} is not supported (only values that are integers already)", n.input(0),
                       onnx::TensorProto::DataType_Name(onnx::TensorProto::DataType(to))),
           node_name(n));
    values_[n.output(0)] = input(n, 0);
    if (integral && to_int) integer_valued_.insert(n.output(0));
  }

  // ConvTranspose as a convolution: the input spread out by the stride (zeros between its
  // pixels, tpu.zero_insert) and padded by dilation x (K - 1) minus the pads (plus
  // output_padding at the end), then a stride-1 convolution with the kernel flipped and its
  // channel axes swapped: [CI, CO/g, KH, KW] -> [CO, CI/g, KH, KW].
  void conv_transpose(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides"});
    const Tensor& x = input(n, 0);
    if (x.shape.size() == 5) return conv_transpose_3d(n, x, loc);
    if (x.shape.size() != 4) fail("only 1-D, 2-D and 3-D ConvTranspose is supported", node_name(n));
    const Constant& w = const_input(n, 1, "ConvTranspose weight");
    if (w.shape.size() != 4) fail("the ConvTranspose weight must be 4-D [CI, CO/group, KH, KW]", node_name(n));
    int64_t G = attr_i(n, "group", 1), CI = w.shape[0], COg = w.shape[1], KH = w.shape[2], KW = w.shape[3];
    if (G < 1 || CI != x.shape[1] || CI % G)
      fail(fmt::format("ConvTranspose weight [{}] does not fit {} input channels in {} groups", fmt::join(w.shape, ", "), x.shape[1], G),
           node_name(n));
    int64_t CIg = CI / G, CO = COg * G;
    auto stride = attr_ints(n, "strides", {1, 1}), dil = attr_ints(n, "dilations", {1, 1});
    auto opad = attr_ints(n, "output_padding", {0, 0});
    std::vector<int64_t> p = attr_ints(n, "pads", {0, 0, 0, 0});  // top, left, bottom, right
    std::vector<int64_t> k{KH, KW}, in{x.shape[2], x.shape[3]};
    std::string ap = attr_s(n, "auto_pad", "NOTSET");
    auto out_shape = attr_ints(n, "output_shape", {});
    if (!out_shape.empty() || ap == "SAME_UPPER" || ap == "SAME_LOWER") {
      for (int i = 0; i < 2; ++i) {
        int64_t want = !out_shape.empty() ? out_shape[out_shape.size() - 2 + size_t(i)] : in[size_t(i)] * stride[size_t(i)];
        int64_t total = stride[size_t(i)] * (in[size_t(i)] - 1) + opad[size_t(i)] + (k[size_t(i)] - 1) * dil[size_t(i)] + 1 - want;
        // ONNX's rule with floor division: a negative total (a larger output_shape) pads the
        // end, like output_padding. SAME_UPPER puts the larger half at the end.
        int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
        bool upper = ap == "SAME_UPPER";
        p[size_t(i)] = upper ? half : total - half;
        p[size_t(i) + 2] = upper ? total - half : half;
      }
    } else if (ap == "VALID") {
      p = {0, 0, 0, 0};
    } else if (ap != "NOTSET") {
      fail(fmt::format("auto_pad '{}' is not supported", ap), node_name(n));
    }
    // Padding of the spread input (TOSA order top, bottom, left, right).
    std::vector<int64_t> spread_pad(4);
    for (int i = 0; i < 2; ++i) {
      int64_t edge = dil[size_t(i)] * (k[size_t(i)] - 1);
      spread_pad[size_t(2 * i)] = edge - p[size_t(i)];
      spread_pad[size_t(2 * i + 1)] = edge - p[size_t(i) + 2] + opad[size_t(i)];
      if (spread_pad[size_t(2 * i)] < 0 || spread_pad[size_t(2 * i + 1)] < 0)
        fail("ConvTranspose pads larger than dilation x (kernel - 1) are not supported", node_name(n));
    }
    Value in_v = x.nhwc ? x.value : transpose(x.value, {0, 2, 3, 1}, loc);
    int64_t SH = (x.shape[2] - 1) * stride[0] + 1 + spread_pad[0] + spread_pad[1];
    int64_t SW = (x.shape[3] - 1) * stride[1] + 1 + spread_pad[2] + spread_pad[3];
    Value spread = b_.create<tpu::ZeroInsertOp>(loc, tensor_type({x.shape[0], SH, SW, CI}), in_v, b_.getDenseI64ArrayAttr(stride),
                                                b_.getDenseI64ArrayAttr(spread_pad), b_.getStringAttr(node_name(n)));
    Constant wc;
    wc.shape = {CO, CIg, KH, KW};
    wc.data.resize(w.data.size());
    for (int64_t g = 0; g < G; ++g)
      for (int64_t o = 0; o < COg; ++o)
        for (int64_t i = 0; i < CIg; ++i)
          for (int64_t h = 0; h < KH; ++h)
            for (int64_t ww = 0; ww < KW; ++ww)
              wc.data[size_t((((g * COg + o) * CIg + i) * KH + h) * KW + ww)] =
                  w.data[size_t((((g * CIg + i) * COg + o) * KH + (KH - 1 - h)) * KW + (KW - 1 - ww))];
    std::vector<float> bias;
    if (n.input_size() > 2 && !n.input(2).empty()) bias = const_input(n, 2, "ConvTranspose bias").data;
    ConvGeometry geo{{1, 1}, dil, {0, 0, 0, 0}};
    define(n, conv_of(n, {spread, {x.shape[0], CI, SH, SW}, true}, wc, bias, loc, &geo));
  }

  // A 3-D ConvTranspose as a 2-D one with the depth folded into the channels: input channel
  // (ci, id) of [N, CI*D, H, W] feeds output channel (co, od) of [N, CO*OD, H', W'] through
  // the kernel's depth tap kd where od = id*sd - pad + kd*dd (zero weights elsewhere).
  void conv_transpose_3d(const onnx::NodeProto& n, const Tensor& x, mlir::Location loc) {
    const Constant& w = const_input(n, 1, "ConvTranspose weight");
    if (w.shape.size() != 5) fail("the 3-D ConvTranspose weight must be 5-D [CI, CO/group, KD, KH, KW]", node_name(n));
    int64_t G = attr_i(n, "group", 1), CI = w.shape[0], COg = w.shape[1], KD = w.shape[2], KH = w.shape[3], KW = w.shape[4];
    int64_t N = x.shape[0], D = x.shape[2], H = x.shape[3], W = x.shape[4];
    if (G < 1 || CI != x.shape[1] || CI % G)
      fail(fmt::format("ConvTranspose weight [{}] does not fit {} input channels in {} groups", fmt::join(w.shape, ", "), x.shape[1], G),
           node_name(n));
    auto stride = per_axis(n, "strides", 1, 3), dil = per_axis(n, "dilations", 1, 3), opad = per_axis(n, "output_padding", 0, 3);
    auto p = attr_ints(n, "pads", {0, 0, 0, 0, 0, 0});
    if (p.size() != 6) fail("ConvTranspose pads must have 6 values for a 3-D input", node_name(n));
    std::string ap = attr_s(n, "auto_pad", "NOTSET");
    auto out_shape = attr_ints(n, "output_shape", {});
    // The depth's pads (the 2-D node works out H and W's itself from the same attributes).
    int64_t pd0 = p[0], pd1 = p[3];
    if (!out_shape.empty() || ap == "SAME_UPPER" || ap == "SAME_LOWER") {
      int64_t want = !out_shape.empty() ? out_shape[out_shape.size() - 3] : D * stride[0];
      int64_t total = stride[0] * (D - 1) + opad[0] + (KD - 1) * dil[0] + 1 - want;
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      pd0 = ap == "SAME_UPPER" ? half : total - half;
      pd1 = total - pd0;
    } else if (ap == "VALID") {
      pd0 = pd1 = 0;
    }
    int64_t OD = (D - 1) * stride[0] - pd0 - pd1 + (KD - 1) * dil[0] + 1 + opad[0];
    if (OD < 1) fail("the ConvTranspose output depth would be empty", node_name(n));
    int64_t CI2 = CI * D, COg2 = COg * OD;
    Constant w2;
    w2.shape = {CI2, COg2, KH, KW};
    w2.data.assign(size_t(CI2 * COg2 * KH * KW), 0.0f);
    for (int64_t ci = 0; ci < CI; ++ci)
      for (int64_t id = 0; id < D; ++id)
        for (int64_t kd = 0; kd < KD; ++kd) {
          int64_t od = id * stride[0] - pd0 + kd * dil[0];
          if (od < 0 || od >= OD) continue;
          for (int64_t o = 0; o < COg; ++o)
            for (int64_t hw = 0; hw < KH * KW; ++hw)
              w2.data[size_t(((ci * D + id) * COg2 + o * OD + od) * KH * KW + hw)] = w.data[size_t(((ci * COg + o) * KD + kd) * KH * KW + hw)];
        }
    onnx::NodeProto m = derived_node(n, "#2d", {"kernel_shape", "strides", "dilations", "output_padding", "output_shape", "pads"});
    values_[n.input(0) + "#2d"] = {reshape(x.value, {N, CI2, H, W}, loc), {N, CI2, H, W}, false};
    m.add_input(n.input(0) + "#2d");
    constants_[n.input(1) + "#2d"] = w2;
    m.add_input(n.input(1) + "#2d");
    if (n.input_size() > 2 && !n.input(2).empty()) {
      const auto& bias = const_input(n, 2, "ConvTranspose bias").data;
      if (int64_t(bias.size()) != COg * G) fail(fmt::format("ConvTranspose bias has {} values for {} output channels", bias.size(), COg * G), node_name(n));
      Constant b2{{COg * G * OD}, {}};
      for (float b : bias) b2.data.insert(b2.data.end(), size_t(OD), b);
      constants_[n.input(2) + "#2d"] = b2;
      m.add_input(n.input(2) + "#2d");
    }
    set_ints(m, "kernel_shape", {KH, KW});
    set_ints(m, "strides", {stride[1], stride[2]});
    set_ints(m, "dilations", {dil[1], dil[2]});
    set_ints(m, "output_padding", {opad[1], opad[2]});
    if (!out_shape.empty()) set_ints(m, "output_shape", {out_shape[out_shape.size() - 2], out_shape.back()});
    if (ap == "NOTSET") set_ints(m, "pads", {p[1], p[2], p[4], p[5]});
    Tensor y = sub_node(m);
    std::vector<int64_t> out{N, COg * G, OD, y.shape[2], y.shape[3]};
    define(n, {reshape(y.nhwc ? to_nchw_value(y, loc) : y.value, out, loc), out, false});
  }

  // Resize / Upsample, mode nearest, of the H and W of an image: each output coordinate's
  // source under ONNX's coordinate transformation and nearest rounding, as index tables.
  void resize(const onnx::NodeProto& n, mlir::Location loc) {
    bool upsample = n.op_type() == "Upsample";
    only_attrs(n, {"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
                   "extrapolation_value", "scales", "antialias", "keep_aspect_ratio_policy", "axes"});
    std::string mode = attr_s(n, "mode", "nearest");
    if (mode != "nearest" && mode != "linear" && mode != "cubic")
      fail(fmt::format("{} mode '{}' is not supported (nearest, linear, cubic)", n.op_type(), mode), node_name(n));
    if (attr(n, "axes") || attr(n, "keep_aspect_ratio_policy") || attr_i(n, "antialias", 0))
      fail(fmt::format("{} attributes axes, keep_aspect_ratio_policy and antialias are not supported", n.op_type()), node_name(n));
    Tensor x = input(n, 0);
    if (x.shape.size() != 4) fail(fmt::format("{} of a {}-D tensor: only images (4-D) are supported", n.op_type(), x.shape.size()), node_name(n));
    // Opset 10's Resize and Upsample: scales as input 1 (or Upsample-7's attribute), asymmetric.
    bool v10 = upsample || (opset_ && opset_ < 11);
    std::string ct = attr_s(n, "coordinate_transformation_mode", v10 ? "asymmetric" : "half_pixel");
    std::string nm = attr_s(n, "nearest_mode", v10 ? "floor" : "round_prefer_floor");
    if (!v10 && ct == "half_pixel" && !attr(n, "nearest_mode") && opset_ && opset_ < 13) nm = "round_prefer_floor";
    std::vector<float> scales;
    std::vector<int64_t> sizes;
    auto optional_const = [&](int i) -> const Constant* {
      if (n.input_size() <= i || n.input(i).empty()) return nullptr;
      return &const_input(n, i, i == 3 ? "Resize sizes" : "Resize scales");
    };
    if (upsample && attr(n, "scales")) {
      for (float f : attr(n, "scales")->floats()) scales.push_back(f);
    } else if (v10) {
      if (auto* c = optional_const(1)) scales = c->data;
    } else {
      if (auto* c = optional_const(2); c && !c->data.empty()) scales = c->data;
      if (auto* c = optional_const(3); c && !c->data.empty())
        for (float f : c->data) sizes.push_back(int64_t(f));
    }
    if (scales.empty() && sizes.empty()) fail(n.op_type() + " needs scales or sizes", node_name(n));
    std::vector<int64_t> out = x.shape;
    std::vector<double> sc(4, 1.0);
    for (size_t d = 0; d < 4; ++d) {
      if (!sizes.empty()) {
        if (sizes.size() != 4) fail("Resize sizes must have 4 values", node_name(n));
        out[d] = sizes[d];
        sc[d] = double(out[d]) / double(x.shape[d]);
      } else {
        if (scales.size() != 4) fail("Resize scales must have 4 values", node_name(n));
        sc[d] = scales[d];
        out[d] = int64_t(std::floor(double(x.shape[d]) * sc[d]));
      }
      if (out[d] < 1) fail("Resize would produce an empty tensor", node_name(n));
    }
    if (out[0] != x.shape[0] || out[1] != x.shape[1])
      fail(fmt::format("{} of the batch or channel dimension is not supported (H and W only)", n.op_type()), node_name(n));
    if (mode != "nearest") return resize_interpolated(n, x, out, sc, ct, mode == "cubic", loc);
    auto table = [&](int64_t in, int64_t o_n, double s) {
      std::vector<int64_t> idx;
      for (int64_t o = 0; o < o_n; ++o) {
        double xo;
        if (ct == "asymmetric") xo = o / s;
        else if (ct == "half_pixel") xo = (o + 0.5) / s - 0.5;
        else if (ct == "pytorch_half_pixel") xo = o_n > 1 ? (o + 0.5) / s - 0.5 : 0.0;
        else if (ct == "tf_half_pixel_for_nn") xo = (o + 0.5) / s;
        else if (ct == "align_corners") xo = o_n > 1 ? double(o) * double(in - 1) / double(o_n - 1) : 0.0;
        else fail(fmt::format("Resize coordinate_transformation_mode '{}' is not supported", ct), node_name(n));
        double r;
        if (nm == "floor") r = std::floor(xo);
        else if (nm == "ceil") r = std::ceil(xo);
        else if (nm == "round_prefer_floor") r = xo - std::floor(xo) == 0.5 ? std::floor(xo) : std::round(xo);
        else if (nm == "round_prefer_ceil") r = xo - std::floor(xo) == 0.5 ? std::ceil(xo) : std::round(xo);
        else fail(fmt::format("Resize nearest_mode '{}' is not supported", nm), node_name(n));
        idx.push_back(std::clamp<int64_t>(int64_t(r), 0, in - 1));
      }
      return idx;
    };
    auto rows = table(x.shape[2], out[2], sc[2]), cols = table(x.shape[3], out[3], sc[3]);
    Value in = x.nhwc ? x.value : transpose(x.value, {0, 2, 3, 1}, loc);
    Value y = b_.create<tpu::ResizeNearestOp>(loc, tensor_type(to_nhwc(out)), in, b_.getDenseI64ArrayAttr(rows),
                                              b_.getDenseI64ArrayAttr(cols), b_.getStringAttr(node_name(n)));
    define(n, {y, out, true});
  }

  // Linear and cubic Resize are separable and linear in the input: each output row (column)
  // is a fixed weighted sum of input rows (columns). The weights form a matrix per axis,
  // computed here as ONNX's reference defines them (source coordinate, taps nearest to it,
  // edge values beyond the border, exclude_outside renormalizing), and the resize is two
  // matmuls with them: W with the image transposed to [N, H, C, W], then H. A
  // tf_crop_and_resize coordinate outside the input gives extrapolation_value: a zero
  // weight row, and the value added afterwards.
  void resize_interpolated(const onnx::NodeProto& n, const Tensor& x, const std::vector<int64_t>& out, const std::vector<double>& sc,
                           const std::string& ct, bool cubic, mlir::Location loc) {
    double A = attr_f(n, "cubic_coeff_a", -0.75f), extrap = attr_f(n, "extrapolation_value", 0.0f);
    bool exclude = attr_i(n, "exclude_outside", 0) != 0;
    std::vector<float> roi;
    if (ct == "tf_crop_and_resize") {
      roi = const_input(n, 1, "Resize roi").data;
      if (roi.size() != 8) fail("Resize roi must have 8 values (starts and ends of the 4 dimensions)", node_name(n));
    }
    // weights[o * in + i]; outside[o]: the coordinate lies outside the input (extrapolated).
    auto matrix = [&](int d, std::vector<bool>& outside) {
      int64_t in = x.shape[size_t(d)], on = out[size_t(d)];
      double s = sc[size_t(d)], out_width = s * double(in);
      std::vector<float> w(size_t(on * in), 0.0f);
      outside.assign(size_t(on), false);
      for (int64_t o = 0; o < on; ++o) {
        double xo;
        if (ct == "align_corners") xo = out_width == 1 ? 0.0 : double(o) * double(in - 1) / (out_width - 1);
        else if (ct == "asymmetric") xo = double(o) / s;
        else if (ct == "half_pixel") xo = (double(o) + 0.5) / s - 0.5;
        else if (ct == "pytorch_half_pixel") xo = out_width == 1 ? -0.5 : (double(o) + 0.5) / s - 0.5;
        else if (ct == "tf_crop_and_resize") {
          double r0 = roi[size_t(d)], r1 = roi[size_t(d + 4)];
          xo = (out_width == 1 ? (r1 - r0) * double(in - 1) / 2 : double(o) * (r1 - r0) * double(in - 1) / (out_width - 1)) +
               r0 * double(in - 1);
          if (xo < 0 || xo > double(in - 1)) {
            outside[size_t(o)] = true;
            continue;
          }
        } else {
          fail(fmt::format("Resize coordinate_transformation_mode '{}' is not supported with mode {}", ct,
                           cubic ? "cubic" : "linear"),
               node_name(n));
        }
        // The taps to the left of xo first: ratio in (0, 1].
        double base = std::floor(xo);
        if (base == xo) base -= 1;
        double r = xo - base;
        std::vector<double> c;
        int64_t first;
        if (cubic) {
          c = {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A, ((A + 2) * r - (A + 3)) * r * r + 1,
               ((A + 2) * (1 - r) - (A + 3)) * (1 - r) * (1 - r) + 1,
               ((A * (2 - r) - 5 * A) * (2 - r) + 8 * A) * (2 - r) - 4 * A};
          first = int64_t(base) - 1;
        } else {
          c = {1 - r, r};
          first = int64_t(base);
        }
        if (exclude) {
          double sum = 0;
          for (size_t t = 0; t < c.size(); ++t) {
            int64_t i = first + int64_t(t);
            if (i < 0 || i >= in) c[t] = 0;
            sum += c[t];
          }
          for (double& v : c) v /= sum;
        }
        for (size_t t = 0; t < c.size(); ++t) {
          int64_t i = std::clamp<int64_t>(first + int64_t(t), 0, in - 1);  // edge values beyond the border
          w[size_t(o * in + i)] += float(c[t]);
        }
      }
      return w;
    };
    int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3], OH = out[2], OW = out[3];
    std::vector<bool> out_h, out_w;
    auto wh = matrix(2, out_h), ww = matrix(3, out_w);
    auto identity = [](const std::vector<float>& m, int64_t k) {
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < k; ++j)
          if (m.size() != size_t(k * k) || m[size_t(i * k + j)] != (i == j ? 1.0f : 0.0f)) return false;
      return true;
    };
    auto fc = [&](Value v, int64_t rows, int64_t k, int64_t o, const std::vector<float>& m) {
      return Value(b_.create<mlir::tosa::FullyConnectedOp>(loc, tensor_type({rows, o}), v, constant({o, k}, m, loc),
                                                           constant({o}, std::vector<float>(size_t(o), 0.0f), loc), nullptr));
    };
    Value v = x.nhwc ? x.value : transpose(x.value, {0, 2, 3, 1}, loc);  // [N, H, W, C]
    if (!(OW == W && identity(ww, W))) {
      Value t = reshape(transpose(v, {0, 1, 3, 2}, loc), {N * H * C, W}, loc);
      t = reshape(fc(t, N * H * C, W, OW, ww), {N, H, C, OW}, loc);
      v = transpose(t, {0, 1, 3, 2}, loc);  // [N, H, OW, C]
    }
    if (!(OH == H && identity(wh, H))) {
      Value t = reshape(transpose(v, {0, 2, 3, 1}, loc), {N * OW * C, H}, loc);
      t = reshape(fc(t, N * OW * C, H, OH, wh), {N, OW, C, OH}, loc);
      v = transpose(t, {0, 3, 1, 2}, loc);  // [N, OH, OW, C]
    }
    bool any_outside = std::count(out_h.begin(), out_h.end(), true) + std::count(out_w.begin(), out_w.end(), true) > 0;
    if (any_outside && extrap != 0.0) {
      std::vector<float> e(size_t(N * OH * OW * C), 0.0f);
      for (int64_t i = 0; i < N * OH * OW * C; ++i) {
        int64_t oh = i / (OW * C) % OH, ow = i / C % OW;
        if (out_h[size_t(oh)] || out_w[size_t(ow)]) e[size_t(i)] = float(extrap);
      }
      v = b_.create<mlir::tosa::AddOp>(loc, tensor_type({N, OH, OW, C}), v, constant({N, OH, OW, C}, e, loc));
    }
    define(n, {v, out, true});
  }

  // ---- quantized models (QDQ and QLinear) ----
  // A quantized activation is carried as its dequantized value, (q - zero_point) * scale,
  // which is exact in float: QuantizeLinear becomes a tpu.fake_quant (round, clamp), and
  // DequantizeLinear of it is the identity. Quantized weights are dequantized here.
  struct QParams {
    std::vector<float> scale, zero;  // one per tensor, or per channel along `axis`
    int64_t axis = 1;
    float qmin = -128, qmax = 127;
  };
  std::map<std::string, QParams> quantized_;  // activation name -> how it was quantized

  QParams qparams(const onnx::NodeProto& n, int scale_at, int zero_at, int64_t axis) {
    QParams p;
    p.scale = const_input(n, scale_at, "quantization scale").data;
    p.zero.assign(p.scale.size(), 0.0f);
    p.axis = axis;
    if (n.input_size() > zero_at && !n.input(zero_at).empty()) {
      auto c = constants_.find(n.input(zero_at));
      if (c == constants_.end()) fail("the zero point must be a constant", node_name(n));
      p.zero = c->second.data;
      if (p.zero.size() != p.scale.size()) fail("scale and zero point must have one size", node_name(n));
      // The zero point's element type gives the integer range; uint8 unless it is int8.
      const onnx::TensorProto* zt = nullptr;
      for (const auto& init : model_.graph().initializer())
        if (init.name() == n.input(zero_at)) zt = &init;
      if (zt && zt->data_type() == onnx::TensorProto::UINT8) p.qmin = 0, p.qmax = 255;
    } else if (n.op_type() == "QuantizeLinear" && n.input_size() <= zero_at) {
      p.qmin = 0, p.qmax = 255;  // no zero point: uint8 with zero point 0
    }
    for (float sc : p.scale)
      if (!(sc > 0)) fail(fmt::format("quantization scale {} is not positive", sc), node_name(n));
    return p;
  }
  // A constant's dequantized values ((q - zero) * scale, per channel along p.axis).
  Constant dequantized(const Constant& q, const QParams& p, const onnx::NodeProto& n) {
    Constant c = q;
    int64_t axis = p.axis < 0 ? p.axis + int64_t(q.shape.size()) : p.axis;
    int64_t inner = 1;
    for (size_t d = size_t(axis) + 1; d < q.shape.size(); ++d) inner *= q.shape[d];
    if (p.scale.size() > 1 && (axis < 0 || axis >= int64_t(q.shape.size()) || q.shape[size_t(axis)] != int64_t(p.scale.size())))
      fail(fmt::format("{} per-axis scales do not match axis {} of [{}]", p.scale.size(), p.axis, fmt::join(q.shape, ", ")),
           node_name(n));
    for (size_t i = 0; i < c.data.size(); ++i) {
      size_t ch = p.scale.size() == 1 ? 0 : (i / size_t(inner)) % p.scale.size();
      c.data[i] = (q.data[i] - p.zero[ch]) * p.scale[ch];
    }
    return c;
  }
  Tensor fake_quant(const Tensor& x, const QParams& p, const onnx::NodeProto& n, mlir::Location loc) {
    if (p.scale.size() != 1) fail("per-axis quantization of an activation is not supported (per-tensor only)", node_name(n));
    Value y = b_.create<tpu::FakeQuantOp>(loc, x.value.getType(), x.value, b_.getF64FloatAttr(p.scale[0]),
                                          b_.getF64FloatAttr(p.qmin - p.zero[0]), b_.getF64FloatAttr(p.qmax - p.zero[0]),
                                          b_.getStringAttr(node_name(n)));
    return {y, x.shape, x.nhwc};
  }

  void quantize_linear(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {"axis", "saturate"});
    QParams p = qparams(n, 1, 2, attr_i(n, "axis", 1));
    quantized_[n.output(0)] = p;
    if (constants_.count(n.input(0))) {  // quantizing a constant: fold to its dequantized value
      Constant c = constants_.at(n.input(0));
      for (size_t i = 0; i < c.data.size(); ++i) {
        size_t ch = p.scale.size() == 1 ? 0 : i % p.scale.size();
        c.data[i] = (std::clamp(std::nearbyint(c.data[i] / p.scale[ch]) + p.zero[ch], p.qmin, p.qmax) - p.zero[ch]) * p.scale[ch];
      }
      constants_[n.output(0)] = c;
      return;
    }
    define(n, fake_quant(input(n, 0), p, n, loc));
  }

  void dequantize_linear(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {"axis"});
    QParams p = qparams(n, 1, 2, attr_i(n, "axis", 1));
    auto c = constants_.find(n.input(0));
    if (c != constants_.end() && !quantized_.count(n.input(0))) {  // quantized weights: dequantize now
      constants_[n.output(0)] = dequantized(c->second, p, n);
      return;
    }
    if (c != constants_.end()) {  // a constant quantized by QuantizeLinear: already dequantized
      constants_[n.output(0)] = c->second;
      return;
    }
    // An activation: carried dequantized already. With other parameters than it was
    // quantized with, (q - z2) s2 = (v / s1 + z1 - z2) s2.
    const Tensor& x = input(n, 0);
    auto q = quantized_.find(n.input(0));
    if (q == quantized_.end())
      fail(fmt::format("DequantizeLinear of '{}', which no QuantizeLinear or QLinear operator produced", n.input(0)), node_name(n));
    if (p.scale.size() != 1 || q->second.scale.size() != 1) fail("per-axis dequantization of an activation is not supported", node_name(n));
    float s1 = q->second.scale[0], z1 = q->second.zero[0], s2 = p.scale[0], z2 = p.zero[0];
    if (s1 == s2 && z1 == z2) {
      define(n, x);
      return;
    }
    auto ones = std::vector<int64_t>(x.shape.size(), 1);
    auto t = x.value.getType();
    Value y = b_.create<mlir::tosa::MulOp>(loc, t, x.value, constant(ones, {s2 / s1}, loc), b_.getI8IntegerAttr(0));
    y = b_.create<mlir::tosa::AddOp>(loc, t, y, constant(ones, {(z1 - z2) * s2}, loc));
    define(n, {y, x.shape, x.nhwc});
  }

  // QLinearMatMul / QLinearConv: on dequantized values, then quantized to the output's
  // parameters (an int32 bias B counts in units of x_scale * w_scale).
  void qlinear(const onnx::NodeProto& n, mlir::Location loc) {
    bool conv = n.op_type() == "QLinearConv";
    if (conv) only_attrs(n, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
    else only_attrs(n, {});
    if (n.input_size() < 8) fail(fmt::format("{} needs 8 inputs (9 with a bias)", n.op_type()), node_name(n));
    QParams px = qparams(n, 1, 2, 1), pw = qparams(n, 4, 5, conv ? 0 : 1), py = qparams(n, 6, 7, 1);
    if (px.scale.size() != 1) fail("the input must be quantized per tensor", node_name(n));
    const Tensor& x = input(n, 0);
    Tensor y;
    if (constants_.count(n.input(3))) {
      Constant w = dequantized(constants_.at(n.input(3)), pw, n);
      if (conv) {
        std::vector<float> bias;
        if (n.input_size() > 8 && !n.input(8).empty()) {
          bias = const_input(n, 8, "QLinearConv bias").data;
          for (size_t co = 0; co < bias.size(); ++co) bias[co] *= px.scale[0] * pw.scale[pw.scale.size() == 1 ? 0 : co];
        }
        y = conv_of(n, x, w, bias, loc);
      } else {
        y = matmul_const(n, x, w, loc);
      }
    } else {
      if (conv) fail("QLinearConv weights must be constants", node_name(n));
      y = batch_matmul_of(n, x, input(n, 3), loc);  // both carried dequantized
    }
    quantized_[n.output(0)] = py;
    define(n, fake_quant(y, py, n, loc));
  }

  // LayerNormalization over the last axis, as TOSA: c = x - mean(x),
  // y = c * rsqrt(mean(c * c) + epsilon) * scale + bias. The lowering matches the
  // normalization back into one tpu.layernorm; scale and bias become an affine step.
  void layernorm(const onnx::NodeProto& n, mlir::Location loc) {
    only_attrs(n, {"axis", "epsilon", "stash_type"});
    Tensor x = input(n, 0);
    int64_t r = int64_t(x.shape.size()), axis = attr_i(n, "axis", -1);
    if (axis < 0) axis += r;
    if (axis < 0 || axis >= r) fail(fmt::format("LayerNormalization axis {} is out of range for {} dimensions", axis, r), node_name(n));
    for (int i = 1; i < n.output_size(); ++i)
      if (!n.output(i).empty()) fail("LayerNormalization's Mean and InvStdDev outputs are not supported", node_name(n));
    // Normalizing over dimensions axis.. is normalizing the last dimension of the 2-D view
    // [rows, features] (an image in its logical NCHW order first).
    std::vector<int64_t> logical = x.shape;
    if (x.nhwc) x = {to_nchw_value(x, loc), x.shape, false};
    int64_t D = 1;
    for (int64_t i = axis; i < r; ++i) D *= x.shape[size_t(i)];
    if (axis != r - 1) x = {reshape(x.value, {numel(x.shape) / D, D}, loc), {numel(x.shape) / D, D}, false};
    const Constant& g = const_input(n, 1, "LayerNormalization scale");
    std::vector<float> beta(size_t(D), 0.0f);
    if (n.input_size() > 2 && !n.input(2).empty()) beta = const_input(n, 2, "LayerNormalization bias").data;
    if (g.data.size() != size_t(D) || beta.size() != size_t(D))
      fail(fmt::format("LayerNormalization scale and bias need {} values (the last dimension)", D), node_name(n));
    auto type = mlir::cast<mlir::RankedTensorType>(x.value.getType());
    std::vector<int64_t> red(x.shape), ones(x.shape.size(), 1);
    red.back() = 1;
    auto ax = b_.getI32IntegerAttr(int32_t(x.shape.size() - 1));
    auto shift = b_.getI8IntegerAttr(0);
    Value inv_d = constant(ones, {1.0f / float(D)}, loc);
    Value mean = b_.create<mlir::tosa::MulOp>(loc, tensor_type(red),
                                              b_.create<mlir::tosa::ReduceSumOp>(loc, tensor_type(red), x.value, ax), inv_d, shift);
    Value c = b_.create<mlir::tosa::SubOp>(loc, type, x.value, mean);
    Value sq = b_.create<mlir::tosa::MulOp>(loc, type, c, c, shift);
    Value var = b_.create<mlir::tosa::MulOp>(loc, tensor_type(red), b_.create<mlir::tosa::ReduceSumOp>(loc, tensor_type(red), sq, ax),
                                             inv_d, shift);
    Value ve = b_.create<mlir::tosa::AddOp>(loc, tensor_type(red), var, constant(ones, {attr_f(n, "epsilon", 1e-5f)}, loc));
    Value norm = b_.create<mlir::tosa::MulOp>(loc, type, c, b_.create<mlir::tosa::RsqrtOp>(loc, tensor_type(red), ve), shift);
    std::vector<int64_t> cs(ones);
    cs.back() = D;
    Value y = b_.create<mlir::tosa::MulOp>(loc, type, norm, constant(cs, g.data, loc), shift);
    y = b_.create<mlir::tosa::AddOp>(loc, type, y, constant(cs, beta, loc));
    define(n, {x.shape == logical ? y : reshape(y, logical, loc), logical, false});
  }

  mlir::MLIRContext& ctx_;
  mlir::OpBuilder b_;
  std::filesystem::path path_;
  CompileOptions opt_;
  onnx::ModelProto model_;
  int64_t opset_ = 0;  // of the default domain; 0 if the model does not say
  std::map<std::string, Constant> constants_;
  std::map<std::string, Tensor> values_;
  std::set<std::string> int_consts_;  // constants of an integer element type (shape arithmetic)
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
  mlir::func::FuncOp fn_;
};

}  // namespace

mlir::OwningOpRef<mlir::ModuleOp> import_onnx(mlir::MLIRContext& ctx, const std::filesystem::path& model,
                                              const CompileOptions& options) {
  return Importer(ctx, model, options).run();
}

}  // namespace vtpu::compiler
