#!/usr/bin/env bash
# The filter flags (--from, --to, --range, --kernel, --device, --stream) applied by the scan
# (gantt/analysis/scan_select.h), in stats and export, against the same capture loaded
# (--in-memory): the same tables and stderr line, the same CSV rows (sorted) and Chrome slices,
# the same errors; and scanned, not loaded: with --max-memory 1 (no load fits) they still run,
# and a 1 M-kernel capture filtered takes a fraction of the memory loading it takes.
#   filter_scan_test.sh GANTT_CLI MAKE_CAPTURE     (GEN_JOB: ranks_gen_job, optional)
set -u
cli=$1 make=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$make" nvtx nvtx.gpuh 3 > /dev/null || exit 2
"$make" synth synth.gpuh 20000 3 4 > /dev/null || exit 2  # 4 KiB chunks: many shares

# The X slices of a Chrome trace as (name, absolute start ns, duration ns), sorted.
cat > slices.py <<'PY'
import json, sys
from decimal import Decimal
d = json.load(open(sys.argv[1]))
origin = Decimal(d["otherData"]["time_origin_ns"])
out = ["%s|%d|%d" % (e["name"], origin + Decimal(str(e["ts"])) * 1000, Decimal(str(e["dur"])) * 1000)
       for e in d["traceEvents"] if e.get("ph") == "X"]
sys.stdout.write("\n".join(sorted(out)) + "\n")
PY

# nvtx has ranges; synth none, but many shares.
nvtx=("--kernel gemm" "--device 0" "--from 20us --to 60us" "--from 1ms" "--range step@2 --from 1us --to 3ms"
      "--kernel relu --from 30us --stream 7")
synth=("--kernel gemm" "--device 0 --from 200us")
for cap in nvtx synth; do
  declare -n each=$cap
  for f in "${each[@]}"; do
    # shellcheck disable=SC2086
    set -- $f
    for by in kernel range; do  # the selection is the same for every grouping
      "$cli" stats "$cap.gpuh" --by "$by" "$@" > scan.txt 2> scan.err
      rc=$?
      "$cli" stats "$cap.gpuh" --by "$by" "$@" --in-memory > load.txt 2> load.err
      [[ $rc == $? ]] || bad "$cap stats --by $by $f: exit $rc, loaded $?"
      cmp -s scan.txt load.txt || bad "$cap stats --by $by $f: $(diff scan.txt load.txt | head -4)"
      cmp -s scan.err load.err || bad "$cap stats --by $by $f says '$(head -c 200 scan.err)', loaded '$(head -c 200 load.err)'"
    done
    "$cli" export "$cap.gpuh" --format csv "$@" -o scan.csv 2> scan.err
    rc=$?
    "$cli" export "$cap.gpuh" --format csv "$@" --in-memory -o load.csv 2> load.err
    [[ $rc == $? ]] || bad "$cap export csv $f: exit $rc, loaded $?"
    cmp -s scan.err load.err || bad "$cap export csv $f says '$(head -c 200 scan.err)', loaded '$(head -c 200 load.err)'"
    [[ $rc != 0 ]] && continue
    cmp -s <(sort scan.csv) <(sort load.csv) || bad "$cap export csv $f: $(diff <(sort scan.csv) <(sort load.csv) | head -4)"
    "$cli" export "$cap.gpuh" --format chrome "$@" -o scan.json 2> /dev/null || bad "$cap export chrome $f: exit $?"
    "$cli" export "$cap.gpuh" --format chrome "$@" --in-memory -o load.json 2> /dev/null
    cmp -s <(python3 slices.py scan.json) <(python3 slices.py load.json) ||
      bad "$cap export chrome $f: $(diff <(python3 slices.py scan.json) <(python3 slices.py load.json) | head -4)"
    # No load fits in one byte: a filtered capture is scanned.
    "$cli" stats "$cap.gpuh" "$@" --max-memory 1 > /dev/null 2>&1 || bad "$cap stats $f was loaded, not scanned"
    "$cli" export "$cap.gpuh" --format csv "$@" --max-memory 1 -o /dev/null 2> /dev/null || bad "$cap export $f was loaded, not scanned"
  done
done
echo "ok   filtered stats and exports scanned equal them loaded"

