#!/usr/bin/env bash
# Real-GPU validation: one call on a machine with an NVIDIA GPU and the CUDA toolkit.
#
#   scripts/gpu-check.sh OUTDIR                     # build here for the local GPU, then check
#   scripts/gpu-check.sh OUTDIR --prebuilt DIR      # use a build made elsewhere (DIR = build
#                                                   # tree; DIR/runtime-libs/ added to the
#                                                   # library path when present)
#   scripts/gpu-check.sh OUTDIR --sim               # dry run on the CPU simulator: checks the
#                                                   # script itself; its figures are NOT GPU figures
#
# It builds the examples for the local GPU (-arch=native), runs each with and without the
# hook, checks on the real CUPTI data what the simulator tests check (queued/submitted present
# and ordered, every launch joined to its kernel, no drops, results correct), measures the
# hook's overhead (launch-bound: >= 100,000 tiny kernels; GPU-bound: long saxpy loop) as the
# median wall-time ratio over several runs, compares theoretical occupancy computed by
# gantt-cli with cudaOccupancyMaxActiveBlocksPerMultiprocessor, and, when PyTorch is
# installed, times the same launch-bound loop under torch.profiler beside it; reads back the
# GPU's own counters NVML sampled beside the trace (GPUHOOK_NVML_HZ), and samples a known GEMM
# and known copies with CUPTI PM sampling (GPUHOOK_METRICS) and NVML together. Captures,
# charts and logs go to OUTDIR; the table comes last. Budget: under 8 minutes.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

usage() { echo "usage: scripts/gpu-check.sh OUTDIR [--prebuilt BUILD_DIR | --sim] [--runs N]" >&2; exit 2; }
[ $# -ge 1 ] || usage
out=$(mkdir -p "$1" && cd "$1" && pwd) || usage
shift
mode=gpu
build=$root/build-gpucheck
prebuilt=""
runs=5
while [ $# -gt 0 ]; do
  case "$1" in
    --sim) mode=sim ;;
    --prebuilt) prebuilt=$(cd "$2" && pwd) || usage; build=$prebuilt; shift ;;
    --runs) runs=$2; shift ;;
    *) usage ;;
  esac
  shift
done

export PATH="$PATH:/usr/local/cuda/bin"
log=$out/gpu-check.log
: >"$log"
rows=()
fails=0
row() { rows+=("| $1 | $2 | $3 | $4 |"); [ "$4" = miss ] || [ "$4" = FAIL ] && fails=$((fails + 1)); return 0; }
say() { echo "gpu-check: $*" | tee -a "$log" >&2; }

if [ "$mode" = gpu ]; then
  if ! nvidia-smi -L >/dev/null 2>&1; then
    say "no GPU found by nvidia-smi (use --sim for a dry run on the simulator)"
    exit 2
  fi
  gpu_name=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1)
  say "GPU: $gpu_name"
  arch=native
else
  gpu_name="CPU simulator (not a GPU)"
  say "SIMULATOR dry run: every figure below is a simulator figure, not a GPU measurement"
  arch=90
fi

