// The driver: model inputs, the walk over @main's ops, outputs, assembling (docs/compiler.md, "Code generation").
#include "codegen.h"
#include "codegen_internal.h"

namespace vtpu::compiler::codegen {

Codegen::Codegen(const config::Config& cfg, const CompileOptions& opt, std::map<const void*, float> scales, uint64_t hbm_align,
                 bool reuse_hbm)
    : cfg_(cfg), flags_(FlagPlan::of(cfg)), opt_(opt), block_align_(ub_block_alignment(cfg, opt)),
      ub_(cfg.core.unified_buffer.bytes, block_align_), scales_(std::move(scales)),
      reuse_hbm_(reuse_hbm) {
  hbm_align_ = hbm_align;
  R_ = cfg.core.mxu.rows;
  C_ = cfg.core.mxu.cols;
  if (R_ != C_)
    throw CompileError(fmt::format("config '{}': the compiler needs square arrays (core.mxu.rows = core.mxu.cols); "
                                   "this one is {}x{}",
                                   cfg.name, R_, C_));
  q8_ = opt.precision == Precision::Int8;
  config::require_dtype(cfg, q8_ ? config::DType::kInt8 : config::DType::kBf16);
  esz_ = q8_ ? 1 : 2;
  dt_ = q8_ ? "int8" : "bf16";
  dtype_ = q8_ ? isa::Dtype::Int8 : isa::Dtype::Bf16;
  acc_region_ = acc_region(cfg);
}

// A float model input read only by softmaxes stays fp32 in HBM, and each softmax loads it
// straight into its fp32 work rows: logits too close together for bf16 (10000 and 10001)
// keep their differences.
bool Codegen::read_fp32(Value arg) const {
  if (is_int32(arg) || arg.use_empty()) return false;
  for (mlir::Operation* u : arg.getUsers()) {
    auto sm = mlir::dyn_cast<tpu::SoftmaxOp>(u);
    if (!sm || sm.getInput() != arg) return false;
  }
  return true;
}

// The unified-buffer rows the model's inputs take, allocated as run() does, so a model
// whose inputs alone do not fit fails with the same error before INT8 calibration (which
// runs the model in fp32, seconds for big models) instead of after it.
void Codegen::check_inputs_fit(mlir::ModuleOp module, int64_t chunk_batch) {
  auto fn = module.lookupSymbol<mlir::func::FuncOp>("main");
  if (!fn) throw InternalError("no func @main");
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    Value arg = fn.getArgument(i);
    if (is_int32(arg) || packed_input(arg, R_, esz_, acc_region_) || read_fp32(arg)) continue;
    if (shape_of(arg).size() == 4) continue;  // an image: one sample at a time in row bands fits (bands.cpp)
    std::vector<int64_t> shape = shape_of(arg);
    if (chunk_batch > 1 && shape[0] == chunk_batch) shape[0] = 1;  // batch chunks may run one sample at a time
    new_act(shape, "input '" + fn.getArgAttrOfType<mlir::StringAttr>(i, "vtpu.name").str() + "'");
  }
}

uint64_t Codegen::values_bytes(mlir::ModuleOp module, int64_t batch) const {
  auto fn = module.lookupSymbol<mlir::func::FuncOp>("main");
  if (!fn) throw InternalError("no func @main");
  uint64_t sum = 0;
  auto add = [&](Value v) {
    auto t = mlir::dyn_cast<mlir::RankedTensorType>(v.getType());
    if (!t || !t.hasStaticShape() || t.getNumElements() == 0) return;
    std::vector<int64_t> shape = shape_of(v);
    int64_t features = shape.empty() ? 1 : shape.back(), rows = t.getNumElements() / features;
    if (batch > 1 && rows % batch == 0) shape = {rows / batch, features};  // one sample's rows
    sum += act_layout(shape).bytes();
  };
  for (Value arg : fn.getArguments()) add(arg);
  fn.walk([&](mlir::Operation* op) {
    if (!mlir::isa<mlir::tosa::ConstOp>(op))
      for (Value r : op->getResults()) add(r);
  });
  return sum;
}

