// ONNX backend node tests (Debian's libonnx-testdata) compiled for a config, run on the
// simulator and compared with the shipped outputs. Prints passed/total per operator and
// exits non-zero when a test listed in expected_pass.txt fails (a regression).
//
// The node tests feed weights as graph inputs; the compiler wants constant weights, so the
// runner turns every input after the first of weight-taking operators into an initializer
// holding the test's data.
//
// usage: conformance_runner DATA_DIR EXPECTED_PASS_FILE [CONFIG] [--write-expected] [--bake DIR]
// --bake DIR writes each test's baked model to DIR/<test>.onnx and runs nothing (the fuzz
// targets and tests/fuzz/mutate.py start from these: small valid models of every operator).
#include <fmt/format.h>
#include "vtpu/support/layout.h"
#include "vtpu/support/child_process.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <onnx/onnx_pb.h>
#include <set>

#include "vtpu/compiler/compiler.h"
#include "vtpu/numerics/float.h"
#include "vtpu/sim/simulator.h"

namespace fs = std::filesystem;
using namespace vtpu;

namespace {

const std::set<std::string> kOperators = {"Gemm", "MatMul", "Conv", "Relu", "Clip", "Add", "MaxPool", "AveragePool",
                                          "GlobalAveragePool", "Flatten", "Reshape", "BatchNormalization", "Softmax",
                                          "Sigmoid", "Tanh", "Erf", "Exp", "Reciprocal", "Sqrt", "Log", "Softplus", "LogSoftmax", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not", "And", "Or", "Xor", "Where",
                                          "HardSigmoid", "Neg", "Sub", "Mul", "Max", "Min", "LeakyRelu", "PRelu", "Squeeze", "Unsqueeze",
                                          "Transpose", "Concat", "Slice", "Split", "Div", "LayerNormalization", "LSTM", "GRU", "Resize", "Upsample", "ConvTranspose", "Gather", "ConvTranspose", "Gather",
                                          "MatMulInteger", "ConvInteger", "Abs", "Elu", "Selu", "Softsign", "Pad", "ReduceMean", "ReduceSum", "Sum", "Mean", "InstanceNormalization", "Tile", "Expand", "Shape", "Size", "GlobalMaxPool", "HardSwish", "Celu", "ArgMax", "ArgMin"};
// Operators whose inputs after the first are weights (constants for the compiler).
// MatMul's B stays a runtime input: the node tests then check activation x activation
// matmuls (constant weights are what Gemm's tests check).
const std::set<std::string> kWeightInputs = {"Gemm", "Conv", "LayerNormalization", "LSTM", "GRU", "Resize", "Upsample", "ConvTranspose", "Gather", "Clip", "Reshape", "BatchNormalization", "PRelu",
                                            "Squeeze", "Unsqueeze", "Slice", "Split", "MatMulInteger", "ConvInteger", "Pad", "ReduceSum", "ReduceMean", "InstanceNormalization", "Tile", "Expand"};

std::vector<float> floats_of(const onnx::TensorProto& t) {
  size_t n = 1;
  for (auto d : t.dims()) n *= size_t(d);
  std::vector<float> v(n);
  auto dt = t.data_type();
  // Integer tensors: raw little-endian data, or the typed field ONNX keeps them in
  // (int32_data up to 32 bits, int64_data, uint64_data for uint32/uint64).
  static const std::map<int, std::pair<size_t, bool>> kInts = {  // element bytes, signed
      {onnx::TensorProto::INT8, {1, true}},   {onnx::TensorProto::UINT8, {1, false}},  {onnx::TensorProto::BOOL, {1, false}},
      {onnx::TensorProto::INT16, {2, true}},  {onnx::TensorProto::UINT16, {2, false}},
      {onnx::TensorProto::INT32, {4, true}},  {onnx::TensorProto::UINT32, {4, false}},
      {onnx::TensorProto::INT64, {8, true}},  {onnx::TensorProto::UINT64, {8, false}}};
  if (auto k = kInts.find(dt); k != kInts.end()) {
    auto [esz, is_signed] = k->second;
    for (size_t i = 0; i < n; ++i) {
      double x;
      if (t.has_raw_data()) {
        uint64_t u = 0;
        std::memcpy(&u, t.raw_data().data() + i * esz, esz);
        int shift = int(64 - 8 * esz);
        x = is_signed ? double(int64_t(u << shift) >> shift) : double(u);
      } else if (dt == onnx::TensorProto::INT64) {
        x = double(t.int64_data(int(i)));
      } else if (dt == onnx::TensorProto::UINT32 || dt == onnx::TensorProto::UINT64) {
        x = double(t.uint64_data(int(i)));
      } else {
        x = double(t.int32_data(int(i)));
      }
      v[i] = float(x);
    }
    return v;
  }
  if (dt == onnx::TensorProto::FLOAT16 || dt == onnx::TensorProto::DOUBLE) {
    for (size_t i = 0; i < n; ++i) {
      if (dt == onnx::TensorProto::DOUBLE) {
        double d;
        if (t.has_raw_data()) std::memcpy(&d, t.raw_data().data() + i * 8, 8);
        else d = t.double_data(int(i));
        v[i] = float(d);
      } else {
        uint16_t h;
        if (t.has_raw_data()) std::memcpy(&h, t.raw_data().data() + i * 2, 2);
        else h = uint16_t(t.int32_data(int(i)));
        v[i] = numerics::f32_from_bits(numerics::f16_to_f32_bits(h));
      }
    }
    return v;
  }
  if (t.data_type() != onnx::TensorProto::FLOAT)
    throw UserError(fmt::format("tensor '{}' has element type {}", t.name(), t.data_type()));
  if (t.has_raw_data()) {
    if (n) std::memcpy(v.data(), t.raw_data().data(), n * 4);  // an empty tensor's vector has no data pointer
  } else {
    for (size_t i = 0; i < n; ++i) v[i] = t.float_data(int(i));
  }
  return v;
}

onnx::TensorProto read_pb(const fs::path& p) {
  onnx::TensorProto t;
  std::ifstream f(p, std::ios::binary);
  if (!f || !t.ParseFromIstream(&f)) throw UserError(p.string() + ": cannot read TensorProto");
  return t;
}

std::vector<int64_t> dims(const onnx::TensorProto& t) { return {t.dims().begin(), t.dims().end()}; }

std::string in_child(const std::function<std::string()>& fn) {
  return run_in_child(fn, [](const std::exception& e) { return std::string("ERR") + e.what(); }, "ERRchild crashed");
}

// Runs one node test; returns "" on success or why it failed. With `runtime_indices` (Gather)
// the data is baked into an initializer and the indices stay a run-time (integer) input:
// the embedding-lookup path.
// With `models` (the pytorch-converted and pytorch-operator sets: small exported modules)
// the graph may hold several nodes and keeps its initializers; every other graph input is
// a run-time input, fed input_K.pb in order. op_out is then the graph's operator types.
std::string run_test(const fs::path& dir, const config::Config& cfg, std::string& op_out, bool runtime_indices = false,
                     bool models = false, const fs::path& bake_dir = {}) {
  onnx::ModelProto model;
  {
    std::ifstream f(dir / "model.onnx", std::ios::binary);
    if (!model.ParseFromIstream(&f)) return "model does not parse";
  }
  if (model.graph().node_size() == 0 || (!models && model.graph().node_size() != 1)) return "not a single-node test";
  const onnx::NodeProto node = model.graph().node(0);
  op_out = node.op_type();
  if (models) {
    std::set<std::string> ops;
    for (const auto& nd : model.graph().node()) ops.insert(nd.op_type());
    op_out = fmt::format("{}", fmt::join(ops, "+"));
  } else if (!kOperators.count(node.op_type())) {
    return "skip";
  }
  fs::path data = dir / "test_data_set_0";
  // Bake weight inputs into initializers.
  std::map<std::string, onnx::TensorProto> inputs;
  std::set<std::string> initialized;
  for (const auto& t : model.graph().initializer()) initialized.insert(t.name());
  for (int i = 0, k = 0; i < model.graph().input_size(); ++i) {
    if (initialized.count(model.graph().input(i).name())) continue;
    auto t = read_pb(data / fmt::format("input_{}.pb", k++));
    t.set_name(model.graph().input(i).name());
    inputs[t.name()] = t;
  }
  onnx::ModelProto baked = model;
  // Each node test declares the opset in which its operator last changed (HardSigmoid: 6,
  // GlobalAveragePool: 1), so the same graph is valid at the importer's lowest opset.
  for (auto& o : *baked.mutable_opset_import())
    if ((o.domain().empty() || o.domain() == "ai.onnx") && o.version() < 7) o.set_version(7);
  auto* g = baked.mutable_graph();
  g->clear_input();
  std::vector<std::string> runtime_inputs;
  for (int i = 0; i < model.graph().input_size(); ++i) {
    const auto& in = model.graph().input(i);
    if (initialized.count(in.name())) continue;  // an initializer listed as an input (IR version 3)
    bool weight = !models && (runtime_indices ? i == 0 : kWeightInputs.count(node.op_type()) && i > 0);
    if (weight) *g->add_initializer() = inputs[in.name()];
    else *g->add_input() = in, runtime_inputs.push_back(in.name());
  }
  // LayerNormalization's optional Mean and InvStdDev (training statistics the compiler does
  // not produce) are dropped from the node and the graph; every other output is compared.
  if (node.op_type() == "LayerNormalization") {
    auto* nn = g->mutable_node(0);
    while (nn->output_size() > 1) nn->mutable_output()->RemoveLast();
    while (g->output_size() > 1) g->mutable_output()->RemoveLast();
  }
  fs::path tmp = (bake_dir.empty() ? fs::temp_directory_path() : bake_dir) /
                fmt::format("{}{}.onnx", bake_dir.empty() ? "vtpu_conf_" : "", dir.filename().string());
  {
    std::ofstream f(tmp, std::ios::binary);
    baked.SerializeToOstream(&f);
    if (!f) throw UserError(tmp.string() + ": write failed");
  }
  if (!bake_dir.empty()) return "";
  compiler::CompileResult r;
  try {
    r = compiler::compile_onnx(tmp, cfg);
  } catch (const std::exception& e) {
    return std::string("compile: ") + e.what();
  }
  // The program says which tensors it keeps NHWC (images); everything else is row-major as in ONNX.
  auto stored_nhwc = [&](const std::string& name) {
    for (const auto& t : r.program.tensors)
      if (t.name == name) return t.nhwc;
    return false;
  };
  // Each tensor in its program dtype: bf16 activations, int32 integer inputs and outputs.
  auto dtype_of = [&](const std::string& name) {
    for (const auto& t : r.program.tensors)
      if (t.name == name) return t.dtype;
    return isa::Dtype::Bf16;
  };
  std::map<std::string, std::vector<uint8_t>> in_bytes;
  for (const auto& name : runtime_inputs) {
    const auto& t = inputs[name];
    auto v = floats_of(t);
    if (stored_nhwc(name)) v = nchw_to_nhwc(v, dims(t));
    isa::Dtype dt = dtype_of(name);
    std::vector<uint8_t> b(v.size() * isa::dtype_bytes(dt));
    for (size_t i = 0; i < v.size(); ++i) {
      if (dt == isa::Dtype::Int32) {
        int32_t x = int32_t(v[i]);
        std::memcpy(&b[i * 4], &x, 4);
      } else if (dt == isa::Dtype::Fp32) {
        std::memcpy(&b[i * 4], &v[i], 4);
      } else if (dt == isa::Dtype::Bf16) {
        uint16_t h = numerics::f32_to_bf16(numerics::f32_bits(v[i]));
        std::memcpy(&b[i * 2], &h, 2);
      } else {
        return fmt::format("input '{}' has program dtype {}, which the runner does not feed", name, isa::dtype_name(dt));
      }
    }
    in_bytes[name] = b;
  }
  // Every output the graph keeps is compared: its shape and its values.
  std::vector<std::string> out_names;
  for (const auto& o : g->output()) out_names.push_back(o.name());
  std::string got_all = in_child([&] {
    auto res = sim::simulate(cfg, r.program, in_bytes);
    std::string packed;  // per output: 8-byte length, then the bytes
    for (const auto& name : out_names) {
      const auto& o = res.outputs.at(name);
      uint64_t len = o.size();
      packed.append(reinterpret_cast<const char*>(&len), 8).append(o.begin(), o.end());
    }
    return "OK" + packed;
  });
  if (got_all.rfind("OK", 0) != 0) return "simulate: " + got_all.substr(3);
  size_t at = 2;
  for (size_t k = 0; k < out_names.size(); ++k) {
    const std::string& out_name = out_names[k];
    uint64_t len;
    std::memcpy(&len, got_all.data() + at, 8);
    std::string got = got_all.substr(at + 8, len);
    at += 8 + len;
    auto want_t = read_pb(data / fmt::format("output_{}.pb", k));
    auto want = floats_of(want_t);
    std::vector<int64_t> want_shape = dims(want_t), got_shape;
    for (const auto& t : r.program.tensors)
      if (t.name == out_name) got_shape = t.shape;
    if (stored_nhwc(out_name)) {
      want = nchw_to_nhwc(want, want_shape);
      want_shape = {want_shape[0], want_shape[2], want_shape[3], want_shape[1]};
    }
    if (got_shape != want_shape)
      return fmt::format("output '{}' has shape [{}], expected [{}]", out_name, fmt::join(got_shape, ", "), fmt::join(want_shape, ", "));
    isa::Dtype out_dt = dtype_of(out_name);
    size_t esz = isa::dtype_bytes(out_dt);
    if (got.size() / esz != want.size())
      return fmt::format("output '{}' has {} values, expected {}", out_name, got.size() / esz, want.size());
    if (out_dt == isa::Dtype::Int32) {  // integer outputs must be exact
      for (size_t i = 0; i < want.size(); ++i) {
        int32_t x;
        std::memcpy(&x, got.data() + i * 4, 4);
        if (double(x) != double(want[i]))
          return fmt::format("output '{}' element {}: got {}, expected {} (exactly)", out_name, i, x, want[i]);
      }
      continue;
    }
    double mx = 0;
    for (float w : want) mx = std::max(mx, double(std::fabs(w)));
    for (size_t i = 0; i < want.size(); ++i) {
      uint16_t h;
      std::memcpy(&h, got.data() + i * 2, 2);
      float v = numerics::f32_from_bits(uint32_t(h) << 16);
      double tol = 0.02 * mx + 0.02;  // bf16 inputs and outputs (docs/compiler.md)
      if (std::isnan(want[i]) ? !std::isnan(v) : !(std::fabs(double(v) - want[i]) <= tol))
        return fmt::format("output '{}' element {}: got {}, expected {} (tolerance {:.3g})", out_name, i, v, want[i], tol);
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: conformance_runner DATA_DIR EXPECTED_PASS_FILE [CONFIG] [--models] [--write-expected] [--bake DIR]\n"
                 "  --models: DATA_DIR holds small exported models (pytorch-converted, pytorch-operator)\n"
                 "  --bake DIR: only write the baked models (weights as initializers) to DIR\n";
    return 2;
  }
  fs::path data = argv[1], expected_file = argv[2];
  bool write = false, models = false;
  std::string cfg_name = "tpu-v4-core";
  fs::path bake_dir;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--write-expected") write = true;
    else if (a == "--bake" && i + 1 < argc) bake_dir = argv[++i];
    else if (a == "--models") models = true;
    else cfg_name = a;
  }
  ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  config::Config cfg = config::resolve(cfg_name);
  if (!fs::exists(data)) {
    std::cerr << data << " does not exist: install libonnx-testdata (scripts/install-deps.sh)\n";
    return 1;
  }
  std::set<std::string> expected;
  {
    std::ifstream f(expected_file);
    for (std::string line; std::getline(f, line);)
      if (!line.empty() && line[0] != '#') expected.insert(line);
  }
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(data)) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  std::map<std::string, std::pair<int, int>> per_op;
  std::vector<std::string> passing, regressions;
  // Gather's tests also run with the indices as a run-time input (name suffix
  // "+runtime_indices", counted as "Gather (run-time ids)").
  std::vector<std::pair<fs::path, bool>> runs;
  for (const auto& d : dirs) {
    runs.push_back({d, false});
    if (!models && d.filename().string().rfind("test_gather_", 0) == 0 && d.filename().string().find("elements") == std::string::npos &&
        d.filename().string().find("gathernd") == std::string::npos)
      runs.push_back({d, true});
  }
  for (const auto& [d, runtime_indices] : runs) {
    std::string op;
    std::string why;
    try {
      if (!bake_dir.empty() && runtime_indices) continue;
      why = run_test(d, cfg, op, runtime_indices, models, bake_dir);
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (why == "skip" || op.empty() || (!models && !kOperators.count(op))) continue;
    auto& [pass, total] = per_op[runtime_indices ? op + " (run-time ids)" : op];
    ++total;
    std::string name = d.filename().string() + (runtime_indices ? "+runtime_indices" : "");
    if (why.empty()) {
      ++pass;
      passing.push_back(name);
      std::cout << fmt::format("PASS {}\n", name);
    } else {
      std::cout << fmt::format("FAIL {}: {}\n", name, why.substr(0, 300));
      if (expected.count(name)) regressions.push_back(name);
    }
  }
  std::cout << fmt::format("\nONNX {} tests on {} (bf16):\n", models ? "model" : "node", cfg.name);
  int p = 0, t = 0;
  for (const auto& [op, pt] : per_op) {
    std::cout << fmt::format("  {:<20} {:>3}/{:<3} passed\n", op, pt.first, pt.second);
    p += pt.first, t += pt.second;
  }
  std::cout << fmt::format("  {:<20} {:>3}/{:<3} passed\n", "all", p, t);
  if (write) {
    std::ofstream f(expected_file);
    f << fmt::format("# ONNX {} tests that pass; written by conformance_runner --write-expected\n", models ? "model" : "node");
    for (const auto& n : passing) f << n << "\n";
  }
  for (const auto& n : regressions) std::cout << "REGRESSION: " << n << " is listed in " << expected_file.string() << " but fails\n";
  std::cout << fmt::format("{} passed, {} failed\n", p, t - p);
  return regressions.empty() ? 0 : 1;
}
