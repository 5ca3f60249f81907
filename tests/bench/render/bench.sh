#!/usr/bin/env bash
# Render benchmarks: gantt-cli on 1,000,000 kernel events, and the matplotlib baselines on
# the same events exported as CSV. Prints "| figure | measured | goal | pass/miss |" rows on
# stdout; details on stderr. Run by scripts/bench.sh, or alone:
#   tests/bench/render/bench.sh BUILD_DIR
# Times are wall seconds and CPU (user+sys) seconds of the whole process, from
# /usr/bin/time; memory is the process's peak RSS. The machine is shared: when it is loaded,
# wall times grow and the CPU time is the fairer figure; both are printed and both judged.
# Everything here runs on the CPU only: there is no GPU figure in this file.
set -euo pipefail
build=${1:?usage: bench.sh BUILD_DIR}
here="$(cd "$(dirname "$0")" && pwd)"
cli="$build/tools/gantt-cli/gantt-cli"
gen="$build/tests/e2e/render/gantt_fixture_gen"
[ -x "$cli" ] && [ -x "$gen" ] || { echo "bench render: build gantt-cli and gantt_fixture_gen first" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The baselines need Debian's matplotlib and pandas; installed here, for benches only, and
# run with Debian's python3 (a pyenv or venv python3 on PATH would not see them).
py=/usr/bin/python3
[ -x "$py" ] || py=python3
if ! "$py" -c "import matplotlib, pandas" 2>/dev/null; then
  echo "bench render: installing python3-matplotlib python3-pandas" >&2
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get install -y -qq --no-install-recommends python3-matplotlib python3-pandas >/dev/null
fi

# measure NAME CMD...: runs once, sets wall_s, cpu_s, rss_kb.
measure() {
  local name=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$work/time.txt" "$@" >/dev/null 2>"$work/$name.err" || {
    echo "bench render: $name failed:" >&2; cat "$work/$name.err" >&2; exit 1; }
  read -r wall_s user_s sys_s rss_kb < "$work/time.txt"
  cpu_s=$(python3 -c "print(round($user_s + $sys_s, 2))")
  echo "bench render: $name: wall ${wall_s} s, cpu ${cpu_s} s, peak RSS $((rss_kb / 1024)) MiB" >&2
}
row() { echo "| $1 | $2 | $3 | $4 |"; }
verdict() { python3 -c "import sys; print('pass' if $1 else 'miss')"; }

n=1000000
"$gen" big "$work/1m.gpuh" $n
"$gen" big "$work/100k.gpuh" 100000
"$gen" big "$work/3k.gpuh" 3000

# gantt-cli: best wall of three runs (the first also warms the page cache).
best_wall=999; best_cpu=999; rss=0
for _ in 1 2 3; do
  measure render_1m "$cli" render "$work/1m.gpuh" -o "$work/1m.png"
  best_wall=$(python3 -c "print(min($best_wall, $wall_s))")
  best_cpu=$(python3 -c "print(min($best_cpu, $cpu_s))")
  rss=$rss_kb
done
measure render_empty "$cli" render "$work/3k.gpuh" --kernel '^$' -o "$work/none.png"
base_kb=$rss_kb
per_event=$(python3 -c "print(round($rss * 1024 / $n))")
per_event_net=$(python3 -c "print(round(($rss - $base_kb) * 1024 / $n))")
# Issue 43 tightened this from 2 s to 1 s.
row "gantt-cli 1M kernels: load + render 1920 px PNG (wall / cpu, best of 3)" "${best_wall} s / ${best_cpu} s" "≤ 1 s" \
    "$(verdict "$best_wall <= 1") / $(verdict "$best_cpu <= 1")"
row "gantt-cli 1M kernels: peak memory per event (gross / net of a no-event run)" \
    "${per_event} B / ${per_event_net} B ($((rss / 1024)) MiB)" "≤ 200 B" "$(verdict "$per_event <= 200")"
ours_1m_wall=$best_wall; ours_1m_cpu=$best_cpu; ours_1m_rss=$rss

measure render_3k "$cli" render "$work/3k.gpuh" -o "$work/3k.png"
ours_3k_wall=$wall_s; ours_3k_cpu=$cpu_s
# 100k takes a fifth of a second: best of three, as at 1M, so one slow start of a shared
# machine does not decide issue 43's 100x row below.
ours_100k_wall=999; ours_100k_cpu=999
for _ in 1 2 3; do
  measure render_100k "$cli" render "$work/100k.gpuh" -o "$work/100k.png"
  ours_100k_wall=$(python3 -c "print(min($ours_100k_wall, $wall_s))")
  ours_100k_cpu=$(python3 -c "print(min($ours_100k_cpu, $cpu_s))")
