#!/usr/bin/env bash
# Every subcommand, and stats with any -j, gives one answer on the captures readers once
# disagreed about (issue 44, items 14 and 15):
#   - a stale chunk index (entries inside other chunks, chunks left out, entries swapped): once
#     `stats` failed or reported half the capture by default, worked with -j 1, and `info`
#     said "integrity: ok". Now the reader checks the index against the chunks at open, reads
#     the chunks, and every subcommand says once that the index was wrong.
#   - an index with stale record counts: the same figures; `info` says where it is stale.
#   - a Header without format_version: once read by info, render and whatif and refused by
#     stats and diagnose as "no header", and whatif wrote a capture its own stats refused.
#     Now read everywhere with the header frame's version.
# Each capture is compared with the good capture it was made from, under the same file name.
#   readers_agree_test.sh GANTT_CLI MAKE_CAPTURE MAKE_READERS_AGREE
set -u
cli=$1 make=$2 agree=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$make" synth one.gpuh 20000 3 || { echo "FAIL: make_capture synth"; exit 1; }
"$agree" chunked one.gpuh good.gpuh || { echo "FAIL: make_readers_agree chunked"; exit 1; }
chunks=$("$cli" info good.gpuh | sed -n 's/.* \([0-9]*\) chunks.*/\1/p')
[[ ${chunks:-0} -ge 8 ]] || bad "the chunked capture has ${chunks:-?} chunks; the test needs several"

# run DIR NAME ARGS...: in DIR (where the capture is cap.gpuh), stdout, stderr and exit code
# in DIR/NAME.{out,err,rc}; a written file stays in DIR.
run() {
  local dir=$1 name=$2
  shift 2
  (cd "$dir" && "$cli" "$@" > "$name.out" 2> "$name.err"; echo $? > "$name.rc")
}

# Each subcommand on DIR/cap.gpuh. whatif's capture is read back by stats.
all() {
  local dir=$1
  run "$dir" info info cap.gpuh
  for j in 0 1 2 3; do run "$dir" "stats$j" stats cap.gpuh -j "$j"; done
  run "$dir" stats_whole stats cap.gpuh --in-memory
  run "$dir" stats_stream_j2 stats cap.gpuh --by stream --gaps 3 -j 2
  run "$dir" diagnose diagnose cap.gpuh
  run "$dir" render render cap.gpuh -o chart.svg
  rm -f "$dir/pinned.gpuh"
  run "$dir" whatif whatif cap.gpuh --change pin-copies -o pinned.gpuh
  run "$dir" whatif_stats stats pinned.gpuh
}

mkdir ref && cp good.gpuh ref/cap.gpuh && all ref
for f in stats1 stats2 stats3 stats_whole diagnose render whatif whatif_stats; do
  [[ $(cat "ref/$f.rc") == 0 || ($f == diagnose && $(cat ref/diagnose.rc) == 1) ]] ||
    bad "the good capture: $f exit $(cat "ref/$f.rc"): $(head -3 "ref/$f.err")"
done
[[ -s ref/stats0.out ]] || bad "the good capture: stats printed nothing"
grep -q "integrity:   ok$" ref/info.out || bad "the good capture: info: $(grep integrity ref/info.out)"

