#!/usr/bin/env bash
# export of one capture, scanned (docs/export.md "Scanned, not loaded"), against the same
# capture loaded (--in-memory): the CSV rows are the loaded rows (sorted); the Chrome trace
# checks as viewers read it and has the loaded trace's slices (name, absolute start, duration);
# -o x.json.gz decompresses to the same JSON; a few hundred thousand events export in a small
# fraction of the memory loading takes (a bound, not a timing); damaged and foreign inputs give
# the loader's answer.
#   export_scan_test.sh GANTT_CLI MAKE_CAPTURE FIXTURE_DIR     (GEN_JOB: ranks_gen_job, optional)
set -u
cli=$1 make=$2 fixtures=$3
checker=$(cd "$(dirname "$0")/../../unit/gantt_analysis" && pwd)/check_chrome_trace.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
# python3 resolved once: where it is a pyenv shim, as on the CI machine, every start through it
# costs half a second, and the test starts python some 40 times.
py=$(python3 -c 'import sys; print(sys.executable)') || exit 2
# Rows sorted in byte order on both sides: the locale's collation took 18 s on 2 M rows.
csort() { LC_ALL=C sort "$@"; }

"$make" steps steps.gpuh 1 1.0 || exit 2
"$make" nvtx nvtx.gpuh 3 || exit 2
"$make" hostile hostile.gpuh || exit 2
"$make" metrics metrics.gpuh || exit 2
"$make" synth synth.gpuh 20000 3 4 || exit 2  # 4 KiB chunks: many shares
cp "$fixtures/small.gpuh" "$fixtures/no_index.gpuh" .

# The X slices of a trace (GPU operations, API and NCCL calls, NVTX ranges) as (name, absolute
# start in ns, duration in ns), sorted.
cat > slices.py <<'PY'
import json, sys
from decimal import Decimal
d = json.load(open(sys.argv[1]))
origin = Decimal(d["otherData"]["time_origin_ns"])
out = []
for e in d["traceEvents"]:
    if e.get("ph") != "X":
        continue
    # Integer nanoseconds: the scanned trace writes 12 where the loaded one writes 12.000.
    out.append("%s|%d|%d" % (e["name"], origin + Decimal(str(e["ts"])) * 1000, Decimal(str(e["dur"])) * 1000))
sys.stdout.write("\n".join(sorted(out)) + "\n")
PY

for cap in steps nvtx hostile metrics synth small no_index; do
  # The loaded exports do not depend on -j: written once, against each scan.
  "$cli" export "$cap.gpuh" --format csv --in-memory -o load.csv 2> load.err || bad "$cap: loaded csv: exit $?"
  csort load.csv > load.sorted
  "$cli" export "$cap.gpuh" --format chrome --in-memory -o load.json 2> /dev/null || bad "$cap: loaded chrome: exit $?"
  "$py" slices.py load.json > load.slices || bad "$cap: loaded slices unreadable"
  for j in 1 2; do
    "$cli" export "$cap.gpuh" --format csv -j "$j" -o scan.csv 2> scan.err || bad "$cap: scanned csv -j $j: exit $?: $(head -3 scan.err)"
    cmp -s <(csort scan.csv) load.sorted ||
      bad "$cap: scanned csv -j $j is not the loaded csv: $(diff <(csort scan.csv) load.sorted | head -4)"
    [[ $(head -1 scan.csv) == $(head -1 load.csv) ]] || bad "$cap: the header row is not first"
    "$cli" export "$cap.gpuh" --format chrome -j "$j" -o scan.json 2> scan.err || bad "$cap: scanned chrome -j $j: exit $?"
    # make_capture's synth writes a stream's kernels thousands out of start order, which a
    # scan's lanes (the last 64 slices of each) cannot sort across shares (docs/export.md).
    if [[ $cap != synth || $j == 1 ]]; then
      "$py" "$checker" scan.json > check.txt || bad "$cap: scanned chrome -j $j does not check: $(head -3 check.txt)"
    fi
    "$py" slices.py scan.json > scan.slices || bad "$cap: scanned slices unreadable"
    cmp -s scan.slices load.slices || bad "$cap: scanned chrome -j $j slices differ: $(diff scan.slices load.slices | head -4)"
  done
