#!/usr/bin/env bash
# Every subcommand `gantt-cli --help` lists has its page, docs/SUB.md, and every option its
# `--help` prints (long and short forms) is named on that page: the pages are where options
# are explained at length, and an option added without a word there fails here.
#   docs_options_test.sh GANTT_CLI DOCS_DIR
set -u
source "$(dirname "$0")/help_options.sh"
cli=$1 docs=$2
fails=0
fail() { echo "FAIL: $1"; fails=$((fails + 1)); }

subs=$(help_subcommands "$cli")
[[ -n $subs ]] || { echo "FAIL: gantt-cli --help lists no subcommands"; exit 1; }
for sub in $subs; do
  page=$docs/$sub.md
  if [[ ! -f $page ]]; then
    fail "$sub: no page $page"
    continue
  fi
  opts=$(help_options "$cli" "$sub")
  [[ -n $opts ]] || fail "$sub: no options read from its --help"
  missing=()
  for opt in $opts; do
    # The option as a whole word: --max-memory does not count for --max.
    grep -qE -- "(^|[^A-Za-z0-9-])${opt}([^A-Za-z0-9-]|\$)" "$page" || missing+=("$opt")
  done
  if ((${#missing[@]})); then
    fail "$sub: $page does not document ${missing[*]}"
  else
    echo "ok   $sub: every option of its --help is on $page ($(wc -w <<< "$opts") names)"
  fi
done
((fails == 0)) || { echo "$fails failed"; exit 1; }
