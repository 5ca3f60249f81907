#!/usr/bin/env bash
# A job too large for one machine, summarised: N synthetic captures of E GPU events each
# (tests/bench/ranks/gen_job), each summarised by its own gantt-cli process as a job launcher
# would run it on the node (--summary), then every summary merged by one `stats`. Prints
# "| figure | measured | goal | pass/miss |" rows; details go to stderr. CPU-only figures.
#   tests/bench/summary/bench.sh BUILD_DIR [captures=1024] [events=100000] [direct=64]
# All captures are also read by one `stats` directly (streamed, one capture per core), and
# `direct` of them both ways, to compare the tables.
set -euo pipefail
build=$1 captures=${2:-1024} events=${3:-100000} direct=${4:-64}
cli=$build/tools/gantt-cli/gantt-cli
dir=$(mktemp -d /tmp/gpuhook-summary-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/job"
"$build/tests/bench/ranks/ranks_gen_job" "$dir/job" "$captures" "$events" >&2
jobs=$(nproc)
row() { echo "| $1 | $2 | $3 | $([[ $4 == 1 ]] && echo pass || echo miss) |"; }
ok() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }' && echo 1 || echo 0; }
timed() {  # timed OUT CMD...: runs CMD, appends "wall_s max_rss_kib" to OUT
  /usr/bin/time -a -o "$1" -f "%e %M" "${@:2}" > /dev/null 2>&1
}

# Map: one process per capture, $jobs at a time (the nodes of a real job run theirs at once).
start=$(date +%s.%N)
printf '%s\n' "$dir"/job/rank*.gpuh | xargs -P "$jobs" -I{} /usr/bin/time -a -o "$dir/map.txt" -f "%e %M" \
  "$cli" stats {} --summary -o {}.gsum 2>/dev/null
map_wall=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
map_med=$(sort -n "$dir/map.txt" | awk '{ a[NR] = $1 } END { printf "%.2f", a[int((NR + 1) / 2)] }')
map_rss=$(awk '$2 > m { m = $2 } END { printf "%.0f", m / 1024 }' "$dir/map.txt")
sum_bytes=$(cat "$dir"/job/*.gsum | wc -c)
echo "map: $captures summaries in $map_wall s with $jobs processes; per capture median $map_med s, peak RSS $map_rss MiB; $sum_bytes bytes of summaries" >&2

# Reduce: every summary in one process.
timed "$dir/reduce.txt" "$cli" stats "$dir"/job/rank*.gpuh.gsum --top 20
read -r red_wall red_kib < "$dir/reduce.txt"
red_rss=$((red_kib / 1024))
"$cli" stats "$dir"/job/rank*.gpuh.gsum --format csv > "$dir/reduce.csv"
"$cli" stats "$dir"/job/rank*.gpuh.gsum --top 3 >&2

# Every capture in one stats, no summaries: each streamed on one core, the ranks aligned by
# their collectives and merged (stream_job_stats); memory per capture being read, not per event.
timed "$dir/whole_job.txt" "$cli" stats "$dir"/job/rank*.gpuh --top 20
read -r job_wall job_kib < "$dir/whole_job.txt"
job_rss=$((job_kib / 1024))

# The first $direct captures both ways: same kernel table, and the memory of each way.
all=("$dir"/job/rank*.gpuh)
first=("${all[@]:0:$direct}")
sums=("${first[@]/%/.gsum}")
timed "$dir/direct.txt" "$cli" stats "${first[@]}" --format csv
read -r dir_wall dir_kib < "$dir/direct.txt"
"$cli" stats "${first[@]}" --format csv > "$dir/direct.csv" 2>/dev/null
timed "$dir/direct_sum.txt" "$cli" stats "${sums[@]}" --format csv
read -r ds_wall ds_kib < "$dir/direct_sum.txt"
"$cli" stats "${sums[@]}" --format csv > "$dir/direct_sum.csv"
same=0; cmp -s "$dir/direct.csv" "$dir/direct_sum.csv" && same=1
n=$((captures * events))
row "summary: map, $captures captures x $events events, one stats --summary per capture" "median $map_med s, peak RSS $map_rss MiB per capture; all in $map_wall s on $jobs cores" "per node: <= 3 s, <= 500 MB" "$(ok "$map_med" 3)"
row "summary: reduce $captures summaries ($((sum_bytes / 1024)) KiB, $n events) in one stats" "$red_wall s, peak RSS $red_rss MiB" "<= 60 s, <= 2 GB" "$([[ $(ok "$red_wall" 60) == 1 && $(ok "$red_rss" 2048) == 1 ]] && echo 1 || echo 0)"
row "summary: stats of all $captures captures ($n events) in one process, streamed, no summaries" "$job_wall s, peak RSS $job_rss MiB" "<= 60 s, <= 2 GB" "$([[ $(ok "$job_wall" 60) == 1 && $(ok "$job_rss" 2048) == 1 ]] && echo 1 || echo 0)"
row "summary: $direct captures, stats of the captures vs of their summaries (made above)" "$dir_wall s / $((dir_kib / 1024)) MiB vs $ds_wall s / $((ds_kib / 1024)) MiB; kernel tables $([[ $same == 1 ]] && echo identical || echo DIFFER)" "identical tables" "$same"
"$build/tests/bench/summary/summary_sketch_error" > "$dir/err.txt"
cat "$dir/err.txt" >&2
worst=$(awk '$1 == "worst" { print $2 }' "$dir/err.txt")
row "summary: sketch quantile error vs exact, 1 M values x 4 shapes" "$(awk '$1 != "worst" { printf "%s %.2f%%  ", $1, $7 * 100 }' "$dir/err.txt")" "<= 1%" "$(ok "$worst" 0.01)"
