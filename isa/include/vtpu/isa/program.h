#pragma once
// The program container: what `vtpu asm` and the compiler write and the simulator loads.
//
// Layout (little-endian): magic "VTPU", u16 format version, u16 reserved, u64 config
// fingerprint, u32 bundle bits, u32 section count, then sections {u32 id, u64 size, bytes}.
// docs/isa.md describes each section.
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "vtpu/isa/bundle.h"

namespace vtpu::isa {

inline constexpr char kMagic[4] = {'V', 'T', 'P', 'U'};
inline constexpr uint16_t kFormatVersion = 3;  // 3: 14-bit descriptor and param fields
// Every address, offset and size in a container is below 2^48 bytes (256 TiB, more than any
// memory a config describes), so an address plus a size can never wrap around 2^64.
inline constexpr uint64_t kMaxAddressBytes = uint64_t(1) << 48;

// One outer dimension of a DMA transfer: repeat the inner copy `count` times, advancing the
// source and destination by their strides (bytes).
struct DmaDim {
  uint32_t count = 1;
  int64_t src_stride = 0;
  int64_t dst_stride = 0;
  bool operator==(const DmaDim&) const = default;
};

// A strided multi-dimensional transfer: `bytes` contiguous bytes, repeated over up to
// kMaxDmaDims outer dimensions (innermost first). Addresses are the base registers named by
// the DMA operation plus these offsets. For dma.wfifo the transfer is one weight tile: the
// rows are the product of the dimension counts and the columns bytes / size of dtype.
struct DmaDescriptor {
  std::string name;
  uint64_t src_offset = 0;
  uint64_t dst_offset = 0;
  uint32_t bytes = 0;
  std::vector<DmaDim> dims;
  Dtype dtype = Dtype::Int8;
  bool operator==(const DmaDescriptor&) const = default;
  uint64_t total_bytes() const;
};

// Constants a vector operation needs beyond its register fields. Which members an
// operation reads is listed in docs/isa.md (e.g. vec.rescale: multiplier, shift, zero points).
struct VectorParams {
  std::string name;
  std::vector<int32_t> multiplier;  // per tensor (1) or per lane
  std::vector<int32_t> shift;       // per tensor (1) or per lane, 2..62
  int32_t input_zp = 0;
  int32_t output_zp = 0;
  bool double_round = false;
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  std::vector<float> scale;   // per tensor (1) or per lane
  std::vector<float> bias;    // per tensor (1) or per lane
  std::vector<int32_t> window;  // pooling: byte offsets of the window's rows from the output row's source base
  int32_t pool_stride = 0;      // pooling: bytes between consecutive output rows' source bases (0 = one row)
  bool operator==(const VectorParams&) const = default;
};

enum class TensorRole : uint8_t { Input = 0, Output = 1, Constant = 2, Scratch = 3 };
std::string_view tensor_role_name(TensorRole r);

// The names TensorInfo::model_type may take (ONNX's element type names).
const std::vector<std::string_view>& model_types();

// Where a named tensor lives in HBM, for the runtime to place inputs and read outputs.
struct TensorInfo {
  std::string name;
  TensorRole role = TensorRole::Input;
  Dtype dtype = Dtype::Int8;
  std::vector<int64_t> shape;
  uint64_t hbm_addr = 0;
  double quant_scale = 0.0;  // int8 tensors: real = (q - zero_point) * scale; 0 = not quantized
  int32_t zero_point = 0;
  // nhwc: a 4-D image stored NHWC whose model-level shape is NCHW (the runtime transposes).
  bool nhwc = false;
  // The element type the model declares for it when that is not what `dtype` holds as
  // float32 or int32 (one of model_types(): "int64", "bool", "float16", ...), so a program run
  // on its own writes outputs as the model would; empty: float32 (int32 for int32 tensors).
  std::string model_type;
  bool operator==(const TensorInfo&) const = default;
  uint64_t bytes() const;
};

// Bytes preloaded into HBM before the program starts (weights, constants).
struct ConstSegment {
  uint64_t hbm_addr = 0;
  std::vector<uint8_t> data;
  // A segment read without its bytes (ReadOptions::constant_bytes false): `data` is empty and
  // this is its size; 0 for a segment with its bytes.
  uint64_t elided_bytes = 0;
  uint64_t bytes() const { return data.empty() ? elided_bytes : data.size(); }
  // Whether the segment was read without its bytes (it has a size but no data).
  bool elided() const { return data.empty() && elided_bytes; }
  bool operator==(const ConstSegment&) const = default;
};

struct Symbol {
  std::string name;
  uint32_t bundle = 0;
  bool operator==(const Symbol&) const = default;
};

struct Program {
  uint64_t config_fingerprint = 0;  // 0: not bound to a config
  std::string config_name;
  std::vector<EncodedBundle> code;
  std::vector<std::string> tags{""};  // tag 0 is the empty tag
  std::vector<DmaDescriptor> descriptors;
  std::vector<VectorParams> params;
  std::vector<TensorInfo> tensors;
  std::vector<ConstSegment> constants;
  std::vector<Symbol> symbols;  // labels, for listings and diagnostics
  bool operator==(const Program&) const = default;
};

// A container that cannot be read: wrong magic, unsupported version, truncated section,
// an index out of range, an address or size past kMaxAddressBytes, a shape whose size
// overflows, two tensors of one name. The message names the file and the section or entry.
class ProgramFormatError : public UserError {
 public:
  using UserError::UserError;
};

// A program with constant segments read without their bytes cannot be written (the
// serializer throws an InternalError).
std::vector<uint8_t> serialize(const Program& p);
Program deserialize(std::span<const uint8_t> bytes, std::string_view source_name);
void write_program(const Program& p, const std::filesystem::path& path);

struct ReadOptions {
  // false: the constant segments' bytes are skipped, not read (their sizes are kept): enough
  // for a timing-only simulation (sim::SimOptions::timing_only), which moves no data. A sweep
  // reads ResNet-50's 25 MB program as 1 MB this way. Every check of the format still runs.
  bool constant_bytes = true;
};
Program read_program(const std::filesystem::path& path, const ReadOptions& options = {});

// Decodes every bundle, and checks that descriptor, param, tag and branch indices exist.
std::vector<Bundle> decode_program(const Program& p);

// The first operation naming a register r >= `registers` or a flag f > `flags` (f0 means
// none), which a scalar unit of that many registers and flags cannot run; nullopt if none.
struct Violation {
  size_t bundle;
  SlotId slot;
  std::string message;  // names the field, the register or flag and the config key
};
std::optional<Violation> first_register_or_flag_past(const std::vector<Bundle>& code, uint32_t registers,
                                                     uint32_t flags);

}  // namespace vtpu::isa
