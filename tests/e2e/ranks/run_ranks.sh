#!/usr/bin/env bash
# Runs the allreduce_train example as 4 ranks under the hook on the simulator and checks the
# job with ranks_check (and gantt-cli merge).
#   run_ranks.sh SIM_LIB_DIR HOOK_LIB EXAMPLE RANKS_CHECK GANTT_CLI MODE
# MODE: straggler (rank 2 slow: must be named) | twin (the fixed twin: balanced at any load) |
#       hosts (ranks 1 and 3 pretend to be other hosts, clocks -/+5 ms: offsets recovered to
#       20 us; rank 2 slow: diagnose's scan names it on the aligned clock) | merge (merge the straggler job, check the merged file the same way)
set -euo pipefail
sim=$1 hook=$2 example=$3 check=$4 cli=$5 mode=$6
dir=$(mktemp -d /tmp/gpuhook-ranks.XXXXXX)
trap 'rm -rf "$dir"' EXIT
export LD_LIBRARY_PATH=$sim GPUHOOK_QUIET=1
steps=30
# The straggler's extra time per step. The simulator plans each rank's GPU from what its host
# submitted; the hosts are four processes on the machine's cores, and after each step's
# synchronisation they resubmit as the OS schedules them: on two cores busy with a second build
# the ranks' arrivals scatter by up to 200 us (seen: jitter 114-192 us, a 400 us straggler
# measured 240 us late). The straggler must stand out against that, as the noise-aware rule
# demands: 2 ms of extra compute per step, a straggler worth naming on any machine.
extra_us=2000
# same_diagnosis ARGS...: diagnose scans the ranks (every rule, their allocations with the calls
# that made them, the straggler from their collectives on the job's clock) and reports what it
# reports with them loaded whole.
same_diagnosis() {
  "$cli" diagnose "$@" --format json --streamed > "$dir/scanned.json" 2> "$dir/scanned.err" || true
  "$cli" diagnose "$@" --format json --in-memory > "$dir/loaded.json" 2> "$dir/loaded.err" || true
  if grep -q "cannot scan" "$dir/scanned.err"; then
    echo "FAIL: diagnose $* was loaded, not scanned: $(cat "$dir/scanned.err")"; exit 1
  fi
  if ! cmp -s "$dir/scanned.json" "$dir/loaded.json" || ! cmp -s "$dir/scanned.err" "$dir/loaded.err"; then
    echo "FAIL: diagnose $* scanned differs from --in-memory"
    diff "$dir/scanned.json" "$dir/loaded.json" | head -20; diff "$dir/scanned.err" "$dir/loaded.err"; exit 1
  fi
}
# shellcheck source=same_scanned.sh
. "$(dirname "$0")/same_scanned.sh"
# same_collectives ARGS...: stats --by collective scans the ranks (one scan each, on one clock)
# and says what --in-memory says, and finds the 4-rank all-reduce.
same_collectives() {
  same_scanned collective text "$@"
  grep -q "^AllReduce .* 4 " "$dir/scanned.txt" ||
    { echo "FAIL: stats --by collective $* found no 4-rank all-reduce"; cat "$dir/scanned.txt"; exit 1; }
}
# same_metrics FILES...: stats --metrics scans the ranks too (their samples and the kernels that
# ran at each, on the job's clock) and says what --in-memory says, in every format.
same_metrics() {
  same_scanned kernel text,json,csv,md "$@" --metrics
  grep -q "c1\.gpu0.*(all)" "$dir/scanned.txt" ||
    { echo "FAIL: stats --metrics $* shows no second rank's samples"; cat "$dir/scanned.txt"; exit 1; }
}
# same_memory FILES... [FILTER]: stats --by memory scans the ranks too (their allocations on the
# job's clock, put there by their collectives; a filter only counts the events it selects, as a
# load's restriction leaves the allocations whole), in every format, and shows the fourth rank's
# device.
same_memory() {
  same_scanned memory text,json,csv,md "$@"
  grep -q "c3\.gpu0" "$dir/scanned.txt" ||
    { echo "FAIL: stats --by memory $* shows no fourth rank's device"; cat "$dir/scanned.txt"; exit 1; }
}
case $mode in
  straggler|merge)
    LD_PRELOAD=$hook GPUHOOK_OUTPUT=$dir/rank%r.gpuh "$example" --ranks 4 --steps $steps --slow-rank 2 --extra-us $extra_us >/dev/null
    files=("$dir"/rank0.gpuh "$dir"/rank1.gpuh "$dir"/rank2.gpuh "$dir"/rank3.gpuh)
    if [[ $mode == merge ]]; then
      "$cli" merge "${files[@]}" -o "$dir/job.gpuh"
      if "$cli" merge "${files[@]}" -o "$dir/job.gpuh" 2>/dev/null; then
        echo "FAIL: merge overwrote an existing file"; exit 1
      fi
      files=("$dir/job.gpuh")
      # diff and info load a merged file as every subcommand does: its ranks, on one clock
      # (one busy row per rank's GPU, the alignment), not one capture of four headers.
      "$cli" diff "$dir/job.gpuh" "$dir/job.gpuh" > "$dir/diff.txt"
      busy_rows=$(grep -c '^busy % c[0-3]\.gpu0 ' "$dir/diff.txt" || true)
      if [[ $busy_rows != 4 ]]; then
        echo "FAIL: diff of the merged job shows $busy_rows per-rank busy rows, not 4"; cat "$dir/diff.txt"; exit 1
      fi
      # To a file first: grep -q stopping early would fail the writer with SIGPIPE (pipefail).
      "$cli" info "$dir/job.gpuh" > "$dir/info.txt"
      grep -q "ranks aligned: 4 captures" "$dir/info.txt" ||
        { echo "FAIL: info of the merged job does not show its ranks"; exit 1; }
    fi
    "$check" --expect-straggler 2 --min-collectives $((steps - 2)) "${files[@]}"
    if [[ $mode == straggler ]]; then
      # The CSV export names each kernel's NCCL call (op, communicator, sequence, bytes) and
      # its rank, and lists the host API calls as rows of their own.
      "$cli" export "$dir/rank2.gpuh" --format csv -o "$dir/rank2.csv" 2>/dev/null
      python3 - "$dir/rank2.csv" <<'PY' || { echo "FAIL: the CSV export lacks the NCCL or rank columns"; exit 1; }
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
nccl = [r for r in rows if r["nccl_op"]]
ok = (len(nccl) >= 28 and all(r["nccl_comm"].startswith("0x") and r["nccl_seq"] and int(r["nccl_bytes"]) > 0 and
                              r["rank"] == "2" for r in nccl) and any(r["kind"] == "api" for r in rows))
