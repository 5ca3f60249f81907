#!/usr/bin/env bash
# End-to-end checks of `gantt-cli render` and `export --format csv` on fixture captures:
# goldens, XML validity (also for hostile names), PNG pixels, determinism, empty and
# filtered-to-nothing charts, bad inputs, and the SVG size bound under many events.
#   check_render.sh GANTT_CLI FIXTURE_GEN GOLDEN_DIR OUT_DIR [--update]
set -uo pipefail
cli=$1 gen=$2 golden=$3 out=$4 update=${5:-}
here="$(cd "$(dirname "$0")" && pwd)"
rm -rf "$out" && mkdir -p "$out"
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }

for s in basic unaligned hostile empty; do
  "$gen" "$s" "$out/$s.gpuh" || bad "fixture $s"
done

# Goldens: the same capture always gives the same SVG bytes.
for s in basic unaligned hostile empty; do
  "$cli" render "$out/$s.gpuh" -o "$out/$s.svg" 2>"$out/$s.err" || bad "render $s exit $?"
  xmllint --noout "$out/$s.svg" 2>>"$out/$s.err" && ok "$s.svg is XML" || bad "$s.svg is not XML"
  if [ "$update" = --update ]; then
    cp "$out/$s.svg" "$golden/$s.svg"
  elif cmp -s "$out/$s.svg" "$golden/$s.svg"; then
    ok "$s.svg matches golden"
  else
    bad "$s.svg differs from $golden/$s.svg (tests/e2e/render/regen_goldens.sh updates on purpose)"
  fi
done
"$cli" render "$out/basic.gpuh" -o "$out/basic2.svg" 2>/dev/null
cmp -s "$out/basic.svg" "$out/basic2.svg" && ok "deterministic bytes" || bad "two renders differ"

# Hostile names: escaped, never raw markup.
grep -q '<script' "$out/hostile.svg" && bad "raw <script> in SVG" || ok "no raw <script>"
grep -q '&lt;script&gt;' "$out/hostile.svg" && ok "script name escaped" || bad "escaped name missing"

# Views: every one is valid XML.
views=("--lanes device" "--lanes thread" "--no-annotate" "--no-host" "--range train_step@2" "--kernel relu"
       "--from 1ms --to 3.5ms" "--device 0 --stream 14" "--width 400" "--queue-delay 1s --idle-gap 10us")
i=0
for v in "${views[@]}"; do
  i=$((i + 1))
  # shellcheck disable=SC2086
  "$cli" render "$out/basic.gpuh" -o "$out/view$i.svg" $v 2>/dev/null || bad "render $v exit $?"
  xmllint --noout "$out/view$i.svg" 2>/dev/null && ok "view '$v' is XML" || bad "view '$v' is not XML"
done
grep -q 'idle 2.0[0-9] ms' "$out/basic.svg" && ok "idle gap labelled" || bad "idle gap label missing"
# Tooltips are several lines; a newline must stay one (a character reference), not U+FFFD.
grep -q '&#10;launch ' "$out/basic.svg" && ! grep -q $'\xEF\xBF\xBD' "$out/basic.svg" && ok "tooltips keep their line breaks" ||
  bad "tooltip line breaks lost"
grep -q 'host in cudaStreamSynchronize' "$out/basic.svg" && ok "gap names the host call" || bad "gap host call missing"
! grep -q 'queued 1' "$out/view10.svg" && ok "--queue-delay raises the threshold" || bad "--queue-delay ignored"
grep -q 'flags: off' "$out/view3.svg" && ok "--no-annotate" || bad "--no-annotate still flags"

# Filtered to nothing: a chart that says so, exit 0.
"$cli" render "$out/basic.gpuh" --kernel '^no_such_kernel$' -o "$out/none.svg" 2>/dev/null && ok "filtered-to-nothing exit 0" || bad "filtered-to-nothing exit"
grep -q 'no events match' "$out/none.svg" && ok "says nothing matched" || bad "no 'no events match' text"
grep -q 'no GPU activity' "$out/empty.svg" && ok "empty capture says so" || bad "empty chart text"

