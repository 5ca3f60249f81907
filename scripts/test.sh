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

scripts/setup.sh --browser
export PATH="$PATH:/usr/local/cuda/bin"
# ccache (CMakeLists.txt uses it when installed) keys on paths relative to the checkout, so a
# fresh clone elsewhere reuses what an earlier build compiled.
export CCACHE_BASEDIR="$PWD"
# Release with assertions: -O2 but without -DNDEBUG.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2" \
      -DCMAKE_C_FLAGS_RELEASE="-O2" "${extra[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"
# The simulator's tests (label sim) run its stream workers as threads in real time, so a
# busy or slow machine can make one miss a timing by chance: each runs once more when it
# fails, and fails only if it fails again. Every other test runs once.
status=0
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" -LE sim || status=1
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" -L sim --repeat until-pass:2 || status=1
exit $status
