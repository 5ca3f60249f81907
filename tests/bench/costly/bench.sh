#!/usr/bin/env bash
# Small inputs that once cost minutes or gigabytes (issue 44, items 11-13), at the issue's
# sizes: wall time, peak RSS and output size of each subcommand, or its refusal. Goal: each
# at most 5 s and 500 MB, or refused (exit 2) with the limit named. Fabricated captures
# (tests/e2e/cli/make_costly.cpp), CPU figures: not a GPU measurement. Before the fixes, on a
# 2-core machine: diagnose 26,000 streams 72.8 s; render 60,000 streams 72.2 s; the 21 KB
# summary 22-26 s and 2.3 GB (exit 0); whatif on 680 KB 28.4 s and 2.1 GB; export of 255 KB
# a 1.1 GB Chrome trace in 5.4 s.
#   tests/bench/costly/bench.sh BUILD_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
cli=$build/tools/gantt-cli/gantt-cli
gen=$build/tests/e2e/cli/gpuhook_make_costly
corpus=$(cd "$(dirname "$0")/../../fuzz/summary_corpus" && pwd)
[ -x "$cli" ] && [ -x "$gen" ] || { echo "bench costly: build gantt-cli and gpuhook_make_costly first" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
"$gen" streams s26k.gpuh 26000 && "$gen" streams s60k.gpuh 60000 && "$gen" repeat w.gpuh 2200000 12 &&
  "$gen" repeat x.gpuh 820000 12 || exit 1

# row FIGURE OUTPUT ARGS...: one run; "refused" when it exits 2.
row() {
  local figure=$1 output=$2
  shift 2
  rm -f "$output"
  /usr/bin/time -f "%e %M" -o t.txt "$cli" "$@" > out.txt 2> err.txt
  local rc=$? wall kib size verdict=miss what
  read -r wall kib < <(tail -1 t.txt)
  size=$([[ -f $output ]] && du -h "$output" | cut -f1 || echo "none")
  what=$([[ $rc == 2 ]] && echo "refused: $(grep -o -- '--max-[a-z-]*' err.txt | head -1)" || echo "exit $rc, output $size")
  awk -v w="$wall" -v k="$kib" 'BEGIN { exit !(w <= 5 && k <= 500 * 1000) }' && verdict=pass
  echo "| $figure | ${wall} s, $((kib / 1024)) MiB peak, $what | <= 5 s, <= 500 MB, or refused | $verdict |"
}
row "diagnose, 26,000 streams ($(du -h s26k.gpuh | cut -f1))" - diagnose s26k.gpuh
row "render, 60,000 streams ($(du -h s60k.gpuh | cut -f1))" chart.svg render s60k.gpuh -o chart.svg
row "stats, summary of unknown fields ($(du -h "$corpus/unknown_fields.gsum" | cut -f1))" - stats "$corpus/unknown_fields.gsum"
row "stats, summary of empty groups ($(du -h "$corpus/empty_groups.gsum" | cut -f1))" - stats "$corpus/empty_groups.gsum"
row "whatif, 4.4 M alike records ($(du -h w.gpuh | cut -f1))" p.gpuh whatif w.gpuh --change 'scale=.*:0.9' -o p.gpuh
row "export --format chrome, 1.6 M alike records ($(du -h x.gpuh | cut -f1))" x.json export x.gpuh --format chrome -o x.json
