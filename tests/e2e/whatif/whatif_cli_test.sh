#!/usr/bin/env bash
# gantt-cli whatif from the shell: a prediction every subcommand reads, its header, the model's
# fit on an unchanged replay, and the bad inputs (each exit 2 with one clear line).
set -u
build=$(cd "${1:?usage: whatif_cli_test.sh BUILD_DIR}" && pwd)
gantt="$build/tools/gantt-cli/gantt-cli"
export LD_LIBRARY_PATH="$build/sim/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GPUHOOK_LIB="$build/libhook/libgpuhook.so"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$gantt" record -q -o "$work/sync.gpuh" -- "$build/examples/sync_loop" --size 4096 --iterations 20 >/dev/null ||
  fail "record sync_loop"
"$gantt" record -q -o "$work/copy.gpuh" -- "$build/examples/pageable_copy" --size 4096 --iterations 2 >/dev/null ||
  fail "record pageable_copy"
# GPUHOOK_NVML_HZ=0 leaves NVML alone: the device record names no PCIe link.
GPUHOOK_NVML_HZ=0 "$gantt" record -q -o "$work/copy_nolink.gpuh" -- "$build/examples/pageable_copy" --size 4096 \
  --iterations 2 >/dev/null || fail "record pageable_copy without NVML"

# A prediction: the notes, the spans, and a capture that says it is predicted.
"$gantt" whatif "$work/sync.gpuh" --change remove-syncs --change 'scale=step_update:0.5' -o "$work/p.gpuh" >"$work/out.txt" ||
  fail "whatif remove-syncs"
# Every step's wait goes; the wait after the loop, which the loop does not repeat, stays.
grep -q '^remove-syncs: 20 synchronising call(s) removed, 1 kept' "$work/out.txt" || { cat "$work/out.txt"; fail "remove-syncs note"; }
grep -q '^scale=step_update:0.5: 20 kernel(s) x0.5' "$work/out.txt" || { cat "$work/out.txt"; fail "scale note"; }
# The unchanged replay of a simulator capture is within 2% of what was measured.
awk '/replayed unchanged/ { gsub(/[(),%+-]/, "", $9); if ($9 + 0 > 2) bad = 1; n++ } END { exit (n == 1 && !bad) ? 0 : 1 }' \
  "$work/out.txt" || { cat "$work/out.txt"; fail "the unchanged replay is off by more than 2%"; }
"$gantt" info "$work/p.gpuh" | grep -q 'predicted:   from ".*sync.gpuh" by "remove-syncs" "scale=step_update:0.5" (not a measurement)' ||
  fail "info does not say the capture is predicted"
"$gantt" info --json "$work/p.gpuh" | grep -q '"predicted_changes":\["remove-syncs","scale=step_update:0.5"\]' ||
  fail "info --json lacks the changes"