# ---- build -------------------------------------------------------------------------------
examples=(default_stream pageable_copy tiny_kernels occupancy priorities sync_loop nvtx_layers memory_phases)
if [ -z "$prebuilt" ]; then
  say "building (hook, CLI, checker, examples for arch=$arch) into $build"
  targets=(gpuhook gantt-cli capture_check "${examples[@]}" thread_storm allreduce_train long_run pm_probe)
  [ "$mode" = sim ] && targets+=(gpuhook_sim_cudart gpuhook_sim_cupti sim_nccl)
  if ! { cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" &&
         cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"; } >>"$log" 2>&1; then
    say "build failed: see $log"
    tail -n 30 "$log" >&2
    exit 2
  fi
else
  # Built elsewhere (e.g. for sm_90): rebuild only the examples for this GPU with nvcc,
  # which the GPU machine has even when the libraries the CLI needs are not installed.
  [ -d "$build/runtime-libs" ] && export LD_LIBRARY_PATH="$build/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  if [ "$mode" = gpu ]; then
    mkdir -p "$out/examples"
    for ex in "${examples[@]}" thread_storm long_run; do
      nvcc -O2 -std=c++17 -arch=native -cudart shared -I examples -I include -I /usr/local/cuda/include \
        -o "$out/examples/$ex" "examples/$ex.cu" >>"$log" 2>&1 || say "nvcc failed for $ex"
    done
  fi
fi

cli=$build/tools/gantt-cli/gantt-cli
hook=$build/libhook/libgpuhook.so
check=$build/tests/e2e/hook/capture_check
exdir=$build/examples
[ -n "$prebuilt" ] && [ "$mode" = gpu ] && exdir=$out/examples
for f in "$cli" "$hook" "$check"; do
  [ -x "$f" ] || [ -f "$f" ] || { say "missing $f"; exit 2; }
done
if [ "$mode" = sim ]; then
  export LD_LIBRARY_PATH="$build/sim/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # The cost sidecars make the simulated timelines show each pattern.
  export GPUHOOK_SIM_QUIET=1
else
  export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export GPUHOOK_LIB=$hook

now_ns() { date +%s%N; }
# run_timed OUTFILE CMD... : wall ns on stdout; the command's output to OUTFILE
run_timed() {
  local o=$1; shift
  local t0 t1
  t0=$(now_ns)
  "$@" >"$o" 2>&1
  local rc=$?
  t1=$(now_ns)
  echo "$((t1 - t0)) $rc"
}
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# ---- every example, with and without the hook ------------------------------------------
for ex in "${examples[@]}"; do
  for variant in "" --fixed; do
    [ "$ex" = nvtx_layers ] && [ -n "$variant" ] && continue
    name=$ex${variant:+-fixed}
    args=(--iterations 4)
    read -r _ rc < <(run_timed "$out/$name.plain.txt" "$exdir/$ex" "${args[@]}" $variant)
    if [ "$rc" != 0 ] || ! grep -qx OK "$out/$name.plain.txt"; then
      row "$name without hook" "exit $rc" "exit 0, OK" FAIL
      continue
    fi
    rm -f "$out/$name".*.gpuh
    read -r _ rc < <(run_timed "$out/$name.hook.txt" \
      "$cli" record -o "$out/$name.%p.gpuh" -- "$exdir/$ex" "${args[@]}" $variant)
    cap=$(ls "$out/$name".*.gpuh 2>/dev/null | head -n1)
    if [ "$rc" != 0 ] || ! grep -qx OK "$out/$name.hook.txt" || [ -z "$cap" ]; then
      row "$name under hook" "exit $rc${cap:+, capture written}" "exit 0, OK, capture" FAIL
      continue
    fi
    checks=(--kernels)
    case "$ex" in pageable_copy|default_stream|tiny_kernels|occupancy) checks+=(--copies) ;; esac
    [ "$ex" = nvtx_layers ] && checks+=(--nesting)
    if "$check" "$cap" "${checks[@]}" --expect drops=0 >"$out/$name.check.txt" 2>&1; then
      kernels=$(awk '$1=="kernel"{print $2}' "$out/$name.check.txt")
      row "$name: joins, 4 ordered timestamps, no drops" "${kernels:-?} kernels ok" "all" pass
    else
      row "$name: joins, 4 ordered timestamps, no drops" "$(grep -m1 FAIL "$out/$name.check.txt")" "all" FAIL
    fi
    "$cli" render "$cap" -o "$out/$name.png" >>"$log" 2>&1 || say "render failed for $name"
  done
done

# ---- whatif: predict each --fixed twin from its example -------------------------------------
# The same table tests/e2e/whatif/predict_twins.sh makes on the simulator, from the captures
# just recorded: the twin's measured span against the span predicted from the example with the
# change the twin makes (pin-copies at an assumed 50 GB/s: the example has no pinned copy to
# measure it from).
span_ns() { "$cli" info "$1" 2>/dev/null | awk '/time span:/ { print $5 - $3; exit }'; }
whatif_row() {  # example, change flags...
  local ex=$1; shift
  local a b p
  a=$(ls "$out/$ex".*.gpuh 2>/dev/null | head -n1); b=$(ls "$out/$ex-fixed".*.gpuh 2>/dev/null | head -n1)
  [ -n "$a" ] && [ -n "$b" ] || { row "whatif $ex" "no captures" "captures" FAIL; return; }
  rm -f "$out/$ex.predicted.gpuh"
  if ! "$cli" whatif -q "$a" "$@" -o "$out/$ex.predicted.gpuh" >>"$log" 2>&1; then
    row "whatif $ex $*" "whatif failed" "a prediction" FAIL; return
  fi
  p=$(span_ns "$out/$ex.predicted.gpuh")
  local err
  err=$(awk -v b="$(span_ns "$b")" -v p="$p" 'BEGIN { printf "%+.1f%%", 100 * (p - b) / b }')
  local verdict=pass
  awk -v e="${err%\%}" 'BEGIN { exit (e > 15 || e < -15) ? 0 : 1 }' && verdict=FAIL
  # On the simulator at these sizes the kernels' host twins run on the CPU beside the launching
  # thread: the table that measures the model there is tests/e2e/whatif/predict_twins.sh.
  [ "$mode" = sim ] && verdict="n/a (simulator)"
  row "whatif $ex $* (span: example $(span_ns "$a") ns, twin $(span_ns "$b") ns, predicted $p ns)" "$err" "within 15%" "$verdict"
}
whatif_row default_stream --change streams=4
whatif_row pageable_copy --change pin-copies --change async-copies --pinned-gbps 50
whatif_row sync_loop --change remove-syncs