done
echo "ok   scanned csv and chrome equal the loaded ones"

# .json.gz: gzip that Python reads back to the same trace.
"$cli" export synth.gpuh --format chrome -o t.json || bad "chrome export"
"$cli" export synth.gpuh --format chrome -o t.json.gz || bad "chrome .json.gz export"
"$py" - t.json t.json.gz <<'PY' || bad ".json.gz does not decompress to the same trace"
import gzip, json, sys
plain = json.load(open(sys.argv[1]))
packed = json.load(gzip.open(sys.argv[2], "rt", encoding="utf-8"))
assert packed == plain, "different events"
assert len(packed["traceEvents"]) > 40000, len(packed["traceEvents"])
PY
"$cli" export synth.gpuh --format csv -o t.csv.gz && cmp -s <(gzip -dc t.csv.gz) <("$cli" export synth.gpuh --format csv -o -) ||
  bad ".csv.gz is not the csv"
# The loaded path gzips too.
"$cli" export synth.gpuh --format chrome --in-memory -o l.json.gz && "$py" -c 'import gzip,json,sys; json.load(gzip.open(sys.argv[1]))' l.json.gz ||
  bad "a loaded .json.gz does not load"
echo "ok   .gz outputs"

# A filter on several captures that start at different times (hours apart, on clocks no
# collective aligns): the window counts from the job's first time, not each capture's, as
# loaded. Scanned (under --max-memory 1), the loaded rows and slices.
for flt in "--from 1ms --to 3ms" "--from 100us" "--to 200us --device 0" "--kernel k --from 50us" "--range step@22" \
           "--range step@2 --from 1us --to 3ms"; do
  # shellcheck disable=SC2086  # the flags are words
  "$cli" export synth.gpuh steps.gpuh nvtx.gpuh --format csv $flt --max-memory 1 -o mix.csv 2> mix.err || bad "csv of three captures $flt: $(head -2 mix.err)"
  # shellcheck disable=SC2086
  "$cli" export synth.gpuh steps.gpuh nvtx.gpuh --format csv $flt --in-memory -o mix_load.csv 2> /dev/null || bad "loaded csv of three captures $flt"
  cmp -s <(csort mix.csv) <(csort mix_load.csv) ||
    bad "three captures' csv $flt is not the loaded one: $(diff <(csort mix.csv) <(csort mix_load.csv) | head -4)"
  # shellcheck disable=SC2086
  "$cli" export synth.gpuh steps.gpuh nvtx.gpuh --format chrome $flt --max-memory 1 -o mix.json 2> mix.err || bad "chrome of three captures $flt: $(head -2 mix.err)"
  # shellcheck disable=SC2086
  "$cli" export synth.gpuh steps.gpuh nvtx.gpuh --format chrome $flt --in-memory -o mix_load.json 2> /dev/null || bad "loaded chrome of three captures $flt"
  "$py" slices.py mix.json > scan.slices && "$py" slices.py mix_load.json > load.slices || bad "three captures' slices $flt unreadable"
  cmp -s scan.slices load.slices || bad "three captures' chrome slices $flt differ: $(diff scan.slices load.slices | head -4)"
done
echo "ok   a filter on several captures"

