#!/usr/bin/env bash
# The whole test suite under AddressSanitizer + LeakSanitizer + UBSan (the asan-ubsan
# preset, build-asan/): configure, build, run, summary. Exits non-zero if the build fails,
# a test fails, or a sanitizer report appears in any test's output (even one whose test
# passed, e.g. from a child process whose exit code the test does not look at).
#
# Too long for CI's budget (docs/testing.md, "The sanitizer suite"); run it by hand:
#   scripts/asan-suite.sh                  # everything but the excluded labels below
#   JOBS=4 scripts/asan-suite.sh -R Cli    # extra arguments go to ctest
#   SKIP_BUILD=1 scripts/asan-suite.sh     # the tests again, on build-asan/ as it is
#
# The test preset sets ASAN_OPTIONS/UBSAN_OPTIONS with exitcode=86, so a sanitizer abort
# cannot pass for vtpu's "bad input" (1), "bad command line" (2) or "internal error" (3).
set -euo pipefail
cd "$(dirname "$0")/.."

JOBS=${JOBS:-2}
# cosim: the RTL (Verilator's generated C++) against the SystemC model; it checks the RTL,
#        not vtpu's own C++, and runs in the release suite (docs/testing.md).
EXCLUDE=${VTPU_ASAN_EXCLUDE:-cosim}
BUILD=build-asan
LOG=$BUILD/asan-suite.log

launcher=()
if command -v ccache > /dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi

start=$(date +%s)
elapsed() { local s=$(($(date +%s) - start)); printf '%dh%02dm%02ds' $((s / 3600)) $((s % 3600 / 60)) $((s % 60)); }

if [ "${SKIP_BUILD:-0}" = 1 ]; then
  echo "== configure and build skipped (SKIP_BUILD=1): testing $BUILD/ as it is"
else
  echo "== configure ($BUILD/)"
  nice -n 10 cmake --preset asan-ubsan "${launcher[@]}" > /dev/null
  echo "== build (-j$JOBS)"
  if ! nice -n 10 cmake --build "$BUILD" -j "$JOBS"; then
    echo "asan-suite: FAILED: the build broke ($(elapsed))"
    exit 1
  fi
fi
built=$(elapsed)

echo "== test (-j$JOBS, labels excluded: ${EXCLUDE:-none})"
exclude=()
[ -n "$EXCLUDE" ] && exclude=(-LE "$EXCLUDE")
set +e
nice -n 10 ctest --preset asan-ubsan -j "$JOBS" "${exclude[@]}" "$@" 2>&1 | tee "$LOG"
status=${PIPESTATUS[0]}
set -e

# A report that did not fail its test still fails the suite.
reports=$(grep -E -c "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|ASan is ignoring requested" \
  "$BUILD/Testing/Temporary/LastTest.log" || true)

echo
echo "== asan-suite summary"
grep -E "tests passed|tests failed" "$LOG" || true
echo "wall time: build $built, build and tests $(elapsed)"
echo "sanitizer reports in the tests' output: $reports ($BUILD/Testing/Temporary/LastTest.log)"
if [ "$status" -ne 0 ] || [ "$reports" -ne 0 ]; then
  echo "asan-suite: FAILED"
  exit 1
fi
echo "asan-suite: passed"
