#!/usr/bin/env bash
# gantt-cli jobs on a seeded synthetic cluster record (tests/bench/jobs/gen_sacct.cpp: FIFO
# with backfill at ~90% load; fabricated, no real cluster): 500 nodes x 50,000 jobs by
# default. Goal: the chart in <= 3 s and <= 500 MB. Prints "| figure | measured | goal | pass/miss |"
# rows; details on stderr.
#   tests/bench/jobs/bench.sh BUILD_DIR [NODES] [JOBS]
set -euo pipefail
build=$1 nodes=${2:-500} count=${3:-50000}
cli=$build/tools/gantt-cli/gantt-cli
dir=$(mktemp -d /tmp/gpuhook-jobs-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$build/tests/bench/jobs/jobs_gen_sacct" "$nodes" "$count" 42 > "$dir/jobs.txt"
echo "jobs bench: $nodes nodes x $count jobs, $(du -h "$dir/jobs.txt" | cut -f1) of sacct text; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2

best() {  # best of 3: "wall_s max_rss_mib"
  local best_wall=999999 best_rss=0
  for _ in 1 2 3; do
    /usr/bin/time -f "%e %M" -o "$dir/t" "$@" > /dev/null 2> "$dir/err" || { cat "$dir/err" >&2; exit 2; }
    read -r wall kib < "$dir/t"
    if awk -v a="$wall" -v b="$best_wall" 'BEGIN{exit !(a<b)}'; then best_wall=$wall; best_rss=$((kib / 1024)); fi
  done
  tail -1 "$dir/err" >&2
  echo "$best_wall $best_rss"
}
row() {  # row FIGURE "wall rss"
  read -r wall rss <<< "$2"
  local verdict=miss
  awk -v w="$wall" -v r="$rss" 'BEGIN{exit !(w<=3.0 && r<=500)}' && verdict=pass
  echo "| $1 | ${wall} s, ${rss} MiB peak RSS | <= 3 s, <= 500 MB | $verdict |"
}
row "jobs chart (SVG), $nodes nodes x $count jobs" "$(best "$cli" jobs "$dir/jobs.txt" -o "$dir/c.svg")"
echo "jobs bench: SVG $(du -h "$dir/c.svg" | cut -f1)" >&2
row "jobs chart (PNG), $nodes nodes x $count jobs" "$(best "$cli" jobs "$dir/jobs.txt" -o "$dir/c.png")"
row "jobs chart per GPU (SVG), $nodes nodes x $count jobs" "$(best "$cli" jobs "$dir/jobs.txt" -o "$dir/g.svg" --per-gpu)"
row "jobs --stats, $nodes nodes x $count jobs" "$(best "$cli" jobs "$dir/jobs.txt" --stats)"
row "jobs --submit gpus=64,time=8h (what-if), $nodes nodes x $count jobs" "$(best "$cli" jobs "$dir/jobs.txt" --submit gpus=64,time=8h)"
