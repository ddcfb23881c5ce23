#include "vtpu/isa/program.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <set>

#include "vtpu/support/files.h"

namespace vtpu::isa {

std::string_view tensor_role_name(TensorRole r) {
  switch (r) {
    case TensorRole::Input: return "input";
    case TensorRole::Output: return "output";
    case TensorRole::Constant: return "const";
    case TensorRole::Scratch: return "scratch";
  }
  return "?";
}

const std::vector<std::string_view>& model_types() {
  static const std::vector<std::string_view> kTypes{"float16", "float64", "int64",  "int32",  "int16", "int8",
                                                    "uint64",  "uint32",  "uint16", "uint8",  "bool"};
  return kTypes;
}

uint64_t DmaDescriptor::total_bytes() const {
  uint64_t n = bytes;
  for (const DmaDim& d : dims) n *= d.count;
  return n;
}

uint64_t TensorInfo::bytes() const {
  uint64_t n = dtype_bytes(dtype);
  for (int64_t d : shape) n *= uint64_t(d);
  return n;
}

namespace {

enum SectionId : uint32_t {
  kCode = 1, kTags = 2, kDescriptors = 3, kParams = 4, kTensors = 5, kConstants = 6,
  kSymbols = 7, kConfigName = 8, kModelTypes = 9,
};

const char* section_name(uint32_t id) {
  switch (id) {
    case kCode: return "code";
    case kTags: return "tags";
    case kDescriptors: return "dma descriptors";
    case kParams: return "vector params";
    case kTensors: return "tensors";
    case kConstants: return "constants";
    case kSymbols: return "symbols";
    case kConfigName: return "config name";
    case kModelTypes: return "model types";
  }
  return "unknown";
}

class Writer {
 public:
  std::vector<uint8_t> out;
  template <typename T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out.insert(out.end(), b, b + sizeof(T));
  }
  void str(const std::string& s) {
    put<uint32_t>(uint32_t(s.size()));
    out.insert(out.end(), s.begin(), s.end());
  }
  template <typename T>
  void vec(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    put<uint32_t>(uint32_t(v.size()));
    // The elements' bytes in one copy (the same bytes put<T> writes one by one): a constant
    // segment holds megabytes.
    const auto* b = reinterpret_cast<const uint8_t*>(v.data());
    out.insert(out.end(), b, b + v.size() * sizeof(T));
  }
};

class Reader {
 public:
  Reader(std::span<const uint8_t> b, std::string where) : b_(b), where_(std::move(where)) {}
  template <typename T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string str() {
    uint32_t n = get<uint32_t>();
    need(n);
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  template <typename T>
  std::vector<T> vec() {
    uint32_t n = get<uint32_t>();
    need(uint64_t(n) * sizeof(T));
    std::vector<T> v(n);
    if (n) std::memcpy(v.data(), b_.data() + pos_, n * sizeof(T));
    pos_ += n * sizeof(T);
    return v;
  }
  std::span<const uint8_t> take(uint64_t n) {
    need(n);
    auto s = b_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  uint32_t count(uint64_t min_item_bytes) {
    uint32_t n = get<uint32_t>();
    if (uint64_t(n) * min_item_bytes > remaining()) fail(fmt::format("count {} exceeds the data", n));
    return n;
  }
  uint64_t remaining() const { return b_.size() - pos_; }
  bool done() const { return pos_ == b_.size(); }
  [[noreturn]] void fail(const std::string& what) const {
    throw ProgramFormatError(fmt::format("{}: {} at byte {}", where_, what, pos_));
  }

 private:
  void need(uint64_t n) {
    if (n > remaining())
      fail(fmt::format("truncated: needs {} more bytes, {} left", n, remaining()));
  }
  std::span<const uint8_t> b_;
  size_t pos_ = 0;
  std::string where_;
};

static_assert(std::endian::native == std::endian::little, "vtpu containers are little-endian");

Dtype checked_dtype(Reader& r, uint8_t v) {
  if (v > uint8_t(Dtype::Int16)) r.fail(fmt::format("unknown dtype code {}", v));
  return Dtype(v);
}

// a * b, or nullopt past kMaxAddressBytes.
std::optional<uint64_t> mul_bounded(uint64_t a, uint64_t b) {
  if (a && b > kMaxAddressBytes / a) return std::nullopt;
  return a * b;
}

// What the sections' framing does not say: every address and size bounded, so the loader,
// the runtime and the simulator can add them without wrapping; names unique.
void check_ranges(const Program& p, std::string_view src) {
  auto fail = [&](const std::string& what) { throw ProgramFormatError(fmt::format("{}: {}", src, what)); };
  std::set<std::string> names;
  for (const TensorInfo& t : p.tensors) {
    if (t.name.empty() || t.name.find('\0') != std::string::npos) fail("a tensor has an empty name or one holding NUL");
    if (!names.insert(t.name).second) fail(fmt::format("tensor '{}' appears twice", t.name));
    std::optional<uint64_t> n = dtype_bytes(t.dtype);
    for (int64_t d : t.shape) {
      if (d < 0) fail(fmt::format("tensor '{}' has a negative dimension {}", t.name, d));
      n = n ? mul_bounded(*n, uint64_t(d)) : n;
    }
    if (!n || t.hbm_addr > kMaxAddressBytes - *n)
      fail(fmt::format("tensor '{}' of shape [{}] at HBM address 0x{:x} reaches past 2^48 bytes", t.name,
                       fmt::join(t.shape, ", "), t.hbm_addr));
  }
  for (size_t i = 0; i < p.constants.size(); ++i)
    if (p.constants[i].hbm_addr > kMaxAddressBytes - p.constants[i].bytes())
      fail(fmt::format("constant segment {} at HBM address 0x{:x} ({} bytes) reaches past 2^48 bytes", i,
                       p.constants[i].hbm_addr, p.constants[i].bytes()));
  for (const DmaDescriptor& d : p.descriptors) {
    if (d.src_offset > kMaxAddressBytes || d.dst_offset > kMaxAddressBytes)
      fail(fmt::format("descriptor '{}' has an offset past 2^48 bytes", d.name));
    std::optional<uint64_t> total = d.bytes;
    for (const DmaDim& dim : d.dims) {
      if (dim.count == 0) fail(fmt::format("descriptor '{}' has a dimension of count 0", d.name));
      for (int64_t s : {dim.src_stride, dim.dst_stride}) {
        uint64_t mag = s < 0 ? uint64_t(0) - uint64_t(s) : uint64_t(s);
        if (!mul_bounded(mag, dim.count - 1))
          fail(fmt::format("descriptor '{}': stride {} over {} rows reaches past 2^48 bytes", d.name, s, dim.count));
      }
      total = total ? mul_bounded(*total, dim.count) : total;
    }
    if (!total) fail(fmt::format("descriptor '{}' moves more than 2^48 bytes", d.name));
  }
  if (p.tags.size() > (size_t(1) << kTagBits)) fail(fmt::format("{} tags, more than a bundle can name", p.tags.size()));
  // Names a listing refers to things by are unique (the assembly of `vtpu disasm` reads back).
  auto unique = [&](const char* what, auto&& items, auto&& name_of) {
    std::set<std::string> seen;
    for (const auto& x : items)
      if (!name_of(x).empty() && !seen.insert(name_of(x)).second) fail(fmt::format("two {} are named '{}'", what, name_of(x)));
  };
  unique("DMA descriptors", p.descriptors, [](const DmaDescriptor& d) -> const std::string& { return d.name; });
  unique("vector params", p.params, [](const VectorParams& v) -> const std::string& { return v.name; });
  unique("tags", p.tags, [](const std::string& t) -> const std::string& { return t; });
  for (const Symbol& s : p.symbols)
    if (s.bundle > p.code.size()) fail(fmt::format("symbol '{}' names bundle {} of {}", s.name, s.bundle, p.code.size()));
}

}  // namespace

namespace {

// The container in file order as pieces: what is built here (the header, the sections, the
// constant segments' addresses and sizes) and views of the program's constant segments, so
// that writing a program does not copy its megabytes of weights (twice, when a growing
// buffer reallocates).
class Container {
 public:
  explicit Container(const Program& p);
  const std::vector<std::string_view>& pieces() const { return pieces_; }
  size_t size() const;

