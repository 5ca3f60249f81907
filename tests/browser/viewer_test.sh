#!/usr/bin/env bash
# The HTML page of `gantt-cli render -o x.html` in a real browser: Debian's chromium, driven
# headless by puppeteer-core (package.json here; scripts/setup.sh installs both). Without them
# it says what is missing and exits 77, which ctest reports as skipped.
#   viewer_test.sh GANTT_CLI MAKE_CAPTURE OUT_DIR viewer|hostile|edges|nvtx|ranks|folded [GEN_JOB]
# viewer: a 60,000-kernel capture, every control; hostile: kernel names that try to break out
# of the page; edges: an empty selection, two ranks, --lanes rank and device; nvtx: nested
# NVTX ranges on two threads, the range <-> kernel linkage, the stats table, flame graph and
# memory strip; ranks: a job of 8 ranks (GEN_JOB: tests/bench/ranks' generator, rank 5 the
# straggler), each collective's last to arrive against the SVG chart's, and n / p; diff: the
# page of `diff -o x.html` for a pair where one kernel got slower, and for hostile names;
# calls: the host calls on the host thread lanes against dump's api records; png: a screenshot
# against the PNG chart of the same window and width, lane by lane; folded: a page of more
# events than --page-events, the widest written and the rest folded and named.
# OUT_DIR keeps the page and the screenshot for people to look at.
set -u
cli=$1
make_capture=$2
out=$3
mode=${4:-viewer}
gen_job=${5:-}
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

fails=0
# page NAME EXPECT_ARGS... -- RENDER_ARGS...: renders, computes what dump says, checks in chromium.
page() {
  local name=$1 expect=() dumps=()
  shift
  while [[ $1 != -- ]]; do expect+=("$1"); shift; done
  shift
  for f in "$@"; do
    [[ $f == *.gpuh ]] || continue
    "$cli" dump "$f" > "$f.dump" || exit 2
    dumps+=("$f.dump")
  done
  "$cli" render "$@" -o "$out/$name.html" 2>"$work/render.err" || { echo "FAIL render $* -o $name.html: $(cat "$work/render.err")"; fails=$((fails + 1)); return; }
  python3 "$here/expect_from_dump.py" "${expect[@]}" "${dumps[@]}" > "$work/$name.json" || exit 2
  echo "-- $name"
  node "$here/viewer_test.mjs" "$pagemode" "$out/$name.html" "$out" "$work/$name.json" || fails=$((fails + 1))
}

case $mode in
  viewer)
    # Enough events that the whole window is drawn from the pyramid, few enough to stay quick.
    "$make_capture" synth "$work/app.gpuh" 60000 1 || exit 2
    pagemode=viewer page viewer --search GemmUniversal --sample GemmUniversal -- "$work/app.gpuh" ;;
  hostile)
    "$make_capture" script_names "$work/app.gpuh" || exit 2
    pagemode=hostile page hostile --search 'alert\(1\)' --sample '^</script><script>alert' -- "$work/app.gpuh" ;;
  edges)
    "$make_capture" steps "$work/rank0.gpuh" 1 1.0 5 || exit 2
    "$make_capture" steps "$work/rank1.gpuh" 2 1.3 5 || exit 2
    pagemode=smoke page empty --kernel '^no_such_kernel$' -- "$work/rank0.gpuh" --kernel '^no_such_kernel$'
    pagemode=smoke page ranks -- "$work/rank0.gpuh" "$work/rank1.gpuh"
    pagemode=smoke page ranks_by_rank --lanes rank -- "$work/rank0.gpuh" "$work/rank1.gpuh" --lanes rank
    pagemode=smoke page by_device --lanes device -- "$work/rank0.gpuh" "$work/rank1.gpuh" --lanes device ;;
  png)
    # The page's screenshot against render -o x.png of the same window at the page's width
    # (1400 px): kernels drawn one by one (steps; synth from 10 to 13 ms), 60,000 drawn as
    # coverage (synth), and a window of both (synth from 10 to 40 ms).
    "$make_capture" steps "$work/steps.gpuh" 1 1.0 20 || exit 2
    "$make_capture" synth "$work/synth.gpuh" 60000 1 || exit 2
    "$cli" dump "$work/steps.gpuh" > "$work/steps.dump" || exit 2
    "$cli" dump "$work/synth.gpuh" > "$work/synth.dump" || exit 2
    for case in "steps steps" "synth synth" "synth_10_13 synth --from 10ms --to 13ms" "synth_10_40 synth --from 10ms --to 40ms"; do
      read -r name capture window <<< "$case"
      read -r -a window <<< "$window"
      "$cli" render "$work/$capture.gpuh" "${window[@]}" -o "$out/png-$name.html" 2>/dev/null || { echo "FAIL render $name.html"; exit 1; }
      "$cli" render "$work/$capture.gpuh" "${window[@]}" --width 1400 -o "$out/$name.png" 2>/dev/null || { echo "FAIL render $name.png"; exit 1; }
      "$cli" render "$work/$capture.gpuh" "${window[@]}" --width 1400 -o "$work/$name.svg" 2>/dev/null || exit 2
      # Every lane drawn (the window's events per lane are not dump's; the counts are checked elsewhere).
      echo '{"lanes": null, "events": null}' > "$work/counts.json"
      # Where the chart put each lane: its label (x 242, right-aligned at the plot's left edge).
      python3 -c 'import html, json, re, sys
