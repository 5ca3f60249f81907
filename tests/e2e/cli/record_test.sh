#!/usr/bin/env bash
# gantt-cli record: environment, exit codes, signal forwarding, capture discovery, errors.
#   record_test.sh GANTT_CLI PROBE_LIB
set -u
cli=$1
export GPUHOOK_LIB=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fails=0
check() {  # check NAME EXPECTED ACTUAL
  if [[ "$2" != "$3" ]]; then echo "FAIL $1: expected [$2] got [$3]"; fails=$((fails + 1)); else echo "ok   $1"; fi
}

"$cli" record -- sh -c 'exit 3' 2>/dev/null; check "exit code passes through" 3 $?
"$cli" record -- sh -c 'kill -TERM $$' 2>/dev/null; check "killed child gives 128+15" 143 $?
out=$("$cli" record -o 'run-%p.gpuh' --api all --range 'nvtx:step@2-3' --no-nccl --on-full block -- \
  sh -c 'echo "$GPUHOOK_OUTPUT|$GPUHOOK_API|$GPUHOOK_RANGE|$GPUHOOK_NCCL|$GPUHOOK_ON_FULL|$LD_PRELOAD"' 2>/dev/null)
check "flags become GPUHOOK_* and LD_PRELOAD" "run-%p.gpuh|all|nvtx:step@2-3|0|block|$GPUHOOK_LIB" "$out"
out=$(LD_PRELOAD=/keep/me.so "$cli" record -- sh -c 'echo "$LD_PRELOAD"' 2>/dev/null)
check "existing LD_PRELOAD is kept after the hook" "$GPUHOOK_LIB:/keep/me.so" "$out"
out=$("$cli" record -- sh -c 'echo "$@"' sh -o --help 2>/dev/null)
check "arguments after -- belong to the command" "-o --help" "$out"

# Settings the hook could not parse are refused before the program starts: the same grammar
# (gpuhook/settings.h), a bare number is not a duration, exit 2, the command never ran.
for bad in "--range time:5" "--range nvtx:step@3-1" "--range time:2s-1s" "--api launch,bogus"; do
  # shellcheck disable=SC2086
  err=$("$cli" record $bad -- touch "$work/ran" 2>&1 >/dev/null)
  check "record $bad exits 2" 2 $?
  check "record $bad does not start the program" "no" "$([[ -e $work/ran ]] && echo yes || echo no)"
  [[ $err == *"the program was not started"* ]] || { echo "FAIL record $bad: message [$err]"; fails=$((fails + 1)); }
done
out=$("$cli" record --range 'time:2s+500ms' -- sh -c 'echo "$GPUHOOK_RANGE"' 2>/dev/null)
check "a valid time range passes" "time:2s+500ms" "$out"

# The capture is found by the pattern, whatever pid wrote it.
err=$("$cli" record -o "$work/cap-%p.gpuh" -- sh -c ': > "$0/cap-4242.gpuh"' "$work" 2>&1 >/dev/null)
check "prints where the capture went" "gantt-cli: record: capture $work/cap-4242.gpuh" "$err"

# A SIGTERM sent to record reaches the command, and its death is reported as 143.
"$cli" record -- sleep 30 2>/dev/null &
pid=$!
sleep 0.5
kill -TERM "$pid"
wait "$pid"; check "SIGTERM is forwarded" 143 $?

# Issue 22 item 14: a command that dies before the hook flushes did not "not use CUDA".
err=$("$cli" record -o "$work/none-%p.gpuh" -- sh -c 'kill -ABRT $$' 2>&1 >/dev/null)
[[ "$err" == *"no capture written"*"killed by signal 6 (SIGABRT)"* && "$err" != *"may not have used"* ]] ||
  { echo "FAIL abort is reported as such: $err"; fails=$((fails + 1)); }
err=$("$cli" record -o "$work/none-%p.gpuh" -- sh -c 'exit 5' 2>&1 >/dev/null)
[[ "$err" == *"no capture written"*"exited with status 5"*"_exit"* ]] ||
  { echo "FAIL an exit without a capture names both causes: $err"; fails=$((fails + 1)); }

"$cli" record -- ./does-not-exist 2>/dev/null; check "missing command gives 127" 127 $?
"$cli" record 2>/dev/null; check "no command is a usage error" 2 $?
"$cli" record --bogus -- true 2>/dev/null; check "unknown flag is a usage error" 2 $?
"$cli" record --on-full maybe -- true 2>/dev/null; check "bad --on-full is a usage error" 2 $?
err=$(GPUHOOK_LIB=/no/such/libgpuhook.so "$cli" record -- true 2>&1); rc=$?
check "missing library is an error" 2 $rc
[[ "$err" == *"libgpuhook.so not found"*"GPUHOOK_LIB"* ]] || { echo "FAIL missing-library message: $err"; fails=$((fails + 1)); }
"$cli" record --help | grep -q 'Example:' ; check "--help has an example" 0 $?

exit $((fails > 0))
