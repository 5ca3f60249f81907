#!/usr/bin/env bash
# gantt-cli jobs end to end on a small Slurm record (tests/fixtures/jobs/sacct_small.txt):
# the chart against its golden SVG, the statistics against values computed by hand, the
# formats, stdin, bad and hostile input.
#   jobs_test.sh GANTT_CLI        (UPDATE_GOLDEN=1 rewrites the golden chart)
set -u
cli=$1
here=$(cd "$(dirname "$0")" && pwd)
fixture=$here/../../fixtures/jobs/sacct_small.txt
golden=$here/golden/jobs_small.svg
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
ok() { echo "ok   $1"; }
fail() { echo "FAIL: $1"; fails=$((fails + 1)); }
now=(--now 2024-03-01T14:00:00)

# The chart: deterministic bytes.
# From the fixture's directory: the title holds the file name as given, the same in any clone.
(cd "$(dirname "$fixture")" && "$cli" jobs sacct_small.txt "${now[@]}" --submit gpus=8,time=2h -o "$work/small.svg") \
  > "$work/out" 2> "$work/err" || fail "chart exit $?: $(cat "$work/err")"
if [[ ${UPDATE_GOLDEN:-0} == 1 ]]; then
  cp "$work/small.svg" "$golden" && echo "golden updated: $golden"
elif cmp -s "$work/small.svg" "$golden"; then
  ok "chart matches the golden SVG"
else
  fail "chart differs from $golden (UPDATE_GOLDEN=1 after checking the change)"
fi
python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' "$work/small.svg" && ok "chart is well-formed XML" ||
  fail "chart is not XML"
grep -q "what-if: 8 GPUs for 2h 00m could start 2024-03-01T08:00:00 on gpu03(8)" "$work/out" && ok "what-if slot printed" ||
  fail "what-if: $(cat "$work/out")"
grep -q "1 job steps left out" "$work/err" && ok "the job step line is left out and said" || fail "steps: $(cat "$work/err")"

