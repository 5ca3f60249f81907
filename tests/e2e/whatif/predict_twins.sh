#!/usr/bin/env bash
# The prediction table: for every example with a --fixed twin that a whatif change models,
# record the example and its twin on the simulator, predict the twin from the example with
# the change the twin makes, and compare the predicted span with the twin's measured span.
# Fails when an error passes the tolerance (default 15%).
#
# usage: predict_twins.sh BUILD_DIR [TOLERANCE_PERCENT]
set -u
build=${1:?usage: predict_twins.sh BUILD_DIR [TOLERANCE_PERCENT]}
tolerance=${2:-15}
build=$(cd "$build" && pwd)
gantt="$build/tools/gantt-cli/gantt-cli"
export LD_LIBRARY_PATH="$build/sim/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GPUHOOK_LIB="$build/libhook/libgpuhook.so"
# A sanitizer build of the simulator runs its stream workers several times slower in real
# time: the twins' spans then measure the instrumentation (seen: default_stream's twin 8.6 ms
# against 2.6 ms), not a schedule a model could predict. The table is a timing test: skipped
# there, said so (77 = skipped for ctest).
if ldd "$GPUHOOK_LIB" 2>/dev/null | grep -Eq 'lib(a|t)san'; then
  echo "SKIP: a sanitizer build; the prediction table needs the simulator's normal timing"
  exit 77
fi
. "$(dirname "$0")/../sim_timing.sh"
sim_timing_or_skip "$build/tests/support/thread_wake"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

span_ns() {  # the capture's span as `info` prints it: "time span: A .. B ns (S s)"
  "$gantt" info "$1" | awk '/time span:/ { print $5 - $3; exit }'
}

failed=0
# A row is measured again (at most 3 times) when it misses: the simulator's spans move with
# the machine's load (its stream workers are CPU threads), so one run on a busy machine can
# miss by its own noise; every attempt is printed, and the row fails if all three miss.
attempts=3
printf '%-16s %-28s %12s %12s %12s %8s\n' example change example_ms twin_ms predicted_ms error
row() {  # name, simulator settings, args, change flags...
  local try
  for try in $(seq 1 $attempts); do
    measure_row "$@" && return 0
    [ "$try" -lt $attempts ] && echo "  (measured again)"
  done
  failed=1
}
measure_row() {
  local name=$1 sim=$2 args=$3
  shift 3
  local ex="$build/examples/$name"
  [ -x "$ex" ] || { echo "SKIP $name: not built"; return 0; }
  rm -f "$work/$name"*.gpuh
  env $sim "$gantt" record -q -o "$work/$name.gpuh" -- "$ex" $args >/dev/null 2>"$work/$name.err" ||
    { echo "FAIL $name: record"; cat "$work/$name.err"; return 1; }
  env $sim "$gantt" record -q -o "$work/${name}_fixed.gpuh" -- "$ex" $args --fixed >/dev/null 2>"$work/$name.err" ||
    { echo "FAIL $name --fixed: record"; cat "$work/$name.err"; return 1; }
  "$gantt" whatif -q "$work/$name.gpuh" "$@" -o "$work/${name}_predicted.gpuh" ||
    { echo "FAIL $name: whatif $*"; return 1; }
  local a b p
  a=$(span_ns "$work/$name.gpuh")
  b=$(span_ns "$work/${name}_fixed.gpuh")
  p=$(span_ns "$work/${name}_predicted.gpuh")
  local change
  change=$(printf '%s ' "$@" | sed 's/--change //g; s/ *$//')
  awk -v n="$name" -v c="$change" -v a="$a" -v b="$b" -v p="$p" -v tol="$tolerance" 'BEGIN {
    err = 100 * (p - b) / b
    printf "%-16s %-28s %12.3f %12.3f %12.3f %+7.1f%%\n", n, c, a / 1e6, b / 1e6, p / 1e6, err
    exit (err > tol || err < -tol) ? 1 : 0 }' || { echo "MISS $name: the prediction is off by more than $tolerance%"; return 1; }
}

# On the simulator a kernel's host twin computes its result on the CPU, and the stream's
# worker reports completion in real time: a few microseconds per operation that a GPU does
# not spend, and that 2 cores turn into contention with the launching thread. The settings
# keep that CPU work well below the modelled GPU times (small sizes, kernels made longer with
# GPUHOOK_SIM_SCALE), so the table measures the model, not the simulator's own cost.
row default_stream "GPUHOOK_SIM_SCALE=affine:2" "--size 4096 --iterations 8" --change streams=4
row pageable_copy "GPUHOOK_SIM_SCALE=twice:20" "--size 16384 --iterations 4" --change pin-copies --change async-copies --change streams=2 --pinned-gbps 25
row sync_loop "GPUHOOK_SIM_SCALE=step_update:20" "--size 4096 --iterations 50" --change remove-syncs
row graphs "GPUHOOK_SIM_SCALE=layer_:16,loss_grad:16 GPUHOOK_SIM_LAUNCH_NS=40000" "--size 1024 --iterations 40" --change graphs

# balance-ranks: two ranks of allreduce_train, one with 2 ms of extra compute per step; the
# twin spreads it evenly. The span is the job's training loop (first to last train_step range
# record over both ranks): rank start-up and the NCCL rendezvous are not what the change moves.
range_span_ns() {
  for f in "$@"; do "$gantt" dump "$f"; done |
    awk '$2 == "range" { for (i = 1; i <= NF; i++) if ($i ~ /^time_ns=/) { split($i, a, "="); t = a[2]
           if (mn == "" || t < mn) mn = t; if (t > mx) mx = t } } END { print mx - mn }'
}
measure_allreduce() {
  rm -f "$work"/ar*.gpuh
  local args="--ranks 2 --steps 20 --slow-rank 1 --extra-us 2000"
  GPUHOOK_QUIET=1 LD_PRELOAD=$GPUHOOK_LIB GPUHOOK_OUTPUT="$work/ar%r.gpuh" "$ar" $args >/dev/null &&
    GPUHOOK_QUIET=1 LD_PRELOAD=$GPUHOOK_LIB GPUHOOK_OUTPUT="$work/arf%r.gpuh" "$ar" $args --fixed >/dev/null &&
    "$gantt" whatif -q "$work/ar0.gpuh" "$work/ar1.gpuh" --change balance-ranks -o "$work/ar_predicted.gpuh" ||
    { echo "FAIL allreduce_train: record or whatif"; return 1; }
  local a b p
  a=$(range_span_ns "$work/ar0.gpuh" "$work/ar1.gpuh")
  b=$(range_span_ns "$work/arf0.gpuh" "$work/arf1.gpuh")
  p=$(range_span_ns "$work/ar_predicted.gpuh")
  awk -v a="$a" -v b="$b" -v p="$p" -v tol="$tolerance" 'BEGIN {
    err = 100 * (p - b) / b
    printf "%-16s %-28s %12.3f %12.3f %12.3f %+7.1f%%\n", "allreduce_train", "balance-ranks (2 ranks)", a / 1e6, b / 1e6, p / 1e6, err
    exit (err > tol || err < -tol) ? 1 : 0 }' || { echo "MISS allreduce_train: the prediction is off by more than $tolerance%"; return 1; }
}
ar="$build/examples/allreduce_train"
if [ -x "$ar" ] && [ -f "$build/sim/lib/libnccl.so.2" ]; then
  ok=0
  for try in $(seq 1 $attempts); do
    measure_allreduce && { ok=1; break; }
  done
  [ $ok = 1 ] || failed=1
else
  echo "SKIP allreduce_train: not built, or no simulated NCCL"
fi
exit $failed
