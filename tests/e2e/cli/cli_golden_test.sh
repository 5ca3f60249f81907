#!/usr/bin/env bash
# gantt-cli stats/diff/diagnose/export: golden outputs on fabricated captures, exit codes,
# and clear errors for bad flags and bad files.
#   cli_golden_test.sh GANTT_CLI MAKE_CAPTURE          # compare with golden/
#   UPDATE_GOLDEN=1 cli_golden_test.sh GANTT_CLI MAKE_CAPTURE   # rewrite golden/ on purpose
set -u
cli=$1
make_capture=$2
golden=$(cd "$(dirname "$0")" && pwd)/golden
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

"$make_capture" steps base.gpuh 1 1.0 || exit 2
"$make_capture" steps same.gpuh 2 1.0 || exit 2
"$make_capture" steps slow.gpuh 3 1.1 || exit 2
"$make_capture" hostile hostile.gpuh || exit 2
"$make_capture" metrics metrics.gpuh || exit 2
"$make_capture" pm_metrics pm.gpuh || exit 2
"$make_capture" hostile_metrics hostile_metrics.gpuh || exit 2

# golden NAME EXPECTED_EXIT CMD...: stdout must equal golden/NAME, exit code must match.
golden() {
  local name=$1 want=$2
  shift 2
  "$@" > "out.$name" 2> "err.$name"
  local rc=$?
  [[ $rc == "$want" ]] || fail "$name: exit $rc, expected $want ($(head -c 300 "err.$name"))"
  if [[ "${UPDATE_GOLDEN:-0}" == 1 ]]; then
    cp "out.$name" "$golden/$name"
  elif ! cmp -s "out.$name" "$golden/$name"; then
    fail "$name: output differs from golden/$name"
    diff "$golden/$name" "out.$name" | head -20
  else
    echo "ok   $name"
  fi
}

