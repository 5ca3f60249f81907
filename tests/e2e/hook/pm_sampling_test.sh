#!/usr/bin/env bash
# CUPTI PM sampling (GPUHOOK_METRICS) end to end on the simulator: nvml_app under the hook with
# the simulated libcupti's PM sampling. SM active is held against the trace of the same capture
# (near 0 while no kernel runs, near the kernels' SM share while they run); restricted profiling,
# an unsupported chip, an unknown name and a counter the chip lacks are each one line, and the
# NVML samples are still there; gantt-cli record --metrics sets it and refuses a bad name.
#   pm_sampling_test.sh SIM_LIB_DIR HOOK_LIB GANTT_CLI NVML_APP
set -euo pipefail
sim_lib=$1 hook=$2 cli=$3 app=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Kernels of 20 ms (one wave) holding half the SMs (2112 of 4224 blocks); PM windows of 1 ms.
export LD_LIBRARY_PATH=$sim_lib GPUHOOK_QUIET=1 GPUHOOK_SIM_BLOCK_NS=20000000 GPUHOOK_METRICS_HZ=1000
unset GPUHOOK_METRICS GPUHOOK_SIM_PROFILING GPUHOOK_SIM_PM_MISSING
run() {  # run NAME [VAR=VALUE...]: nvml_app idles 200 ms, runs 10 half-device kernels, idles 200 ms
  local name=$1
  shift
  env "$@" GPUHOOK_OUTPUT="$work/$name.gpuh" LD_PRELOAD="$hook" "$app" 200 10 200 2112 >"$work/$name.out" 2>"$work/$name.err" ||
    { echo "FAIL: nvml_app ($name) exited $?"; cat "$work/$name.err"; exit 1; }
  grep -q "nvml_app done" "$work/$name.out" || { echo "FAIL: nvml_app ($name) did not finish"; exit 1; }
}
count() {  # count CAPTURE METRIC
  "$cli" dump "$1" --kind metric_sample | grep -c "metric=$2\b" || true
}

run plain GPUHOOK_METRICS=sm_active,sm_occupancy,dram_read,dram_write,gr_active
if grep "^gpuhook:" "$work/plain.err"; then echo "FAIL: the hook complained"; exit 1; fi
"$cli" dump "$work/plain.gpuh" --kind kernel,metric_sample > "$work/plain.txt"
python3 - "$work/plain.txt" <<'PY'
import re, sys
kernels, samples = [], {}
for line in open(sys.argv[1]):
    f = dict(re.findall(r"(\w+)=(\S+)", line))
    if " kernel " in line:
        kernels.append((int(f["start_ns"]), int(f["end_ns"])))
    elif " metric_sample " in line:
        samples.setdefault(f["metric"], []).append((int(f["time_ns"]), int(f.get("value", "0"))))
if len(kernels) != 10:
    sys.exit(f"FAIL: {len(kernels)} kernels, expected 10")
sm = samples.get("GPU_METRIC_SM_ACTIVE_CENTIPCT", [])
if len(sm) < 300:
    sys.exit(f"FAIL: {len(sm)} SM active samples in a 0.6 s run at 1 kHz")
if "GPU_METRIC_GPU_UTIL_PERCENT" not in samples:
    sys.exit("FAIL: NVML stopped sampling beside PM sampling")
def busy_ns(a, b):
    return sum(max(0, min(e, b) - max(s, a)) for s, e in kernels)
half = 500_000  # a sample's time is the middle of its 1 ms window
inside = [v / 100 for t, v in sm if busy_ns(t - half, t + half) == 2 * half]
idle = [v / 100 for t, v in sm if busy_ns(t - half - 1_000_000, t + half + 1_000_000) == 0]
if len(inside) < 100 or len(idle) < 200:
    sys.exit(f"FAIL: too few samples to compare: {len(inside)} inside kernels, {len(idle)} idle")
# The simulated counters follow the plan the trace shows: inside a kernel the SM share it holds
# (2112 / 4224 blocks = 50%), idle 0. On a loaded machine a stream's worker may note the next
# kernel later than the simulated PM sampling's decode lag (tests/sim/README.md): a few windows
# may read low, the median may not, and none reads more than the share.
inside.sort()
median = inside[len(inside) // 2]
low = [v for v in inside if v < 45]
if not 49.5 <= median <= 50.5 or len(low) > len(inside) // 5 or max(idle) > 0.5 or inside[-1] > 50.5:
    sys.exit(f"FAIL: SM active disagrees with the trace: inside kernels median {median:.2f}% ({len(low)} of "
             f"{len(inside)} under 45%), max {inside[-1]:.2f}%; idle max {max(idle):.2f}%")
mean = sum(inside) / len(inside)
occ = [v for t, v in samples.get("GPU_METRIC_SM_OCCUPANCY_CENTIPCT", []) if busy_ns(t - half, t + half) == 2 * half]
if not occ or abs(sum(occ) / len(occ) / 100 - 50) > 3:
    sys.exit(f"FAIL: occupancy inside kernels {sum(occ) / max(1, len(occ)) / 100:.1f}%, expected 50% (64 warps per SM, half the SMs)")
times = [t for t, v in sm]
if times != sorted(times) or len(set(times)) != len(times):
    sys.exit("FAIL: PM sample times are not strictly increasing")
print(f"ok: {len(sm)} SM active samples; inside kernels mean {mean:.2f}%, idle max {max(idle):.2f}%")
PY
# The same counters through the CLI: stats --metrics columns, the Chrome counter track.
"$cli" stats "$work/plain.gpuh" --metrics --format csv > "$work/stats.csv"
python3 - "$work/stats.csv" <<'PY'
import csv, sys
rows = {r["while"]: r for r in csv.DictReader(open(sys.argv[1]))}
if float(rows["busy_kernel"]["SM active %"]) < 40 or float(rows["(no kernel)"]["SM active %"]) > 5:
    sys.exit(f"FAIL: stats --metrics SM active: busy_kernel {rows['busy_kernel']['SM active %']}, "
             f"no kernel {rows['(no kernel)']['SM active %']}")
PY
"$cli" export "$work/plain.gpuh" --format chrome -o "$work/plain.json" 2>/dev/null
grep -q '"ph":"C","name":"SM active %"' "$work/plain.json" || { echo "FAIL: no SM active counter track"; exit 1; }
"$cli" export "$work/plain.gpuh" --format sqlite -o "$work/plain.db" 2>/dev/null
sql=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"select count(*) from metrics where counter='sm_active_pct'\").fetchone()[0])" "$work/plain.db")
[[ $sql == "$(count "$work/plain.gpuh" GPU_METRIC_SM_ACTIVE_CENTIPCT)" ]] || { echo "FAIL: sqlite has $sql SM active rows"; exit 1; }

