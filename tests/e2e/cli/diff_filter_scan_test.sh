#!/usr/bin/env bash
# diff with the filter flags scans both sides (the selection applied by the scan, as restricted()
# applies it to a loaded side): the same report, exit code and stderr as --in-memory, text and
# JSON, for each flag; a --range a side lacks is the loaded path's error; the charts of sides
# filtered by device, stream or kernel are streamed too. Scanned sides are not held to --max-memory, which a
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
# The charts of filtered sides: read as streams (under --max-memory 1K, where a load is refused),
# the loaded charts but for the flags a stream cannot tell (the flags line, the copies that could
# have overlapped), the same flag counts. By device, stream or kernel, and cut to a time window or
# a range: each chart then draws what the filter selects over its own window (its run's first
# selected work for the longer run's length), a kernel's wait judged beside the work the window
# leaves out; a side with no work selected is drawn over the window it was cut to.
strip_flags() { sed -z -E 's#<rect[^>]*><title>copy not overlapped[^<]*</title></rect>\n?##g; s#<text[^>]*>flags[^<]*</text>##g' "$1"; }
counts() { grep -o "occupancy &lt; [0-9]*%: [0-9]*\|copies overlapped: [0-9]*\|idle gaps &gt; [^:]*: [0-9]*" "$1" | tr '\n' ' '; }
charts=0
for pair in "a b" "n5 n7"; do
  read -r x y <<<"$pair"
  windows=("--from 1ms --to 3ms" "--to 1ms" "--from 300us --to 700us" "--from 500us --to 4ms --stream 14" "--from 1ms --kernel gemm")
  [[ $x == n5 ]] && windows+=("--range step@2" "--range step@1 --from 10us --to 50us" "--range step@2 --device 0")
  for flags in "--device 0" "--stream 14" "--kernel gemm" "--device 1 --kernel k" "${windows[@]}"; do
    what="diff $x $y $flags -o"
    rm -f "$work/s.svg" "$work/w.svg"
    # shellcheck disable=SC2086  # the flags are words
    "$cli" diff "$work/$x.gpuh" "$work/$y.gpuh" $flags -o "$work/s.svg" --max-memory 1K >"$work/s.out" 2>"$work/s.err"
    rs=$?
    # shellcheck disable=SC2086
    "$cli" diff "$work/$x.gpuh" "$work/$y.gpuh" $flags -o "$work/w.svg" --in-memory >"$work/w.out" 2>"$work/w.err"
    rw=$?
    if [[ $rs != "$rw" || ! -s $work/s.svg ]] || ! cmp -s "$work/s.out" "$work/w.out"; then
      echo "FAIL: $what: exit $rs (--in-memory $rw) or its report differs: $(head -3 "$work/s.err")"; fail=1
    elif ! cmp -s <(strip_flags "$work/s.svg") <(strip_flags "$work/w.svg"); then
      echo "FAIL: $what: the charts differ from --in-memory's beyond the flags"; fail=1
    elif [[ $(counts "$work/s.svg") != "$(counts "$work/w.svg")" ]] || ! grep -q "flags (read as a stream" "$work/s.svg"; then
      echo "FAIL: $what: flags $(counts "$work/s.svg"), --in-memory $(counts "$work/w.svg")"; fail=1
    else
      charts=$((charts + 1))
    fi
  done
done
[[ $charts == 21 ]] || { echo "FAIL: $charts of 21 filtered diff charts streamed as loaded"; fail=1; }
# Charts aligned at a range occurrence (--align-range): scanned too, each side's occurrence found
# and measured first, both charts as long as the longer (two runs whose steps differ in length),
# with the sides' device and kernel filters; an occurrence a side lacks is the loaded error. The
# page, and aligned charts of sides cut to a window, still load.
"$make" steps "$work/s3.gpuh" 3 2 40 >/dev/null || { echo "FAIL: make_capture steps"; exit 1; }
"$make" steps "$work/s4.gpuh" 4 3 40 >/dev/null || { echo "FAIL: make_capture steps"; exit 1; }
aligned=0
for flags in "--align-range step@2" "--align-range step@7 --device 0" "--align-range step@3 --kernel kernelA" \
             "--align-range step@99" "--align-range nope@1"; do
  rm -f "$work/s.svg" "$work/w.svg"
  # shellcheck disable=SC2086  # the flags are words
  "$cli" diff "$work/s3.gpuh" "$work/s4.gpuh" $flags -o "$work/s.svg" --max-memory 1K >"$work/s.out" 2>"$work/s.err"
  rs=$?
  # shellcheck disable=SC2086
  "$cli" diff "$work/s3.gpuh" "$work/s4.gpuh" $flags -o "$work/w.svg" --in-memory >"$work/w.out" 2>"$work/w.err"
  rw=$?
  what="diff s3 s4 $flags -o"
  if [[ $rs != "$rw" ]] || ! cmp -s "$work/s.out" "$work/w.out" || ! cmp -s "$work/s.err" "$work/w.err"; then
    echo "FAIL: $what: exit $rs (--in-memory $rw), or its report or stderr differ: $(head -3 "$work/s.err")"; fail=1
  elif [[ -e $work/w.svg ]] && ! cmp -s <(strip_flags "$work/s.svg") <(strip_flags "$work/w.svg"); then
    echo "FAIL: $what: the aligned charts differ from --in-memory's beyond the flags"; fail=1
  elif [[ -e $work/w.svg && $(counts "$work/s.svg") != "$(counts "$work/w.svg")" ]]; then
    echo "FAIL: $what: flags $(counts "$work/s.svg"), --in-memory $(counts "$work/w.svg")"; fail=1
  else
    aligned=$((aligned + 1))
  fi
done
[[ $aligned == 5 ]] || { echo "FAIL: $aligned of 5 aligned diff charts scanned as loaded"; fail=1; }
for args in "--from 1ms -o $work/d.html" "--align-range step@2 --from 100us -o $work/d.svg"; do
  # shellcheck disable=SC2086
  "$cli" diff "$work/n5.gpuh" "$work/n7.gpuh" $args --max-memory 1K >/dev/null 2>"$work/d.err"
  grep -q "Not loaded" "$work/d.err" || { echo "FAIL: diff $args was not refused a load: $(cat "$work/d.err")"; fail=1; }
done
[[ $compared == 24 ]] || { echo "FAIL: $compared of 24 compared"; fail=1; }
[[ $fail == 0 ]] && echo "ok: filtered diffs scanned agree with --in-memory ($compared)"
exit $fail