syncs=$("$gantt" dump "$work/p.gpuh" | grep -c 'name="cudaStreamSynchronize' || true)
[ "$syncs" = 1 ] || fail "the prediction holds $syncs cudaStreamSynchronize calls, not 1 (the wait after the loop)"
# Half as long kernels: the predicted kernel time is half the measured.
k() {  # the kernel row's third column (its total time), after the quoted name
  "$gantt" stats "$1" --format csv 2>/dev/null | awk '/step_update/ { sub(/^"[^"]*",/, ""); split($0, f, ","); print f[2]; exit }'
}
a=$(k "$work/sync.gpuh"); b=$(k "$work/p.gpuh")
[ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" 'BEGIN { exit (b > 0.49 * a && b < 0.51 * a) ? 0 : 1 }' ||
  fail "kernel time $a -> $b, not halved"
# Every subcommand reads it.
"$gantt" render "$work/p.gpuh" -o "$work/p.svg" 2>/dev/null || fail "render"
"$gantt" render "$work/sync.gpuh" "$work/p.gpuh" --lanes capture -o "$work/both.svg" 2>/dev/null || fail "render both"
"$gantt" diff "$work/sync.gpuh" "$work/p.gpuh" >/dev/null 2>&1; [ $? -le 1 ] || fail "diff"
"$gantt" diagnose "$work/p.gpuh" >/dev/null 2>&1 || fail "diagnose"
"$gantt" export "$work/p.gpuh" --format chrome -o "$work/p.json" 2>/dev/null || fail "export"

# The memory fixes diagnose names for memory_phases (activation checkpointing for memory-peak,
# freeing the idle table for memory-idle): predicted, diagnose finds neither any more.
GPUHOOK_MEM_USE=1 "$gantt" record -q -o "$work/mem.gpuh" -- "$build/examples/memory_phases" >/dev/null ||
  fail "record memory_phases"
"$gantt" diagnose "$work/mem.gpuh" >"$work/d0.txt" 2>&1
grep -q 'memory-peak' "$work/d0.txt" && grep -q 'memory-idle' "$work/d0.txt" || { cat "$work/d0.txt"; fail "memory_phases: no memory findings"; }
"$gantt" whatif "$work/mem.gpuh" --change checkpoint=activations --change free-idle -o "$work/m.gpuh" >"$work/out.txt" ||
  fail "whatif checkpoint free-idle"
grep -q '^checkpoint=activations: 2 run(s) .* every 4 .* 24 made again .* peak 116.0 MiB -> 76.0 MiB' "$work/out.txt" &&
  grep -q '^free-idle: 1 allocation(s) (16.0 MiB) .* peak 76.0 MiB -> 60.0 MiB' "$work/out.txt" || { cat "$work/out.txt"; fail "memory notes"; }
"$gantt" diagnose "$work/m.gpuh" >"$work/d1.txt" 2>&1
grep -Eq '\[memory-(peak|idle)\]' "$work/d1.txt" && { cat "$work/d1.txt"; fail "the predicted capture still has memory findings"; }
"$gantt" render "$work/m.gpuh" --view memory -o "$work/m.svg" 2>/dev/null || fail "render --view memory of the prediction"

# async-copies + pin-copies turn the synchronous copies of pageable_copy into async ones on
# copy streams (StreamInfo for each) that no longer hold the host.
"$gantt" whatif -q "$work/copy.gpuh" --change pin-copies --change async-copies --pinned-gbps 25 -o "$work/c.gpuh" ||
  fail "whatif pin+async"
"$gantt" dump "$work/c.gpuh" | grep -q '^- stream .*flags=2' || fail "no StreamInfo for the copy streams"
pageable=$("$gantt" dump "$work/c.gpuh" | grep -c 'memcpy .*PAGEABLE' || true)
[ "$pageable" = 0 ] || fail "$pageable copies still pageable"

# The hook writes the device's PCIe link from NVML in its record: the simulated H200's gen5 x16
# (the max; the current generation idles at gen1).
"$gantt" info "$work/copy.gpuh" >"$work/info.txt" || fail "info copy.gpuh"
grep -q '^  device 0: .*, PCIe gen5 x16$' "$work/info.txt" || { cat "$work/info.txt"; fail "no PCIe gen5 x16 link in the device line"; }
"$gantt" info "$work/copy_nolink.gpuh" >"$work/info.txt" || fail "info copy_nolink.gpuh"
grep -q 'PCIe' "$work/info.txt" && { cat "$work/info.txt"; fail "a capture recorded without NVML shows a PCIe link"; }
# pageable_copy has no pinned copy to measure: without --pinned-gbps, pin-copies takes the
# bandwidth from the link, and says so.
"$gantt" whatif "$work/copy.gpuh" --change pin-copies -o "$work/l.gpuh" >"$work/out.txt" 2>&1 ||
  { cat "$work/out.txt"; fail "whatif pin-copies from the PCIe link"; }
grep -q "HtoD at 50.4 GB/s (from device 0's PCIe gen5 x16 link: 63.0 GB/s raw, 80% as pinned copies reach)" \
  "$work/out.txt" || { cat "$work/out.txt"; fail "the pin-copies note does not name the PCIe figure"; }
pageable=$("$gantt" dump "$work/l.gpuh" | grep -c 'memcpy .*PAGEABLE' || true)
[ "$pageable" = 0 ] || fail "$pageable copies still pageable after pin-copies from the link"

# Bad inputs: exit 2, one line that says what is wrong.
expect2() {  # message-regex, args...
  local want=$1
  shift
  "$gantt" whatif "$@" >"$work/o" 2>"$work/e"
  local rc=$?
  [ $rc = 2 ] || { cat "$work/e"; fail "whatif $* exited $rc, not 2"; }
  grep -q -- "$want" "$work/e" || { cat "$work/e"; fail "whatif $*: no '$want' in the error"; }
}
expect2 "is not a change whatif knows" "$work/sync.gpuh" --change pin_copies -o "$work/x.gpuh"
expect2 "whole number from 2 to 1024" "$work/sync.gpuh" --change streams=1 -o "$work/x.gpuh"
expect2 "not a regular expression" "$work/sync.gpuh" --change 'scale=(:2' -o "$work/x.gpuh"
expect2 "no kernel name matches" "$work/sync.gpuh" --change 'scale=nothing_here:2' -o "$work/x.gpuh"
# Neither a pinned copy nor a link: refused, naming both ways out.
expect2 "names no PCIe link (recorded without NVML, or by an older hook); give --pinned-gbps" \
  "$work/copy_nolink.gpuh" --change pin-copies -o "$work/x.gpuh"
expect2 "needs the captures of two ranks" "$work/sync.gpuh" --change balance-ranks -o "$work/x.gpuh"
expect2 "exists; whatif never overwrites" "$work/sync.gpuh" --change remove-syncs -o "$work/p.gpuh"
expect2 "needs the uses .*\|record it with GPUHOOK_MEM_USE=1" "$work/sync.gpuh" --change free-idle -o "$work/x.gpuh"
expect2 "no allocation is tagged with a category matching 'activations'" "$work/sync.gpuh" --change checkpoint=activations -o "$work/x.gpuh"
head -c 3000 "$work/sync.gpuh" >"$work/cut.gpuh"
printf 'not a capture at all' >"$work/text.gpuh"
expect2 "text.gpuh" "$work/text.gpuh" --change remove-syncs -o "$work/x.gpuh"
"$gantt" whatif "$work/cut.gpuh" --change remove-syncs -o "$work/x2.gpuh" >/dev/null 2>&1
rc=$?
[ $rc = 0 ] || [ $rc = 2 ] || fail "a truncated capture exited $rc"
# Cut inside its first chunk: refused, naming the byte where its whole chunks end (the magic's).
head -c 200 "$work/sync.gpuh" >"$work/cut_first.gpuh"
expect2 "cut_first.gpuh: byte 24: truncated before its first whole chunk: no records to predict from" \
  "$work/cut_first.gpuh" --change remove-syncs -o "$work/x.gpuh"
head -c 100000 /dev/urandom >"$work/random.gpuh"
"$gantt" whatif "$work/random.gpuh" --change graphs -o "$work/x3.gpuh" >/dev/null 2>&1
[ $? = 2 ] || fail "random bytes did not exit 2"
[ -e "$work/x.gpuh" ] && fail "a failed whatif left an output file"
echo "PASS"
