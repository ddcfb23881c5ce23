// ModelFile: the model's file mapped, its large initializers' bytes cut from what protobuf
// parses (model_file.h). The cutting follows the protobuf wire format along one path only,
// ModelProto.graph (field 7) -> GraphProto.initializer (5) -> TensorProto.raw_data (9), and
// copies every other field as it is.
#include "import/model_file.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "vtpu/support/error.h"

namespace vtpu::compiler::onnx_import {
namespace {

constexpr uint32_t kModelGraph = 7, kGraphInitializer = 5, kTensorRawData = 9;
constexpr unsigned kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5;

struct Cursor {
  const uint8_t* p;
  const uint8_t* end;
};

bool read_varint(Cursor& c, uint64_t& v) {
  v = 0;
  for (unsigned shift = 0; shift < 64 && c.p < c.end; shift += 7) {
    uint8_t b = *c.p++;
    v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

void put_varint(std::string& out, uint64_t v) {
  for (; v >= 0x80; v >>= 7) out.push_back(char(uint8_t(v) | 0x80));
  out.push_back(char(v));
}

// One field of a message: its number and wire type, its whole encoding [begin, end), and for
// a length-delimited field its payload [payload, end).
struct Field {
  uint32_t number = 0;
  unsigned wire = 0;
  const uint8_t *begin = nullptr, *payload = nullptr, *end = nullptr;
};

// The next field; false at the end of the message or on an encoding the cutting does not
// follow (groups, a length past the end) — then `bad` is set.
bool next_field(Cursor& c, Field& f, bool& bad) {
  if (c.p == c.end) return false;
  f.begin = c.p;
  uint64_t tag = 0, v = 0;
  bad = true;
  if (!read_varint(c, tag) || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX) return false;
  f.number = uint32_t(tag >> 3);
  f.wire = unsigned(tag & 7);
  switch (f.wire) {
    case kVarint:
      if (!read_varint(c, v)) return false;
      break;
    case kFixed64:
    case kFixed32: {
      size_t n = f.wire == kFixed64 ? 8 : 4;
      if (size_t(c.end - c.p) < n) return false;
      c.p += n;
      break;
    }
    case kBytes:
      if (!read_varint(c, v) || v > uint64_t(c.end - c.p)) return false;
      f.payload = c.p;
      c.p += v;
      break;
    default: return false;  // groups (deprecated; ONNX has none)
  }
  f.end = c.p;
  bad = false;
  return true;
}

void put_bytes_field(std::string& out, uint32_t number, std::string_view payload) {
  put_varint(out, (uint64_t(number) << 3) | kBytes);
  put_varint(out, payload.size());
  out.append(payload);
}

// Cuts the messages along the path; `raw` gets one entry per initializer, in the order
// protobuf will hold them (empty: the bytes stay in the proto).
class Cutter {
 public:
  std::vector<std::string_view> raw;

  // A TensorProto: a large raw_data becomes an empty one.
  bool tensor(Cursor c, std::string& out) {
    std::string_view cut;
    int raw_fields = 0;
    Field f;
    bool bad = false;
    while (next_field(c, f, bad)) {
      if (f.number == kTensorRawData && f.wire == kBytes) {
        if (++raw_fields > 1) return false;  // protobuf keeps the last; do not second-guess it
        size_t n = size_t(f.end - f.payload);
        if (n >= ModelFile::kOutsideBytes) {
          cut = {reinterpret_cast<const char*>(f.payload), n};
          put_bytes_field(out, kTensorRawData, {});
          continue;
        }
      }
      out.append(reinterpret_cast<const char*>(f.begin), size_t(f.end - f.begin));
    }
    raw.push_back(cut);
    return !bad;
  }

  // A GraphProto: its initializers cut, everything else copied (subgraphs in attributes
  // included, untouched).
  bool graph(Cursor c, std::string& out) {
    return rewrite(c, out, kGraphInitializer, [this](Cursor t, std::string& o) { return tensor(t, o); });
  }
  // A ModelProto: its graph cut.
  bool model(Cursor c, std::string& out) {
    return rewrite(c, out, kModelGraph, [this](Cursor g, std::string& o) { return graph(g, o); });
  }

 private:
  // A message's fields copied as they are, but for the length-delimited field `number`,
  // which `inner` rewrites.
  template <typename Inner>
  static bool rewrite(Cursor c, std::string& out, uint32_t number, const Inner& inner) {
    Field f;
    bool bad = false;
    while (next_field(c, f, bad)) {
      if (f.number == number && f.wire == kBytes) {
        std::string sub;
        if (!inner(Cursor{f.payload, f.end}, sub)) return false;
        put_bytes_field(out, number, sub);
      } else {
        out.append(reinterpret_cast<const char*>(f.begin), size_t(f.end - f.begin));
      }
    }
    return !bad;
  }
};

}  // namespace

ModelFile::~ModelFile() {
  if (map_) ::munmap(const_cast<uint8_t*>(map_), map_size_);
}

std::string_view ModelFile::raw_data(const onnx::TensorProto& t) const { return raw_data_of(t, &outside_); }

bool ModelFile::read_mapped(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && st.st_size < INT_MAX;
  void* p = regular ? ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0) : MAP_FAILED;
  ::close(fd);
  if (p == MAP_FAILED) return false;
  map_ = static_cast<const uint8_t*>(p);
  map_size_ = size_t(st.st_size);
  return true;
}

bool ModelFile::read(const std::filesystem::path& path) {
  if (!read_mapped(path)) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw UserError(fmt::format("{}: cannot open the model (does the file exist?)", path.string()));
    return model_.ParseFromIstream(&f);
  }
  Cutter cutter;
  std::string cut;
  if (cutter.model({map_, map_ + map_size_}, cut) && model_.ParseFromString(cut) &&
      size_t(model_.graph().initializer_size()) == cutter.raw.size()) {
    for (size_t i = 0; i < cutter.raw.size(); ++i)
      if (!cutter.raw[i].empty()) outside_[&model_.graph().initializer(int(i))] = cutter.raw[i];
    return true;
  }
  // An encoding the cutting does not follow: protobuf decides, on the whole file.
  model_.Clear();
  outside_.clear();
  return model_.ParseFromArray(map_, int(map_size_));
}

}  // namespace vtpu::compiler::onnx_import
