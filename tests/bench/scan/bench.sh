#!/usr/bin/env bash
# Issue 43's goals, one row each: every subcommand on one synthetic capture of `events` GPU
# events (tests/bench/ranks/gen_job, 2 records an event), run as a user runs it (default
# options, default --max-memory, every core): its wall time and peak RSS against the issue's
# goal, and its peak RSS against the same run on a tenth of the events. Memory flat from 1 M
# to 10 M: the two captures have the same lanes, names and pixels, so a ratio over 1.2 is
# memory that grows with events, not allocator noise; one under 1/1.2 (the smaller capture
# loaded, the larger scanned) is not flat either. Then ten times the events as 1,024 captures
# of a hundredth each (1,024 x 100 k at the default size), read by one `stats`. The pipeline
# rows read a job of two such captures of half the events each, whose steps end in a send from
# the first to the second (gen_job's p2p), instead of the one capture.
# A run that is refused (exit 2 over --max-memory), fails or passes the time limit is a miss
# with its figure, never skipped; each run is capped at `limit_s` (timeout), so the table
# always comes.
# Times are medians of `runs` runs at the full size (a run refused, failed or over 30 s is not
# repeated); the tenth size runs once, for its memory. Two threads against one is the stream
# area's row, render's 100 k and 1 M goals are the render area's, and export's (CSV, Chrome
# trace and its bytes an event) the export area's, all in the same run of scripts/bench.sh.
# CPU-only figures on a synthetic capture: not a GPU measurement.
#   tests/bench/scan/bench.sh BUILD_DIR [events=10000000] [runs=3] [limit_s=300] [only]
# `only`, a comma-separated list of the keys below (stats,comm,commfilter,memory,metrics,timeline,png,utilisation,windowview,memview,commview,...,diffwindow,folded,info,many), measures those
# alone: after a change to one subcommand, its rows without the others' minutes.
set -uo pipefail
build=$(cd "$1" && pwd) events=${2:-10000000} runs=${3:-3} limit_s=${4:-300} only=${5:-}
cli=$build/tools/gantt-cli/gantt-cli
gen=$build/tests/bench/ranks/ranks_gen_job
[[ -x $cli && -x $gen ]] || { echo "bench scan: build gantt-cli and ranks_gen_job first" >&2; exit 1; }
dir=$(mktemp -d /tmp/gpuhook-scan-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
tenth=$((events / 10)) many=1024 per_capture=$((events / 100))
mkdir "$dir/big" "$dir/tenth" "$dir/many" "$dir/out"
big=$dir/big/rank00.gpuh small=$dir/tenth/rank00.gpuh
human() { awk -v n="$1" 'BEGIN { if (n >= 1e7) printf "%d M", n / 1e6; else if (n >= 1e6) printf "%.1f M", n / 1e6; else if (n >= 1e3) printf "%d k", n / 1e3; else printf "%d", n }'; }
mb() { awk -v k="$1" 'BEGIN { printf "%.0f", k * 1024 / 1e6 }'; }  # KiB -> MB (10^6 bytes)
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }

# run KEY CAPTURE OUTPUT ARGS...: one run of `gantt-cli ARGS` with CAPTURE's path for @ and
# OUTPUT (a file under out/, or -) for %; appends "wall_s kib rc output_bytes cpu_s" to KEY.txt,
# keeps the last stderr in KEY.err, and removes the output (a page of 10 M events is 255 MB).
run() {
  local key=$1 cap=$2 out=$3 a argv=() rc wall kib user sys bytes=0
  shift 3
  for a in "$@"; do
    case $a in @) argv+=("$cap") ;; @@) argv+=("$(dirname "$cap")"/rank*.gpuh) ;; %) argv+=("$dir/out/$out") ;; *) argv+=("$a") ;; esac
  done
  rm -rf "$dir/out/"*
  /usr/bin/time -f "%e %M %U %S" -o "$dir/t.txt" timeout -k 10 "$limit_s" "$cli" "${argv[@]}" > "$dir/out/stdout" 2> "$dir/$key.err"
  rc=$?
  read -r wall kib user sys < <(tail -1 "$dir/t.txt")
  [[ $out != - && -f $dir/out/$out ]] && bytes=$(stat -c %s "$dir/out/$out")
  echo "$wall $kib $rc $bytes $(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')" >> "$dir/$key.txt"
  echo "bench scan: $key: $(tail -1 "$dir/$key.txt" | awk '{ printf "%s s (cpu %s s)", $1, $5 }'), $(mb "$kib") MB, exit $rc, output $bytes bytes" >&2
  rm -rf "$dir/out/"*
}
# The subcommands: key, output name (- for stdout), arguments.
keys=(stats comm commfilter memory metrics timeline png utilisation windowview memview commview diagnose html whatif diff
      diffwindow folded merge info pipeline diagnosep2p)