e = json.load(open(sys.argv[1]))
svg = open(sys.argv[2]).read()
lanes = [[html.unescape(t), int(float(y))] for y, t in re.findall(r"<text x=.242. y=.([0-9.]+). font-size=.11.[^>]*text-anchor=.end.>([^<]*)</text>", svg)]
one_by_one = sys.argv[4] in ("steps", "synth_10_13")
tol = {"px": 2, "share": 0.05, "runs": one_by_one} if one_by_one else {"px": 3, "share": 0.05, "runs": False}
e["png"] = {"path": sys.argv[3], "lanes": lanes, "tolerance": tol}
print(json.dumps(e))' "$work/counts.json" "$work/$name.svg" "$out/$name.png" $name > "$work/png.json" || exit 2
      echo "-- png ($name)"
      node "$here/viewer_test.mjs" png "$out/png-$name.html" "$out" "$work/png.json" || fails=$((fails + 1))
    done ;;
  folded)
    # More events than --page-events: the page is read by a scan, writes the widest one by one
    # and folds the rest into their lanes' coverage, which it names zoomed in. Without the
    # option the same capture is under the page's cap: loaded, the same page as --in-memory's.
    "$make_capture" synth "$work/app.gpuh" 60000 1 || exit 2
    "$cli" dump "$work/app.gpuh" > "$work/app.dump" || exit 2
    "$cli" render "$work/app.gpuh" --page-events 5000 -o "$out/folded.html" 2>"$work/render.err" || { echo "FAIL render: $(cat "$work/render.err")"; exit 1; }
    grep -q "5000 written one by one" "$work/render.err" || { echo "FAIL render --page-events 5000 says: $(cat "$work/render.err")"; fails=$((fails + 1)); }
    python3 "$here/expect_from_dump.py" --widest 5000 "$work/app.dump" > "$work/expect.json" || exit 2
    echo "-- folded"
    node "$here/viewer_test.mjs" folded "$out/folded.html" "$out" "$work/expect.json" || fails=$((fails + 1))
    "$cli" render "$work/app.gpuh" -o "$work/whole.html" 2>/dev/null || exit 2
    "$cli" render "$work/app.gpuh" --in-memory -o "$work/loaded.html" 2>/dev/null || exit 2
    if cmp -s "$work/whole.html" "$work/loaded.html"; then echo "ok   under the cap, the page is the loaded one, byte for byte"
    else echo "FAIL under the cap, the page differs from --in-memory's"; fails=$((fails + 1)); fi
    # Bounded: four times the events, the same cap, a page within a tenth of the size.
    "$make_capture" synth "$work/app4.gpuh" 240000 1 || exit 2
    "$cli" render "$work/app4.gpuh" --page-events 5000 -o "$work/folded4.html" 2>/dev/null || exit 2
    a=$(stat -c %s "$out/folded.html") b=$(stat -c %s "$work/folded4.html")
    if ((b * 10 <= a * 11)); then echo "ok   60,000 events: a page of $a bytes; 240,000: $b bytes"
    else echo "FAIL the page grows with the events past the cap: 60,000: $a bytes, 240,000: $b"; fails=$((fails + 1)); fi ;;
  calls)
    # Synchronisations (written apart, the host blocked in them) and launches (rebuilt from
    # the events) on one thread.
    "$make_capture" steps "$work/app.gpuh" 1 1.0 20 || exit 2
    pagemode=calls page calls -- "$work/app.gpuh" ;;
  nvtx)
    "$make_capture" nvtx "$work/app.gpuh" 4 || exit 2
    "$cli" dump "$work/app.gpuh" > "$work/app.dump" || exit 2
    "$cli" render "$work/app.gpuh" --memory-strip -o "$out/nvtx.html" 2>"$work/render.err" || { echo "FAIL render: $(cat "$work/render.err")"; exit 1; }
    # The second "forward" range is the one selected; its step is the measured span.
    python3 "$here/expect_from_dump.py" "$work/app.dump" > "$work/counts.json" || exit 2
    python3 "$here/expect_nvtx.py" "$work/app.dump" forward 1 > "$work/nvtx.json" || exit 2
    python3 -c 'import json, sys; e = json.load(open(sys.argv[1])); e["nvtx"] = json.load(open(sys.argv[2])); print(json.dumps(e))' \
      "$work/counts.json" "$work/nvtx.json" > "$work/expect.json" || exit 2
    echo "-- nvtx"
    node "$here/viewer_test.mjs" nvtx "$out/nvtx.html" "$out" "$work/expect.json" || fails=$((fails + 1)) ;;
  ranks)
    # 8 ranks: rank 5 comes last every time; 4 ranks: no straggler, the last differs by a few us.
    for n in 8 4; do
      mkdir -p "$work/job$n"
      "$gen_job" "$work/job$n" $n 1000 >/dev/null || exit 2
      files=("$work"/job$n/rank*.gpuh)
      "$cli" render "${files[@]}" -o "$out/ranks$n.html" 2>"$work/render.err" || { echo "FAIL render: $(cat "$work/render.err")"; exit 1; }
      "$cli" render "${files[@]}" -o "$work/ranks$n.svg" 2>/dev/null || exit 2
      for f in "${files[@]}"; do "$cli" dump "$f" > "$f.dump" || exit 2; done
      python3 "$here/expect_from_dump.py" "${files[@]/%/.dump}" > "$work/counts.json" || exit 2
      # The SVG outlines each collective's last arrival with a tooltip, in the order of the links.
      python3 -c 'import json, re, sys