# errexit NAME EXPECTED_EXIT PATTERN CMD...: exit code and a clear one-line message.
errexit() {
  local name=$1 want=$2 pattern=$3
  shift 3
  local err
  err=$("$@" 2>&1 >/dev/null)
  local rc=$?
  if [[ $rc != "$want" ]]; then fail "$name: exit $rc, expected $want"; return; fi
  if [[ "$err" != *$pattern* ]]; then fail "$name: message [$err] lacks [$pattern]"; return; fi
  echo "ok   $name"
}
golden stats.txt 0 "$cli" stats base.gpuh
golden stats_range.md 0 "$cli" stats base.gpuh --by range --format md
# The filter flags mean the same in stats, diagnose, diff and export: one step's GPU events.
n_stats=$("$cli" stats base.gpuh --range step@3 --format json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')
n_export=$("$cli" export base.gpuh --range step@3 --format csv 2>/dev/null | grep -vc ',api,\|,nvtx,\|^capture,')
n_all=$("$cli" stats base.gpuh --format json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')
[[ $n_stats == "$n_export" && $n_stats -gt 0 && $n_stats -lt $n_all ]] && echo "ok   stats --range counts what export --range writes ($n_stats of $n_all)" ||
  fail "stats --range: $n_stats events, export --range: $n_export, all: $n_all"
# '-' reads a capture from standard input, the same as from the file.
"$cli" stats - < base.gpuh > stdin.txt 2>/dev/null && cmp -s stdin.txt "$golden/stats.txt" && echo "ok   stats - (stdin) = stats FILE" ||
  fail "stats - differs from the golden stats.txt"
"$cli" dump - --limit 3 < base.gpuh > stdin_dump.txt 2>/dev/null && [[ $(wc -l < stdin_dump.txt) == 3 ]] && echo "ok   dump - reads stdin" ||
  fail "dump -"
errexit stdin_empty 2 "no header" "$cli" stats - < /dev/null
errexit diagnose_unknown_range 2 "range(s) named 'nostep'" "$cli" diagnose base.gpuh --range nostep@1
"$cli" diff base.gpuh slow.gpuh --range step@2 --format json > diff_range.json 2> diff_range.err
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["kernels"] and all(k["count"][0] <= 10 and k["count"][1] <= 10 for k in d["kernels"]) else 1)' diff_range.json 2>/dev/null &&
  grep -q "diff: .* of .* GPU events (range step@2)" diff_range.err && echo "ok   diff --range: one step on each side" ||
  fail "diff --range: $(head -c 300 diff_range.err)"
golden stats_stream.csv 0 "$cli" stats base.gpuh --by stream --format csv
golden stats.json 0 "$cli" stats base.gpuh --format json --top 2
golden stats_hostile.txt 0 "$cli" stats hostile.gpuh
golden stats_hostile.json 0 "$cli" stats hostile.gpuh --format json
golden diff_same.txt 0 "$cli" diff base.gpuh same.gpuh
golden diff_slow.txt 1 "$cli" diff base.gpuh slow.gpuh
golden diff_slow.json 1 "$cli" diff base.gpuh slow.gpuh --format json
golden diff_slow_loose.md 0 "$cli" diff base.gpuh slow.gpuh --threshold 20% --format md

golden diagnose_hostile.txt 0 "$cli" diagnose hostile.gpuh
golden diagnose.json 0 "$cli" diagnose base.gpuh --format json
golden folded.txt 0 "$cli" export base.gpuh --format folded -o -
golden folded_hostile.txt 0 "$cli" export hostile.gpuh --format folded -o -
golden stats_metrics.txt 0 "$cli" stats metrics.gpuh --metrics
golden stats_metrics.json 0 "$cli" stats metrics.gpuh --metrics --format json
# --metrics scans (the samples held, the kernels marked on them) and a load says the same.
golden stats_metrics.txt 0 "$cli" stats metrics.gpuh --metrics --in-memory
golden stats_metrics.json 0 "$cli" stats metrics.gpuh --metrics --format json --in-memory
golden stats_metrics.txt 0 "$cli" stats metrics.gpuh --metrics --max-memory 1K
golden diagnose_metrics.txt 0 "$cli" diagnose metrics.gpuh
# The throttle stretch is judged by a scan too (its kernels read once more), the same finding;
# and by device, stream and kernel, as the load restricted to them judges it.
golden diagnose_metrics.txt 0 "$cli" diagnose metrics.gpuh --max-memory 1K
golden diagnose_metrics.txt 0 "$cli" diagnose metrics.gpuh --in-memory
for flags in "--device 0" "--kernel gemm" "--kernel nothing_matches" "--device 1"; do
  # shellcheck disable=SC2086  # the flags are words
  "$cli" diagnose metrics.gpuh $flags --max-memory 1K >scanned.txt 2>scanned.err || true
  # shellcheck disable=SC2086
  "$cli" diagnose metrics.gpuh $flags --in-memory >loaded.txt 2>loaded.err || true
  cmp -s scanned.txt loaded.txt && cmp -s scanned.err loaded.err ||
    fail "diagnose metrics.gpuh $flags: scanned differs from --in-memory: $(diff scanned.txt loaded.txt | head -5) $(cat scanned.err)"
done
golden metrics.csv 0 "$cli" export metrics.gpuh --format metrics-csv -o -
# PM sampling's counters: their columns in stats --metrics, the stalled finding, the exports.
golden stats_pm_metrics.txt 0 "$cli" stats pm.gpuh --metrics
golden stats_pm_metrics.txt 0 "$cli" stats pm.gpuh --metrics --in-memory
golden diagnose_pm_metrics.txt 0 "$cli" diagnose pm.gpuh
golden pm_metrics.csv 0 "$cli" export pm.gpuh --format metrics-csv -o -
"$cli" export pm.gpuh --format chrome -o pm.json || fail "export chrome pm"
python3 - pm.json <<'PY' || fail "chrome export of pm.gpuh: no SM active counter track"
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"] if isinstance(d, dict) else d
names = {e.get("name") for e in ev if e.get("ph") == "C"}
assert any("SM active" in (n or "") for n in names), names
assert any("DRAM rd" in (n or "") for n in names), names
PY
"$cli" render pm.gpuh --view utilisation -o pm_util.svg || fail "render --view utilisation pm"
grep -q "SM active, PM sampling" pm_util.svg || fail "utilisation view of pm.gpuh: no SM active line"
"$cli" render pm.gpuh -o pm_gantt.svg || fail "render pm"
grep -q "SM active (PM)" pm_gantt.svg || fail "Gantt chart of pm.gpuh: no SM active strip"
# Extreme metric values: every reader exits 0 (or 2 with a message), never crashes.
for cmd in "stats --metrics" "stats --metrics --format json" "diagnose" "export --format metrics-csv -o -" \
           "export --format chrome -o hm.json" "render -o hm.svg" "render --view utilisation -o hmu.svg" \
           "render -o hm.png"; do
  # shellcheck disable=SC2086
  "$cli" $cmd hostile_metrics.gpuh >/dev/null 2>hm.err
  rc=$?
  if [[ $rc != 0 && $rc != 2 ]]; then fail "hostile metrics: $cmd exit $rc: $(head -c 300 hm.err)"; fi
done
python3 - hostile_metrics.gpuh <<'PY' "$cli" || fail "hostile metrics: stats --metrics json not sane"
import json, subprocess, sys
out = subprocess.run([sys.argv[2], "stats", sys.argv[1], "--metrics", "--format", "json"], capture_output=True, text=True)
d = json.loads(out.stdout)
for row in d["metrics"]:
    for k, v in row.items():
        if k.endswith("_pct") and k not in ("throttled_pct", "gpu_util_pct", "memory_util_pct"):
            assert 0 <= v <= 100, (k, v)
PY
echo "ok   hostile metrics"

# Chrome traces: parse in python and node, no partial overlaps on a track, flows paired,
# integer-ns timestamps; hostile names included.
checker=$(dirname "$golden")/../../unit/gantt_analysis/check_chrome_trace.py
for f in base hostile; do
  "$cli" export "$f.gpuh" --format chrome -o "$f.json" || fail "export chrome $f"
  python3 "$checker" "$f.json" >/dev/null || fail "chrome trace of $f does not check: $(python3 "$checker" "$f.json" | head -3)"
  if command -v node >/dev/null; then
    node -e 'JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))' "$f.json" || fail "node cannot parse $f.json"
  fi
done
echo "ok   chrome exports check"

# Flame graph and diff charts: well-formed SVG with the frames in it.
"$cli" render hostile.gpuh --view flame -o flame.svg 2>/dev/null || fail "render --view flame"
xmllint --noout flame.svg 2>/dev/null || fail "flame.svg is not well-formed XML"
"$cli" render base.gpuh --view flame -o flame.svg 2>/dev/null && grep -q 'kernelA(float\*, int)' flame.svg || fail "flame.svg lacks kernelA"
"$cli" diff base.gpuh slow.gpuh -o diff.svg >/dev/null 2>&1
[[ $? == 1 ]] || fail "diff -o diff.svg: wrong exit code"
xmllint --noout diff.svg 2>/dev/null && grep -q 'base.gpuh' diff.svg || fail "diff.svg is not a well-formed chart of both runs"
"$cli" diff base.gpuh slow.gpuh -o diff.png >/dev/null 2>&1
[[ "$(head -c 4 diff.png | tail -c 3)" == PNG ]] || fail "diff.png is not a PNG"
"$cli" diff base.gpuh slow.gpuh -o aligned.svg --align-range step@3 >/dev/null 2>&1
[[ $? == 1 ]] && xmllint --noout aligned.svg 2>/dev/null || fail "diff -o --align-range step@3"
errexit diff-bad-chart-name 2 "name it .svg" "$cli" diff base.gpuh same.gpuh -o diff.txt
errexit diff-bad-align-range 2 "nope" "$cli" diff base.gpuh same.gpuh -o x.svg --align-range nope@1
# The page: both runs and the differential flame graph; the same exit code as the report's.
"$cli" diff base.gpuh slow.gpuh -o diff.html --align-range step@3 >/dev/null 2>&1
[[ $? == 1 ]] && grep -q '"diff":{"base":"base","next":"new"' diff.html || fail "diff -o diff.html --align-range step@3"
errexit diff-html-bad-align-range 2 "nope" "$cli" diff base.gpuh same.gpuh -o x.html --align-range nope@1
errexit render-bad-view 2 "--view" "$cli" render base.gpuh --view pie -o x.svg
echo "ok   flame and diff charts"

# info --json keeps UTF-8 readable and replaces what is not (one U+FFFD per bad byte).
"$cli" info --json hostile.gpuh > info_hostile.json || fail "info --json hostile.gpuh"
python3 - info_hostile.json <<'PY' || fail "info --json hostile.gpuh: header strings not as expected"
import json, sys
h = json.load(open(sys.argv[1]))[0]["header"]
assert h["host"] == "h\u00f4te-\ufffd", h["host"]
assert h["command_line"] == ["train.py", "--name", "caf\u00e9", "bad\ufffd\u0001\"q\""], h["command_line"]
PY
"$cli" info hostile.gpuh | grep -q 'host:        "hôte-' || fail "info text: host name not readable UTF-8"
echo "ok   info keeps UTF-8, replaces bad bytes"

# JSON outputs parse (hostile names included).
for f in out.stats.json out.stats_hostile.json out.diff_slow.json; do
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$f" || fail "$f is not valid JSON"
done

printf 'not a capture at all' > text.gpuh
head -c 37 base.gpuh > short.gpuh
: > empty.gpuh
errexit merge-same-file-twice 2 "are the same file" "$cli" merge base.gpuh ./base.gpuh -o twice.gpuh
[[ ! -e twice.gpuh ]] || fail "merge of the same file twice created its output"
errexit stats-missing-file 2 "no-such.gpuh" "$cli" stats no-such.gpuh
errexit stats-not-a-capture 2 "text.gpuh" "$cli" stats text.gpuh
errexit stats-empty-file 2 "empty.gpuh" "$cli" stats empty.gpuh
errexit stats-bad-by 2 "--by" "$cli" stats base.gpuh --by colour
errexit stats-bad-format 2 "--format" "$cli" stats base.gpuh --format xml
errexit stats-bad-top 2 "--top" "$cli" stats base.gpuh --top many
errexit diff-one-file 2 "new" "$cli" diff base.gpuh
errexit diff-bad-threshold 2 "--threshold" "$cli" diff base.gpuh same.gpuh --threshold lots
errexit diff-bare-number 2 "--threshold" "$cli" diff base.gpuh same.gpuh --threshold 5
errexit diff-bad-metric 2 "unknown metric" "$cli" diff base.gpuh same.gpuh --metric speed
errexit diff-missing-new 2 "no-such.gpuh" "$cli" diff base.gpuh no-such.gpuh
errexit diff-not-a-capture 2 "text.gpuh" "$cli" diff text.gpuh base.gpuh
errexit diagnose-bad-fail-on 2 "--fail-on" "$cli" diagnose base.gpuh --fail-on maybe
errexit diagnose-empty-file 2 "empty.gpuh" "$cli" diagnose empty.gpuh
"$cli" stats short.gpuh >/dev/null 2>&1
rc=$?; [[ $rc == 0 || $rc == 2 ]] || fail "stats on a truncated capture crashed (exit $rc)"

# Issue 22 item 9: a device record and launch shapes no GPU has divided by zero (SIGFPE)
# in every subcommand that computes occupancy. Now: a warning naming the device, exit 0.
"$make_capture" hostile_device hdev.gpuh || exit 2
hostile_ok() {  # hostile_ok NAME CMD...: exit 0 and the device named on stderr
  local name=$1
  shift
  local err rc
  err=$("$@" 2>&1 >/dev/null)
  rc=$?
  if [[ $rc != 0 ]]; then fail "hostile device: $name: exit $rc ($(head -c 300 <<<"$err"))"; return; fi
  [[ "$err" == *"hdev.gpuh: device 1: warp size 2147483648 is outside 1..1024; occupancy unknown"* ]] ||
    fail "hostile device: $name: the device problem is not reported: $err"
}
hostile_ok stats "$cli" stats hdev.gpuh
hostile_ok render "$cli" render hdev.gpuh -o hdev.svg
hostile_ok diagnose "$cli" diagnose hdev.gpuh
hostile_ok export-csv "$cli" export hdev.gpuh --format csv -o hdev.csv
hostile_ok export-chrome "$cli" export hdev.gpuh --format chrome -o hdev.json
hostile_ok diff "$cli" diff hdev.gpuh hdev.gpuh
"$cli" merge -q hdev.gpuh -o hdev_merged.gpuh 2>/dev/null; rc=$?
[[ $rc == 0 ]] || fail "hostile device: merge: exit $rc"
grep -q ',huge_block,.*,does not fit,' hdev.csv || fail "hostile device: the 2^32-1 thread block is not 'does not fit'"
echo "ok   hostile device and launch shapes"

# Names become CSV cells; one that a spreadsheet would run as a formula
# is quoted with a ' in export as in stats.
"$cli" export hostile.gpuh --format csv -o hostile.csv || fail "export csv hostile"
grep -q ",\"'=cmd|' /C calc'!A0\"," hostile.csv || grep -q ",'=cmd|' /C calc'!A0," hostile.csv ||
  fail "export csv: the formula name is not neutralised: $(grep -a calc hostile.csv | head -c 300)"
if grep -aEq '(^|,)"?[=+@]' hostile.csv; then fail "export csv: a cell starts with a formula character"; fi
"$cli" stats hostile.gpuh --format csv > hostile_stats.csv || fail "stats csv hostile"
if grep -aEq '(^|,)"?[=+@]' hostile_stats.csv; then fail "stats csv: a cell starts with a formula character"; fi
echo "ok   csv cells are never formulas"

# Summaries (.gsum): the report from a capture's summary is the report from the capture, in
# every grouping and format; summaries of two runs merge into the tables the two captures give,
# in either order; misuse and damage are clear errors.
"$cli" stats base.gpuh --summary -o base.gsum 2>/dev/null || fail "stats --summary exit $?"
for args in "" "--by range --format md" "--by stream --format csv" "--format json --top 2" "--by device --format json"; do
  # shellcheck disable=SC2086
  if ! cmp -s <("$cli" stats base.gpuh $args 2>/dev/null) <("$cli" stats base.gsum $args 2>/dev/null); then
    fail "stats of the summary differs from stats of the capture ($args)"
  fi
done
"$cli" stats same.gpuh --summary -o same.gsum 2>/dev/null && "$cli" stats slow.gpuh --summary -o slow.gsum 2>/dev/null ||
  fail "stats --summary exit $?"
cmp -s <("$cli" stats same.gpuh slow.gpuh --format csv 2>/dev/null) <("$cli" stats same.gsum slow.gsum --format csv) ||
  fail "merged summaries differ from the two captures (kernel table)"
cmp -s <("$cli" stats same.gsum slow.gsum --format csv) <("$cli" stats slow.gsum same.gsum --format csv) ||
  fail "merged summaries depend on their order (kernel table)"
cmp -s <("$cli" stats same.gpuh slow.gsum --format csv 2>/dev/null) <("$cli" stats same.gsum slow.gsum --format csv) ||
  fail "a capture and a summary do not merge like two summaries"
"$cli" stats same.gsum slow.gsum | grep -q "makespan: merged from summaries" || fail "merged summaries do not say they are unaligned"
echo "ok   summaries report what their captures report, merged in any order"
# diff takes a summary on either side: the same report and exit code as from the captures.
for pair in "same slow" "base same"; do
  set -- $pair
  "$cli" diff "$1.gpuh" "$2.gpuh" > diff_c.txt 2>/dev/null; rc_c=$?
  "$cli" diff "$1.gsum" "$2.gsum" > diff_s.txt 2>/dev/null; rc_s=$?
  "$cli" diff "$1.gsum" "$2.gpuh" > diff_m.txt 2>/dev/null; rc_m=$?
  [[ $rc_c == "$rc_s" && $rc_c == "$rc_m" ]] || fail "diff $pair: exit $rc_c from captures, $rc_s from summaries, $rc_m mixed"
  cmp -s diff_c.txt diff_s.txt && cmp -s diff_c.txt diff_m.txt || fail "diff $pair: summaries give another report"
done
echo "ok   diff of summaries is diff of their captures"
errexit diff-summary-chart 2 "needs two captures" "$cli" diff base.gsum same.gsum -o x.svg
errexit summary-without-output 2 "-o FILE" "$cli" stats base.gpuh --summary
errexit summary-output-without-summary 2 "goes with --summary" "$cli" stats base.gpuh -o x.gsum
errexit summary-exists 2 "never overwritten" "$cli" stats base.gpuh --summary -o base.gsum
errexit summary-by-graph 2 "needs captures" "$cli" stats base.gsum --by graph
errexit summary-to-render 2 "only \`gantt-cli stats\`, \`gantt-cli diff\` and \`gantt-cli diagnose\` read summaries" "$cli" render base.gsum -o x.svg
"$cli" diagnose base.gsum | grep -q "^rules not run:" || fail "diagnose of a summary does not list the rules it cannot run"
head -c 40 base.gsum > short.gsum
errexit summary-truncated 2 "short.gsum: byte 24" "$cli" stats short.gsum

# A window past the end says so, with the span; info speaks --format json like the others.
errexit from-past-the-end 2 "past the end of the capture (span" "$cli" render base.gpuh --from 100s -o x.svg
errexit from-bare-number 2 "add a unit" "$cli" render base.gpuh --from 5 -o x.svg
cmp -s <("$cli" info --format json base.gpuh) <("$cli" info --json base.gpuh) || fail "info --format json differs from --json"
"$cli" export --help | grep -q 'nanoseconds' || fail "export --help does not say folded weights are nanoseconds"

# dump lists every record kind the schema has (host functions, streams, events, notices).
"$cli" dump --help | grep -q 'host_function' || fail "dump --help does not list host_function"
"$cli" dump base.gpuh --kind host_function,stream > /dev/null || fail "dump --kind host_function,stream refused"

# The words people type: a near miss names the subcommand, `version` and `help SUB` work.
errexit subcommand-typo 2 "did you mean 'render'?" "$cli" rendr base.gpuh
errexit subcommand-unknown 2 "subcommands: record info" "$cli" frobnicate
[[ $("$cli" version) == "gantt-cli "* ]] || fail "gantt-cli version: $("$cli" version 2>&1)"
[[ $("$cli" stats --version) == "gantt-cli "* ]] || fail "gantt-cli stats --version"
"$cli" help stats | grep -q -- '--summary' || fail "gantt-cli help stats does not show stats' help"
errexit help-unknown 2 "no subcommand 'nope'" "$cli" help nope

# Every subcommand `gantt-cli --help` lists, whatif and jobs among them.
source "$(dirname "$golden")/help_options.sh"
for sub in $(help_subcommands "$cli"); do
  "$cli" "$sub" --help | grep -q 'Example' || fail "$sub --help has no example"
done
exit $((fails > 0))
