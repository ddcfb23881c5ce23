// A model's inputs as a program takes them and its outputs back as real values (model_io.h),
// and INT8 calibration data from files (runtime.h).
#include "model_io.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>

#include "vtpu/numerics/float.h"
#include "vtpu/runtime/npy.h"
#include "vtpu/support/layout.h"

namespace vtpu::runtime {
namespace {

// The values of an integer, bool (0/1) or integral float32 array as int32; an error names
// the input and the first value int32 cannot hold.
std::vector<int32_t> int32_values(const NpyArray& a, const std::string& tensor, const std::string& file) {
  static const std::set<std::string> kKinds = {"b1", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f4"};
  auto values = kKinds.count(a.descr.substr(1)) ? npy_values(a) : std::nullopt;
  if (!values)
    throw UserError(fmt::format("{}: input '{}' is an integer tensor; the file holds numpy '{}' (use int64, int32, int16, "
                                "int8, uint8, bool or float32 holding integers)",
                                file, tensor, a.descr));
  std::vector<int32_t> out(values->size());
  for (size_t i = 0; i < out.size(); ++i) {
    double x = (*values)[i];
    if (x != std::floor(x) || x < double(INT32_MIN) || x > double(INT32_MAX))
      throw UserError(fmt::format("{}: input '{}' element {} is {}, which int32 cannot hold (the program keeps integer "
                                  "inputs as int32)",
                                  file, tensor, i, x));
    out[i] = int32_t(x);
  }
  return out;
}

// The values of a float32, float16 or float64 array as float32 (float16 exactly; float64
// rounded); an error names the file and the input for anything else.
std::vector<float> float_values(const NpyArray& a, const std::string& tensor, const std::string& file) {
  std::string k = a.descr.substr(1);
  if (k != "f4" && k != "f2" && k != "f8")
    throw UserError(fmt::format("{}: input '{}' must be floating point (numpy '<f4', '<f2' or '<f8'), not '{}'", file,
                                tensor, a.descr));
  std::vector<double> d = *npy_values(a);
  return {d.begin(), d.end()};
}

// "a.png,b.png" -> its comma-separated files (one entry for a single .npy).
std::vector<std::filesystem::path> comma_list(const std::string& spec) {
  std::vector<std::filesystem::path> files;
  for (size_t at = 0; at <= spec.size();) {
    size_t comma = spec.find(',', at);
    if (comma == std::string::npos) comma = spec.size();
    files.push_back(spec.substr(at, comma - at));
    at = comma + 1;
  }
  return files;
}

}  // namespace

namespace detail {

std::vector<uint8_t> encode(const isa::TensorInfo& t, const std::vector<float>& v) {
  std::vector<uint8_t> b(t.bytes());
  for (size_t i = 0; i < v.size(); ++i) {
    switch (t.dtype) {
      case isa::Dtype::Bf16: {
        uint16_t h = numerics::f32_to_bf16(numerics::f32_bits(v[i]));
        std::memcpy(&b[i * 2], &h, 2);
        break;
      }
      case isa::Dtype::Int8: {
        double s = t.quant_scale > 0 ? t.quant_scale : 1.0;
        b[i] = uint8_t(int8_t(std::clamp<double>(std::nearbyint(v[i] / s) + t.zero_point, -128, 127)));
        break;
      }
      case isa::Dtype::Fp32: std::memcpy(&b[i * 4], &v[i], 4); break;
      case isa::Dtype::Int32: {
        int32_t x = int32_t(std::nearbyint(v[i]));
        std::memcpy(&b[i * 4], &x, 4);
        break;
      }
      default: throw UserError(fmt::format("input '{}': dtype {} is not supported by the runtime", t.name, isa::dtype_name(t.dtype)));
    }
  }
  return b;
}

std::vector<float> decode(const isa::TensorInfo& t, const std::vector<uint8_t>& b) {
  size_t n = b.size() / isa::dtype_bytes(t.dtype);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    switch (t.dtype) {
      case isa::Dtype::Bf16: {
        uint16_t h;
        std::memcpy(&h, &b[i * 2], 2);
        v[i] = numerics::f32_from_bits(uint32_t(h) << 16);
        break;
      }
      case isa::Dtype::Int8: v[i] = float((int8_t(b[i]) - t.zero_point) * (t.quant_scale > 0 ? t.quant_scale : 1.0)); break;
      case isa::Dtype::Fp32: std::memcpy(&v[i], &b[i * 4], 4); break;
      case isa::Dtype::Int32: {
        int32_t x;
        std::memcpy(&x, &b[i * 4], 4);
        v[i] = float(x);
        break;
      }
      default: throw UserError(fmt::format("output '{}': dtype {} is not supported by the runtime", t.name, isa::dtype_name(t.dtype)));
    }
  }
  return v;
}

ProgramInputs program_inputs(const isa::Program& program, const RunOptions& opt) {
  ProgramInputs in;
  for (const auto& [name, file] : opt.input_files) {
    bool known = false;
    for (const auto& t : program.tensors) known |= t.name == name && t.role == isa::TensorRole::Input;
    if (!known) {
      std::string names;
      for (const auto& t : program.tensors)
        if (t.role == isa::TensorRole::Input) names += " " + t.name;
      throw UserError(fmt::format("--input {}: the model has no input '{}'; its inputs are:{}", name, name, names));
    }
  }
  uint64_t index = 0;
  for (const auto& t : program.tensors) {
    if (t.role != isa::TensorRole::Input) continue;
    ++index;
    std::vector<int64_t> model_shape = t.nhwc ? nchw_shape_of(t.shape) : t.shape;
    std::vector<float> v;
    auto it = opt.input_files.find(t.name);
    std::vector<std::filesystem::path> images;
    if (it != opt.input_files.end()) {
      images = comma_list(it->second.string());
      if (!std::all_of(images.begin(), images.end(), [](const auto& f) { return is_image_file(f); })) images.clear();
    }
    if (!images.empty()) {
      v = image_tensor(images, model_shape, opt.image_norm, t.name);
      if (t.nhwc) v = nchw_to_nhwc(v, model_shape);
      in.used.push_back(t.name + "=" + it->second.string() + " (" + image_norm_name(opt.image_norm) + ")");
    } else if (it != opt.input_files.end() && t.dtype == isa::Dtype::Int32) {
      // An integer input (token ids, quantized activations): any integer .npy, or float32
      // holding integers, placed exactly as int32.
      NpyArray a = read_npy(it->second);
      check_npy_shape(a, model_shape, t.name, it->second.string());
      std::vector<int32_t> iv = int32_values(a, t.name, it->second.string());
      if (t.nhwc) iv = nchw_to_nhwc(iv, model_shape);
      std::vector<uint8_t> b(iv.size() * 4);
      std::memcpy(b.data(), iv.data(), b.size());
      in.bytes[t.name] = std::move(b);
      for (int32_t x : iv) v.push_back(float(x));
      in.real[t.name] = std::move(v);
      in.used.push_back(t.name + "=" + it->second.string());
      continue;
    } else if (it != opt.input_files.end()) {
      NpyArray a = read_npy(it->second);
      check_npy_shape(a, model_shape, t.name, it->second.string());
      v = float_values(a, t.name, it->second.string());
      if (t.nhwc) v = nchw_to_nhwc(v, model_shape);
      in.used.push_back(t.name + "=" + it->second.string());
    } else {
      uint64_t n = 1;
      for (int64_t d : t.shape) n *= uint64_t(d);
      std::mt19937_64 rng(opt.seed * 0x9E3779B97F4A7C15ull + index);
      std::uniform_real_distribution<float> u(-1.0f, 1.0f);
      std::uniform_int_distribution<int> ui(0, 127);  // integer inputs: small non-negative integers (ids, uint8 codes)
      v.resize(n);
      for (auto& x : v) x = t.dtype == isa::Dtype::Int32 ? float(ui(rng)) : u(rng);
      in.used.push_back(t.name + "=random");
    }
    in.bytes[t.name] = encode(t, v);
    in.real[t.name] = std::move(v);
  }
  return in;
}

compiler::CompileOptions compile_options(const std::filesystem::path& model, const RunOptions& opt) {
  compiler::CompileOptions copt;
  copt.precision = opt.precision;
  copt.batch = opt.batch;
  copt.shapes = opt.shapes;
  copt.fixed = opt.fixed;
  copt.calibration_method = opt.calibration_method;
  copt.calibration_percentile = opt.calibration_percentile;
  copt.rnn_schedule = opt.rnn_schedule;
  copt.seed = opt.seed;
  if (!opt.calibration_files.empty())
    copt.calibration = calibration_from_files(model, opt.calibration_files, opt.batch, opt.image_norm, opt.precision,
                                              opt.shapes, opt.fixed);
  return copt;
}

int64_t program_batch(const isa::Program& program) {
  // The first input's first dimension, as the compiler reads the batch (chunks, calibration):
  // other inputs need not carry the batch first (a recurrent state [layers, batch, hidden]).
  for (const auto& t : program.tensors)
    if (t.role == isa::TensorRole::Input && !t.shape.empty()) return std::max<int64_t>(1, t.shape[0]);
  return 1;
}

}  // namespace detail

namespace {

// --calibrate's files: a folder stands for its image and .npy files, in name order.
std::vector<std::filesystem::path> calibration_files(const std::string& input, const std::vector<std::filesystem::path>& given) {
  std::vector<std::filesystem::path> files;
  for (const auto& f : given) {
    std::error_code ec;
    if (!std::filesystem::is_directory(f, ec)) {
      files.push_back(f);
      continue;
    }
    std::vector<std::filesystem::path> in_dir;
    for (const auto& e : std::filesystem::directory_iterator(f, ec))
      if (e.is_regular_file() && (is_image_file(e.path()) || e.path().extension() == ".npy")) in_dir.push_back(e.path());
    if (ec) throw UserError(fmt::format("--calibrate {}: cannot read the folder {}: {}", input, f.string(), ec.message()));
    if (in_dir.empty())
      throw UserError(fmt::format("--calibrate {}: the folder {} holds no image (PNG, JPEG, BMP, PPM) or .npy files", input,
                                  f.string()));
    std::sort(in_dir.begin(), in_dir.end());
    files.insert(files.end(), in_dir.begin(), in_dir.end());
  }
  return files;
}

}  // namespace

std::vector<std::map<std::string, std::vector<float>>> calibration_from_files(
    const std::filesystem::path& model, const std::map<std::string, std::string>& specs, int64_t batch, ImageNorm norm,
    compiler::Precision precision, const compiler::InputShapes& shapes, const compiler::FixedInputs& fixed) {
  if (precision != compiler::Precision::Int8)
    throw UserError("--calibrate applies to --dtype int8 (bf16 needs no calibration)");
  compiler::CompileOptions o;
  o.batch = batch;
  o.shapes = shapes;
  o.fixed = fixed;
  std::vector<compiler::ModelInput> inputs = compiler::model_inputs(model, o);
  std::string names;
  for (const auto& in : inputs) names += " " + in.name;
  for (const auto& [name, spec] : specs)
    if (std::none_of(inputs.begin(), inputs.end(), [&](const auto& in) { return in.name == name; }))
      throw UserError(fmt::format("--calibrate {}: the model has no input '{}'; its inputs are:{}", name, name, names));
  std::vector<std::map<std::string, std::vector<float>>> samples;
  std::string first;  // the input that set the sample count
  for (const auto& in : inputs) {
    auto it = specs.find(in.name);
    if (it == specs.end())
      throw UserError(fmt::format("--calibrate: no data for input '{}'; calibration needs every input:{}", in.name, names));
    std::vector<int64_t> model_shape = in.nhwc ? nchw_shape_of(in.shape) : in.shape;
    int64_t per = 1;
    for (int64_t d : model_shape) per *= d;
    std::vector<std::filesystem::path> files = calibration_files(in.name, comma_list(it->second));
    std::vector<std::vector<float>> pieces;  // model layout
    if (std::all_of(files.begin(), files.end(), [](const auto& f) { return is_image_file(f); })) {
      int64_t n = model_shape.empty() ? 1 : model_shape[0];
      if (int64_t(files.size()) % n)
        throw UserError(fmt::format("--calibrate {}: {} image files do not make whole batches of {}", in.name, files.size(), n));
      for (size_t i = 0; i < files.size(); i += size_t(n))
        pieces.push_back(image_tensor({files.begin() + long(i), files.begin() + long(i) + n}, model_shape, norm, in.name));
    } else {
      for (const auto& f : files) {  // .npy files, each a whole number of batches
        if (is_image_file(f))
          throw UserError(fmt::format("--calibrate {}: {} mixes image files with .npy files; give one kind", in.name,
                                      f.string()));
        NpyArray a = read_npy(f);
        std::vector<float> v;
        if (in.integer) {
          for (int32_t x : int32_values(a, in.name, f.string())) v.push_back(float(x));
        } else {
          v = float_values(a, in.name, f.string());
        }
        if (v.empty() || int64_t(v.size()) % per)
          throw UserError(fmt::format("{}: calibration data for input '{}' holds {} values, not a whole number of batches "
                                      "of shape [{}] ({} values each)",
                                      f.string(), in.name, v.size(), fmt::join(model_shape, ", "), per));
        for (size_t i = 0; i < v.size(); i += size_t(per)) pieces.emplace_back(v.begin() + long(i), v.begin() + long(i) + per);
      }
    }
    if (samples.empty()) samples.resize(pieces.size()), first = in.name;
    if (pieces.size() != samples.size())
      throw UserError(fmt::format("--calibrate: input '{}' gives {} batches but '{}' gives {}; every input needs the same "
                                  "number",
                                  in.name, pieces.size(), first, samples.size()));
    for (size_t s = 0; s < pieces.size(); ++s)
      samples[s][in.name] = in.nhwc ? nchw_to_nhwc(pieces[s], model_shape) : std::move(pieces[s]);
  }
  return samples;
}

}  // namespace vtpu::runtime
