#!/usr/bin/env bash
# render --view flame (of a capture or the ranks of a job), --view steps (of a capture or a job),
# --view utilisation, memory and comm (of a capture or a job), stats --timeline and
# export --format folded read it by a scan, and draw what --in-memory draws from the loaded model, byte for byte: NVTX range
# paths and steps, copies and memsets, NCCL kernels joined to their calls, hostile names, damaged
# files (the same exit code). -j 2 names the captures that are loaded whole after all, so the
# scan is seen to be taken.
#   views_scan_test.sh GANTT_CLI MAKE_CAPTURE FIXTURES_DIR
set -u
cli=$1 make=$2 fixtures=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
"$make" synth "$work/synth.gpuh" 20000 5 256 >/dev/null || { echo "FAIL: make_capture synth"; exit 1; }
"$make" steps "$work/steps.gpuh" 3 2 40 >/dev/null || { echo "FAIL: make_capture steps"; exit 1; }
# Its last step never popped, and a counter sample 5 ms after the last work: the chunk index
# ends past the last time a load has.
"$make" steps "$work/open.gpuh" 4 2 6 open >/dev/null || { echo "FAIL: make_capture steps open"; exit 1; }
"$make" nvtx "$work/nvtx.gpuh" 5 >/dev/null || { echo "FAIL: make_capture nvtx"; exit 1; }
for kind in hostile hostile_device script_names; do
  "$make" "$kind" "$work/$kind.gpuh" >/dev/null 2>&1 || { echo "FAIL: make_capture $kind"; exit 1; }
done
# A killed process's file: no index (one share), a truncated tail.
head -c $(($(stat -c %s "$work/synth.gpuh") * 7 / 10)) "$work/synth.gpuh" >"$work/killed.gpuh"

# same VIEW NAME CAPTURE...: the scanned and the loaded view of the captures.
same() {
  local view=$1 name="$1: $2" rs rw
  shift 2
  rm -f "$work/s.svg" "$work/w.svg"
  "$cli" render "$@" -o "$work/s.svg" --view "$view" -j 2 >/dev/null 2>"$work/s.err"
  rs=$?
  "$cli" render "$@" -o "$work/w.svg" --view "$view" --in-memory >/dev/null 2>"$work/w.err"
  rw=$?
  if [[ $rs != "$rw" ]]; then
    echo "FAIL: $name: exit $rs, --in-memory $rw: $(cat "$work/s.err")"; fail=1
  elif [[ -e $work/w.svg ]] && ! cmp -s "$work/s.svg" "$work/w.svg"; then
    echo "FAIL: $name: the SVG differs from --in-memory's"; fail=1
  elif [[ $(grep -v "loaded whole" "$work/s.err") != "$(sed 's/w\.svg/s.svg/' "$work/w.err")" ]]; then
    echo "FAIL: $name: stderr differs: $(cat "$work/s.err") against $(cat "$work/w.err")"; fail=1
  fi
}
scanned=0
for view in flame steps; do
  for cap in synth steps nvtx hostile script_names killed; do
    same "$view" "$cap" "$work/$cap.gpuh"
    grep -q "loaded whole" "$work/s.err" && { echo "FAIL: $view: $cap was loaded, not scanned: $(cat "$work/s.err")"; fail=1; }
    grep -Eq "a flame graph of [1-9][0-9]* stacks|[0-9]+ steps" "$work/s.err" && scanned=$((scanned + 1))
  done
  # The fixtures: damaged and old files, which a scan may leave to the loader.
  for cap in small no_index truncated corrupt v1/small v2/small; do same "$view" "fixtures/$cap" "$fixtures/$cap.gpuh"; done
done
# The steps are drawn: 40 of them in the steps capture.
"$cli" render "$work/steps.gpuh" -o "$work/st.svg" --view steps 2>"$work/st.err" >/dev/null
grep -q ": 40 steps of \"step\"" "$work/st.err" || { echo "FAIL: the steps capture's 40 steps are not drawn: $(cat "$work/st.err")"; fail=1; }
# Two captures, the ranks of one job: the flame graph sums their stacks, as the loaded job's.
same flame "two captures" "$work/synth.gpuh" "$work/steps.gpuh"
# A filtered flame graph of one capture is selected by the scan, as select_events() selects.
for flags in "--device 0" "--stream 14" "--kernel gemm" "--from 1ms --to 3ms" "--range step@2" "--range step@99"; do
  for cap in synth nvtx; do
    # shellcheck disable=SC2086  # the flags are words
    same flame "$cap $flags" "$work/$cap.gpuh" $flags
    grep -q "loaded whole" "$work/s.err" && { echo "FAIL: flame $cap $flags was loaded: $(cat "$work/s.err")"; fail=1; }
  done
