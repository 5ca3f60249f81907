#!/usr/bin/env bash
# NVML sampling end to end on the simulator: nvml_app under the hook with the simulated
# libnvidia-ml.so.1. The GPU utilisation NVML reported is held against the kernels of the same
# capture, memory used against the program's allocation; a forced power cap is found by
# diagnose (and not in the run without it); GPUHOOK_NVML_HZ=0 samples nothing; a missing NVML
# is one line and the program runs on.
#   nvml_sampling_test.sh SIM_LIB_DIR HOOK_LIB GANTT_CLI NVML_APP
set -euo pipefail
sim_lib=$1 hook=$2 cli=$3 app=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Kernels of 20 ms (one full wave), NVML's utilisation period 20 ms, samples every 10 ms.
export LD_LIBRARY_PATH=$sim_lib GPUHOOK_QUIET=1 GPUHOOK_SIM_BLOCK_NS=20000000 GPUHOOK_SIM_NVML_PERIOD_MS=20
run() {  # run NAME [VAR=VALUE...]: nvml_app idles 300 ms, runs 15 kernels (300 ms), idles 300 ms
  local name=$1
  shift
  env "$@" GPUHOOK_OUTPUT="$work/$name.gpuh" LD_PRELOAD="$hook" "$app" 300 15 300 >"$work/$name.out" 2>"$work/$name.err" ||
    { echo "FAIL: nvml_app ($name) exited $?"; cat "$work/$name.err"; exit 1; }
  grep -q "nvml_app done" "$work/$name.out" || { echo "FAIL: nvml_app ($name) did not finish"; exit 1; }
}

run plain
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
if len(kernels) != 15:
    sys.exit(f"FAIL: {len(kernels)} kernels, expected 15")
util = samples.get("GPU_METRIC_GPU_UTIL_PERCENT", [])
if len(util) < 50:
    sys.exit(f"FAIL: {len(util)} utilisation samples in a 0.9 s run at 100 Hz")
def busy_ns(a, b):  # kernel time inside [a, b)
    return sum(max(0, min(e, b) - max(s, a)) for s, e in kernels)
# NVML's utilisation covers the 20 ms before the read: a window the trace shows all busy
# (with 2 ms to spare for the read's own delay) must read high, one it shows all idle low.
period, spare = 20_000_000, 2_000_000
busy = [v for t, v in util if busy_ns(t - period - spare, t) >= period + spare]
idle = [v for t, v in util if busy_ns(t - period - spare, t) == 0]
if len(busy) < 5 or len(idle) < 10:
    sys.exit(f"FAIL: too few samples to compare: {len(busy)} in busy windows, {len(idle)} in idle ones")
# On a busy machine a stream's worker wakes late after a kernel and notes the next one late,
# so the simulated NVML sees a gap the plan does not have (tests/sim/README.md, Limits): a
# sample in a busy window may read low, but most must not, and an idle window never reads busy.
low = [v for v in busy if v < 90]
if len(low) > len(busy) // 5 or max(idle) > 5:
    sys.exit(f"FAIL: utilisation disagrees with the trace: busy windows {sorted(busy)}%, "
             f"idle windows {min(idle)}..{max(idle)}%")
# The sampler starts with CUDA, before the program's cudaMalloc: from the first kernel on, the
# device holds the program's 64 MiB.
used = {v for t, v in samples.get("GPU_METRIC_MEMORY_USED_BYTES", []) if t >= kernels[0][0]}
if used != {64 << 20}:
    sys.exit(f"FAIL: memory used {sorted(used)} while the kernels ran, expected the program's 64 MiB")
sm = samples.get("GPU_METRIC_SM_CLOCK_MHZ", [])
busy_sm = [v for t, v in sm if busy_ns(t - period - spare, t) >= period + spare]
idle_sm = {v for t, v in sm if busy_ns(t - period - spare, t) == 0}
if busy_sm.count(1980) < len(busy_sm) * 4 // 5 or not set(busy_sm) <= {1980, 345} or idle_sm != {345}:
    sys.exit(f"FAIL: SM clock busy {busy_sm}, idle {idle_sm}")
print(f"ok: {len(util)} utilisation samples; {len(busy)} in busy windows ({min(busy)}..{max(busy)}%), "
      f"{len(idle)} in idle ones ({min(idle)}..{max(idle)}%)")
