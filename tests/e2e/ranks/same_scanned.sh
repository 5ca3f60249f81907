# Sourced by run_ranks.sh and run_pipeline.sh, which set $cli and $dir.
# same_scanned BY FORMATS ARGS...: `stats ARGS --by BY` scans the captures (--max-memory 1K
# refuses a load) and says what --in-memory says, table and stderr, in each of FORMATS
# (comma-separated). The scanned table is left in $dir/scanned.txt (the last format's).
same_scanned() {
  local by=$1 formats=$2 format
  shift 2
  for format in ${formats//,/ }; do
    "$cli" stats "$@" --by "$by" --format "$format" --max-memory 1K > "$dir/scanned.txt" 2> "$dir/scanned.err" ||
      { echo "FAIL: stats --by $by $* was not scanned: $(cat "$dir/scanned.err")"; exit 1; }
    "$cli" stats "$@" --by "$by" --format "$format" --in-memory > "$dir/loaded.txt" 2> "$dir/loaded.err" || true
    if ! cmp -s "$dir/scanned.txt" "$dir/loaded.txt" || ! cmp -s "$dir/scanned.err" "$dir/loaded.err"; then
      echo "FAIL: stats --by $by --format $format $* scanned differs from --in-memory"
      diff "$dir/scanned.txt" "$dir/loaded.txt" | head -20; diff "$dir/scanned.err" "$dir/loaded.err"; exit 1
    fi
  done
}
# same_diagnosed FORMATS ARGS...: `diagnose ARGS` scans the captures (under --max-memory 1K)
# and reports what --in-memory reports, stdout, stderr and exit code, in each of FORMATS.
same_diagnosed() {
  local formats=$1 format scanned loaded
  shift
  for format in ${formats//,/ }; do
    scanned=0 loaded=0
    "$cli" diagnose "$@" --format "$format" --max-memory 1K > "$dir/scanned.txt" 2> "$dir/scanned.err" || scanned=$?
    if grep -q "would take about" "$dir/scanned.err"; then
      echo "FAIL: diagnose $* was not scanned: $(cat "$dir/scanned.err")"; exit 1
    fi
    "$cli" diagnose "$@" --format "$format" --in-memory > "$dir/loaded.txt" 2> "$dir/loaded.err" || loaded=$?
    if ! cmp -s "$dir/scanned.txt" "$dir/loaded.txt" || ! cmp -s "$dir/scanned.err" "$dir/loaded.err" || [ $scanned != $loaded ]; then
      echo "FAIL: diagnose --format $format $* scanned differs from --in-memory (exit $scanned, $loaded)"
      diff "$dir/scanned.txt" "$dir/loaded.txt" | head -20; diff "$dir/scanned.err" "$dir/loaded.err"; exit 1
    fi
  done
}
# same_view VIEW FILES...: render --view VIEW scans the files (under --max-memory 1K, where a
# load is refused) and draws, byte for byte, what --in-memory draws, saying the same on stderr.
same_view() {
  local view=$1
  shift
  "$cli" render "$@" --view "$view" -o "$dir/scanned.svg" --max-memory 1K 2> "$dir/scanned.err" ||
    { echo "FAIL: render --view $view $* was not scanned: $(cat "$dir/scanned.err")"; exit 1; }
  "$cli" render "$@" --view "$view" -o "$dir/loaded.svg" --in-memory 2> "$dir/loaded.err" || true
  sed -i 's/loaded\.svg/scanned.svg/' "$dir/loaded.err"
  if ! cmp -s "$dir/scanned.svg" "$dir/loaded.svg" || ! cmp -s "$dir/scanned.err" "$dir/loaded.err"; then
    echo "FAIL: render --view $view $* scanned differs from --in-memory"
    diff "$dir/scanned.svg" "$dir/loaded.svg" | head -20; diff "$dir/scanned.err" "$dir/loaded.err"; exit 1
  fi
}