# PNG and PDF: the raster is drawn where the scene says.
"$cli" render "$out/basic.gpuh" -o "$out/basic.png" 2>/dev/null || bad "png exit"
python3 "$here/pngcheck.py" "$out/basic.png" "$out/basic.svg" "void gemm_f" && ok "png pixels" || bad "png pixels"
"$cli" render "$out/hostile.gpuh" -o "$out/hostile.png" 2>/dev/null || bad "hostile png exit"
python3 "$here/pngcheck.py" "$out/hostile.png" "$out/hostile.svg" "&lt;script" && ok "hostile png pixels" || bad "hostile png pixels"
"$cli" render "$out/basic.gpuh" -o "$out/basic.pdf" 2>/dev/null && [ "$(head -c 5 "$out/basic.pdf")" = "%PDF-" ] && ok "pdf" || bad "pdf"

# The HTML page (tests/browser drives it in chromium): same capture, same bytes; hostile names
# stay inside the data block (the page's only two </script> are its own).
"$cli" render "$out/basic.gpuh" -o "$out/basic.html" 2>/dev/null && "$cli" render "$out/basic.gpuh" -o "$out/basic2.html" 2>/dev/null &&
  cmp -s "$out/basic.html" "$out/basic2.html" && ok "html: deterministic bytes" || bad "html: two renders differ"
"$cli" render "$out/hostile.gpuh" -o "$out/hostile.html" 2>/dev/null && [ "$(grep -o '</script' "$out/hostile.html" | wc -l)" = 2 ] &&
  ok "html: hostile names cannot close the script" || bad "html: hostile.html has a stray </script or failed"

