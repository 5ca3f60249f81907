#!/usr/bin/env bash
# Each example program recorded under libgpuhook.so on the CPU simulator, then drawn: SVG
# (valid XML, says SIMULATED), PNG (pixels where the scene says), PDF, every lane mode.
#   sim_render_test.sh SIM_LIB_DIR HOOK_LIB GANTT_CLI OUT_DIR EXAMPLE [ARGS...]
set -u
sim_lib=$1 hook=$2 cli=$3 out=$4 example=$5
shift 5
here="$(cd "$(dirname "$0")" && pwd)"
name=$(basename "$example")
mkdir -p "$out"
export LD_LIBRARY_PATH=$sim_lib GPUHOOK_LIB=$hook GPUHOOK_QUIET=1
fail=0
bad() { echo "FAIL $name: $*"; fail=1; }
for variant in plain fixed; do
  extra=()
  [[ $variant == fixed ]] && extra=(--fixed)
  cap="$out/$name.$variant.gpuh"
  rm -f "$cap"
  "$cli" record -o "$cap" -- "$example" "$@" "${extra[@]}" >/dev/null 2>"$out/$name.$variant.err" ||
    { [[ $variant == fixed ]] && grep -q "no fixed twin" "$out/$name.$variant.err" && continue; bad "record $variant: $(tail -n2 "$out/$name.$variant.err")"; continue; }
  "$cli" render "$cap" -o "$out/$name.$variant.svg" 2>/dev/null || bad "render svg $variant"
  xmllint --noout "$out/$name.$variant.svg" || bad "$variant svg not XML"
  grep -q "SIMULATED GPU" "$out/$name.$variant.svg" || bad "$variant footer does not say the GPU is simulated"
  "$cli" render "$cap" -o "$out/$name.$variant.png" 2>/dev/null || bad "render png $variant"
  python3 "$here/pngcheck.py" "$out/$name.$variant.png" "$out/$name.$variant.svg" "*" >/dev/null || bad "$variant png pixels"
  "$cli" render "$cap" -o "$out/$name.$variant.pdf" 2>/dev/null || bad "render pdf $variant"
  # The utilisation view and the series behind it (analysis/timeline.h).
  "$cli" render "$cap" --view utilisation -o "$out/$name.$variant.util.svg" 2>/dev/null || bad "--view utilisation"
  xmllint --noout "$out/$name.$variant.util.svg" || bad "--view utilisation not XML"
  grep -q "compute (a kernel running)" "$out/$name.$variant.util.svg" || bad "--view utilisation has no legend"
  "$cli" render "$cap" --view utilisation -o "$out/$name.$variant.util.png" 2>/dev/null || bad "--view utilisation png"
  "$cli" stats "$cap" --timeline auto --format csv 2>/dev/null | head -n1 | grep -q '^start_us,device,compute_%,copy_%,busy_%,idle_%,drop$' ||
    bad "stats --timeline csv header"
  "$cli" render "$cap" --view memory -o "$out/$name.$variant.mem.svg" 2>/dev/null || bad "--view memory"
  xmllint --noout "$out/$name.$variant.mem.svg" || bad "--view memory not XML"
  grep -q "GPU memory in use" "$out/$name.$variant.mem.svg" || bad "--view memory has no title"
  "$cli" stats "$cap" --by memory --format json 2>/dev/null | grep -q '"peak_bytes":[1-9]' || bad "stats --by memory: no peak"
  "$cli" render "$cap" --memory-strip -o "$out/$name.$variant.strip.svg" 2>/dev/null || bad "--memory-strip"
  grep -q "memory: peak [1-9]" "$out/$name.$variant.strip.svg" || bad "--memory-strip draws no strip"
  for lanes in device thread; do
    "$cli" render "$cap" --lanes $lanes -o "$out/$name.$variant.$lanes.svg" 2>/dev/null || bad "--lanes $lanes"
    xmllint --noout "$out/$name.$variant.$lanes.svg" || bad "--lanes $lanes not XML"
  done
  [[ $fail == 0 ]] && echo "ok   $name $variant"
done
exit $fail
