// The rows of a DMA descriptor: where each lies on both sides, the ranges the hazard checker
// watches, and the bounds and alignment checks (docs/microarch.md, "DMA engine", "Bounds and
// alignment"). Shared by the DMA engine and the ICI engine.
#include <fmt/format.h>

#include <algorithm>

#include "machine.h"

namespace vtpu::sim::detail {

DmaShape dma_shape(const isa::DmaDescriptor& d, bool src) {
  int64_t lo = 0, hi = 0;
  uint64_t rows = 1;
  for (const auto& dim : d.dims) {
    int64_t s = src ? dim.src_stride : dim.dst_stride;
    int64_t span = int64_t(dim.count - 1) * s;
    if (span >= 0) hi += span;
    else lo += span;
    rows *= dim.count;
  }
  return {uint64_t(lo), uint64_t(hi), rows};
}

std::vector<std::pair<uint64_t, uint64_t>> dma_rows(const isa::DmaDescriptor& d, uint64_t src, uint64_t dst) {
  std::vector<std::pair<uint64_t, uint64_t>> rows;
  std::array<uint32_t, isa::kMaxDmaDims> cnt{1, 1, 1};
  std::array<int64_t, isa::kMaxDmaDims> sst{0, 0, 0}, dst_st{0, 0, 0};
  uint64_t n = 1;
  for (size_t i = 0; i < d.dims.size(); ++i)
    cnt[i] = d.dims[i].count, sst[i] = d.dims[i].src_stride, dst_st[i] = d.dims[i].dst_stride, n *= cnt[i];
  rows.reserve(n);
  for (uint32_t i2 = 0; i2 < cnt[2]; ++i2)
    for (uint32_t i1 = 0; i1 < cnt[1]; ++i1)
      for (uint32_t i0 = 0; i0 < cnt[0]; ++i0)
        rows.emplace_back(src + uint64_t(i0 * sst[0] + i1 * sst[1] + int64_t(i2) * sst[2]),
                          dst + uint64_t(i0 * dst_st[0] + i1 * dst_st[1] + int64_t(i2) * dst_st[2]));
  return rows;
}

std::shared_ptr<const std::vector<std::pair<uint64_t, uint64_t>>> dma_pattern(
    const std::vector<std::pair<uint64_t, uint64_t>>& rows, uint64_t bytes, bool src_side, uint64_t lo, uint64_t hi) {
  std::shared_ptr<std::vector<std::pair<uint64_t, uint64_t>>> v;
  if (uint64_t(rows.size()) * bytes == hi - lo) return v;  // contiguous
  v = std::make_shared<std::vector<std::pair<uint64_t, uint64_t>>>();
  v->reserve(rows.size());
  for (auto [s, t] : rows) {
    uint64_t b = src_side ? s : t;
    v->emplace_back(b, b + bytes);
  }
  std::sort(v->begin(), v->end());
  return v;
}

std::pair<uint64_t, uint64_t> Machine::check_dma_side(const OpRef& ref, const isa::DmaDescriptor& d, bool ub,
                                                      uint64_t base, const DmaShape& s, const char* field,
                                                      int64_t strides) {
  const auto& ub_cfg = cfg_.core.unified_buffer;
  if (s.min_off > 0 && base < uint64_t(-int64_t(s.min_off)))
    fail(ref, fmt::format("'{}' (descriptor '{}') reaches below address 0", field, d.name));
  uint64_t lo = base + s.min_off, hi = base + s.max_off + d.bytes;
  if (ub) {
    check_ub(ref, field, lo, hi - lo, true);
    uint64_t al = ub_cfg.alignment_bytes;
    if (al > 1 && strides % int64_t(al))
      fail(ref, fmt::format("descriptor '{}': every row must start on a multiple of {} bytes on the "
                            "unified-buffer side (core.unified_buffer.alignment_bytes), so its strides must "
                            "be multiples of it",
                            d.name, al));
  } else if (hi > hbm_.capacity()) {
    fail(ref, fmt::format("'{}' (descriptor '{}') reaches HBM bytes {}..{}, past its {} bytes (memory.bytes)",
                          field, d.name, lo, hi - 1, hbm_.capacity()));
  }
  return std::pair{lo, hi};
}

}  // namespace vtpu::sim::detail
