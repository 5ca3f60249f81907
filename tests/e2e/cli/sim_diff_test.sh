#!/usr/bin/env bash
# diff's noise handling on the simulator (a test fixture, not a GPU): the same example under
# different noise seeds must not be called a regression, and the same with one kernel 10%
# slower must be. Counts are asserted: >= 19 of 20 pairs each way.
#   sim_diff_test.sh SIM_LIB_DIR HOOK_LIB GANTT_CLI EXAMPLE KERNEL_SUBSTRING [ARGS...]
set -u
sim_lib=$1 hook=$2 cli=$3 example=$4 kernel=$5
shift 5
args=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH=$sim_lib GPUHOOK_LIB=$hook GPUHOOK_QUIET=1 GPUHOOK_SIM_NOISE=0.05

capture() {  # capture NAME SEED [SCALE]
  local name=$1 seed=$2 scale=${3:-}
  GPUHOOK_SIM_SEED=$seed GPUHOOK_SIM_SCALE=$scale "$cli" record -o "$work/$name.gpuh" -- "$example" "${args[@]}" \
    >/dev/null 2>"$work/$name.err" || { echo "FAIL: run $name: $(cat "$work/$name.err")"; exit 2; }
}

same=0 slower=0 errors=0
for i in $(seq 1 20); do
  capture "base$i" "$i"
  capture "same$i" "$((100 + i))"
  capture "slow$i" "$((200 + i))" "$kernel:1.10"
  "$cli" diff "$work/base$i.gpuh" "$work/same$i.gpuh" >"$work/d_same$i.txt" 2>&1
  case $? in 0) same=$((same + 1)) ;; 1) ;; *) errors=$((errors + 1)) ;; esac
  "$cli" diff "$work/base$i.gpuh" "$work/slow$i.gpuh" >"$work/d_slow$i.txt" 2>&1
  case $? in 1) slower=$((slower + 1)) ;; 0) ;; *) errors=$((errors + 1)) ;; esac
done
echo "same program, different seeds: exit 0 in $same of 20 pairs (need >= 19)"
echo "$kernel 10% slower: exit 1 in $slower of 20 pairs (need >= 19)"
echo "errors (exit 2): $errors"
if ((same < 19 || slower < 19 || errors > 0)); then
  for i in 1 2; do cat "$work/d_same$i.txt" "$work/d_slow$i.txt"; done
  exit 1
fi