e = json.load(open(sys.argv[1]))
svg = open(sys.argv[2]).read()
e["ranks"] = {"last_ranks": [int(r) for r in re.findall(r"<rect[^>]*><title>last to arrive: rank (\d+)", svg)], "ranks": int(sys.argv[3]),
              "nccl": [sum(1 for l in open(d) if l.split(" ")[1:2] == ["nccl"]) for d in sys.argv[4:]]}
print(json.dumps(e))' "$work/counts.json" "$work/ranks$n.svg" $n "${files[@]/%/.dump}" > "$work/expect.json" || exit 2
      echo "-- ranks ($n)"
      node "$here/viewer_test.mjs" ranks "$out/ranks$n.html" "$out" "$work/expect.json" || fails=$((fails + 1))
    done
    # diff -o x.html of two jobs (ranks 0-3 and 4-7 of the 8, each merged into one file): both
    # runs' collectives on one page, the same last arrivals as the SVG diff chart's.
    "$cli" merge "$work"/job8/rank0[0-3].gpuh -o "$work/jobA.gpuh" >/dev/null 2>&1 || exit 2
    "$cli" merge "$work"/job8/rank0[4-7].gpuh -o "$work/jobB.gpuh" >/dev/null 2>&1 || exit 2
    "$cli" diff "$work/jobA.gpuh" "$work/jobB.gpuh" -o "$out/ranks_diff.html" >/dev/null 2>&1
    "$cli" diff "$work/jobA.gpuh" "$work/jobB.gpuh" -o "$work/ranks_diff.svg" >/dev/null 2>&1
    python3 -c 'import json, re, sys
