#!/usr/bin/env bash
# The test command: set up, configure, build (Release with assertions), run ctest.
#   scripts/test.sh              # build/ , the normal run (CI runs exactly this)
#   scripts/test.sh --sanitize   # build-asan/ , everything under ASan+UBSan
#   scripts/test.sh --tsan       # build-tsan/ , everything under TSan
set -euo pipefail
cd "$(dirname "$0")/.."

build=build
extra=()
case "${1:-}" in
  --sanitize)
    build=build-asan; extra=(-DGPUHOOK_SANITIZE=ON)
    # Tests that preload the instrumented hook into programs that are not (sh, python,
    # `gantt-cli record` children) need ASan to accept a runtime that is not first; and
    # fontconfig keeps its caches until exit by design (tests/lsan.supp).
    export ASAN_OPTIONS="verify_asan_link_order=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
    export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
    ;;
  --tsan) build=build-tsan; extra=(-DGPUHOOK_TSAN=ON) ;;
  "") ;;
  *) echo "usage: scripts/test.sh [--sanitize|--tsan]" >&2; exit 2 ;;
esac

# How long each phase took, printed at the end (and when a phase fails).
phase_start=$SECONDS
phases=()
phase() {  # phase NAME: closes the running phase under NAME
  phases+=("$(printf '%-10s %4d s' "$1" $((SECONDS - phase_start)))")
  phase_start=$SECONDS
}
report_phases() {
  echo "scripts/test.sh phases:"
  printf '  %s\n' "${phases[@]}"
}
trap report_phases EXIT

scripts/setup.sh --browser
phase setup
export PATH="$PATH:/usr/local/cuda/bin"
# ccache (CMakeLists.txt uses it when installed) keys on paths relative to the checkout, so a
# fresh clone elsewhere reuses what an earlier build compiled.
export CCACHE_BASEDIR="$PWD"
# Release with assertions: -O2 but without -DNDEBUG.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2" \
      -DCMAKE_C_FLAGS_RELEASE="-O2" "${extra[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"
phase build
# Every test runs once: the simulator plans the GPU's timeline from what the host submits, so
# a test that fails once is a failing test.
status=0
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" || status=1
phase tests
exit $status
