#!/usr/bin/env bash
# The HTML page of `gantt-cli render -o x.html` in a real browser: Debian's chromium, driven
# headless by puppeteer-core (package.json here; scripts/setup.sh installs both). Without them
# it says what is missing and exits 77, which ctest reports as skipped.
#   viewer_test.sh GANTT_CLI MAKE_CAPTURE OUT_DIR viewer|hostile
# OUT_DIR keeps the page and the screenshot for people to look at.
set -u
cli=$1
make_capture=$2
out=$3
mode=${4:-viewer}
here=$(cd "$(dirname "$0")" && pwd)
chromium=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [[ -z "$chromium" || ! -x "$chromium" ]]; then
  echo "SKIP: no chromium on PATH (scripts/setup.sh installs Debian's chromium; or set CHROMIUM)"
  exit 77
fi
if ! command -v node >/dev/null || [[ ! -d "$here/node_modules/puppeteer-core" ]]; then
  echo "SKIP: node or $here/node_modules/puppeteer-core missing (scripts/setup.sh runs npm ci there)"
  exit 77
fi
export CHROMIUM=$chromium
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [[ $mode == viewer ]]; then
  # Enough events that the whole window is drawn from the pyramid, few enough to stay quick.
  "$make_capture" synth "$work/app.gpuh" 60000 1 || exit 2
  search=GemmUniversal sample=GemmUniversal
else
  "$make_capture" script_names "$work/app.gpuh" || exit 2
  search='alert\(1\)' sample='^</script><script>alert'
fi
"$cli" render "$work/app.gpuh" -o "$out/$mode.html" || { echo "FAIL render -o $mode.html"; exit 1; }
"$cli" dump "$work/app.gpuh" > "$work/dump.txt" || exit 2
python3 "$here/expect_from_dump.py" "$work/dump.txt" "$search" "$sample" > "$work/expect.json" || exit 2
node "$here/viewer_test.mjs" "$mode" "$out/$mode.html" "$out" "$work/expect.json"
