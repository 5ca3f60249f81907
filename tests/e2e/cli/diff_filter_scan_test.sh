#!/usr/bin/env bash
# diff with the filter flags scans both sides (the selection applied by the scan, as restricted()
# applies it to a loaded side): the same report, exit code and stderr as --in-memory, text and
# JSON, for each flag; a --range a side lacks is the loaded path's error; a chart of filtered
# sides is drawn from the loaded models. Scanned sides are not held to --max-memory, which a
# loaded side over it is: that is how the scan is seen to be taken.
#   diff_filter_scan_test.sh GANTT_CLI MAKE_CAPTURE
set -u
cli=$1 make=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
"$make" synth "$work/a.gpuh" 20000 5 256 >/dev/null || { echo "FAIL: make_capture synth"; exit 1; }
"$make" synth "$work/b.gpuh" 20000 6 256 >/dev/null || { echo "FAIL: make_capture synth"; exit 1; }
"$make" nvtx "$work/n5.gpuh" 5 >/dev/null || { echo "FAIL: make_capture nvtx"; exit 1; }
"$make" nvtx "$work/n7.gpuh" 7 >/dev/null || { echo "FAIL: make_capture nvtx"; exit 1; }
compared=0
for pair in "a b" "n5 n7"; do
  read -r x y <<<"$pair"
  for flags in "--device 0" "--stream 14" "--kernel gemm" "--from 1ms --to 3ms" "--range step@2" "--range nope@1"; do
    for fmt in text json; do
      # shellcheck disable=SC2086  # the flags are words
      "$cli" diff "$work/$x.gpuh" "$work/$y.gpuh" $flags --format $fmt -j 2 >"$work/s.out" 2>"$work/s.err"
      rs=$?
      # shellcheck disable=SC2086
      "$cli" diff "$work/$x.gpuh" "$work/$y.gpuh" $flags --format $fmt --in-memory >"$work/w.out" 2>"$work/w.err"
      rw=$?
      what="diff $x $y $flags --format $fmt"
      if [[ $rs != "$rw" ]]; then
        echo "FAIL: $what: exit $rs, --in-memory $rw: $(cat "$work/s.err")"; fail=1
      elif ! cmp -s "$work/s.out" "$work/w.out"; then
        echo "FAIL: $what: the report differs from --in-memory's"; diff "$work/s.out" "$work/w.out" | head -4; fail=1
      elif ! cmp -s "$work/s.err" "$work/w.err"; then
        echo "FAIL: $what: stderr $(cat "$work/s.err") against $(cat "$work/w.err")"; fail=1
      fi
      # shellcheck disable=SC2086
      "$cli" diff "$work/$x.gpuh" "$work/$y.gpuh" $flags --format $fmt --max-memory 1K >/dev/null 2>&1
      [[ $? == "$rs" ]] || { echo "FAIL: $what: a side was loaded, not scanned (refused under --max-memory 1K)"; fail=1; }
      compared=$((compared + 1))
    done
  done
done
# The filter selected on both sides, said as for a loaded side.
"$cli" diff "$work/a.gpuh" "$work/b.gpuh" --stream 14 >/dev/null 2>"$work/s.err"
[[ $(grep -c "^gantt-cli: diff: [0-9]* of [0-9]* GPU events (stream filter)$" "$work/s.err") == 2 ]] ||
  { echo "FAIL: the selection of each side is not said: $(cat "$work/s.err")"; fail=1; }
# A chart of filtered sides: drawn from the loaded, restricted models.
"$cli" diff "$work/a.gpuh" "$work/b.gpuh" --device 0 -o "$work/d.svg" >/dev/null 2>"$work/d.err" ||
  [[ $? == 1 ]] || { echo "FAIL: diff -o with a filter: $(cat "$work/d.err")"; fail=1; }
[[ -s $work/d.svg ]] || { echo "FAIL: diff -o with a filter wrote no chart"; fail=1; }
[[ $compared == 24 ]] || { echo "FAIL: $compared of 24 compared"; fail=1; }
[[ $fail == 0 ]] && echo "ok: filtered diffs scanned agree with --in-memory ($compared)"
exit $fail