 private:
  std::vector<uint8_t> header_;
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> sections_;
  std::vector<std::vector<uint8_t>> section_heads_;  // id and size of each section
  std::vector<std::string_view> pieces_;
};

Container::Container(const Program& p) {
  for (const ConstSegment& c : p.constants)
    if (c.elided())
      throw InternalError("a program read without its constant bytes (isa::ReadOptions) cannot be written");
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> sections;
  {
    Writer w;
    w.put<uint32_t>(uint32_t(p.code.size()));
    for (const EncodedBundle& b : p.code)
      for (uint64_t word : b) w.put(word);
    sections.emplace_back(kCode, std::move(w.out));
  }
  {
    Writer w;
    w.put<uint32_t>(uint32_t(p.tags.size()));
    for (const auto& s : p.tags) w.str(s);
    sections.emplace_back(kTags, std::move(w.out));
  }
  {
    Writer w;
    w.put<uint32_t>(uint32_t(p.descriptors.size()));
    for (const DmaDescriptor& d : p.descriptors) {
      w.str(d.name);
      w.put(d.src_offset);
      w.put(d.dst_offset);
      w.put(d.bytes);
      w.put<uint8_t>(uint8_t(d.dtype));
      w.put<uint8_t>(uint8_t(d.dims.size()));
      for (const DmaDim& dim : d.dims) {
        w.put(dim.count);
        w.put(dim.src_stride);
        w.put(dim.dst_stride);
      }
    }
    sections.emplace_back(kDescriptors, std::move(w.out));
  }
  {
    Writer w;
    w.put<uint32_t>(uint32_t(p.params.size()));
    for (const VectorParams& v : p.params) {
      w.str(v.name);
      w.vec(v.multiplier);
      w.vec(v.shift);
      w.put(v.input_zp);
      w.put(v.output_zp);
      w.put<uint8_t>(v.double_round);
      w.put(v.min);
      w.put(v.max);
      w.vec(v.scale);
      w.vec(v.bias);
      w.vec(v.window);
      w.put(v.pool_stride);
    }
    sections.emplace_back(kParams, std::move(w.out));
  }
  {
    Writer w;
    w.put<uint32_t>(uint32_t(p.tensors.size()));
    for (const TensorInfo& t : p.tensors) {
      w.str(t.name);
      w.put<uint8_t>(uint8_t(t.role));
      w.put<uint8_t>(uint8_t(t.dtype));
      w.vec(t.shape);
      w.put(t.hbm_addr);
      w.put(t.quant_scale);
      w.put(t.zero_point);
      w.put<uint8_t>(t.nhwc);
    }
    sections.emplace_back(kTensors, std::move(w.out));
  }
  {
    // The segments' bytes are not copied: the section is the count, then per segment its
    // address and size (built here) and its data (a view of the program's).
    Writer heads;
    heads.out.reserve(4 + 12 * p.constants.size());
    heads.put<uint32_t>(uint32_t(p.constants.size()));
    for (const ConstSegment& c : p.constants) {
      heads.put(c.hbm_addr);
      heads.put<uint32_t>(uint32_t(c.data.size()));
    }
    sections.emplace_back(kConstants, std::move(heads.out));
  }
  {
    Writer w;
    w.put<uint32_t>(uint32_t(p.symbols.size()));
    for (const Symbol& s : p.symbols) {
      w.str(s.name);
      w.put(s.bundle);
    }
    sections.emplace_back(kSymbols, std::move(w.out));
  }
  {
    Writer w;
    w.str(p.config_name);
    sections.emplace_back(kConfigName, std::move(w.out));
  }
  // Only in programs that name a model type (readers of programs without it need nothing).
  std::vector<uint32_t> typed;
  for (size_t i = 0; i < p.tensors.size(); ++i)
    if (!p.tensors[i].model_type.empty()) typed.push_back(uint32_t(i));
  if (!typed.empty()) {
    Writer w;
    w.put<uint32_t>(uint32_t(typed.size()));
    for (uint32_t i : typed) {
      w.put(i);
      w.str(p.tensors[i].model_type);
    }
    sections.emplace_back(kModelTypes, std::move(w.out));
  }

  Writer w;
  for (char c : kMagic) w.put<char>(c);
  w.put<uint16_t>(kFormatVersion);
  w.put<uint16_t>(0);
  w.put<uint64_t>(p.config_fingerprint);
  w.put<uint32_t>(kBundleBits);
  w.put<uint32_t>(uint32_t(sections.size()));
  header_ = std::move(w.out);
  for (auto& [id, bytes] : sections) {
    size_t size = bytes.size();
    if (id == kConstants)
      for (const ConstSegment& c : p.constants) size += c.data.size();
    Writer h;
    h.put<uint32_t>(id);
    h.put<uint64_t>(size);
    section_heads_.push_back(std::move(h.out));
  }
  sections_ = std::move(sections);
  // Views last: the vectors above no longer move.
  auto view = [](const std::vector<uint8_t>& v) { return std::string_view(reinterpret_cast<const char*>(v.data()), v.size()); };
  pieces_.push_back(view(header_));
  for (size_t i = 0; i < sections_.size(); ++i) {
    pieces_.push_back(view(section_heads_[i]));
    if (sections_[i].first != kConstants) {
      pieces_.push_back(view(sections_[i].second));
      continue;
    }
    const std::vector<uint8_t>& heads = sections_[i].second;  // count, then 12 bytes per segment
    pieces_.push_back(view(heads).substr(0, 4));
    for (size_t k = 0; k < p.constants.size(); ++k) {
      pieces_.push_back(view(heads).substr(4 + 12 * k, 12));
      pieces_.push_back(view(p.constants[k].data));
    }
  }
}

size_t Container::size() const {
  size_t n = 0;
  for (std::string_view piece : pieces_) n += piece.size();
  return n;
}

}  // namespace

std::vector<uint8_t> serialize(const Program& p) {
  Container c(p);
  std::vector<uint8_t> out;
  out.reserve(c.size());
  for (std::string_view piece : c.pieces()) out.insert(out.end(), piece.begin(), piece.end());
  return out;
}

namespace {

// `elided`: the constant segments are their heads alone (address, size), as
// read_without_constant_bytes makes them.
Program deserialize(std::span<const uint8_t> bytes, std::string_view source_name, bool elided) {
  Reader r(bytes, std::string(source_name));
  Program p;
  p.tags.clear();
  char magic[4];
  for (char& c : magic) c = r.get<char>();
  if (std::memcmp(magic, kMagic, 4) != 0)
    r.fail("not a vtpu program (bad magic; expected \"VTPU\"). Assemble it with `vtpu asm` or "
           "compile it with `vtpu compile`");
  uint16_t version = r.get<uint16_t>();
  if (version != kFormatVersion)
    r.fail(fmt::format("format version {} is not supported (this vtpu reads version {}); "
                       "rebuild the program with this vtpu",
                       version, kFormatVersion));
  r.get<uint16_t>();
  p.config_fingerprint = r.get<uint64_t>();
  uint32_t bundle_bits = r.get<uint32_t>();
  if (bundle_bits != kBundleBits)
    r.fail(fmt::format("bundle width {} bits, expected {}", bundle_bits, kBundleBits));
  uint32_t nsections = r.get<uint32_t>();
  bool seen[16] = {};
  std::vector<std::pair<uint32_t, std::string>> model_types_of;  // section "model types", applied last
  for (uint32_t i = 0; i < nsections; ++i) {
    uint32_t id = r.get<uint32_t>();
    uint64_t size = r.get<uint64_t>();
    if (size > r.remaining())
      r.fail(fmt::format("section '{}' claims {} bytes, only {} left", section_name(id), size,
                         r.remaining()));
    auto body = r.take(size);
    if (id < 16) {
      if (seen[id]) r.fail(fmt::format("section '{}' appears twice", section_name(id)));
      seen[id] = true;
    }
    Reader s(body, fmt::format("{}: section '{}'", source_name, section_name(id)));
    switch (id) {
      case kCode: {
        uint32_t n = s.count(kBundleBytes);
        p.code.resize(n);
        for (auto& b : p.code)
          for (uint64_t& word : b) word = s.get<uint64_t>();
        break;
      }
      case kTags: {
        uint32_t n = s.count(4);
        for (uint32_t k = 0; k < n; ++k) p.tags.push_back(s.str());
        break;
      }
      case kDescriptors: {
        uint32_t n = s.count(26);  // the smallest: an empty name, no dims
        for (uint32_t k = 0; k < n; ++k) {
          DmaDescriptor d;
          d.name = s.str();
          d.src_offset = s.get<uint64_t>();
          d.dst_offset = s.get<uint64_t>();
          d.bytes = s.get<uint32_t>();
          d.dtype = checked_dtype(s, s.get<uint8_t>());
          uint8_t nd = s.get<uint8_t>();
          if (nd > kMaxDmaDims)
            s.fail(fmt::format("descriptor '{}' has {} dimensions, at most {}", d.name, nd,
                               kMaxDmaDims));
          for (uint8_t j = 0; j < nd; ++j) {
            DmaDim dim;
            dim.count = s.get<uint32_t>();
            dim.src_stride = s.get<int64_t>();
            dim.dst_stride = s.get<int64_t>();
            d.dims.push_back(dim);
          }
          p.descriptors.push_back(std::move(d));
        }
        break;
      }
      case kParams: {
        uint32_t n = s.count(4);
        for (uint32_t k = 0; k < n; ++k) {
          VectorParams v;
          v.name = s.str();
          v.multiplier = s.vec<int32_t>();
          v.shift = s.vec<int32_t>();
          v.input_zp = s.get<int32_t>();
          v.output_zp = s.get<int32_t>();
          v.double_round = s.get<uint8_t>() != 0;
          v.min = s.get<double>();
          v.max = s.get<double>();
          v.scale = s.vec<float>();
          v.bias = s.vec<float>();
          v.window = s.vec<int32_t>();
          v.pool_stride = s.get<int32_t>();
          p.params.push_back(std::move(v));
        }
        break;
      }
      case kTensors: {
        uint32_t n = s.count(4);
        for (uint32_t k = 0; k < n; ++k) {
          TensorInfo t;
          t.name = s.str();
          uint8_t role = s.get<uint8_t>();
          if (role > uint8_t(TensorRole::Scratch))
            s.fail(fmt::format("tensor '{}' has unknown role code {}", t.name, role));
          t.role = TensorRole(role);
          t.dtype = checked_dtype(s, s.get<uint8_t>());
          t.shape = s.vec<int64_t>();
          t.hbm_addr = s.get<uint64_t>();
          t.quant_scale = s.get<double>();
          t.zero_point = s.get<int32_t>();
          t.nhwc = s.get<uint8_t>() != 0;
          p.tensors.push_back(std::move(t));
        }
        break;
      }
      case kConstants: {
        uint32_t n = s.count(12);
        for (uint32_t k = 0; k < n; ++k) {
          ConstSegment c;
          c.hbm_addr = s.get<uint64_t>();
          if (elided) c.elided_bytes = s.get<uint32_t>();
          else c.data = s.vec<uint8_t>();
          p.constants.push_back(std::move(c));
        }
        break;
      }
      case kSymbols: {
        uint32_t n = s.count(8);
        for (uint32_t k = 0; k < n; ++k) {
          Symbol sym;
          sym.name = s.str();
          sym.bundle = s.get<uint32_t>();
          p.symbols.push_back(std::move(sym));
        }
        break;
      }
      case kConfigName:
        p.config_name = s.str();
        break;
      case kModelTypes: {
        uint32_t n = s.count(8);
        for (uint32_t k = 0; k < n; ++k) {
          uint32_t index = s.get<uint32_t>();
          std::string type = s.str();
          const auto& known = model_types();
          if (std::find(known.begin(), known.end(), type) == known.end())
            s.fail(fmt::format("unknown model type '{}' (one of {})", type, fmt::join(known, ", ")));
          model_types_of.emplace_back(index, std::move(type));
        }
        break;
      }
      default:
        break;  // unknown sections are skipped: newer writers may add optional ones
    }
    if (id < 16 && id >= kCode && id <= kModelTypes && !s.done())
      s.fail(fmt::format("{} trailing bytes", s.remaining()));
  }
  if (!r.done()) r.fail(fmt::format("{} bytes after the last section", r.remaining()));
  if (!seen[kCode]) r.fail("no code section");
  if (p.tags.empty() || !p.tags[0].empty()) r.fail("tag table must start with the empty tag");
  // Model types name tensors by index, whichever section comes first.
  for (auto& [index, type] : model_types_of) {
    if (index >= p.tensors.size())
      r.fail(fmt::format("section 'model types' names tensor {} of {}", index, p.tensors.size()));
    if (!p.tensors[index].model_type.empty())
      r.fail(fmt::format("section 'model types' names tensor '{}' twice", p.tensors[index].name));
    p.tensors[index].model_type = std::move(type);
  }
  check_ranges(p, source_name);
  return p;
}

// The file's bytes but the constant segments' data, as deserialize(elided) reads them; nullopt
// when its framing is broken (the whole file is then read, for deserialize's error).
std::optional<std::vector<uint8_t>> read_without_constant_bytes(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st{};
  if (::fstat(fd, &st) != 0) return std::nullopt;
  const uint64_t size = uint64_t(st.st_size);
  std::vector<uint8_t> out;
  auto copy = [&](uint64_t at, uint64_t n) {
    if (at > size || n > size - at) return false;
    size_t from = out.size();
    out.resize(from + n);
    return ::pread(fd, out.data() + from, n, off_t(at)) == ssize_t(n);
  };
  auto get = [&](uint64_t at, auto& v) { return at <= size && sizeof v <= size - at && ::pread(fd, &v, sizeof v, off_t(at)) == ssize_t(sizeof v); };
  constexpr uint64_t kHeader = 24;  // magic, version, reserved, fingerprint, bundle bits, section count
  uint32_t sections = 0;
  if (!copy(0, kHeader) || !get(kHeader - 4, sections)) return std::nullopt;
  uint64_t at = kHeader;
  for (uint32_t i = 0; i < sections; ++i) {
    uint32_t id = 0;
    uint64_t bytes = 0;
    if (!get(at, id) || !get(at + 4, bytes) || bytes > size - at - 12) return std::nullopt;
    if (id != kConstants) {
      if (!copy(at, 12 + bytes)) return std::nullopt;
      at += 12 + bytes;
      continue;
    }
    const uint64_t end = at + 12 + bytes;
    uint32_t n = 0;
    if (!get(at + 12, n) || uint64_t(n) * 12 > bytes) return std::nullopt;
    Writer w;
    w.put<uint32_t>(id);
    w.put<uint64_t>(4 + 12 * uint64_t(n));
    w.put<uint32_t>(n);
    out.insert(out.end(), w.out.begin(), w.out.end());
    uint64_t seg = at + 16;
    for (uint32_t k = 0; k < n; ++k) {
      uint32_t len = 0;
      if (!get(seg + 8, len) || !copy(seg, 12)) return std::nullopt;
      seg += 12 + uint64_t(len);
      if (seg > end) return std::nullopt;
    }
    if (seg != end) return std::nullopt;
    at = end;
  }
  if (at != size) return std::nullopt;
  return out;
}

}  // namespace

Program deserialize(std::span<const uint8_t> bytes, std::string_view source_name) {
  return deserialize(bytes, source_name, false);
}

void write_program(const Program& p, const std::filesystem::path& path) {
  write_file_pieces(path, Container(p).pieces());
}

Program read_program(const std::filesystem::path& path, const ReadOptions& options) {
  require_readable_file(path, "a program (.vtpu)");
  if (!options.constant_bytes)
    if (std::optional<std::vector<uint8_t>> heads = read_without_constant_bytes(path)) {
      try {
        return deserialize(*heads, path.string(), true);
      } catch (const ProgramFormatError&) {
        // A bad file: read whole below, so the error says what a full read says (and where).
      }
    }
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw UserError(fmt::format("{}: cannot open program (does the file exist?)", path.string()));
  // Sized once, not zeroed, and read in one call: an istreambuf_iterator read ResNet-50's 25 MB
  // program a byte at a time into a vector that grew by doubling (a sweep's coordinator reads
  // every program it simulates).
  f.seekg(0, std::ios::end);
  std::streamoff size = f.tellg();
  f.seekg(0, std::ios::beg);
  if (size < 0) throw UserError(fmt::format("{}: cannot read the program", path.string()));
  std::unique_ptr<uint8_t[]> bytes(new uint8_t[size_t(size) + 1]);  // not zeroed: read over at once
  if (!f.read(reinterpret_cast<char*>(bytes.get()), std::streamsize(size)))
    throw UserError(fmt::format("{}: cannot read the program", path.string()));
  return deserialize(std::span<const uint8_t>(bytes.get(), size_t(size)), path.string(), false);
}

std::vector<Bundle> decode_program(const Program& p) {
  std::vector<Bundle> out;
  out.reserve(p.code.size());
  for (size_t i = 0; i < p.code.size(); ++i) {
    Bundle b = decode(p.code[i], i);
    if (b.tag >= p.tags.size())
      throw DecodeError(fmt::format("bundle {}: tag {} but the program has {} tags", i, b.tag,
                                    p.tags.size()));
    for (const SlotDef& sd : table().slots) {
      const Operation& op = b.at(sd.id);
      if (op.is_nop()) continue;
      for (size_t k = 1; k < sd.fields.size(); ++k) {
        const FieldDef& f = sd.fields[k];
        int64_t v = op.fields[k];
        auto bad = [&](const char* what, size_t n) {
          throw DecodeError(fmt::format("bundle {}: slot {}: {} field '{}' = {} but the program "
                                        "has {} {}",
                                        i, sd.name, op.def->mnemonic, f.name, v, n, what));
        };
        bool used = false;
        for (const OperandDef& o : op.def->operands)
          for (auto fn : o.fields)
            if (fn == f.name) used = true;
        if (!used) continue;
        if (f.kind == FieldKind::Desc && size_t(v) >= p.descriptors.size())
          bad("DMA descriptors", p.descriptors.size());
        if (f.kind == FieldKind::Param && size_t(v) >= p.params.size())
          bad("vector params", p.params.size());
        if (f.kind == FieldKind::Target && size_t(v) >= p.code.size()) bad("bundles", p.code.size());
      }
    }
    out.push_back(b);
  }
  return out;
}

}  // namespace vtpu::isa
