#!/usr/bin/env bash
# One end-to-end case of libgpuhook.so: the app runs twice, without and with the hook; its
# stdout and exit code must be the same, stderr must hold the expected number of "gpuhook:"
# lines, and the capture must pass capture_check.
#   run_case.sh CASE HOOK_SO HOOK_APP CAPTURE_CHECK FAKE_NCCL_DIR [SIM_LIB_DIR] [EXAMPLE] [GANTT_CLI]
set -u
case_name=$1 hook=$2 app=$3 check=$4 fake_nccl=$5 sim_lib=${6:-} example=${7:-} gantt_cli=${8:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/gpuhook-e2e-$case_name.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
cd "$work" || exit 1
failed=0
# Under a TSan build: NVTX's pointer-slot initialisation is a known benign race (tsan.supp).
export TSAN_OPTIONS="suppressions=$(cd "$(dirname "$0")" && pwd)/tsan.supp ${TSAN_OPTIONS:-}"
tsan_build=0
ldd "$app" 2>/dev/null | grep -q libtsan && tsan_build=1
# Under an ASan build the ASan runtime must be the first library: it goes ahead of the hook.
preload=$hook
asan_lib=$(ldd "$app" 2>/dev/null | awk '/libasan/ {print $3}')
[ -z "$asan_lib" ] || preload="$asan_lib:$hook"
fail() { echo "FAIL[$case_name]: $*"; failed=1; }

# run NAME ENV... -- CMD...: stdout, stderr, exit code into NAME.{out,err,rc}
run() {
  local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" "$@" >"$name.out" 2>"$name.err"
  echo $? >"$name.rc"
}
# Same program, with and without the hook.
pair() {
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  run plain LD_LIBRARY_PATH="$fake_nccl" -- "$@"
  run hooked LD_LIBRARY_PATH="$fake_nccl" LD_PRELOAD="$preload" GPUHOOK_OUTPUT="$work/cap-%p.gpuh" "${envs[@]}" -- "$@"
  cmp -s plain.out hooked.out || fail "stdout differs: $(diff plain.out hooked.out | head -5)"
  [ "$(cat plain.rc)" = "$(cat hooked.rc)" ] || fail "exit code $(cat hooked.rc) with the hook, $(cat plain.rc) without"
}
# The same program on the simulator, without and with the hook (preloaded): it succeeds alone,
# and the hook changes neither its exit code nor its stdout.
sim_pair() {
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  run plain LD_LIBRARY_PATH="$sim_lib" -- "$@"
  run hooked LD_LIBRARY_PATH="$sim_lib" LD_PRELOAD="$preload" GPUHOOK_OUTPUT="$work/cap-%p.gpuh" "${envs[@]}" -- "$@"
  [ "$(cat plain.rc)" = 0 ] || fail "the program failed without the hook: $(head -3 plain.err)"
  [ "$(cat plain.rc)" = "$(cat hooked.rc)" ] || fail "exit code $(cat hooked.rc) with the hook, $(cat plain.rc) without"
  cmp -s plain.out hooked.out || fail "stdout differs: $(diff plain.out hooked.out | head -5)"
}
gpuhook_lines() {
  local want=$1 pattern=${2:-}
  local got
  got=$(grep -c '^gpuhook:' hooked.err)
  [ "$got" = "$want" ] || fail "$got gpuhook: lines on stderr, want $want: $(grep '^gpuhook:' hooked.err)"
  if [ -n "$pattern" ] && ! grep '^gpuhook:' hooked.err | grep -q -- "$pattern"; then
    fail "no gpuhook: line says '$pattern': $(cat hooked.err)"
  fi
}
capture() { ls "$work"/cap-*.gpuh 2>/dev/null | head -1; }
check() {
  local file=$1; shift
  [ -n "$file" ] && [ -f "$file" ] || { fail "no capture written"; return; }
  "$check" "$file" "$@" >check.out || fail "capture_check $*: $(grep FAIL check.out | head -5)"
}
value() { awk -v k="$1" '$1 == k {print $2}' check.out; }

ranges_per_iteration=11  # see nvtx_iterations() in hook_app.cpp

case $case_name in
  nvtx)
    pair -- "$app" nvtx 10
    gpuhook_lines 1 "110 range"
    check "$(capture)" --expect range=$((10 * ranges_per_iteration)) --nesting --expect footer=1 --expect thread=1
    [ "$(value clean)" = 1 ] || fail "a normal exit's footer is not clean"
    ;;
  nccl)
    pair -- "$app" nccl 10
    gpuhook_lines 1
    grep -q "nccl count0 rc=4 errno=33" hooked.out || fail "the real return value or errno did not come back"
    check "$(capture)" --expect nccl=$((10 * 5 + 7)) --nccl
    ;;
  threads)
    pair -- "$app" threads 50
    gpuhook_lines 1
    check "$(capture)" --expect range=$((16 * 50 * ranges_per_iteration)) --expect nccl=$((16 * (6 * 5 + 7))) \
      --nesting --nccl
    ;;
  cupti_not_found)
    pair GPUHOOK_QUIET=1 GPUHOOK_CUPTI=/nonexistent/libcupti.so.13 -- "$app" inject 3
    gpuhook_lines 1 "CUPTI not found"
    check "$(capture)" --expect range=$((3 * ranges_per_iteration)) --header note_has="CUPTI not found"
    ;;
  cupti_refused)
    # The toolkit's real libcupti: without a driver it answers CUPTI_ERROR_UNKNOWN.
    pair GPUHOOK_QUIET=1 GPUHOOK_CUPTI=/usr/local/cuda/lib64/libcupti.so.13 -- "$app" inject 3
    gpuhook_lines 1 "CUPTI refused"
    check "$(capture)" --expect range=$((3 * ranges_per_iteration)) --header note_has="CUPTI_ERROR_UNKNOWN"
    ;;
  cupti_busy)
    [ -f "$sim_lib/libcupti.so.13" ] || { echo "SKIP: no simulated libcupti"; exit 0; }
    pair GPUHOOK_QUIET=1 GPUHOOK_CUPTI="$sim_lib/libcupti.so.13" GPUHOOK_SIM_CUPTI_BUSY=1 -- "$app" inject 3
    gpuhook_lines 1 "CUPTI is in use by Nsight Systems"
    ;;
  output_missing)
    pair GPUHOOK_QUIET=1 GPUHOOK_OUTPUT="$work/no/such/dir/x.gpuh" -- "$app" nvtx 3
    gpuhook_lines 1 "cannot create"
    ;;
  output_readonly)
    if [ "$(id -u)" = 0 ]; then
      target=/proc/gpuhook-readonly.gpuh  # root ignores mode bits; /proc refuses everyone
    else
      mkdir ro && chmod 555 ro && target="$work/ro/x.gpuh"
    fi
    pair GPUHOOK_QUIET=1 GPUHOOK_OUTPUT="$target" -- "$app" nvtx 3
    gpuhook_lines 1 "cannot create"
    ;;
  file_exists)
    echo precious >existing.gpuh
    pair GPUHOOK_QUIET=1 GPUHOOK_OUTPUT="$work/existing.gpuh" -- "$app" nvtx 3
    gpuhook_lines 1 "cannot create"
    [ "$(cat existing.gpuh)" = precious ] || fail "an existing file was overwritten"
    ;;
  symlink)
    ln -s "$work/victim" link.gpuh
    pair GPUHOOK_QUIET=1 GPUHOOK_OUTPUT="$work/link.gpuh" -- "$app" nvtx 3
    gpuhook_lines 1 "cannot create"
    [ ! -e victim ] || fail "the hook followed a symlink"
    ;;
  disk_full)
    # RLIMIT_FSIZE of 256 KiB: the hook's writes fail with EFBIG; SIGXFSZ must not kill the app.
    # LD_PRELOAD is set after the shell, which must not load the hook (under TSan it cannot).
    limited='ulimit -f 256; [ -n "$PRELOAD" ] && export LD_PRELOAD=$PRELOAD; exec "$0" big 1000000'
    run plain LD_LIBRARY_PATH="$fake_nccl" PRELOAD= -- bash -c "$limited" "$app"
    run hooked LD_LIBRARY_PATH="$fake_nccl" PRELOAD="$preload" GPUHOOK_QUIET=1 GPUHOOK_OUTPUT="$work/cap-%p.gpuh" \
      GPUHOOK_ON_FULL=block -- bash -c "$limited" "$app"
    cmp -s plain.out hooked.out || fail "stdout differs"
    [ "$(cat plain.rc)" = "$(cat hooked.rc)" ] || fail "exit code $(cat hooked.rc) with the hook, $(cat plain.rc) without"
    gpuhook_lines 1 "write"
    check "$(capture)" --allow-truncated --expect header=1
    ;;
  ring_drop)
    pair GPUHOOK_RING_RECORDS=64 -- "$app" big 100000
    gpuhook_lines 1 "dropped"
    check "$(capture)" --expect footer=1
    drops=$(value dropped_ring) ranges=$(value range)
    [ "$drops" -gt 0 ] || fail "no ring drops counted"
    [ $((drops + ranges)) -eq 200000 ] || fail "$ranges written + $drops dropped != 200000 recorded"
    ;;
  ring_block)
    pair GPUHOOK_RING_RECORDS=64 GPUHOOK_ON_FULL=block -- "$app" big 20000
    gpuhook_lines 1
    check "$(capture)" --expect range=40000 --nesting
    [ "$(value dropped_ring)" = 0 ] || fail "block mode dropped records"
    ;;
  fork)
    # TSan cannot start threads in the child of a multi-threaded fork (a TSan limit), and
    # LeakSanitizer's exit check hangs such children now and then, hook or not (measured).
    [ "$tsan_build" = 0 ] || { echo "SKIP: fork under TSan"; exit 0; }
    export ASAN_OPTIONS="detect_leaks=0 ${ASAN_OPTIONS:-}"
    pair -- "$app" fork 20
    files=$(ls "$work"/cap-*.gpuh | wc -l)
    [ "$files" = 2 ] || fail "$files captures, want one per process"
    gpuhook_lines 2
    child="$work/cap-$(sed -n 's/^child pid //p' hooked.err).gpuh"
    for f in "$work"/cap-*.gpuh; do check "$f" --nesting --expect footer=1; done
    # The child's file holds the child's records only: the parent's unread ones stay out.
    check "$child" --expect range=$((20 * ranges_per_iteration))
    ;;
  sigkill)
    pair -- "$app" sigkill 50
    gpuhook_lines 0
    check "$(capture)" --allow-truncated --expect range=$((50 * ranges_per_iteration)) --expect footer=0
    ;;
  sigexit)
    # exit() inside a handler is the app's own signal-unsafe act; glibc then frees its exit
    # handler list, which TSan reports against whoever registered handlers.
    export TSAN_OPTIONS="$TSAN_OPTIONS report_signal_unsafe=0"
    pair -- "$app" sigexit 10
    gpuhook_lines 1
    check "$(capture)" --expect range=$((10 * ranges_per_iteration)) --expect footer=1 --nesting
    ;;
  sigterm)
    pair -- "$app" sigterm 10
    [ "$(cat hooked.rc)" = 143 ] || fail "not killed by SIGTERM: $(cat hooked.rc)"
    gpuhook_lines 1
    check "$(capture)" --expect range=$((10 * ranges_per_iteration)) --expect footer=1
    [ "$(value clean)" = 0 ] || fail "the footer of a capture ended by SIGTERM says clean"
    ;;
  sigabrt | terminate)
    # abort() (an NCCL watchdog) and std::terminate (an uncaught exception) flush as SIGTERM does.
    pair -- "$app" "$case_name" 10
    [ "$(cat hooked.rc)" = 134 ] || fail "not killed by SIGABRT: $(cat hooked.rc)"
    gpuhook_lines 1
    check "$(capture)" --expect range=$((10 * ranges_per_iteration)) --expect footer=1 --nesting
    [ "$(value clean)" = 0 ] || fail "the footer of a capture ended by $case_name says clean"
    ;;
  sigabrt_handled)
    # The app's SIGABRT handler was there first (the hook came in through NVTX_INJECTION64_PATH,
    # as through CUDA's after a runtime installed its own): the hook's handler writes the records
    # out and chains to it; it returns, and abort() kills with no exit handlers.
    run plain LD_LIBRARY_PATH="$fake_nccl" -- "$app" sigabrt_handled 10
    run hooked LD_LIBRARY_PATH="$fake_nccl" NVTX_INJECTION64_PATH="$hook" GPUHOOK_OUTPUT="$work/cap-%p.gpuh" \
      -- "$app" sigabrt_handled 10
    cmp -s plain.out hooked.out || fail "stdout differs: $(diff plain.out hooked.out | head -5)"
    [ "$(cat hooked.rc)" = 134 ] || fail "not killed by SIGABRT: $(cat hooked.rc)"
    grep -q "app saw SIGABRT" hooked.err || fail "the app's handler did not run"
    gpuhook_lines 0
    # The two gpuhook.h ranges of each iteration find no hook that is not in the global scope.
    check "$(capture)" --expect range=$((10 * (ranges_per_iteration - 2))) --nesting
    ;;
  segv | fpe | segv_flight)
    # A fault early in the run (the kernels' records still in CUPTI's buffers, the ranges in the
    # rings, well within the first flush period): the hook writes them out, then the process dies
    # of the fault as it would have (the same status; a core dump where one is made).
    [ -f "$sim_lib/libcudart.so.13" ] || { echo "SKIP: no simulated libcudart"; exit 0; }
    mode=${case_name%_flight} envs=()
    [ "$case_name" = segv_flight ] && envs=(GPUHOOK_FLIGHT=10s)
    run plain LD_LIBRARY_PATH="$sim_lib:$fake_nccl" -- "$app" "$mode" 5
    run hooked LD_LIBRARY_PATH="$sim_lib:$fake_nccl" LD_PRELOAD="$preload" GPUHOOK_OUTPUT="$work/cap-%p.gpuh" \
      "${envs[@]}" -- "$app" "$mode" 5
    cmp -s plain.out hooked.out || fail "stdout differs: $(diff plain.out hooked.out | head -5)"
    [ "$(cat plain.rc)" = "$(cat hooked.rc)" ] || fail "exit code $(cat hooked.rc) with the hook, $(cat plain.rc) without"
    want=139; [ "$mode" = fpe ] && want=136
    # Under ASan its own handler (installed first) reports the fault and exits 1, hook or not.
    [ -n "$asan_lib" ] || [ "$(cat hooked.rc)" = $want ] || fail "not killed by the fault: $(cat hooked.rc), want $want"
    grep -q '^5 kernels launched' plain.out || fail "the program did not launch 5 kernels: $(head -3 plain.out)"
    gpuhook_lines 1
    if [ "$case_name" = segv_flight ]; then
      dump=$(ls "$work"/cap-*.flight1.gpuh 2>/dev/null | head -1)
      [ -n "$dump" ] || fail "no flight dump on SIGSEGV: $(ls "$work")"
      [ -z "$(ls "$work"/cap-*.gpuh 2>/dev/null | grep -v flight)" ] || fail "the flight recorder wrote the normal capture too"
      check "$dump" --expect kernel=5 --expect range=$((5 * ranges_per_iteration))
      info=$("$gantt_cli" info "$dump" 2>&1) || fail "gantt-cli info cannot read the dump: $(echo "$info" | head -3)"
      echo "$info" | grep -q 'trigger "crash": "SIGSEGV' || fail "info does not say the crash: $(echo "$info" | grep -i flight)"
    else
      check "$(capture)" --expect kernel=5 --expect range=$((5 * ranges_per_iteration)) --nesting --expect footer=1
      [ "$(value clean)" = 0 ] || fail "the footer of a capture ended by a fault says clean"
      info=$("$gantt_cli" info "$(capture)" 2>&1) || fail "gantt-cli info cannot read it: $(echo "$info" | head -3)"
      echo "$info" | grep -q 'kernel 5\b' || fail "gantt-cli info does not count 5 kernels: $(echo "$info" | grep records)"
    fi
    ;;
  segv_handled)
    # The app's SIGSEGV handler was there first (the hook came in through NVTX_INJECTION64_PATH):
    # the hook writes the records out and chains to it; it puts the default back and returns,
    # and the fault kills.
    run plain LD_LIBRARY_PATH="$fake_nccl" -- "$app" segv_handled 10
    run hooked LD_LIBRARY_PATH="$fake_nccl" NVTX_INJECTION64_PATH="$hook" GPUHOOK_OUTPUT="$work/cap-%p.gpuh" \
      -- "$app" segv_handled 10
    cmp -s plain.out hooked.out || fail "stdout differs: $(diff plain.out hooked.out | head -5)"
    [ "$(cat plain.rc)" = "$(cat hooked.rc)" ] || fail "exit code $(cat hooked.rc) with the hook, $(cat plain.rc) without"
    [ -n "$asan_lib" ] || [ "$(cat hooked.rc)" = 139 ] || fail "not killed by SIGSEGV: $(cat hooked.rc)"
    grep -q "app saw SIGSEGV" hooked.err || fail "the app's handler did not run"
    gpuhook_lines 0
    check "$(capture)" --allow-truncated --expect range=$((10 * (ranges_per_iteration - 2))) --nesting
    ;;
  segv_recovered)
    # The app's handler, installed after the hook's, recovers from three faults: the hook is
    # not in the way, and the run ends normally.
    pair -- "$app" segv_recovered 2
    grep -q "recovered from 3 faults" hooked.out || fail "the app did not recover: $(cat hooked.out)"
    gpuhook_lines 1
    check "$(capture)" --expect range=$((3 * 2 * ranges_per_iteration)) --nesting --expect footer=1
    [ "$(value clean)" = 1 ] || fail "a normal exit's footer is not clean"
    ;;
  closefds)
    # The app closes every descriptor above 2 and opens a file of its own: the hook must not
    # write into it, must say once that its capture is gone, and must not close the app's file.
    pair GPUHOOK_QUIET=1 -- "$app" closefds 5
    grep -q "own file intact: 1" hooked.out || fail "the app's own file was written to: $(cat hooked.out)"
    gpuhook_lines 1 "descriptor"
    check "$(capture)" --allow-truncated --expect header=1
    ;;
  exec_flush)
    # exec within the flush period: the first image's records are in its own file.
    pair -- "$app" exec_flush 50
    [ "$(cat hooked.rc)" = 7 ] || fail "the exec'd program's exit code is $(cat hooked.rc)"
    first=$(ls "$work"/cap-*.gpuh 2>/dev/null | grep -v '\.1\.gpuh$' | head -1)
    second=$(ls "$work"/cap-*.1.gpuh 2>/dev/null | head -1)
    check "$first" --expect range=$((50 * ranges_per_iteration)) --nesting
    check "$second" --expect range=$((50 * ranges_per_iteration)) --nesting --expect footer=1
    ;;
  exec_chain)
    # A fixed name (no %p) and a program that execs itself 3 times: each image its own file,
    # the first under the name, the later ones NAME.N.gpuh in the order they ran.
    pair GPUHOOK_OUTPUT="$work/chain.gpuh" -- "$app" exec_chain 3
    grep -q '^image 0$' hooked.out || fail "the chain did not reach its last image: $(cat hooked.out)"
    gpuhook_lines 1
    grep -q "File exists\|cannot create" hooked.err && fail "an image was refused its file: $(grep '^gpuhook:' hooked.err)"
    files=$(ls "$work"/chain*.gpuh 2>/dev/null | wc -l)
    [ "$files" = 4 ] || fail "$files captures, want one per image (4): $(ls "$work")"
    for f in chain.gpuh chain.1.gpuh chain.2.gpuh; do
      check "$work/$f" --allow-truncated --expect range=$ranges_per_iteration --nesting
    done
    check "$work/chain.3.gpuh" --expect range=$ranges_per_iteration --nesting --expect footer=1
    [ -z "$gantt_cli" ] || for f in "$work"/chain*.gpuh; do
      "$gantt_cli" info "$f" >info.out 2>&1 || fail "gantt-cli info $f: $(head -3 info.out)"
    done
    ;;
  exec_chain_record)
    # The same under gantt-cli record -o NAME: it names every image's file.
    [ -x "$gantt_cli" ] || { echo "SKIP: no gantt-cli"; exit 0; }
    run plain LD_LIBRARY_PATH="$fake_nccl" -- "$app" exec_chain 3
    run hooked LD_LIBRARY_PATH="$fake_nccl" GPUHOOK_LIB="$hook" -- "$gantt_cli" record -o "$work/rec.gpuh" -- \
      "$app" exec_chain 3
    cmp -s plain.out hooked.out || fail "stdout differs: $(diff plain.out hooked.out | head -5)"
    [ "$(cat plain.rc)" = "$(cat hooked.rc)" ] || fail "exit code $(cat hooked.rc) with the hook, $(cat plain.rc) without"
    for f in rec.gpuh rec.1.gpuh rec.2.gpuh rec.3.gpuh; do
      [ -f "$work/$f" ] || fail "no $f: $(ls "$work")"
      grep -qx "gantt-cli: record: capture $work/$f" hooked.err || fail "record does not name $f: $(grep 'gantt-cli' hooked.err)"
    done
    [ "$(grep -c '^gantt-cli: record: capture ' hooked.err)" = 4 ] || fail "record names $(grep -c '^gantt-cli: record: capture ' hooked.err) captures, want 4"
    ;;
  long_setting)
    # Settings echoed back: a 5,000-byte value, a value that is not UTF-8 (and holds a newline),
    # a path made of a long one, a long name in the flight recorder's settings. Each is shown
    # once, cut at 200 characters with its length, escaped: every line one line of UTF-8.
    long=$(head -c 5000 /dev/zero | tr '\0' a)
    short_lines() {  # no line over 400 bytes, all of it UTF-8
      local over
      over=$(LC_ALL=C awk 'length($0) > 400 {print NR ": " length($0) " bytes"}' hooked.err)
      [ -z "$over" ] || fail "lines over 400 bytes: $over"
      iconv -f UTF-8 -t UTF-8 hooked.err >/dev/null 2>&1 || fail "stderr is not UTF-8: $(od -c hooked.err | head -3)"
    }
    pair GPUHOOK_FLUSH_MS="$long" GPUHOOK_ON_FULL=$'bl\xffock\n' -- "$app" nvtx 2
    gpuhook_lines 3
    short_lines
    grep -q "^gpuhook: GPUHOOK_FLUSH_MS='a\{200\}…' (5000 bytes) ignored" hooked.err ||
      fail "the long value is not cut at 200 characters: $(grep FLUSH_MS hooked.err | cut -c1-300)"
    grep -qF "gpuhook: GPUHOOK_ON_FULL='bl\\xffock\\x0a' ignored" hooked.err ||
      fail "the value that is not UTF-8 is not escaped: $(grep -a ON_FULL hooked.err | od -c | head -3)"
    # A name too long to create: the path once, cut.
    pair GPUHOOK_OUTPUT="$work/$long.gpuh" -- "$app" nvtx 2
    gpuhook_lines 1 "cannot create"
    short_lines
    [ "$(grep -o 'cannot create' hooked.err | wc -l)" = 1 ] || fail "the path is said twice: $(cut -c1-300 hooked.err)"
    grep -q "… ([0-9]* bytes): File name too long; nothing recorded" hooked.err ||
      fail "the long path is not cut with its length: $(cut -c1-300 hooked.err)"
    # The flight recorder's exit line echoes its settings.
    pair GPUHOOK_FLIGHT=10s GPUHOOK_SLOW="$long:2" -- "$app" nvtx 2
    gpuhook_lines 1 "flight recorder (GPUHOOK_FLIGHT=10s GPUHOOK_SLOW=a*… (5002 bytes)): no trigger fired"
    short_lines
    ;;
  exec_fail)
    pair -- "$app" exec_fail 5
    grep -q "exec failed: rc=-1 errno=2" hooked.out || fail "exec's failure changed: $(cat hooked.out)"
    gpuhook_lines 1
    check "$(capture)" --expect range=$((10 * ranges_per_iteration)) --nesting --expect footer=1
    ;;
  renamed)
    # A copy without "gpuhook" in its path records as the original does ($work's name has it).
    libdir=$(mktemp -d /tmp/hookcopy.XXXXXX)
    cp "$hook" "$libdir/libfoo.so"
    preload="${asan_lib:+$asan_lib:}$libdir/libfoo.so"
    pair -- "$app" nvtx 3
    rm -rf "$libdir"
    gpuhook_lines 1 "33 range"
    check "$(capture)" --expect range=$((3 * ranges_per_iteration)) --nesting --expect footer=1
    ;;
  sigterm_slow_writer)
    # SIGTERM while the writer is far behind (zstd 19, a deep ring the app fills faster than the
    # writer drains it): the exit is bounded by GPUHOOK_EXIT_MS; what is not written by then is
    # counted and said. Measured on 2 loaded cores: 15.5 s after SIGTERM before the bound, 0.8 s after.
    bound_ms=1000
    pair GPUHOOK_ZSTD_LEVEL=19 GPUHOOK_RING_RECORDS=524288 GPUHOOK_EXIT_MS=$bound_ms -- "$app" sigterm_big 400000
    ended=$(date +%s%N)
    raised=$(sed -n 's/^raise at //p' hooked.err)
    [ "$(cat hooked.rc)" = 143 ] || fail "not killed by SIGTERM: $(cat hooked.rc)"
    gpuhook_lines 1
    if [ -n "$raised" ]; then
      delay_ms=$(((ended - raised) / 1000000))
      echo "exit delay after SIGTERM: $delay_ms ms (bound $bound_ms ms + 2000 ms slack)"
      [ "$delay_ms" -le $((bound_ms + 2000)) ] || fail "the exit took $delay_ms ms after SIGTERM"
    else
      fail "the app did not say when it raised SIGTERM"
    fi
    check "$(capture)" --allow-truncated --expect header=1
    ;;
  cuda_fork)
    # CUDA memsets in flight on one thread while the main thread forks (simulated runtime).
    [ -f "$sim_lib/libcudart.so.13" ] || { echo "SKIP: no simulated libcudart"; exit 0; }
    [ "$tsan_build" = 0 ] || { echo "SKIP: fork under TSan"; exit 0; }
    export ASAN_OPTIONS="detect_leaks=0 ${ASAN_OPTIONS:-}"  # as in the fork case
    run plain LD_LIBRARY_PATH="$sim_lib:$fake_nccl" -- "$app" cuda_fork 200
    run hooked LD_LIBRARY_PATH="$sim_lib:$fake_nccl" LD_PRELOAD="$preload" GPUHOOK_OUTPUT="$work/cap-%p.gpuh" \
      -- "$app" cuda_fork 200
    cmp -s plain.out hooked.out || fail "stdout differs: $(diff plain.out hooked.out | head -5)"
    [ "$(cat plain.rc)" = "$(cat hooked.rc)" ] || fail "exit code $(cat hooked.rc) with the hook, $(cat plain.rc) without"
    gpuhook_lines 2
    [ "$(ls "$work"/cap-*.gpuh | wc -l)" = 2 ] || fail "want one capture per process"
    for f in "$work"/cap-*.gpuh; do
      "$check" "$f" >probe.out
      if grep -q '^memset 0$' probe.out; then
        check "$f" --expect range=$((2 * ranges_per_iteration)) --nesting --expect footer=1  # the child
      else
        check "$f" --expect memset=200 --copies --expect footer=1  # the parent
      fi
    done
    ;;
  exec)
    pair -- "$app" exec 2
    [ "$(cat hooked.rc)" = 7 ] || fail "the exec'd program's exit code is $(cat hooked.rc)"
    files=$(ls "$work"/cap-*.gpuh* | wc -l)
    [ "$files" = 2 ] || fail "$files captures, want one per program image"
    for f in "$work"/cap-*.gpuh*; do check "$f" --allow-truncated --expect range=$((2 * ranges_per_iteration)) --nesting; done
    ;;
  range_nvtx)
    # Occurrences 3 and 4 of "outer": two whole iterations and nothing else.
    pair GPUHOOK_RANGE=nvtx:outer@3-4 -- "$app" nvtx 10
    check "$(capture)" --expect range=$((2 * ranges_per_iteration)) --nesting
    ;;
  range_sampled)
    # Every 3rd occurrence of "outer" from the 2nd (2, 5, 8) among 2-9: three whole
    # iterations, each its own window; the file says how many were seen and recorded.
    pair GPUHOOK_RANGE=nvtx:outer%3@2-9 -- "$app" nvtx 10
    check "$(capture)" --expect range=$((3 * ranges_per_iteration)) --nesting
    [ -z "$gantt_cli" ] || "$gantt_cli" info "$(capture)" | grep -q "3 of 10 occurrences of 'outer' recorded" ||
      fail "info does not say 3 of 10 occurrences were recorded: $("$gantt_cli" info "$(capture)" | grep -i occurrence)"
    # Each with probability 0.5, drawn by GPUHOOK_SEED: the occurrences splitmix64 picks, exactly.
    want=$(python3 -c '
M = (1 << 64) - 1
def splitmix64(x):
    x = (x + 0x9e3779b97f4a7c15) & M
    x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & M
    x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & M
    return x ^ (x >> 31)
print(sum(1 for k in range(1, 41) if splitmix64(42 + k) < 0.5 * 2**64))')
    rm -f "$work"/cap-*.gpuh*
    pair GPUHOOK_RANGE=nvtx:outer~0.5 GPUHOOK_SEED=42 -- "$app" nvtx 40
    check "$(capture)" --expect range=$((want * ranges_per_iteration)) --nesting
    [ -z "$gantt_cli" ] || "$gantt_cli" info "$(capture)" | grep -q "$want of 40 occurrences of 'outer' recorded (GPUHOOK_SEED=42)" ||
      fail "info does not say $want of 40 occurrences were drawn"
    # Sixteen threads push "outer" at once: their occurrences overlap and each is recorded
    # whole (one thread's pop once closed the window another thread's push had opened).
    rm -f "$work"/cap-*.gpuh*
    pair GPUHOOK_RANGE=nvtx:outer%1 -- "$app" threads 50
    check "$(capture)" --expect range=$((16 * 50 * ranges_per_iteration)) --nesting
    ;;
  nvtx_domains)
    # nvtx3::scoped_range (the global domain through nvtxDomain*(NULL, ...)) mixed with core
    # pushes and pops, and a named domain interleaved with the core stack.
    pair -- "$app" nvtx_domains 10
    gpuhook_lines 1
    check "$(capture)" --expect range=$((10 * 12)) --nesting --domain-nesting --range-name step=10 \
      --range-color step=0xff204060 --range-category step=7 --range-color domain-outer=0xff00ff00 \
      --range-category domain-outer=3 --domain-name app-named=20
    # Levels NVTX returns: the 0-based level pushed or popped, -1 for a pop of an empty stack.
    grep -qx 'levels: 1 1 1 1 1 1 1 1 -1 -1 -1 ' hooked.err || fail "push/pop levels: $(grep '^levels' hooked.err)"
    ;;
  range_nvtx_scoped)
    # A window named after an nvtx3::scoped_range: occurrences 2 and 3 of "step".
    pair GPUHOOK_RANGE=nvtx:step@2-3 -- "$app" nvtx_domains 5
    check "$(capture)" --expect range=$((2 * 12)) --nesting --domain-nesting --range-name step=2
    ;;
  nvtx_names)
    pair -- "$app" nvtx_names
    gpuhook_lines 1
    alphabet=abcdefghijklmnopqrstuvwxyz0123456789
    pattern() { yes "$alphabet" | tr -d '\n' | head -c "$1"; }
    # Names up to 4096 bytes are kept whole; a longer one keeps 4096 bytes and ends in "…".
    check "$(capture)" --nesting --domain-nesting --expect range=9 \
      --range-name "$(pattern 300)=1" --range-name "$(pattern 4096)…=1" \
      --range-name "schritt-ü-步=1" --range-name "步-wide-in-domain-🚀=1" --range-name "$(pattern 200)=1" \
      --domain-name "domäne-域=2"
    ;;
  nvtx_domain_churn)
    # 2 x 100,000 domains created, used and destroyed: after the first round has grown the
    # bounded buffers (the writer's chunk, zstd), the second must cost next to nothing.
    # Block mode: no record is dropped, so the counts are exact.
    pair GPUHOOK_ON_FULL=block -- "$app" nvtx_domain_churn 100000
    gpuhook_lines 1
    growth=$(sed -n 's/^domain churn: .* then \(-\?[0-9]*\) KiB$/\1/p' hooked.err)
    echo "hooked: $(grep '^domain churn' hooked.err); plain: $(grep '^domain churn' plain.err)"
    [ -n "$growth" ] || fail "no RSS figure on stderr"
    # The leak this guards against grew ~22 MiB per 100,000 cycles; on a loaded machine the
    # writer's bounded buffers can still settle during the second round (seen: 1.7 MiB), so
    # the limit sits well between the two.
    [ -n "$growth" ] && [ "$growth" -le 6144 ] || fail "RSS grew by $growth KiB over the second 100,000 domain cycles (limit 6144)"
    # Cycles i % 8 == 0 of the 1,000 warm-up and 2 x 100,000 measured ones, a mark and a push each.
    check "$(capture)" --domain-nesting --expect range=$((3 * 201000)) --domain-name churn-0=$((2 * (125 + 2 * 12500)))
    ;;
  range_api)
    pair GPUHOOK_RANGE=cudaProfilerApi -- "$app" range_api 5
    check "$(capture)" --expect range=$((5 * ranges_per_iteration)) --nesting
    ;;
  range_time)
    # Starts 10 s after the app: nothing is recorded and no file is created.
    pair GPUHOOK_RANGE=time:10s -- "$app" nvtx 5
    [ -z "$(capture)" ] || fail "a capture was written outside the time window"
    gpuhook_lines 0
    ;;
  sigterm_ignored)
    # trap '' TERM: the program starts with SIGTERM ignored, as under nohup-style launchers.
    run plain LD_LIBRARY_PATH="$fake_nccl" -- bash -c "trap '' TERM; exec \"\$0\" ignored" "$app"
    run hooked LD_LIBRARY_PATH="$fake_nccl" GPUHOOK_OUTPUT="$work/cap-%p.gpuh" PRELOAD="$preload" \
      -- bash -c "trap '' TERM; export LD_PRELOAD=\$PRELOAD; exec \"\$0\" ignored" "$app"
    cmp -s plain.out hooked.out || fail "stdout differs: $(diff plain.out hooked.out | head -5)"
    [ "$(cat plain.rc)" = "$(cat hooked.rc)" ] || fail "exit code $(cat hooked.rc) with the hook, $(cat plain.rc) without"
    grep -q "SIGTERM ignored: 1" hooked.out || fail "the hook changed an ignored SIGTERM"
    ;;
  test_identity)
    pair GPUHOOK_TEST_HOST=hostB GPUHOOK_TEST_BOOT_ID=boot-b GPUHOOK_TEST_CLOCK_OFFSET_NS=5000000000000 RANK=3 -- \
      "$app" nvtx 2
    check "$(capture)" --header host=hostB --header boot_id=boot-b --header rank=3
    ;;
  bad_config)
    pair GPUHOOK_QUIET=1 GPUHOOK_FLUSH_MS=5000 -- "$app" nvtx 2
    gpuhook_lines 1 "GPUHOOK_FLUSH_MS"
    check "$(capture)" --expect range=$((2 * ranges_per_iteration))
    ;;
  nccl_ranks)
    # allreduce_train starts 4 ranks itself (fork + exec); each writes its own capture, and
    # the same collective carries the same communicator id and sequence on every rank.
    [ -x "$example" ] && [ -f "$sim_lib/libnccl.so.2" ] || { echo "SKIP: no allreduce_train or simulated NCCL"; exit 0; }
    run plain LD_LIBRARY_PATH="$sim_lib" -- "$example" --ranks 4 --steps 5
    run hooked LD_LIBRARY_PATH="$sim_lib" LD_PRELOAD="$preload" GPUHOOK_OUTPUT="$work/cap-r%r-%p.gpuh" \
      -- "$example" --ranks 4 --steps 5
    [ "$(cat plain.rc)" = "$(cat hooked.rc)" ] || fail "exit code $(cat hooked.rc) with the hook, $(cat plain.rc) without"
    cmp -s <(sort plain.out) <(sort hooked.out) || fail "stdout differs"
    for r in 0 1 2 3; do
      f=$(ls "$work"/cap-r$r-*.gpuh 2>/dev/null | head -1)
      check "$f" --kernels --nccl-device --nesting --header rank=$r --min nccl=5
      grep '^nccl_comms' check.out >>comms.txt
    done
    [ "$(sort -u comms.txt | wc -l)" = 1 ] || fail "ranks disagree on communicator ids: $(sort -u comms.txt)"
    [ -n "$(awk '{print $2}' comms.txt | head -1)" ] || fail "no communicator id recorded"
    ;;
  hidden_runtime)
    # $example is the program, $gantt_cli the runtime it loads out of the hook's sight.
    sim_pair -- "$example" "$gantt_cli"
    gpuhook_lines 1
    check "$(capture)" --expect device=1 --min memset=4
    ;;
  thread_storm)
    # 64 threads x 40 launches at once; every kernel recorded, or the loss said exactly.
    [ -x "$example" ] || { echo "SKIP: no example"; exit 0; }
    args=(--size 64 --iterations 40)
    sim_pair -- "$example" "${args[@]}"
    gpuhook_lines 1 "dropped 0"
    check "$(capture)" --expect kernel=$((64 * 40)) --kernels --threads
    [ "$(value dropped_cupti)" = 0 ] || fail "CUPTI dropped $(value dropped_cupti) records"
    ;;
  example_priority)
    [ -x "$example" ] || { echo "SKIP: no example"; exit 0; }
    run hooked LD_LIBRARY_PATH="$sim_lib" LD_PRELOAD="$preload" GPUHOOK_OUTPUT="$work/cap-%p.gpuh" \
      -- "$example" --fixed --iterations 2 --size 4096
    [ "$(cat hooked.rc)" = 0 ] || fail "priorities --fixed failed: $(head -3 hooked.err)"
    "$gantt_cli" export "$(capture)" --format csv -o events.csv >export.out 2>&1 || fail "export: $(head -3 export.out)"
    # Column 4 is the stream priority; the critical stream's kernels carry the greatest (-5).
    awk -F, 'NR > 1 && $4 < 0 {found = 1} END {exit !found}' events.csv ||
      fail "no event carries a stream priority: $(cut -d, -f2-5 events.csv | sort | uniq -c | head -5)"
    ;;
  second_client)
    sim_pair -- "$example"
    # The exit line says the GPU records stop where the other client took over.
    gpuhook_lines 1 "another CUPTI client"
    check "$(capture)" --min memset=3 --min notice=1
    # And the CLI says it wherever the capture is read.
    if [ -x "$gantt_cli" ]; then
      "$gantt_cli" info "$(capture)" >info.out 2>&1
      grep -q '^  notice: .*another CUPTI client' info.out || fail "gantt-cli info does not show the notice: $(tail -3 info.out)"
      "$gantt_cli" stats "$(capture)" >stats.out 2>&1
      grep -q 'while recording: another CUPTI client' stats.out || fail "gantt-cli stats does not warn: $(head -3 stats.out)"
    fi
    ;;
  host_work)
    # Host functions, stream callbacks, registered and stream-ordered memory.
    [ -x "$example" ] || { echo "SKIP: no example"; exit 0; }
    sim_pair -- "$example"
    gpuhook_lines 1 "dropped 0"
    check "$(capture)" --expect kernel=4 --expect memcpy=8 --expect host_function=8 --kernels --copies --threads --host-functions
    # 4 cudaMallocFromPoolAsync + 4 cudaFreeAsync, each with its pool.
    [ "$(value memory_async)" = 8 ] || fail "$(value memory_async) stream-ordered memory records name their pool, want 8"
    ;;
  graph_host_fn)
    # A host function captured into a graph runs at each of the graph's 5 launches (3, one of a
    # clone, one destroyed in flight) with the same argument: the hook's trampoline must
    # survive every run (it once freed its context after the first: a double free, exit 134)
    # and record each. The never-launched graph's context is freed with it (ASan's leak check
    # in scripts/test.sh --sanitize).
    [ -x "$example" ] || { echo "SKIP: no example"; exit 0; }
    sim_pair -- "$example"
    grep -q '^graph_host_fn: the host node ran 5 times$' hooked.out || fail "the host node did not run 5 times: $(head -3 hooked.out)"
    gpuhook_lines 1 "dropped 0"
    check "$(capture)" --expect kernel=10 --expect host_function=5 --graph --threads --host-functions
    [ "$(value host_functions_joined)" = 5 ] || fail "$(value host_functions_joined) host function runs tied to their call, want 5"
    ;;
  device_query)
    # Only device queries, no launch (a pre-flight check, a framework's probe): the capture
    # still holds a device record per GPU, and the program's output is unchanged.
    [ -x "$example" ] || { echo "SKIP: no example"; exit 0; }
    export GPUHOOK_SIM_DEVICES=2
    sim_pair -- "$example"
    grep -q '^device 1: ' plain.out || fail "the program did not see two devices: $(head -3 plain.out)"
    gpuhook_lines 1 "dropped 0"
    check "$(capture)" --expect device=2 --expect kernel=0
    ;;
  two_devices)
    # Two devices, one host thread each (3 iterations: a kernel and 4 copies each), then two
    # peer copies device 0 -> device 1, a cooperative kernel and a copy out on device 1.
    [ -x "$example" ] || { echo "SKIP: no example"; exit 0; }
    export GPUHOOK_SIM_DEVICES=2
    sim_pair GPUHOOK_API=all -- "$example"
    grep -q '^OK$' plain.out || fail "the program did not run on two devices: $(head -3 plain.out)"
    gpuhook_lines 1 "dropped 0"
    check "$(capture)" --expect kernel=7 --expect memcpy=21 --expect device=2 --kernels --copies --threads --devices 2
    [ "$(value kernels_device_0)" = 3 ] || fail "$(value kernels_device_0) kernels on device 0, want 3"
    [ "$(value kernels_device_1)" = 4 ] || fail "$(value kernels_device_1) kernels on device 1, want 4"
    [ "$(value peer_copies)" = 2 ] || fail "$(value peer_copies) peer copies, want 2"
    ;;
  example_multi_gpu)
    # multi_gpu on two devices, 2 iterations: per device 4 chunk kernels and an accumulate per
    # iteration, 4 peer copies to the other device per iteration; then one grouped all-reduce
    # over ncclCommInitAll (a kernel per device) and a copy out per device. The chart has a
    # lane group per device.
    [ -x "$example" ] && [ -f "$sim_lib/libnccl.so.2" ] || { echo "SKIP: no multi_gpu or simulated NCCL"; exit 0; }
    export GPUHOOK_SIM_DEVICES=2
    for variant in "" --fixed; do
      rm -f "$work"/cap-*.gpuh
      sim_pair -- "$example" --iterations 2 --size 4096 $variant
      grep -q '^OK$' plain.out || fail "multi_gpu $variant did not run on two devices: $(head -3 plain.out)"
      gpuhook_lines 1 "dropped 0"
      check "$(capture)" --expect kernel=22 --expect memcpy=18 --expect device=2 --kernels --copies --threads \
        --devices 2 --nccl-device
      [ "$(value kernels_device_0)" = 11 ] || fail "$variant: $(value kernels_device_0) kernels on device 0, want 11"
      [ "$(value kernels_device_1)" = 11 ] || fail "$variant: $(value kernels_device_1) kernels on device 1, want 11"
      [ "$(value peer_copies)" = 16 ] || fail "$variant: $(value peer_copies) peer copies, want 16"
      "$gantt_cli" render "$(capture)" -o "$work/chart.svg" >/dev/null 2>&1 || fail "render failed"
      for gpu in GPU0 GPU1; do
        grep -q ">$gpu" "$work/chart.svg" || fail "$variant: the chart has no lane group for $gpu"
      done
    done
    ;;
  graph_replay)
    # 8 kernels captured once, replayed 20 times: unknown stamps are no invalid times.
    [ -x "$example" ] || { echo "SKIP: no example"; exit 0; }
    sim_pair -- "$example"
    gpuhook_lines 1 "dropped 0"
    check "$(capture)" --expect kernel=160 --graph --threads
    [ "$(value graph_kernels)" = 160 ] || fail "$(value graph_kernels) graph kernels, want 160"
    [ "$(value dropped_invalid_time)" = 0 ] || fail "$(value dropped_invalid_time) records counted with invalid times"
    ;;
  graph_dag)
    # 5 launches of a hand-built graph (7 kernels, 1 memset, 1 memcpy each) and 5 of a graph
    # captured from two streams (5 kernels, 1 memset, 1 memcpy each): every node is one record,
    # every kernel a graph kernel tied to its cudaGraphLaunch.
    [ -x "$example" ] || { echo "SKIP: no example"; exit 0; }
    sim_pair -- "$example"
    gpuhook_lines 1 "dropped 0"
    check "$(capture)" --expect kernel=60 --expect memcpy=10 --expect memset=10 --graph --threads
    [ "$(value graph_kernels)" = 60 ] || fail "$(value graph_kernels) graph kernels, want 60"
    ;;
  example_query)
    # sync_loop --fixed waits by polling cudaStreamQuery: most queries find work pending.
    [ -x "$example" ] || { echo "SKIP: no example"; exit 0; }
    args=(--fixed --iterations 20 --size 65536)
    sim_pair GPUHOOK_API=all -- "$example" "${args[@]}"
    check "$(capture)" --min kernel=20 --min sync=1 --sync-returns --threads
    # The hook turns pending-query records off (cuptiActivityEnableAllSyncRecords(0)).
    [ "$(value sync_pending)" = 0 ] || fail "$(value sync_pending) records of queries that found work pending"
    ;;
  example_preload | example_injection)
    [ -x "$example" ] || { echo "SKIP: no example"; exit 0; }
    args=(--iterations 2 --size 4096)
    run plain LD_LIBRARY_PATH="$sim_lib" -- "$example" "${args[@]}"
    if [ "$case_name" = example_preload ]; then
      run hooked LD_LIBRARY_PATH="$sim_lib" LD_PRELOAD="$preload" GPUHOOK_OUTPUT="$work/cap-%p.gpuh" -- "$example" "${args[@]}"
    else
      run hooked LD_LIBRARY_PATH="$sim_lib" CUDA_INJECTION64_PATH="$hook" NVTX_INJECTION64_PATH="$hook" \
        GPUHOOK_OUTPUT="$work/cap-%p.gpuh" -- "$example" "${args[@]}"
    fi
    [ "$(cat plain.rc)" = "$(cat hooked.rc)" ] || fail "exit code $(cat hooked.rc) with the hook, $(cat plain.rc) without"
    cmp -s plain.out hooked.out || fail "stdout differs: $(diff plain.out hooked.out | head -5)"
    gpuhook_lines 1
    check "$(capture)" --min kernel=1 --kernels --copies --nesting --threads --header simulator=1 --expect footer=1
    if [ -x "$gantt_cli" ]; then
      # The CLI reads the same counts from the file as the checker.
      kernels=$(value kernel)
      "$gantt_cli" info "$(capture)" >info.out 2>&1 || fail "gantt-cli info failed: $(head -3 info.out)"
      grep -q "kernel $kernels\b" info.out || fail "gantt-cli info does not count $kernels kernels: $(grep records info.out)"
    fi
    ;;
  *)
    echo "unknown case $case_name"; exit 2 ;;
esac
if [ "$failed" != 0 ]; then
  echo "--- hooked stderr"; cat hooked.err 2>/dev/null | head -20
  echo "--- capture_check"; cat check.out 2>/dev/null
  exit 1
fi
echo "PASS[$case_name]"