# ---- NCCL, one rank, under the hook ------------------------------------------------------
if [ -x "$exdir/allreduce_train" ] || [ -x "$build/examples/allreduce_train" ]; then
  ar=$exdir/allreduce_train; [ -x "$ar" ] || ar=$build/examples/allreduce_train
  rm -f "$out"/allreduce.*.gpuh
  "$cli" record -o "$out/allreduce.%p.gpuh" -- "$ar" --ranks 1 --steps 10 >"$out/allreduce.txt" 2>&1
  cap=$(ls "$out"/allreduce.*.gpuh 2>/dev/null | head -n1)
  if [ -n "$cap" ] && "$check" "$cap" --nccl --min nccl=10 >"$out/allreduce.check.txt" 2>&1; then
    row "NCCL 1 rank: NcclCall records" "$(awk '$1=="nccl"{print $2}' "$out/allreduce.check.txt")" ">= 10" pass
  else
    row "NCCL 1 rank: NcclCall records" "see allreduce.check.txt" ">= 10" FAIL
  fi
fi

# ---- memory categories: memory_phases tags its allocations (gpuhook_mem_tag) ---------------
mp=$(ls "$out"/memory_phases.*.gpuh 2>/dev/null | head -n1)
if [ -n "$mp" ]; then
  cats=$("$cli" stats "$mp" --by memory --format json 2>/dev/null |
    python3 -c 'import json, sys; d = json.load(sys.stdin)["devices"][0]["peak_by_category"]; print(" ".join(sorted(d)))' 2>/dev/null)
  verdict=FAIL; [ "$cats" = "activations data grads init params" ] && verdict=pass
  row "memory_phases: peak by gpuhook_mem_tag category" "${cats:-none}" "activations data grads init params" "$verdict"
fi

# ---- memory use: GPUHOOK_MEM_USE reads each launch's arguments; the init table held unused ---
mpx=$exdir/memory_phases; [ -x "$mpx" ] || mpx=$build/examples/memory_phases
if [ -x "$mpx" ]; then
  rm -f "$out"/memuse.*
  GPUHOOK_MEM_USE=1 LD_PRELOAD=$hook GPUHOOK_OUTPUT="$out/memuse.gpuh" "$mpx" --iterations 3 --size 16384 \
    >"$out/memuse.out" 2>&1
  rc=$?
  uses=$("$cli" dump "$out/memuse.gpuh" --kind memory_use 2>/dev/null | grep -c . || true)
  "$cli" diagnose "$out/memuse.gpuh" >"$out/memuse.diagnose.txt" 2>&1 || true
  named=$(grep -c "1.0 MiB (init) allocated at .*, last used at .* by init_weights" "$out/memuse.diagnose.txt" || true)
  verdict=FAIL; [ "$rc" = 0 ] && [ "${uses:-0}" -gt 16 ] && [ "$named" = 1 ] && verdict=pass
  row "GPUHOOK_MEM_USE: memory_phases exit code, MemoryUse records, memory-idle names the init table" \
    "rc $rc, ${uses:-0} records, named $named" "rc 0, > 16, named 1" "$verdict"
fi

