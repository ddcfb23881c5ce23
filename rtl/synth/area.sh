#!/usr/bin/env bash
# Area of the MXU RTL in generic gates, reproducing docs/area.md. Needs yosys (Debian
# package `yosys`, 0.23 in bookworm). Not part of CI; takes about a minute.
#
#   rtl/synth/area.sh [output-dir]      # default: build/area
#
# Each design is synthesized with `synth -flatten -noshare` to yosys's generic cell library
# ($_AND_, $_MUX_, $_DFF_P_, ...) and reported with `stat` (cells) and `stat -tech cmos`
# (yosys's transistor estimate, which counts the combinational cells only). -noshare skips the SAT-based resource sharing pass, which
# runs out of memory on the fp32 adder and would only merge the int8 and bf16 adders.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/build/area}
mkdir -p "$out"
src=$root/rtl/src
files="$src/vtpu_fp32_add.sv $src/vtpu_bf16_mul.sv $src/vtpu_delay.sv $src/vtpu_pe.sv $src/vtpu_systolic_array.sv $src/vtpu_mxu.sv"

# synth_one NAME TOP [PARAM VALUE]...
synth_one() {
  local name=$1 top=$2
  shift 2
  local chparam=""
  while [ $# -gt 0 ]; do chparam="$chparam -chparam $1 $2"; shift 2; done
  local script="read_verilog -sv $files; hierarchy -top $top$chparam; synth -flatten -noshare -top $top; \
tee -o $out/$name.stat stat; tee -o $out/$name.cmos stat -tech cmos"
  echo "yosys -p \"$script\"" > "$out/$name.cmd"
  yosys -q -l "$out/$name.log" -p "$script" >/dev/null
  local cells ffs tr
  cells=$(awk '/Number of cells:/ {n=$4} END {print n}' "$out/$name.stat")
  ffs=$(awk '/\$_(S?DFF|DFFE|SDFF|SDFFE|SDFFCE|DFFSR|ALDFF)[A-Z_]*_/ {s+=$2} END {print s+0}' "$out/$name.stat")
  tr=$(awk '/Estimated number of transistors:/ {n=$5} END {sub(/\+$/, "", n); print n}' "$out/$name.cmos")
  printf "%-16s %8s cells %6s flip-flops %8s transistors in combinational cells\n" "$name" "$cells" "$ffs" "$tr"
}

echo "yosys $(yosys -V | awk '{print $2}'), results in $out"
synth_one fp32_add            vtpu_fp32_add
synth_one bf16_mul            vtpu_bf16_mul
synth_one pe_int8             vtpu_pe BF16 "1'b0"
synth_one pe_bf16             vtpu_pe BF16 "1'b1"
synth_one array_4x4_int8      vtpu_systolic_array ROWS 4 COLS 4 BF16 "1'b0"
synth_one array_4x4_bf16      vtpu_systolic_array ROWS 4 COLS 4 BF16 "1'b1"
# The whole MXU with a 16-row accumulator memory (as flip-flops here; an SRAM in silicon).
synth_one mxu_4x4_acc16       vtpu_mxu ROWS 4 COLS 4 IN_LAT 2 OUT_LAT 2 SHIFT 4 ACC_ROWS 16 BF16 "1'b1"
