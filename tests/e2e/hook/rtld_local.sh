#!/usr/bin/env bash
# A library loaded with dlopen(RTLD_LOCAL) (how Python loads PyTorch) calls CUDA and NCCL
# through the preloaded hook: each interposed call (__cudaLaunchKernel, cudaLaunchHostFunc,
# ncclAllReduce) must reach the library's own libcudart and libnccl, which dlsym(RTLD_NEXT)
# cannot see, and the work must be recorded.
#   rtld_local.sh HOOK SIM_LIB_DIR FAKE_NCCL_DIR APP WORK_LIB GANTT_CLI
set -euo pipefail
hook=$1 sim_lib=$2 nccl_dir=$3 app=$4 work_lib=$5 cli=$6
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH=$sim_lib:$nccl_dir GPUHOOK_QUIET=1
"$app" "$work_lib" > "$work/plain.out"
GPUHOOK_MEM_USE=1 GPUHOOK_OUTPUT="$work/r.gpuh" LD_PRELOAD=$hook "$app" "$work_lib" > "$work/hooked.out" 2> "$work/hooked.err" ||
  { echo "FAIL: the program failed under the hook"; cat "$work/hooked.out" "$work/hooked.err"; exit 1; }
cmp -s "$work/plain.out" "$work/hooked.out" || { echo "FAIL: output changed"; diff "$work/plain.out" "$work/hooked.out"; exit 1; }
[[ ! -s $work/hooked.err ]] || { echo "FAIL: the hook wrote on stderr:"; cat "$work/hooked.err"; exit 1; }
count() { "$cli" dump "$work/r.gpuh" --kind "$1" | grep -c "${2:-.}" || true; }
k=$(count kernel _Z5scale) h=$(count host_function) n=$(count nccl ALL_REDUCE) u=$(count memory_use)
[[ $k == 1 && $h == 1 && $n == 1 && $u -ge 2 ]] ||
  { echo "FAIL: recorded $k scale kernels (want 1), $h host functions (1), $n ncclAllReduce calls (1), $u memory uses (>= 2)"
    "$cli" dump "$work/r.gpuh" | head -60; exit 1; }
# The kernel's own arguments were read (its launch went through the interposed __cudaLaunchKernel).
corr=$("$cli" dump "$work/r.gpuh" --kind kernel | grep _Z5scale | sed -n 's/.* correlation_id=\([0-9]*\).*/\1/p')
grep -q " correlation_id=$corr " <("$cli" dump "$work/r.gpuh" --kind memory_use) ||
  { echo "FAIL: no memory use of the scale kernel's launch (correlation id $corr)"; exit 1; }
echo "ok: through RTLD_LOCAL: $k kernel, $h host function, $n NCCL calls, $u memory uses"