CompileResult Codegen::run(mlir::ModuleOp module, mlir::ModuleOp tail) {
  auto fn = module.lookupSymbol<mlir::func::FuncOp>("main");
  if (!fn) throw InternalError("no func @main");
  for (mlir::Operation& op : fn.getBody().front())  // what the planner put into other ops (plan.h)
    if (auto id = op.getAttrOfType<mlir::IntegerAttr>(kFusedIntoAttr)) planned_[id.getInt()].push_back(&op);
  chunks_of(fn);
  stage_of(fn);
  if (auto t = fn->getAttrOfType<mlir::StringAttr>(tpu::kTailInputAttr)) tail_input_ = t.str();
  if (tail_input_.empty() != !tail) throw InternalError("a tail at the whole batch without its input, or an input without its tail");
  decl(fmt::format(".config {}", cfg_.name));
  // Zero region in HBM (never written) for clearing UB buffers.
  zero_hbm_ = hbm_alloc(kZeroHbmBytes);
  all_reduce_of(fn);  // before anything whose size depends on the chip's share of the weights
  hoist_at_ = 0;  // the first stream's weights may load while the inputs do
  stage_receive();
  gen_inputs(fn);
  declare_empty_tensors(fn);
  uses_left(fn);
  size_t ops = fn.getBody().front().getOperations().size();
  size_t tail_ops = tail ? tail.lookupSymbol<mlir::func::FuncOp>("main").getBody().front().getOperations().size() : 0;
  gen_body(fn, 0, ops + tail_ops);
  stage_send();
  chunks_end();
  if (tail) gen_tail(tail, ops, ops + tail_ops);
  stage_end();
  code("  " + emit::halt());
  CompileResult r = assemble();
  if (opt_.progress) opt_.progress("codegen", 1.0);
  return r;
}

// @main's ops in order, its return storing the outputs. CompileOptions::progress hears the
// share of all ops generated (`ops_before` of `ops_total` before these), once per percent.
void Codegen::gen_body(mlir::func::FuncOp fn, size_t ops_before, size_t ops_total) {
  size_t done = ops_before;
  int percent = -1;
  for (mlir::Operation& op : fn.getBody().front()) {
    if (opt_.progress && int(100 * done / ops_total) != percent)
      opt_.progress("codegen", double(percent = int(100 * done / ops_total)) / 100);
    ++done;
    if (mlir::isa<tosa::ConstOp>(op)) continue;
    if (auto ret = mlir::dyn_cast<mlir::func::ReturnOp>(op)) gen_outputs(fn, ret);
    else gen_op(op);
    count_bundles();
  }
}

// The tail at the whole batch, after the chunk loop: its one input is the chunks' result
// that @main stored into HBM (every pass's rows, one after the other: the whole batch's), its
// addresses absolute, its outputs the program's at the whole batch.
void Codegen::gen_tail(mlir::ModuleOp tail, size_t ops_before, size_t ops_total) {
  auto fn = tail.lookupSymbol<mlir::func::FuncOp>("main");
  if (!fn || fn.getNumArguments() != 1 || fn.getArgAttrOfType<mlir::StringAttr>(0, "vtpu.name").str() != tail_input_)
    throw InternalError(fmt::format("the tail at the whole batch does not read '{}' alone", tail_input_));
  std::set<uint64_t> bases;  // what the chunks left in the unified buffer: their outputs
  for (const auto& [v, a] : acts_) bases.insert(a.base);
  for (uint64_t b : bases) ub_.release(b);
  acts_.clear();
  planned_.clear();
  for (mlir::Operation& op : fn.getBody().front())
    if (auto id = op.getAttrOfType<mlir::IntegerAttr>(kFusedIntoAttr)) planned_[id.getInt()].push_back(&op);
  batch_chunks_ = 1, batch_whole_ = 0;
  io_regions_.clear();
  hoist_at_.reset();
  Value arg = fn.getArgument(0);
  tag("input " + tail_input_);
  Act a = new_act(shape_of(arg), "the tail's input '" + tail_input_ + "'");
  load_act(a, tail_hbm_);
  acts_[arg.getAsOpaquePointer()] = a;
  uses_left(fn);
  gen_body(fn, ops_before, ops_total);
}

