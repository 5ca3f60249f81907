#!/usr/bin/env bash
# Runs every benchmark and prints one table: figure, measured, goal, pass/miss.
# Each area has tests/bench/<area>/bench.sh BUILD_DIR, printing table rows
# "| figure | measured | goal | pass/miss |" on stdout (details go to stderr).
#   scripts/bench.sh [area...]      # default: every area
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-bench
export PATH="$PATH:/usr/local/cuda/bin"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null

areas=("$@")
if ((${#areas[@]} == 0)); then
  for f in tests/bench/*/bench.sh; do areas+=("$(basename "$(dirname "$f")")"); done
fi

rows=()
for a in "${areas[@]}"; do
  echo "bench: $a ..." >&2
  while IFS= read -r line; do rows+=("$line"); done < <(bash "tests/bench/$a/bench.sh" "$build")
done

echo
echo "| figure | measured | goal | result |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
