#!/usr/bin/env bash
# The installed format library is enough to read a capture: install the `format` component
# into a scratch prefix, build consumer/ against it with find_package(gpuhook), and compare
# what it reads with what gantt-cli info says of the same file.
# usage: check_install.sh BUILD_DIR GANTT_CLI CAPTURE WORK_DIR [CONSUMER_FLAGS]
set -euo pipefail
build=$1 cli=$2 capture=$3 work=$4 flags=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" --component format > "$work/install.log"
# Only the public API is installed: no private header of the format may leak.
for private in framing.h record_codec.h fast_encode.h wire_format.h wire_capture.h wire_from_proto.h; do
  if [ -n "$(find "$work/prefix" -name "$private")" ]; then
    echo "FAIL: private header $private was installed"; exit 1
  fi
done
cmake -S "$here/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" > "$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; echo "FAIL: the consumer does not configure against the installed package"; exit 1; }
cmake --build "$work/consumer" > "$work/build.log" 2>&1 ||
  { cat "$work/build.log"; echo "FAIL: the consumer does not build against the installed headers"; exit 1; }
got=$("$work/consumer/count_records" "$capture")
info=$("$cli" info "$capture")
records=$(sed -n 's/^  records: *\([0-9]*\),.*/\1/p' <<< "$info")
kernels=$(sed -n 's/^  records:.* kernel \([0-9]*\),.*/\1/p' <<< "$info")
span=$(sed -n 's/^  time span: *\([0-9]*\) \.\. \([0-9]*\) ns.*/\1..\2/p' <<< "$info")
want="records $records kernels $kernels span $span"
if [[ "$got" != "$want" ]]; then
  echo "FAIL: the installed reader says '$got', gantt-cli info says '$want'"; exit 1
fi
echo "ok: $got"