// Inputs: HBM -> UB blocked layout (integer, fp32 and packed inputs stay in HBM).
void Codegen::gen_inputs(mlir::func::FuncOp fn) {
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    Value arg = fn.getArgument(i);
    std::string name = fn.getArgAttrOfType<mlir::StringAttr>(i, "vtpu.name").str();
    auto shape = shape_of(arg);
    // An integer input stays in HBM as int32 (its readers load what they need: tpu.cast
    // converts it, tpu.embedding reads the ids); a float one read only by softmaxes as fp32.
    bool integer = is_int32(arg);
    if (integer || read_fp32(arg)) {
      uint64_t addr = io_alloc(numel(shape) * 4, name);
      decl(fmt::format(".tensor {} role=input dtype={} shape=[{}] addr={}{}", quote(name), integer ? "int32" : "fp32",
                       fmt::join(io_shape(shape), ", "), addr, fn.getArgAttr(i, "vtpu.nhwc") ? " layout=nhwc" : ""));
      (integer ? int_hbm_ : input_hbm_)[arg.getAsOpaquePointer()] = addr;
      continue;
    }
    uint64_t bytes = numel(shape) * esz_;
    uint64_t addr = io_alloc(bytes, name);
    decl(fmt::format(".tensor {} role=input dtype={} shape=[{}] addr={}{}", quote(name), dt_, fmt::join(io_shape(shape), ", "), addr,
                     quant_attrs(arg, bool(fn.getArgAttr(i, "vtpu.nhwc")))));
    bool in_bands = !arg.use_empty();  // an image read a band of rows at a time (bands.cpp)
    for (mlir::Operation* u : arg.getUsers()) in_bands &= reads_rows(u);
    if (in_bands) {
      hbm_acts_[arg.getAsOpaquePointer()] = addr;
      continue;
    }
    if (packed_input(arg, R_, esz_, acc_region_)) {
      input_hbm_[arg.getAsOpaquePointer()] = addr;
      continue;
    }
    tag("input " + name);
    Act a = new_act(shape, "input '" + name + "'");
    load_act(a, addr);
    acts_[arg.getAsOpaquePointer()] = a;
  }
}

