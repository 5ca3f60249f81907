#!/usr/bin/env bash
# diagnose of one capture, scanned (the default: every rule, tools/gantt/src/analysis/
# diagnose_scan.cpp) against the same capture loaded whole (--in-memory), in the same run, at
# `events` and at a tenth of them, and of a job of 16 ranks on two hosts holding `events` in
# all: wall and CPU time, peak RSS (/usr/bin/time -v's maximum resident set), and whether the
# two reports are the same bytes. Issue 43's goals: every rule
# <= 3 s and <= 500 MB at 10 M events, peak memory flat from 1 M to 10 M (0.83x-1.2x).
# The scanned runs go first (`runs` times each, median), the loaded ones once after them: a
# loaded run of 10 M events takes 2-3 GiB, and the runs after one were slower on this VM.
# CPU-only figures, on a synthetic capture (tests/bench/ranks/gen_job, with NCCL collectives):
# not a GPU measurement.
#   tests/bench/diagnose/bench.sh BUILD_DIR [events=10000000] [runs=3]
set -euo pipefail
build=$(cd "$1" && pwd) events=${2:-10000000} runs=${3:-3}
cli=$build/tools/gantt-cli/gantt-cli
gen=$build/tests/bench/ranks/ranks_gen_job
[[ -x $cli && -x $gen ]] || { echo "bench diagnose: build gantt-cli and ranks_gen_job first" >&2; exit 1; }
dir=$(mktemp -d /tmp/gpuhook-diagnose-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
tenth=$((events / 10))
mkdir "$dir/big" "$dir/tenth" "$dir/job"
"$gen" "$dir/big" 1 "$events" >&2 && "$gen" "$dir/tenth" 1 "$tenth" >&2 && "$gen" "$dir/job" 16 $((events / 16)) >&2
row() { echo "| $1 | $2 | $3 | $([[ $4 == 1 ]] && echo pass || echo miss) |"; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }' && echo 1 || echo 0; }
human() { awk -v n="$1" 'BEGIN { if (n >= 1e6) printf "%g M", n / 1e6; else printf "%g k", n / 1e3 }'; }
# timed KEY CAPTURES ARGS...: one diagnose run; appends "wall_s cpu_s peak_kib rc" to KEY.txt.
# CAPTURES is one word, split into the captures' paths (mktemp's, without spaces).
timed() {
  local key=$1 cap=$2 rc=0
  shift 2
  # shellcheck disable=SC2086  # the captures are words
  /usr/bin/time -v -o "$dir/time.txt" "$cli" diagnose $cap --format json "$@" > "$dir/$key.json" 2> "$dir/$key.err" || rc=$?
  awk -v rc="$rc" -F': ' '
    /Elapsed \(wall clock\)/ { n = split($2, p, ":"); w = 0; for (i = 1; i <= n; ++i) w = w * 60 + p[i] }
    /User time/ { c += $2 } /System time/ { c += $2 } /Maximum resident set size/ { k = $2 }
    END { printf "%.2f %.2f %d %d\n", w, c, k, rc }' "$dir/time.txt" >> "$dir/$key.txt"
  echo "bench diagnose: $key: $(tail -1 "$dir/$key.txt")" >&2
}
median() { sort -n "$dir/$1.txt" | awk -v c="$2" '{ a[NR] = $c } END { print a[int((NR + 1) / 2)] }'; }
mb() { awk -v k="$1" 'BEGIN { printf "%.0f", k * 1024 / 1e6 }'; }

# --streamed: the default for one capture, and it says so on stderr when the capture is loaded instead.
for ((i = 0; i < runs; ++i)); do timed scan "$dir/big/rank00.gpuh" --streamed; done
timed scan_tenth "$dir/tenth/rank00.gpuh" --streamed
timed loaded "$dir/big/rank00.gpuh" --in-memory
timed loaded_tenth "$dir/tenth/rank00.gpuh" --in-memory
job=$(echo "$dir"/job/rank*.gpuh)
timed job "$job" --streamed
timed job_loaded "$job" --in-memory

n=$(human "$events") n10=$(human "$tenth")
wall=$(median scan 1) cpu=$(median scan 2) kib=$(sort -n -k3 "$dir/scan.txt" | tail -1 | awk '{ print $3 }')
rc=$(awk '{ r = r || $4 } END { print r + 0 }' "$dir/scan.txt")
read -r wall10 cpu10 kib10 rc10 < "$dir/scan_tenth.txt"
read -r lwall lcpu lkib lrc < "$dir/loaded.txt"
read -r lwall10 lcpu10 lkib10 lrc10 < "$dir/loaded_tenth.txt"
note=$([[ $rc == 0 ]] || echo ", failed: $(head -c 120 "$dir/scan.err")")
scanned=$([[ $rc == 0 ]] && ! grep -q "cannot scan" "$dir/scan.err" && echo 1 || echo 0)
row "diagnose (every rule, scanned), $n events: wall (median of $runs)" "$wall s (cpu $cpu s)$note; --in-memory $lwall s (cpu $lcpu s)" "<= 3 s" \
  "$([[ $scanned == 1 ]] && le "$wall" 3 || echo 0)"
row "diagnose (every rule, scanned), $n events: peak RSS" "$(mb "$kib") MB$note; --in-memory $(mb "$lkib") MB" "<= 500 MB" \
  "$([[ $scanned == 1 ]] && le "$(mb "$kib")" 500 || echo 0)"
row "diagnose (every rule, scanned), $n10 events: wall, peak RSS" "$wall10 s (cpu $cpu10 s), $(mb "$kib10") MB; --in-memory $lwall10 s, $(mb "$lkib10") MB" "<= 3 s, <= 500 MB" \
  "$([[ $rc10 == 0 && $(le "$wall10" 3) == 1 && $(le "$(mb "$kib10")" 500) == 1 ]] && echo 1 || echo 0)"
ratio=$(awk -v a="$kib" -v b="$kib10" 'BEGIN { printf "%.2f", a / b }')
row "diagnose (scanned): peak RSS at $n over $n10 events" "${ratio}x ($(mb "$kib") / $(mb "$kib10") MB)" "0.83x-1.2x" \
  "$([[ $rc == 0 && $rc10 == 0 && $(le "$ratio" 1.2) == 1 && $(le 0.83 "$ratio") == 1 ]] && echo 1 || echo 0)"
same=1
cmp -s "$dir/scan.json" "$dir/loaded.json" && cmp -s "$dir/scan_tenth.json" "$dir/loaded_tenth.json" || same=0
row "diagnose: the scanned report equals --in-memory's, $n and $n10 events (JSON bytes)" "$([[ $same == 1 ]] && echo identical || echo DIFFER)" "identical" "$same"
read -r jwall jcpu jkib jrc < "$dir/job.txt"
read -r jlwall jlcpu jlkib jlrc < "$dir/job_loaded.txt"
jscanned=$([[ $jrc == 0 ]] && ! grep -q "cannot scan" "$dir/job.err" && echo 1 || echo 0)
jsame=$(cmp -s "$dir/job.json" "$dir/job_loaded.json" && echo 1 || echo 0)
row "diagnose (every rule, scanned), 16 ranks on 2 hosts, $n events in all: wall, peak RSS" \
  "$jwall s (cpu $jcpu s), $(mb "$jkib") MB; --in-memory $jlwall s (cpu $jlcpu s), $(mb "$jlkib") MB" "<= 500 MB" \
  "$([[ $jscanned == 1 ]] && le "$(mb "$jkib")" 500 || echo 0)"
row "diagnose of the 16 ranks: the scanned report equals --in-memory's (JSON bytes)" \
  "$([[ $jsame == 1 ]] && echo identical || echo DIFFER)" "identical" "$jsame"
