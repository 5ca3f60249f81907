#!/usr/bin/env bash
# Other tools' traces read by every subcommand: the same synthetic run as a gpuhook capture, a
# torch.profiler/Kineto trace (plain and gzip'd) and an Nsight Systems SQLite export
# (gpuhook_trace_gen, fabricated data) gives the same figures; bad files exit 2 naming the file
# and the byte offset (or table and row).
#   foreign_trace_test.sh GANTT_CLI TRACE_GEN
set -uo pipefail
cli="$1"
gen="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
fail=0
check() {  # check WHAT COMMAND...: the command must succeed
  local what="$1"; shift
  "$@" >out.txt 2>err.txt
  local got=$?
  if [ "$got" -ne 0 ]; then
    echo "FAIL: $what: exit $got from: $*"; sed 's/^/  /' err.txt out.txt | head -20; fail=1
  fi
}
expect_exit() {  # expect_exit CODE WHAT COMMAND...
  local code="$1" what="$2"; shift 2
  "$@" >out.txt 2>err.txt
  local got=$?
  if [ "$got" -ne "$code" ]; then
    echo "FAIL: $what: exit $got, expected $code, from: $*"; sed 's/^/  /' err.txt out.txt | head -20; fail=1
  fi
}
contains() {  # contains WHAT FILE TEXT
  if ! grep -qF -- "$3" "$2"; then echo "FAIL: $1: '$3' not in $2:"; sed 's/^/  /' "$2" | head -20; fail=1; fi
}

"$gen" gpuh run.gpuh --steps 8 || exit 1
"$gen" kineto run.json --steps 8 || exit 1
"$gen" kineto-gz run.json.gz --steps 8 || exit 1
"$gen" nsys run.sqlite --steps 8 || exit 1
# Named by content, never by extension: a gzip'd trace under a name that says nothing.
cp run.json.gz trace.bin

# --- the same figures from every format ------------------------------------------------------
check "stats of the capture" "$cli" stats run.gpuh --format csv
sed 1d out.txt >stats.gpuh.csv
for f in run.json run.json.gz trace.bin run.sqlite; do
  check "stats of $f" "$cli" stats "$f" --format csv
  sed 1d out.txt >"stats.$f.csv"
  if ! cmp -s stats.gpuh.csv "stats.$f.csv"; then
    echo "FAIL: stats of $f differ from the capture's:"; diff stats.gpuh.csv "stats.$f.csv" | head -20; fail=1
  fi
done
check "stats --summary of the Kineto trace" "$cli" stats run.json.gz --summary -o run.gsum
check "diagnose of its summary" "$cli" diagnose run.gsum
contains "diagnose of the summary" out.txt "copy-overlap"
check "stats by wait of the Kineto trace" "$cli" stats run.json.gz --by wait
contains "stats by wait blames the format, not a hook setting" out.txt "torch.profiler (Kineto) JSON traces have no queued stamps"
check "stats by memory of the nsys export" "$cli" stats run.sqlite --by memory
contains "stats by memory blames the format" out.txt "not read from Nsight Systems SQLite exports"
check "stats by range of the Kineto trace" "$cli" stats run.json.gz --by range
contains "stats by range" out.txt "forward"

