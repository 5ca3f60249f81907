#!/usr/bin/env bash
# Many ranks at scale: 64 synthetic captures of 100,000 GPU events each (8 hosts with known
# clock offsets, one straggler). Prints "| figure | measured | goal | pass/miss |" rows;
# details go to stderr. CPU-only: these are not GPU figures.
#   tests/bench/ranks/bench.sh BUILD_DIR [captures] [events]
set -euo pipefail
build=$1 captures=${2:-64} events=${3:-100000}
dir=$(mktemp -d /tmp/gpuhook-ranks-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/job"
"$build/tests/bench/ranks/ranks_gen_job" "$dir/job" "$captures" "$events" >&2
"$build/tests/bench/ranks/ranks_bench_job" align-render "$dir/job" "$dir/job.svg" > "$dir/ar.txt"
"$build/tests/bench/ranks/ranks_bench_job" merge "$dir/job" "$dir/merged.gpuh" > "$dir/merge.txt"
cat "$dir/ar.txt" "$dir/merge.txt" >&2
get() { awk -v k="$1" '$1 == k { print $2 }' "$dir/ar.txt" "$dir/merge.txt"; }
row() {  # figure measured goal pass(0/1)
  if [[ $4 == 1 ]]; then r=pass; else r=miss; fi
  echo "| $1 | $2 | $3 | $r |"
}
ok() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }' && echo 1 || echo 0; }
n=$(get events)
total=$(get total_s)
rss=$(get peak_rss_mib)
bpe=$(awk -v r="$rss" -v n="$n" 'BEGIN { printf "%.0f", r * 1048576 / n }')
err_us=$(awk -v e="$(get align_max_error_ns)" 'BEGIN { printf "%.3f", e / 1000 }')
row "ranks: load + align + render, $captures captures x $events events ($n events), wall" "$(get total_s) s (load $(get load_s), align $(get align_s), render $(get render_s))" "<= 10 s" "$(ok "$total" 10)"
row "ranks: load + align + render, CPU time of the process" "$(get cpu_s) s (load $(get load_cpu_s), align $(get align_cpu_s), render $(get render_cpu_s))" "<= 10 s" "$(ok "$(get cpu_s)" 10)"
row "ranks: align + render peak RSS" "$rss MiB ($bpe B/event)" "<= 256 B/event" "$(ok "$bpe" 256)"
row "ranks: alignment error vs injected host offsets (+-5 ms, NTP error +-1 ms)" "$err_us us max" "<= 20 us" "$(ok "$err_us" 20)"
row "ranks: straggler named (synthetic rank 5)" "rank $(get straggler)" "rank 5" "$([[ $(get straggler) == 5 ]] && echo 1 || echo 0)"
row "ranks: SVG size, $captures ranks" "$(awk -v b="$(get svg_bytes)" 'BEGIN { printf "%.2f", b / 1048576 }') MiB" "< 5 MiB" "$(ok "$(get svg_bytes)" 5242880)"
row "ranks: merge $captures captures (streaming), wall / CPU" "$(get merge_s) s / $(get merge_cpu_s) s, peak RSS $(get merge_peak_rss_mib) MiB" "<= 10 s CPU" "$(ok "$(get merge_cpu_s)" 10)"
