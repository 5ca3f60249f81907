#!/usr/bin/env bash
# Small inputs that once cost minutes or gigabytes (issue 44, items 11-13): each case runs one
# subcommand under a 2 GiB address-space limit (a runaway dies instead of swapping), checks
# its peak RSS is at most 500 MB, and either answers (exit 0, or 1 for diagnose's findings) or
# is refused with exit 2 and a line that names the limit. ctest's TIMEOUT (5 s) is the time
# bound. Before the fixes: diagnose 72.8 s on 26,000 streams, render 72.2 s on 60,000, a
# 21 KB summary 2.36 GB, whatif 2.19 GB and 28 s on a 680 KB capture, a 1.1 GB Chrome trace
# from a 255 KB one.
#   costly_inputs_test.sh CASE GANTT_CLI MAKE_COSTLY SUMMARY_CORPUS
set -u
case_name=$1 cli=$2 gen=$3 corpus=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

# A sanitizer's runtime reserves terabytes of address space for its shadow memory at start: an
# instrumented build runs without the address-space limit (the RSS bound and the time bound
# still hold).
vm_kib=$((2 * 1024 * 1024))
if ldd "$cli" 2> /dev/null | grep -Eq 'lib(a|t)san'; then vm_kib=unlimited; fi

# run EXPECTED_EXITS ARGS...: the subcommand under the limits; stdout, stderr and the peak
# RSS (KiB) left in out.txt, err.txt and rss.txt.
run() {
  local want=$1
  shift
  (ulimit -v "$vm_kib"; exec /usr/bin/time -f "%M" -o rss.txt "$cli" "$@" > out.txt 2> err.txt)
  local rc=$?
  [[ " $want " == *" $rc "* ]] || bad "$*: exit $rc, not $want: $(tail -c 600 err.txt)"
  local kib
  kib=$(tail -1 rss.txt)
  [[ $kib =~ ^[0-9]+$ ]] && ((kib <= 500 * 1000)) || bad "$*: peak RSS ${kib} KiB, over 500 MB"
  echo "$*: exit $rc, peak ${kib} KiB"
  return 0
}
names() { grep -q -- "$1" err.txt || bad "the refusal does not name $1: $(cat err.txt)"; }

case $case_name in
  diagnose_streams)  # 26,000 streams, one kernel each: 37 KB
    "$gen" streams s.gpuh 26000 || exit 1
    run "0 1" diagnose s.gpuh
    grep -q "priority-inversion" out.txt || bad "diagnose did not report its rules: $(head -3 out.txt)"
    run "0 1" diagnose s.gpuh --in-memory --format json
    ;;
  render_streams)  # 60,000 streams: 85 KB
    "$gen" streams s.gpuh 60000 || exit 1
    run 0 render s.gpuh -o chart.svg
    [[ -s chart.svg ]] || bad "render wrote no chart"
    ;;
  summary_unknown_fields)  # 21 KB of zstd around 250 MB of fields no version knows
    for args in "stats" "diagnose" "diff X"; do
      # shellcheck disable=SC2086  # the arguments are words
      run 2 ${args/X/$corpus/unknown_fields.gsum} "$corpus/unknown_fields.gsum"
      names "--max-records-per-byte"
    done
    run 2 stats "$corpus/empty_groups.gsum"
    names "--max-records-per-byte"
    # A summary as gantt-cli writes it reads as before.
    run 0 stats "$corpus/streams.gsum"
    ;;
  whatif_dense)  # 2.2 M launches and kernels at 6.5 records a byte: 680 KB
    "$gen" repeat d.gpuh 2200000 12 || exit 1
    run 2 whatif d.gpuh --change 'scale=.*:0.9' -o predicted.gpuh
    names "--max-records-per-byte"
    [[ ! -e predicted.gpuh ]] || bad "whatif wrote a prediction it refused"
    ;;
  export_dense)  # 400,000 launches and kernels: 125 KB, once a 540 MB Chrome trace (the bench
    # table has the 255 KB one of 1.1 GB; loading it takes most of this test's 5 s on a busy machine)
    "$gen" repeat d.gpuh 400000 12 || exit 1
    run 2 export d.gpuh --format chrome -o out.json
    names "--max-output"
    [[ ! -e out.json ]] || bad "export left a cut Chrome trace"
    # Within a limit given, it writes.
    "$gen" repeat small.gpuh 2000 || exit 1
    run 0 export small.gpuh --format chrome -o small.json --max-output 100M
    [[ -s small.json ]] || bad "a small export was not written"
    ;;
  *) echo "unknown case $case_name"; exit 2 ;;
esac
if ((fails)); then
  echo "$fails failure(s)"
  exit 1
fi
echo "ok: $case_name"