# ---- NVML: the GPU's own counters, sampled beside the trace (GPUHOOK_NVML_HZ=100) ----------
# From the captures above. NVML's utilisation is the driver's average over 1/6 s to 1 s, so
# the highest read of a run of short kernels is what shows the GPU was busy; the highest SM
# clock and power say it left idle. The expected orders of magnitude (an H200: 1980 MHz
# boost, 700 W limit) are in the goal column.
for ex in occupancy pageable_copy; do
  cap=$(ls "$out/$ex".*.gpuh 2>/dev/null | head -n1)
  [ -n "$cap" ] || continue
  read -r n util sm power < <("$cli" export "$cap" --format metrics-csv -o - 2>/dev/null | python3 -c '
import csv, sys
top, n = {}, 0
for r in csv.DictReader(sys.stdin):
    if r["device"] != "0": continue
    n += r["counter"] == "gpu_util_pct"
    top[r["counter"]] = max(top.get(r["counter"], -1.0), float(r["value"]))
print(n, top.get("gpu_util_pct", -1), top.get("sm_clock_mhz", -1), top.get("power_w", -1))' 2>/dev/null || echo "0 -1 -1 -1")
  verdict=FAIL
  # Utilisation is not judged: a few milliseconds of kernels in NVML's 1/6 s to 1 s average
  # can round to 0%. The SM clock leaving idle (a few hundred MHz) is the sign of work.
  python3 -c "import sys; sys.exit(0 if $n > 0 and $sm > 500 and $power > 0 else 1)" && verdict=pass
  row "NVML during $ex (device 0): reads, highest utilisation, SM clock, power" \
    "$n reads; $util%, $sm MHz, $power W" "reads > 0; (info), ~1000-2000 MHz, 100s of W" "$verdict"
done
occ=$(ls "$out"/occupancy.*.gpuh 2>/dev/null | head -n1)
if [ -n "$occ" ]; then
  "$cli" diagnose "$occ" >"$out/nvml.diagnose.txt" 2>&1 || true
  grep -m1 "\[throttled\]" "$out/nvml.diagnose.txt" >>"$log" 2>&1 && say "occupancy ran throttled: see nvml.diagnose.txt"
fi

# ---- the GPU's counters on known work: CUPTI PM sampling and NVML (examples/pm_probe) -------
# pm_probe idles, runs FP32 GEMMs filling every SM, idles, copies device to device, idles,
# copies host to device from pinned memory, idles (300 ms each gap). Each phase's mean counters
# are printed beside the order of magnitude an H200 should show. PM sampling needs profiling
# permission: refused, it is one gpuhook line and NVML alone (the fallback row checks that).
probe=$exdir/pm_probe; [ -x "$probe" ] || probe=$build/examples/pm_probe
if [ "$mode" = gpu ] && [ -n "$prebuilt" ] && [ ! -x "$probe" ]; then
  nvcc -O2 -std=c++17 -arch=native -cudart shared -I examples -I include -I /usr/local/cuda/include \
    -o "$out/examples/pm_probe" examples/pm_probe.cu >>"$log" 2>&1 && probe=$out/examples/pm_probe
fi
if [ -x "$probe" ]; then
  if [ "$mode" = sim ]; then probe_args=(--iterations 2 --size 256); else probe_args=(--iterations 8 --size 2048); fi
  rm -f "$out"/pm_probe.*
  GPUHOOK_METRICS=gr_active,sm_active,sm_occupancy,tensor_active,dram_read,dram_write,pcie_rx,pcie_tx \
    GPUHOOK_METRICS_HZ=10000 GPUHOOK_NVML_HZ=100 LD_PRELOAD=$hook GPUHOOK_OUTPUT="$out/pm_probe.gpuh" \
    "$probe" "${probe_args[@]}" >"$out/pm_probe.txt" 2>&1
  rc=$?
  pm_refused=$(grep -m1 "^gpuhook: CUPTI PM sampling off" "$out/pm_probe.txt" || true)
  "$cli" dump "$out/pm_probe.gpuh" --kind kernel,memcpy,metric_sample >"$out/pm_probe.dump" 2>>"$log"
  python3 - "$out/pm_probe.dump" >"$out/pm_probe.phases" 2>>"$log" <<'PY'
import re, sys
kern, d2d, h2d, samples = [], [], [], {}
for line in open(sys.argv[1]):
    f = dict(re.findall(r"(\w+)=(\S+)", line))
    if " kernel " in line and "sgemm" in line:
        kern.append((int(f["start_ns"]), int(f["end_ns"])))
    elif " memcpy " in line:
        span = (int(f.get("start_ns", 0)), int(f.get("end_ns", 0)))
        kind = f.get("copy_kind", "")
        if "DTOD" in kind: d2d.append(span)
        elif "HTOD" in kind and int(f.get("bytes", 0)) >= 256 << 10: h2d.append(span)
    elif " metric_sample " in line:
        samples.setdefault(f["metric"].replace("GPU_METRIC_", ""), []).append((int(f["time_ns"]), int(f.get("value", "0"))))
phases = {}
if kern: phases["gemm"] = (min(a for a, b in kern), max(b for a, b in kern))
if d2d: phases["d2d"] = (min(a for a, b in d2d), max(b for a, b in d2d))
if h2d: phases["h2d"] = (min(a for a, b in h2d[-8:]), max(b for a, b in h2d))
busy = kern + d2d + h2d
def mean(metric, a, b, scale):
    v = [x for t, x in samples.get(metric, []) if a <= t <= b]
    return (sum(v) / len(v) * scale, len(v)) if v else (-1, 0)
# Idle: samples at least 50 ms from any GPU work, after the first sample.
idle = [x / 100 for t, x in samples.get("SM_ACTIVE_CENTIPCT", []) if all(t < a - 50e6 or t > b + 50e6 for a, b in busy)]
print("idle", round(max(idle), 2) if idle else -1, len(idle))
for name, (a, b) in phases.items():
    pad = (b - a) // 10  # the phase's middle 80%: no window edges
    a, b = a + pad, b - pad
    row = [name]
    for m in ("SM_ACTIVE_CENTIPCT", "GR_ACTIVE_CENTIPCT", "SM_OCCUPANCY_CENTIPCT", "TENSOR_ACTIVE_CENTIPCT",
              "DRAM_READ_CENTIPCT", "DRAM_WRITE_CENTIPCT", "PCIE_RX_CENTIPCT", "PCIE_TX_CENTIPCT"):
        row.append(round(mean(m, a, b, 0.01)[0], 1))
    row.append(mean("SM_ACTIVE_CENTIPCT", a, b, 1)[1])
    row.append(round(mean("GPU_UTIL_PERCENT", a - 200e6, b + 200e6, 1)[0], 1))
    row.append(round(mean("PCIE_RX_KBPS", a - 1e9, b + 1e9, 1e-6)[0], 2))
    print(*row)
PY
  cat "$out/pm_probe.phases" >>"$log"
  # What PM sampling costs a GPU-bound loop: the GEMMs' mean kernel time, hooked with and without
  # it (the issue's bound: 1%). PyTorch reports PM sampling locks the clocks, which this shows.
  GPUHOOK_NVML_HZ=100 LD_PRELOAD=$hook GPUHOOK_OUTPUT="$out/pm_probe.nopm.gpuh" \
    "$probe" "${probe_args[@]}" >"$out/pm_probe.nopm.txt" 2>&1
  gemm_ratio=$(for f in pm_probe pm_probe.nopm; do
      "$cli" dump "$out/$f.gpuh" --kind kernel 2>/dev/null | python3 -c '
import re, sys
d = [int(f["end_ns"]) - int(f["start_ns"]) for f in (dict(re.findall(r"(\w+)=(\S+)", l)) for l in sys.stdin if "sgemm" in l)]
print(sum(d) / len(d) if d else 0)'
    done | paste -sd' ' | awk '{if ($2 > 0) printf "%.4f", $1 / $2}')
  if [ -n "$pm_refused" ] || [ "$mode" = sim ]; then verdict=info; else verdict=FAIL; fi
  [ "$verdict" = FAIL ] && python3 -c "import sys; sys.exit(0 if 0 < ${gemm_ratio:-0} <= 1.01 else 1)" && verdict=pass
  row "GEMM kernel time with PM sampling at 10 kHz / without (both hooked)" "${gemm_ratio:-?}x" "<= 1.01x" "$verdict"
  if [ -n "$pm_refused" ]; then
    nvml_n=$(grep -c "GPU_METRIC_GPU_UTIL_PERCENT" "$out/pm_probe.dump" || true)
    pm_n=$(grep -c "_CENTIPCT" "$out/pm_probe.dump" || true)
    verdict=FAIL; [ "$rc" = 0 ] && [ "${nvml_n:-0}" -gt 0 ] && [ "${pm_n:-0}" = 0 ] && verdict=pass
    row "PM sampling refused on this machine: one line, NVML samples instead" "${pm_refused#gpuhook: }; $nvml_n NVML reads" \
      "one line, NVML reads > 0" "$verdict"
    row "PM sampling on known work" "not measured (profiling restricted: run as root or with NVreg_RestrictProfilingToAdminUsers=0)" \
      "(needs permission)" info
  else
    read -r _ idle_max idle_n < <(grep "^idle" "$out/pm_probe.phases" || echo "idle -1 0")
    verdict=FAIL; python3 -c "import sys; sys.exit(0 if $rc == 0 and $idle_n > 50 and 0 <= $idle_max < 2 else 1)" && verdict=pass
    row "PM sampling while idle: highest SM active" "$idle_max% over $idle_n samples" "< 2%" "$verdict"
    while read -r ph sm gr occ tensor dr dw prx ptx n util pcie_gbs; do
      case "$ph" in
        gemm) goal="SM active 80-100%, GR ~100%, tensor ~0 (FP32), DRAM 1-60%, NVML util ~100%"
              ok="$sm >= 50 and $gr >= 50 and $tensor < 20" ;;
        d2d)  goal="DRAM read and write 20-60% each (copy engines), SM active < 20%"
              ok="$dr + $dw >= 20" ;;
        h2d)  goal="PCIe RX 40-100% of the link, DRAM write a few %, NVML PCIe RX 10s of GB/s"
              ok="$prx >= 10" ;;
        *) continue ;;
      esac
      verdict=FAIL; python3 -c "import sys; sys.exit(0 if $n > 5 and ($ok) else 1)" && verdict=pass
      # The simulator moves a copy's real bytes far slower than the 1.5 TB/s it models, so its
      # device-to-device phase is mostly the CPU's memcpy: not judged there.
      [ "$mode" = sim ] && [ "$ph" = d2d ] && verdict=info
      row "PM + NVML during $ph (device 0)" \
        "SM $sm%, GR $gr%, occ $occ%, tensor $tensor%, DRAM r/w $dr/$dw%, PCIe rx/tx $prx/$ptx% ($n samples); NVML util $util%, PCIe RX $pcie_gbs GB/s" \
        "$goal" "$verdict"
    done < <(grep -v "^idle" "$out/pm_probe.phases")
  fi
