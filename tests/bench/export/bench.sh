#!/usr/bin/env bash
# `export` of one synthetic capture (tests/bench/ranks/gen_job: `events` kernels, each with its
# launch call, an all-reduce every 100), scanned as a user runs it (default options, every
# core): Chrome trace, CSV and .json.gz, each one run, its wall and CPU time and peak RSS
# against issue 43's goals, and its peak against the same export of a tenth of the events
# (memory flat from 1 M to 10 M: a ratio over 1.2 is memory that grows with the events).
# Bytes per event two ways: per kernel with its launch call (the issue's 14 GB / 10 M = 1.4 KB)
# and per event as docs' words count them (a GPU operation or a host call). With loaded=1,
# the same exports loaded whole (--in-memory, the path before: at 10 M about 130 s and 4.3 GB
# for chrome) run once too, and the scanned CSV is checked against the loaded one (sorted).
# Outputs go to a temporary directory and are removed; chrome at 10 M is about 3.2 GB.
# CPU-only figures on a synthetic capture: not a GPU measurement.
#   tests/bench/export/bench.sh BUILD_DIR [events=10000000] [loaded=0]
set -uo pipefail
build=$(cd "$1" && pwd) events=${2:-10000000} loaded=${3:-0}
cli=$build/tools/gantt-cli/gantt-cli
gen=$build/tests/bench/ranks/ranks_gen_job
[[ -x $cli && -x $gen ]] || { echo "bench export: build gantt-cli and ranks_gen_job first" >&2; exit 1; }
dir=$(mktemp -d /tmp/gpuhook-export-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
tenth=$((events / 10))
mkdir "$dir/big" "$dir/tenth"
"$gen" "$dir/big" 1 "$events" > /dev/null && "$gen" "$dir/tenth" 1 "$tenth" > /dev/null || { echo "bench export: gen_job failed" >&2; exit 1; }
big=$dir/big/rank00.gpuh small=$dir/tenth/rank00.gpuh
row() { echo "| $1 | $2 | $3 | $([[ $4 == 1 ]] && echo pass || echo miss) |"; }
ok() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }' && echo 1 || echo 0; }
both() { [[ $1 == 1 && $2 == 1 ]] && echo 1 || echo 0; }
# timed NAME CMD...: "wall_s user_s sys_s max_rss_kib exit" in $dir/NAME.t
timed() {
  /usr/bin/time -o "$dir/$1.t" -f "%e %U %S %M %x" "${@:2}" > /dev/null 2> "$dir/$1.err"
}
field() { awk -v c="$2" '{ v = $c } END { print v }' "$dir/$1.t"; }
cpu() { awk '{ v = $2 + $3 } END { printf "%.1f", v }' "$dir/$1.t"; }
mib() { echo $(($(field "$1" 4) / 1024)); }

timed chrome "$cli" export "$big" --format chrome -o "$dir/out.json"
chrome_bytes=$(stat -c %s "$dir/out.json" 2> /dev/null || echo 0)
# GPU slices and host slices, counted without parsing 3 GB of JSON: a name is an escaped JSON
# string, so `"pid":1,` (the scanned trace's host process) never occurs inside one.
x_events=$(grep -c '^{"ph":"X"' "$dir/out.json" 2> /dev/null || echo 0)
host_events=$(grep '^{"ph":"X"' "$dir/out.json" 2> /dev/null | grep -c '"pid":1,' || echo 0)
gpu_events=$((x_events - host_events))
rm -f "$dir/out.json"
timed chrome_small "$cli" export "$small" --format chrome -o "$dir/small.json"
rm -f "$dir/small.json"
timed csv "$cli" export "$big" --format csv -o "$dir/out.csv"
if [[ $loaded == 1 ]]; then
  timed csv_loaded "$cli" export "$big" --format csv --in-memory -o "$dir/loaded.csv"
  csv_same=1
  cmp -s <(sort -S 1G "$dir/out.csv") <(sort -S 1G "$dir/loaded.csv") || csv_same=0
  rm -f "$dir/loaded.csv"
fi
rm -f "$dir/out.csv"
timed csv_small "$cli" export "$small" --format csv -o "$dir/small.csv"
rm -f "$dir/small.csv"
timed gz "$cli" export "$big" --format chrome -o "$dir/out.json.gz"
gz_bytes=$(stat -c %s "$dir/out.json.gz" 2> /dev/null || echo 0)
rm -f "$dir/out.json.gz"
if [[ $loaded == 1 ]]; then
  timed chrome_loaded "$cli" export "$big" --format chrome --in-memory --max-output 100G -o "$dir/loaded.json"
  loaded_bytes=$(stat -c %s "$dir/loaded.json" 2> /dev/null || echo 0)
  rm -f "$dir/loaded.json"
fi

echo "| figure | measured | goal | pass/miss |"
echo "|---|---|---|---|"
for f in chrome csv; do
  s=$(field $f 1) m=$(mib $f) rc=$(field $f 5) goal_s=$([[ $f == chrome ]] && echo 20 || echo 10)
  row "export: --format $f of $events kernels with their launches, scanned (every core)" \
    "$s s wall ($(cpu $f) s CPU), peak RSS $m MiB$([[ $rc == 0 ]] || echo ", exit $rc")" "<= $goal_s s, <= 500 MB" \
    "$([[ $rc == 0 ]] && both "$(ok "$s" "$goal_s")" "$(ok "$m" 500)" || echo 0)"
  sm=$(mib ${f}_small)
  ratio=$(awk -v a="$m" -v b="$sm" 'BEGIN { printf "%.2f", b ? a / b : 99 }')
  row "export: --format $f peak RSS, $events against $tenth kernels" "$m MiB / $sm MiB = ${ratio}x" "flat (<= 1.2x)" "$(ok "$ratio" 1.2)"
done
per_kernel=$(awk -v b="$chrome_bytes" -v n="$gpu_events" 'BEGIN { printf "%.0f", n ? b / n : 0 }')
per_event=$(awk -v b="$chrome_bytes" -v n="$((gpu_events + host_events))" 'BEGIN { printf "%.0f", n ? b / n : 0 }')
row "export: chrome bytes per kernel with its launch call ($chrome_bytes B, $gpu_events GPU slices)" "$per_kernel B" "<= 250 B (issue 43: 1.4 KB before)" "$(ok "$per_kernel" 250)"
row "export: chrome bytes per event, GPU operations and host calls ($((gpu_events + host_events)) slices)" "$per_event B" "<= 250 B" "$(ok "$per_event" 250)"
row "export: chrome to .json.gz (zlib level 1)" "$gz_bytes B ($(awk -v a="$chrome_bytes" -v b="$gz_bytes" 'BEGIN { printf "%.1f", b ? a / b : 0 }')x smaller), $(field gz 1) s wall ($(cpu gz) s CPU), peak RSS $(mib gz) MiB" "(written)" "$([[ $(field gz 5) == 0 && $gz_bytes -gt 0 ]] && echo 1 || echo 0)"
if [[ $loaded == 1 ]]; then
  row "export: --format chrome loaded whole (--in-memory; the path before)" "$(field chrome_loaded 1) s wall, peak RSS $(mib chrome_loaded) MiB, $loaded_bytes B" "(the path before)" 1
  row "export: --format csv loaded whole (--in-memory; the path before)" "$(field csv_loaded 1) s wall, peak RSS $(mib csv_loaded) MiB" "(the path before)" 1
  row "export: scanned csv rows equal the loaded ones (sorted)" "$([[ $csv_same == 1 ]] && echo identical || echo DIFFER)" "identical" "$csv_same"
fi
