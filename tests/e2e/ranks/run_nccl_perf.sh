#!/usr/bin/env bash
# Runs nccl_perf_app (nccl-tests' loop: identical work on every rank) under the hook on the
# simulator and checks that the CLI says nothing it should not about it, per MODE:
#   imbalance  all_reduce, one process driving 2 devices (`all_reduce_perf -g 2`): the device
#              launched first waits in each all-reduce for the other; that wait is no work, so
#              diagnose's imbalance stays quiet, on the capture and on its summary
#   exchange   sendrecv, one process driving 2 devices (`sendrecv_perf -g 2`): each rank sends
#              to and receives from the other at once, an exchange with no direction: no
#              pipeline in stats --by pipeline, pipeline-bubble does not fire; each call is
#              tied to the kernel on its own device
#   merge      all_reduce, 2 processes of one device (`mpirun -np 2 all_reduce_perf`): one
#              clock, so merge and info say the collectives were not needed to align, never
#              "0 shared collectives"; info of the merged file names each device by its rank
#   run_nccl_perf.sh SIM_LIB_DIR HOOK_LIB APP GANTT_CLI MODE
set -euo pipefail
sim=$1 hook=$2 app=$3 cli=$4 mode=$5
dir=$(mktemp -d /tmp/gpuhook-nccl-perf.XXXXXX)
trap 'rm -rf "$dir"' EXIT
export LD_LIBRARY_PATH=$sim GPUHOOK_QUIET=1
fail() { echo "FAIL: $1"; [[ -n ${2:-} ]] && cat "$2"; exit 1; }

case $mode in
  imbalance)
    GPUHOOK_SIM_DEVICES=2 LD_PRELOAD=$hook GPUHOOK_OUTPUT=$dir/ar.gpuh "$app" --op all_reduce --gpus 2 >/dev/null
    "$cli" diagnose "$dir/ar.gpuh" > "$dir/diagnose.txt" || true
    grep -q "imbalance: devices within" "$dir/diagnose.txt" || fail "imbalance fired on identical work" "$dir/diagnose.txt"
    "$cli" stats "$dir/ar.gpuh" --summary -o "$dir/ar.gsum"
    "$cli" diagnose "$dir/ar.gsum" > "$dir/diagnose_summary.txt" || true
    grep -q "imbalance: devices within" "$dir/diagnose_summary.txt" ||
      fail "imbalance fired on the summary of identical work" "$dir/diagnose_summary.txt"
    echo "ok: imbalance quiet on the capture and on its summary"
    ;;
  exchange)
    GPUHOOK_SIM_DEVICES=2 LD_PRELOAD=$hook GPUHOOK_OUTPUT=$dir/sr.gpuh "$app" --op sendrecv --gpus 2 >/dev/null
    "$cli" stats "$dir/sr.gpuh" --by pipeline --format json > "$dir/pipeline.json"
    python3 -c 'import json, sys; sys.exit(1 if json.load(open(sys.argv[1]))["pipelines"] else 0)' "$dir/pipeline.json" ||
      fail "stats --by pipeline found a pipeline in a sendrecv exchange" "$dir/pipeline.json"
    "$cli" diagnose "$dir/sr.gpuh" > "$dir/diagnose.txt" || true
    grep -q "pipeline-bubble: no pipeline" "$dir/diagnose.txt" || fail "pipeline-bubble saw a pipeline" "$dir/diagnose.txt"
    # Each device's send and receive are tied to that device's SendRecv kernel.
    "$cli" export "$dir/sr.gpuh" --format csv -o "$dir/sr.csv" 2>/dev/null
    python3 - "$dir/sr.csv" <<'PY' || fail "NCCL calls tied to another device's kernel"
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["kind"] == "nccl"]
tied = {r["device"] for r in rows if r["nccl_op"]}
sys.exit(0 if len(rows) >= 40 and tied == {"0", "1"} else 1)
PY
    echo "ok: the exchange is no pipeline"
    ;;
  merge)
    LD_PRELOAD=$hook GPUHOOK_OUTPUT=$dir/rank%r.gpuh "$app" --op all_reduce --ranks 2 >/dev/null
    "$cli" merge "$dir/rank0.gpuh" "$dir/rank1.gpuh" -o "$dir/job.gpuh" > "$dir/merge.txt"
    "$cli" info "$dir/job.gpuh" > "$dir/info.txt"
    for out in merge info; do
      if grep -q "0 shared collectives" "$dir/$out.txt"; then fail "$out says 0 shared collectives" "$dir/$out.txt"; fi
      grep -q "1 clock group: collectives not matched (one clock needs no alignment)" "$dir/$out.txt" ||
        fail "$out does not say why collectives were not matched" "$dir/$out.txt"
    done
    grep -q "^  rank 0 device 0: " "$dir/info.txt" && grep -q "^  rank 1 device 0: " "$dir/info.txt" ||
      fail "info of the merged job does not name each device by its rank" "$dir/info.txt"
    echo "ok: merge and info of one clock group"
    ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
