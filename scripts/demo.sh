#!/usr/bin/env bash
# The main job, from a fresh clone: set up, build what the demo needs, capture an example
# program under the hook, render the chart, print stats and the diagnosis.
#
#   scripts/demo.sh [EXAMPLE] [EXAMPLE ARGS...]     default: pageable_copy --iterations 3 --size 65536
#
# On a machine where `nvidia-smi` finds a GPU the example runs on it for real. Elsewhere it
# runs on the CPU simulator of the CUDA runtime and CUPTI (tests/sim/), and says so: the
# chart then shows the simulator's modelled times, not a GPU's.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
example=${1:-pageable_copy}
shift || true
args=("$@")
((${#args[@]})) || args=(--iterations 3 --size 65536)

out=$root/out/demo
build=$root/build-demo
export PATH="$PATH:/usr/local/cuda/bin"
export CCACHE_BASEDIR="$root"  # a build another checkout made is reused (ccache, when installed)

scripts/setup.sh

if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  mode=gpu
  arch=native
  echo "demo: running on the GPU: $(nvidia-smi -L | head -n1)"
else
  mode=sim
  arch=90
  echo "demo: no GPU found: running on the CPU SIMULATOR (tests/sim/); times are modelled, not measured"
fi

echo "demo: building (build-demo/) ..."
# The build's output is shown only when it fails: the demo's own lines are what matter.
mkdir -p "$build"
log=$build/demo-build.log
targets=(gpuhook gantt-cli "$example")
[ "$mode" = sim ] && targets+=(gpuhook_sim_cudart gpuhook_sim_cupti)
# The same flags as scripts/test.sh's build (Release with assertions), so that ccache serves
# either build tree what the other compiled: no work is done twice between them.
if ! { cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2" \
         -DCMAKE_C_FLAGS_RELEASE="-O2" -DCMAKE_CUDA_ARCHITECTURES="$arch" &&
       cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"; } > "$log" 2>&1; then
  cat "$log" >&2
  echo "demo: the build failed (output above, also in $log)" >&2
  exit 1
fi

cli=$build/tools/gantt-cli/gantt-cli
exe=$build/examples/$example
[ -x "$exe" ] || { echo "demo: no example named '$example' (see examples/README.md)" >&2; exit 2; }

rm -rf "$out"
mkdir -p "$out"
if [ "$mode" = sim ]; then
  export LD_LIBRARY_PATH="$build/sim/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

echo "demo: recording: $example ${args[*]}"
GPUHOOK_LIB=$build/libhook/libgpuhook.so \
  "$cli" record -o "$out/$example-%p.gpuh" -- "$exe" "${args[@]}"
capture=$(ls "$out"/*.gpuh | head -n1)

"$cli" render "$capture" -o "$out/gantt.png"
"$cli" render "$capture" -o "$out/gantt.svg"
echo
"$cli" stats "$capture"
echo
# diagnose exits 1 when it finds something: that is the point of the demo, not a failure.
"$cli" diagnose "$capture" || [ $? -eq 1 ]
echo
echo "demo: capture  $capture"
echo "demo: charts   $out/gantt.png  $out/gantt.svg"
[ "$mode" = sim ] && echo "demo: (simulator run: the times above are the simulator's model, not GPU measurements)"
exit 0
