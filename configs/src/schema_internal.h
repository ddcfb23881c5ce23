#pragma once
// The schema table with what the public KeyInfo leaves out: where each key lives in
// Config and, for defaults that depend on other keys, how to compute them.
#include <string_view>
#include <variant>
#include <vector>

#include "vtpu/config/config.h"
#include "vtpu/config/schema.h"

namespace vtpu::config::detail {

using Slot =
    std::variant<std::string*, uint32_t*, uint64_t*, double*, bool*, MemoryKind*, PagePolicy*,
                 std::vector<DType>*, std::vector<uint32_t>*, std::vector<SramPoint>*>;

struct Field {
  KeyInfo info;
  Slot (*slot)(Config&);
  // Fills the key from keys it depends on (never from other derived keys); null when
  // the default is the static info.default_text or the key is required.
  void (*derive)(Config&);
};

const std::vector<Field>& fields();

// Allowed range of a key as shown in errors and docs: "[1, 4096]", "[1KiB, 4GiB]",
// "one of: hbm2, ddr3", "1 to 64 characters".
std::string range_text(const KeyInfo& key);

// Names of enum members, in enum order (index == underlying value).
inline constexpr std::string_view kDTypeNames[] = {"int8", "bf16"};
inline constexpr std::string_view kMemoryKindNames[] = {"hbm2", "hbm2e",  "ddr3",
                                                        "ddr4", "lpddr4", "lpddr5"};
inline constexpr std::string_view kPagePolicyNames[] = {"open", "closed"};

// Defaults that depend on the process node (energy.node_nm): logic scales by a single
// factor, SRAM per macro size; both geometrically between 45 nm and 7 nm anchors.
double logic_pj_at_node(double pj_at_45nm, double node_nm);
std::vector<SramPoint> sram_table_at_node(double node_nm);

// Defaults that depend on memory.kind.
struct MemoryKindDefaults {
  uint64_t burst_bytes;
  uint32_t banks_per_channel;
  uint64_t row_bytes;
  double t_rcd_ns;
  double t_rp_ns;
  double t_cl_ns;
  double dram_pj_per_bit;
};
const MemoryKindDefaults& memory_kind_defaults(MemoryKind kind);

// Horowitz ISSCC 2014 (45 nm) figures that the node-scaled defaults start from.
inline constexpr double kInt8MacPj45 = 0.2 + 0.1;  // 8-bit multiply + 32-bit int add
inline constexpr double kBf16OverInt8Mac = 5.0;    // ANCHORS.md: bf16 MAC ~5x int8 MAC
inline constexpr double kInt32AddPj45 = 0.1;
inline constexpr double kFp32AddPj45 = 0.9;
inline constexpr double kInt32MulPj45 = 3.1;
inline constexpr double kFp32MulPj45 = 3.7;
// Logic energy at 7 nm relative to 45 nm. An assumption of vtpu (see docs/config.md).
inline constexpr double kLogic7Over45 = 0.35;

}  // namespace vtpu::config::detail
