#!/usr/bin/env bash
# A dependency only the benchmarks need (Google Benchmark, oneDNN with its OpenMP) or only the
# HTML report's charts need (the Vega npm packages) must not break configuring or building
# vtpu when absent; `make run` builds the vtpu tool alone. Configures the source tree with
# those packages hidden from CMake, in a scratch build directory.
#   usage: configure_without_optional.sh SOURCE_DIR SCRATCH_DIR
set -euo pipefail
src=$1 dir=$2
rm -rf "$dir" && mkdir -p "$dir"
cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVTPU_BUILD_FUZZERS=OFF \
  -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON -DCMAKE_DISABLE_FIND_PACKAGE_OpenMP=ON \
  -DVTPU_NODE_DIR="$dir/no-node-packages" > "$dir/configure.log" 2>&1 \
  || { cat "$dir/configure.log"; echo "FAIL: configure broke without the optional dependencies"; exit 1; }
targets=$(ninja -C "$dir" -t targets all)
grep -q "^bin/vtpu:" <<<"$targets" || { echo "FAIL: no vtpu target"; exit 1; }
if grep -q "bench_" <<<"$targets"; then echo "FAIL: benchmarks configured without Google Benchmark"; exit 1; fi
grep -q "Google Benchmark not found" "$dir/configure.log" || { echo "FAIL: no message about the missing benchmarks"; exit 1; }
grep -q "Vega-Lite not found" "$dir/configure.log" || { echo "FAIL: no message about the missing Vega-Lite"; exit 1; }
# make run builds only the vtpu tool (and what it links), make test everything.
plan=$(make -n -C "$src" run BUILD_DIR="$dir")
grep -q -- "--target vtpu" <<<"$plan" || { echo "FAIL: make run does not build the vtpu target alone:"; echo "$plan"; exit 1; }
rm -rf "$dir"
echo "ok: configures without Google Benchmark, oneDNN/OpenMP and Vega; make run builds the vtpu target only"