# same CASE DIR NOTE: DIR's outputs are the good capture's, stderr with NOTE (the one line the
# capture adds, which may be empty) on each subcommand that reads the capture through the
# reader's warnings.
same() {
  local case=$1 dir=$2 note=$3
  for f in stats0 stats1 stats2 stats3 stats_whole stats_stream_j2 diagnose render whatif whatif_stats; do
    [[ $(cat "$dir/$f.rc") == $(cat "ref/$f.rc") ]] ||
      bad "$case: $f exit $(cat "$dir/$f.rc"), the good capture's $(cat "ref/$f.rc"): $(head -3 "$dir/$f.err")"
    cmp -s "$dir/$f.out" "ref/$f.out" || bad "$case: $f stdout differs from the good capture's: $(diff "ref/$f.out" "$dir/$f.out" | head -4)"
    if [[ -n $note && $f != whatif* ]]; then  # whatif prints no reader warnings
      [[ $(grep -c -F "$note" "$dir/$f.err") == 1 ]] || bad "$case: $f does not say once \"$note\": $(head -3 "$dir/$f.err")"
      grep -v -F "$note" "$dir/$f.err" | cmp -s - "ref/$f.err" || bad "$case: $f stderr differs: $(head -3 "$dir/$f.err")"
    else
      cmp -s "$dir/$f.err" "ref/$f.err" || bad "$case: $f stderr differs: $(diff "ref/$f.err" "$dir/$f.err" | head -4)"
    fi
  done
  cmp -s "$dir/chart.svg" ref/chart.svg || bad "$case: render drew another chart"
}

# Item 14: the stale indexes.
for mode in stale-offsets stale-missing stale-swapped; do
  mkdir "$mode" && "$agree" "$mode" good.gpuh "$mode/cap.gpuh" || { bad "make_readers_agree $mode"; continue; }
  all "$mode"
  grep -q "integrity:   ok, but the chunk index does not match the file (.*); read without it" "$mode/info.out" ||
    bad "$mode: info does not say the index is wrong: $(grep integrity "$mode/info.out")"
  grep -q "index no" "$mode/info.out" || bad "$mode: info says the index is used: $(grep format "$mode/info.out")"
  same "$mode" "$mode" "cap.gpuh: the chunk index does not match the file"
done
mkdir stale-counts && "$agree" stale-counts good.gpuh stale-counts/cap.gpuh && all stale-counts &&
  same stale-counts stale-counts ""
grep -q "integrity:   ok, but the chunk index is stale: chunk 0 (byte [0-9]*) holds [0-9]* records, not the [0-9]* it says" \
  stale-counts/info.out || bad "stale-counts: info does not say where the index is stale: $(grep integrity stale-counts/info.out)"

# Item 15: the Header without format_version, against the same capture with it (one chunk).
mkdir one no-version && cp one.gpuh one/cap.gpuh && "$agree" no-version one.gpuh no-version/cap.gpuh ||
  bad "make_readers_agree no-version"
mv ref ref.chunked && mkdir ref && cp one.gpuh ref/cap.gpuh && all ref
all no-version
same no-version no-version ""
grep -q "integrity:   ok$" no-version/info.out || bad "no-version: info: $(grep integrity no-version/info.out)"
for f in stats0 diagnose whatif_stats; do
  grep -q "no header" "no-version/$f.err" && bad "no-version: $f calls the header missing: $(cat "no-version/$f.err")"
done

# A capture with no Header at all: whatif does not write what stats would refuse.
mkdir no-header && "$agree" no-header one.gpuh no-header/cap.gpuh || bad "make_readers_agree no-header"
run no-header stats stats cap.gpuh
[[ $(cat no-header/stats.rc) == 2 ]] && grep -q "no header" no-header/stats.err ||
  bad "no-header: stats exit $(cat no-header/stats.rc): $(cat no-header/stats.err)"
run no-header whatif whatif cap.gpuh --change pin-copies -o pinned.gpuh
[[ $(cat no-header/whatif.rc) == 2 ]] || bad "no-header: whatif exit $(cat no-header/whatif.rc), not 2"
grep -q "pinned.gpuh would not read back as a capture: it has no Header record" no-header/whatif.err ||
  bad "no-header: whatif does not say why: $(cat no-header/whatif.err)"
[[ ! -e no-header/pinned.gpuh ]] || bad "no-header: whatif left a capture stats refuses"

if [[ $fails == 0 ]]; then echo "PASS: readers agree on stale indexes and a Header without format_version"; fi
[[ $fails == 0 ]]
