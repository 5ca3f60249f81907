#!/usr/bin/env bash
# `diagnose` on summaries (.gsum) and on captures scanned (one, or several as the ranks of a
# job, with and without filters): stream-serialisation,
# copy-overlap and imbalance give the findings they give on the captures loaded whole
# (imbalance without its straggler line), the other rules are listed as not run with what they
# need, exit codes agree, a version 1 summary is read and says what it lacks, damaged
# summaries are clear errors.
#   diagnose_summary_test.sh GANTT_CLI MAKE_CAPTURE FIXTURES
set -u
cli=$1 make=$2 fixtures=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fails=0 seen=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() {  # ok WHAT: says so when nothing failed since the last ok
  [[ $fails == "$seen" ]] && echo "ok   $*"
  seen=$fails
}

# Three "ranks" of different sizes (synthetic captures without a rank: numbered by place).
for r in 0 1 2; do
  n=$((r == 1 ? 60000 : 20000))
  "$make" synth "r$r.gpuh" $n $((r + 3)) || { echo "FAIL: make_capture synth"; exit 1; }
  "$cli" stats "r$r.gpuh" --summary -o "r$r.gsum" 2>/dev/null || bad "stats --summary r$r exit $?"
done

# same_findings A.json B.json: the summary rules agree (fired, note, findings; imbalance's first
# evidence line only), every other rule of B is listed as not run, with what it needs.
same_findings() {
  python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
ok = True
def fail(msg):
    global ok
    print("  " + msg); ok = False
def rule(r, name): return next(x for x in r["rules"] if x["rule"] == name)
def finds(r, name):
    out = []
    for f in r["findings"]:
        if f["rule"] != name: continue
        f = dict(f)
        if name == "imbalance": f["evidence"] = f["evidence"][:1]
        out.append(f)
    return out
summary_rules = ("stream-serialisation", "copy-overlap", "imbalance")
for name in summary_rules:
    ra, rb = rule(a, name), rule(b, name)
    if not rb["ran"]: fail(f"{name} did not run from the summaries: {rb['note']}")
    if (ra["fired"], ra["note"]) != (rb["fired"], rb["note"]): fail(f"{name}: {ra} vs {rb}")
    if finds(a, name) != finds(b, name): fail(f"{name} findings differ:\n{finds(a, name)}\n{finds(b, name)}")
for x in b["rules"]:
    if x["rule"] in summary_rules: continue
    if x["ran"] or x["fired"] or "run diagnose on the capture" not in x["note"]: fail(f"{x} should be listed as not run")
sys.exit(0 if ok else 1)
PY
}

"$cli" diagnose r0.gpuh r1.gpuh r2.gpuh --format json > captures.json; rc_c=$?
grep -q '"rule": "imbalance", "severity"' captures.json || bad "the captures do not fire imbalance (the test needs it)"
"$cli" diagnose r0.gsum r1.gsum r2.gsum --format json > summaries.json; rc_s=$?
[[ $rc_c == 0 && $rc_s == 0 ]] || bad "exit $rc_c from captures, $rc_s from summaries"
same_findings captures.json summaries.json || bad "diagnose of the summaries differs from diagnose of the captures"
"$cli" diagnose r2.gsum r0.gsum r1.gsum --format json > reordered.json
python3 -c 'import json,sys; a,b=(json.load(open(p)) for p in sys.argv[1:]); sys.exit(0 if [r for r in a["rules"] if r["rule"]=="copy-overlap"]==[r for r in b["rules"] if r["rule"]=="copy-overlap"] else 1)' \
  summaries.json reordered.json || bad "the copy-overlap result depends on the order of the summaries"
"$cli" diagnose r0.gpuh r1.gsum r2.gsum --format json > mixed.json || bad "diagnose of a capture and summaries exit $?"
same_findings captures.json mixed.json || bad "a capture among summaries does not diagnose like its summary"
# Several captures beside a summary are scanned as one job (under --max-memory 8M, which the
# summary, parsed whole, fits and a load of the captures, about 22 MB, would not) and give what
# they give loaded.
"$cli" diagnose r0.gpuh r1.gpuh r2.gsum --format json --max-memory 8M > mixed_scanned.json ||
  bad "diagnose of two captures and a summary under --max-memory 8M exit $?"
"$cli" diagnose r0.gpuh r1.gpuh r2.gsum --format json --in-memory > mixed_loaded.json
cmp -s mixed_scanned.json mixed_loaded.json ||
  bad "two captures beside a summary: scanned $(diff mixed_scanned.json mixed_loaded.json | head -4)"
ok "diagnose of summaries finds what diagnose of the captures finds"

"$cli" diagnose r0.gpuh r1.gpuh r2.gpuh --fail-on warning > /dev/null; rc_c=$?
"$cli" diagnose r0.gsum r1.gsum r2.gsum --fail-on warning > summaries.txt; rc_s=$?
[[ $rc_c == 1 && $rc_s == 1 ]] || bad "--fail-on warning: exit $rc_c from captures, $rc_s from summaries (1 expected)"
grep -q "^rules not run:" summaries.txt && grep -q "  launch-bound: needs the interval" summaries.txt ||
  bad "the text report does not list the rules not run"
"$cli" diagnose r0.gsum r1.gsum r2.gsum --format md | grep -q '^\*\*rules not run\*\*' || bad "markdown lacks the rules not run"
ok "exit codes and formats"