// The model's outputs: stored from the unified buffer to their program tensors, or
// preloaded with the program when constant.
void Codegen::gen_outputs(mlir::func::FuncOp fn, mlir::func::ReturnOp ret) {
  for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
    Value v = ret.getOperand(i);
    std::string name = fn.getResultAttrOfType<mlir::StringAttr>(i, "vtpu.name").str();
    auto shape = shape_of(v);
    // The model's own element type, for a program run on its own (isa::TensorInfo::model_type).
    std::string typed;
    if (auto t = fn.getResultAttrOfType<mlir::StringAttr>(i, tpu::kModelTypeAttr)) typed = " model_type=" + t.str();
    if (auto c = v.getDefiningOp<tosa::ConstOp>()) {  // a constant output: its bytes preloaded, no code
      mlir::Attribute attr = c.getValue();
      std::vector<uint8_t> bytes;
      std::string dt = is_int32(v) ? "int32" : dt_, extra;
      if (is_int32(v)) {
        for (int32_t x : mlir::cast<mlir::DenseElementsAttr>(attr).getValues<int32_t>()) bytes.insert(bytes.end(), (uint8_t*)&x, (uint8_t*)&x + 4);
      } else {
        std::vector<float> f = tpu::float_values(attr);
        float mx = 0;
        for (float x : f) mx = std::max(mx, std::fabs(x));
        double sc = mx > 0 ? mx / 127.0 : 1.0;
        if (q8_) extra = fmt::format(" scale={} zp=0", sc);
        for (float x : f) {
          if (q8_) {
            bytes.push_back(uint8_t(int8_t(std::clamp<double>(std::nearbyint(x / sc), -127, 127))));
          } else {
            uint16_t h = bf16_of(x);
            bytes.push_back(uint8_t(h)), bytes.push_back(uint8_t(h >> 8));
          }
        }
      }
      decl(fmt::format(".tensor {} role=output dtype={} shape=[{}] addr={}{}{}", quote(name), dt, fmt::join(shape, ", "),
                       hbm_const(std::move(bytes)), extra, typed));
      continue;
    }
    if (is_int32(v)) {  // an integer output: int32 rows, stored as they are
      if (int_hbm_.count(v.getAsOpaquePointer()))
        throw CompileError(fmt::format("output '{}' is a model input; nothing computes it", name));
      uint64_t addr = io_alloc(numel(shape) * 4, name);
      decl(fmt::format(".tensor {} role=output dtype=int32 shape=[{}] addr={}{}{}", quote(name), fmt::join(io_shape(shape), ", "),
                       addr, fn.getResultAttr(i, "vtpu.nhwc") ? " layout=nhwc" : "", typed));
      tag("output " + name);
      store_rows(act(v), addr, 4);
      stage_output(addr, numel(shape) * 4);
      continue;
    }
    if (name == tail_input_ && !tail_hbm_) {  // what the tail reads: every pass's rows in HBM, no program tensor
      tail_hbm_ = io_alloc(numel(shape) * esz_, name);
      tag("output " + name);
      store_act(act(v), tail_hbm_);
      continue;
    }
    // An image in HBM: already in the output's bytes (bands.cpp), or copied there.
    auto own = hbm_outputs_.find(i);
    bool in_hbm = hbm_acts_.count(v.getAsOpaquePointer());
    uint64_t addr = in_hbm && own != hbm_outputs_.end() ? own->second : io_alloc(numel(shape) * esz_, name);
    decl(fmt::format(".tensor {} role=output dtype={} shape=[{}] addr={}{}{}", quote(name), dt_, fmt::join(io_shape(shape), ", "),
                     addr, quant_attrs(v, bool(fn.getResultAttr(i, "vtpu.nhwc"))), typed));
    tag("output " + name);
    if (!in_hbm) store_act(act(v), addr);
    else if (own == hbm_outputs_.end()) copy_hbm_rows(hbm_act(v, name), addr, shape);
    stage_output(addr, numel(shape) * esz_);
  }
}

// Whether op is done with other ops: generated with an earlier op (gen_matmul_group,
// gen_batch_matmul), at another op's turn (plan.h, made_elsewhere: operands released in
// turn), in a matmul's epilogues, or now as a stream with the matmuls after it.
bool Codegen::done_elsewhere(mlir::Operation& op) {
  if (done_.count(&op)) return true;
  if (made_elsewhere(&op)) {
    for (Value operand : op.getOperands()) release(operand);
    return true;
  }
  if (auto mm = mlir::dyn_cast<tpu::MatmulOp>(op); mm && !is_int32(mm.getOutput())) {
    current_op_ = "matmul";
    current_shape_ = shape_of(mm.getOutput());
    output_high_ = false;
    int_out_ = false, out_esz_ = esz_;
    if (gen_matmul_group(mm)) return true;
  }
  if (auto f = fused_.find(&op); f != fused_.end()) {  // already done in a matmul's epilogues
    define(op.getResult(0), f->second);
    for (Value operand : op.getOperands()) release(operand);
    return true;
  }
  return false;
}

