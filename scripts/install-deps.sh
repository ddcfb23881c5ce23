#!/usr/bin/env bash
# Installs the Debian 12 packages vtpu needs. Idempotent: packages already present are
# skipped, so a machine that has everything runs no apt command at all.
set -euo pipefail

PACKAGES=(
  # build tools and test frameworks
  cmake ninja-build g++ make pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev            # libFuzzer + sanitizers for the fuzz label
  # libraries
  libyaml-cpp-dev libcli11-dev libfmt-dev nlohmann-json3-dev
  libsystemc-dev verilator
  yosys                               # rtl/synth/area.sh (cell counts in docs/area.md)
  chromium                            # renders the HTML report in a test (headless)
  libdnnl-dev                         # oneDNN: the host GEMM the benchmarks compare against
  llvm-19-dev libmlir-19-dev mlir-19-tools
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  zlib1g-dev dataset-fashion-mnist    # accuracy of the trained LeNet-5 on Fashion-MNIST
  libstb-dev                          # image files as model inputs (stb_image, stb_image_resize)
  libsqlite3-dev                      # sweep results (vtpu sweep; docs/sweeps.md)
  slurm-wlm munge                     # sweeps as Slurm array jobs; the slurm test runs a one-node cluster
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# Node.js runs onnxruntime, the fp32 reference the zoo models are checked against (tests/ort).
# Any Node.js >= 16 with npm will do (some machines carry NodeSource's, which bundles npm).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi

# onnxruntime-node from the npm registry, outside the build tree so rebuilds keep it;
# ONNXRUNTIME_NODE_INSTALL=skip stops its install script fetching GPU binaries (the CPU
# library ships in the package). The tests look in the same place.
install_onnxruntime() {
  local dir="${VTPU_NODE_DIR:-${HOME:-/root}/.cache/vtpu/node}"
  if [ -f "$dir/node_modules/onnxruntime-node/package.json" ]; then
    echo "install-deps: onnxruntime-node present in $dir"
    return
  fi
  mkdir -p "$dir"
  ONNXRUNTIME_NODE_INSTALL=skip npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
    onnxruntime-node@1.30.0
  echo "install-deps: installed onnxruntime-node in $dir"
}

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  install_onnxruntime
  exit 0
fi

echo "install-deps: missing: ${missing[*]}"
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: error: apt-get not found. vtpu targets Debian 12 (bookworm);" >&2
  echo "  install the packages above with your system's package manager and re-run." >&2
  exit 1
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
  else
    echo "install-deps: error: not running as root and passwordless sudo is unavailable." >&2
    echo "  Run as root:  sudo $0   (or: apt-get install ${missing[*]})" >&2
    exit 1
  fi
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${#missing[@]} packages"
install_onnxruntime
