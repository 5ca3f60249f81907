#!/usr/bin/env bash
# The .deb: `cpack -G DEB` in the build directory makes a package that unpacks into a scratch
# root with what a user needs (gantt-cli, libgpuhook.so with its SONAME, headers, find_package and
# pkg-config files, man pages, completion, documents), declares its library dependencies, and
# runs: --version, and a capture of an example program on the simulator by the installed
# gantt-cli record with the installed hook.
#   package_test.sh BUILD_DIR SIM_LIB_DIR EXAMPLE
set -u
build=$(realpath "$1") sim_lib=$(realpath "$2") example=$(realpath "$3")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
cpack -G DEB -B "$work/pkg" --config "$build/CPackConfig.cmake" > "$work/cpack.log" 2>&1 || { cat "$work/cpack.log"; echo "FAIL cpack"; exit 1; }
deb=$(ls "$work"/pkg/*.deb 2>/dev/null | head -1)
[[ -n $deb ]] || { cat "$work/cpack.log"; echo "FAIL: no .deb"; exit 1; }
echo "ok   built $(basename "$deb")"
dpkg-deb -x "$deb" "$work/root" || { echo "FAIL dpkg-deb -x"; exit 1; }
root=$work/root/usr
for f in bin/gantt-cli lib/libgpuhook.so lib/libgpuhook.so.0 include/gpuhook/gpuhook.h include/gpuhook/capture.h \
         lib/cmake/gpuhook/gpuhookConfig.cmake lib/cmake/gpuhook/gpuhookConfigVersion.cmake lib/pkgconfig/gpuhook.pc \
         share/man/man1/gantt-cli.1.gz share/man/man1/gantt-cli-render.1.gz share/man/man1/gantt-cli-whatif.1.gz \
         share/doc/gpuhook/README.md share/doc/gpuhook/docs/whatif.md share/doc/gpuhook/LICENSE \
         share/bash-completion/completions/gantt-cli share/zsh/vendor-completions/_gantt-cli; do
  [[ -e $root/$f ]] || fail "the package lacks /usr/$f"
done
soname=$(readelf -d "$root/lib/libgpuhook.so.0" 2>/dev/null | sed -n 's/.*SONAME.*\[\(.*\)\].*/\1/p')
[[ $soname == libgpuhook.so.0 ]] && echo "ok   libgpuhook.so has SONAME $soname" || fail "SONAME is '$soname'"
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libprotobuf libzstd libcairo; do
  [[ $depends == *$lib* ]] || fail "Depends lacks $lib: $depends"
done
echo "ok   Depends: $depends"
version=$("$root/bin/gantt-cli" --version) && [[ $version == "gantt-cli "* ]] && echo "ok   $version" || fail "gantt-cli --version: $version"
zcat "$root/share/man/man1/gantt-cli-stats.1.gz" | grep -q -- '--summary' && echo "ok   man page from the CLI" || fail "man page"
bash -c "source '$root/share/bash-completion/completions/gantt-cli'; COMP_WORDS=(gantt-cli ren); COMP_CWORD=1; _gantt_cli; [[ \${COMPREPLY[*]} == render ]]" &&
  echo "ok   bash completion" || fail "bash completion does not complete 'ren'"
# The installed record finds the installed hook by itself (no GPUHOOK_LIB).
err=$(cd "$work" && env -u GPUHOOK_LIB LD_LIBRARY_PATH="$sim_lib" GPUHOOK_QUIET=1 \
  "$root/bin/gantt-cli" record -o "$work/run-%p.gpuh" -- "$example" --iterations 1 --size 4096 2>&1 >/dev/null)
capture=$(ls "$work"/run-*.gpuh 2>/dev/null | head -1)
if [[ -z $capture ]]; then
  fail "no capture from the installed record: $err"
else
  n=$("$root/bin/gantt-cli" stats "$capture" --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')
  [[ $n -gt 0 ]] && echo "ok   the installed hook recorded $n GPU activities on the simulator" || fail "empty capture"
fi
exit $((fails > 0))