svg = open(sys.argv[1]).read()
print(json.dumps({"lanes": None, "events": None, "ranks": {"last_ranks": [int(r) for r in re.findall(r"<rect[^>]*><title>last to arrive: rank (\d+)", svg)], "ranks": 4, "any_order": True}}))' "$work/ranks_diff.svg" > "$work/expect.json" || exit 2
    echo "-- ranks (diff of two jobs)"
    node "$here/viewer_test.mjs" ranks "$out/ranks_diff.html" "$out" "$work/expect.json" || fails=$((fails + 1)) ;;
  diff)
    # kernelA 1.3 times slower in the new run; aligned on the third step.
    "$make_capture" steps "$work/base.gpuh" 1 1.0 20 || exit 2
    "$make_capture" steps "$work/new.gpuh" 2 1.3 20 || exit 2
    "$make_capture" script_names "$work/hostile.gpuh" || exit 2
    for f in base new hostile; do "$cli" dump "$work/$f.gpuh" > "$work/$f.dump" || exit 2; done
    # diff page NAME BASE NEW EXPECT_ARGS -- DIFF_ARGS...
    diffpage() {
      local name=$1 base=$2 new=$3 expect=()
      shift 3
      while [[ $1 != -- ]]; do expect+=("$1"); shift; done
      shift
      "$cli" diff "$work/$base.gpuh" "$work/$new.gpuh" "$@" --format json > "$work/report.json" 2>/dev/null
      [[ $? -le 1 ]] || { echo "FAIL diff --format json"; exit 1; }
      "$cli" diff "$work/$base.gpuh" "$work/$new.gpuh" "$@" -o "$out/$name.html" >/dev/null 2>"$work/diff.err"
      [[ $? -le 1 && -s "$out/$name.html" ]] || { echo "FAIL diff -o $name.html: $(cat "$work/diff.err")"; fails=$((fails + 1)); return; }
      python3 "$here/expect_from_dump.py" "${expect[@]}" "$work/$base.dump" "$work/$new.dump" > "$work/counts.json" || exit 2
      python3 -c 'import json, sys
e = json.load(open(sys.argv[1]))
e["diff"] = {"report": json.load(open(sys.argv[2])), "align": sys.argv[3], "sections_per_run": 1,
             "slower": sys.argv[4] == "slower", "unchanged": "kernelB()"}
print(json.dumps(e))' "$work/counts.json" "$work/report.json" "$align" "$slower" > "$work/$name.json" || exit 2
      echo "-- $name"
      node "$here/viewer_test.mjs" "$pagemode" "$out/$name.html" "$out" "$work/$name.json" || fails=$((fails + 1))
    }
    align=step@3 slower=slower pagemode=diff diffpage diff base new -- --align-range step@3
    align= slower=slower pagemode=diff diffpage diff_start base new --
    align= slower=no pagemode=diff-hostile diffpage diff_hostile hostile hostile --search 'alert\(1\)' --sample '^</script><script>alert' --
    # Nothing selected on either side: a page that says so, and takes input without an error.
    align= slower=no pagemode=smoke diffpage diff_empty base new --kernel '^no_such_kernel$' -- --kernel '^no_such_kernel$' ;;
  *) echo "usage: viewer_test.sh GANTT_CLI MAKE_CAPTURE OUT_DIR viewer|hostile|edges|nvtx|ranks|diff|calls|png|folded [GEN_JOB]"; exit 2 ;;
esac
exit $((fails > 0))
