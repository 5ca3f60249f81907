#!/usr/bin/env bash
# Runs one sim_api program on the simulator without and with the hook preloaded (each process
# of it, children included, writes its own capture) and checks that the hook changes neither
# its exit code nor its output: the lines are compared sorted (a multi-process program's lines
# interleave as they will) with process ids masked, the hook's own exit lines left out.
#   same_under_hook.sh SIM_LIB_DIR HOOK_LIB PROGRAM [ARGS...]
set -u
sim_lib=$1 hook=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
normalise() { grep -v '^gpuhook: ' | sed -E 's/[0-9]{3,}/N/g' | sort; }
LD_PRELOAD="${GPUHOOK_SIM_TEST_PRELOAD:-}" LD_LIBRARY_PATH="$sim_lib" "$@" > "$work/plain.txt" 2>&1
plain_rc=$?
LD_PRELOAD="${GPUHOOK_SIM_TEST_PRELOAD:+$GPUHOOK_SIM_TEST_PRELOAD:}$hook" LD_LIBRARY_PATH="$sim_lib" \
  GPUHOOK_OUTPUT="$work/run-%p.gpuh" "$@" > "$work/hooked.txt" 2>&1
hooked_rc=$?
fails=0
[[ $plain_rc == "$hooked_rc" ]] && echo "ok   exit code $plain_rc with and without the hook" ||
  { echo "FAIL: exit code $plain_rc without the hook, $hooked_rc with it"; fails=1; }
if diff <(normalise < "$work/plain.txt") <(normalise < "$work/hooked.txt") > "$work/diff.txt"; then
  echo "ok   the same output with and without the hook"
else
  echo "FAIL: the hook changed the output:"; cat "$work/diff.txt"; fails=1
fi
n=$(ls "$work"/run-*.gpuh 2>/dev/null | wc -l)
[[ $n -gt 0 ]] && echo "ok   $n captures written" || { echo "FAIL: the hook wrote no capture"; fails=1; }
[[ $plain_rc == 0 ]] || { echo "FAIL: the program failed: $(tail -3 "$work/plain.txt")"; fails=1; }
exit $fails