fi

# ---- flight recorder: a slow step of long_run written out, the run going on ----------------
lr=$exdir/long_run; [ -x "$lr" ] || lr=$build/examples/long_run
if [ -x "$lr" ]; then
  rm -f "$out"/flight.*
  GPUHOOK_FLIGHT=2s GPUHOOK_SLOW=train_step:20 LD_PRELOAD=$hook GPUHOOK_OUTPUT="$out/flight.gpuh" \
    "$lr" --steps 2000 --slow-at 1500 >"$out/flight.txt" 2>&1
  dump=""
  for f in "$out"/flight.flight*.gpuh; do
    [ -f "$f" ] && "$cli" info "$f" 2>/dev/null | grep -q "occurrence 1500 of 'train_step'" && dump=$f
  done
  verdict=FAIL; [ -n "$dump" ] && grep -qx OK "$out/flight.txt" && verdict=pass
  row "flight recorder: GPUHOOK_SLOW=train_step:20 dumps the slow step 1500 of 2000" \
    "$(ls "$out"/flight.flight*.gpuh 2>/dev/null | wc -l) dumps${dump:+, $(basename "$dump") names it}" "a dump naming it" "$verdict"
fi

# ---- what the simulator models from the CUDA 13 headers, settled on the real libraries ----
# One row per fact (tests/gpu/README.md). GPU-only rows say so on a --sim dry run.
gpu_only() { row "$1" "GPU only" "-" skip; }
value_of() { awk -v k="$1" '$1 == k {print $2}' "$2"; }

