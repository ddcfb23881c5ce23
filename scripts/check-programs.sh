#!/usr/bin/env bash
# The program-identity gate: compiles every zoo model on every preset, in int8 and bf16, and
# compares each program's SHA-256 (or, where the compiler refuses, its exit code and its
# message) with the committed list tests/programs/program_hashes.txt.
#
# A refactor must leave the list unchanged. A deliberate change to the programs re-blesses
# it with one command, and the commit that does so says why:
#
#   scripts/check-programs.sh --bless          # rewrite the list from this build
#   scripts/check-programs.sh                  # compare (what ctest unit.program_identity runs)
#
# Options: --build DIR (default build), --jobs N (default nproc), --list FILE,
#          --only REGEX (cells whose "model preset dtype" matches; compare only those),
#          --seconds FILE (write each cell's compile time there: "seconds model preset dtype"),
#          --quick (leave out the cells tests/programs/slow_cells.txt lists, each 40 s or
#          more to compile or refuse; VTPU_PROGRAMS_FULL=1 keeps them: ctest's gate runs
#          --quick so that the suite stays within its time, docs/compiler.md "Correctness").
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$here/build
list=$here/tests/programs/program_hashes.txt
jobs=$(nproc)
bless=0
only=""
quick=0
seconds_to=""
slow=$here/tests/programs/slow_cells.txt
while [ $# -gt 0 ]; do
  case "$1" in
    --bless) bless=1 ;;
    --build) build=$(cd "$2" && pwd) || exit 2; shift ;;
    --jobs) jobs=$2; shift ;;
    --list) list=$2; shift ;;
    --only) only=$2; shift ;;
    --quick) quick=1 ;;
    --seconds) seconds_to=$2; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "check-programs: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
vtpu=$build/bin/vtpu
[ -x "$vtpu" ] || { echo "check-programs: $vtpu not found; build first (cmake --build $build --target vtpu)" >&2; exit 2; }
[ $bless -eq 0 ] || [ -z "$only" ] || { echo "check-programs: --bless rewrites the whole list; drop --only" >&2; exit 2; }
[ $bless -eq 0 ] || [ $quick -eq 0 ] || { echo "check-programs: --bless rewrites the whole list; drop --quick" >&2; exit 2; }
[ "${VTPU_PROGRAMS_FULL:-0}" != 1 ] || quick=0

work=$(mktemp -d "${TMPDIR:-/tmp}/vtpu-programs.XXXXXX")
trap 'rm -rf "$work"' EXIT
models=$("$vtpu" models | awk 'NR > 1 && $0 !~ /^ / && $1 != "run" {print $1}')
# Models run on one chip: multi-chip presets are left out (the TPU v4 slices have tpu-v4-core's
# chip, which Presets.TpuV4SlicesAreTheV4CoreChipInATorus keeps equal).
presets=$(for p in $("$vtpu" config list | awk '{print $1}'); do
  "$vtpu" config check "$p" | grep -q '^  chips: 1$' && echo "$p"
done)
[ -n "$models" ] && [ -n "$presets" ] || { echo "check-programs: could not list the zoo or the presets" >&2; exit 3; }

cells=$work/cells
for m in $models; do for p in $presets; do for d in int8 bf16; do
  line="$m $p $d"
  if [ -z "$only" ] || [[ "$line" =~ $only ]]; then echo "$line"; fi
done; done; done > "$cells"
[ -s "$cells" ] || { echo "check-programs: no cell matches --only '$only'" >&2; exit 2; }
left_out=0
if [ $quick -eq 1 ] && [ -f "$slow" ]; then
  grep -v '^#' "$slow" | awk 'NF >= 3 {print $1, $2, $3}' | sort -u > "$work/slow"
  left_out=$(grep -cxFf "$work/slow" "$cells")
  grep -vxFf "$work/slow" "$cells" > "$work/cells.quick"
  mv "$work/cells.quick" "$cells"
fi

