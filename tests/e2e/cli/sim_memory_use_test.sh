#!/usr/bin/env bash
# GPUHOOK_MEM_USE end to end: memory_phases under the hook on the simulator, with the addresses
# each launch, copy and memset is given recorded. The program runs as without the hook (its
# output, exit code and cudaGetLastError: the hook's parameter queries must leave no error
# behind); the loader gives each use to its allocation; stats says when each allocation live at
# the peak was last used; diagnose memory-idle names the initial-weights table, held unused
# after initialisation, and not the weights, used every step.
#   sim_memory_use_test.sh SIM_LIB_DIR HOOK_LIB GANTT_CLI MEMORY_PHASES
set -euo pipefail
sim_lib=$1 hook=$2 cli=$3 example=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH=$sim_lib GPUHOOK_QUIET=1
args=(--iterations 3 --size 16384)
"$example" "${args[@]}" > "$work/plain.out"
GPUHOOK_MEM_USE=1 GPUHOOK_OUTPUT="$work/m.gpuh" LD_PRELOAD=$hook "$example" "${args[@]}" > "$work/hooked.out"
cmp -s "$work/plain.out" "$work/hooked.out" || { echo "FAIL: the program's output changed under the hook"; diff "$work/plain.out" "$work/hooked.out"; exit 1; }
n=$("$cli" dump "$work/m.gpuh" --kind memory_use | grep -c . || true)
(( n > 0 )) || { echo "FAIL: no memory_use records"; exit 1; }
"$cli" stats "$work/m.gpuh" --by memory --format json > "$work/mem.json"
python3 - "$work/mem.json" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
peak = d["peak_ns"]
by = {}
for a in d["at_peak"]:
    by.setdefault(a["category"], []).append(a)
def fail(msg):
    print("FAIL:", msg, json.dumps(d["at_peak"], indent=1)); sys.exit(1)
init = by.get("init")
if not init or len(init) != 1: fail("the init table is not among the largest allocations at the peak")
init = init[0]
# 16 init_weights launches, each given its own slice of the table, and the upload into it.
if init["uses"] < 16: fail("init used %d times, expected at least 16" % init["uses"])
if not 0 < init["last_use_ns"] < peak: fail("init last used at %d, not before the peak %d" % (init["last_use_ns"], peak))
acts = by.get("activations", [])
if not acts or any(a["uses"] == 0 or a["last_use_ns"] <= peak for a in acts):
    fail("an activation at the peak is not used after it (the backward pass reads each)")
if d["unused_after_peak_bytes"] < 16 * 65536: fail("unused after peak %d < the table's 1 MiB" % d["unused_after_peak_bytes"])
PY
"$cli" diagnose "$work/m.gpuh" > "$work/diagnose.txt" || true
grep -q "WARNING \[memory-idle\] gpu0: 1.0 MiB of the .* memory peak (.*) is held by 1 allocation that nothing used from then on" "$work/diagnose.txt" &&
  grep -q "1.0 MiB (init) allocated at .*, last used at .* by init_weights(float const\*, float\*, long long)" "$work/diagnose.txt" ||
  { echo "FAIL: memory-idle does not name the init table"; cat "$work/diagnose.txt"; exit 1; }
# Without GPUHOOK_MEM_USE: no records, and the rule says how to get them.
GPUHOOK_OUTPUT="$work/off.gpuh" LD_PRELOAD=$hook "$example" "${args[@]}" > /dev/null
[[ $("$cli" dump "$work/off.gpuh" --kind memory_use | grep -c . || true) == 0 ]] || { echo "FAIL: memory_use records without GPUHOOK_MEM_USE"; exit 1; }
# To a file, then grep: `diagnose | grep -q` fails under pipefail when grep stops reading first
# and diagnose, still writing, dies of SIGPIPE (seen on a loaded machine).
"$cli" diagnose "$work/off.gpuh" > "$work/off_diagnose.txt" || true
grep -q "memory-idle: which allocations calls were given was not recorded (GPUHOOK_MEM_USE=1 records it)" "$work/off_diagnose.txt" ||
  { echo "FAIL: memory-idle does not say the uses were not recorded"; exit 1; }
