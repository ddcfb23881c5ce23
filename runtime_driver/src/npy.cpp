#include "vtpu/runtime/npy.h"

#include "vtpu/support/files.h"

#include <fmt/format.h>

#include <cstring>
#include <fstream>

namespace vtpu::runtime {
namespace {

std::string descr_of(isa::Dtype d) {
  switch (d) {
    case isa::Dtype::Int8: return "|i1";
    case isa::Dtype::Uint8: return "|u1";
    case isa::Dtype::Int16: return "<i2";
    case isa::Dtype::Int32: return "<i4";
    case isa::Dtype::Fp32: return "<f4";
    case isa::Dtype::Bf16: return "<f4";
  }
  return "?";
}

// Same type whatever the byte-order mark of a one-byte type.
bool same_descr(const std::string& a, const std::string& b) {
  if (a.size() != 3 || b.size() != 3) return a == b;
  return a.substr(1) == b.substr(1) && (a[0] == b[0] || a[2] == '1');
}

}  // namespace

NpyArray read_npy(const std::filesystem::path& path) {
  require_readable_file(path, "a .npy file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UserError(fmt::format("{}: cannot open (does the file exist?)", path.string()));
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto bad = [&](const std::string& what) {
    return UserError(fmt::format("{}: not a valid .npy file: {}", path.string(), what));
  };
  if (b.size() < 10 || std::memcmp(b.data(), "\x93NUMPY", 6) != 0) throw bad("missing the \\x93NUMPY magic");
  uint8_t major = b[6];
  size_t hlen, hstart;
  if (major == 1) hlen = b[8] | (size_t(b[9]) << 8), hstart = 10;
  else if (major == 2 || major == 3) {
    if (b.size() < 12) throw bad("truncated header");
    hlen = b[8] | (size_t(b[9]) << 8) | (size_t(b[10]) << 16) | (size_t(b[11]) << 24), hstart = 12;
  } else throw bad(fmt::format("format version {} is not supported", major));
  if (hstart + hlen > b.size()) throw bad("truncated header");
  std::string h(reinterpret_cast<const char*>(b.data() + hstart), hlen);
  auto value_of = [&](const std::string& key) {
    size_t k = h.find("'" + key + "'");
    if (k == std::string::npos) throw bad("header lacks '" + key + "'");
    size_t c = h.find(':', k);
    if (c == std::string::npos) throw bad("malformed header");
    return c + 1;
  };
  NpyArray a;
  size_t d = value_of("descr");
  size_t q1 = h.find('\'', d), q2 = q1 == std::string::npos ? q1 : h.find('\'', q1 + 1);
  if (q2 == std::string::npos) throw bad("malformed descr");
  a.descr = h.substr(q1 + 1, q2 - q1 - 1);
  size_t fo = value_of("fortran_order");
  if (h.compare(h.find_first_not_of(' ', fo), 4, "True") == 0)
    throw bad("Fortran-order arrays are not supported; save with numpy.ascontiguousarray");
  size_t s = value_of("shape");
  size_t p1 = h.find('(', s), p2 = h.find(')', s);
  if (p1 == std::string::npos || p2 == std::string::npos) throw bad("malformed shape");
  std::string dims = h.substr(p1 + 1, p2 - p1 - 1);
  size_t pos = 0;
  while (pos < dims.size()) {
    size_t comma = dims.find(',', pos);
    std::string tok = dims.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    tok.erase(0, tok.find_first_not_of(' '));
    if (!tok.empty()) {
      size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(tok, &used);
      } catch (...) {
        throw bad("malformed shape '" + dims + "'");
      }
      if (v < 0) throw bad("negative dimension");
      a.shape.push_back(v);
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  uint64_t count = 1;
  for (int64_t v : a.shape) count *= uint64_t(v);
  if (a.descr.size() != 3 || (a.descr[0] != '<' && a.descr[0] != '|'))
    throw bad(fmt::format("dtype '{}' is not supported (little-endian int8/uint8/int16/int32/float32)", a.descr));
  uint64_t esz = uint64_t(a.descr[2] - '0');
  size_t off = hstart + hlen;
  if (b.size() - off != count * esz)
    throw bad(fmt::format("data holds {} bytes but shape and dtype need {}", b.size() - off, count * esz));
  a.data.assign(b.begin() + long(off), b.end());
  return a;
}

namespace {

// Calls f(T{}) with the C++ type of a NumPy element type; false for an unknown one.
template <typename F>
bool with_element_type(const std::string& descr, F&& f) {
  if (descr.size() != 3) return false;
  std::string k = descr.substr(1);
  if (k == "b1" || k == "u1") return f(uint8_t{}), true;
  if (k == "i1") return f(int8_t{}), true;
  if (k == "i2") return f(int16_t{}), true;
  if (k == "u2") return f(uint16_t{}), true;
  if (k == "i4") return f(int32_t{}), true;
  if (k == "u4") return f(uint32_t{}), true;
  if (k == "i8") return f(int64_t{}), true;
  if (k == "u8") return f(uint64_t{}), true;
  if (k == "f2") return f(_Float16{}), true;
  if (k == "f4") return f(float{}), true;
  if (k == "f8") return f(double{}), true;
  return false;
}

}  // namespace

std::optional<std::vector<double>> npy_values(const NpyArray& a) {
  std::vector<double> v;
  bool known = with_element_type(a.descr, [&](auto tag) {
    using T = decltype(tag);
    v.resize(a.data.size() / sizeof(T));
    for (size_t i = 0; i < v.size(); ++i) {
      T x;
      std::memcpy(&x, a.data.data() + i * sizeof(T), sizeof(T));
      v[i] = double(x);
    }
  });
  if (!known) return std::nullopt;
  return v;
}

NpyArray npy_of(const std::string& descr, const std::vector<int64_t>& shape, const std::vector<double>& values) {
  NpyArray a{descr, shape, {}};
  bool known = with_element_type(descr, [&](auto tag) {
    using T = decltype(tag);
    a.data.resize(values.size() * sizeof(T));
    for (size_t i = 0; i < values.size(); ++i) {
      T x = descr == "|b1" ? T(values[i] != 0) : T(values[i]);
      std::memcpy(a.data.data() + i * sizeof(T), &x, sizeof(T));
    }
  });
  if (!known) throw InternalError(fmt::format("npy_of: NumPy type '{}' is not supported", descr));
  return a;
}

void write_npy(const std::filesystem::path& path, const NpyArray& a) {
  std::string shape = fmt::format("{}", fmt::join(a.shape, ", "));
  if (a.shape.size() == 1) shape += ",";  // Python's one-element tuple
  std::string h = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", a.descr, shape);
  size_t total = 10 + h.size() + 1;
  h.append((64 - total % 64) % 64, ' ');
  h += '\n';
  std::string bytes("\x93NUMPY\x01\x00", 8);
  uint16_t hl = uint16_t(h.size());
  bytes.append(reinterpret_cast<const char*>(&hl), 2).append(h);
  bytes.append(reinterpret_cast<const char*>(a.data.data()), a.data.size());
  write_file(path, bytes);
}

void check_npy_shape(const NpyArray& a, const std::vector<int64_t>& shape, const std::string& tensor,
                     const std::string& file) {
  if (a.shape == shape) return;
  uint64_t want = 1, have = 1;
  for (int64_t v : shape) want *= uint64_t(v);
  for (int64_t v : a.shape) have *= uint64_t(v);
  throw UserError(fmt::format("{}: input '{}' needs shape [{}] ({} elements) but the file holds [{}] ({} elements){}", file,
                              tensor, fmt::join(shape, ", "), want, fmt::join(a.shape, ", "), have,
                              want == have ? "; the same number of values in another shape: transpose or reshape it "
                                             "to the input's shape (numpy's transpose or reshape)"
                                           : ""));
}

std::vector<uint8_t> tensor_bytes_from_npy(const NpyArray& a, isa::Dtype dtype, const std::vector<int64_t>& shape,
                                           const std::string& tensor, const std::string& file) {
  check_npy_shape(a, shape, tensor, file);
  uint64_t want = 1;
  for (int64_t v : shape) want *= uint64_t(v);
  std::string need = descr_of(dtype);
  if (!same_descr(a.descr, need))
    throw UserError(fmt::format("{}: input '{}' is {} (numpy '{}') but the file holds '{}'; convert it with "
                                "numpy's astype",
                                file, tensor, isa::dtype_name(dtype), need, a.descr));
  if (dtype != isa::Dtype::Bf16) return a.data;
  std::vector<uint8_t> out(want * 2);
  for (uint64_t i = 0; i < want; ++i) {
    uint32_t u;
    std::memcpy(&u, &a.data[i * 4], 4);
    uint16_t hbits = (u & 0x7fffffff) > 0x7f800000 ? uint16_t(0x7fc0) : uint16_t((u + 0x7fff + ((u >> 16) & 1)) >> 16);
    std::memcpy(&out[i * 2], &hbits, 2);
  }
  return out;
}

NpyArray npy_from_tensor_bytes(const std::vector<uint8_t>& bytes, isa::Dtype dtype, const std::vector<int64_t>& shape) {
  NpyArray a;
  a.descr = descr_of(dtype);
  a.shape = shape;
  if (dtype != isa::Dtype::Bf16) {
    a.data = bytes;
    return a;
  }
  a.data.resize(bytes.size() * 2);
  for (size_t i = 0; i < bytes.size() / 2; ++i) {
    uint32_t u = uint32_t(bytes[i * 2] | (bytes[i * 2 + 1] << 8)) << 16;
    std::memcpy(&a.data[i * 4], &u, 4);
  }
  return a;
}

}  // namespace vtpu::runtime