# --- busy, idle and span per device, hand-computed: the union of GPU activity over the window
# from the device's first activity to its last (HTA's temporal breakdown uses the same) --------
cat >busy.json <<'JSON'
{"traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 7, "ts": 10.000, "dur": 10.000, "args": {"device": 0, "stream": 7, "correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 8, "ts": 15.500, "dur": 14.750, "args": {"device": 0, "stream": 8, "correlation": 2}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "pid": 0, "tid": 7, "ts": 40.001, "dur": 0.999, "args": {"device": 0, "stream": 7, "correlation": 3, "bytes": 8}},
  {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 41.000, "dur": 0.500, "args": {"device": 0, "stream": 7, "correlation": 4, "bytes": 8}},
  {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 41.000, "dur": 90.000, "args": {"stream": 7, "device": 0, "correlation": 5}},
  {"ph": "X", "cat": "gpu_user_annotation", "name": "step", "pid": 0, "tid": 7, "ts": 0.000, "dur": 200.000, "args": {}},
  {"ph": "X", "cat": "kernel", "name": "c", "pid": 1, "tid": 7, "ts": 5.000, "dur": 1.000, "args": {"device": 1, "stream": 7, "correlation": 6}}
]}
JSON
check "stats of the hand-computed trace" "$cli" stats busy.json --format json
python3 - out.txt <<'PY' || fail=1
import json, sys
devices = {d["ordinal"]: d for d in json.load(open(sys.argv[1]))["devices"]}
# gpu0: [10, 30.25) and [40.001, 41.5) µs; the sync and the annotation are not GPU work.
want = {0: (21749, 31500, 9751), 1: (1000, 1000, 0)}
for ordinal, (busy, span, idle) in want.items():
    d = devices[ordinal]
    got = (d["busy_ns"], d["span_ns"], d["idle_ns"])
    if got != (busy, span, idle):
        print(f"FAIL: gpu{ordinal} busy/span/idle {got}, expected {(busy, span, idle)}")
        sys.exit(1)
PY

# --- every subcommand on each format ---------------------------------------------------------
for f in run.json.gz run.sqlite; do
  check "info $f" "$cli" info "$f"
  contains "info $f" out.txt "queued and submitted times are unknown"
  contains "info $f names its own format" out.txt "bytes; read as a gpuhook v"
  check "dump $f" "$cli" dump "$f"
  for ext in png svg pdf html; do
    check "render $f to $ext" "$cli" render "$f" -o "chart-$f.$ext"
    [ -s "chart-$f.$ext" ] || { echo "FAIL: render $f to $ext wrote nothing"; fail=1; }
  done
  check "render --view steps $f" "$cli" render "$f" --view steps -o "steps-$f.svg"
  check "diagnose $f" "$cli" diagnose "$f"
  contains "diagnose $f" out.txt "cudaMemcpy"
  contains "diagnose $f says what the trace lacks" out.txt "memory-peak: needs allocation records, which are not read from"
  for fmt in csv sqlite folded chrome; do
    check "export $f as $fmt" "$cli" export "$f" -f "$fmt" -o "export-$f.$fmt"
  done
  check "whatif $f" "$cli" whatif "$f" --change pin-copies --pinned-gbps 25 -o "whatif-$f.gpuh"
done
grep -qF "queued and submitted times are unknown" chart-run.json.gz.svg ||
  { echo "FAIL: the chart's footer does not say queued is unknown"; fail=1; }

# --- diff: the noise-aware gate on the traces people have --------------------------------------
"$gen" kineto-gz other.json.gz --steps 8 --seed 2 || exit 1
"$gen" kineto-gz slow.json.gz --steps 8 --seed 3 --slow-ns 40000 || exit 1
"$gen" nsys slow.sqlite --steps 8 --seed 3 --slow-ns 40000 || exit 1
expect_exit 0 "diff of two runs of the same program" "$cli" diff run.json.gz other.json.gz
expect_exit 1 "diff against a slower gemm" "$cli" diff run.json.gz slow.json.gz
contains "diff names the gemm" out.txt "gemm"
expect_exit 0 "diff of a Kineto trace against a capture of the same program" "$cli" diff run.json.gz run.gpuh
expect_exit 1 "diff of nsys exports" "$cli" diff run.sqlite slow.sqlite

# --- merge: the ranks of one job --------------------------------------------------------------
"$gen" kineto-gz rank0.json.gz --steps 4 --rank 0 --world 2 || exit 1
"$gen" kineto-gz rank1.json.gz --steps 4 --rank 1 --world 2 || exit 1
check "merge two ranks" "$cli" merge rank0.json.gz rank1.json.gz -o merged.gpuh
contains "merge matches the ranks' all-reduces" out.txt "4 shared collectives"
check "info of the merged ranks" "$cli" info merged.gpuh
# Rank 1 reaches each all-reduce 30 us after rank 0: 4 x 30 us of waiting.
check "stats by collective of two ranks" "$cli" stats rank0.json.gz rank1.json.gz --by collective --format csv
python3 - out.txt <<'PY' || fail=1
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
if len(rows) != 1 or rows[0]["count"] != "4" or abs(float(rows[0]["wait_us"]) - 120.0) > 1e-9:
    print(f"FAIL: stats by collective: {rows}")
    sys.exit(1)
