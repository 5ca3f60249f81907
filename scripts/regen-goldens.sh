#!/usr/bin/env bash
# Rewrites every golden file from the current build, on purpose, after a deliberate change to
# an output: review `git diff --stat tests/` and each changed file before committing, and say
# in the commit which goldens changed and why.
#   scripts/regen-goldens.sh [BUILD_DIR]            (default: build)
# The golden sets, each compared by its own test:
#   tests/unit/cli/golden/      info and dump of the committed fixtures     (cli_golden_*)
#   tests/e2e/render/golden/    charts of gantt_fixture_gen's captures     (render_*)
#   tests/e2e/cli/golden/       every subcommand on make_capture's captures (cli_golden)
#   tests/e2e/cli/golden/jobs_* the cluster view of a small Slurm record    (cli_jobs)
# The fixture captures themselves are inputs, not goldens: tests/fixtures/regen.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
cmake --build "$build" --target gantt-cli gantt_fixture_gen gpuhook_make_capture >/dev/null
echo "regen-goldens: tests/unit/cli/golden" >&2
bash tests/unit/cli/regen_goldens.sh "$build" >/dev/null
echo "regen-goldens: tests/e2e/render/golden" >&2
bash tests/e2e/render/regen_goldens.sh "$build"
echo "regen-goldens: tests/e2e/cli/golden" >&2
UPDATE_GOLDEN=1 bash tests/e2e/cli/cli_golden_test.sh "$build/tools/gantt-cli/gantt-cli" \
  "$build/tests/e2e/cli/gpuhook_make_capture" >/dev/null
echo "regen-goldens: cli_jobs" >&2
UPDATE_GOLDEN=1 bash tests/e2e/cli/jobs_test.sh "$build/tools/gantt-cli/gantt-cli" >/dev/null
git status --short -- tests/unit/cli/golden tests/e2e/render/golden tests/e2e/cli