cap=$(ls "$out"/nvtx_layers.*.gpuh 2>/dev/null | head -n1)
if [ -n "$cap" ] && "$check" "$cap" --threads >"$out/threads.check.txt" 2>&1; then
  row "thread ids: API rows share Linux tids with NVTX rows" "equal" "equal" pass
else
  row "thread ids: API rows share Linux tids with NVTX rows" "$(grep -m1 FAIL "$out/threads.check.txt" 2>/dev/null)" "equal" FAIL
fi

cap=$(ls "$out"/sync_loop-fixed.*.gpuh 2>/dev/null | head -n1)
if [ -n "$cap" ] && "$check" "$cap" --sync-returns >"$out/query.check.txt" 2>&1 &&
   [ "$(value_of sync_pending "$out/query.check.txt")" = 0 ]; then
  row "query sync records: returnValue kept, pending queries off" "$(value_of sync "$out/query.check.txt") sync records" "no pending" pass
else
  row "query sync records: returnValue kept, pending queries off" "$(grep -m1 FAIL "$out/query.check.txt" 2>/dev/null)" "no pending" FAIL
fi

storm=$exdir/thread_storm; [ -x "$storm" ] || storm=$build/examples/thread_storm
if [ -x "$storm" ]; then
  rm -f "$out"/storm.*.gpuh
  "$cli" record -o "$out/storm.%p.gpuh" -- "$storm" --size 64 --iterations 200 >"$out/storm.txt" 2>&1
  cap=$(ls "$out"/storm.*.gpuh 2>/dev/null | head -n1)
  if [ -n "$cap" ] && "$check" "$cap" --expect kernel=12800 >"$out/storm.check.txt" 2>&1 &&
     [ "$(value_of dropped_cupti "$out/storm.check.txt")" = 0 ]; then
    row "64 threads x 200 launches at once" "12800 kernels, 0 lost" "all" pass
  else
    row "64 threads x 200 launches at once" "$(value_of kernel "$out/storm.check.txt" 2>/dev/null) kernels, $(value_of dropped_cupti "$out/storm.check.txt" 2>/dev/null) lost" "all" FAIL
  fi
fi

cap=$(ls "$out"/allreduce.*.gpuh 2>/dev/null | head -n1)
if [ -n "$cap" ]; then
  if "$check" "$cap" --nccl-kernels >"$out/allreduce.kernels.txt" 2>&1; then
    row "NCCL calls tied to their kernels by external correlation" "joined" "all" pass
  else
    row "NCCL calls tied to their kernels by external correlation" "$(grep -m1 FAIL "$out/allreduce.kernels.txt")" "all" FAIL
  fi
fi

