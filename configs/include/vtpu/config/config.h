#pragma once
// The one configuration type of vtpu: what the compiler, the simulator, the energy model
// and the RTL parameters read. A Config always comes from the loader (load_file,
// load_string, load_preset, resolve), which validates it and fills every default, so
// consumers never see a half-filled struct. Defaults and ranges live in the schema
// (vtpu/config/schema.h), not in these structs, so they are written down once.
// Reference for every key: docs/config.md.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vtpu/support/error.h"

namespace vtpu::config {

// Element types the matrix unit can multiply (int8 accumulates in int32, bf16 in fp32).
enum class DType : uint8_t { kInt8, kBf16 };
// Off-chip memory technology; it selects default timings and energy (docs/config.md).
enum class MemoryKind : uint8_t { kHbm2, kHbm2e, kDdr3, kDdr4, kLpddr4, kLpddr5 };
// open: a DRAM row stays open after an access; closed: it is precharged right away.
enum class PagePolicy : uint8_t { kOpen, kClosed };

std::string_view to_string(DType);
std::string_view to_string(MemoryKind);
std::string_view to_string(PagePolicy);
uint32_t dtype_bytes(DType);  // 1 for int8, 2 for bf16

// Weight-stationary systolic array: a weight tile is rows x cols; each cycle one input
// vector of `rows` elements enters and one output vector of `cols` partial sums leaves
// into the accumulators.
struct MxuConfig {
  uint32_t count{};                  // arrays per core
  uint32_t rows{};                   // PEs per column = reduction depth of a tile
  uint32_t cols{};                   // PEs per row = output width of a tile
  std::vector<DType> dtypes;         // supported multiply types, no duplicates
  uint32_t weight_fifo_tiles{};      // weight tiles buffered between memory and array
  bool whole_weight_tiles{};         // a tile moves from memory whole (rows x cols), however few weights it holds
  uint32_t weight_shift_cycles{};    // cycles to shift one tile into the array
  uint32_t input_latency_cycles{};   // unified-buffer read to the array's first row
  uint32_t output_latency_cycles{};  // array's last row to the accumulator write
  bool operator==(const MxuConfig&) const = default;
};

struct UnifiedBufferConfig {  // on-core activation / vector memory
  uint64_t bytes{};
  uint32_t banks{};
  uint64_t row_bytes{};  // width of one port access
  uint32_t read_ports{};
  uint32_t write_ports{};
  uint64_t alignment_bytes{};  // smallest addressable unit for DMA and vector access
  uint32_t read_latency_cycles{};
  uint32_t write_latency_cycles{};
  bool operator==(const UnifiedBufferConfig&) const = default;
};

struct AccumulatorConfig {  // per MXU; one row holds mxu.cols 32-bit sums
  uint32_t rows{};
  uint32_t banks{};
  bool operator==(const AccumulatorConfig&) const = default;
};

struct VectorLatency {  // pipeline latency in cycles of each operation class
  uint32_t alu{};
  uint32_t multiply{};
  uint32_t transcendental{};
  uint32_t reduce{};
  uint32_t rescale{};
  uint32_t convert{};
  uint32_t pool{};
  bool operator==(const VectorLatency&) const = default;
};

struct VectorConfig {
  uint32_t lanes{};
  uint32_t sublanes{};
  uint32_t registers{};
  VectorLatency latency_cycles;
  bool operator==(const VectorConfig&) const = default;
};

struct ScalarConfig {  // scalar unit and instruction sequencer
  uint32_t imem_bundles{};
  bool imem_prefetch{};  // two half-size windows: the next one is fetched while this one runs
  uint32_t branch_penalty_cycles{};
  uint32_t registers{};
  uint64_t smem_bytes{};
  uint32_t sync_flags{};
  bool operator==(const ScalarConfig&) const = default;
};

struct DmaConfig {
  uint32_t max_in_flight{};
  uint32_t queue_depth{};
  uint32_t setup_cycles{};
  bool operator==(const DmaConfig&) const = default;
};

struct CoreConfig {
  MxuConfig mxu;
  UnifiedBufferConfig unified_buffer;
  AccumulatorConfig accumulators;
  VectorConfig vector;
  ScalarConfig scalar;
  DmaConfig dma;
  bool operator==(const CoreConfig&) const = default;
};

struct SystemConfig {
  uint32_t chips{};
  uint32_t cores_per_chip{};
  double host_bandwidth_gbytes_per_s{};
  bool operator==(const SystemConfig&) const = default;
};

// Off-chip memory of one chip, shared by its cores. Timing model: docs/config.md.
struct MemoryConfig {
  MemoryKind kind{};
  uint64_t bytes{};
  uint32_t channels{};
  double bandwidth_gbytes_per_s{};  // total over all channels
  uint64_t burst_bytes{};
  double access_latency_ns{};  // controller + PHY + interconnect, excluding DRAM timing
  uint32_t banks_per_channel{};
  uint64_t row_bytes{};  // row buffer (page) size of one bank
  double t_rcd_ns{};
  double t_rp_ns{};
  double t_cl_ns{};
  PagePolicy page_policy{};
  uint64_t interleave_bytes{};  // consecutive bytes mapped to one channel
  bool operator==(const MemoryConfig&) const = default;
};

struct IciConfig {                       // inter-chip interconnect
  uint32_t links{};                      // per chip
  double link_bandwidth_gbytes_per_s{};  // per link and direction
  double link_latency_ns{};
  std::vector<uint32_t> shape;  // torus dimensions; their product = system.chips
  bool wraparound{};
  std::vector<uint32_t> twist;  // empty, or per dimension: shift of the last dimension when wrapping
  double router_delay_ns{};     // per hop, on entering a router
  uint64_t packet_bytes{};      // transfers move in packets of this size (the last one shorter)
  uint32_t buffer_packets{};    // credits: packet slots per virtual channel at each link's receiver
  uint32_t max_in_flight{};     // transfers the ICI engine of a chip works on at once
  bool operator==(const IciConfig&) const = default;
};

struct SramPoint {
  uint64_t bytes{};  // macro size
  double pj{};       // energy of one 64-bit access
  bool operator==(const SramPoint&) const = default;
};

struct PerDTypePj {
  double int8{};
  double bf16{};
  bool operator==(const PerDTypePj&) const = default;
};

struct LaneArithPj {  // vector lanes compute in 32 bits
  double int32{};
  double fp32{};
  bool operator==(const LaneArithPj&) const = default;
};

// Accelergy-style table: energy per action; consumers multiply by action counts.
struct EnergyTable {
  double node_nm{};
  std::string source;
  PerDTypePj mac_pj;                       // one multiply-accumulate in the array
  std::vector<SramPoint> sram_pj_per_64b;  // ascending bytes; see sram_pj_per_64b()
  LaneArithPj vector_add_pj;               // per lane and op: add, compare, select, ...
  LaneArithPj vector_mul_pj;               // per lane and op: multiply-class
  double scalar_op_pj{};
  double dram_pj_per_bit{};
  double ici_pj_per_bit{};
  double wire_pj_per_bit_per_mm{};
  double static_power_w{};           // per chip, charged for the whole simulated time
  double sram_leakage_mw_per_mib{};  // per MiB of on-chip SRAM, on top of static_power_w
  bool operator==(const EnergyTable&) const = default;
};

struct Config {
  uint32_t schema_version{};
  std::string name;
  std::string description;
  std::string source;
  double clock_mhz{};
  SystemConfig system;
  CoreConfig core;
  MemoryConfig memory;
  IciConfig ici;
  EnergyTable energy;
  bool operator==(const Config&) const = default;
};

// A config that cannot be used: says where (file:line:column, key), what (value and
// allowed range) and how to fix it. line/column are 1-based; 0 when unknown.
class ConfigError : public vtpu::UserError {
 public:
  struct Details {
    std::string file;
    int line = 0;
    int column = 0;
    std::string key;      // dotted path, e.g. "core.mxu.rows"; empty if none applies
    std::string value;    // offending value as written
    std::string allowed;  // allowed range or values, e.g. "[1, 4096]"
    std::string message;  // what is wrong, e.g. "value 0 out of range [1, 4096]"
    std::string hint;     // how to fix it
  };
  explicit ConfigError(Details d);
  const Details& details() const { return d_; }
  const std::string& file() const { return d_.file; }
  int line() const { return d_.line; }
  int column() const { return d_.column; }
  const std::string& key() const { return d_.key; }
  const std::string& value() const { return d_.value; }
  const std::string& allowed() const { return d_.allowed; }
  const std::string& hint() const { return d_.hint; }