PY
# stats --metrics: busy_kernel's mean utilisation high, no-kernel's low (the samples just after
# a kernel still see it, so the bound is looser than per window).
"$cli" stats "$work/plain.gpuh" --metrics --format csv > "$work/stats.csv"
python3 - "$work/stats.csv" <<'PY'
import csv, sys
rows = {r["while"]: r for r in csv.DictReader(open(sys.argv[1]))}
for need in ("(all)", "(any kernel)", "(no kernel)", "busy_kernel"):
    if need not in rows:
        sys.exit(f"FAIL: stats --metrics has no row '{need}': {list(rows)}")
if float(rows["busy_kernel"]["GPU util %"]) < 85 or float(rows["(no kernel)"]["GPU util %"]) > 20:
    sys.exit(f"FAIL: stats --metrics means: busy_kernel {rows['busy_kernel']['GPU util %']}%, "
             f"no kernel {rows['(no kernel)']['GPU util %']}%")
PY
"$cli" diagnose "$work/plain.gpuh" > "$work/plain.diag" || true
if grep -q "power cap" "$work/plain.diag"; then echo "FAIL: throttled fired without a power cap"; cat "$work/plain.diag"; exit 1; fi
"$cli" export "$work/plain.gpuh" --format chrome -o "$work/plain.json" 2>/dev/null
grep -q '"ph":"C","name":"GPU util %"' "$work/plain.json" || { echo "FAIL: no utilisation counter track"; exit 1; }
"$cli" export "$work/plain.gpuh" --format metrics-csv -o "$work/plain.csv" 2>/dev/null
rows=$(grep -c ',gpu_util_pct,' "$work/plain.csv" || true)
samples=$(grep -c 'GPU_METRIC_GPU_UTIL_PERCENT' "$work/plain.txt" || true)
[[ $rows == "$samples" && $rows -gt 0 ]] || { echo "FAIL: metrics-csv has $rows utilisation rows, the capture $samples"; exit 1; }
"$cli" export "$work/plain.gpuh" --format sqlite -o "$work/plain.db" 2>/dev/null
sql=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"select count(*) from metrics where counter='gpu_util_pct'\").fetchone()[0])" "$work/plain.db")
[[ $sql == "$samples" ]] || { echo "FAIL: the sqlite metrics table has $sql utilisation rows, the capture $samples"; exit 1; }

# A power cap from 400 ms after NVML started, for 150 ms: inside the busy stretch.
run capped GPUHOOK_SIM_POWER_CAP=400+150
"$cli" diagnose "$work/capped.gpuh" > "$work/capped.diag" || true
grep -Eq "gpu0: power cap: SM clock 1.98 -> 1.41 GHz during 1[0-9][0-9] ms" "$work/capped.diag" ||
  { echo "FAIL: the power cap is not found"; cat "$work/capped.diag"; exit 1; }
# The simulated GPU runs the kernels that start under the cap at 1410 MHz: the trace shows
# them 1980/1410 = 1.40x longer, and the finding says so from the trace (a little less when a
# kernel started under the cap before the first sample that saw it: 10 ms of sampling).
grep -Eq "busy_kernel ran .* runs that started inside took .* \(1\.(3[0-9]|4[01])x\)" "$work/capped.diag" ||
  { echo "FAIL: the slower kernels are not the evidence"; grep busy_kernel "$work/capped.diag"; exit 1; }

run off GPUHOOK_NVML_HZ=0
n=$("$cli" dump "$work/off.gpuh" --kind metric_sample | grep -c . || true)
[[ $n == 0 ]] || { echo "FAIL: $n metric samples with GPUHOOK_NVML_HZ=0"; exit 1; }
# gantt-cli record --nvml-hz sets it too.
GPUHOOK_LIB=$hook "$cli" record --nvml-hz 20 -o "$work/rec.gpuh" -- "$app" 0 5 300 >/dev/null 2>&1
n=$("$cli" dump "$work/rec.gpuh" --kind metric_sample | grep -c GPU_METRIC_GPU_UTIL_PERCENT || true)
(( n >= 5 && n <= 12 )) || { echo "FAIL: $n utilisation samples in 0.4 s at --nvml-hz 20"; exit 1; }

run missing GPUHOOK_NVML=/nonexistent/libnvidia-ml.so.1
[[ $(grep -c "^gpuhook: NVML not loaded" "$work/missing.err") == 1 ]] ||
  { echo "FAIL: a missing NVML is not one line"; cat "$work/missing.err"; exit 1; }
k=$("$cli" dump "$work/missing.gpuh" --kind kernel | grep -c . || true)
[[ $k == 15 ]] || { echo "FAIL: $k kernels recorded without NVML, expected 15"; exit 1; }
grep -m1 "power cap" "$work/capped.diag"
