#!/usr/bin/env bash
# Simulator figures, not GPU figures: for each example and its --fixed twin, the simulated GPU
# timeline (first kernel start to last kernel end, from the tiny CUPTI client) and the wall
# time the simulated run took; for priorities also the critical kernels' longest
# queued -> start wait. One table row per run.
#   tests/sim/bench_examples.sh [BUILD_DIR] [--iterations N]
set -euo pipefail
build=${1:-build}
shift || true
user_args=("$@")
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(--iterations 2)
lib="$build/sim/lib"
probe="$build/tests/e2e/examples/libgpuhook_sim_cupti_probe.so"
for f in "$lib/libcudart.so.13" "$probe"; do
  [ -e "$f" ] || { echo "missing $f: build the simulator and the probe first" >&2; exit 2; }
done
printf '%-16s %-7s %8s %14s %14s %10s\n' example variant kernels sim_span_us sim_wait_us wall_ms
for ex in default_stream pageable_copy tiny_kernels occupancy priorities sync_loop nvtx_layers; do
  for variant in plain fixed; do
    [ "$ex" = nvtx_layers ] && [ "$variant" = fixed ] && continue
    extra=()
    [ "$variant" = fixed ] && extra=(--fixed)
    run_args=("${args[@]}")
    # One iteration: across iterations the span also holds pageable_copy's host-side fill and
    # check, which both forms share.
    [ "$ex" = pageable_copy ] && [ ${#user_args[@]} -eq 0 ] && run_args=(--iterations 1)
    t0=$(date +%s%N)
    out=$(GPUHOOK_PROBE_WATCH=critical_request LD_LIBRARY_PATH="$lib" CUDA_INJECTION64_PATH="$probe" \
          "$build/examples/$ex" "${run_args[@]}" "${extra[@]}" 2>&1)
    t1=$(date +%s%N)
    kernels=$(sed -n 's/.*kernels=\([0-9]*\).*/\1/p' <<<"$out")
    span=$(sed -n 's/.* span_ns=\([0-9]*\).*/\1/p' <<<"$out")
    wait=$(sed -n 's/.* watch_max_wait_ns=\([0-9]*\).*/\1/p' <<<"$out")
    awk -v e="$ex" -v v="$variant" -v k="$kernels" -v s="$span" -v q="$wait" -v w="$((t1 - t0))" \
      'BEGIN { printf "%-16s %-7s %8s %14.1f %14.1f %10.1f\n", e, v, k, s / 1000, q / 1000, w / 1000000 }'
  done
done