one_line() {  # one_line NAME PATTERN: exactly one gpuhook line, and it matches
  local n
  n=$(grep -c "^gpuhook:" "$work/$1.err" || true)
  [[ $n == 1 ]] && grep -q "$2" "$work/$1.err" || { echo "FAIL: $1: want one gpuhook line matching '$2'"; cat "$work/$1.err"; exit 1; }
  cmp -s "$work/plain.out" "$work/$1.out" || { echo "FAIL: $1: the program's output changed"; exit 1; }
}
nvml_left() {  # nvml_left NAME: NVML samples, no PM ones
  (( $(count "$work/$1.gpuh" GPU_METRIC_GPU_UTIL_PERCENT) > 20 )) || { echo "FAIL: $1: no NVML samples"; exit 1; }
  [[ $(count "$work/$1.gpuh" GPU_METRIC_SM_ACTIVE_CENTIPCT) == 0 ]] || { echo "FAIL: $1: PM samples"; exit 1; }
}
run restricted GPUHOOK_METRICS=sm_active GPUHOOK_SIM_PROFILING=restricted
one_line restricted "CUPTI PM sampling off: profiling is restricted to administrators.*INSUFFICIENT_PRIVILEGES.*GPU metrics from NVML instead"
nvml_left restricted
run unsupported GPUHOOK_METRICS=sm_active GPUHOOK_SIM_PROFILING=unsupported
one_line unsupported "CUPTI PM sampling off: chip GH100 is not supported.*NVML instead"
nvml_left unsupported
run unknown GPUHOOK_METRICS=sm_active,sm_busy
one_line unknown "GPUHOOK_METRICS='sm_active,sm_busy' ignored (unknown metric \"sm_busy\"; valid: gr_active,sm_active,sm_occupancy,tensor_active,dram_read,dram_write,pcie_rx,pcie_tx,nvlink_rx,nvlink_tx or all)"
nvml_left unknown
run missing GPUHOOK_METRICS=all GPUHOOK_SIM_PM_MISSING=nvl
one_line missing "CUPTI PM sampling on GH100 cannot read nvlink_rx,nvlink_tx; the others are sampled"
(( $(count "$work/missing.gpuh" GPU_METRIC_TENSOR_ACTIVE_CENTIPCT) > 300 )) || { echo "FAIL: missing: the others are not sampled"; exit 1; }
[[ $(count "$work/missing.gpuh" GPU_METRIC_NVLINK_RX_CENTIPCT) == 0 ]] || { echo "FAIL: missing: NVLink sampled"; exit 1; }
run busy GPUHOOK_METRICS=sm_active GPUHOOK_SIM_PROFILING=busy
one_line busy "CUPTI PM sampling off: another PM sampling session holds device 0.*NVML instead"
nvml_left busy
run sysclk GPUHOOK_METRICS=sm_active GPUHOOK_SIM_PROFILING=sysclk_only
one_line sysclk "CUPTI PM sampling on GH100 counts SYS clock cycles (no time-interval trigger)"
(( $(count "$work/sysclk.gpuh" GPU_METRIC_SM_ACTIVE_CENTIPCT) > 300 )) || { echo "FAIL: sysclk: no PM samples"; exit 1; }
run nonvml GPUHOOK_METRICS=sm_active GPUHOOK_SIM_PROFILING=restricted GPUHOOK_NVML_HZ=0
one_line nonvml "no PM samples (NVML is off too)"

# gantt-cli record --metrics / --metrics-hz set the variables; a bad name stops before the run.
GPUHOOK_LIB=$hook "$cli" record --metrics sm_active --metrics-hz 500 -o "$work/rec.gpuh" -- "$app" 0 5 100 >/dev/null 2>&1
n=$(count "$work/rec.gpuh" GPU_METRIC_SM_ACTIVE_CENTIPCT)
(( n >= 60 && n <= 130 )) || { echo "FAIL: $n SM active samples in 0.2 s at --metrics-hz 500"; exit 1; }
set +e
GPUHOOK_LIB=$hook "$cli" record --metrics sm_busy -o "$work/bad.gpuh" -- "$app" 0 1 0 >"$work/bad.out" 2>"$work/bad.err"
rc=$?
set -e
[[ $rc == 2 && ! -e $work/bad.gpuh ]] && grep -q "unknown metric \"sm_busy\"; valid: gr_active" "$work/bad.err" ||
  { echo "FAIL: record --metrics sm_busy: exit $rc"; cat "$work/bad.err"; exit 1; }
echo "PASS pm_sampling"