# A job capture of three chunks (150,000 kernels) scanned as two shares, so that a share
# crosses a chunk and the second share starts mid-file: the loaded rows, and a trace that
# checks. (On the 1 M-kernel job below this took over a minute, most of it the checker.)
if [[ -n ${GEN_JOB:-} && -x ${GEN_JOB:-} ]]; then
  mkdir job2 && "$GEN_JOB" job2 1 150000 > /dev/null || bad "gen_job"
  [[ $("$cli" info job2/rank00.gpuh) == *" 3 chunks"* ]] || bad "the 150,000-kernel job is not 3 chunks: $("$cli" info job2/rank00.gpuh | head -2)"
  "$cli" export job2/rank00.gpuh --format csv -j 2 -o job2.csv || bad "scanned csv of the 3-chunk job"
  "$cli" export job2/rank00.gpuh --format csv --in-memory -o job2_load.csv || bad "loaded csv of the 3-chunk job"
  cmp -s <(csort job2.csv) <(csort job2_load.csv) || bad "the 3-chunk job's scanned csv is not its loaded csv"
  "$cli" export job2/rank00.gpuh --format chrome -j 2 -o job2.chrome || bad "scanned chrome of the 3-chunk job"
  "$py" "$checker" job2.chrome > check.txt || bad "the job's scanned chrome (2 shares) does not check: $(head -3 check.txt)"
fi

# Bounded: the scan's peak does not grow with the events; loading does. A 1 M-kernel job
# capture (2 M events with the launches) loads in about 210 MB (csv) and 430 MB (chrome) and
# scans in about 65 MB, as do 10 M kernels (tests/bench/export/bench.sh).
if [[ -n ${GEN_JOB:-} && -x ${GEN_JOB:-} ]] && command -v /usr/bin/time > /dev/null; then
  mkdir job && "$GEN_JOB" job 1 1000000 > /dev/null || bad "gen_job"
  # A sanitizer's shadow memory and its quarantine of freed blocks are in the RSS too (the
  # scanned chrome export peaked at 230 MB under ASan, 1,257 MB loaded): there, only the ratio.
  cap_kib=$((120 * 1024))
  if ldd "$cli" 2> /dev/null | grep -Eq 'lib(a|t)san'; then cap_kib=$((1 << 40)) ratio=1; fi
  for f in chrome csv; do
    /usr/bin/time -f "%M" -o scan.rss "$cli" export job/rank00.gpuh --format "$f" -j 2 -o "job.$f" || bad "scanned $f of the job"
    /usr/bin/time -f "%M" -o load.rss "$cli" export job/rank00.gpuh --format "$f" --in-memory -o "load.$f" || bad "loaded $f of the job"
    scan_kib=$(tail -1 scan.rss) load_kib=$(tail -1 load.rss)
    # Under 120 MB and half the load: holding the events, as the load does, would pass neither.
    ((scan_kib < cap_kib && scan_kib * 2 < load_kib)) ||
      bad "scanned $f of 2 M events peaked at $scan_kib KiB (loaded: $load_kib KiB)"
    echo "ok   $f of 2 M events: scanned $((scan_kib / 1024)) MB, loaded $((load_kib / 1024)) MB"
  done
  # (Its rows are the loaded rows as the 3-chunk job's above are: sorting 2 M rows twice took 5 s.)
  size=$(stat -c %s job.chrome)
  ((size < 250 * 2000000)) || bad "the job's chrome trace is $size bytes, over 250 an event"
fi

