#!/usr/bin/env bash
# Regenerates the charts the README and docs/render.md show, on the simulator, from a build tree:
#   examples/img/make.sh [BUILD_DIR]      (default build/)
# The copy bandwidths and the kernel cost are lowered so that the modelled GPU times are
# longer than the CPU work the simulator really does for them (host twins, memmoves);
# otherwise that CPU work, not the model, would set where the host's waits end.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
cli=$build/tools/gantt-cli/gantt-cli
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH=$build/sim/lib GPUHOOK_LIB=$build/libhook/libgpuhook.so GPUHOOK_QUIET=1
export GPUHOOK_SIM_PINNED_GBPS=2 GPUHOOK_SIM_PAGEABLE_GBPS=1 GPUHOOK_SIM_SCALE=twice_plus_one:5
for variant in "" --fixed; do
  name=pageable_copy${variant:+-fixed}
  "$cli" record -q -o "$work/$name.gpuh" -- "$build/examples/pageable_copy" --iterations 1 --size 65536 $variant >/dev/null
  "$cli" render "$work/$name.gpuh" -o "examples/img/$name.png"
done