if [ "$mode" = gpu ]; then
  probes=$out/probes
  mkdir -p "$probes"
  nvcc_probe() {  # NAME EXTRA-FLAGS...: builds tests/gpu/NAME.cu or examples/NAME.cu
    local name=$1; shift
    local src=tests/gpu/$name.cu; [ -f "$src" ] || src=examples/$name.cu
    nvcc -O2 -std=c++17 -arch=native -I examples -o "$probes/$name" "$src" "$@" >>"$log" 2>&1
  }
  # A statically linked cudart (nvcc's default): no runtime symbol for the hook to ask.
  if nvcc -O2 -std=c++17 -arch=native -cudart static -I examples -o "$probes/tiny_static" examples/tiny_kernels.cu >>"$log" 2>&1; then
    rm -f "$out"/static.*.gpuh
    "$cli" record -o "$out/static.%p.gpuh" -- "$probes/tiny_static" --iterations 2 >"$out/static.txt" 2>&1
    cap=$(ls "$out"/static.*.gpuh 2>/dev/null | head -n1)
    if [ -n "$cap" ] && "$check" "$cap" --expect device=1 >"$out/static.check.txt" 2>&1; then
      row "static cudart: the device record (from CUPTI)" "1 device" "1" pass
    else
      row "static cudart: the device record (from CUPTI)" "$(value_of device "$out/static.check.txt" 2>/dev/null) devices" "1" FAIL
    fi
  fi
  if nvcc_probe graph_stamps; then
    rm -f "$out"/graph.*.gpuh
    "$cli" record -o "$out/graph.%p.gpuh" -- "$probes/graph_stamps" >"$out/graph.txt" 2>&1
    cap=$(ls "$out"/graph.*.gpuh 2>/dev/null | head -n1)
    if [ -n "$cap" ] && "$check" "$cap" --expect kernel=160 >"$out/graph.check.txt" 2>&1 &&
       [ "$(value_of dropped_invalid_time "$out/graph.check.txt")" = 0 ]; then
      row "graph kernels: unknown queued/submitted kept, none invalid" "160 kernels" "160, 0 invalid" pass
    else
      row "graph kernels: unknown queued/submitted kept, none invalid" \
        "$(value_of kernel "$out/graph.check.txt" 2>/dev/null) kernels, $(value_of dropped_invalid_time "$out/graph.check.txt" 2>/dev/null) invalid" "160, 0 invalid" FAIL
    fi
  fi
  if nvcc_probe long_kernel; then
    # SIGTERM during a 10 s kernel: the app dies of it (143) soon, the capture is readable.
    rm -f "$out"/sigterm.*.gpuh
    t0=$(now_ns)
    env LD_PRELOAD="$hook" GPUHOOK_OUTPUT="$out/sigterm.%p.gpuh" "$probes/long_kernel" --ms 10000 >"$out/sigterm.txt" 2>&1 &
    pid=$!
    sleep 2
    kill -TERM "$pid"
    wait "$pid"; rc=$?
    t1=$(now_ns)
    cap=$(ls "$out"/sigterm.*.gpuh 2>/dev/null | head -n1)
    if [ "$rc" = 143 ] && [ -n "$cap" ] && "$check" "$cap" --allow-truncated --min api=1 >"$out/sigterm.check.txt" 2>&1; then
      row "SIGTERM during a 10 s kernel" "exit 143 after $(((t1 - t0) / 1000000)) ms, capture readable" "143, readable" pass
    else
      row "SIGTERM during a 10 s kernel" "exit $rc, capture ${cap:-missing}" "143, readable" FAIL
    fi
    # Exit without synchronising while a kernel runs: the FORCED flush finds it incomplete.
    env LD_PRELOAD="$hook" GPUHOOK_OUTPUT="$out/nowait.%p.gpuh" "$probes/long_kernel" --ms 3000 --no-wait >"$out/nowait.txt" 2>&1
    row "exit with a kernel running" "exit $?: $(grep -o 'dropped [0-9]*[^;,]*' "$out/nowait.txt" | head -n1)" "(information)" info
  fi
  if nvcc_probe cupti_probe -lcupti -L/usr/local/cuda/lib64; then
    "$probes/cupti_probe" --s 60 >"$out/cupti_probe.txt" 2>&1
    while read -r verdict rest; do
      case "$verdict" in
        PASS) row "CUPTI: ${rest%%:*}" "${rest#*: }" "as cupti_activity.h says" pass ;;
        FAIL) row "CUPTI: ${rest%%:*}" "${rest#*: }" "as cupti_activity.h says" FAIL ;;
        INFO) row "CUPTI: ${rest%%:*}" "${rest#*: }" "(information)" info ;;
      esac
    done <"$out/cupti_probe.txt"
  fi
  if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    # torch.profiler becomes a second CUPTI client inside the recorded process.
    for how in plain torch_profiler; do
      rm -f "$out"/tp.*.gpuh
      env LD_PRELOAD="$hook" GPUHOOK_OUTPUT="$out/tp.%p.gpuh" python3 "$root/tests/bench/gpu/torch_loop.py" \
        --launches 20000 --mode "$how" >"$out/tp-$how.txt" 2>&1
      cap=$(ls "$out"/tp.*.gpuh 2>/dev/null | head -n1)
      n=$([ -n "$cap" ] && "$check" "$cap" | awk '$1=="kernel"{print $2}')
      said=$(grep -c 'another CUPTI client' "$out/tp-$how.txt")
      row "PyTorch loop under the hook, $how" "${n:-?} kernels, takeover said: $said" "(information)" info
    done
  fi