done
# A filtered step view (the filter's window gives the axis its origin), and the steps of several
# captures (the ranks of a job on one clock), are scanned too: their ranges and notices read
# after the event scan.
for flags in "--device 0" "--from 1ms --to 3ms" "--range step@2" "--range step@99" "--from 99s"; do
  # shellcheck disable=SC2086  # the flags are words
  same steps "steps $flags" "$work/steps.gpuh" $flags
  grep -q "loaded whole" "$work/s.err" && { echo "FAIL: steps $flags was loaded: $(cat "$work/s.err")"; fail=1; }
done
for flags in "" "--device 0" "--range step@3"; do
  # shellcheck disable=SC2086
  same steps "two captures $flags" "$work/steps.gpuh" "$work/nvtx.gpuh" $flags
  grep -q "loaded whole" "$work/s.err" && { echo "FAIL: steps of two captures $flags was loaded: $(cat "$work/s.err")"; fail=1; }
done
# A filter on several captures' flame graph is drawn from the loaded model.
"$cli" render "$work/synth.gpuh" "$work/nvtx.gpuh" -o "$work/f.svg" --view flame --device 0 -j 2 2>"$work/f.err" >/dev/null ||
  { echo "FAIL: a filtered flame graph of two captures: $(cat "$work/f.err")"; fail=1; }
grep -q "loaded whole for a filter on several captures" "$work/f.err" ||
  { echo "FAIL: a filter on two captures is not said to load: $(cat "$work/f.err")"; fail=1; }
[[ $scanned == 12 ]] || { echo "FAIL: $scanned of 12 views scanned"; fail=1; }