# A filter on several captures counts its window from the job's start, as loaded: three
# captures that start hours apart (none aligned by a collective) and, with GEN_JOB, ten ranks on
# two hosts whose clocks differ by milliseconds. Scanned (--max-memory 1), the loaded tables and
# stderr line. --range NAME@N numbers the occurrences across the captures, as loaded: the two
# steps captures hold 20 "step" ranges each, so step@25 is one of the second's.
"$make" steps steps.gpuh 1 1.0 > /dev/null || exit 2
sets=("synth.gpuh steps.gpuh nvtx.gpuh")
if [[ -n ${GEN_JOB:-} && -x ${GEN_JOB:-} ]]; then
  mkdir ranks && "$GEN_JOB" ranks 10 4000 > /dev/null || bad "gen_job of 10 ranks"
  sets+=("$(echo ranks/rank*.gpuh)")
fi
for set in "${sets[@]}"; do
  for f in "--from 1ms --to 3ms" "--device 0 --from 100us" "--kernel k --to 2ms" "--stream 7 --from 50us"; do
    for by in kernel device; do
      # shellcheck disable=SC2086  # the captures and flags are words
      "$cli" stats $set --by "$by" $f --format json --max-memory 1 > scan.txt 2> scan.err || bad "stats $set $f: exit $?: $(head -2 scan.err)"
      # shellcheck disable=SC2086
      "$cli" stats $set --by "$by" $f --format json --in-memory > load.txt 2> load.err
      cmp -s scan.txt load.txt || bad "stats of several captures --by $by $f: not the loaded table: $(diff scan.txt load.txt | head -4)"
      [[ $(cat scan.err) == "$(sed 's/ --in-memory//' load.err)" ]] || bad "stats of several captures $f: stderr '$(cat scan.err)', loaded '$(cat load.err)'"
    done
  done
done
"$make" steps steps2.gpuh 2 1.0 > /dev/null || exit 2
for f in "--range step@2" "--range step@25" "--range step@30 --from 10us --to 2ms" "--range step@41" "--range nothing"; do
  # shellcheck disable=SC2086
  "$cli" stats synth.gpuh steps.gpuh steps2.gpuh $f --format json --max-memory 1 > scan.txt 2> scan.err
  rc_s=$?
  # shellcheck disable=SC2086
  "$cli" stats synth.gpuh steps.gpuh steps2.gpuh $f --format json --in-memory > load.txt 2> load.err
  rc_l=$?
  [[ $rc_s == "$rc_l" ]] || bad "stats of several captures $f: exit $rc_s scanned, $rc_l loaded: $(head -2 scan.err)"
  cmp -s scan.txt load.txt || bad "stats of several captures $f: not the loaded table: $(diff scan.txt load.txt | head -4)"
  [[ $(cat scan.err) == "$(sed 's/ --in-memory//' load.err)" ]] || bad "stats of several captures $f: stderr '$(cat scan.err)', loaded '$(cat load.err)'"
done
echo "ok   a filter on several captures"

# Bounded: 1 M kernels with their launches (2 M events) filtered by a window and a name, in a
# fraction of what loading them takes (about 230 MB for the CSV; the scan about 70 MB).
if [[ -n ${GEN_JOB:-} && -x ${GEN_JOB:-} ]] && command -v /usr/bin/time > /dev/null; then
  mkdir job && "$GEN_JOB" job 1 1000000 > /dev/null || bad "gen_job"
  peak() { /usr/bin/time -f "%M" -o rss "$@" > /dev/null 2>&1 || bad "$*: exit $?"; tail -1 rss; }
  # A sanitizer's shadow memory and its quarantine of freed blocks are in the RSS too (as in
  # export_scan_test.sh): there, only the ratio to the load.
  cap_kib=$((120 * 1024))
  if ldd "$cli" 2> /dev/null | grep -Eq 'lib(a|t)san'; then cap_kib=$((1 << 40)); fi
  for sub in "stats" "export --format csv -o out.csv"; do
    # shellcheck disable=SC2086
    scan=$(peak "$cli" $sub job/rank00.gpuh --from 100ms --to 2s --kernel 'layer_kernel<[13]>')
    # shellcheck disable=SC2086
    load=$(peak "$cli" $sub job/rank00.gpuh --from 100ms --to 2s --kernel 'layer_kernel<[13]>' --in-memory)
    ((scan < cap_kib && scan * 2 < load)) || bad "filtered $sub of 2 M events peaked at $scan KiB (loaded: $load KiB)"
    echo "ok   filtered $sub of 2 M events: scanned $((scan / 1024)) MB, loaded $((load / 1024)) MB"
  done
fi

if ((fails)); then
  echo "$fails failure(s)"
  exit 1
fi
echo "ok: filters are applied by the scan"