wanted() { [[ -z $only || ,$only, == *,$1,* ]]; }
picked=()
for k in "${keys[@]}"; do wanted "$k" && picked+=("$k"); done
keys=("${picked[@]}")
if ((${#keys[@]} > 0)); then
  "$gen" "$dir/big" 1 "$events" >&2 && "$gen" "$dir/tenth" 1 "$tenth" >&2 || exit 1
fi
if wanted pipeline || wanted diagnosep2p; then
  mkdir "$dir/p2p" "$dir/p2p_tenth"
  "$gen" "$dir/p2p" 2 $((events / 2)) p2p >&2 && "$gen" "$dir/p2p_tenth" 2 $((tenth / 2)) p2p >&2 || exit 1
fi
declare -A job=([pipeline]=p2p [diagnosep2p]=p2p)
declare -A out args what
out[stats]=- args[stats]="stats @" what[stats]="stats"
out[comm]=- args[comm]="stats @ --by comm" what[comm]="stats --by comm"
out[memory]=- args[memory]="stats @ --by memory" what[memory]="stats --by memory"
out[metrics]=- args[metrics]="stats @ --metrics" what[metrics]="stats --metrics"
out[timeline]=- args[timeline]="stats @ --timeline auto" what[timeline]="stats --timeline"
out[commfilter]=- args[commfilter]="stats @ --by comm --kernel AllReduce --from 1s" what[commfilter]="stats --by comm --kernel AllReduce --from 1s"
out[windowview]=w.svg args[windowview]="render @ --view utilisation --from 1s --to 3s -o %" what[windowview]="render --view utilisation --from 1s --to 3s"
out[png]=x.png args[png]="render @ -o %" what[png]="render -o x.png"
out[utilisation]=u.svg args[utilisation]="render @ --view utilisation -o %" what[utilisation]="render --view utilisation"
out[memview]=m.svg args[memview]="render @ --view memory -o %" what[memview]="render --view memory"
out[commview]=c.svg args[commview]="render @ --view comm -o %" what[commview]="render --view comm"
out[diagnose]=- args[diagnose]="diagnose @" what[diagnose]="diagnose (every rule)"
out[html]=x.html args[html]="render @ -o %" what[html]="render -o x.html"
out[whatif]=p.gpuh args[whatif]="whatif @ --change streams=4 -o %" what[whatif]="whatif --change streams=4"
out[diff]=- args[diff]="diff @ @" what[diff]="diff (the capture against itself)"
out[diffwindow]=d.svg args[diffwindow]="diff @ @ --from 1s --to 3s -o %" what[diffwindow]="diff --from 1s --to 3s -o d.svg"
out[folded]=f.folded args[folded]="export @ --format folded --root device -o %" what[folded]="export --format folded --root device"
out[merge]=m.gpuh args[merge]="merge @ -o %" what[merge]="merge (one capture)"
out[info]=- args[info]="info @" what[info]="info"
out[pipeline]=- args[pipeline]="stats @@ --by pipeline" what[pipeline]="stats --by pipeline (2 ranks)"
out[diagnosep2p]=- args[diagnosep2p]="diagnose @@" what[diagnosep2p]="diagnose (2 ranks with sends and receives)"
# The issue's goals: seconds (none: memory only) and peak MB.
declare -A goal_s goal_mb
goal_s=([stats]=1.5 [png]=2 [diagnose]=3 [diagnosep2p]=3 [html]=3 [whatif]=20)
for k in "${keys[@]}"; do goal_mb[$k]=500; done
goal_mb[whatif]=1000

# shellcheck disable=SC2086 # ${args[$k]} is split into words on purpose
for k in "${keys[@]}"; do
  cap=$big cap10=$small
  [[ -n ${job[$k]:-} ]] && cap=$dir/${job[$k]}/rank00.gpuh cap10=$dir/${job[$k]}_tenth/rank00.gpuh
  run "$k" "$cap" "${out[$k]}" ${args[$k]}
  for ((i = 1; i < runs; ++i)); do
    # Once is enough for a run that failed, was refused or took over 30 s (every time goal is
    # at most 20 s: more runs would not change the verdict, only take the machine's minutes).
    awk '{ exit !($3 == 0 && $1 <= 30) }' <(tail -1 "$dir/$k.txt") || break
    run "$k" "$cap" "${out[$k]}" ${args[$k]}
  done
  run "${k}_tenth" "$cap10" "${out[$k]}" ${args[$k]}
done

row() { echo "| $1 | $2 | $3 | $([[ $4 == 1 ]] && echo pass || echo miss) |"; }
# How a run ended, for the measured column: "" when it did its work.
ended() {  # KEY RC
  case $2 in
    0) ;;
    124 | 137) echo ", > $limit_s s: stopped" ;;
    2) if grep -q -- 'over --max-memory' "$dir/$1.err"; then
         echo ", refused: $(grep -o -- 'would take about [0-9.]* [A-Za-z]* loaded, over --max-memory [0-9.]* [A-Za-z]*' "$dir/$1.err" | head -1)"
       else
         echo ", exit 2: $(head -c 120 "$dir/$1.err" | head -1)"
       fi ;;
    *) echo ", failed: exit $2" ;;
  esac
}
median() { awk -v c="$2" '{ print $c }' "$dir/$1.txt" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }  # KEY COLUMN
n=$(human "$events") n10=$(human "$tenth")
for k in "${keys[@]}"; do
  # Median wall of the runs; the largest peak; the last run's exit and output.
  wall=$(median "$k" 1) cpu=$(median "$k" 5)
  kib=$(awk '{ print $2 }' "$dir/$k.txt" | sort -n | tail -1)
  read -r _ _ rc bytes _ < <(tail -1 "$dir/$k.txt")
  read -r _ kib10 rc10 _ < "$dir/${k}_tenth.txt"
  note=$(ended "$k" "$rc") did=$([[ $rc == 0 ]] && echo 1 || echo 0)
  nruns=$(wc -l < "$dir/$k.txt")
  if [[ -n ${goal_s[$k]:-} ]]; then
    # CPU time beside the wall: on a shared machine the wall grows with the others' load.
    shown=$([[ $rc == 124 || $rc == 137 ]] && echo "> $limit_s s" || echo "$wall s (cpu $cpu s)")
    row "scan: ${what[$k]}, $n events: wall (median of $nruns)" "$shown$note" "<= ${goal_s[$k]} s" \
      "$([[ $did == 1 ]] && le "$wall" "${goal_s[$k]}" && echo 1 || echo 0)"
  fi
  if [[ $k == html ]]; then
    row "scan: render -o x.html, $n events: page size" \
      "$([[ $rc == 0 ]] && awk -v b="$bytes" 'BEGIN { printf "%.1f MB", b / 1e6 }' || echo "no page$note")" "<= 40 MB" \
      "$([[ $did == 1 ]] && le "$bytes" 40000000 && echo 1 || echo 0)"
  fi
  row "scan: ${what[$k]}, $n events: peak RSS" "$(mb "$kib") MB$note" "<= ${goal_mb[$k]} MB" \
    "$([[ $did == 1 ]] && le "$(mb "$kib")" "${goal_mb[$k]}" && echo 1 || echo 0)"
  ratio=$(awk -v a="$kib" -v b="$kib10" 'BEGIN { printf "%.2f", a / b }')
  row "scan: ${what[$k]}: peak RSS at $n over $n10 events" \
    "${ratio}x ($(mb "$kib") / $(mb "$kib10") MB$([[ $rc10 == 0 ]] || echo "; at $n10$(ended "${k}_tenth" "$rc10")"))$note" "0.83x-1.2x" \
    "$([[ $did == 1 && $rc10 == 0 ]] && le "$ratio" 1.2 && le 0.83 "$ratio" && echo 1 || echo 0)"
done

# Ten times the events as 1,024 captures, one `stats` over them all. Written after the runs
# above, and removed at once: 1,024 files of the full size's tenth.
wanted many || exit 0
"$gen" "$dir/many" "$many" "$per_capture" >&2 || exit 1
run many "" - stats "$dir"/many/rank*.gpuh
rm -rf "$dir/many"
read -r wall kib rc _ cpu < "$dir/many.txt"
note=$(ended many "$rc")
row "scan: stats of $(human $((per_capture * many))) events as $many captures x $(human "$per_capture"): wall" \
  "$([[ $rc == 124 || $rc == 137 ]] && echo "> $limit_s s" || echo "$wall s (cpu $cpu s)"), peak RSS $(mb "$kib") MB$note" "<= 60 s" \
  "$([[ $rc == 0 ]] && le "$wall" 60 && echo 1 || echo 0)"
