#!/usr/bin/env bash
# The HTML page on 1,000,000 kernel events: the file's size, the time to first paint in
# headless chromium, and the frame time while zooming. Prints "| figure | measured | goal |
# pass/miss |" rows on stdout; details on stderr. Run by scripts/bench.sh, or alone:
#   tests/bench/html/bench.sh BUILD_DIR
# Needs Debian's chromium and tests/browser/node_modules (scripts/setup.sh). Frame times are
# the viewer's own draw() time (performance.now() around it, as the page reports it); a wheel
# step's wall time, input to the next frame through puppeteer, goes to stderr. Everything runs
# on the CPU: no GPU figure here.
set -euo pipefail
build=${1:?usage: bench.sh BUILD_DIR}
here="$(cd "$(dirname "$0")" && pwd)"
cli="$build/tools/gantt-cli/gantt-cli"
gen="$build/tests/e2e/cli/gpuhook_make_capture"
[ -x "$cli" ] && [ -x "$gen" ] || { echo "bench html: build gantt-cli and gpuhook_make_capture first" >&2; exit 1; }
command -v chromium >/dev/null && [ -d "$here/../../browser/node_modules/puppeteer-core" ] ||
  { echo "bench html: needs chromium and tests/browser/node_modules (scripts/setup.sh)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
row() { echo "| $1 | $2 | $3 | $4 |"; }
verdict() { python3 -c "import sys; print('pass' if $1 else 'miss')"; }

n=1000000
"$gen" synth "$work/1m.gpuh" $n 1
/usr/bin/time -f "%e %M" -o "$work/time.txt" "$cli" render "$work/1m.gpuh" -o "$work/1m.html" 2>"$work/render.err" ||
  { cat "$work/render.err" >&2; exit 1; }
read -r render_s rss_kb < "$work/time.txt"
echo "bench html: render -o 1m.html: ${render_s} s, peak RSS $((rss_kb / 1024)) MiB; $(tail -1 "$work/render.err")" >&2
bytes=$(stat -c %s "$work/1m.html")
mb=$(python3 -c "print(round($bytes / 1e6, 1))")
node "$here/bench_html.mjs" "$work/1m.html" > "$work/page.json"
echo "bench html: page: $(cat "$work/page.json")" >&2
get() { python3 -c "import json; print(round(json.load(open('$work/page.json'))['$1'], 1))"; }
paint_s=$(python3 -c "print(round($(get paint) / 1000, 2))")
ready_s=$(python3 -c "print(round($(get ready) / 1000, 2))")
frame=$(get frame_median_ms)
row "HTML page, 1M kernels: file size" "${mb} MB" "≤ 30 MB" "$(verdict "$mb <= 30")"
row "HTML page, 1M kernels: first paint in headless chromium (all events decoded)" "${paint_s} s (${ready_s} s)" "≤ 2 s" "$(verdict "$paint_s <= 2")"
row "HTML page, 1M kernels: median frame while zooming (max)" "${frame} ms ($(get frame_max_ms) ms)" "≤ 50 ms" "$(verdict "$frame <= 50")"