 private:
  Details d_;
};

// --- loading -------------------------------------------------------------------------
Config load_file(const std::filesystem::path& path);
Config load_string(std::string_view yaml, std::string_view source_name = "<string>");
Config load_preset(std::string_view name);  // built into the library
// A preset's YAML as written in configs/presets/NAME.yaml (for tools that edit keys and
// reload, so defaults derived from an edited key follow it); throws like load_preset.
std::string preset_yaml(std::string_view name);
std::vector<std::string> preset_names();    // sorted
// Checks the keys a partial config writes (names, types, ranges, as load_string does) without
// requiring any key or checking keys against each other; throws ConfigError.
void check_keys(std::string_view yaml, std::string_view source_name = "<string>");
// A path if it exists or ends in .yaml/.yml, otherwise a preset name.
Config resolve(std::string_view preset_name_or_path);

// --- canonical form ------------------------------------------------------------------
// Every key with its resolved value, in schema order; load_string(to_yaml(c)) == c.
std::string to_yaml(const Config& config);
// FNV-1a 64 of to_yaml(config): changes when any field changes.
uint64_t fingerprint(const Config& config);

// The value of a numeric key (integer, size, bandwidth, time, frequency, power, energy or
// plain number) in the key's unit, by dotted path ("core.unified_buffer.bytes" -> 25165824);
// nullopt for other keys and unknown paths.
std::optional<double> numeric_value(const Config& config, std::string_view key);

// --- derived quantities ----------------------------------------------------------------
bool supports(const Config& config, DType dtype);
// Throws ConfigError naming the supported types if the MXU cannot multiply `dtype`.
void require_dtype(const Config& config, DType dtype);
uint64_t weight_tile_bytes(const Config& config, DType dtype);  // rows x cols elements
uint64_t accumulator_bytes(const Config& config);               // per MXU
// 2 ops per MAC, all MXUs of all cores of one chip, at clock_mhz.
double peak_ops_per_s_per_chip(const Config& config);
double mac_pj(const EnergyTable& energy, DType dtype);
// Energy of one 64-bit access to an SRAM macro of `macro_bytes`: log-log (power-law)
// interpolation between the table's neighbouring points, extrapolated from the end
// segments outside them; a one-point table is constant. Requires macro_bytes > 0.
double sram_pj_per_64b(const EnergyTable& energy, uint64_t macro_bytes);

// A size in the config grammar ("64MiB", "4 KiB", "1024"; docs/config.md), for command
// lines; throws UserError naming `what` and the units. format_size prints it back ("64MiB").
uint64_t parse_size(std::string_view text, std::string_view what);
std::string format_size(uint64_t bytes);

}  // namespace vtpu::config
