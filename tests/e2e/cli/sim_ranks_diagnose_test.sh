#!/usr/bin/env bash
# diagnose of ranks that each drive two devices, on the simulator: scanned (the job's ranks one
# after another, each rank's busy time the union of its devices' work) and equal to the same
# captures loaded whole, with and without a filter. Where imbalance fires on a job with
# multi_gpu's grouped all-reduce (one process runs it on both devices, each device's call with
# the same communicator id and sequence), the straggler would need to know which of that
# capture's two calls a load keeps: that job is loaded, and says why. The scan joins each of
# the group's kernels to its own all-reduce, as the load does: their CSV rows are the same.
#   sim_ranks_diagnose_test.sh SIM_LIB_DIR HOOK_LIB GANTT_CLI TWO_DEVICES MULTI_GPU
set -u
sim_lib=$1 hook=$2 cli=$3 two_devices=$4 multi_gpu=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH=$sim_lib GPUHOOK_LIB=$hook GPUHOOK_QUIET=1 GPUHOOK_SIM_DEVICES=2
fails=0
record() {  # record OUT PROGRAM ARGS...
  local out=$1
  shift
  "$cli" record -q -o "$work/$out" -- "$@" > /dev/null 2> "$work/$out.err" || { echo "FAIL: record $*: $(cat "$work/$out.err")"; exit 2; }
}
record td0.gpuh "$two_devices"
record td1.gpuh "$two_devices"
record mg0.gpuh "$multi_gpu"
record mg1.gpuh "$multi_gpu" --fixed
# The grouped all-reduce's kernels, scanned: each names its device's all-reduce (the group's end
# took the first kernel too, and was named instead), as loaded.
"$cli" export "$work/mg0.gpuh" --format csv -o "$work/s.csv" 2> /dev/null
"$cli" export "$work/mg0.gpuh" --format csv --in-memory -o "$work/l.csv" 2> /dev/null
if ! cmp -s <(LC_ALL=C sort "$work/s.csv") <(LC_ALL=C sort "$work/l.csv"); then
  echo "FAIL: export mg0.gpuh --format csv: scanned rows differ from --in-memory: $(diff <(LC_ALL=C sort "$work/s.csv") <(LC_ALL=C sort "$work/l.csv") | head -4)"
  fails=$((fails + 1))
elif [[ $(grep -c ',AllReduce,' "$work/s.csv") != 2 ]]; then
  echo "FAIL: export mg0.gpuh --format csv: not two AllReduce kernels: $(grep -i allreduce "$work/s.csv")"
  fails=$((fails + 1))
else
  echo "ok   export mg0.gpuh --format csv"
fi
for set in "td0.gpuh td1.gpuh" "mg0.gpuh mg1.gpuh" "td0.gpuh mg0.gpuh mg1.gpuh"; do
  for filter in "" "--device 1" "--from 1ms"; do
    files=()
    for f in $set; do files+=("$work/$f"); done
    # shellcheck disable=SC2086  # the flags are words
    "$cli" diagnose "${files[@]}" $filter --format json --streamed > "$work/s.json" 2> "$work/s.err"
    rs=$?
    # shellcheck disable=SC2086
    "$cli" diagnose "${files[@]}" $filter --format json --in-memory > "$work/l.json" 2> "$work/l.err"
    rl=$?
    what="diagnose $set $filter"
    if [[ $set == "td0.gpuh mg0.gpuh mg1.gpuh" && $filter != "--device 1" ]]; then
      if ! grep -q "cannot scan the captures (collectives a scan cannot match as a load does (a process that ran one on several devices" "$work/s.err"; then
        echo "FAIL: $what: scanned, or loaded for another reason: $(cat "$work/s.err")"; fails=$((fails + 1))
        continue
      fi
      sed -i '/cannot scan/d' "$work/s.err"
    elif grep -q "cannot scan" "$work/s.err"; then
      echo "FAIL: $what was loaded, not scanned: $(cat "$work/s.err")"; fails=$((fails + 1))
      continue
    fi
    if [[ $rs != "$rl" ]] || ! cmp -s "$work/s.json" "$work/l.json" || ! cmp -s "$work/s.err" "$work/l.err"; then
      echo "FAIL: $what: scanned (exit $rs) differs from --in-memory (exit $rl): $(diff "$work/s.json" "$work/l.json" | head -4)"
      fails=$((fails + 1))
    else
      echo "ok   $what"
    fi
  done
done
exit $((fails > 0))