# Several captures, scanned one after another on one clock: ten ranks on two hosts whose
# clocks differ by milliseconds (gen_job's offsets.txt), so that the collectives' alignment
# shifts the second host's captures. Without the shift rows would differ.
#  - 10 x 40,000 kernels (800 k events): the loaded rows; scanned (a run allowed no load at all
#    writes the same bytes) in a fraction of the memory the load takes.
#  - 10 x 4,000 kernels: the loaded Chrome slices, a trace that checks, a flow per launch. (On
#    the 800 k events these three Python passes took 50 s, half of the test.)
if [[ -n ${GEN_JOB:-} && -x ${GEN_JOB:-} ]] && command -v /usr/bin/time > /dev/null; then
  mkdir ranks && "$GEN_JOB" ranks 10 40000 > /dev/null || bad "gen_job of 10 ranks"
  [[ $(awk '$2 != 0' ranks/offsets.txt | wc -l) -gt 0 ]] || bad "gen_job's ranks share one clock: nothing to align"
  for f in csv chrome; do
    /usr/bin/time -f "%M" -o scan.rss "$cli" export ranks/rank*.gpuh --format "$f" -o "ranks.$f" 2> ranks.err ||
      bad "scanned $f of 10 ranks: $(head -3 ranks.err)"
    /usr/bin/time -f "%M" -o load.rss "$cli" export ranks/rank*.gpuh --format "$f" --in-memory -o "ranks_load.$f" ||
      bad "loaded $f of 10 ranks"
    "$cli" export ranks/rank*.gpuh --format "$f" --max-memory 1 -o "ranks_scan.$f" 2> /dev/null || bad "$f of 10 ranks was loaded, not scanned"
    cmp -s "ranks.$f" "ranks_scan.$f" || bad "two scanned $f exports of 10 ranks differ"
    scan_kib=$(tail -1 scan.rss) load_kib=$(tail -1 load.rss)
    # Under a sanitizer its shadow and quarantine add some 200 MB to both: there, only below.
    ((scan_kib * ${ratio:-2} < load_kib)) || bad "scanned $f of 10 ranks peaked at $scan_kib KiB (loaded: $load_kib KiB)"
    echo "ok   $f of 10 ranks (800 k events): scanned $((scan_kib / 1024)) MB, loaded $((load_kib / 1024)) MB"
  done
  cmp -s <(csort ranks.csv) <(csort ranks_load.csv) ||
    bad "10 ranks' scanned csv is not their loaded csv: $(diff <(csort ranks.csv) <(csort ranks_load.csv) | head -4)"

  mkdir few && "$GEN_JOB" few 10 4000 > /dev/null || bad "gen_job of 10 small ranks"
  [[ $(awk '$2 != 0' few/offsets.txt | wc -l) -gt 0 ]] || bad "gen_job's small ranks share one clock: nothing to align"
  "$cli" export few/rank*.gpuh --format chrome -o few.chrome && "$cli" export few/rank*.gpuh --format chrome --in-memory -o few_load.chrome ||
    bad "chrome of 10 small ranks"
  "$py" slices.py few.chrome > scan.slices && "$py" slices.py few_load.chrome > load.slices || bad "10 ranks' slices unreadable"
  cmp -s scan.slices load.slices || bad "10 ranks' scanned chrome slices differ: $(diff scan.slices load.slices | head -4)"
  "$py" "$checker" few.chrome > check.txt || bad "10 ranks' scanned chrome does not check: $(head -3 check.txt)"
  "$py" - few.chrome <<'PY' || bad "10 ranks' flows are not one per launch, each capture's its own"
