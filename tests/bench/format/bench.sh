#!/usr/bin/env bash
# Capture format figures on synthetic captures (tests/support/synth.h): write and read
# throughput on one core, bytes per kernel, ratio against Chrome trace JSON. CPU figures of
# this machine; no GPU is involved. Prints "| figure | measured | goal | pass/miss |" rows.
#   tests/bench/format/bench.sh BUILD_DIR
set -euo pipefail
build="${1:?usage: bench.sh BUILD_DIR}"
cmake --build "$build" --target format_bench format_size >/dev/null
dir="$build/tests/bench/format"
json="$(mktemp)"
trap 'rm -f "$json"' EXIT
# CPU time, not wall time: the figure is per core, and the machine may be shared.
"$dir/format_bench" --benchmark_format=json --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true >"$json" 2>/dev/null
"$dir/format_size" >"$json.size"
"$dir/format_size" 1 >"$json.size1"
python3 - "$json" "$json.size" "$json.size1" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
size = dict(l.split() for l in open(sys.argv[2]))
size1 = dict(l.split() for l in open(sys.argv[3]))
rate = {}
for r in b["benchmarks"]:
    if r.get("aggregate_name") == "median":
        rate[r["run_name"].split("/")[0]] = r["items_per_second"]
def row(fig, val, goal, ok):
    print(f"| {fig} | {val} | {goal} | {'pass' if ok else 'miss'} |")
w = rate["BM_WriteKernels"] / 1e6
row("format: write kernel records/s, 1 core, zstd 3 (synthetic)", f"{w:.2f} M/s", ">= 3 M/s", w >= 3)
p = rate["BM_WriteKernelLaunchPairs"] / 1e6
row("format: write kernel+launch pairs/s, 1 core (synthetic)", f"{p:.2f} M pairs/s ({2*p:.2f} M records/s)", "(info)", True)
r = rate["BM_ReadRecords"] / 1e6
row("format: read records/s into memory, 1 core (synthetic)", f"{r:.2f} M/s", ">= 5 M/s", r >= 5)
v = rate["BM_ReadRecordViews"] / 1e6
row("format: read records/s as the streamed readers do (RecordView), 1 core (synthetic)", f"{v:.2f} M/s ({v / r:.2f}x the message path)", "(info)", True)
bpk = float(size["bytes_per_kernel"])
row("format: bytes per kernel (kernel + launch record, zstd 3, 1M kernels, synthetic)", f"{bpk:.2f} B", "<= 16 B", bpk <= 16)
bpk1 = float(size1["bytes_per_kernel"])
row("format: bytes per kernel at zstd 1 (GPUHOOK_ZSTD_LEVEL=1, synthetic)", f"{bpk1:.2f} B", "(info)", True)
ratio = float(size["json_ratio"])
row("format: size vs the same events as Chrome trace JSON", f"{ratio:.1f}x smaller", ">= 15x", ratio >= 15)
PY
rm -f "$json.size" "$json.size1"
