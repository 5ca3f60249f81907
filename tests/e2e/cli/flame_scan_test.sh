#!/usr/bin/env bash
# render --view flame reads a capture (or the ranks of a job) by a scan, and draws the flame
# graph --in-memory draws from the loaded model, byte for byte: NVTX range paths, copies and
# memsets, NCCL kernels joined to their calls, hostile names, damaged files (the same exit code).
# -j 2 names the captures that are loaded whole after all, so the scan is seen to be taken.
#   flame_scan_test.sh GANTT_CLI MAKE_CAPTURE FIXTURES_DIR
set -u
cli=$1 make=$2 fixtures=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
"$make" synth "$work/synth.gpuh" 20000 5 256 >/dev/null || { echo "FAIL: make_capture synth"; exit 1; }
"$make" steps "$work/steps.gpuh" 3 2 40 >/dev/null || { echo "FAIL: make_capture steps"; exit 1; }
"$make" nvtx "$work/nvtx.gpuh" 5 >/dev/null || { echo "FAIL: make_capture nvtx"; exit 1; }
for kind in hostile script_names; do
  "$make" "$kind" "$work/$kind.gpuh" >/dev/null 2>&1 || { echo "FAIL: make_capture $kind"; exit 1; }
done
# A killed process's file: no index (one share), a truncated tail.
head -c $(($(stat -c %s "$work/synth.gpuh") * 7 / 10)) "$work/synth.gpuh" >"$work/killed.gpuh"

# same NAME CAPTURE...: the scanned and the loaded flame graph of the captures.
same() {
  local name=$1 rs rw
  shift
  rm -f "$work/s.svg" "$work/w.svg"
  "$cli" render "$@" -o "$work/s.svg" --view flame -j 2 >/dev/null 2>"$work/s.err"
  rs=$?
  "$cli" render "$@" -o "$work/w.svg" --view flame --in-memory >/dev/null 2>"$work/w.err"
  rw=$?
  if [[ $rs != "$rw" ]]; then
    echo "FAIL: $name: exit $rs, --in-memory $rw: $(cat "$work/s.err")"; fail=1
  elif [[ -e $work/w.svg ]] && ! cmp -s "$work/s.svg" "$work/w.svg"; then
    echo "FAIL: $name: the flame graph differs from --in-memory's"; fail=1
  elif [[ $(grep -v "loaded whole" "$work/s.err") != "$(sed 's/w\.svg/s.svg/' "$work/w.err")" ]]; then
    echo "FAIL: $name: stderr differs: $(cat "$work/s.err") against $(cat "$work/w.err")"; fail=1
  fi
}
scanned=0
for cap in synth steps nvtx hostile script_names killed; do
  same "$cap" "$work/$cap.gpuh"
  grep -q "loaded whole" "$work/s.err" && { echo "FAIL: $cap was loaded, not scanned: $(cat "$work/s.err")"; fail=1; }
  grep -q "a flame graph of [1-9][0-9]* stacks" "$work/s.err" && scanned=$((scanned + 1))
done
# Two captures, the ranks of one job: their stacks summed, as the loaded job's.
same "two captures" "$work/synth.gpuh" "$work/steps.gpuh"
# The fixtures: damaged and old files, which a scan may leave to the loader.
for cap in small no_index truncated corrupt v1/small v2/small; do same "fixtures/$cap" "$fixtures/$cap.gpuh"; done
# A filter is drawn from the loaded model.
"$cli" render "$work/synth.gpuh" -o "$work/f.svg" --view flame --device 0 -j 2 2>"$work/f.err" >/dev/null ||
  { echo "FAIL: a filtered flame graph: $(cat "$work/f.err")"; fail=1; }
grep -q "loaded whole for a filtered flame graph" "$work/f.err" || { echo "FAIL: a filtered flame graph is not said to load: $(cat "$work/f.err")"; fail=1; }
[[ $scanned == 6 ]] || { echo "FAIL: $scanned of 6 captures scanned"; fail=1; }
[[ $fail == 0 ]] && echo "ok: flame graphs scanned and loaded agree"
exit $fail