# --view utilisation (each device's unions of its events, its counter samples), --view memory
# (the allocations) and --view comm (the NCCL calls and their kernels) of a capture, or the
# ranks of a job, by a scan: the loaded bytes. The utilisation and memory views select by
# device, stream, kernel and time window as a load does (a window past the end is the load's
# error, after the capture's warnings; the comm view's matrix is of the selected kernels), and
# a --range (its window the load's: a range without an end ends at the load's last time,
# settled after the scan, a --from past it the load's error).
for view in utilisation memory comm; do
  for cap in synth steps nvtx hostile script_names killed; do
    same "$view" "$cap" "$work/$cap.gpuh"
    grep -q "loaded whole" "$work/s.err" && { echo "FAIL: $view: $cap was loaded, not scanned: $(cat "$work/s.err")"; fail=1; }
  done
  for cap in small no_index truncated corrupt v1/small v2/small; do same "$view" "fixtures/$cap" "$fixtures/$cap.gpuh"; done
  same "$view" "two captures" "$work/synth.gpuh" "$work/steps.gpuh"
  grep -q "loaded whole" "$work/s.err" && { echo "FAIL: $view of two captures was loaded: $(cat "$work/s.err")"; fail=1; }
  # Each filter on the synthetic capture; the windows on the small fixture too, whose index
  # ends after its last event (a window past the end is the load's error there).
  for flags in "--device 0" "--stream 14" "--kernel gemm" "--device 1 --kernel k" "--from 1ms --to 3ms" "--from 2ms" \
    "--to 1ms --device 0" "--from 99s" "--from 3ms --to 1ms"; do
    caps=(synth)
    [[ $flags == *--[ft][ro]* ]] && caps+=(fixtures/small)
    for cap in "${caps[@]}"; do
      file=$work/$cap.gpuh
      [[ $cap == fixtures/* ]] && file=$fixtures/${cap#fixtures/}.gpuh
      # shellcheck disable=SC2086  # the flags are words
      same "$view" "$cap $flags" "$file" $flags
      # (The small fixture's NCCL calls have no external ids: its comm view loads.)
      if [[ $view != comm || $cap != fixtures/small ]] && grep -q "loaded whole" "$work/s.err"; then
        echo "FAIL: $view $cap $flags was loaded, not scanned: $(cat "$work/s.err")"; fail=1
      fi
    done
  done
  same "$view" "two captures, one device" "$work/synth.gpuh" "$work/nvtx.gpuh" --device 0
  for flags in "--range step@2" "--range step@3 --from 10us --device 0" "--range step@99"; do
    # shellcheck disable=SC2086  # the flags are words
    same "$view" "steps $flags" "$work/steps.gpuh" $flags
    grep -q "loaded whole" "$work/s.err" && { echo "FAIL: $view steps $flags was loaded: $(cat "$work/s.err")"; fail=1; }
  done
  same "$view" "two captures, a range" "$work/steps.gpuh" "$work/nvtx.gpuh" --range step@4
  for flags in "--range step@6" "--range step@6 --from 10us" "--range step@6 --to 5us" "--range step@6 --from 1ms" \
    "--range step@6 --from 99s" "--range step@6 --from 20us --to 5us" "--range step@5 --from 99s"; do
    for caps in "open" "steps open"; do
      files=()
      for c in $caps; do files+=("$work/$c.gpuh"); done
      [[ $caps == "steps open" ]] && flags=${flags/step@6/step@46} && flags=${flags/step@5/step@45}
      # shellcheck disable=SC2086  # the flags are words
      same "$view" "$caps $flags" "${files[@]}" $flags
      grep -q "loaded whole" "$work/s.err" && { echo "FAIL: $view $caps $flags was loaded: $(cat "$work/s.err")"; fail=1; }
    done
  done
done
# same_stats WHAT ARGS...: `stats ARGS` under --max-memory 1K (where a load is refused) says what
# --in-memory says, stdout, stderr and exit code.
same_stats() {
  local what=$1 rs rw
  shift
  "$cli" stats "$@" --max-memory 1K >"$work/s.txt" 2>"$work/s.err"
  rs=$?
  "$cli" stats "$@" --in-memory >"$work/w.txt" 2>"$work/w.err"
  rw=$?
  if [[ $rs != "$rw" ]] || ! cmp -s "$work/s.txt" "$work/w.txt" || ! cmp -s "$work/s.err" "$work/w.err"; then
    echo "FAIL: stats $what: scanned (exit $rs) differs from --in-memory (exit $rw): $(head -3 "$work/s.err")"; fail=1
  fi
}
# stats --timeline: the same series by a scan as --in-memory, in every format; a bucket too small
# is the same error.
for cap in synth nvtx hostile killed fixtures/small fixtures/corrupt "synth steps"; do
  files=()
  for c in $cap; do [[ $c == fixtures/* ]] && files+=("$fixtures/${c#fixtures/}.gpuh") || files+=("$work/$c.gpuh"); done
  for args in "--timeline auto --format text" "--timeline 10us --format json" "--timeline auto --format csv" \
    "--timeline 100us --format md" "--timeline 1ns" "--timeline auto --device 0" "--timeline auto --stream 14" \
    "--timeline auto --kernel gemm --format csv" "--timeline auto --kernel nothing_matches" \
    "--timeline auto --from 1ms --to 3ms" "--timeline 10us --from 2ms --device 0" "--timeline auto --from 99s" \
    "--timeline auto --from 3ms --to 1ms" "--metrics --from 1ms" "--by memory --to 2ms"; do
    # A filter needs the chunk index, which a killed process's file lacks: loaded (filter_scan_test).
    [[ $cap == killed && $args == *--[dsktf][etrao]* ]] && continue
    # shellcheck disable=SC2086  # the arguments are words
    same_stats "$cap $args" "${files[@]}" $args
    [[ $args != "--timeline 1ns" || $cap != synth ]] || grep -q "makes .* buckets" "$work/s.err" ||
      { echo "FAIL: stats $cap --timeline 1ns is not refused: $(cat "$work/s.err")"; fail=1; }
  done
done

# Plain stats streams, and a window that starts past the last time a load has (the open
# capture's counter sample ends its index 5 ms later) is the load's error with the load's span,
# whether it starts short of the index's end or past it; a window inside is the load's table.
for args in "--from 3ms" "--from 99s" "--range step@6 --from 1ms" "--range step@6 --from 99s" "--from 1us --to 2ms" \
  "--range step@2 --from 1us" "--range step@46 --from 1ms"; do
  caps=("$work/open.gpuh")
  [[ $args == *step@46* ]] && caps=("$work/steps.gpuh" "$work/open.gpuh")
  # shellcheck disable=SC2086  # the arguments are words
  same_stats "open $args" "${caps[@]}" $args
done

# export --format folded writes the flame graph's stacks: scanned, the loaded bytes, and not
# held to --max-memory; a stack per GPU (--root device) too, from a scan of the events (extreme
# device ordinals in hostile_device).
for cap in synth nvtx hostile hostile_device killed; do
  for flags in "" "--root rank" "--device 0" "--range step@2" "--root device" "--root device --device 0" "--root device --kernel k"; do
    # A filter needs the chunk index, which a killed process's file lacks: loaded (filter_scan_test).
    [[ $cap == killed && ($flags == --[dr][ea]* || $flags == *" --"*) ]] && continue
    # shellcheck disable=SC2086  # the flags are words
    "$cli" export "$work/$cap.gpuh" --format folded $flags -o "$work/s.folded" --max-memory 1K 2>"$work/s.err"
    rs=$?
    # shellcheck disable=SC2086
    "$cli" export "$work/$cap.gpuh" --format folded $flags -o "$work/w.folded" --in-memory 2>"$work/w.err"
    rw=$?
    what="export $cap --format folded $flags"
    if [[ $rs != "$rw" ]]; then
      echo "FAIL: $what: exit $rs (scanned under --max-memory 1K), --in-memory $rw: $(cat "$work/s.err")"; fail=1
    elif [[ -e $work/w.folded ]] && ! cmp -s "$work/s.folded" "$work/w.folded"; then
      echo "FAIL: $what: the stacks differ from --in-memory's"; fail=1
    fi
    rm -f "$work/s.folded" "$work/w.folded"
  done
done
# Several captures to folded: scanned one after another (under --max-memory 1K), their stacks
# added up, the loaded bytes; each under its rank or place with --root rank; the same capture
# twice; a damaged one among them (the same exit code and stacks); a filter on several, its
# window and --range on the job's clock (a --range none of them has: the same error). A merged
# file among them, and a window or pattern beside a killed process's capture (no chunk index:
# its end is known only once read), are loaded: refused under 1K.
"$cli" merge -q "$work/synth.gpuh" "$work/nvtx.gpuh" -o "$work/merged.gpuh" 2>/dev/null || { echo "FAIL: merge"; fail=1; }
several=0
for set in "synth nvtx steps" "nvtx nvtx" "hostile script_names killed" "synth corrupt" "nvtx merged" "synth nvtx"; do
  for flags in "" "--root rank" "--kernel k" "--from 20us --to 150us --root rank" "--range step@2" "--root device" \
               "--from 20us --to 150us --root device"; do
    files=()
    for cap in $set; do
      if [[ $cap == corrupt ]]; then files+=("$fixtures/corrupt.gpuh"); else files+=("$work/$cap.gpuh"); fi
    done
    # shellcheck disable=SC2086
    "$cli" export "${files[@]}" --format folded $flags -o "$work/s.folded" --max-memory 1K 2>"$work/s.err"
    rs=$?
    # shellcheck disable=SC2086
    "$cli" export "${files[@]}" --format folded $flags -o "$work/w.folded" --in-memory 2>"$work/w.err"
    rw=$?
    what="export $set --format folded $flags"
    if [[ $set == *merged* || ($set == *killed* && ($flags == --kernel* || $flags == --from*)) ]]; then
      [[ $rs == 2 ]] && grep -q "Not loaded" "$work/s.err" || { echo "FAIL: $what: not loaded: exit $rs"; fail=1; }
    elif [[ $rs != "$rw" ]]; then
      echo "FAIL: $what: exit $rs (scanned under --max-memory 1K), --in-memory $rw: $(cat "$work/s.err")"; fail=1
    elif [[ -e $work/s.folded || -e $work/w.folded ]] && ! cmp -s "$work/s.folded" "$work/w.folded"; then
      echo "FAIL: $what: the stacks differ from --in-memory's: $(diff "$work/s.folded" "$work/w.folded" | head -4)"; fail=1
    else
      several=$((several + 1))
    fi
    rm -f "$work/s.folded" "$work/w.folded"
  done
done
[[ $several == 32 ]] || { echo "FAIL: $several of 32 exports of several captures to folded scanned as loaded"; fail=1; }

# The communication figures of nine ranks on two hosts whose clocks differ by milliseconds
# (gen_job): the scan reads each capture's NCCL kernels alone, which must come out as a full
# read gives them (a kernel-only read once decoded them off their launches: every
# ring_model_us was off), then aligns them as the load does; filtered, the kernels it selects.
if [[ -n ${GEN_JOB:-} && -x ${GEN_JOB:-} ]]; then
  mkdir "$work/job" && "$GEN_JOB" "$work/job" 9 400 >/dev/null || { echo "FAIL: gen_job"; exit 1; }
  for args in "--format text" "--format json" "--device 0 --from 1ms" "--kernel AllReduce --to 3ms"; do
    # shellcheck disable=SC2086  # the arguments are words
    "$cli" stats "$work"/job/rank*.gpuh --by comm $args --max-memory 1K >"$work/s.txt" 2>"$work/s.err"
    rs=$?
    # shellcheck disable=SC2086
    "$cli" stats "$work"/job/rank*.gpuh --by comm $args --in-memory >"$work/w.txt" 2>"$work/w.err"
    if [[ $rs != 0 ]] || ! cmp -s "$work/s.txt" "$work/w.txt" || ! cmp -s "$work/s.err" "$work/w.err"; then
      echo "FAIL: stats --by comm $args of nine ranks: scanned (exit $rs) differs from --in-memory: $(diff "$work/s.txt" "$work/w.txt" | head -4)"
      fail=1
    fi
  done
  # shellcheck disable=SC2046  # the ranks' files
  same comm "nine ranks, one device" $(ls "$work"/job/rank*.gpuh) --device 0
  grep -q "loaded whole" "$work/s.err" && { echo "FAIL: comm of nine ranks was loaded: $(cat "$work/s.err")"; fail=1; }
fi
[[ $fail == 0 ]] && echo "ok: flame graphs, folded stacks, step, utilisation, memory and comm views, and timelines scanned and loaded agree"
exit $fail
