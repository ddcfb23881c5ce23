// Initializers and tensor attributes: type, dims, the size of their data (counted without
// overflow before the importer allocates anything), and external data files, which must
// lie inside the model's directory, be regular files and hold exactly the tensor's bytes.
#include <fmt/format.h>

#include <charconv>
#include <map>
#include <set>
#include <system_error>

#include "checks.h"

namespace vtpu::compiler::validate {
namespace {

using TP = onnx::TensorProto;

// Bytes per element in raw_data, and which typed field holds the values otherwise (ONNX's
// onnx.proto comments); 0 bytes: a type without a fixed size (string).
struct Storage {
  int bytes;
  enum Field { Float, Int32, Int64, Double, Uint64, String } field;
};
const std::map<int, Storage>& storage() {
  static const std::map<int, Storage> k = {
      {TP::FLOAT, {4, Storage::Float}},      {TP::DOUBLE, {8, Storage::Double}},   {TP::FLOAT16, {2, Storage::Int32}},
      {TP::BFLOAT16, {2, Storage::Int32}},   {TP::INT8, {1, Storage::Int32}},      {TP::UINT8, {1, Storage::Int32}},
      {TP::INT16, {2, Storage::Int32}},      {TP::UINT16, {2, Storage::Int32}},    {TP::INT32, {4, Storage::Int32}},
      {TP::BOOL, {1, Storage::Int32}},       {TP::INT64, {8, Storage::Int64}},     {TP::UINT32, {4, Storage::Uint64}},
      {TP::UINT64, {8, Storage::Uint64}},    {TP::COMPLEX64, {8, Storage::Float}}, {TP::COMPLEX128, {16, Storage::Double}},
      {TP::STRING, {0, Storage::String}}};
  return k;
}

int typed_count(const TP& t, Storage::Field f) {
  switch (f) {
    case Storage::Float: return t.float_data_size();
    case Storage::Int32: return t.int32_data_size();
    case Storage::Int64: return t.int64_data_size();
    case Storage::Double: return t.double_data_size();
    case Storage::Uint64: return t.uint64_data_size();
    case Storage::String: return t.string_data_size();
  }
  return 0;
}

const char* field_name(Storage::Field f) {
  static const char* k[] = {"float_data", "int32_data", "int64_data", "double_data", "uint64_data", "string_data"};
  return k[f];
}

// A non-negative decimal integer that fits int64 (what onnxruntime's external-data reader
// accepts); nullopt otherwise.
std::optional<int64_t> decimal(const std::string& s) {
  int64_t v = 0;
  if (s.empty() || s.size() > 19) return std::nullopt;
  for (char c : s)
    if (c < '0' || c > '9') return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

void check_external(const TP& t, const Ctx& ctx, const std::string& where, int64_t need) {
  if (t.has_raw_data() || t.float_data_size() || t.int32_data_size() || t.int64_data_size() || t.double_data_size() ||
      t.uint64_data_size() || t.string_data_size())
    ctx.fail(where, "the tensor is stored externally and also holds data in the model; keep one of them");
  std::map<std::string, std::string> kv;
  for (const auto& e : t.external_data()) {
    static const std::set<std::string> kKeys = {"location", "offset", "length", "checksum"};
    if (!kKeys.count(e.key()))
      ctx.fail(where, fmt::format("external_data key '{}' is unknown (location, offset, length, checksum)", e.key()));
    if (!kv.emplace(e.key(), e.value()).second) ctx.fail(where, fmt::format("external_data key '{}' appears twice", e.key()));
  }
  auto loc = kv.find("location");
  if (loc == kv.end() || loc->second.empty()) ctx.fail(where, "the tensor is stored externally but names no location");
  // Like onnxruntime: a relative path below the model's directory, no '..', and after
  // following symbolic links still inside that directory.
  std::filesystem::path rel(loc->second);
  if (rel.is_absolute() || loc->second.find('\0') != std::string::npos)
    ctx.fail(where, fmt::format("external data location '{}' is absolute; it must be a path relative to the model's "
                                "directory",
                                loc->second));
  for (const auto& part : rel)
    if (part == "..")
      ctx.fail(where, fmt::format("external data location '{}' leaves the model's directory ('..'); keep the data file "
                                  "next to the model",
                                  loc->second));
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::weakly_canonical(std::filesystem::absolute(ctx.path, ec).parent_path(), ec);
  std::filesystem::path file = std::filesystem::weakly_canonical(dir / rel, ec);
  auto [d_end, f_it] = std::mismatch(dir.begin(), dir.end(), file.begin(), file.end());
  if (ec || d_end != dir.end())
    ctx.fail(where, fmt::format("external data location '{}' resolves to {}, outside the model's directory {}",
                                loc->second, file.string(), dir.string()));
  auto st = std::filesystem::status(file, ec);
  if (ec || !std::filesystem::is_regular_file(st))
    ctx.fail(where, fmt::format("external data file {} {}", file.string(),
                                ec || !std::filesystem::exists(st) ? "does not exist" : "is not a regular file"));
  uint64_t size = std::filesystem::file_size(file, ec);
  if (ec) ctx.fail(where, fmt::format("external data file {} cannot be read ({})", file.string(), ec.message()));
  int64_t offset = 0, length = -1;
  for (const char* key : {"offset", "length"}) {
    auto it = kv.find(key);
    if (it == kv.end()) continue;
    auto v = decimal(it->second);
    if (!v) ctx.fail(where, fmt::format("external data {} '{}' is not a non-negative integer", key, it->second));
    (key[0] == 'o' ? offset : length) = *v;
  }
  if (uint64_t(offset) > size)
    ctx.fail(where, fmt::format("external data offset {} is past the end of {} ({} bytes)", offset, file.string(), size));
  uint64_t avail = size - uint64_t(offset);
  if (length >= 0 && uint64_t(length) > avail)
    ctx.fail(where, fmt::format("external data needs {} bytes at offset {} but {} holds {} bytes", length, offset,
                                file.string(), size));
  uint64_t have = length >= 0 ? uint64_t(length) : avail;
  if (have != uint64_t(need))
    ctx.fail(where, fmt::format("external data holds {} bytes ({} in {}), its shape and type need {}", have,
                                length >= 0 ? "length" : "to the end of the file", file.string(), need));
}

}  // namespace

void check_tensor(const TP& t, const Ctx& ctx, const std::string& where) {
  if (!TP::DataType_IsValid(t.data_type()) || t.data_type() == TP::UNDEFINED)
    ctx.fail(where, fmt::format("element type {} is not an ONNX type", t.data_type()));
  auto st = storage().find(t.data_type());
  if (st == storage().end())
    ctx.fail(where, fmt::format("element type {} is not supported",
                                TP::DataType_Name(TP::DataType(t.data_type()))));
  for (int64_t d : t.dims())
    if (d < 0) ctx.fail(where, fmt::format("dimension {} of shape [{}] is negative", d, fmt::join(t.dims(), ", ")));
  auto n = element_count(t.dims());
  if (!n)
    ctx.fail(where, fmt::format("shape [{}] has more than 2^31 elements, more than the compiler can hold",
                                fmt::join(t.dims(), ", ")));
  if (t.has_segment()) ctx.fail(where, "segmented tensors are not supported");
  int64_t need = *n * st->second.bytes;
  if (t.data_location() == TP::EXTERNAL) {
    if (st->second.bytes == 0) ctx.fail(where, "string tensors cannot be stored externally");
    check_external(t, ctx, where, need);
    return;
  }
  if (t.external_data_size()) ctx.fail(where, "the tensor has external_data entries but data_location is not EXTERNAL");
  int fields = (t.has_raw_data() ? 1 : 0) + (t.float_data_size() ? 1 : 0) + (t.int32_data_size() ? 1 : 0) +
               (t.int64_data_size() ? 1 : 0) + (t.double_data_size() ? 1 : 0) + (t.uint64_data_size() ? 1 : 0) +
               (t.string_data_size() ? 1 : 0);
  if (fields > 1) ctx.fail(where, "the tensor holds its values in more than one field; keep one");
  if (t.has_raw_data()) {
    if (st->second.bytes == 0) ctx.fail(where, "string tensors cannot be stored in raw_data");
    if (int64_t(ctx.raw_data(t).size()) != need)
      ctx.fail(where, fmt::format("raw_data holds {} bytes, its shape [{}] of {} needs {}", ctx.raw_data(t).size(),
                                  fmt::join(t.dims(), ", "), TP::DataType_Name(TP::DataType(t.data_type())), need));
    return;
  }
  int64_t per = t.data_type() == TP::COMPLEX64 || t.data_type() == TP::COMPLEX128 ? 2 : 1;
  int have = typed_count(t, st->second.field);
  if (fields == 1 && have == 0)
    ctx.fail(where, fmt::format("values of type {} belong in {}", TP::DataType_Name(TP::DataType(t.data_type())),
                                field_name(st->second.field)));
  if (int64_t(have) != *n * per)
    ctx.fail(where, fmt::format("{} holds {} values, its shape [{}] needs {}", field_name(st->second.field), have,
                                fmt::join(t.dims(), ", "), *n * per));
}

}  // namespace vtpu::compiler::validate
