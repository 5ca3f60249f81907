#!/usr/bin/env bash
# Runs an example and its --fixed twin on the simulator under the tiny CUPTI client and checks
# that the fix lowers a figure of the simulated timeline: by default the span (first kernel
# start to last kernel end); with METRIC=watch_max_wait_ns, the longest queued -> start wait
# of the kernels named by GPUHOOK_PROBE_WATCH. The simulator's model has to show the pattern
# the example is about.
# With REPEAT=N each form runs N times and its smallest figure counts (a program with many
# runtime threads on a 2-core machine sometimes loses the CPU at a bad moment).
#   [METRIC=...] [REPEAT=N] fixed_is_faster.sh SIM_LIB_DIR PROBE_SO PROGRAM [ARGS...]
set -u
metric=${METRIC:-span_ns}
sim_lib=$1
probe=$2
shift 2
span() {
  local out
  out=$(LD_PRELOAD="${GPUHOOK_SIM_TEST_PRELOAD:-}" LD_LIBRARY_PATH="$sim_lib" CUDA_INJECTION64_PATH="$probe" "$@" 2>&1) || {
    printf '%s\n' "$out"
    echo "FAIL: $* failed" >&2
    exit 1
  }
  printf '%s\n' "$out" >&2
  sed -n "s/.* ${metric}=\\([0-9]*\\).*/\\1/p" <<<"$out"
}
best() {
  local b="" v i
  for ((i = 0; i < ${REPEAT:-1}; i++)); do
    v=$(span "$@") || exit 1
    [ -z "$v" ] && continue
    if [ -z "$b" ] || [ "$v" -lt "$b" ]; then b=$v; fi
  done
  echo "$b"
}
plain=$(best "$@")
fixed=$(best "$@" --fixed)
echo "$metric plain=$plain fixed=$fixed"
if [ -z "$plain" ] || [ -z "$fixed" ] || [ "$fixed" -ge "$plain" ]; then
  echo "FAIL: --fixed did not lower $metric on the simulator" >&2
  exit 1
fi