# A version 1 summary: read, and the rules that need version 2 say so.
v1=$fixtures/summary_v1/rank01.gsum
"$cli" stats "$v1" > /dev/null || bad "stats of a version 1 summary exit $?"
"$cli" diagnose "$v1" > v1.txt || bad "diagnose of a version 1 summary exit $?"
[[ $(grep -c "needs what summaries keep from version 2 on" v1.txt) == 3 ]] || { bad "version 1: not told"; cat v1.txt; }
"$cli" diagnose "$v1" r0.gsum --format json | grep -q '"rule": "imbalance", "ran": false' ||
  bad "a merge with a version 1 summary runs imbalance"
ok "a version 1 summary is read and says what it lacks"

# Damaged and hostile summaries: exit 2 and one clear line.
errexit() {  # errexit NAME WANT_TEXT ARGS...
  local name=$1 want=$2
  shift 2
  "$cli" "$@" > /dev/null 2> "$name.err"
  local rc=$?
  if [[ $rc != 2 ]] || ! grep -q -- "$want" "$name.err"; then bad "$name: exit $rc, stderr: $(cat "$name.err")"; fi
}
head -c 40 r0.gsum > short.gsum
errexit truncated "short.gsum: byte 24" diagnose short.gsum r1.gsum
python3 -c 'import sys; b=bytearray(open("r0.gsum","rb").read()); b[len(b)//2]^=0xff; open("flipped.gsum","wb").write(b)'
errexit flipped "flipped.gsum" diagnose flipped.gsum
python3 -c 'import sys; b=bytearray(open("r0.gsum","rb").read()); b[16]=9; open("newer.gsum","wb").write(b)'
errexit too-new "newer than this build reads" diagnose newer.gsum
errexit filter "keeps none" diagnose r0.gsum --range step
ok "damaged summaries exit 2 with what is wrong"

# One capture is scanned, whatever its size and the threads: every rule runs and reports what
# it reports on the capture loaded whole, and nothing is said to be skipped.
"$cli" diagnose r1.gpuh --format json --in-memory > whole.json 2>/dev/null
for args in "" "--streamed" "--max-memory 1K" "--streamed -j 3"; do
  # shellcheck disable=SC2086
  "$cli" diagnose r1.gpuh --format json $args > scanned.json 2> scanned.err || bad "diagnose $args exit $?"
  cmp -s whole.json scanned.json || bad "diagnose $args differs from --in-memory: $(diff whole.json scanned.json | head -5)"
  [ ! -s scanned.err ] || bad "diagnose $args says on stderr: $(cat scanned.err)"
done
errexit both-ways "give one" diagnose r1.gpuh --streamed --in-memory
ok "one capture is scanned for every rule, and reports what it reports loaded whole"

# Several captures are scanned as the ranks of one job, under any --max-memory: the report, the
# exit code and stderr (the filter's "N of M GPU events") are those of the captures loaded
# whole, the filter's window counted from the job's start: the three "ranks" start together,
# r0 and two steps captures hours apart on clocks no collective aligns.
"$make" steps steps.gpuh 1 1.0 > /dev/null || bad "make_capture steps"
"$make" steps steps2.gpuh 2 1.0 > /dev/null || bad "make_capture steps"
same_scan() {  # same_scan ARGS...: scanned (under --max-memory 1K) and loaded agree
  "$cli" diagnose "$@" --format json --in-memory > whole.json 2> whole.err
  local rc_w=$?
  "$cli" diagnose "$@" --format json --max-memory 1K > scanned.json 2> scanned.err
  local rc_s=$?
  [[ $rc_w == "$rc_s" ]] || bad "diagnose $*: exit $rc_s scanned, $rc_w loaded: $(cat scanned.err)"
  cmp -s whole.json scanned.json || bad "diagnose $* differs from --in-memory: $(diff whole.json scanned.json | head -5)"
  cmp -s whole.err scanned.err || bad "diagnose $*: stderr differs from --in-memory: $(diff whole.err scanned.err)"
}
for filter in "" "--device 0" "--from 10ms --to 50ms" "--kernel reduce --to 80ms" "--stream 14 --from 5ms"; do
  # shellcheck disable=SC2086  # the flags are words
  same_scan r0.gpuh r1.gpuh r2.gpuh $filter
  # shellcheck disable=SC2086
  same_scan r2.gpuh r0.gpuh r0.gpuh $filter
done
for filter in "--from 1ms --to 3ms" "--device 0 --from 100us" "--kernel k --to 2ms"; do
  # shellcheck disable=SC2086
  same_scan r0.gpuh steps.gpuh steps2.gpuh $filter
done
same_scan "$fixtures/corrupt.gpuh" r0.gpuh  # the fixture is rank 0: r0, second, is rank 1
same_scan r0.gpuh r1.gpuh --kernel '('
"$cli" diagnose r0.gpuh r1.gpuh r2.gpuh --format json --max-memory 1K > scanned.json 2> /dev/null
grep -q '"rule": "imbalance", "severity"' scanned.json || bad "the scanned ranks do not fire imbalance"
# --range NAME@N numbers the occurrences across the captures, as loaded: the two steps captures
# hold 20 "step" ranges each, so step@25 is one of the second's, and step@41 is none.
for filter in "--range step@2" "--range step@25" "--range step@30 --from 10us --to 2ms" "--range step@41"; do
  # shellcheck disable=SC2086
  same_scan r0.gpuh steps.gpuh steps2.gpuh $filter
done
ok "several captures are scanned, with and without filters, and report what they report loaded whole"
exit $((fails > 0))
