#!/usr/bin/env bash
# CUDA graphs end to end on the simulator: examples/graphs launches its step kernel by kernel,
# and with --fixed replays it as a captured graph. Under the hook, `stats --by graph` must show
# the graph (one launch per step, every kernel of the step a node) only for --fixed, the chart
# must bracket each launch on its stream lane, and diagnose must name CUDA graphs as the fix
# for the plain form only.
#   sim_graphs_test.sh SIM_LIB_DIR HOOK_LIB GANTT_CLI GRAPHS_EXAMPLE STEPS
set -u
sim_lib=$1 hook=$2 cli=$3 example=$4 steps=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH=$sim_lib GPUHOOK_LIB=$hook GPUHOOK_QUIET=1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
for variant in plain fixed; do
  extra=()
  [[ $variant == fixed ]] && extra=(--fixed)
  "$cli" record -o "$work/$variant.gpuh" -- "$example" --iterations "$steps" --size 4096 "${extra[@]}" \
    >"$work/$variant.out" 2>"$work/$variant.err" || { echo "FAIL: $variant run: $(cat "$work/$variant.err")"; exit 2; }
  grep -q '^OK$' "$work/$variant.out" || fail "$variant: the example did not check its result"
  "$cli" stats "$work/$variant.gpuh" --by graph --format json >"$work/$variant.json" || { echo "FAIL: stats $variant"; exit 2; }
  "$cli" stats "$work/$variant.gpuh" --by graph
  # Wide enough that a 25 us launch has room for its label.
  "$cli" render "$work/$variant.gpuh" -o "$work/$variant.svg" --width 12000 || { echo "FAIL: render $variant"; exit 2; }
  "$cli" diagnose "$work/$variant.gpuh" --format json >"$work/$variant.diag.json" || { echo "FAIL: diagnose $variant"; exit 2; }
done

# --by graph: the fixed form has one graph, launched once per step, 25 nodes each; its launches
# join their cudaGraphLaunch calls. The plain form has none.
python3 - "$work/plain.json" "$work/fixed.json" "$steps" <<'PY' || fails=$((fails + 1))
import json, sys
plain, fixed, steps = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
ok = True
def check(cond, what):
    global ok
    if not cond:
        print("FAIL:", what)
        ok = False
check(plain["by"] == "graph" and plain["graphs"] == [], "plain: graphs %r" % plain.get("graphs"))
check(len(fixed["graphs"]) == 1, "fixed: %d graphs" % len(fixed["graphs"]))
if fixed["graphs"]:
    g = fixed["graphs"][0]
    check(g["launches"] == steps, "fixed: %d launches, want %d" % (g["launches"], steps))
    check(g["nodes_min"] == 25 and g["nodes_max"] == 25, "fixed: nodes %d..%d, want 25" % (g["nodes_min"], g["nodes_max"]))
    check(g["launch_calls"] == steps, "fixed: %d launch calls joined, want %d" % (g["launch_calls"], steps))
    check(0 < g["busy_ns"] <= g["span_total_ns"], "fixed: busy %d of span %d" % (g["busy_ns"], g["span_total_ns"]))
print("makespan (simulated) plain %.1f us, fixed %.1f us" % (plain["makespan_ns"] / 1e3, fixed["makespan_ns"] / 1e3))
sys.exit(0 if ok else 1)
PY

# The chart: one bracket per launch (an outline with a tooltip), labelled with the graph and
# its node count.
outlines=$(grep -o 'stroke="#178082" stroke-width="1"><title>graph [0-9]* · 25 nodes, launch ' "$work/fixed.svg" | wc -l)
[[ $outlines -eq $steps ]] || fail "fixed chart: $outlines bracket outlines, want $steps"
# A label needs room: on a busy machine the run's span grows and a 25 us launch in the whole
# chart may get none. Zoomed on the first launch (its 25 kernels), it must have one.
"$cli" export "$work/fixed.gpuh" --format csv -o "$work/fixed.csv" >/dev/null 2>&1 || fail "export csv"
window=$(python3 - "$work/fixed.csv" <<'PY'
import csv, sys
rows = sorted((r for r in csv.DictReader(open(sys.argv[1])) if r["kind"] == "kernel"), key=lambda r: int(r["start_rel_ns"]))[:25]
print(max(0, int(rows[0]["start_rel_ns"]) // 1000 - 5), max(int(r["end_rel_ns"]) for r in rows) // 1000 + 5)
PY
)
read -r from_us to_us <<<"$window"
"$cli" render "$work/fixed.gpuh" -o "$work/first.svg" --from "${from_us}us" --to "${to_us}us" || fail "render the first launch"
labels=$(grep -o '>graph [0-9]* · 25 nodes</text>' "$work/first.svg" | wc -l)
[[ $labels -ge 1 ]] || fail "fixed chart, first launch: $labels bracket labels, want 1"
grep -q 'graph [0-9]* · ' "$work/plain.svg" && fail "plain chart: a graph bracket without graphs"

# diagnose: launch-bound names CUDA graphs for the plain form, and leaves the graph alone.
python3 - "$work/plain.diag.json" "$work/fixed.diag.json" <<'PY' || fails=$((fails + 1))
import json, sys
plain, fixed = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
lb = [f for f in plain["findings"] if f["rule"] == "launch-bound"]
ok = bool(lb) and "cudaGraphLaunch" in lb[0]["fix"]
if not ok:
    print("FAIL: plain: launch-bound did not name CUDA graphs:", lb)
if any(f["rule"] == "launch-bound" for f in fixed["findings"]):
    print("FAIL: fixed: launch-bound flagged work that runs as a graph")
    ok = False
sys.exit(0 if ok else 1)
PY
[[ $fails -eq 0 ]] && echo "PASS: graphs under the hook" || echo "$fails check(s) failed"
exit $((fails > 0))