# Bad inputs: one clear line, exit 2, never a crash.
expect2() {  # description, command...
  local d=$1; shift
  "$@" >/dev/null 2>"$out/err.txt"; local rc=$?
  if [ $rc -eq 2 ] && [ -s "$out/err.txt" ]; then ok "$d: exit 2 ($(head -c 120 "$out/err.txt" | head -n1))"; else bad "$d: exit $rc"; fi
}
echo "not a capture" > "$out/text.gpuh"
expect2 "not a capture" "$cli" render "$out/text.gpuh" -o "$out/x.svg"
expect2 "missing file" "$cli" render "$out/missing.gpuh" -o "$out/x.svg"
expect2 "bad range" "$cli" render "$out/basic.gpuh" --range train_step@9 -o "$out/x.svg"
expect2 "bad duration" "$cli" render "$out/basic.gpuh" --from "3 parsecs" -o "$out/x.svg"
expect2 "bad regex" "$cli" render "$out/basic.gpuh" --kernel '([' -o "$out/x.svg"
expect2 "bad lanes" "$cli" render "$out/basic.gpuh" --lanes bogus -o "$out/x.svg"
expect2 "unknown output type" "$cli" render "$out/basic.gpuh" -o "$out/x.bmp"
expect2 "html of a view with no page" "$cli" render "$out/basic.gpuh" --view flame -o "$out/x.html"
expect2 "unwritable output" "$cli" render "$out/basic.gpuh" -o /nonexistent/dir/x.png
size=$(stat -c %s "$out/basic.gpuh")
head -c $((size - 40)) "$out/basic.gpuh" > "$out/truncated.gpuh"
"$cli" render "$out/truncated.gpuh" -o "$out/truncated.svg" 2>"$out/trunc.err"; rc=$?
[ $rc -lt 128 ] && xmllint --noout "$out/truncated.svg" 2>/dev/null && ok "truncated capture: exit $rc, chart drawn ($(head -n1 "$out/trunc.err"))" || bad "truncated capture: exit $rc"
python3 - "$out/basic.gpuh" "$out/corrupt.gpuh" <<'PY'
import sys
d = bytearray(open(sys.argv[1], "rb").read())
d[len(d) // 2] ^= 0xFF
open(sys.argv[2], "wb").write(bytes(d))
PY
"$cli" render "$out/corrupt.gpuh" -o "$out/corrupt.svg" 2>"$out/corrupt.err"; rc=$?
[ $rc -lt 128 ] && ok "corrupt capture: exit $rc, no crash ($(head -n1 "$out/corrupt.err"))" || bad "corrupt capture crashed: exit $rc"

# CSV: one row per event (then the host API and NVTX rows, kind api/nvtx), parses with Python's
# csv module, hostile names survive quoting.
"$cli" export "$out/basic.gpuh" --format csv -o "$out/basic.csv" 2>/dev/null || bad "export exit"
"$cli" export "$out/hostile.gpuh" --format csv -o "$out/hostile.csv" 2>/dev/null || bad "export hostile exit"
python3 - "$out/basic.csv" "$out/hostile.csv" <<'PY' && ok "csv parses, one row per event" || bad "csv"
import csv, sys
host_kinds = ("api", "nvtx")
rows = list(csv.DictReader(open(sys.argv[1], encoding="utf-8", newline="")))
assert any(r["kind"] == "api" for r in rows), "no host API rows"
rows = [r for r in rows if r["kind"] not in host_kinds]
assert len(rows) == 30, len(rows)
k = [r for r in rows if r["name"].startswith("void gemm_f")]
assert k and k[0]["queued_ns"] and int(k[0]["exec_ns"]) == 60000, k[:1]
rows = [r for r in csv.DictReader(open(sys.argv[2], encoding="utf-8", newline="")) if r["kind"] not in host_kinds]
assert len(rows) == 9 and any(r["name"] == "quote\"s'and\"more" for r in rows), [r["name"][:30] for r in rows]
PY
expect2 "unknown export format" "$cli" export "$out/basic.gpuh" --format bogus -o "$out/x.csv"

# The window inside a range: --from/--to count from the range's start, the axis and the footer
# say so, and bars that began before the window are clipped at the plot's left edge (x = 250).
"$cli" render "$out/basic.gpuh" -o "$out/inrange.svg" --range train_step@2 --from 100us --to 600us 2>/dev/null ||
  bad "render --range with --from/--to"
grep -q '>time from the start of range train_step@2<' "$out/inrange.svg" &&
  grep -q 'window 100 us … 600 us from the start of range train_step@2' "$out/inrange.svg" &&
  grep -q 'text-anchor="middle">100 us<' "$out/inrange.svg" && ok "--from/--to inside --range: axis and footer on the range's start" ||
  bad "--range with --from/--to: axis or footer"
python3 - "$out/inrange.svg" <<'PY' && ok "bars before the window are clipped to the plot" || bad "a bar crosses into the label column"
import re, sys
s = open(sys.argv[1]).read()
for m in re.finditer(r'<rect x="(-?[0-9.]+)" y="[0-9.]+" width="([0-9.]+)"', s):
    x, w = float(m.group(1)), float(m.group(2))
    if x < 0 or (0 < x < 245 and x + w > 250.5):  # (a 3 px queue-delay flag may sit on the edge)
        print("crossing rect", m.group(0)); sys.exit(1)
PY
expect2 "past the end of the range train_step@2" "$cli" render "$out/basic.gpuh" -o "$out/x.svg" --range train_step@2 --from 5ms

# Level of detail: 200,000 events still give an SVG under 5 MB.
"$gen" big "$out/big.gpuh" 200000 || bad "big fixture"
"$cli" render "$out/big.gpuh" -o "$out/big.svg" 2>"$out/big.err" || bad "big render"
bytes=$(stat -c %s "$out/big.svg")
[ "$bytes" -lt 5000000 ] && ok "200k events -> SVG $bytes bytes (< 5 MB)" || bad "SVG $bytes bytes"
xmllint --noout --huge "$out/big.svg" 2>/dev/null && ok "big SVG is XML" || bad "big SVG not XML"

exit $fail
