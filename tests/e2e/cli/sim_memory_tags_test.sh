#!/usr/bin/env bash
# gpuhook_mem_tag() end to end: memory_phases tags its allocations (params, grads, data,
# activations) under the hook on the simulator; stats, diagnose and the memory view show the
# memory by what it is for.
#   sim_memory_tags_test.sh SIM_LIB_DIR HOOK_LIB GANTT_CLI MEMORY_PHASES
set -euo pipefail
sim_lib=$1 hook=$2 cli=$3 example=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH=$sim_lib GPUHOOK_LIB=$hook GPUHOOK_QUIET=1
"$cli" record -o "$work/m.gpuh" -- "$example" --iterations 1 --size 16384 >/dev/null
"$cli" dump "$work/m.gpuh" --kind memory_tag > "$work/tags.txt" || true
n=$(grep -c . "$work/tags.txt" || true)
# init + 16 layers x (params, grads) + data + 16 activations = 50 tags
[[ $n == 50 ]] || { echo "FAIL: $n memory_tag records, expected 50"; head "$work/tags.txt"; exit 1; }
"$cli" stats "$work/m.gpuh" --by memory --format json > "$work/mem.json"
python3 - "$work/mem.json" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
cat = d["peak_by_category"]
# --size 16384 floats: a weight 64 KiB, an activation 4 x that; at the peak 16 of each.
want = {"init": 16 * 65536, "params": 16 * 65536, "grads": 16 * 65536, "data": 4 * 65536,
        "activations": 16 * 4 * 65536}
if cat != want:
    print("FAIL: peak_by_category", cat, "expected", want)
    sys.exit(1)
# The largest: the initial-weights table (1 MiB), then the activations (256 KiB each).
if d["at_peak"][0]["category"] != "init" or not all(a["category"] == "activations" for a in d["at_peak"][1:6]):
    print("FAIL: the largest allocations at the peak are not the table and the activations:", d["at_peak"][:6])
    sys.exit(1)
PY
"$cli" diagnose "$work/m.gpuh" > "$work/diagnose.txt" || true
grep -q "at the peak, by what it is for: activations 4.0 MiB, init 1.0 MiB, params 1.0 MiB, grads 1.0 MiB, data 256.0 KiB" "$work/diagnose.txt" ||
  { echo "FAIL: memory-peak does not say what the peak was for"; cat "$work/diagnose.txt"; exit 1; }
# The view stacks by category (auto: the program tagged), or by kind when asked.
"$cli" render "$work/m.gpuh" --view memory -o "$work/cat.svg" 2>/dev/null
xmllint --noout "$work/cat.svg"
grep -q ">activations<" "$work/cat.svg" && grep -q "stacked by what they are for" "$work/cat.svg" ||
  { echo "FAIL: --view memory is not stacked by category"; exit 1; }
"$cli" render "$work/m.gpuh" --view memory --memory-by kind -o "$work/kind.svg" 2>/dev/null
grep -q ">pinned host<" "$work/kind.svg" && ! grep -q ">activations<" "$work/kind.svg" ||
  { echo "FAIL: --memory-by kind is not stacked by kind"; exit 1; }
"$cli" render "$work/m.gpuh" --memory-strip -o "$work/strip.svg" 2>/dev/null
xmllint --noout "$work/strip.svg"
echo "ok: 50 tags; peak by category $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["devices"][0]["peak_by_category"])' "$work/mem.json")"