sys.exit(0 if ok else 1)
PY
      # The CLI's per-collective table over the 4 rank files: one AllReduce row, 4 ranks.
      "$cli" stats --by collective "${files[@]}" | tee "$dir/stats.txt"
      # (a loaded machine may lose a rank's last kernel record at exit: allow two short)
      awk -v min=$((steps - 2)) '$1 == "AllReduce" && $4 == 4 && $5 >= min { ok = 1 } END { exit !ok }' "$dir/stats.txt"
      # diagnose names the slow rank (imbalance of busy time, and the last arriver).
      "$cli" diagnose "${files[@]}" > "$dir/diagnose.txt" || true
      grep -q "rank 2 is busier" "$dir/diagnose.txt"
      grep -q "rank 2 arrived last" "$dir/diagnose.txt"
      same_diagnosis "${files[@]}"
      same_diagnosis "${files[@]}" --from 20ms --device 0
      same_collectives "${files[@]}"
      same_collectives "${files[@]}" --from 20ms --device 0
      same_memory "${files[@]}"
      same_memory "${files[@]}" --from 20ms --device 0
      same_metrics "${files[@]}"
      same_scanned kernel text,json "${files[@]}" --metrics --device 0 --kernel grad  # the selected kernels at the samples
      same_scanned comm json "${files[@]}"  # the collectives' ring traffic on the job's clock
      same_scanned kernel text,json "${files[@]}" --timeline 1ms  # each rank's devices, on the job's clock
      same_view utilisation "${files[@]}"
      same_view memory "${files[@]}"
      same_view utilisation "${files[@]}" --device 0 --kernel grad  # selected on the job's clock
      same_scanned kernel csv "${files[@]}" --timeline 1ms --kernel nccl
      same_view comm "${files[@]}"
      # The ring traffic of the selected kernels: the NCCL kernels a filter leaves out are
      # untied from their calls, as a load's restriction unties them.
      same_scanned comm text,json "${files[@]}" --from 20ms --device 0
      same_scanned comm csv "${files[@]}" --kernel gemm
      same_view comm "${files[@]}" --to 30ms
      same_view utilisation "${files[@]}" --from 10ms --to 30ms  # the window as asked
      # Each rank summarised on its own (the map step), the summaries diagnosed together: the
      # same imbalance finding, less the last-arriver line that needs every collective.
      for r in 0 1 2 3; do "$cli" stats "$dir/rank$r.gpuh" --summary -o "$dir/rank$r.gsum" 2>/dev/null; done
      "$cli" diagnose "$dir"/rank[0-3].gsum > "$dir/diagnose_gsum.txt" || true
      want=$(grep -A3 '^WARNING \[imbalance\]' "$dir/diagnose.txt" | grep -v "arrived last" | head -3)
      got=$(grep -A2 '^WARNING \[imbalance\]' "$dir/diagnose_gsum.txt" || true)
      if [[ -z $got || $got != "$want" ]]; then
        echo "FAIL: diagnose of the ranks' summaries differs from diagnose of their captures"
        echo "captures:"; echo "$want"; echo "summaries:"; echo "$got"; exit 1
      fi
      # The chart: one lane per rank, the slow rank outlined as the last arriver, the
      # alignment in the footer; the SVG parses.
      "$cli" render "${files[@]}" --lanes rank -o "$dir/ranks.svg" 2>/dev/null
      xmllint --noout "$dir/ranks.svg"
      grep -q "last to arrive: rank 2" "$dir/ranks.svg"
      grep -q "ranks aligned: 4 captures" "$dir/ranks.svg"
      grep -q ">rank 3 " "$dir/ranks.svg"
      # The traffic per rank pair: every all-reduce puts its ring-model bytes on each rank's
      # link to the next (4 links of the 16 cells), the view parses.
      links=$("$cli" stats "${files[@]}" --by comm --format json | python3 -c '
import json, sys
c = json.load(sys.stdin)["communicators"][0]
n = c["nranks"]
print(sum(1 for f in range(n) for t in range(n) if c["ring_model_bytes"][f * n + t] > 0 and t == (f + 1) % n), n)')
      [[ $links == "4 4" ]] || { echo "FAIL: stats --by comm: ring links $links, expected 4 of 4 ranks"; exit 1; }
      "$cli" render "${files[@]}" --view comm -o "$dir/comm.svg" 2>/dev/null
      xmllint --noout "$dir/comm.svg"
      grep -q "collectives per link (ring model)" "$dir/comm.svg"
      # With the machine's topology (nvidia-smi topo -m, or NCCL's topology XML), the GPUs and
      # their links; a file that is neither is refused with exit 2, a cut XML with its line.
      fixtures="$(cd "$(dirname "$0")/../../fixtures/topology" && pwd)"
      "$cli" render "${files[@]}" --view comm --topology "$fixtures/dgx_4gpu.txt" -o "$dir/topo.svg" 2>/dev/null
      xmllint --noout "$dir/topo.svg"
      grep -q ">GPU3<" "$dir/topo.svg" && grep -q "NV18 " "$dir/topo.svg" || { echo "FAIL: --topology drew no GPU links"; exit 1; }
      "$cli" render "${files[@]}" --view comm --topology "$fixtures/dgx_h100.xml" -o "$dir/topo_xml.svg" 2>/dev/null
      xmllint --noout "$dir/topo_xml.svg"
      grep -q ">GPU7<" "$dir/topo_xml.svg" && grep -q "NV18 " "$dir/topo_xml.svg" ||
        { echo "FAIL: --topology with NCCL's XML drew no GPU links"; exit 1; }
      rc=0
      "$cli" render "${files[@]}" --view comm --topology "$0" -o "$dir/bad.svg" 2>/dev/null || rc=$?
      [[ $rc == 2 ]] || { echo "FAIL: --topology with a script exited $rc, not 2"; exit 1; }
      head -c 2000 "$fixtures/dgx_h100.xml" > "$dir/cut.xml"
      rc=0
      "$cli" render "${files[@]}" --view comm --topology "$dir/cut.xml" -o "$dir/bad.svg" 2>"$dir/cut.err" || rc=$?
      [[ $rc == 2 ]] && grep -q "cut.xml: line [0-9]*: not well-formed XML" "$dir/cut.err" ||
        { echo "FAIL: --topology with a cut XML exited $rc: $(cat "$dir/cut.err")"; exit 1; }
    fi
    ;;
  twin)
    # The four ranks are processes on a shared machine: when something else takes a core, a
    # rank really does arrive late (seen: rank 3 last at 21 of 30 collectives, a median 56 us
    # late, in a clean run; here under a parallel build: last at 19 of 30, 293 us late with
    # 639 us of jitter). Whether that is named is the noise-aware rule's call, tested on such
    # numbers in tests/unit/ranks/collectives_test.cpp. This test checks only what holds at
    # any load: the collectives all matched, and the work is spread (no busy imbalance, which
    # is GPU time and so does not depend on host scheduling).
    LD_PRELOAD=$hook GPUHOOK_OUTPUT=$dir/rank%r.gpuh "$example" --ranks 4 --steps $steps --slow-rank 2 --extra-us $extra_us --fixed >/dev/null
    "$check" --min-collectives $((steps - 2)) "$dir"/rank{0,1,2,3}.gpuh
    "$cli" diagnose "$dir"/rank{0,1,2,3}.gpuh > "$dir/diagnose.txt" || true
    if grep -q "\[imbalance\]" "$dir/diagnose.txt"; then
      echo "FAIL: diagnose found imbalance in the balanced twin"; cat "$dir/diagnose.txt"; exit 1
    fi
    ;;
  hosts)
    # Without a way for the simulated NCCL to tell the simulated runtime when its kernel ends,
    # each rank's collective ends whenever its thread wakes (hundreds of microseconds apart on
    # a loaded machine): that measures the machine, not the alignment. See
    # tests/sim/nccl/README.md, "Kernel ends".
    nm -D "$sim/libcudart.so.13" > "$dir/symbols.txt" 2>/dev/null || true
    if ! grep -q gpuhook_sim_kernel_end_at "$dir/symbols.txt"; then
      echo "SKIPPED: the simulated runtime has no gpuhook_sim_kernel_end_at"
      exit 77
    fi
    # Started rank by rank, torchrun-style, so each rank gets its own test-only host settings.
    pids=()
    for r in 0 1 2 3; do
      env_extra=()
      if [[ $r == 1 ]]; then env_extra=(GPUHOOK_TEST_HOST=hostb GPUHOOK_TEST_BOOT_ID=boot-b GPUHOOK_TEST_CLOCK_OFFSET_NS=5000000); fi
      if [[ $r == 3 ]]; then env_extra=(GPUHOOK_TEST_HOST=hostc GPUHOOK_TEST_BOOT_ID=boot-c GPUHOOK_TEST_CLOCK_OFFSET_NS=-5000000); fi
      env "${env_extra[@]}" RANK=$r LOCAL_RANK=$r WORLD_SIZE=4 ALLREDUCE_TRAIN_ID_FILE=$dir/nccl.id \
        LD_PRELOAD=$hook GPUHOOK_OUTPUT=$dir/rank%r.gpuh "$example" --ranks 4 --steps $steps --slow-rank 2 \
        --extra-us $extra_us >/dev/null &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    # Offsets map each capture onto rank 0's clock: minus the injected offset.
    "$check" --min-collectives $((steps - 2)) --tolerance-ns 20000 \
      --expect-offset 1:-5000000 --expect-offset 2:0 --expect-offset 3:5000000 "$dir"/rank{0,1,2,3}.gpuh
    # Rank 1's clock reads 5 ms ahead: on the captures' own clocks it would arrive last at every
    # collective. The scan puts the ranks on one clock from the collectives it read.
    "$cli" diagnose "$dir"/rank{0,1,2,3}.gpuh > "$dir/diagnose.txt" || true
    grep -q "rank 2 arrived last" "$dir/diagnose.txt" ||
      { echo "FAIL: diagnose of the ranks on three hosts does not name rank 2"; cat "$dir/diagnose.txt"; exit 1; }
    same_diagnosis "$dir"/rank{0,1,2,3}.gpuh
    same_diagnosis "$dir"/rank{0,1,2,3}.gpuh --from 10ms --to 40ms
    # The collectives' table on one clock: on their own clocks rank 1 would arrive 5 ms late and
    # rank 3 5 ms early at every all-reduce.
    same_collectives "$dir"/rank{0,1,2,3}.gpuh
    same_collectives "$dir"/rank{0,1,2,3}.gpuh --from 10ms --to 40ms
    same_memory "$dir"/rank{0,1,2,3}.gpuh
    same_metrics "$dir"/rank{0,1,2,3}.gpuh
    ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
