// Assembler, directives: .tag .config .fingerprint .equ .desc .vparam .tensor .const .data,
// the checks on their values, and a .const's values encoded as its dtype's bytes.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "asm_internal.h"

namespace vtpu::isa::asm_detail {

void Assembler::directive(std::vector<Token> toks, int line_no) {
  Parser ps(toks);
  Token d = ps.next();
  const std::string& name = d.text;
  auto need_name = [&](const char* what) {
    Token n = ps.next();
    if (n.kind != Tok::Ident && n.kind != Tok::String)
      throw LineError{n.loc, fmt::format("{} needs a name", what)};
    return n;
  };
  if (name == ".tag") {
    if (ps.at_end()) {
      current_tag_ = 0;
      return;
    }
    Token n = ps.next();
    if (n.kind != Tok::Ident && n.kind != Tok::String)
      throw LineError{n.loc, ".tag needs a name (an identifier or a \"string\")"};
    if (!ps.at_end()) throw LineError{ps.peek().loc, ".tag takes one name"};
    current_tag_ = intern_tag(n.text, n.loc);
  } else if (name == ".config") {
    // Preset names contain '-' (tiny-8x8): take the rest of the line as written.
    std::string n;
    while (!ps.at_end()) n += ps.next().text;
    if (n.empty()) throw LineError{d.loc, ".config needs a preset name or a config file path"};
    prog_.config_name = n;
  } else if (name == ".fingerprint") {
    // A 64-bit hash: all of it, the top bit too (vtpu disasm prints it in hex).
    if (ps.at_end()) throw LineError{d.loc, ".fingerprint needs an integer"};
    Token t = ps.next();
    auto u = t.kind == Tok::Number ? parse_u64(t.text) : std::nullopt;
    if (!u) throw LineError{t.loc, ".fingerprint needs an integer"};
    prog_.config_fingerprint = *u;
  } else if (name == ".equ") {
    Token n = need_name(".equ");
    if (ps.is_punct(",")) ps.next();
    Value v = ps.value();
    equs_[n.text] = int_of(v, "an .equ value", INT64_MIN, INT64_MAX);
  } else if (name == ".desc") {
    Token n = need_name(".desc");
    desc_directive(n, ps.operands());
  } else if (name == ".vparam") {
    Token n = need_name(".vparam");
    vparam_directive(n, ps.operands());
  } else if (name == ".tensor" || name == ".const") {
    Token n = need_name(name.c_str());
    tensor_directive(n, ps.operands(), name == ".const");
  } else if (name == ".data") {
    data_directive(d, ps.operands());
  } else {
    throw LineError{d.loc, fmt::format("unknown directive '{}'; known: .tag .config .fingerprint "
                                       ".equ .desc .vparam .tensor .const .data",
                                       name)};
  }
  (void)line_no;
}

uint16_t Assembler::intern_tag(const std::string& t, Loc loc) {
  if (t.empty()) return 0;
  for (size_t i = 0; i < prog_.tags.size(); ++i)
    if (prog_.tags[i] == t) return uint16_t(i);
  if (prog_.tags.size() >= (1u << kTagBits))
    throw LineError{loc, fmt::format("more than {} distinct tags", (1u << kTagBits) - 1)};
  prog_.tags.push_back(t);
  return uint16_t(prog_.tags.size() - 1);
}

int64_t Assembler::int_of(const Value& v, const std::string& what, int64_t lo, int64_t hi) {
  int64_t x;
  if (v.kind == Value::Int) x = v.i;
  else if (v.kind == Value::Ident && equs_.count(v.text)) x = equs_[v.text];
  else throw LineError{v.loc, fmt::format("{} must be an integer", what)};
  if (x < lo || x > hi) throw LineError{v.loc, fmt::format("{} = {} out of range [{}, {}]", what, x, lo, hi)};
  return x;
}

double Assembler::float_of(const Value& v, const std::string& what) {
  if (v.kind == Value::Int) return double(v.i);
  if (v.kind == Value::Float) return v.f;
  if (v.kind == Value::Ident && equs_.count(v.text)) return double(equs_[v.text]);
  throw LineError{v.loc, fmt::format("{} must be a number", what)};
}

const std::vector<Value>& Assembler::list_of(const Value& v, const std::string& what) {
  if (v.kind != Value::List) throw LineError{v.loc, fmt::format("{} must be a list like [1, 2, 3]", what)};
  return v.list;
}

Dtype Assembler::dtype_of(const Value& v) {
  if (v.kind == Value::Ident)
    if (auto d = parse_dtype(v.text)) return *d;
  throw LineError{v.loc, "dtype must be one of int8, bf16, int32, fp32, uint8, int16"};
}

template <typename F>
void Assembler::each_key(const std::vector<std::pair<std::optional<Token>, Value>>& args, const char* dir,
                         const std::vector<const char*>& allowed, F&& f) {
  std::map<std::string, int> seen;
  for (auto& [k, v] : args) {
    if (!k) throw LineError{v.loc, fmt::format("{} takes name=value pairs", dir)};
    bool ok = false;
    for (const char* a : allowed) ok |= k->text == a;
    if (!ok) {
      std::string names;
      for (const char* a : allowed) names += (names.empty() ? "" : ", ") + std::string(a);
      throw LineError{k->loc, fmt::format("{} has no key '{}'; its keys are: {}", dir, k->text, names)};
    }
    if (seen[k->text]++ && k->text != "dim")
      throw LineError{k->loc, fmt::format("key '{}' given twice", k->text)};
    f(k->text, v);
  }
}

void Assembler::check_new_symbol(std::map<std::string, uint32_t>& table, const Token& n, const char* what) {
  if (table.count(n.text)) throw LineError{n.loc, fmt::format("{} '{}' is already defined", what, n.text)};
}

void Assembler::desc_directive(const Token& n, const std::vector<std::pair<std::optional<Token>, Value>>& args) {
  check_new_symbol(descs_, n, "descriptor");
  DmaDescriptor d;
  d.name = n.text;
  bool has_bytes = false;
  each_key(args, ".desc", {"bytes", "src_off", "dst_off", "dtype", "dim"}, [&](const std::string& k, const Value& v) {
    if (k == "bytes") d.bytes = uint32_t(int_of(v, "bytes", 1, UINT32_MAX)), has_bytes = true;
    else if (k == "src_off") d.src_offset = uint64_t(int_of(v, "src_off", 0, INT64_MAX));
    else if (k == "dst_off") d.dst_offset = uint64_t(int_of(v, "dst_off", 0, INT64_MAX));
    else if (k == "dtype") d.dtype = dtype_of(v);
    else if (k == "dim") {
      const auto& l = list_of(v, "dim");
      if (l.size() != 3) throw LineError{v.loc, "dim must be [count, src_stride, dst_stride]"};
      if (d.dims.size() >= kMaxDmaDims)
        throw LineError{v.loc, fmt::format("a descriptor has at most {} dims", kMaxDmaDims)};
      d.dims.push_back({uint32_t(int_of(l[0], "dim count", 1, UINT32_MAX)),
                        int_of(l[1], "dim src_stride", INT32_MIN, INT32_MAX),
                        int_of(l[2], "dim dst_stride", INT32_MIN, INT32_MAX)});
    }
  });
  if (!has_bytes) throw LineError{n.loc, fmt::format(".desc {} needs bytes=N (contiguous bytes per row)", n.text)};
  if (prog_.descriptors.size() >= kMaxDescriptors)
    throw LineError{n.loc, fmt::format("more than {} descriptors", kMaxDescriptors)};
  descs_[n.text] = uint32_t(prog_.descriptors.size());
  prog_.descriptors.push_back(std::move(d));
}

void Assembler::vparam_directive(const Token& n, const std::vector<std::pair<std::optional<Token>, Value>>& args) {
  check_new_symbol(params_, n, "vector param");
  VectorParams p;
  p.name = n.text;
  auto ints = [&](const Value& v, const char* what, int64_t lo, int64_t hi) {
    std::vector<int32_t> out;
    if (v.kind == Value::List)
      for (const Value& x : v.list) out.push_back(int32_t(int_of(x, what, lo, hi)));
    else
      out.push_back(int32_t(int_of(v, what, lo, hi)));
    return out;
  };
  auto floats = [&](const Value& v, const char* what) {
    std::vector<float> out;
    if (v.kind == Value::List)
      for (const Value& x : v.list) out.push_back(float(float_of(x, what)));
    else
      out.push_back(float(float_of(v, what)));
    return out;
  };
  each_key(args, ".vparam", {"mult", "shift", "in_zp", "out_zp", "double_round", "min", "max", "scale", "bias", "window", "pool_stride"},
           [&](const std::string& k, const Value& v) {
             if (k == "mult") p.multiplier = ints(v, "mult", INT32_MIN, INT32_MAX);
             else if (k == "shift") p.shift = ints(v, "shift", 2, 62);
             else if (k == "in_zp") p.input_zp = int32_t(int_of(v, "in_zp", INT32_MIN, INT32_MAX));
             else if (k == "out_zp") p.output_zp = int32_t(int_of(v, "out_zp", INT32_MIN, INT32_MAX));
             else if (k == "double_round") p.double_round = int_of(v, "double_round", 0, 1) != 0;
             else if (k == "min") p.min = float_of(v, "min");
             else if (k == "max") p.max = float_of(v, "max");
             else if (k == "scale") p.scale = floats(v, "scale");
             else if (k == "bias") p.bias = floats(v, "bias");
             else if (k == "window") p.window = ints(v, "window", INT32_MIN, INT32_MAX);
             else if (k == "pool_stride") p.pool_stride = int32_t(int_of(v, "pool_stride", 0, INT32_MAX));
           });
  if (p.min > p.max) throw LineError{n.loc, fmt::format(".vparam {}: min {} is greater than max {}", n.text, p.min, p.max)};
  if (prog_.params.size() >= kMaxVectorParams)
    throw LineError{n.loc, fmt::format("more than {} vector params", kMaxVectorParams)};
  params_[n.text] = uint32_t(prog_.params.size());
  prog_.params.push_back(std::move(p));
}

std::optional<TensorRole> Assembler::parse_role(std::string_view s) {
  for (auto r : {TensorRole::Input, TensorRole::Output, TensorRole::Constant, TensorRole::Scratch})
    if (tensor_role_name(r) == s) return r;
  return std::nullopt;
}

void Assembler::tensor_directive(const Token& n, const std::vector<std::pair<std::optional<Token>, Value>>& args, bool is_const) {
  for (const auto& t : prog_.tensors)
    if (t.name == n.text) throw LineError{n.loc, fmt::format("tensor '{}' is already defined", n.text)};
  TensorInfo t;
  t.name = n.text;
  t.role = is_const ? TensorRole::Constant : TensorRole::Input;
  bool has_addr = false, has_shape = false, has_role = is_const;
  const Value* values = nullptr;
  bool bits = false;
  static const std::vector<const char*> kConstKeys{"dtype", "shape", "addr", "scale", "zp", "values", "bits"};
  static const std::vector<const char*> kTensorKeys{"role", "dtype", "shape", "addr", "scale", "zp", "layout", "model_type"};
  const auto& keys = is_const ? kConstKeys : kTensorKeys;
  each_key(args, is_const ? ".const" : ".tensor", keys, [&](const std::string& k, const Value& v) {
    if (k == "role") {
      auto r = v.kind == Value::Ident ? parse_role(v.text) : std::nullopt;
      if (!r) throw LineError{v.loc, "role must be one of input, output, const, scratch"};
      t.role = *r;
      has_role = true;
    } else if (k == "dtype") t.dtype = dtype_of(v);
    else if (k == "shape") {
      // A model's empty input or output may have a 0 dimension (no bytes); constants may not.
      for (const Value& x : list_of(v, "shape")) t.shape.push_back(int_of(x, "shape dimension", is_const ? 1 : 0, INT32_MAX));
      has_shape = true;
    } else if (k == "addr") t.hbm_addr = uint64_t(int_of(v, "addr", 0, INT64_MAX)), has_addr = true;
    else if (k == "scale") t.quant_scale = float_of(v, "scale");
    else if (k == "zp") t.zero_point = int32_t(int_of(v, "zp", INT32_MIN, INT32_MAX));
    else if (k == "layout") {
      if (v.kind != Value::Ident || (v.text != "nhwc" && v.text != "rowmajor"))
        throw LineError{v.loc, "layout must be rowmajor or nhwc"};
      t.nhwc = v.text == "nhwc";
    } else if (k == "model_type") {
      const auto& known = model_types();
      if (v.kind != Value::Ident || std::find(known.begin(), known.end(), v.text) == known.end())
        throw LineError{v.loc, fmt::format("model_type must be one of {}", fmt::join(known, ", "))};
      t.model_type = v.text;
    }
    else if (k == "values" || k == "bits") {
      if (values) throw LineError{v.loc, "give either values= or bits=, not both"};
      values = &v;
      bits = k == "bits";
    }
  });
  const char* dir = is_const ? ".const" : ".tensor";
  if (!has_role) throw LineError{n.loc, fmt::format("{} {} needs role=input|output|const|scratch", dir, n.text)};
  if (!has_shape) throw LineError{n.loc, fmt::format("{} {} needs shape=[...]", dir, n.text)};
  if (!has_addr) throw LineError{n.loc, fmt::format("{} {} needs addr=N (its HBM byte address)", dir, n.text)};
  if (is_const) {
    if (!values) throw LineError{n.loc, fmt::format(".const {} needs values=[...] or bits=[...]", n.text)};
    auto data = encode_values(*values, t.dtype, bits);
    if (data.size() != t.bytes())
      throw LineError{values->loc, fmt::format(".const {}: shape holds {} bytes of {} but {} were given", n.text,
                                               t.bytes(), dtype_name(t.dtype), data.size())};
    prog_.constants.push_back({t.hbm_addr, std::move(data)});
  }
  prog_.tensors.push_back(std::move(t));
}

void Assembler::data_directive(const Token& d, const std::vector<std::pair<std::optional<Token>, Value>>& args) {
  ConstSegment seg;
  bool has_addr = false, has_hex = false;
  each_key(args, ".data", {"addr", "hex"}, [&](const std::string& k, const Value& v) {
    if (k == "addr") seg.hbm_addr = uint64_t(int_of(v, "addr", 0, INT64_MAX)), has_addr = true;
    else {
      if (v.kind != Value::String) throw LineError{v.loc, "hex must be a \"string\" of hex digits"};
      if (v.text.size() % 2) throw LineError{v.loc, "hex string has an odd number of digits"};
      for (size_t i = 0; i < v.text.size(); i += 2) {
        auto b = parse_int("0x" + v.text.substr(i, 2));
        if (!b) throw LineError{v.loc, fmt::format("'{}' is not a hex byte", v.text.substr(i, 2))};
        seg.data.push_back(uint8_t(*b));
      }
      has_hex = true;
    }
  });
  if (!has_addr || !has_hex) throw LineError{d.loc, ".data needs addr=N and hex=\"...\""};
  prog_.constants.push_back(std::move(seg));
}

namespace {

uint16_t float_to_bf16_rne(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return uint16_t((u >> 16) | 0x40);  // keep it a quiet NaN
  uint32_t lsb = (u >> 16) & 1;
  u += 0x7fff + lsb;
  return uint16_t(u >> 16);
}

}  // namespace

std::vector<uint8_t> Assembler::encode_values(const Value& v, Dtype dt, bool bits) {
  const auto& l = list_of(v, bits ? "bits" : "values");
  std::vector<uint8_t> out;
  auto put = [&](uint64_t x, unsigned n) {
    for (unsigned i = 0; i < n; ++i) out.push_back(uint8_t(x >> (8 * i)));
  };
  unsigned n = dtype_bytes(dt);
  for (const Value& x : l) {
    if (bits) {
      int64_t hi = n == 8 ? INT64_MAX : (int64_t{1} << (8 * n)) - 1;
      put(uint64_t(int_of(x, "bits element", 0, hi)), n);
      continue;
    }
    switch (dt) {
      case Dtype::Int8: put(uint64_t(int_of(x, "int8 value", -128, 127)), 1); break;
      case Dtype::Uint8: put(uint64_t(int_of(x, "uint8 value", 0, 255)), 1); break;
      case Dtype::Int16: put(uint64_t(int_of(x, "int16 value", INT16_MIN, INT16_MAX)), 2); break;
      case Dtype::Int32: put(uint64_t(int_of(x, "int32 value", INT32_MIN, INT32_MAX)), 4); break;
      case Dtype::Fp32: {
        float f = float(float_of(x, "fp32 value"));
        uint32_t u;
        std::memcpy(&u, &f, 4);
        put(u, 4);
        break;
      }
      case Dtype::Bf16: put(float_to_bf16_rne(float(float_of(x, "bf16 value"))), 2); break;
    }
  }
  return out;
}

}  // namespace vtpu::isa::asm_detail