// One op of @main, unless an earlier op generated it already.
void Codegen::gen_op(mlir::Operation& op) {
  if (done_elsewhere(op)) {
    op.removeAttr(kEarlyStoreAttr);  // stored early only at its own turn
    return;
  }
  current_op_ = op.getName().stripDialect().str();
  auto whole = op.getAttrOfType<mlir::DenseI64ArrayAttr>(tpu::kBandAttr);  // a band of a layer (bands.cpp)
  if (auto layer = op.getAttrOfType<mlir::StringAttr>("layer")) current_layer_ = layer.str();
  if (whole) band_shapes_[band_key(current_layer_, current_op_)] = whole.asArrayRef().vec();
  in_band_ = bool(whole);
  // Outputs go to the end of the unified buffer away from the op's main input, so a
  // chain of layers alternates ends and frees contiguous space behind it.
  output_high_ = false;
  if (op.getNumOperands())
    if (auto it = acts_.find(op.getOperand(0).getAsOpaquePointer()); it != acts_.end())
      output_high_ = it->second.base + it->second.bytes() / 2 < ub_.capacity() / 2;
  current_shape_ = op.getNumResults() ? shape_of(op.getResult(0)) : std::vector<int64_t>{};
  // A matmul or convolution with an int32 result (an integer model output) writes int32 rows.
  int_out_ = op.getNumResults() && is_int32(op.getResult(0));
  out_esz_ = int_out_ ? 4 : esz_;
  if (auto m = mlir::dyn_cast<tpu::MatmulOp>(op)) gen_matmul(m);
  else if (auto ca = mlir::dyn_cast<tpu::CastOp>(op)) gen_cast(ca);
  else if (auto em = mlir::dyn_cast<tpu::EmbeddingOp>(op)) gen_embedding(em);
  else if (auto bm = mlir::dyn_cast<tpu::BatchMatmulOp>(op)) gen_batch_matmul(bm);
  else if (auto c = mlir::dyn_cast<tpu::Conv2DOp>(op)) gen_conv(c);
  else if (auto p = mlir::dyn_cast<tpu::PoolOp>(op)) gen_pool(p);
  else if (auto am = mlir::dyn_cast<tpu::PoolArgmaxOp>(op)) gen_pool_argmax(am);
  else if (auto ax = mlir::dyn_cast<tpu::ArgMaxOp>(op)) gen_argmax(ax);
  else if (auto a = mlir::dyn_cast<tpu::AddOp>(op)) gen_add(a);
  else if (auto bo = mlir::dyn_cast<tpu::BinaryOp>(op)) gen_binary(bo);
  else if (auto bc = mlir::dyn_cast<tpu::BroadcastOp>(op)) gen_broadcast(bc);
  else if (auto tp = mlir::dyn_cast<tpu::TransposeOp>(op)) gen_transpose(tp);
  else if (auto cc = mlir::dyn_cast<tpu::ConcatOp>(op)) gen_concat(cc);
  else if (auto sl = mlir::dyn_cast<tpu::SliceOp>(op)) gen_slice(sl);
  else if (auto s = mlir::dyn_cast<tpu::SoftmaxOp>(op)) gen_softmax(s);
  else if (auto ln = mlir::dyn_cast<tpu::LayerNormOp>(op)) gen_layernorm(ln);
  else if (auto k = mlir::dyn_cast<tpu::ConstantOp>(op)) gen_constant(k);
  else if (auto fq = mlir::dyn_cast<tpu::FakeQuantOp>(op)) gen_fake_quant(fq);
  else if (auto rz = mlir::dyn_cast<tpu::ResizeNearestOp>(op)) gen_resize(rz);
  else if (auto zi = mlir::dyn_cast<tpu::ZeroInsertOp>(op)) gen_zero_insert(zi);
  else if (auto r = mlir::dyn_cast<tpu::ReshapeOp>(op)) gen_reshape(r);
  else if (auto c = mlir::dyn_cast<tpu::ClampOp>(op)) gen_clamp(c);
  else if (auto af = mlir::dyn_cast<tpu::AffineOp>(op)) gen_affine(af);
  else if (auto un = mlir::dyn_cast<tpu::UnaryOp>(op)) gen_unary(un);
  else if (auto ht = mlir::dyn_cast<tpu::HbmTensorOp>(op)) gen_hbm_tensor(ht);
  else if (auto sr = mlir::dyn_cast<tpu::StoreRowsOp>(op)) gen_store_rows(sr);
  else if (auto lr = mlir::dyn_cast<tpu::LoadRowsOp>(op)) gen_load_rows(lr);
  else throw CompileError(fmt::format("code generation does not handle {}", op.getName().getStringRef().str()));
  if (op.hasAttr(kEarlyStoreAttr) && heads(&op).empty()) {  // a head split's is make_head_view's or make_head_transpose's
    bool stored = false;
    for (Value result : op.getResults()) stored |= store_rhs_early(result);
    if (!stored) op.removeAttr(kEarlyStoreAttr);
  }
  for (Value operand : op.getOperands()) release(operand);
}