PY
check "diagnose of two ranks" "$cli" diagnose rank0.json.gz rank1.json.gz
check "diagnose of one rank with collectives" "$cli" diagnose rank0.json.gz
check "render --view comm of two ranks" "$cli" render rank0.json.gz rank1.json.gz --view comm -o comm.svg

# --- odd but valid input: read, never a crash or a hang -------------------------------------------
# 100,000 distinct kernel names on one line; 20,000 nested annotations; a kernel whose
# correlation points nowhere; the same flow three times.
python3 - <<'PY'
import json
ev = [{"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7, "ts": i, "dur": 0.5,
       "args": {"device": 0, "stream": 7, "correlation": i}} for i in range(100000)]
open("names.json", "w").write(json.dumps({"traceEvents": ev}, separators=(",", ":")))
ev = [{"ph": "X", "cat": "user_annotation", "name": f"r{i}", "pid": 1, "tid": 2, "ts": i * 0.001,
       "dur": 100000 - i * 0.002} for i in range(20000)]
ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 50, "dur": 1,
           "args": {"correlation": 1}})
ev.append({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 52, "dur": 1,
           "args": {"device": 0, "stream": 7, "correlation": 1}})
ev.append({"ph": "X", "cat": "kernel", "name": "orphan", "pid": 0, "tid": 7, "ts": 60, "dur": 1,
           "args": {"device": 0, "stream": 7, "correlation": 424242}})
ev += [{"ph": "s", "id": 1, "pid": 1, "tid": 2, "ts": 50, "cat": "ac2g", "name": "ac2g"}] * 3
ev += [{"ph": "f", "id": 1, "pid": 0, "tid": 7, "ts": 52, "cat": "ac2g", "name": "ac2g", "bp": "e"}] * 3
open("odd.json", "w").write(json.dumps({"traceEvents": ev}, separators=(",", ":")))
PY
check "info of 100,000 kernel names on one line" "$cli" info names.json
contains "info counts every kernel" out.txt "100000"
check "render of 100,000 kernel names" "$cli" render names.json -o names.png
check "stats of nested annotations, an orphan and duplicate flows" "$cli" stats odd.json --format csv
contains "the orphan kernel is counted" out.txt "orphan"
check "render of nested annotations" "$cli" render odd.json -o odd.svg
check "diagnose of nested annotations" "$cli" diagnose odd.json

# --- bad input: exit 2, the file and the byte offset, never a crash ----------------------------
head -c 3000 run.json.gz >truncated.json.gz
head -c 2500 run.json >cut.json
printf '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": NaN, "dur": 1}]}' >nan.json
printf '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": -1}]}' >neg.json
printf '{"schemaVersion": 1}' >notrace.json
printf 'hello, world\n' | gzip >notjson.gz
python3 -c "import sqlite3; c = sqlite3.connect('empty.sqlite'); c.execute('create table t(x)'); c.commit()"
for f in truncated.json.gz cut.json nan.json neg.json notrace.json notjson.gz empty.sqlite; do
  for sub in info stats render; do
    args=("$f")
    [ "$sub" = render ] && args+=(-o "bad-$f.png")
    expect_exit 2 "$sub of $f" "$cli" "$sub" "${args[@]}"
    contains "$sub of $f names the file" err.txt "$f"
    if grep -q "Segmentation\|Aborted\|terminate called" err.txt; then echo "FAIL: $sub $f crashed"; fail=1; fi
  done
done
"$cli" stats cut.json >/dev/null 2>err.txt
contains "a cut JSON says where" err.txt "byte"
printf 'hello\n' >plain.txt
expect_exit 2 "stats of a text file" "$cli" stats plain.txt
contains "a text file is named as none of the formats" err.txt "not a gpuhook capture (wrong magic), nor a torch.profiler/Kineto JSON trace"

exit $fail
