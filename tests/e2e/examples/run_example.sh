#!/usr/bin/env bash
# Runs one example program on the gpuhook simulator and checks that it ran there, exited 0
# and verified its own result (a line "OK").
#   run_example.sh SIM_LIB_DIR PROGRAM [ARGS...]
set -u
sim_lib=$1
shift
out=$(LD_PRELOAD="${GPUHOOK_SIM_TEST_PRELOAD:-}" LD_LIBRARY_PATH="$sim_lib" GPUHOOK_SIM_VERBOSE=1 "$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne 0 ]; then
  echo "FAIL: $* exited $rc" >&2
  exit 1
fi
if ! grep -q '^gpuhook-sim: this is the gpuhook CPU simulator' <<<"$out"; then
  echo "FAIL: $* did not run on the simulator (check LD_LIBRARY_PATH and RUNPATH)" >&2
  exit 1
fi
if ! grep -qx 'OK' <<<"$out"; then
  echo "FAIL: $* did not confirm its result" >&2
  exit 1
fi
