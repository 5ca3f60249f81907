#!/usr/bin/env bash
# Rewrites the golden files of gantt-cli info/dump from the current build, on purpose:
#   tests/unit/cli/regen_goldens.sh [BUILD_DIR]     then review `git diff tests/unit/cli/golden`
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../../../build}" && pwd)"
cmake --build "$build" --target gantt-cli >/dev/null
mkdir -p "$here/golden"
grep -v '^#' "$here/cases.txt" | while IFS='|' read -r name args; do
  [[ -z "$name" ]] && continue
  # shellcheck disable=SC2086
  bash "$here/golden.sh" "$build/tools/gantt-cli/gantt-cli" "$here/../../fixtures" "$here/golden/$name.txt" update $args
done
ls "$here/golden"