done

# The baselines draw GPU operations, one row each, as the CSV had them when they were
# written; since 809efc4 it also has a row per host API call and NVTX range, with no stream
# (pandas reads NaN, and both baselines failed on it). Those rows are left out here, before
# the timing: the stream is the third column, ahead of the first quoted name.
for size in 3k 100k 1m; do
  "$cli" export "$work/$size.gpuh" --format csv -o "$work/$size.all.csv" 2>/dev/null
  awk -F, 'NR == 1 || $3 != ""' "$work/$size.all.csv" > "$work/$size.csv"
  rm "$work/$size.all.csv"
done

# (a) the seed tool's code, 3,000 events only (it grows faster than linearly).
measure naive_3k "$py" "$here/baseline_naive.py" "$work/3k.csv" "$work/naive.png"
naive_wall=$wall_s; naive_cpu=$cpu_s
row "(a) seed tool (iterrows, 3 broken_barh/event), 3k events" "${naive_wall} s wall, ${naive_cpu} s cpu, $((rss_kb / 1024)) MiB" "—" "—"
# Same events: whole-process times of both on the 3k capture. Per event: (a)'s time per
# event at 3k against ours per event at 1M (its cost grows faster than linearly, so this
# understates the gap at larger sizes).
ratio_same=$(python3 -c "print(round($naive_wall / max($ours_3k_wall, 0.01)))")
ratio_same_cpu=$(python3 -c "print(round($naive_cpu / max($ours_3k_cpu, 0.01)))")
ratio_per_event=$(python3 -c "print(round(($naive_wall / 3000) / ($ours_1m_wall / $n)))")
ratio_per_event_cpu=$(python3 -c "print(round(($naive_cpu / 3000) / ($ours_1m_cpu / $n)))")
row "gantt-cli vs (a), same 3k events (wall / cpu)" "${ratio_same}× / ${ratio_same_cpu}× (ours ${ours_3k_wall} s / ${ours_3k_cpu} s)" "≥ 1000×" \
    "$(verdict "$ratio_same >= 1000") / $(verdict "$ratio_same_cpu >= 1000")"
row "gantt-cli vs (a), per event ((a) at 3k vs ours at 1M; wall / cpu)" "${ratio_per_event}× / ${ratio_per_event_cpu}×" "≥ 1000×" \
    "$(verdict "$ratio_per_event >= 1000") / $(verdict "$ratio_per_event_cpu >= 1000")"

# (b) competent matplotlib, 100k and 1M events.
measure mpl_100k "$py" "$here/baseline_matplotlib.py" "$work/100k.csv" "$work/mpl100k.png"
row "(b) matplotlib, one broken_barh per stream & stage, 100k events" "${wall_s} s wall, ${cpu_s} s cpu, $((rss_kb / 1024)) MiB" "—" "—"
ratio_100k=$(python3 -c "print(round($wall_s / max($ours_100k_wall, 0.01)))")
ratio_100k_cpu=$(python3 -c "print(round($cpu_s / max($ours_100k_cpu, 0.01)))")
row "gantt-cli vs (b) at 100k events to PNG, same run (issue 43; wall / cpu)" \
    "${ratio_100k}× / ${ratio_100k_cpu}× (ours ${ours_100k_wall} s / ${ours_100k_cpu} s, best of 3)" "≥ 100×" \
    "$(verdict "$ratio_100k >= 100") / $(verdict "$ratio_100k_cpu >= 100")"
measure mpl_1m "$py" "$here/baseline_matplotlib.py" "$work/1m.csv" "$work/mpl1m.png"
row "(b) matplotlib, 1M events" "${wall_s} s, cpu ${cpu_s} s, $((rss_kb / 1024)) MiB" "—" "—"
speed=$(python3 -c "print(round($wall_s / $ours_1m_wall, 1))")
speed_cpu=$(python3 -c "print(round($cpu_s / $ours_1m_cpu, 1))")
mem=$(python3 -c "print(round($rss_kb / $ours_1m_rss, 1))")
row "gantt-cli vs (b) at 1M: speed (wall / cpu)" "${speed}× / ${speed_cpu}×" "≥ 40×" "$(verdict "$speed >= 40")"
row "gantt-cli vs (b) at 1M: memory" "1/${mem} of (b)" "≤ 1/10" "$(verdict "$mem >= 10")"