import json, sys
d = json.load(open(sys.argv[1]))
ends = {}
for e in d["traceEvents"]:
    if "bind_id" in e:
        ends.setdefault(e["bind_id"], []).append(("in" if e.get("flow_in") else "out", e["pid"] // 1025))
assert len(ends) == 10 * 4000, len(ends)
for bid, sides in ends.items():
    assert sorted(s for s, _ in sides) == ["in", "out"], (bid, sides)
    assert len({c for _, c in sides}) == 1 and sides[0][1] == bid >> 32, (bid, sides)
PY
  # A filter on several captures counts its window from the job's start, as loaded: each
  # capture selects by the job's first and last times on its own clock. Scanned (under
  # --max-memory 1), the loaded rows, and on the small job the loaded slices.
  for flt in "--from 1ms --to 3ms" "--device 0 --from 2ms" "--kernel layer_kernel<1> --to 5ms" "--stream 7 --from 500us"; do
    # shellcheck disable=SC2086  # the flags are words
    "$cli" export ranks/rank*.gpuh --format csv $flt --max-memory 1 -o win.csv 2> win.err || bad "csv of 10 ranks $flt: $(head -2 win.err)"
    # shellcheck disable=SC2086
    "$cli" export ranks/rank*.gpuh --format csv $flt --in-memory -o win_load.csv || bad "loaded csv of 10 ranks $flt"
    cmp -s <(csort win.csv) <(csort win_load.csv) ||
      bad "10 ranks' csv $flt is not the loaded one: $(diff <(csort win.csv) <(csort win_load.csv) | head -4)"
    # shellcheck disable=SC2086
    "$cli" export few/rank*.gpuh --format chrome $flt --max-memory 1 -o win.chrome 2> win.err || bad "chrome of 10 ranks $flt: $(head -2 win.err)"
    # shellcheck disable=SC2086
    "$cli" export few/rank*.gpuh --format chrome $flt --in-memory -o win_load.chrome || bad "loaded chrome of 10 ranks $flt"
    "$py" slices.py win.chrome > scan.slices && "$py" slices.py win_load.chrome > load.slices || bad "10 ranks' slices $flt unreadable"
    cmp -s scan.slices load.slices || bad "10 ranks' chrome slices $flt differ: $(diff scan.slices load.slices | head -4)"
    [[ $(wc -l < win.csv) -gt 1 && $(wc -l < scan.slices) -gt 0 ]] || bad "10 ranks $flt: nothing selected"
  done
fi

# Damaged and odd inputs: the loader's answer and exit code, no output left behind.
for f in truncated corrupt not_a_capture; do
  "$cli" export "$fixtures/$f.gpuh" --format chrome -o "$f.json" > /dev/null 2> "$f.err"
  rc=$?
  "$cli" export "$fixtures/$f.gpuh" --format chrome --in-memory -o "$f.load.json" > /dev/null 2> "$f.load.err"
  rc_load=$?
  [[ $rc == "$rc_load" && ($rc == 2 || $f == truncated) ]] || bad "$f: exit $rc (loaded: $rc_load)"
  [[ -s $f.err ]] || bad "$f: no message"
  [[ "$(sed 's/ --in-memory//' "$f.load.err")" == "$(cat "$f.err")" ]] || bad "$f: scanned says '$(head -c 300 "$f.err")', loaded '$(head -c 300 "$f.load.err")'"
  if [[ $f == not_a_capture ]]; then [[ ! -e $f.json ]] || bad "$f: an output was written"
  else "$py" -c 'import json,sys; json.load(open(sys.argv[1]))' "$f.json" || bad "$f: what it read is not valid JSON"; fi
done
"$cli" merge -q steps.gpuh nvtx.gpuh -o merged.gpuh 2> /dev/null || bad "merge"
"$cli" export merged.gpuh --format csv -o merged.csv && "$cli" export merged.gpuh --format csv --in-memory -o merged_load.csv &&
  cmp -s merged.csv merged_load.csv || bad "a merged file is not exported as loaded"
echo "ok   damaged, foreign and merged captures"

# metrics-csv: the counter samples of a scan (no event held), on the job's clock, cut to the
# window asked: the loaded rows, byte for byte, under a 1 KiB --max-memory where no load is
# allowed; a window past the end is the load's error after the load's warnings.
"$make" pm_metrics pm.gpuh || exit 2
for caps in metrics pm "metrics pm" small; do
  files=()
  for c in $caps; do files+=("$c.gpuh"); done
  for flt in "" "--from 100ms" "--from 50ms --to 200ms" "--device 0" "--from 99s" "--to 1ns"; do
    # shellcheck disable=SC2086  # the flags are words
    "$cli" export "${files[@]}" --format metrics-csv $flt --max-memory 1K > scan.csv 2> scan.err
    rc=$?
    # shellcheck disable=SC2086
    "$cli" export "${files[@]}" --format metrics-csv $flt --in-memory > load.csv 2> load.err
    rc_load=$?
    [[ $rc == "$rc_load" ]] && cmp -s scan.csv load.csv && cmp -s scan.err load.err ||
      bad "metrics-csv $caps $flt: scanned (exit $rc) is not the loaded (exit $rc_load): $(diff scan.csv load.csv | head -3) $(head -2 scan.err)"
  done
done
[[ $("$cli" export metrics.gpuh --format metrics-csv --max-memory 1K | wc -l) -gt 100 ]] || bad "metrics-csv: too few rows"
echo "ok   metrics-csv scanned"

if ((fails)); then
  echo "$fails failure(s)"
  exit 1
fi
echo "ok: export scans"
