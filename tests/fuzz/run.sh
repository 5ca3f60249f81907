#!/usr/bin/env bash
# Fuzzes the capture reader with libFuzzer under ASan+UBSan, whatever compiler the main
# build uses: compiles the reader and the fuzz target with clang++ directly.
#   tests/fuzz/run.sh [SECONDS] [BUILD_DIR]    (BUILD_DIR supplies the generated capture.pb.cc)
# New inputs go to tests/fuzz/findings/ (not committed); crashes as crash-* files there.
# Copy an input worth keeping into tests/fuzz/corpus/ so the replay test runs it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
secs="${1:-60}"
build="${2:-$root/build}"
pb="$build/proto/gpuhook/v1/capture.pb.cc"
if [[ ! -f "$pb" ]]; then
  echo "run.sh: $pb not found: configure and build gpuhook_format in $build first" >&2
  exit 2
fi
out="$here/findings"
mkdir -p "$out"
bin="$out/reader_fuzz"
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -I"$root/include" -I"$root/proto" -I"$build/proto" -I"$build/proto/gpuhook/v1")
clang++ "${flags[@]}" "$here/reader_fuzz.cpp" "$root"/proto/{capture_error,capture_reader,capture_writer,record_fields}.cpp "$pb" \
  -lprotobuf -lzstd -o "$bin"
cd "$out"
"$bin" -max_total_time="$secs" -rss_limit_mb=1024 -timeout=10 "$out" "$here/corpus"