# stats --by memory reads one capture by a scan (its memory records, ranges and allocating
# calls): under a 1 KiB --max-memory, where no load is allowed, the same report as a load's, in
# every format, with and without the uses, and with a filter.
for f in m off; do
  for format in text json csv md; do
    "$cli" stats "$work/$f.gpuh" --by memory --format "$format" --max-memory 1K > "$work/scan.out" 2> "$work/scan.err" ||
      { echo "FAIL: stats $f --by memory --format $format under --max-memory 1K"; cat "$work/scan.err"; exit 1; }
    "$cli" stats "$work/$f.gpuh" --by memory --format "$format" --in-memory > "$work/load.out" 2> "$work/load.err"
    cmp -s "$work/scan.out" "$work/load.out" && cmp -s "$work/scan.err" "$work/load.err" ||
      { echo "FAIL: stats $f --by memory --format $format: scanned and loaded differ"; diff "$work/scan.out" "$work/load.out" | head; exit 1; }
  done
done
# With a filter it scans too: the report reads no GPU events, and the filter only counts those it
# selects (stderr), as a load's restriction does.
for filter in "--device 0" "--from 1ms --to 3ms" "--kernel nothing_matches"; do
  # shellcheck disable=SC2086 # the filter's words
  "$cli" stats "$work/m.gpuh" --by memory $filter --max-memory 1K > "$work/scan.out" 2> "$work/scan.err" ||
    { echo "FAIL: stats --by memory $filter was not scanned"; cat "$work/scan.err"; exit 1; }
  # shellcheck disable=SC2086
  "$cli" stats "$work/m.gpuh" --by memory $filter --in-memory > "$work/load.out" 2> "$work/load.err"
  cmp -s "$work/scan.out" "$work/load.out" && cmp -s "$work/scan.err" "$work/load.err" ||
    { echo "FAIL: stats --by memory $filter: scanned and loaded differ"; diff "$work/scan.out" "$work/load.out" | head; diff "$work/scan.err" "$work/load.err"; exit 1; }
  grep -q "GPU events" "$work/scan.err" || { echo "FAIL: $filter: no count of the events it selected"; cat "$work/scan.err"; exit 1; }
done
# diagnose scans the uses too: memory-idle's finding, the table's last use named by its kernel
# (read once more by its correlation id), is the load's, under a 1 KiB --max-memory. Under a
# filter the last use is named only when the filter selects it, as a load restricted to the
# filter names only the operations it keeps: with the table's kernel selected and without.
named=0 unnamed=0
for filter in "--device 0" "--kernel init_weights" "--kernel backward" "--from 0s --to 1us" "--stream 0" "--device 1"; do
  # shellcheck disable=SC2086 # the filter's words
  "$cli" diagnose "$work/m.gpuh" $filter --max-memory 1K > "$work/scan.out" 2> "$work/scan.err" ||
    [[ $? == 1 ]] || { echo "FAIL: diagnose $filter was not scanned"; cat "$work/scan.err"; exit 1; }
  # shellcheck disable=SC2086
  "$cli" diagnose "$work/m.gpuh" $filter --in-memory > "$work/load.out" 2> "$work/load.err" || true
  cmp -s "$work/scan.out" "$work/load.out" && cmp -s "$work/scan.err" "$work/load.err" ||
    { echo "FAIL: diagnose $filter: scanned and loaded differ"; diff "$work/scan.out" "$work/load.out" | head; diff "$work/scan.err" "$work/load.err"; exit 1; }
  if grep -q "last used at .* by init_weights" "$work/scan.out"; then named=$((named + 1))
  elif grep -q "1.0 MiB (init) allocated at .*, last used at " "$work/scan.out"; then unnamed=$((unnamed + 1)); fi
done
(( named >= 1 && unnamed >= 1 )) ||
  { echo "FAIL: the filters named the table's last use $named times and left it unnamed $unnamed times (each at least once)"; exit 1; }
for f in m off; do
  for format in text json; do
    "$cli" diagnose "$work/$f.gpuh" --format "$format" --max-memory 1K > "$work/scan.out" 2> "$work/scan.err" ||
      { echo "FAIL: diagnose $f --format $format under --max-memory 1K"; cat "$work/scan.err"; exit 1; }
    "$cli" diagnose "$work/$f.gpuh" --format "$format" --in-memory > "$work/load.out" 2> "$work/load.err"
    cmp -s "$work/scan.out" "$work/load.out" && cmp -s "$work/scan.err" "$work/load.err" ||
      { echo "FAIL: diagnose $f --format $format: scanned and loaded differ"; diff "$work/scan.out" "$work/load.out" | head; exit 1; }
    cp "$work/scan.out" "$work/diagnose_$f.$format"
  done
done
grep -q "by init_weights(float const\*, float\*, long long)" "$work/diagnose_m.text" ||
  { echo "FAIL: the scanned memory-idle does not name the table's last use"; cat "$work/diagnose_m.text"; exit 1; }
echo "ok: $n memory_use records; memory-idle names the init table; stats --by memory and diagnose scanned as loaded ($named filters named its last use, $unnamed did not)"
