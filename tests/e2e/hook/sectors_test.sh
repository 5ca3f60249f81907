#!/usr/bin/env bash
# GPUHOOK_SECTORS end to end on the simulator: gather_stall under the hook with the simulated
# libcupti's SASS metrics. The KernelSectors record holds the sectors the simulated kernel's
# warps touch and the fewest they need (its cost line: 40 and 8 + 4 a warp in random order, 12
# of 12 sorted), summed over the launches; without the variable there is none; restricted
# profiling is one line at exit and a notice in the capture, and the program's output and exit
# code are its own; whatif --sectors-from takes the counts of one run for the times of another.
#   sectors_test.sh SIM_LIB_DIR HOOK_LIB GANTT_CLI GATHER_STALL
set -euo pipefail
sim_lib=$1 hook=$2 cli=$3 app=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH=$sim_lib
unset GPUHOOK_SECTORS GPUHOOK_SIM_PROFILING GPUHOOK_QUIET
args=(--iterations 3 --size 65536)  # 256 blocks of 256 threads: 2048 warps a launch
run() {  # run NAME [VAR=VALUE...] [-- APP ARGS...]
  local name=$1
  shift
  local rc=0
  env "$@" GPUHOOK_OUTPUT="$work/$name.gpuh" LD_PRELOAD="$hook" "$app" "${args[@]}" ${fixed:-} >"$work/$name.out" 2>"$work/$name.err" || rc=$?
  [ "$rc" = 0 ] || { echo "FAIL: gather_stall ($name) exited $rc"; cat "$work/$name.err"; exit 1; }
  grep -q "^OK$" "$work/$name.out" || { echo "FAIL: gather_stall ($name) did not check its output"; exit 1; }
}
sectors_of() {  # the kernel_sectors lines of a capture, as "NAME SECTORS IDEAL"
  "$cli" dump "$1" --kind kernel_sectors | sed -E 's/.*name="([^"]*)".* sectors=([0-9]+) ideal_sectors=([0-9]+).*/\1 \2 \3/'
}
expect() {  # expect WHAT GOT WANTED
  [ "$2" = "$3" ] || { echo "FAIL: $1: got '$2', expected '$3'"; exit 1; }
}

run counted GPUHOOK_SECTORS=1 GPUHOOK_QUIET=1
expect "counted stderr" "$(cat "$work/counted.err")" ""
expect "random-order gather" "$(sectors_of "$work/counted.gpuh")" "_Z13gather_randomiPKiPKfPf $((2048 * 40 * 3)) $((2048 * 12 * 3))"
fixed=--fixed run sorted GPUHOOK_SECTORS=1 GPUHOOK_QUIET=1
expect "sorted gather" "$(sectors_of "$work/sorted.gpuh")" "_Z13gather_sortediPKiPKfPf $((2048 * 12 * 3)) $((2048 * 12 * 3))"

run plain GPUHOOK_QUIET=1
expect "without GPUHOOK_SECTORS" "$(sectors_of "$work/plain.gpuh")" ""

# Refused: the exit line says so once, the capture holds a notice, the program is untouched.
run restricted GPUHOOK_SECTORS=1 GPUHOOK_SIM_PROFILING=restricted
expect "restricted: lines on stderr" "$(grep -c . "$work/restricted.err")" 1
grep -q "^gpuhook: .*sector counts (GPUHOOK_SECTORS): counting sectors is restricted to administrators" "$work/restricted.err" ||
  { echo "FAIL: restricted: the exit line does not say why"; cat "$work/restricted.err"; exit 1; }
"$cli" dump "$work/restricted.gpuh" --kind notice | grep -q "NOTICE_SECTORS_NOT_COUNTED" ||
  { echo "FAIL: restricted: no notice in the capture"; exit 1; }
expect "restricted: counts" "$(sectors_of "$work/restricted.gpuh")" ""
cmp -s "$work/restricted.out" "$work/plain.out" || { echo "FAIL: restricted: the program's output changed"; exit 1; }

# The times of the plain run, the counts of the counted one: each gather x12/40.
"$cli" whatif "$work/plain.gpuh" --change coalesce=gather --sectors-from "$work/counted.gpuh" -o "$work/p.gpuh" >"$work/whatif.out"
grep -q "coalesce=gather: 3 kernel(s) of 1 name(s) re-timed; .* (x0.3), counts from $work/counted.gpuh" "$work/whatif.out" ||
  { echo "FAIL: whatif's note"; cat "$work/whatif.out"; exit 1; }
if "$cli" whatif "$work/plain.gpuh" --change coalesce=gather -o "$work/q.gpuh" 2>"$work/whatif.err"; then
  echo "FAIL: whatif predicted without sector counts"; exit 1
fi
grep -q "record a run with GPUHOOK_SECTORS=1 and pass it with --sectors-from" "$work/whatif.err" ||
  { echo "FAIL: whatif's refusal"; cat "$work/whatif.err"; exit 1; }
# A counting run cut short has lost its counts (written at exit): the refusal says where it ends.
head -c 300 "$work/counted.gpuh" > "$work/cut.gpuh"
if "$cli" whatif "$work/plain.gpuh" --change coalesce=gather --sectors-from "$work/cut.gpuh" -o "$work/r.gpuh" 2>"$work/cut.err"; then
  echo "FAIL: whatif predicted from a cut counting run"; exit 1
fi
grep -q "cut.gpuh (truncated at byte [0-9]*): record a run with GPUHOOK_SECTORS=1" "$work/cut.err" ||
  { echo "FAIL: the refusal does not say the counting run is cut"; cat "$work/cut.err"; exit 1; }
echo "PASS: sectors counted, refused in one line, taken by whatif from another run"
