#!/usr/bin/env bash
# The hook keeps libprotobuf out of the program it records: a program that
# holds the capture schema itself (gantt-cli, or a second copy of the hook) runs unharmed,
# and nothing but the hook's own "gpuhook:" lines reaches the program's stderr.
#   protobuf_isolation.sh CASE HOOK_SO HOOK_APP CAPTURE_CHECK FAKE_NCCL_DIR [GANTT_CLI]
set -u
case_name=$1 hook=$2 app=$3 check=$4 fake_nccl=$5 gantt_cli=${6:-}
# Under an ASan build the ASan runtime must come first: it goes ahead of the hook.
asan_lib=$(ldd "$app" 2>/dev/null | awk '/libasan/ {print $3}')
[ -z "$asan_lib" ] || hook="$asan_lib:$hook"
work=$(mktemp -d "${TMPDIR:-/tmp}/gpuhook-e2e-$case_name.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
failed=0
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
same_as_plain() {
  [ "$(cat plain.rc)" = "$(cat hooked.rc)" ] ||
    fail "exit code $(cat hooked.rc) with the hook, $(cat plain.rc) without: $(head -3 hooked.err)"
  cmp -s plain.out hooked.out || fail "stdout differs: $(diff plain.out hooked.out | head -5)"
}
# Every stderr line the hook added is its own: the program's lines, then "gpuhook:" lines.
only_gpuhook_lines() {
  local want=$1
  grep -q 'libprotobuf' hooked.err && fail "libprotobuf printed on the program's stderr: $(grep libprotobuf hooked.err | head -2)"
  local extra
  extra=$(grep -v '^gpuhook:' hooked.err | grep -vxF -f plain.err)
  [ -z "$extra" ] || fail "stderr lines that are not the program's nor gpuhook:'s: $(echo "$extra" | head -3)"
  local got
  got=$(grep -c '^gpuhook:' hooked.err)
  [ "$got" = "$want" ] || fail "$got gpuhook: lines on stderr, want $want: $(grep '^gpuhook:' hooked.err)"
}
capture_ok() {
  local file
  file=$(ls "$work"/cap-*.gpuh 2>/dev/null | head -1)
  [ -n "$file" ] || { fail "no capture written"; return; }
  "$check" "$file" "$@" >check.out || fail "capture_check: $(grep FAIL check.out | head -3)"
}

case $case_name in
  gantt_cli_under_hook)
    # gantt-cli links the full protobuf runtime with the same schema the hook writes.
    [ -x "$gantt_cli" ] || { echo "SKIP: no gantt-cli"; exit 0; }
    LD_LIBRARY_PATH="$fake_nccl" LD_PRELOAD="$hook" GPUHOOK_OUTPUT="$work/rec-%p.gpuh" "$app" nvtx 2 >/dev/null 2>&1
    rec=$(ls "$work"/rec-*.gpuh 2>/dev/null | head -1)
    [ -n "$rec" ] || { fail "no capture to read"; rec=/nonexistent; }
    for args in "--help" "info $rec"; do
      # shellcheck disable=SC2086
      run plain -- "$gantt_cli" $args
      # shellcheck disable=SC2086
      run hooked LD_PRELOAD="$hook" GPUHOOK_OUTPUT="$work/cap-%p.gpuh" -- "$gantt_cli" $args
      same_as_plain
      only_gpuhook_lines 0
    done
    ;;
  two_hooks)
    # Two copies of the hook in one process (a copy under another name, as a job launcher
    # and the job's own LD_PRELOAD may each add one).
    cp "${hook##*:}" "$work/libgpuhook-copy.so"
    run plain LD_LIBRARY_PATH="$fake_nccl" -- "$app" nvtx 2
    run hooked LD_LIBRARY_PATH="$fake_nccl" LD_PRELOAD="$hook:$work/libgpuhook-copy.so" \
      GPUHOOK_OUTPUT="$work/cap-%p.gpuh" -- "$app" nvtx 2
    same_as_plain
    grep -q 'libprotobuf' hooked.err && fail "libprotobuf printed on the program's stderr: $(grep libprotobuf hooked.err | head -2)"
    extra=$(grep -v '^gpuhook:' hooked.err | grep -vxF -f plain.err)
    [ -z "$extra" ] || fail "stderr lines that are not the program's nor gpuhook:'s: $(echo "$extra" | head -3)"
    capture_ok
    ;;
  invalid_utf8_setting)
    # A setting that lands in a string field of the header, with a byte that is not UTF-8.
    run plain LD_LIBRARY_PATH="$fake_nccl" -- "$app" nvtx 2
    run hooked LD_LIBRARY_PATH="$fake_nccl" LD_PRELOAD="$hook" GPUHOOK_OUTPUT="$work/cap-%p.gpuh" \
      GPUHOOK_TEST_BOOT_ID=$'boot-\xff-id' -- "$app" nvtx 2
    same_as_plain
    only_gpuhook_lines 1
    # Readable, with the byte replaced (U+FFFD), not the header lost.
    capture_ok --header boot_id=$'boot-\xef\xbf\xbd-id' --expect footer=1
    ;;
  *)
    echo "unknown case $case_name"; exit 2 ;;
esac
if [ "$failed" != 0 ]; then
  echo "--- hooked stderr"; head -20 hooked.err 2>/dev/null
  exit 1
fi
echo "PASS[$case_name]"