// The program text with its constant segments and the layers' bounds, assembled unless
// CompileOptions::defer_assembly.
CompileResult Codegen::assemble() {
  merge_band_bounds();
  CompileResult r;
  // Hundreds of MB for a large model on a small array: built once, with room for the line
  // appended below, and the pieces released.
  r.assembly.reserve(decls_.size() + code_.size() + 256);
  r.assembly += decls_;
  r.assembly += code_;
  std::string().swap(code_);
  std::string().swap(decls_);
  r.assembly += fmt::format("# {} bytes of weights and constants in {} HBM segments (not listed)\n", const_bytes_,
                            segments_.size());
  for (auto& seg : segments_) r.program.constants.push_back(std::move(seg));
  r.bounds = std::move(bounds_);
  if (!opt_.defer_assembly) assemble_program(r, cfg_, !band_shapes_.empty());
  return r;
}

// Empty model inputs and outputs (a 0 in the shape; the importer left them out of @main):
// program tensors of no bytes, so callers see every name the model has.
void Codegen::declare_empty_tensors(mlir::func::FuncOp fn) {
  auto list = fn->getAttrOfType<mlir::ArrayAttr>("vtpu.empty_tensors");
  if (!list) return;
  for (mlir::Attribute e : list) {
    auto f = mlir::cast<mlir::ArrayAttr>(e);
    bool integer = mlir::cast<mlir::BoolAttr>(f[3]).getValue();
    decl(fmt::format(".tensor {} role={} dtype={} shape=[{}] addr=0{}", quote(mlir::cast<mlir::StringAttr>(f[1]).str()),
                     mlir::cast<mlir::StringAttr>(f[0]).str(), integer ? "int32" : dt_,
                     fmt::join(mlir::cast<mlir::DenseI64ArrayAttr>(f[2]).asArrayRef(), ", "),
                     q8_ && !integer ? " scale=1 zp=0" : ""));
  }
}

std::string Codegen::quant_attrs(Value v, bool nhwc) const {
  std::string s = q8_ ? fmt::format(" scale={} zp=0", double(scale(v))) : "";
  if (nhwc) s += " layout=nhwc";  // an image the model sees as NCHW
  return s;
}

// A constant activation: its values (int8 in its calibrated scale, or bf16) row-major in
// HBM, loaded into the blocked layout like a model input.
void Codegen::gen_constant(tpu::ConstantOp op) {
  std::string layer = op.getLayer().str();
  tag(layer);
  std::vector<float> v = tpu::float_values(op.getValue());
  std::vector<uint8_t> bytes(v.size() * esz_);
  double s = q8_ ? double(scale(op.getOutput())) : 1.0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (q8_) {
      bytes[i] = uint8_t(int8_t(std::clamp<double>(std::nearbyint(v[i] / s), -128, 127)));
    } else {
      uint16_t h = bf16_of(v[i]);
      std::memcpy(&bytes[i * 2], &h, 2);
    }
  }
  Act a = new_act(shape_of(op.getOutput()), fmt::format("the constant of '{}'", layer));
  load_act(a, hbm_const(std::move(bytes)));
  add_bound(layer, 0, a.rows * a.features * esz_);
  define(op.getOutput(), a);
}

}  // namespace vtpu::compiler::codegen

