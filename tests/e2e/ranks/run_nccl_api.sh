#!/usr/bin/env bash
# Runs nccl_api_app as 3 ranks on the simulator, with and without the hook, and checks one
# promise of the hook's NCCL side per MODE:
#   sequence  uneven send/recv between ranks 0 and 1 does not shift the numbering of later
#             collectives: every collective of the job is matched with all its ranks
#   comms     communicators made non-blocking (ncclInProgress), by ncclCommInitRankScalable and
#             by ncclCommShrink are recorded: their collectives carry an id and a device
#   bcast     ncclBcast is one record named ncclBcast (NCCL calls ncclBroadcast inside it
#             through the PLT: that inner call must not be a second record)
#   kernels   every collective and send/recv is tied to its kernel by an external correlation
#             id, the kernel launched through the driver's cuLaunchKernelEx as NCCL does
#   run_nccl_api.sh SIM_LIB_DIR HOOK_LIB APP CAPTURE_CHECK RANKS_CHECK MODE
set -euo pipefail
sim=$1 hook=$2 app=$3 check=$4 ranks_check=$5 mode=$6
dir=$(mktemp -d /tmp/gpuhook-nccl-api.XXXXXX)
trap 'rm -rf "$dir"' EXIT
export LD_LIBRARY_PATH=$sim GPUHOOK_QUIET=1
ranks=3
# Each mode runs only the part of the app it checks, so one missing piece fails one mode.
case $mode in
  sequence|kernels) part=sequence ;;
  bcast) part=bcast ;;
  *) part=all ;;
esac
"$app" --ranks $ranks --part $part >"$dir/plain.out" 2>"$dir/plain.err" ||
  { echo "FAIL: the app fails without the hook"; cat "$dir/plain.err"; exit 1; }
LD_PRELOAD=$hook GPUHOOK_OUTPUT=$dir/rank%r.gpuh "$app" --ranks $ranks --part $part >"$dir/hooked.out" 2>"$dir/hooked.err" ||
  { echo "FAIL: the app fails under the hook"; cat "$dir/hooked.err"; exit 1; }
cmp -s <(sort "$dir/plain.out") <(sort "$dir/hooked.out") || { echo "FAIL: stdout differs under the hook"; exit 1; }
files=()
for r in $(seq 0 $((ranks - 1))); do files+=("$dir/rank$r.gpuh"); done
failed=0
each_rank() {
  for r in $(seq 0 $((ranks - 1))); do
    "$check" "${files[$r]}" "$@" "${per_rank[@]}" >"$dir/check$r.out" ||
      { echo "FAIL[rank $r]: $(grep FAIL "$dir/check$r.out" | head -5)"; failed=1; }
    per_rank=()
  done
}
per_rank=()
case $mode in
  sequence)
    each_rank --nccl
    # two all-reduces on the world communicator, matched across all 3 ranks
    "$ranks_check" --min-collectives 2 --expect-instances 2 "${files[@]}" >"$dir/ranks.out" 2>&1 ||
      { cat "$dir/ranks.out"; failed=1; }
    ;;
  comms)
    each_rank --nccl
    "$ranks_check" --min-collectives 1 --expect-instances 7 "${files[@]}" >"$dir/ranks.out" 2>&1 ||
      { cat "$dir/ranks.out"; failed=1; }
    for r in $(seq 0 $((ranks - 1))); do
      shrinks=$((r < ranks - 1 ? 1 : 0))
      "$check" "${files[$r]}" --nccl-device --nccl-function ncclCommInitRankConfig=1 \
        --nccl-function ncclCommInitRankScalable=1 --nccl-function ncclCommShrink=$shrinks \
        --nccl-function ncclCommSplit=1 >"$dir/check$r.out" ||
        { echo "FAIL[rank $r]: $(grep FAIL "$dir/check$r.out" | head -5)"; failed=1; }
      # 4 communicators on the ranks that shrink, 3 on the one shrunk away
      comms=$(awk '$1 == "nccl_comms" {print NF - 1}' "$dir/check$r.out")
      [ "$comms" = $((3 + shrinks)) ] || { echo "FAIL[rank $r]: $comms communicators, want $((3 + shrinks))"; failed=1; }
    done
    ;;
  bcast)
    each_rank --nccl --nccl-function ncclBcast=1 --nccl-function ncclBroadcast=0
    ;;
  kernels)
    each_rank --nccl-kernels
    ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
[ "$failed" = 0 ] || exit 1
echo "PASS[$mode]"
