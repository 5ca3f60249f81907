#!/usr/bin/env bash
# Runs gantt-cli on the fixtures and compares stdout, stderr and the exit code with a golden file.
#   golden.sh GANTT_CLI FIXTURE_DIR GOLDEN_FILE check|update ARGS...
set -uo pipefail
cli="$1"; fixtures="$2"; golden="$3"; mode="$4"; shift 4
out="$(mktemp)"; err="$(mktemp)"; got="$(mktemp)"
trap 'rm -f "$out" "$err" "$got"' EXIT
(cd "$fixtures" && "$cli" "$@" >"$out" 2>"$err")
rc=$?
{ cat "$out"; echo "--- stderr"; cat "$err"; echo "--- exit $rc"; } >"$got"
if [[ "$mode" == update ]]; then
  cp "$got" "$golden"
  exit 0
fi
if ! diff -u "$golden" "$got"; then
  echo "golden mismatch: $golden (tests/unit/cli/regen_goldens.sh updates it, on purpose)" >&2
  exit 1
fi
