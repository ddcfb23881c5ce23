// The schema table: one row per key, in canonical order. Adding a key here makes the
// loader accept and validate it, to_yaml print it and the docs table list it.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "schema_internal.h"
#include "units.h"
#include "vtpu/isa/isa.h"

namespace vtpu::config {
namespace detail {
namespace {

using T = KeyType;
using DeriveFn = void (*)(Config&);
using SlotFn = Slot (*)(Config&);

constexpr double kKiB = 1024.0;
constexpr double kMiB = kKiB * 1024;
constexpr double kGiB = kMiB * 1024;
constexpr double kTiB = kGiB * 1024;

Field req(std::string_view path, T type, std::string_view unit, double lo, double hi,
          std::string_view doc, SlotFn slot) {
  return Field{KeyInfo{path, type, unit, true, "", lo, hi, {}, 0, 0, doc}, slot, nullptr};
}

Field opt(std::string_view path, T type, std::string_view unit, std::string_view def, double lo,
          double hi, std::string_view doc, SlotFn slot) {
  return Field{KeyInfo{path, type, unit, false, def, lo, hi, {}, 0, 0, doc}, slot, nullptr};
}

// `how` says in words what the default is derived from (shown in docs).
Field der(std::string_view path, T type, std::string_view unit, std::string_view how, double lo,
          double hi, std::string_view doc, SlotFn slot, DeriveFn derive) {
  return Field{KeyInfo{path, type, unit, false, how, lo, hi, {}, 0, 0, doc}, slot, derive};
}

Field with_allowed(Field f, std::vector<std::string_view> allowed, uint32_t min_items = 0,
                   uint32_t max_items = 0) {
  f.info.allowed = std::move(allowed);
  f.info.min_items = min_items;
  f.info.max_items = max_items;
  return f;
}

// Three significant digits: derived energies should read like hand-written ones.
double round3(double x) {
  if (x == 0 || !std::isfinite(x)) return x;
  const int k = 2 - static_cast<int>(std::floor(std::log10(std::fabs(x))));
  if (k >= 0) {
    const double p = std::pow(10.0, k);
    return std::round(x * p) / p;
  }
  const double p = std::pow(10.0, -k);
  return std::round(x / p) * p;
}

// Geometric interpolation in log(node) between the 45 nm value (t = 0) and 7 nm (t = 1).
double node_factor(double ratio_7_over_45, double node_nm) {
  const double t = std::log(45.0 / node_nm) / std::log(45.0 / 7.0);
  return std::pow(ratio_7_over_45, t);
}

uint32_t widest_dtype_bytes(const Config& c) {
  uint32_t w = 1;
  for (DType d : c.core.mxu.dtypes) w = std::max(w, dtype_bytes(d));
  return w;
}

#define SLOT(member) [](Config& c) -> Slot { return &c.member; }

std::vector<Field> build_fields() {
  const std::vector<std::string_view> dtypes(std::begin(kDTypeNames), std::end(kDTypeNames));
  const std::vector<std::string_view> kinds(std::begin(kMemoryKindNames),
                                            std::end(kMemoryKindNames));
  const std::vector<std::string_view> policies(std::begin(kPagePolicyNames),
                                               std::end(kPagePolicyNames));
  return {
      // --- meta ---------------------------------------------------------------------
      opt("schema_version", T::kInt, "", "1", 1, 1,
          "Version of this schema; configs written for a later schema are rejected.",
          SLOT(schema_version)),
      req("name", T::kString, "", 1, 64,
          "Identifier echoed in every report: letters, digits, '.', '_' and '-'.", SLOT(name)),
      opt("description", T::kString, "", "\"\"", 0, 2000, "Free text for humans.",
          SLOT(description)),
      opt("source", T::kString, "", "\"\"", 0, 4000,
          "Where the figures come from (paper, datasheet, or 'assumed').", SLOT(source)),
      req("clock_mhz", T::kFrequency, "MHz", 1, 10000,
          "Core clock; every cycle count of the simulator and RTL is in this clock.",
          SLOT(clock_mhz)),

      // --- system -------------------------------------------------------------------
      opt("system.chips", T::kInt, "chips", "1", 1, 65536,
          "Chips in the simulated system; must equal the product of ici.shape.",
          SLOT(system.chips)),
      opt("system.cores_per_chip", T::kInt, "cores", "1", 1, 64,
          "Tensor cores per chip; they share the chip's memory and ICI links.",
          SLOT(system.cores_per_chip)),
      opt("system.host_bandwidth_gbytes_per_s", T::kBandwidth, "GB/s", "15.75", 0.001, 1e5,
          "Host link bandwidth per chip (default: PCIe Gen3 x16, the TPU v1 host link).",
          SLOT(system.host_bandwidth_gbytes_per_s)),

      // --- core.mxu -----------------------------------------------------------------
      opt("core.mxu.count", T::kInt, "arrays", "1", 1, isa::kMaxMxus,
          "Systolic arrays (MXUs) per core, each with its own weight FIFO and accumulators (at most "
          "what the ISA's MXU fields address).",
          SLOT(core.mxu.count)),
      req("core.mxu.rows", T::kInt, "PEs", 1, 4096,
          "PE rows = reduction depth K of a weight tile = elements per input vector.",
          SLOT(core.mxu.rows)),
      req("core.mxu.cols", T::kInt, "PEs", 1, 4096,
          "PE columns = output width N of a weight tile = sums per accumulator row.",
          SLOT(core.mxu.cols)),
      with_allowed(req("core.mxu.dtypes", T::kEnumList, "", 0, 0,
                       "Multiply types the array supports (int8: int32 sums; bf16: fp32 "
                       "sums).",
                       SLOT(core.mxu.dtypes)),
                   dtypes, 1, 2),
      opt("core.mxu.weight_fifo_tiles", T::kInt, "tiles", "2", 1, 64,
          "Weight tiles buffered between memory and the array (TPU v1: 4).",
          SLOT(core.mxu.weight_fifo_tiles)),
      opt("core.mxu.whole_weight_tiles", T::kBool, "", "false", 0, 0,
          "Whether a weight tile moves from memory to the weight FIFO whole (rows x cols "
          "elements, the memory time and bytes of a full tile) however few rows and columns "
          "hold weights, as TPU v1 read 64 KiB tiles (Jouppi et al. 2017, section 7: a "
          "600 x 600 matrix takes 9 steps of 256 x 256); false: only the rows and columns "
          "a dma.wfifo describes move.",
          SLOT(core.mxu.whole_weight_tiles)),
      der("core.mxu.weight_shift_cycles", T::kInt, "cycles", "= core.mxu.rows", 1, 65536,
          "Cycles to shift one weight tile into the array, overlapped with compute on the "
          "other weight buffer.",
          SLOT(core.mxu.weight_shift_cycles),
          [](Config& c) { c.core.mxu.weight_shift_cycles = c.core.mxu.rows; }),
      opt("core.mxu.input_latency_cycles", T::kInt, "cycles", "2", 0, 1024,
          "Cycles from the unified-buffer read to the array's first PE row (skew "
          "registers excluded).",
          SLOT(core.mxu.input_latency_cycles)),
      opt("core.mxu.output_latency_cycles", T::kInt, "cycles", "2", 0, 1024,
          "Cycles from the array's last PE row to the accumulator write (add included).",
          SLOT(core.mxu.output_latency_cycles)),

      // --- core.unified_buffer ------------------------------------------------------
      req("core.unified_buffer.bytes", T::kBytes, "bytes", kKiB, 4 * kGiB,
          "Capacity of the unified buffer (vector memory); a multiple of banks x row_bytes.",
          SLOT(core.unified_buffer.bytes)),
      opt("core.unified_buffer.banks", T::kInt, "banks", "4", 1, 1024,
          "Independent banks; rows are interleaved across banks.", SLOT(core.unified_buffer.banks)),
      der("core.unified_buffer.row_bytes", T::kBytes, "bytes",
          "= core.mxu.rows x widest dtype bytes", 1, 64 * kKiB,
          "Bytes moved by one port access: one row of one bank.",
          SLOT(core.unified_buffer.row_bytes),
          [](Config& c) {
            c.core.unified_buffer.row_bytes = uint64_t{c.core.mxu.rows} * widest_dtype_bytes(c);
          }),
      opt("core.unified_buffer.read_ports", T::kInt, "ports", "1", 1, 16, "Row reads per cycle.",
          SLOT(core.unified_buffer.read_ports)),
      opt("core.unified_buffer.write_ports", T::kInt, "ports", "1", 1, 16, "Row writes per cycle.",
          SLOT(core.unified_buffer.write_ports)),
      der("core.unified_buffer.alignment_bytes", T::kBytes, "bytes",
          "= min(4, core.unified_buffer.row_bytes)", 1, 64 * kKiB,
          "Where DMA rows and vector operands may start in the unified buffer (one 32-bit "
          "word by default, so packed int8 rows of a small array stay addressable); a power of "
          "two dividing row_bytes.",
          SLOT(core.unified_buffer.alignment_bytes),
          [](Config& c) {
            c.core.unified_buffer.alignment_bytes =
                std::min<uint64_t>(4, c.core.unified_buffer.row_bytes);
          }),
      opt("core.unified_buffer.read_latency_cycles", T::kInt, "cycles", "2", 0, 1024,
          "Cycles from a read request to its data.", SLOT(core.unified_buffer.read_latency_cycles)),
      opt("core.unified_buffer.write_latency_cycles", T::kInt, "cycles", "1", 0, 1024,
          "Cycles from a write to when a read sees it.",
          SLOT(core.unified_buffer.write_latency_cycles)),

      // --- core.accumulators ----------------------------------------------------------
      req("core.accumulators.rows", T::kInt, "rows", 1, 1 << 20,
          "Rows per MXU, each core.mxu.cols x 32 bits (TPU v1: 4096 x 256 x 4 B = 4 MiB).",
          SLOT(core.accumulators.rows)),
      opt("core.accumulators.banks", T::kInt, "banks", "2", 1, 64,
          "Banks, so the array fills one while the vector unit drains another; each "
          "bank needs at least core.mxu.rows rows.",
          SLOT(core.accumulators.banks)),

      // --- core.vector ----------------------------------------------------------------
      der("core.vector.lanes", T::kInt, "lanes", "= core.mxu.cols", 1, 4096,
          "Elements per sublane of a vector; divides or is a multiple of core.mxu.cols.",
          SLOT(core.vector.lanes), [](Config& c) { c.core.vector.lanes = c.core.mxu.cols; }),
      opt("core.vector.sublanes", T::kInt, "sublanes", "1", 1, 64,
          "Sublanes per vector (TPU v4: 8); one vector op handles lanes x sublanes elements.",
          SLOT(core.vector.sublanes)),
      opt("core.vector.registers", T::kInt, "registers", "32", 1, 1024,
          "Vector registers of lanes x sublanes x 32 bits.", SLOT(core.vector.registers)),
      opt("core.vector.latency_cycles.alu", T::kInt, "cycles", "2", 1, 1024,
          "Add, subtract, compare, select, min/max, bitwise.",
          SLOT(core.vector.latency_cycles.alu)),
      opt("core.vector.latency_cycles.multiply", T::kInt, "cycles", "4", 1, 1024,
          "Multiply and fused multiply-add.", SLOT(core.vector.latency_cycles.multiply)),
      opt("core.vector.latency_cycles.transcendental", T::kInt, "cycles", "12", 1, 1024,
          "exp, log, reciprocal, rsqrt, tanh, sigmoid (table lookup + interpolation).",
          SLOT(core.vector.latency_cycles.transcendental)),
      opt("core.vector.latency_cycles.reduce", T::kInt, "cycles", "8", 1, 1024,
          "Sum/max across the lanes of a vector.", SLOT(core.vector.latency_cycles.reduce)),
      opt("core.vector.latency_cycles.rescale", T::kInt, "cycles", "4", 1, 1024,
          "TOSA RESCALE: int32 x multiplier, shift, round, zero point, saturate.",
          SLOT(core.vector.latency_cycles.rescale)),
      opt("core.vector.latency_cycles.convert", T::kInt, "cycles", "2", 1, 1024,
          "Type conversion between int8, int32, bf16 and fp32.",
          SLOT(core.vector.latency_cycles.convert)),
      opt("core.vector.latency_cycles.pool", T::kInt, "cycles", "2", 1, 1024,
          "One step of max/average pooling across vectors.", SLOT(core.vector.latency_cycles.pool)),

      // --- core.scalar ----------------------------------------------------------------
      opt("core.scalar.imem_bundles", T::kInt, "bundles", "16384", 1, 1 << 24,
          "Instruction memory capacity in VLIW bundles; a longer program runs from windows of "
          "this many bundles, each fetched from memory when execution enters it (stall "
          "imem_fetch).",
          SLOT(core.scalar.imem_bundles)),
      opt("core.scalar.imem_prefetch", T::kBool, "", "false", 0, 0,
          "Whether the sequencer fetches the next instruction window while the current one "
          "runs: the instruction memory then holds two windows of imem_bundles / 2 bundles, "
          "and a window costs stall cycles only for the part of its fetch not yet done when "
          "execution reaches it (an instruction buffer fed ahead of use, as TPU v1's host "
          "fed its over PCIe); false: a window is fetched when execution enters it.",
          SLOT(core.scalar.imem_prefetch)),
      opt("core.scalar.branch_penalty_cycles", T::kInt, "cycles", "2", 0, 1024,
          "Bubble cycles after a taken branch.", SLOT(core.scalar.branch_penalty_cycles)),
      opt("core.scalar.registers", T::kInt, "registers", "32", 1, isa::kNumScalarRegs,
          "Scalar registers of 32 bits, r0 (always zero) included; programs may name r0 up to "
          "one less than this (at most what the ISA's register fields address).",
          SLOT(core.scalar.registers)),
      opt("core.scalar.smem_bytes", T::kBytes, "bytes", "16KiB", 0, kGiB,
          "Scalar data memory (TPU v4 SMEM: 16 KiB).", SLOT(core.scalar.smem_bytes)),
      opt("core.scalar.sync_flags", T::kInt, "flags", "32", 1, isa::kNumFlags - 1,
          "Synchronisation flags that asynchronous units (DMA, ICI) signal and bundles "
          "wait on (f0 means none; at most what the ISA's flag fields address). A program naming "
          "a flag past f<sync_flags> is refused before it runs; the compiler needs the MXU count + 6 "
          "and collectives more (docs/compiler.md, docs/collectives.md).",
          SLOT(core.scalar.sync_flags)),

      // --- core.dma -------------------------------------------------------------------
      opt("core.dma.max_in_flight", T::kInt, "transfers", "8", 1, 1024,
          "Transfers the DMA engine works on at once.", SLOT(core.dma.max_in_flight)),
      opt("core.dma.queue_depth", T::kInt, "descriptors", "32", 1, 65536,
          "Descriptors that may wait for issue; at least max_in_flight.",
          SLOT(core.dma.queue_depth)),
      opt("core.dma.setup_cycles", T::kInt, "cycles", "16", 0, 1000000,
          "Cycles to decode a descriptor before its first memory request.",
          SLOT(core.dma.setup_cycles)),

      // --- memory ---------------------------------------------------------------------
      with_allowed(req("memory.kind", T::kEnum, "", 0, 0,
                       "Off-chip memory technology; selects the defaults marked 'by kind'.",
                       SLOT(memory.kind)),
                   kinds),
      req("memory.bytes", T::kBytes, "bytes", kMiB, 64 * kTiB,
          "Capacity per chip; a multiple of channels x banks_per_channel x row_bytes.",
          SLOT(memory.bytes)),
      req("memory.channels", T::kInt, "channels", 1, 1024,
          "Independent channels (HBM2: 8 per stack).", SLOT(memory.channels)),
      req("memory.bandwidth_gbytes_per_s", T::kBandwidth, "GB/s", 0.001, 1e5,
          "Peak bandwidth of all channels together; each channel gets an equal share.",
          SLOT(memory.bandwidth_gbytes_per_s)),
      der("memory.burst_bytes", T::kBytes, "bytes", "by kind", 1, 4 * kKiB,
          "Bytes of one burst, the smallest transfer.", SLOT(memory.burst_bytes),
          [](Config& c) {
            c.memory.burst_bytes = memory_kind_defaults(c.memory.kind).burst_bytes;
          }),
      opt("memory.access_latency_ns", T::kTime, "ns", "30", 0, 1e5,
          "Fixed latency of a request through controller, PHY and on-chip network, on top "
          "of the DRAM timings.",
          SLOT(memory.access_latency_ns)),
      der("memory.banks_per_channel", T::kInt, "banks", "by kind", 1, 256,
          "Banks per channel, each with one row buffer.", SLOT(memory.banks_per_channel),
          [](Config& c) {
            c.memory.banks_per_channel = memory_kind_defaults(c.memory.kind).banks_per_channel;
          }),
      der("memory.row_bytes", T::kBytes, "bytes", "by kind", 64, 64 * kKiB,
          "Row buffer (page) size of one bank; a multiple of burst_bytes.", SLOT(memory.row_bytes),
          [](Config& c) { c.memory.row_bytes = memory_kind_defaults(c.memory.kind).row_bytes; }),
      der("memory.t_rcd_ns", T::kTime, "ns", "by kind", 0, 1000,
          "tRCD: activate (open a row) to column command.", SLOT(memory.t_rcd_ns),
          [](Config& c) { c.memory.t_rcd_ns = memory_kind_defaults(c.memory.kind).t_rcd_ns; }),
      der("memory.t_rp_ns", T::kTime, "ns", "by kind", 0, 1000,
          "tRP: precharge (close a row) to the next activate.", SLOT(memory.t_rp_ns),
          [](Config& c) { c.memory.t_rp_ns = memory_kind_defaults(c.memory.kind).t_rp_ns; }),
      der("memory.t_cl_ns", T::kTime, "ns", "by kind", 0, 1000,
          "tCL: column read command to first data.", SLOT(memory.t_cl_ns),
          [](Config& c) { c.memory.t_cl_ns = memory_kind_defaults(c.memory.kind).t_cl_ns; }),
      with_allowed(opt("memory.page_policy", T::kEnum, "", "open", 0, 0,
                       "open: rows stay open for later hits; closed: precharge after each "
                       "access.",
                       SLOT(memory.page_policy)),
                   policies),
      opt("memory.interleave_bytes", T::kBytes, "bytes", "256", 1, kMiB,
          "Consecutive bytes mapped to one channel before the next; a multiple of "
          "burst_bytes, at most row_bytes.",
          SLOT(memory.interleave_bytes)),

      // --- ici ------------------------------------------------------------------------
      opt("ici.links", T::kInt, "links", "0", 0, 64,
          "Inter-chip links per chip; enough for the torus (2 per dimension longer than 2, "
          "1 per dimension of 2).",
          SLOT(ici.links)),
      opt("ici.link_bandwidth_gbytes_per_s", T::kBandwidth, "GB/s", "50", 0.001, 1e5,
          "Bandwidth of one link in each direction.", SLOT(ici.link_bandwidth_gbytes_per_s)),
      opt("ici.link_latency_ns", T::kTime, "ns", "500", 0, 1e6,
          "Latency of one hop, first byte out to first byte in.", SLOT(ici.link_latency_ns)),
      with_allowed(
          opt("ici.shape", T::kIntList, "chips", "[1]", 1, 4096,
              "Torus dimensions, e.g. [4, 4, 4]; product = system.chips.", SLOT(ici.shape)),
          {}, 1, 4),
      opt("ici.wraparound", T::kBool, "", "true", 0, 0,
          "Whether each dimension closes into a ring (torus) or stays a line (mesh).",
          SLOT(ici.wraparound)),
      with_allowed(
          opt("ici.twist", T::kIntList, "chips", "[]", 0, 4096,
              "Twisted torus: empty, or one entry per dimension of ici.shape; a route that wraps "
              "around dimension d also moves twist[d] chips along the last dimension (TPU v4 "
              "4x4x8: [4, 4, 0]). The last entry must be 0.",
              SLOT(ici.twist)),
          {}, 0, 4),
      opt("ici.router_delay_ns", T::kTime, "ns", "20", 0, 1e6,
          "Delay of a packet through each router it enters (every hop, the destination's "
          "included).",
          SLOT(ici.router_delay_ns)),
      opt("ici.packet_bytes", T::kBytes, "bytes", "2KiB", 64, kMiB,
          "Transfers move in packets of this size (the last one shorter); links forward whole "
          "packets.",
          SLOT(ici.packet_bytes)),
      opt("ici.buffer_packets", T::kInt, "packets", "32", 1, 65536,
          "Credit-based flow control: packet slots per virtual channel (2 per link) at each "
          "link's receiving end.",
          SLOT(ici.buffer_packets)),
      opt("ici.max_in_flight", T::kInt, "transfers", "16", 1, 1024,
          "Sends the ICI engine of a chip works on at once; more stall the sequencer.",
          SLOT(ici.max_in_flight)),

      // --- energy ---------------------------------------------------------------------
      opt("energy.node_nm", T::kNumber, "nm", "45", 3, 180,
          "Process node; selects the node-scaled defaults below.", SLOT(energy.node_nm)),
      opt("energy.source", T::kString, "",
          "\"vtpu defaults: Horowitz ISSCC 2014 (45 nm), Jouppi et al. ISCA 2021 (7 nm "
          "SRAM), scaled to node_nm; see docs/config.md\"",
          0, 4000, "Where the energy figures come from.", SLOT(energy.source)),
      der("energy.mac_pj.int8", T::kEnergy, "pJ", "by node", 0, 1e4,
          "One int8 x int8 multiply with int32 accumulate in the array.", SLOT(energy.mac_pj.int8),
          [](Config& c) {
            c.energy.mac_pj.int8 = logic_pj_at_node(kInt8MacPj45, c.energy.node_nm);
          }),
      der("energy.mac_pj.bf16", T::kEnergy, "pJ", "by node", 0, 1e4,
          "One bf16 x bf16 multiply with fp32 accumulate in the array.", SLOT(energy.mac_pj.bf16),
          [](Config& c) {
            c.energy.mac_pj.bf16 =
                logic_pj_at_node(kInt8MacPj45 * kBf16OverInt8Mac, c.energy.node_nm);
          }),
      with_allowed(
          der("energy.sram_pj_per_64b", T::kSramTable, "pJ", "by node", 0.001, 1e5,
              "64-bit SRAM access energy at a few macro sizes; consumers "
              "interpolate with sram_pj_per_64b().",
              SLOT(energy.sram_pj_per_64b),
              [](Config& c) { c.energy.sram_pj_per_64b = sram_table_at_node(c.energy.node_nm); }),
          {"bytes", "pj"}, 1, 32),
      der("energy.vector_add_pj.int32", T::kEnergy, "pJ", "by node", 0, 1e4,
          "One int32 add-class vector op, per lane (int8 models).",
          SLOT(energy.vector_add_pj.int32),
          [](Config& c) {
            c.energy.vector_add_pj.int32 = logic_pj_at_node(kInt32AddPj45, c.energy.node_nm);
          }),
      der("energy.vector_add_pj.fp32", T::kEnergy, "pJ", "by node", 0, 1e4,
          "One fp32 add-class vector op, per lane (bf16 models).", SLOT(energy.vector_add_pj.fp32),
          [](Config& c) {
            c.energy.vector_add_pj.fp32 = logic_pj_at_node(kFp32AddPj45, c.energy.node_nm);
          }),
      der("energy.vector_mul_pj.int32", T::kEnergy, "pJ", "by node", 0, 1e4,
          "One int32 multiply-class vector op, per lane (rescale, int multiply).",
          SLOT(energy.vector_mul_pj.int32),
          [](Config& c) {
            c.energy.vector_mul_pj.int32 = logic_pj_at_node(kInt32MulPj45, c.energy.node_nm);
          }),
      der("energy.vector_mul_pj.fp32", T::kEnergy, "pJ", "by node", 0, 1e4,
          "One fp32 multiply-class vector op, per lane.", SLOT(energy.vector_mul_pj.fp32),
          [](Config& c) {
            c.energy.vector_mul_pj.fp32 = logic_pj_at_node(kFp32MulPj45, c.energy.node_nm);
          }),
      der("energy.scalar_op_pj", T::kEnergy, "pJ", "by node", 0, 1e4,
          "One scalar ALU op (a 32-bit add; instruction fetch is counted as SRAM reads).",
          SLOT(energy.scalar_op_pj),
          [](Config& c) {
            c.energy.scalar_op_pj = logic_pj_at_node(kInt32AddPj45, c.energy.node_nm);
          }),
      der("energy.dram_pj_per_bit", T::kNumber, "pJ/bit", "by kind", 0, 1000,
          "Off-chip memory energy per bit read or written (device + I/O).",
          SLOT(energy.dram_pj_per_bit),
          [](Config& c) {
            c.energy.dram_pj_per_bit = memory_kind_defaults(c.memory.kind).dram_pj_per_bit;
          }),
      opt("energy.ici_pj_per_bit", T::kNumber, "pJ/bit", "3", 0, 1000,
          "Inter-chip link energy per bit sent (off-package SerDes: a few pJ/bit).",
          SLOT(energy.ici_pj_per_bit)),
      opt("energy.wire_pj_per_bit_per_mm", T::kNumber, "pJ/bit/mm", "0.24", 0, 100,
          "On-chip wire energy (0.24 pJ/bit/mm at 40 nm); for consumers that model "
          "distances.",
          SLOT(energy.wire_pj_per_bit_per_mm)),
      opt("energy.static_power_w", T::kPower, "W", "0", 0, 1e5,
          "Per-chip power independent of activity (leakage, clocks), times simulated "
          "time.",
          SLOT(energy.static_power_w)),
      opt("energy.sram_leakage_mw_per_mib", T::kNumber, "mW/MiB", "0", 0, 1e6,
          "Leakage per MiB of on-chip SRAM, added to static_power_w.",
          SLOT(energy.sram_leakage_mw_per_mib)),
  };
}

#undef SLOT

}  // namespace

double logic_pj_at_node(double pj_at_45nm, double node_nm) {
  return round3(pj_at_45nm * node_factor(kLogic7Over45, node_nm));
}

std::vector<SramPoint> sram_table_at_node(double node_nm) {
  // Horowitz 45 nm: 10 / 20 / 100 pJ; Jouppi et al. ISCA 2021, 7 nm: 7.5 / 8.5 / 14 pJ.
  struct Anchor {
    uint64_t bytes;
    double pj45;
    double pj7;
  };
  constexpr Anchor kAnchors[] = {
      {8 * 1024, 10.0, 7.5}, {32 * 1024, 20.0, 8.5}, {1024 * 1024, 100.0, 14.0}};
  std::vector<SramPoint> table;
  for (const Anchor& a : kAnchors) {
    table.push_back({a.bytes, round3(a.pj45 * node_factor(a.pj7 / a.pj45, node_nm))});
  }
  return table;
}

const MemoryKindDefaults& memory_kind_defaults(MemoryKind kind) {
  // Typical JEDEC-class parts (vtpu's choice, not from ANCHORS.md) except the energy:
  // HBM2 5.5 pJ/bit is the middle of 3.9-7.0 pJ/bit; DDR 20.3 pJ/bit is Horowitz's
  // 1.3 nJ per 64-bit access; LPDDR figures are vtpu estimates.
  static const MemoryKindDefaults kTable[] = {
      /* hbm2   */ {64, 16, 2048, 14.0, 14.0, 14.0, 5.5},
      /* hbm2e  */ {64, 16, 2048, 14.0, 14.0, 14.0, 5.5},
      /* ddr3   */ {64, 8, 8192, 13.75, 13.75, 13.75, 20.3},
      /* ddr4   */ {64, 16, 8192, 13.75, 13.75, 13.75, 20.3},
      /* lpddr4 */ {32, 8, 2048, 18.0, 18.0, 18.0, 6.0},
      /* lpddr5 */ {32, 16, 2048, 18.0, 18.0, 18.0, 5.0},
  };
  return kTable[static_cast<size_t>(kind)];
}

const std::vector<Field>& fields() {
  static const std::vector<Field> kFields = build_fields();
  return kFields;
}

}  // namespace detail

std::string_view type_name(KeyType type) {
  switch (type) {
    case KeyType::kString: return "string";
    case KeyType::kInt: return "integer";
    case KeyType::kNumber: return "number";
    case KeyType::kBool: return "bool";
    case KeyType::kBytes: return "size";
    case KeyType::kBandwidth: return "bandwidth";
    case KeyType::kTime: return "duration";
    case KeyType::kFrequency: return "frequency";
    case KeyType::kPower: return "power";
    case KeyType::kEnergy: return "energy";
    case KeyType::kEnum: return "enum";
    case KeyType::kEnumList: return "list of enum";
    case KeyType::kIntList: return "list of integer";
    case KeyType::kSramTable: return "table";
  }
  return "?";
}

const std::vector<KeyInfo>& schema_keys() {
  static const std::vector<KeyInfo> kKeys = [] {
    std::vector<KeyInfo> keys;
    for (const detail::Field& f : detail::fields()) keys.push_back(f.info);
    return keys;
  }();
  return kKeys;
}

}  // namespace vtpu::config
