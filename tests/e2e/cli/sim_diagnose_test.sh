#!/usr/bin/env bash
# Each example program on the simulator triggers its diagnose rule, and its --fixed twin does
# not (other rules may fire on either: only this rule is asserted). Both are scanned (the hook's
# captures hold allocation records, memory uses, NVML and PM samples, which the scan keeps), and
# report what they report loaded.
#   sim_diagnose_test.sh SIM_LIB_DIR HOOK_LIB GANTT_CLI EXAMPLE RULE [ARGS...]
set -u
sim_lib=$1 hook=$2 cli=$3 example=$4 rule=$5
shift 5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH=$sim_lib GPUHOOK_LIB=$hook GPUHOOK_QUIET=1
fails=0
for variant in plain fixed; do
  extra=()
  [[ $variant == fixed ]] && extra=(--fixed)
  "$cli" record -o "$work/$variant.gpuh" -- "$example" "$@" "${extra[@]}" >/dev/null 2>"$work/$variant.err" ||
    { echo "FAIL: $variant run: $(cat "$work/$variant.err")"; exit 2; }
  "$cli" diagnose "$work/$variant.gpuh" --format json --streamed >"$work/$variant.json" 2>"$work/$variant.scan.err" ||
    [[ $? == 1 ]] || { echo "FAIL: diagnose $variant: $(cat "$work/$variant.scan.err")"; exit 2; }
  "$cli" diagnose "$work/$variant.gpuh" --format json --in-memory >"$work/$variant.loaded.json" 2>/dev/null
  cmp -s "$work/$variant.json" "$work/$variant.loaded.json" ||
    { echo "FAIL $(basename "$example") $variant: the scanned report differs from --in-memory's"; fails=$((fails + 1)); }
  if grep -q "cannot scan" "$work/$variant.scan.err"; then
    echo "FAIL $(basename "$example") $variant: loaded, not scanned: $(cat "$work/$variant.scan.err")"
    fails=$((fails + 1))
  fi
  fired=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(int(any(f["rule"]==sys.argv[2] for f in d["findings"])))' \
    "$work/$variant.json" "$rule")
  if [[ $rule == stream-serialisation || $rule == copy-overlap || $rule == imbalance ]]; then
    # A rule a summary supports: the capture's summary gives the same result and findings.
    rm -f "$work/$variant.gsum"
    "$cli" stats "$work/$variant.gpuh" --summary -o "$work/$variant.gsum" 2>/dev/null &&
      "$cli" diagnose "$work/$variant.gsum" --format json >"$work/$variant.gsum.json" || { echo "FAIL: diagnose $variant.gsum"; exit 2; }
    python3 - "$work/$variant.json" "$work/$variant.gsum.json" "$rule" <<'PY' || { echo "FAIL $(basename "$example") $variant: the summary's $rule differs"; fails=$((fails + 1)); }
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
rule = sys.argv[3]
pick = lambda r: ([x for x in r["rules"] if x["rule"] == rule],
                  [dict(f, evidence=f["evidence"][:1]) if rule == "imbalance" else f for f in r["findings"] if f["rule"] == rule])
sys.exit(0 if pick(a) == pick(b) else 1)
PY
  fi
  want=1
  [[ $variant == fixed ]] && want=0
  if [[ $fired != "$want" ]]; then
    echo "FAIL $(basename "$example") $variant: rule $rule fired=$fired, expected $want"
    "$cli" diagnose "$work/$variant.gpuh"
    "$cli" stats "$work/$variant.gpuh" --top 5
    fails=$((fails + 1))
  else
    echo "ok   $(basename "$example") $variant: rule $rule fired=$fired"
  fi
done
exit $((fails > 0))
