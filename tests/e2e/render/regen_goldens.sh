#!/usr/bin/env bash
# Regenerates the golden SVGs on purpose, after a deliberate change to the chart:
#   tests/e2e/render/regen_goldens.sh BUILD_DIR
# Review the diff (git diff tests/e2e/render/golden) before committing it.
set -euo pipefail
build=${1:?usage: regen_goldens.sh BUILD_DIR}
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$here/golden"
bash "$here/check_render.sh" "$build/tools/gantt-cli/gantt-cli" "$build/tests/e2e/render/gantt_fixture_gen" \
  "$here/golden" "$build/tests/e2e/render/regen" --update >/dev/null || true
echo "goldens written to $here/golden"
