#!/usr/bin/env bash
# `render` of one capture read as a stream against the same capture loaded whole
# (--in-memory): the same chart, byte for byte, and the same exit code, for one and several
# decoding threads, lanes per stream, per device and per rank, two widths, with and without host lanes,
# whole or filtered (a time window, devices, streams),
# on the fixtures, fabricated captures of many chunks and, when given, simulator captures. The
# streamed path has to be the one taken where the chart allows it (-j makes a capture loaded
# whole after all say why): on the fabricated captures and every simulator capture.
#   render_stream_test.sh [--part charts|filters] GANTT_CLI MAKE_CAPTURE FIXTURES [SIM_LIB_DIR HOOK PROGRAM...]
# --part: only the whole charts and those over --max-memory (charts), or only the filtered
# charts and diff -o's pages (filters): ctest runs the two side by side; without it, both.
set -u
part=all
if [ "$1" = --part ]; then part=$2; shift 2; fi
case $part in all | charts | filters) ;; *) echo "unknown part $part"; exit 2 ;; esac
want() { [ "$part" = all ] || [ "$part" = "$1" ]; }
cli=$1 make=$2 fixtures=$3
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0 compared=0 streamed=0 refusals=0

sim=0
if [ $# -lt 3 ]; then
  # Several chunks (256 KiB each) in a capture small enough to compare every combination of
  # options; the memory comparison below takes a larger one.
  "$make" synth "$work/synth.gpuh" 50000 5 256 || { echo "FAIL: make_capture synth"; exit 1; }
  "$make" synth "$work/big.gpuh" 300000 5 || { echo "FAIL: make_capture synth"; exit 1; }
  "$make" synth "$work/small.gpuh" 3000 2 >/dev/null || { echo "FAIL: make_capture synth"; exit 1; }
  "$make" steps "$work/steps.gpuh" 3 2 40 >/dev/null || { echo "FAIL: make_capture steps"; exit 1; }
  # Hostile values (huge ids, times, names), devices and names, and NVTX ranges around launches.
  for kind in hostile hostile_device script_names; do
    "$make" "$kind" "$work/$kind.gpuh" >/dev/null 2>&1 || { echo "FAIL: make_capture $kind"; exit 1; }
  done
  "$make" nvtx "$work/nvtx.gpuh" 5 >/dev/null || { echo "FAIL: make_capture nvtx"; exit 1; }
  # More records than --max-records-per-byte allows: the same error as the loader's.
  "$make" nvtx "$work/amplified.gpuh" 20000 >/dev/null || { echo "FAIL: make_capture nvtx"; exit 1; }
  # A killed process's file: no index (one share), a truncated tail.
  head -c $(($(stat -c %s "$work/synth.gpuh") * 7 / 10)) "$work/synth.gpuh" >"$work/killed.gpuh"
  captures=("$fixtures/small.gpuh" "$fixtures/no_index.gpuh" "$fixtures/truncated.gpuh" "$fixtures/corrupt.gpuh"
            "$fixtures/v1/small.gpuh" "$fixtures/v2/small.gpuh" "$work/synth.gpuh" "$work/small.gpuh" "$work/steps.gpuh"
            "$work/hostile.gpuh" "$work/hostile_device.gpuh" "$work/script_names.gpuh" "$work/nvtx.gpuh" "$work/killed.gpuh"
            "$work/amplified.gpuh")
  must_stream=("$work/synth.gpuh" "$work/small.gpuh" "$work/steps.gpuh" "$work/nvtx.gpuh" "$work/hostile.gpuh"
               "$work/killed.gpuh")
else
  sim=1
  # The simulator programs' captures only: cli_render_stream compares the others, and checks
  # the memory bounds and the options.
  captures=() must_stream=()
  simlib=$1 hook=$2
  shift 2
  i=0
  for program in "$@"; do
    i=$((i + 1))
    if ! env LD_LIBRARY_PATH="$simlib" LD_PRELOAD="$hook" GPUHOOK_OUTPUT="$work/sim$i.gpuh" "$program" >"$work/sim.out" 2>&1; then
      echo "FAIL: the simulator program $program failed:"; cat "$work/sim.out"; exit 1
    fi
    captures+=("$work/sim$i.gpuh")
    must_stream+=("$work/sim$i.gpuh")
  done
fi

# The streamed chart ($work/streamed.svg, exit RC_S) against the loaded one ($work/whole.svg,
# exit RC_W): the same exit code and, when drawn, the same bytes.
same_chart() {  # same_chart NAME RC_S RC_W
  if [ "$2" != "$3" ]; then
    echo "FAIL: $1: exit $2, --in-memory $3"; fail=1
  elif [ -e "$work/whole.svg" ] && ! cmp -s "$work/whole.svg" "$work/streamed.svg"; then
    echo "FAIL: $1: the SVG differs from --in-memory's"
    diff <(tr '>' '\n' <"$work/whole.svg") <(tr '>' '\n' <"$work/streamed.svg") | head -6
    fail=1
  fi
}

# Every capture with every lane kind, and in turn one of the other option sets (width 700,
# --host), so that each set meets several captures without every capture meeting every set.
if want charts; then
  compared=0 streamed=0 turn=0
  for cap in "${captures[@]}"; do
    turn=$((turn + 1))
    for lanes in stream device rank; do
      for width in 1920 700; do
        # Per rank (the capture's one lane under its devices' headers) at one width.
        [ "$lanes" = rank ] && [ "$width" != 1920 ] && continue
        for host in --no-host --host; do
          # Host lanes at one width: they fold the host calls as the GPU lanes fold the kernels.
          [ "$host" = --host ] && [ "$width" != 1920 ] && continue
          [ "$width$host" = "1920--no-host" ] || [ $(((turn + ${#lanes}) % 2)) = 0 ] || continue
          args=(--no-annotate --lanes "$lanes" --width "$width")
          [ "$host" = --no-host ] && args+=(--no-host)
          "$cli" render "$cap" -o "$work/whole.svg" "${args[@]}" --in-memory 2>/dev/null
          rc_w=$?
          for jobs in 1 3; do
            rm -f "$work/streamed.svg"
            "$cli" render "$cap" -o "$work/streamed.svg" "${args[@]}" -j "$jobs" 2>"$work/streamed.err"
            rc_s=$?
            name="$(basename "$cap") --lanes $lanes --width $width $host -j $jobs"
            same_chart "$name" "$rc_s" "$rc_w"
            if grep -q "loaded whole" "$work/streamed.err"; then
              for must in "${must_stream[@]}"; do
                [ "$cap" = "$must" ] && { echo "FAIL: $name was not streamed: $(cat "$work/streamed.err")"; fail=1; }
              done
            else
              streamed=$((streamed + 1))
              [ "$lanes$width$host$jobs" = stream1920--host3 ] && echo "streamed: $(basename "$cap"): $(tail -1 "$work/streamed.err")"
            fi
            compared=$((compared + 1))
          done
          rm -f "$work/whole.svg"
        done
      done
    done
  done
fi

# The picture is bounded: the streamed render of the 300,000-kernel capture holds far less
# than the loaded model. (Not under a sanitizer: its shadow memory dwarfs what is measured.)
if want charts && [ $sim = 0 ] && command -v /usr/bin/time >/dev/null && [ -z "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}" ]; then
  args=(--no-annotate --no-host -o "$work/rss.svg")
  /usr/bin/time -f "%M" -o "$work/rss.whole" "$cli" render "$work/big.gpuh" "${args[@]}" --in-memory >/dev/null 2>&1
  /usr/bin/time -f "%M" -o "$work/rss.streamed" "$cli" render "$work/big.gpuh" "${args[@]}" -j 1 >/dev/null 2>&1
  rss_whole=$(tail -1 "$work/rss.whole") rss_streamed=$(tail -1 "$work/rss.streamed")
  echo "peak RSS, render of 300,000 kernels: loaded ${rss_whole} KiB, streamed ${rss_streamed} KiB"
  if [ "$((rss_streamed * 2))" -ge "$rss_whole" ]; then
    echo "FAIL: the streamed render used ${rss_streamed} KiB, not under half of the loaded ${rss_whole} KiB"
    fail=1
  fi
fi

# Over --max-memory, a chart with annotations is read as a stream with the flags a stream
# can tell: low occupancy, copies overlapped and idle gaps, with their host labels, as when
# loaded; queue delays on the kernels drawn one by one. Copies that could have overlapped are
# not flagged. So the chart is the loaded one but for those marks and the footer's flags line,
# whose other counts are the loaded ones. With the default idle-gap threshold and 1 us.
# sed, not python3: the test calls it some 200 times, and a python3 start (a pyenv shim here)
# took half a second, more than the two renders it compares.
strip_flags() {  # the SVG without the marks of copies that could have overlapped and the flags line
  sed -z -E 's#<rect[^>]*><title>copy not overlapped[^<]*</title></rect>\n?##g; s#<text[^>]*>flags[^<]*</text>##g' "$1"
}
counts() { grep -o "occupancy &lt; [0-9]*%: [0-9]*\|copies overlapped: [0-9]*\|idle gaps &gt; [^:]*: [0-9]*" "$1" | tr '\n' ' '; }
# refused NAME CAPTURE ERR: true when the chart was not drawn because it needs the capture
# loaded whole and that is over --max-memory (load_limit_test.sh); a capture that must stream
# never is.
refused() {
  grep -q "Not loaded: --max-memory SIZE loads it anyway" "$3" || return 1
  for must in "${must_stream[@]}"; do
    [ "$2" = "$must" ] && { echo "FAIL: $1 was refused as a whole load: $(cat "$3")"; fail=1; }
  done
  refusals=$((refusals + 1))
  return 0
}
if want charts; then
  flagged=0 refusals=0
  for cap in "${captures[@]}"; do
    for gap in default 1us rank; do
      args=()
      [ "$gap" = 1us ] && args=(--idle-gap "$gap")
      [ "$gap" = rank ] && args=(--lanes rank)
      rm -f "$work/whole.svg" "$work/over.svg"
      "$cli" render "$cap" -o "$work/whole.svg" "${args[@]}" --in-memory 2>/dev/null
      rc_w=$?
      "$cli" render "$cap" -o "$work/over.svg" "${args[@]}" --max-memory 1 -j 3 2>"$work/over.err"
      rc_s=$?
      name="$(basename "$cap") ${args[*]:-(default)} over --max-memory"
      if [ "$rc_s" = 2 ] && refused "$name" "$cap" "$work/over.err"; then
        :
      elif [ "$rc_s" != "$rc_w" ]; then
        echo "FAIL: $name: exit $rc_s, --in-memory $rc_w"; fail=1
      elif [ -e "$work/whole.svg" ]; then
        if ! cmp -s <(strip_flags "$work/whole.svg") <(strip_flags "$work/over.svg"); then
          echo "FAIL: $name: the chart differs from --in-memory's beyond the missed copy overlaps and the flags line"
          diff <(strip_flags "$work/whole.svg" | tr '>' '\n') <(strip_flags "$work/over.svg" | tr '>' '\n') | head -6
          fail=1
        fi
        if [ "$(counts "$work/whole.svg")" != "$(counts "$work/over.svg")" ]; then
          echo "FAIL: $name: flags $(counts "$work/over.svg"), --in-memory $(counts "$work/whole.svg")"; fail=1
        fi
        grep -q "flags (read as a stream; --in-memory flags all): queue delay" "$work/over.svg" && flagged=$((flagged + 1))
      fi
    done
  done
  for must in "${must_stream[@]}"; do
    "$cli" render "$must" -o "$work/over.svg" --max-memory 1 2>"$work/over.err" >/dev/null ||
      { echo "FAIL: render $(basename "$must") over --max-memory: $(cat "$work/over.err")"; fail=1; }
    grep -q "over --max-memory 1 B: read as a stream: queue delays flagged on the kernels drawn one by one" "$work/over.err" ||
      { echo "FAIL: render $(basename "$must") over --max-memory did not say so: $(cat "$work/over.err")"; fail=1; }
    grep -q "flags (read as a stream; --in-memory flags all): queue delay" "$work/over.svg" ||
      { echo "FAIL: $(basename "$must") over --max-memory: the footer does not say the flags were streamed"; fail=1; }
  done
  echo "flagged as a stream over --max-memory: $flagged charts"
  if [ $sim = 0 ]; then
    "$cli" render "$work/small.gpuh" -o "$work/in.svg" --max-memory 1K --in-memory 2>/dev/null
    grep -q "flags: queue delay" "$work/in.svg" || { echo "FAIL: --in-memory over --max-memory drew no flags"; fail=1; }
  fi
fi

# Filters are read as a stream too: the events in a time window (--from, --to, --range) on the
# devices and streams asked for (--device, --stream), the kernels --kernel names, with and
# without the flags, against --in-memory's selection. Windows past a capture's end, and ranges
# a capture does not have, give the loader's error and exit code.
if want filters; then
  windowed=0 turn=0
  for cap in "${captures[@]}"; do
    turn=$((turn + 1))
    w=0
    for window in "--from 1ms --to 3ms" "--to 2ms --stream 7" "--from 300us --device 0" "--range step@2" \
                  "--range forward@3 --from 1us --device 0" "--kernel gemm|Gemm" "--kernel elementwise|relu --from 1ms" \
                  "--from 500us --lanes rank"; do
      # Each capture takes every other window, in turn: every window meets half the captures.
      w=$((w + 1))
      [ $(((turn + w) % 2)) = 0 ] || continue
      read -ra win <<<"$window"
      name="$(basename "$cap") $window"
      rm -f "$work/whole.svg"
      "$cli" render "$cap" -o "$work/whole.svg" --no-annotate "${win[@]}" --in-memory 2>/dev/null
      rc_w=$?
      # 3 threads (the unit test StreamRender.AWindowIsTheLoadedChartsWindow takes 1 and 3).
      rm -f "$work/streamed.svg"
      "$cli" render "$cap" -o "$work/streamed.svg" --no-annotate "${win[@]}" -j 3 2>"$work/streamed.err"
      same_chart "$name" $? "$rc_w"
      if grep -q "loaded whole" "$work/streamed.err"; then
        for must in "${must_stream[@]}"; do
          [ "$cap" = "$must" ] && [ "$rc_w" = 0 ] && { echo "FAIL: $name was not streamed: $(cat "$work/streamed.err")"; fail=1; }
        done
      elif [ -e "$work/streamed.svg" ]; then
        windowed=$((windowed + 1))
      fi
      rm -f "$work/whole.svg" "$work/over.svg"
      "$cli" render "$cap" -o "$work/whole.svg" "${win[@]}" --idle-gap 1us --in-memory 2>/dev/null
      rc_w=$?
      "$cli" render "$cap" -o "$work/over.svg" "${win[@]}" --idle-gap 1us --max-memory 1 -j 3 2>"$work/over.err"
      rc_s=$?
      if [ "$rc_s" = 2 ] && refused "$name over --max-memory" "$cap" "$work/over.err"; then
        :
      elif [ "$rc_s" != "$rc_w" ]; then
        echo "FAIL: $name over --max-memory: exit $rc_s, --in-memory $rc_w"; fail=1
      elif [ -e "$work/whole.svg" ]; then
        cmp -s <(strip_flags "$work/whole.svg") <(strip_flags "$work/over.svg") ||
          { echo "FAIL: $name over --max-memory: the chart differs from --in-memory's beyond the flags"; fail=1; }
        [ "$(counts "$work/whole.svg")" = "$(counts "$work/over.svg")" ] ||
          { echo "FAIL: $name over --max-memory: flags $(counts "$work/over.svg"), --in-memory $(counts "$work/whole.svg")"; fail=1; }
      fi
    done
  done
  echo "filtered charts streamed: $windowed; charts that need the capture whole refused over --max-memory: $refusals"
  [ "$windowed" -gt 0 ] || { echo "FAIL: no filtered chart was streamed"; fail=1; }
fi

# diff -o: both charts and the differential flame graph are read as streams, as the report is:
# the same page as --in-memory's but for the flags a stream cannot tell, the same report and
# exit code. Each capture against itself and against the next one.
if want filters; then
  diffed=0
  for ((i = 0; i < ${#captures[@]}; i++)); do
    a=${captures[$i]}
    for b in "$a" "${captures[$(((i + 1) % ${#captures[@]}))]}"; do
      name="diff -o $(basename "$a") $(basename "$b")"
      rm -f "$work/whole.svg" "$work/over.svg"
      "$cli" diff "$a" "$b" -o "$work/whole.svg" --in-memory >"$work/whole.out" 2>/dev/null
      rc_w=$?
      "$cli" diff "$a" "$b" -o "$work/over.svg" -j 3 >"$work/over.out" 2>/dev/null
      rc_s=$?
      if [ "$rc_s" != "$rc_w" ] || ! cmp -s "$work/whole.out" "$work/over.out"; then
        echo "FAIL: $name: exit $rc_s or its report differs from --in-memory's (exit $rc_w)"; fail=1
      elif [ -e "$work/whole.svg" ] || [ -e "$work/over.svg" ]; then
        cmp -s <(strip_flags "$work/whole.svg") <(strip_flags "$work/over.svg") ||
          { echo "FAIL: $name: the page differs from --in-memory's beyond the flags"
            diff <(strip_flags "$work/whole.svg" | tr '>' '\n') <(strip_flags "$work/over.svg" | tr '>' '\n') | head -6; fail=1; }
        [ "$(counts "$work/whole.svg")" = "$(counts "$work/over.svg")" ] ||
          { echo "FAIL: $name: flags $(counts "$work/over.svg"), --in-memory $(counts "$work/whole.svg")"; fail=1; }
        grep -q "flags (read as a stream" "$work/over.svg" && diffed=$((diffed + 1))
        for must in "${must_stream[@]}"; do
          [ "$a" = "$must" ] && [ "$b" = "$a" ] && [ "$rc_w" != 2 ] && ! grep -q "flags (read as a stream" "$work/over.svg" &&
            { echo "FAIL: $name was not streamed"; fail=1; }
        done
      fi
    done
  done
  echo "diff pages streamed: $diffed"
  [ "$diffed" -gt 0 ] || { echo "FAIL: no diff page was streamed"; fail=1; }
fi
# The streamed page's memory stays far below the two loaded captures'.
# (Not under a sanitizer: its shadow memory and quarantine dwarf what is measured.)
if want filters && [ $sim = 0 ] && command -v /usr/bin/time >/dev/null && [ -z "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}" ]; then
  /usr/bin/time -f "%M" -o "$work/rss.whole" "$cli" diff "$work/big.gpuh" "$work/big.gpuh" -o "$work/a.svg" --in-memory >/dev/null 2>&1
  /usr/bin/time -f "%M" -o "$work/rss.streamed" "$cli" diff "$work/big.gpuh" "$work/big.gpuh" -o "$work/b.svg" >/dev/null 2>&1
  rss_whole=$(tail -1 "$work/rss.whole") rss_streamed=$(tail -1 "$work/rss.streamed")
  echo "peak RSS, diff -o of two 300,000-kernel captures: loaded ${rss_whole} KiB, streamed ${rss_streamed} KiB"
  [ "$((rss_streamed * 2))" -lt "$rss_whole" ] ||
    { echo "FAIL: diff -o streamed used ${rss_streamed} KiB, not under half of the loaded ${rss_whole} KiB"; fail=1; }
fi

if want charts && [ $sim = 0 ]; then
  # What it does not cover is loaded whole, and says why when asked (-j).
  "$cli" render "$work/small.gpuh" -o "$work/a.svg" -j 2 2>"$work/why.err" >/dev/null
  grep -q "loaded whole for annotations" "$work/why.err" || { echo "FAIL: no reason given for loading whole: $(cat "$work/why.err")"; fail=1; }
  "$cli" render "$work/small.gpuh" -o "$work/a.svg" -j -1 >/dev/null 2>&1 && { echo "FAIL: -j -1 accepted"; fail=1; }
fi

want charts && { [ "$streamed" -gt 0 ] || { echo "FAIL: no chart was streamed"; fail=1; }; }
[ $fail -eq 0 ] && echo "PASS ($part): the streamed charts equal the loaded ones ($compared whole charts compared, $streamed taken as a stream)"
exit $fail
