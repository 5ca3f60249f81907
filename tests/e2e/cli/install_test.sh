#!/usr/bin/env bash
# cmake --install puts gantt-cli in bin/, libgpuhook.so in lib/ and gpuhook.h in include/,
# and the installed `gantt-cli record` finds the installed library without GPUHOOK_LIB.
#   install_test.sh BUILD_DIR
set -u
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null || { echo "FAIL: cmake --install"; exit 1; }
fails=0
for f in bin/gantt-cli lib/libgpuhook.so include/gpuhook/gpuhook.h; do
  [[ -e "$prefix/$f" ]] && echo "ok   installed $f" || { echo "FAIL: $f not installed"; fails=$((fails + 1)); }
done
out=$(cd "$prefix" && env -u GPUHOOK_LIB GPUHOOK_QUIET=1 "$prefix/bin/gantt-cli" record -- sh -c 'echo "$LD_PRELOAD"; exit 5' 2>&1)
rc=$?
[[ $rc == 5 ]] || { echo "FAIL: installed record exit $rc: $out"; fails=$((fails + 1)); }
[[ "$out" == *"$prefix/lib/libgpuhook.so"* ]] && echo "ok   installed record preloads the installed library" ||
  { echo "FAIL: installed record did not preload $prefix/lib/libgpuhook.so: $out"; fails=$((fails + 1)); }
exit $((fails > 0))
