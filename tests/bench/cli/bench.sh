#!/usr/bin/env bash
# gantt-cli stats and diff on two 1,000,000-kernel captures (gpuhook_synth's realistic names
# and timing, fabricated data: no figure here is a GPU figure). Goal: each <= 3 s wall.
# Prints "| figure | measured | goal | pass/miss |" rows; details on stderr. The machine's
# load average is printed too: on a shared machine wall time includes waiting for a core,
# so CPU time (user+sys) is shown next to it.
#   tests/bench/cli/bench.sh BUILD_DIR [KERNELS]
set -euo pipefail
build=$1
kernels=${2:-1000000}
cli=$build/tools/gantt-cli/gantt-cli
make_capture=$build/tests/e2e/cli/gpuhook_make_capture
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$make_capture" synth "$work/base.gpuh" "$kernels" 1
"$make_capture" synth "$work/new.gpuh" "$kernels" 2
echo "cli bench: two captures of $kernels kernels, $(du -h "$work/base.gpuh" | cut -f1) each; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2

best() {  # best of 3 runs: "wall cpu" in seconds
  local best_wall=999999 best_cpu=0
  for _ in 1 2 3; do
    /usr/bin/time -f "%e %U %S" -o "$work/t" "$@" >/dev/null 2>"$work/err" || [[ $? == 1 ]] || { cat "$work/err" >&2; exit 2; }
    read -r wall user sys < "$work/t"
    if awk -v a="$wall" -v b="$best_wall" 'BEGIN{exit !(a<b)}'; then
      best_wall=$wall
      best_cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN{printf "%.2f", u+s}')
    fi
  done
  echo "$best_wall $best_cpu"
}
row() {  # row FIGURE "wall cpu"
  read -r wall cpu <<< "$2"
  local verdict=miss
  awk -v w="$wall" 'BEGIN{exit !(w<=3.0)}' && verdict=pass
  echo "| $1 | ${wall} s wall (${cpu} s CPU) | <= 3 s | $verdict |"
}
row "gantt-cli stats, $kernels-kernel synthetic capture" "$(best "$cli" stats "$work/base.gpuh")"
row "gantt-cli diff, two $kernels-kernel synthetic captures" "$(best "$cli" diff "$work/base.gpuh" "$work/new.gpuh")"
# whatif holds the capture's records and its graph in memory (no goal set yet): wall, CPU and
# peak memory, a new output each run (it never overwrites).
whatif_run() {
  rm -f "$work/predicted.gpuh"
  /usr/bin/time -f "%e %U %S %M" -o "$work/t" "$cli" whatif -q "$work/base.gpuh" --change 'scale=.*:0.9' -o "$work/predicted.gpuh" \
    >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 2; }
  read -r wall user sys kb < "$work/t"
  echo "| gantt-cli whatif --change scale, $kernels-kernel synthetic capture | ${wall} s wall ($(awk -v u="$user" -v s="$sys" 'BEGIN{printf "%.2f", u+s}') s CPU), $((kb / 1024)) MiB peak | (none yet) | - |"
}
whatif_run
echo "cli bench: load average after $(cut -d' ' -f1-3 /proc/loadavg)" >&2
