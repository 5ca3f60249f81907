#!/usr/bin/env bash
# `stats` of one capture read as a stream (the default for --by kernel/stream/device) against
# the same capture loaded whole (--in-memory): the same stdout, stderr and exit code, for one
# and several decoding threads, on the fixtures (damaged ones too), fabricated captures of
# several chunks, and, when given, a simulator capture with copies and memsets on two GPUs.
#   stats_stream_test.sh [--part captures|jobs] GANTT_CLI MAKE_CAPTURE FIXTURES [SIM_LIB_DIR HOOK PROGRAM ARGS...]
# --part: only each capture's reports (captures), or only the jobs, the summaries and diff
# (jobs): ctest runs the two side by side; without it, both. With a simulator program, its
# capture alone: cli_stats_stream compares the others.
set -u
part=all
if [ "$1" = --part ]; then part=$2; shift 2; fi
case $part in all | captures | jobs) ;; *) echo "unknown part $part"; exit 2 ;; esac
want() { [ "$part" = all ] || [ "$part" = "$1" ]; }
cli=$1 make=$2 fixtures=$3
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0

sim=0
if [ $# -lt 3 ]; then
  # Several chunks (256 KiB each) in a capture small enough to compare every combination of
  # options; the memory comparison below takes a larger one.
  "$make" synth "$work/synth.gpuh" 50000 5 256 || { echo "FAIL: make_capture synth"; exit 1; }
  "$make" synth "$work/big.gpuh" 300000 5 || { echo "FAIL: make_capture synth"; exit 1; }
  "$make" steps "$work/steps.gpuh" 3 2 40 >/dev/null || { echo "FAIL: make_capture steps"; exit 1; }
  "$make" nvtx "$work/nvtx.gpuh" 5 >/dev/null || { echo "FAIL: make_capture nvtx"; exit 1; }
  "$make" hostile "$work/hostile.gpuh" >/dev/null 2>&1 || { echo "FAIL: make_capture hostile"; exit 1; }
  # 20,000 identical steps compress to 4 KB: more records than --max-records-per-byte allows.
  "$make" nvtx "$work/amplified.gpuh" 20000 >/dev/null || { echo "FAIL: make_capture nvtx"; exit 1; }
  captures=("$fixtures/small.gpuh" "$fixtures/no_index.gpuh" "$fixtures/truncated.gpuh" "$fixtures/corrupt.gpuh"
            "$fixtures/v1/small.gpuh" "$fixtures/v2/small.gpuh" "$work/synth.gpuh" "$work/steps.gpuh" "$work/nvtx.gpuh"
            "$work/hostile.gpuh" "$work/amplified.gpuh")
  chunks=$("$cli" info "$work/synth.gpuh" | sed -n 's/.* \([0-9]*\) chunks.*/\1/p')
  [ "${chunks:-0}" -ge 3 ] || { echo "FAIL: the synthetic capture has ${chunks:-?} chunks; the test needs several"; fail=1; }
else
  sim=1
  simlib=$1 hook=$2
  shift 2
  # Two simulated devices: multi_gpu records nothing on one.
  if ! env LD_LIBRARY_PATH="$simlib" LD_PRELOAD="$hook" GPUHOOK_OUTPUT="$work/sim.gpuh" GPUHOOK_SIM_DEVICES=2 "$@" \
       >"$work/sim.out" 2>&1; then
    echo "FAIL: the simulator program failed:"; cat "$work/sim.out"; exit 1
  fi
  captures=("$work/sim.gpuh")
fi

run() {  # run NAME ARGS...: stdout, stderr and exit code in $work/NAME.*
  local name=$1
  shift
  "$cli" stats "$@" >"$work/$name.out" 2>"$work/$name.err"
  echo $? >"$work/$name.rc"
}

compared=0
compare() {  # compare LABEL INPUT...: streamed on 1 and 3 threads against --in-memory, every grouping and format
  local label=$1 by fmt j part
  shift
  for by in kernel stream device range; do
    for fmt in text json; do
      run whole "$@" --by "$by" --format "$fmt" --gaps 5 --in-memory
      for j in 1 3; do
        run streamed "$@" --by "$by" --format "$fmt" --gaps 5 -j "$j"
        for part in out err rc; do
          if ! cmp -s "$work/whole.$part" "$work/streamed.$part"; then
            echo "FAIL: $label --by $by --format $fmt -j $j: std$part differs from --in-memory"
            diff "$work/whole.$part" "$work/streamed.$part" | head -8
            fail=1
          fi
        done
        compared=$((compared + 1))
      done
    done
  done
}
if want captures; then
  for cap in "${captures[@]}"; do
    compare "$(basename "$cap")" "$cap"
  done
fi

# Several captures as the ranks of one job: each streamed, put on one clock by their
# collectives, merged. A generated job of 12 ranks on 3 hosts whose clocks are milliseconds
# apart (the makespan and the gaps' places depend on the alignment), and jobs of the fixtures
# with damaged and unreadable members (warnings in order, exit codes).
if want jobs && [ $sim = 0 ]; then
  jobs=()
  if [ -n "${GEN_JOB:-}" ]; then
    mkdir "$work/job" && "$GEN_JOB" "$work/job" 12 5000 >/dev/null 2>&1 || { echo "FAIL: gen_job"; exit 1; }
    grep -qv ' 0$' "$work/job/offsets.txt" || { echo "FAIL: the generated job has no clock offsets to align"; fail=1; }
    jobs+=("$(ls "$work"/job/rank*.gpuh | tr '\n' ' ')")
  fi
  jobs+=("$fixtures/small.gpuh $fixtures/v2/small.gpuh $work/synth.gpuh $work/nvtx.gpuh"
         "$fixtures/truncated.gpuh $fixtures/small.gpuh $fixtures/corrupt.gpuh"
         "$fixtures/small.gpuh $fixtures/not_a_capture.gpuh"
         "$work/steps.gpuh $fixtures/small.gpuh")
  for job in "${jobs[@]}"; do
    label="job of $(echo $job | wc -w) captures ($(basename "${job%% *}") ...)"
    compare "$label" $job
    rm -f "$work/job_s.gsum" "$work/job_w.gsum"
    run sum_s $job --summary -o "$work/job_s.gsum"
    run sum_w $job --summary -o "$work/job_w.gsum" --in-memory
    sed -i "s|job_[sw].gsum|job.gsum|" "$work/sum_s.err" "$work/sum_w.err"
    if ! cmp -s "$work/sum_s.err" "$work/sum_w.err" || ! cmp -s "$work/sum_s.rc" "$work/sum_w.rc"; then
      echo "FAIL: $label --summary: stderr or exit code differs from --in-memory"; diff "$work/sum_w.err" "$work/sum_s.err" | head -5
      fail=1
    elif [ -s "$work/job_w.gsum" ]; then
      run a "$work/job_s.gsum" --by device --format json
      run b "$work/job_w.gsum" --by device --format json
      cmp -s "$work/a.out" "$work/b.out" || { echo "FAIL: $label: the streamed job summary's report differs"; diff "$work/b.out" "$work/a.out" | head -6; fail=1; }
    fi
  done
fi

if want jobs; then
  # The map step: a summary written from the stream reads back as the loaded capture's does,
  # in stats and in diff (against the capture itself).
  mkdir "$work/s" "$work/w"
  i=0
  for cap in "${captures[@]}"; do
    i=$((i + 1))
    name=$i-$(basename "$cap" .gpuh)
    # Written from inside each directory, so that "wrote NAME" reads the same in both.
    (cd "$work/s" && "$cli" stats "$cap" --summary -o "$name.gsum" -j 3 >/dev/null 2>"$work/sum_s.err")
    rc_s=$?
    (cd "$work/w" && "$cli" stats "$cap" --summary -o "$name.gsum" --in-memory >/dev/null 2>"$work/sum_w.err")
    rc_w=$?
    if [ "$rc_s" != "$rc_w" ] || ! cmp -s "$work/sum_s.err" "$work/sum_w.err"; then
      echo "FAIL: $name --summary: exit $rc_s/$rc_w or stderr differs from --in-memory"; diff "$work/sum_w.err" "$work/sum_s.err" | head -5
      fail=1
      continue
    fi
    [ -s "$work/w/$name.gsum" ] || continue  # no summary written (no header)
    # Names are the program's bytes, not always UTF-8: the summary keeps them and reads back.
    for side in s w; do
      "$cli" stats "$work/$side/$name.gsum" >/dev/null 2>"$work/back.err" ||
        { echo "FAIL: $name: the summary written ($side) does not read back: $(cat "$work/back.err")"; fail=1; }
    done
    grep -q libprotobuf "$work/sum_s.err" "$work/sum_w.err" && { echo "FAIL: $name: protobuf complained writing the summary"; fail=1; }
    for by in kernel stream device range; do
      run a "$work/s/$name.gsum" --by "$by" --format json
      run b "$work/w/$name.gsum" --by "$by" --format json
      cmp -s "$work/a.out" "$work/b.out" || { echo "FAIL: $name: the streamed summary's --by $by report differs"; diff "$work/b.out" "$work/a.out" | head -6; fail=1; }
    done
    "$cli" diff "$work/s/$name.gsum" "$cap" --format json >"$work/da.json" 2>&1
    "$cli" diff "$work/w/$name.gsum" "$cap" --format json >"$work/db.json" 2>&1
    cmp -s "$work/da.json" "$work/db.json" || { echo "FAIL: $name: diff from the streamed summary differs"; diff "$work/db.json" "$work/da.json" | head -6; fail=1; }
    compared=$((compared + 1))
  done
fi

if want jobs && [ $sim = 0 ]; then
  # diff of two captures read as streams against the same two loaded whole: the same report and
  # exit code while every kernel has at most 10,000 instances (above, the streamed side compares
  # through the sketch and says so).
  "$make" synth "$work/d1.gpuh" 20000 1 >/dev/null && "$make" synth "$work/d2.gpuh" 20000 2 >/dev/null ||
    { echo "FAIL: make_capture synth for diff"; exit 1; }
  for pair in "d1 d2" "d2 d1" "d1 d1" "synth synth" "steps steps"; do
    set -- $pair
    "$cli" diff "$work/$1.gpuh" "$work/$2.gpuh" --format json >"$work/ds.json" 2>"$work/ds.err"
    rc_s=$?
    "$cli" diff "$work/$1.gpuh" "$work/$2.gpuh" --format json --in-memory >"$work/dw.json" 2>"$work/dw.err"
    rc_w=$?
    if [ "$rc_s" != "$rc_w" ] || ! cmp -s "$work/ds.json" "$work/dw.json" || ! cmp -s "$work/ds.err" "$work/dw.err"; then
      echo "FAIL: diff $pair: streamed (exit $rc_s) differs from --in-memory (exit $rc_w)"
      diff "$work/dw.json" "$work/ds.json" | head -8
      fail=1
    fi
    compared=$((compared + 1))
  done
fi

# The streamed path is the one taken: its memory stays far below the loaded model's. A
# 300,000-kernel capture loads into ~120 MB; streamed it is ~40 MB whatever the size.
# (Not under a sanitizer: its shadow memory and quarantine dwarf what is measured.)
if want jobs && [ $sim = 0 ] && command -v /usr/bin/time >/dev/null && [ -z "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}" ]; then
  /usr/bin/time -f "%M" -o "$work/rss.whole" "$cli" stats "$work/big.gpuh" --in-memory >/dev/null 2>&1
  /usr/bin/time -f "%M" -o "$work/rss.streamed" "$cli" stats "$work/big.gpuh" -j 1 >/dev/null 2>&1
  whole=$(tail -1 "$work/rss.whole") streamed=$(tail -1 "$work/rss.streamed")
  echo "peak RSS, 300,000 kernels: loaded ${whole} KiB, streamed ${streamed} KiB"
  if [ "$((streamed * 5 / 2))" -ge "$whole" ]; then
    echo "FAIL: streamed stats used ${streamed} KiB, not under 40% of the loaded ${whole} KiB"
    fail=1
  fi
  /usr/bin/time -f "%M" -o "$work/rss.dwhole" "$cli" diff "$work/big.gpuh" "$work/big.gpuh" --in-memory >/dev/null 2>&1
  /usr/bin/time -f "%M" -o "$work/rss.dstreamed" "$cli" diff "$work/big.gpuh" "$work/big.gpuh" >/dev/null 2>&1
  whole=$(tail -1 "$work/rss.dwhole") streamed=$(tail -1 "$work/rss.dstreamed")
  echo "peak RSS, diff of two 300,000-kernel captures: loaded ${whole} KiB, streamed ${streamed} KiB"
  if [ "$((streamed * 2))" -ge "$whole" ]; then
    echo "FAIL: streamed diff used ${streamed} KiB, not under half of the loaded ${whole} KiB"
    fail=1
  fi
fi

if want captures && [ $sim = 0 ]; then
  # A bad --threads value is refused like any other bad flag.
  "$cli" stats "$work/synth.gpuh" -j -1 >/dev/null 2>&1 && { echo "FAIL: -j -1 accepted"; fail=1; }
fi

[ $fail -eq 0 ] && echo "PASS ($part): $compared streamed reports equal to the loaded ones"
exit $fail
