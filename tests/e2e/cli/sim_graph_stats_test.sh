#!/usr/bin/env bash
# stats --by graph scanned (analysis/job_scan.h scan_graph_launches: one scan of each capture
# for its graph launches beside the streamed summary) against the same captures loaded whole,
# on the simulator's graph examples: graphs --fixed (one graph per step), graph_replay,
# graph_dag, and two of them as one job, with and without filters and in every format.
# --max-memory 1K refuses any load, so a scanned report is what it compares. graph_host_fn's
# host functions are joined on the whole capture: it must load (refused under 1K), and say so.
#   sim_graph_stats_test.sh SIM_LIB_DIR HOOK_LIB GANTT_CLI GRAPHS GRAPH_REPLAY GRAPH_DAG GRAPH_HOST_FN
set -u
sim_lib=$1 hook=$2 cli=$3 graphs=$4 graph_replay=$5 graph_dag=$6 graph_host_fn=$7
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH=$sim_lib GPUHOOK_LIB=$hook GPUHOOK_QUIET=1
fails=0
record() {  # record OUT PROGRAM ARGS...
  local out=$1
  shift
  "$cli" record -q -o "$work/$out" -- "$@" > /dev/null 2> "$work/$out.err" || { echo "FAIL: record $*: $(cat "$work/$out.err")"; exit 2; }
}
record gf.gpuh "$graphs" --size 1024 --iterations 20 --fixed
record grp.gpuh "$graph_replay"
record gd.gpuh "$graph_dag"
record ghf.gpuh "$graph_host_fn"
# The graphs must be there for the comparison to mean anything: 20 launches of one graph.
"$cli" stats "$work/gf.gpuh" --by graph --format csv > "$work/gf.csv" 2> /dev/null
grep -q '^graph 1,20,' "$work/gf.csv" || { echo "FAIL: graphs --fixed: no 20 launches of graph 1: $(cat "$work/gf.csv")"; exit 1; }
for set in "gf.gpuh" "grp.gpuh" "gd.gpuh" "gf.gpuh grp.gpuh gd.gpuh"; do
  for args in "" "--from 1ms" "--to 1ms" "--kernel layer" "--device 0" "--top 1" "--format json" "--format csv" "--format md"; do
    files=()
    for f in $set; do files+=("$work/$f"); done
    # shellcheck disable=SC2086  # the flags are words
    "$cli" stats "${files[@]}" --by graph $args --max-memory 1K > "$work/s.txt" 2> "$work/s.err"
    rs=$?
    # shellcheck disable=SC2086
    "$cli" stats "${files[@]}" --by graph $args --in-memory > "$work/l.txt" 2> "$work/l.err"
    rl=$?
    what="stats $set --by graph $args"
    if [[ $rs != "$rl" ]] || ! cmp -s "$work/s.txt" "$work/l.txt" || ! cmp -s "$work/s.err" "$work/l.err"; then
      echo "FAIL: $what: scanned (exit $rs) differs from --in-memory (exit $rl): $(diff "$work/s.txt" "$work/l.txt" | head -4) $(head -2 "$work/s.err")"
      fails=$((fails + 1))
    else
      echo "ok   $what"
    fi
  done
done
"$cli" stats "$work/ghf.gpuh" --by graph --max-memory 1K > /dev/null 2> "$work/h.err"
rh=$?
if [[ $rh != 2 ]] || ! grep -q "over --max-memory" "$work/h.err"; then
  echo "FAIL: graph_host_fn was not refused a load under 1K (exit $rh): $(cat "$work/h.err")"; fails=$((fails + 1))
else
  echo "ok   graph_host_fn loads"
fi
exit $((fails > 0))
