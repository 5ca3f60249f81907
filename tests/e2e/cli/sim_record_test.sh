#!/usr/bin/env bash
# gantt-cli record on a real program under the real hook (on the simulator): the capture is
# written where -o says and named on stderr, the exit code is the program's, and --render
# draws it.
#   sim_record_test.sh SIM_LIB_DIR HOOK_LIB GANTT_CLI EXAMPLE DEVICE_QUERY
set -u
sim_lib=$1 hook=$2 cli=$3 example=$4 device_query=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH=$sim_lib GPUHOOK_LIB=$hook GPUHOOK_QUIET=1
fails=0
err=$("$cli" record -o "$work/run-%p.gpuh" --render "$work/chart.svg" -- "$example" --iterations 1 --size 4096 2>&1 >/dev/null)
rc=$?
[[ $rc == 0 ]] || { echo "FAIL: exit $rc: $err"; fails=$((fails + 1)); }
capture=$(ls "$work"/run-*.gpuh 2>/dev/null | head -1)
[[ -n "$capture" && "$err" == *"capture $capture"* ]] && echo "ok   capture written and named" ||
  { echo "FAIL: capture not named: $err"; fails=$((fails + 1)); }
grep -q "<svg" "$work/chart.svg" 2>/dev/null && echo "ok   --render drew the capture" || { echo "FAIL: no chart: $err"; fails=$((fails + 1)); }
n=$("$cli" stats "$capture" --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')
[[ "$n" -gt 0 ]] && echo "ok   the capture holds $n GPU activities" || { echo "FAIL: empty capture"; fails=$((fails + 1)); }
"$cli" record -o "$work/bad-%p.gpuh" -- "$example" --no-such-flag >/dev/null 2>&1
rc=$?
[[ $rc == 2 ]] && echo "ok   the program's exit code (2, bad arguments) passes through" || { echo "FAIL: exit $rc, expected 2"; fails=$((fails + 1)); }
# The Chrome export keeps every host API record (a slice named cu* or __cu* on the host's process), also those before the first kernel and after
# the last (set-up, allocation, teardown), when no window was asked for.
api_records=$("$cli" dump "$capture" --kind api | wc -l)
api_slices=$("$cli" export "$capture" --format chrome -o - 2>/dev/null |
  python3 -c 'import json,sys
d = json.load(sys.stdin)
host = {e["pid"] for e in d["traceEvents"] if e.get("ph") == "M" and e.get("name") == "process_name" and e["args"]["name"].startswith("host")}
print(sum(1 for e in d["traceEvents"] if e.get("ph") == "X" and e.get("pid") in host and e["name"].lstrip("_").startswith("cu")))')
[[ $api_records -gt 0 && $api_slices == "$api_records" ]] && echo "ok   chrome export: all $api_records API calls" ||
  { echo "FAIL: chrome export has $api_slices API slices of $api_records API records"; fails=$((fails + 1)); }

# The hook's one exit line: its counts by kind add up to its total, and it names every kind it
# counts as info names it, with info's count (no lump of "context").
line=$(env -u GPUHOOK_QUIET LD_PRELOAD=$hook GPUHOOK_OUTPUT="$work/exit-%p.gpuh" "$example" --iterations 1 --size 4096 2>&1 >/dev/null |
  grep '^gpuhook: .* records (')
"$cli" info --format json "$work"/exit-*.gpuh > "$work/exit-info.json" 2>/dev/null || true
if python3 - "$line" "$work/exit-info.json" <<'PY'
import json, re, sys
m = re.search(r": (\d+) records \((.*?)\), \d+ bytes", sys.argv[1])
parts = [p.split(" ", 1) for p in re.split(r", (?=\d)", m.group(2))] if m else []
named = {kind: int(n) for n, kind in parts}
info = json.load(open(sys.argv[2]))
info = info[0] if isinstance(info, list) else info
sys.exit(0 if m and sum(named.values()) == int(m.group(1)) and named == info["records_by_kind"] else 1)
PY
then echo "ok   the exit line names every kind with info's counts: ${line#gpuhook: }"; else echo "FAIL: exit line counts: $line, info: $(cat "$work/exit-info.json")"; fails=$((fails + 1)); fi

# A program that only queries its devices still gets a capture with their device records.
"$cli" record -q -o "$work/dq-%p.gpuh" -- "$device_query" >/dev/null 2>&1
rc=$?
dq=$(ls "$work"/dq-*.gpuh 2>/dev/null | head -1)
[[ $rc == 0 && -n "$dq" && $("$cli" dump "$dq" --kind device 2>/dev/null | wc -l) -ge 1 ]] &&
  echo "ok   a device-only program: a capture with its device record" || { echo "FAIL: device-only program: rc $rc, capture '$dq'"; fails=$((fails + 1)); }

# Nothing recorded: a capture range that never opens gives exit 3 and the names that were
# pushed; a failing program's own code still passes through.
mkdir "$work/never"
"$cli" record -q -o "$work/never/r-%p.gpuh" --range nvtx:no_such_range -- "$example" --iterations 1 --size 4096 >/dev/null 2> "$work/never.err"
rc=$?
[[ $rc == 3 ]] && grep -q "capture range 'nvtx:no_such_range' never opened: 'no_such_range' was pushed 0 times" "$work/never.err" &&
  echo "ok   a range that never opened: exit 3, and why" || { echo "FAIL: never-opened range: rc $rc: $(cat "$work/never.err")"; fails=$((fails + 1)); }
"$cli" record -q -o "$work/never/f-%p.gpuh" --range nvtx:no_such_range -- sh -c "\"$example\" --iterations 1 --size 4096 >/dev/null; exit 5" 2>/dev/null
rc=$?
[[ $rc == 5 ]] && echo "ok   the program's failure (5) passes through, nothing recorded or not" || { echo "FAIL: exit $rc, expected 5"; fails=$((fails + 1)); }
# Found before the program starts: an output directory that does not exist, a fixed name that does.
"$cli" record -o "$work/missing/r.gpuh" -- sh -c "touch \"$work/ran\"" 2> "$work/dir.err"
rc=$?
[[ $rc == 2 && ! -e "$work/ran" ]] && grep -q "does not exist" "$work/dir.err" && echo "ok   missing output directory: exit 2, program not started" ||
  { echo "FAIL: missing directory: rc $rc: $(cat "$work/dir.err")"; fails=$((fails + 1)); }
touch "$work/fixed.gpuh"
"$cli" record -o "$work/fixed.gpuh" -- sh -c "touch \"$work/ran\"" 2> "$work/fixed.err"
rc=$?
[[ $rc == 2 && ! -e "$work/ran" ]] && grep -q "never overwrites" "$work/fixed.err" && echo "ok   existing fixed output: exit 2, program not started" ||
  { echo "FAIL: existing output: rc $rc: $(cat "$work/fixed.err")"; fails=$((fails + 1)); }

# The scheduler's job id: recorded in the header, matched by `jobs --captures`, found by
# `render --job` among other captures.
mkdir "$work/caps"
SLURM_JOB_ID=4242 "$cli" record -o "$work/caps/slurm-%p.gpuh" -- "$example" --iterations 1 --size 4096 >/dev/null 2>&1
mv "$work"/run-*.gpuh "$work/caps/"
"$cli" info "$work"/caps/slurm-*.gpuh | grep -q 'job "4242"' && echo "ok   the header records SLURM_JOB_ID" ||
  { echo "FAIL: no job id in: $("$cli" info "$work"/caps/slurm-*.gpuh | head -5)"; fails=$((fails + 1)); }
printf 'job,name,user,partition,submit,start,end,state,nodes,gpus\n4242,train,u,gpu,2024-03-01T00:00:00,2024-03-01T00:00:00,2024-03-01T01:00:00,COMPLETED,n1,1\n' > "$work/jobs.csv"
err=$("$cli" jobs "$work/jobs.csv" --captures "$work/caps" -o "$work/jobs.svg" 2>&1)
[[ "$err" == *"1 of 2 captures matched"* ]] && grep -q '<a href="[^"]*slurm-[0-9]*.gpuh">' "$work/jobs.svg" &&
  echo "ok   jobs --captures links the job's bar to its capture" || { echo "FAIL: jobs --captures: $err"; fails=$((fails + 1)); }
err=$("$cli" render --job 4242 "$work/caps" -o "$work/job.svg" 2>&1)
[[ "$err" == *"job 4242: 1 capture(s)"* ]] && grep -q "<svg" "$work/job.svg" && echo "ok   render --job finds the job's capture" ||
  { echo "FAIL: render --job: $err"; fails=$((fails + 1)); }
"$cli" render --job 9999 "$work/caps" -o "$work/none.svg" >/dev/null 2>&1
[[ $? == 2 ]] && echo "ok   render --job with no capture of that job: exit 2" || { echo "FAIL: render --job 9999"; fails=$((fails + 1)); }
exit $((fails > 0))