else
  for what in "static cudart: the device record" "graph kernels: unknown stamps" "SIGTERM during a 10 s kernel" \
              "CUPTI FlushAll(0) during a long kernel; clock drift over 60 s" "torch.profiler in the recorded process"; do
    gpu_only "$what"
  done
fi

# ---- overhead: median wall-time ratio, with/without, interleaved -------------------------
overhead() {  # LABEL GOAL ARGS...
  local label=$1 goal=$2; shift 2
  local plain=() hooked=() i t rc
  for ((i = 0; i < runs; i++)); do
    read -r t rc < <(run_timed /dev/null "$@")
    plain+=("$t")
    read -r t rc < <(run_timed /dev/null env LD_PRELOAD="$hook" GPUHOOK_QUIET=1 \
                       GPUHOOK_OUTPUT="$out/overhead.%p.gpuh" "$@")
    hooked+=("$t")
    rm -f "$out"/overhead.*.gpuh
  done
  local mp mh ratio
  mp=$(printf '%s\n' "${plain[@]}" | median)
  mh=$(printf '%s\n' "${hooked[@]}" | median)
  ratio=$(awk -v a="$mh" -v b="$mp" 'BEGIN {printf "%.3f", a / b}')
  local verdict=pass
  awk -v r="$ratio" -v g="$goal" 'BEGIN {exit !(r <= g)}' || verdict=miss
  row "$label (median of $runs, ${mp%.*} ns plain)" "${ratio}x" "<= ${goal}x" $verdict
}
overhead "overhead, launch-bound: 100,000 tiny kernels" 1.10 \
  "$exdir/tiny_kernels" --size 25600 --iterations 1000
if [ "$mode" = gpu ]; then
  overhead "overhead, GPU-bound: 5,000 saxpy over 64M floats" 1.01 \
    "$exdir/occupancy" --fixed --size 67108864 --iterations 5000
fi

# ---- theoretical occupancy: gantt-cli vs the CUDA runtime ------------------------------
for variant in "" --fixed; do
  name=occupancy${variant:+-fixed}
  cap=$(ls "$out/$name".*.gpuh 2>/dev/null | head -n1)
  [ -n "$cap" ] || continue
  want=$(grep -o 'theoretical occupancy [0-9]*%' "$out/$name.hook.txt" | grep -o '[0-9]*')
  "$cli" export "$cap" --format csv -o "$out/$name.csv" >>"$log" 2>&1
  got=$(python3 - "$out/$name.csv" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r.get("kind") == "kernel" and r.get("occupancy")]
print(round(float(rows[0]["occupancy"]) * 100) if rows else "")
PY
)
  if [ -n "$got" ] && [ "$got" = "$want" ]; then v=pass; else v=FAIL; fi
  row "occupancy $name: gantt-cli vs cudaOccupancyMaxActiveBlocksPerMultiprocessor" "${got:-?}% vs ${want:-?}%" "equal" $v
done

# ---- torch.profiler on the same launch-bound loop, when PyTorch is here ----------------
if [ "$mode" = gpu ] && python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  py=$root/tests/bench/gpu/torch_loop.py
  for how in plain gpuhook torch_profiler; do
    env_pre=()
    [ "$how" = gpuhook ] && env_pre=(env LD_PRELOAD="$hook" GPUHOOK_QUIET=1 GPUHOOK_OUTPUT="$out/torch.%p.gpuh")
    t=$("${env_pre[@]}" python3 "$py" --launches 100000 --mode "${how/gpuhook/plain}" 2>>"$log" | tail -n1)
    eval "torch_$how=$t"
  done
  rm -f "$out"/torch.*.gpuh
  for how in gpuhook torch_profiler; do
    v=$(eval echo "\$torch_$how")
    ratio=$(awk -v a="$v" -v b="$torch_plain" 'BEGIN {if (b > 0) printf "%.3f", a / b}')
    row "PyTorch loop, 100,000 launches, under $how" "${ratio:-?}x" "(comparison)" info
  done
fi

echo
echo "gpu-check on: $gpu_name"
echo "| check | measured | goal | result |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo "captures, charts and logs: $out"
[ "$fails" -eq 0 ]