namespace vtpu::compiler {

CompileResult generate_program(mlir::ModuleOp module, const config::Config& cfg, const CompileOptions& options,
                               const std::map<const void*, float>& scales) {
  return generate_program(module, nullptr, cfg, options, scales);
}

CompileResult generate_program(mlir::ModuleOp module, mlir::ModuleOp tail, const config::Config& cfg,
                               const CompileOptions& options, const std::map<const void*, float>& scales) {
  codegen::plan_codegen(module, cfg, options.precision == Precision::Int8);
  if (tail) codegen::plan_codegen(tail, cfg, options.precision == Precision::Int8);
  // Out of HBM with every allocation on its own 4 KiB page (small arrays' weight tiles are 16
  // to 256 bytes each): again with them packed on 64-byte boundaries, then on 16 (a 4 x 4
  // array's INT8 tile is 16 bytes). Only then, so programs that fit keep their layout.
  auto packed = [&](bool reuse) {
    try {
      return codegen::Codegen(cfg, options, scales, 64, reuse).run(module, tail);
    } catch (const DoesNotFitError& e) {
      if (e.key() != "memory.bytes") throw;
    }
    return codegen::Codegen(cfg, options, scales, 16, reuse).run(module, tail);
  };
  // A program in row bands (bands.cpp) is made for a buffer-starved chip: HBM packed from
  // the start rather than after a whole program's failed attempt.
  bool bands = false;
  module.walk([&](mlir::Operation* op) { bands |= op->hasAttr(tpu::kBandAttr); });
  if (bands) {
    try {
      return codegen::Codegen(cfg, options, scales, 64).run(module, tail);
    } catch (const DoesNotFitError& e) {
      // Out of HBM: again with the images in HBM reusing the bytes of those read for the last
      // time. Only then, so programs that fit keep their layout.
      if (e.key() != "memory.bytes") throw;
      return packed(true);
    }
  }
  try {
    return codegen::Codegen(cfg, options, scales).run(module, tail);
  } catch (const DoesNotFitError& e) {
    if (e.key() != "memory.bytes") throw;
    return packed(false);
  }
}

void assemble_program(CompileResult& r, const config::Config& cfg, bool bands) {
  isa::Program p;
  try {
    p = isa::assemble(r.assembly, "<compiler>");
  } catch (const isa::AsmError& e) {
    // Name the generated line too: a compiler bug is then reportable as it is.
    const auto& d = e.diagnostics().front();
    std::string line;
    std::istringstream in(r.assembly);
    for (int i = 0; i < d.line && std::getline(in, line);) ++i;
    if (bands)  // bands repeat a layer's code: smaller ones would only need more
      throw DoesNotFitError(kProgramSizeKey, 0, 0,
                            fmt::format("in row bands the program does not fit the instruction set ({}); use a config "
                                        "with a larger unified buffer",
                                        d.message));
    throw CompileError(fmt::format("the generated program does not fit the instruction set ({}, at generated line "
                                   "'{}'); the model is too large for this compiler version on config '{}'",
                                   d.message, line, cfg.name));
  }
  for (auto& seg : r.program.constants) p.constants.push_back(std::move(seg));
  p.config_fingerprint = config::fingerprint(cfg);
  p.config_name = cfg.name;
  r.program = std::move(p);
}

uint64_t ub_block_alignment(const config::Config& cfg, const CompileOptions& options) {
  if (!options.compact_ub_blocks) return 64;
  const auto& u = cfg.core.unified_buffer;
  return std::min<uint64_t>(64, std::max<uint64_t>(u.row_bytes, u.alignment_bytes));
}

uint64_t values_bytes(mlir::ModuleOp module, const config::Config& cfg, const CompileOptions& options, int64_t batch) {
  return codegen::Codegen(cfg, options, {}).values_bytes(module, batch);
}

void check_inputs_fit(mlir::ModuleOp module, const config::Config& cfg, const CompileOptions& options, int64_t chunk_batch) {
  CompileOptions compact = options;
  compact.compact_ub_blocks = true;
  try {
    codegen::Codegen(cfg, compact, {}).check_inputs_fit(module, chunk_batch);
  } catch (const DoesNotFitError&) {
    codegen::Codegen(cfg, options, {}).check_inputs_fit(module, chunk_batch);
    throw;
  }
}

}  // namespace vtpu::compiler
