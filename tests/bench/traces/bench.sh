#!/usr/bin/env bash
# Other tools' traces: `stats` of a torch.profiler/Kineto JSON trace, plain and gzip'd, at two
# sizes (peak memory must not grow with the JSON), an nsys SQLite export of the same run, and,
# side by side, Python's json.load of the same JSON (the first step of HTA and most notebooks).
# The traces are gpuhook_trace_gen's synthetic run (about 265 bytes of JSON an event):
# CPU-only figures, not a GPU measurement. Peak memory is the process's RSS plus the imported
# capture it holds in an anonymous in-memory file (reported beside it: RSS does not count it).
#   tests/bench/traces/bench.sh BUILD_DIR [steps=10000] [runs=3]
set -euo pipefail
build=$1 steps=${2:-10000} runs=${3:-3}
cli=$build/tools/gantt-cli/gantt-cli
gen=$build/tests/support/trace_gen/gpuhook_trace_gen
dir=$(mktemp -d /tmp/gpuhook-trace-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
quarter=$((steps / 4))
"$gen" kineto "$dir/small.json" --steps "$quarter" --kernels 50
"$gen" kineto "$dir/big.json" --steps "$steps" --kernels 50
"$gen" kineto-gz "$dir/big.json.gz" --steps "$steps" --kernels 50
"$gen" nsys "$dir/big.sqlite" --steps "$steps" --kernels 50
# The capture each import holds in memory: the same records written out by merge.
"$cli" merge "$dir/big.json" -o "$dir/big.gpuh" -q 2>/dev/null
capture_mb=$(($(stat -c %s "$dir/big.gpuh") / 1048576))
json_bytes=$(stat -c %s "$dir/big.json")
json_mb=$((json_bytes / 1048576))
row() { echo "| $1 | $2 | $3 | $([[ $4 == 1 ]] && echo pass || echo miss) |"; }
ok() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }' && echo 1 || echo 0; }
timed() {  # timed NAME CMD...: appends "wall_s max_rss_kib" to $dir/NAME.txt
  /usr/bin/time -a -o "$dir/$1.txt" -f "%e %M" "${@:2}" > /dev/null 2>&1
}
median() { sort -n "$dir/$1.txt" | awk -v c="$2" '{ a[NR] = $c } END { print a[int((NR + 1) / 2)] }'; }
for ((i = 0; i < runs; ++i)); do
  timed small "$cli" stats "$dir/small.json"
  timed big "$cli" stats "$dir/big.json"
  timed gz "$cli" stats "$dir/big.json.gz"
  timed nsys "$cli" stats "$dir/big.sqlite"
done
timed python python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$dir/big.json"
events=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["traceEvents"]))' "$dir/big.json")
rate() { awk -v b="$json_bytes" -v s="$1" 'BEGIN { printf "%.0f", b / s / 1e6 }'; }
big_s=$(median big 1) gz_s=$(median gz 1) nsys_s=$(median nsys 1)
small_mb=$(($(median small 2) / 1024)) big_mb=$(($(median big 2) / 1024))
read -r py_s py_kib < "$dir/python.txt"
echo "traces: $json_mb MB of Kineto JSON, $events events; imported capture $capture_mb MB" >&2
row "Kineto JSON \`stats\`, MB/s of JSON ($json_mb MB, $events events, 1 core)" "$(rate "$big_s") MB/s ($big_s s)" "≥ 400 MB/s" "$(ok "$(rate "$big_s")" 400)"
row "Kineto .json.gz \`stats\`, MB/s of JSON" "$(rate "$gz_s") MB/s ($gz_s s)" "≥ 250 MB/s" "$(ok "$(rate "$gz_s")" 250)"
row "Kineto \`stats\` peak RSS, ¼ and 1× the JSON (+ the in-memory capture)" "$small_mb MB, $big_mb MB (+ $capture_mb MB)" "flat in the JSON's size" "$(awk -v a="$small_mb" -v b="$big_mb" 'BEGIN { print (b <= a * 1.5 + 16) ? 1 : 0 }')"
row "nsys SQLite \`stats\` of the same run" "$nsys_s s, $(($(median nsys 2) / 1024)) MB" "—" 1
row "Python json.load of the same JSON (reference: HTA's first step)" "$py_s s, $((py_kib / 1024)) MB" "—" 1