# One cell: "model preset dtype sha256" or "model preset dtype refused rc=N msg=MESSAGE".
compile_cell() {
  local m=$1 p=$2 d=$3 out="$work/$1.$2.$3" t0=$EPOCHREALTIME
  "$vtpu" compile "$m" -c "$p" --dtype "$d" -o "$out.vtpu" > /dev/null 2> "$out.err"
  local rc=$?
  echo "$m $p $d $t0 $EPOCHREALTIME" >> "$work/seconds"
  if [ $rc -eq 0 ]; then
    echo "$m $p $d $(sha256sum "$out.vtpu" | cut -c1-64)"
  else
    # The message as written, on one line, without paths (the zoo's cache and the temp folder
    # vary between machines): ZooOnEveryPreset reads refusals from the list instead of
    # compiling them again.
    echo "$m $p $d refused rc=$rc msg=$(sed -E 's#/[^ :]*/##g' "$out.err" | tr '\n' ' ' | sed -E 's/ +$//')"
  fi
  rm -f "$out.vtpu"
}
export -f compile_cell
export vtpu work

# Zoo models are generated once into the zoo's cache (VTPU_MODEL_DIR, else a versioned temp
# folder): materialize each serially first, so the parallel compiles do not all generate it.
t0=$(date +%s)
for m in $(awk '{print $1}' "$cells" | uniq); do
  "$vtpu" compile "$m" -c tpu-v4-core --dtype bf16 -o "$work/warm.vtpu" > /dev/null 2>&1 || true
done
xargs -P "$jobs" -L 1 bash -c 'compile_cell "$@"' _ < "$cells" | sort > "$work/now.txt"
dt=$(( $(date +%s) - t0 ))
n=$(wc -l < "$work/now.txt")
# The longest compiles, for whoever wants this gate faster.
cat "$work/seconds" 2>/dev/null | awk '{printf "%.1f %s %s %s\n", $5 - $4, $1, $2, $3}' | sort -rn > "$work/seconds.sorted"
[ -z "$seconds_to" ] || cp "$work/seconds.sorted" "$seconds_to"
head -5 "$work/seconds.sorted" |
  awk 'BEGIN {printf "check-programs: longest compiles (s):"} {printf " %s %s %s %s;", $2, $3, $4, $1} END {print ""}'

if [ $bless -eq 1 ]; then
  mkdir -p "$(dirname "$list")"
  {
    echo "# Program hashes of every zoo model x preset x dtype: scripts/check-programs.sh compares,"
    echo "# scripts/check-programs.sh --bless rewrites. A commit that changes this file says why."
    echo "# model preset dtype sha256-of-program | refused rc=EXIT msg=MESSAGE (paths removed)"
    cat "$work/now.txt"
  } > "$list"
  echo "check-programs: blessed $n cells into $list (${dt}s)"
  exit 0
fi

[ -f "$list" ] || { echo "check-programs: $list missing; run with --bless once" >&2; exit 1; }
grep -v '^#' "$list" | sort > "$work/want.txt"
if [ -n "$only" ] || [ "$left_out" -gt 0 ]; then
  : > "$work/want.sel"
  while read -r m p d rest; do
    grep -qxF "$m $p $d" "$cells" && echo "$m $p $d $rest" >> "$work/want.sel"
  done < "$work/want.txt"
  mv "$work/want.sel" "$work/want.txt"
fi
if diff -u "$work/want.txt" "$work/now.txt" > "$work/diff.txt"; then
  echo "check-programs: all $n programs identical to $(basename "$list") (${dt}s)"
  [ "$left_out" -eq 0 ] || echo "check-programs: $left_out slow cells left out (tests/programs/slow_cells.txt; VTPU_PROGRAMS_FULL=1 compiles them)"
  exit 0
fi
echo "check-programs: programs differ from $list (- committed, + this build):"
grep '^[-+][^-+]' "$work/diff.txt"
echo "If the change is deliberate, run scripts/check-programs.sh --bless and say why in the commit."
exit 1
