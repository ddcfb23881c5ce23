#pragma once
// TOSA RESCALE (vec.rescale), scale32 = true, per tensor or per lane
// (docs/numerics.md, "RESCALE").
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

#include "vtpu/numerics/dtype.h"

namespace vtpu::numerics {

struct RescaleParams {
  std::span<const int32_t> multiplier;  // 1 value (per tensor) or one per lane; >= 0
  std::span<const int32_t> shift;       // same count as multiplier; 2..62
  int32_t input_zp = 0;
  int32_t output_zp = 0;
  bool double_round = false;
  double min = -std::numeric_limits<double>::infinity();  // extra clamp bounds
  double max = std::numeric_limits<double>::infinity();
};

// TOSA apply_scale_32 in exact arithmetic:
//   round = 2^(shift-1); with double_round and shift > 31: round += 2^30 if value >= 0,
//   round -= 2^30 if value < 0; result = floor((value * multiplier + round) / 2^shift).
// TOSA requires the result to fit int32; this returns the exact value, whatever it is.
int64_t apply_scale_32(int64_t value, int32_t multiplier, int32_t shift, bool double_round);

// Throws vtpu::UserError naming `what` when the parameters are not usable for rows of
// `lanes` elements of type `in` -> `out`: counts, multiplier < 0, shift outside 2..62,
// types (in: int8, uint8, int16, int32; out: int8, uint8, int16, int32).
void validate_rescale(const RescaleParams& p, NumType in, NumType out, size_t lanes,
                      const char* what = "vec.rescale");

// One element: (in - input_zp) scaled, + output_zp, clamped to the output type and to
// [ceil(min), floor(max)] (max wins if min > max). `lane` picks the per-lane parameters.
int64_t rescale_value(int64_t in, const RescaleParams& p, size_t lane, NumType out);

// A row of n lanes: element i uses lane i's parameters.
void rescale_row(NumType in, const void* src, NumType out, void* dst, size_t n,
                 const RescaleParams& p);

}  // namespace vtpu::numerics