# Statistics, computed by hand from the fixture (window 08:00-14:00, 4 nodes x 8 GPUs):
# used = 16 GPU x 4 h (1001) + 4 x 1 h (1002) + 3 debug jobs of 1 GPU for 10+10+5 min
#      + 16 x 2 h (1006, running up to --now) = 100.4167; capacity 4 x 8 x 6 h = 192.
# Waiting with idle GPUs enough: 1002 (4 GPUs) from 08:30 to 12:00 while gpu03 and gpu04 were
# free, less carol's GPU on gpu04 09:00-09:25: 16 x 0.5 + 15 x 25/60 + 16 x 155/60 = 55.583.
"$cli" jobs "$fixture" "${now[@]}" --stats --stats-format json > "$work/stats.json" 2>/dev/null || fail "stats exit $?"
python3 - "$work/stats.json" <<'PY' && ok "statistics match the hand-computed values" || fail "statistics"
import json, sys
s = json.load(open(sys.argv[1]))
def near(a, b): return abs(a - b) < 1e-3
checks = [
    (s["nodes"], 4), (s["gpus_per_node"], 8), (s["jobs"], 8), (s["running"], 1), (s["pending"], 1),
    (near(s["capacity_gpu_hours"], 192), True), (near(s["used_gpu_hours"], 64 + 4 + 25 / 60 + 32), True),
    (near(s["idle_while_waiting_gpu_hours"], 8 + 15 * 25 / 60 + 16 * 155 / 60), True),
    ({p["key"]: p["wait_max_s"] for p in s["by_partition"]}, {"cpu": 300, "debug": 0, "gpu": 12600}),
    ({u["key"]: u["waiting"] for u in s["by_user"]}["dave"], 1),
    (s["nodes_by_busy"][-1]["node"], "gpu04"), (s["nodes_by_busy"][-1]["short_jobs"], 3),
]
bad = [(i, got, want) for i, (got, want) in enumerate(checks) if got != want]
for b in bad: print("check", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY

# PNG and PDF through the same scene; stdin; the CSV form; per-GPU rows.
"$cli" jobs "$fixture" "${now[@]}" -o "$work/c.png" 2>/dev/null && [[ $(head -c 4 "$work/c.png" | od -An -c | tr -d ' ') == "211PNG" ]] &&
  ok "PNG written" || fail "PNG"
"$cli" jobs "$fixture" "${now[@]}" -o "$work/c.pdf" 2>/dev/null && [[ $(head -c 4 "$work/c.pdf") == "%PDF" ]] && ok "PDF written" || fail "PDF"
cat "$fixture" | "$cli" jobs - "${now[@]}" --stats 2>/dev/null | grep -q "^8 jobs" && ok "reads stdin" || fail "stdin"
cat > "$work/jobs.csv" <<'CSV'
job,name,user,partition,submit,start,end,state,nodes,gpus
1,"train, big",alice,gpu,2024-03-01T00:00:00,2024-03-01T01:00:00,2024-03-01T03:00:00,COMPLETED,"gpu[1-2]",16
2,eval,bob,gpu,2024-03-01T00:30:00,2024-03-01T03:00:00,,RUNNING,gpu1,4
CSV
"$cli" jobs "$work/jobs.csv" --per-gpu --color-by partition -o "$work/csv.svg" 2> "$work/err" &&
  grep -q "2 jobs, 16 rows" "$work/err" && grep -q "train, big" "$work/csv.svg" && ok "CSV read, a row per GPU" ||
  fail "CSV: $(cat "$work/err")"

# Bad lines: each named with its number, the rest read, exit 2 unless --skip-bad.
{
  head -3 "$fixture"
  echo "2001|x|u|p|not-a-time|2024-03-01T09:00:00|2024-03-01T10:00:00|COMPLETED|gpu01|gres/gpu=1"
  echo "2002|x|u|p|2024-03-01T09:00:00|2024-03-01T09:00:00|2024-03-01T10:00:00|COMPLETED|n[0-99999999999]|gres/gpu=1"
  echo "2003|short"
} > "$work/bad.txt"
"$cli" jobs "$work/bad.txt" -o "$work/bad.svg" > /dev/null 2> "$work/err"
rc=$?
[[ $rc == 2 ]] && grep -q "bad.txt:4: bad time 'not-a-time'" "$work/err" && grep -q "bad.txt:5: node list: .*more than" "$work/err" &&
  grep -q "bad.txt:6: 2 fields" "$work/err" && [[ -s "$work/bad.svg" ]] && ok "bad lines named, chart still drawn, exit 2" ||
  fail "bad lines: rc $rc: $(cat "$work/err")"
"$cli" jobs "$work/bad.txt" --stats --skip-bad > /dev/null 2>&1 && ok "--skip-bad exits 0" || fail "--skip-bad"
printf 'no header here\n1|2|3\n' > "$work/nohead.txt"
"$cli" jobs "$work/nohead.txt" --stats > /dev/null 2> "$work/err"
[[ $? == 2 ]] && grep -q "nohead.txt:1: CSV header lacks" "$work/err" && ok "no header: one line, exit 2" || fail "no header: $(cat "$work/err")"
head -c 100000 /dev/urandom > "$work/noise.bin"
"$cli" jobs "$work/noise.bin" -o "$work/noise.svg" > /dev/null 2>&1
[[ $? == 2 ]] && ok "random bytes: exit 2, no crash" || fail "random bytes"
"$cli" jobs "$fixture" --wait-threshold 30 --stats > /dev/null 2> "$work/err"
[[ $? == 2 ]] && grep -q "needs a unit" "$work/err" && ok "a span without a unit is refused" || fail "span: $(cat "$work/err")"
"$cli" jobs "$fixture" --submit gpus=999,time=1h --stats 2>/dev/null | grep -q "what-if: the cluster in the record has 32 GPUs" &&
  ok "an impossible what-if says why" || fail "impossible what-if"

# --metrics: DCGM samples under the nodes (tests/fixtures/jobs/make_dcgm.py). The drop fixture
# has one drop on n1 at 03:00; its twin (the wide form) has none.
mdir=$here/../../fixtures/jobs
golden_metrics=$here/golden/jobs_metrics_stats.txt
(cd "$mdir" && "$cli" jobs dcgm_jobs.csv --metrics dcgm_drop.csv --stats) > "$work/mstats.txt" 2> "$work/err" ||
  fail "stats --metrics exit $?: $(cat "$work/err")"
if [[ ${UPDATE_GOLDEN:-0} == 1 ]]; then
  cp "$work/mstats.txt" "$golden_metrics" && echo "golden updated: $golden_metrics"
elif cmp -s "$work/mstats.txt" "$golden_metrics"; then
  ok "jobs --stats --metrics matches its golden text"
else
  fail "jobs --stats --metrics differs from $golden_metrics: $(diff "$golden_metrics" "$work/mstats.txt" | head -20)"
fi
[[ $(grep -c "hosts not in the job record" "$work/err") == 1 ]] && grep -q "360 samples from 1 hosts not in the job record left out (n9)" "$work/err" &&
  ok "samples of a host not in the record: counted and said once" || fail "unknown hosts: $(cat "$work/err")"
for twin in drop steady; do
  (cd "$mdir" && "$cli" jobs dcgm_jobs.csv --metrics "dcgm_$twin.csv" -o "$work/m_$twin.svg") > /dev/null 2> "$work/err_$twin" ||
    fail "chart --metrics $twin exit $?: $(cat "$work/err_$twin")"
  xmllint --noout "$work/m_$twin.svg" && ok "chart with dcgm_$twin.csv is valid XML (xmllint)" || fail "xmllint $twin"
done
grep -q "2 utilisation strips, 1 drops" "$work/err_drop" && grep -q "drop: DCGM_FI_DEV_GPU_UTIL 5% for 10m (was 90%)" "$work/m_drop.svg" &&
  ok "the drop is marked under n1" || fail "drop mark: $(cat "$work/err_drop")"
grep -q "2 utilisation strips, 0 drops" "$work/err_steady" && ! grep -q ": drop: " "$work/m_steady.svg" &&
  grep -q "mean of its GPUs per 2m" "$work/m_steady.svg" && ok "the steady twin has strips and no drop mark" ||
  fail "steady twin: $(cat "$work/err_steady")"
[[ $(grep -c '<a href="#svgView(viewBox(' "$work/m_drop.svg") == 2 ]] && ok "each job bar links to its interval" ||
  fail "bar links: $(grep -c '<a href=' "$work/m_drop.svg")"
printf '#Entity   GPUTL\nID\nGPU 0     87\n' > "$work/dmon.txt"
(cd "$mdir" && "$cli" jobs dcgm_jobs.csv --metrics "$work/dmon.txt" --stats) > /dev/null 2> "$work/err"
[[ $? == 2 ]] && grep -q "dmon.txt:1: this is dcgmi dmon output: it has no timestamps and no host names" "$work/err" &&
  ok "dcgmi dmon output refused with the reason, exit 2" || fail "dmon: $(cat "$work/err")"
{ head -3 "$mdir/dcgm_drop.csv"; echo "1709251200,n1,0,DCGM_FI_DEV_GPU_UTIL,NaN"; echo "1709251200,n1,0,DCGM_FI_DEV_GPU_UTIL,-3"; } > "$work/badm.csv"
(cd "$mdir" && "$cli" jobs dcgm_jobs.csv --metrics "$work/badm.csv" --stats) > /dev/null 2> "$work/err"
rc=$?
[[ $rc == 2 ]] && grep -q "badm.csv:4: DCGM_FI_DEV_GPU_UTIL NaN is not a finite number" "$work/err" &&
  grep -q "badm.csv:5: DCGM_FI_DEV_GPU_UTIL -3 is outside 0..100" "$work/err" && ok "bad metrics lines named, exit 2" ||
  fail "bad metrics: rc $rc: $(cat "$work/err")"
(cd "$mdir" && "$cli" jobs dcgm_jobs.csv --metrics "$work/badm.csv" --stats --skip-bad) > /dev/null 2>&1 &&
  ok "bad metrics lines with --skip-bad: exit 0" || fail "--skip-bad with metrics"

echo "$fails failure(s)"
exit $((fails > 0))
