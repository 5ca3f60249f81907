#!/usr/bin/env bash
# The man pages and the bash and zsh completions, made as the build makes them
# (`gantt-cli generate`, cmake/GpuhookPackaging.cmake), name every subcommand that
# `gantt-cli --help` lists and every option each subcommand's --help prints. The bash
# completion is run; zsh is not installed on CI, so its file is read.
#   completion_man_test.sh GANTT_CLI
set -u
source "$(dirname "$0")/help_options.sh"
cli=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
ok() { echo "ok   $1"; }
fail() { echo "FAIL: $1"; fails=$((fails + 1)); }

"$cli" generate man -o "$work" || fail "generate man exit $?"
"$cli" generate bash -o "$work/gantt-cli.bash" || fail "generate bash exit $?"
"$cli" generate zsh -o "$work/_gantt-cli" || fail "generate zsh exit $?"
bash -n "$work/gantt-cli.bash" || fail "the bash completion does not parse"

# What bash offers after WORDS..., the last one being completed.
complete_bash() {
  bash -c 'shopt -s extglob; source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _gantt_cli
           printf "%s\n" "${COMPREPLY[@]}"' _ "$work/gantt-cli.bash" gantt-cli "$@"
}

subs=$(help_subcommands "$cli")
[[ -n $subs ]] || fail "gantt-cli --help lists no subcommands"
offered=$(complete_bash "")
main_page=$(cat "$work/gantt-cli.1")
for sub in $subs; do
  grep -qx "$sub" <<< "$offered" || fail "bash does not offer the subcommand $sub"
  grep -q "^    '$sub:" "$work/_gantt-cli" || fail "zsh does not offer the subcommand $sub"
  grep -q "^\.B $sub\$" <<< "$main_page" || fail "gantt-cli(1) does not list $sub"
  page=$work/gantt-cli-$sub.1
  [[ -f $page ]] || { fail "no man page gantt-cli-$sub(1)"; continue; }
  opts=$(help_options "$cli" "$sub")
  bash_opts=$(complete_bash "$sub" "-")
  missing=()
  for opt in $opts; do
    grep -qx -- "$opt" <<< "$bash_opts" || missing+=("bash:$opt")
    grep -q -- "^        '$opt:" "$work/_gantt-cli" || missing+=("zsh:$opt")
    grep -q -- "\\\\fB$opt\\\\fR" "$page" || missing+=("man:$opt")
  done
  if ((${#missing[@]})); then
    fail "$sub: not offered or documented: ${missing[*]}"
  else
    ok "$sub: in gantt-cli(1), its man page and both completions, with its $(wc -w <<< "$opts") option names"
  fi
done

# Choices and file kinds, as a user meets them.
[[ $(complete_bash render --view fl) == flame ]] && ok "bash completes render --view's choices" ||
  fail "bash: render --view fl -> '$(complete_bash render --view fl)'"
[[ $(complete_bash help wha) == whatif ]] && ok "bash completes help's subcommand" || fail "bash: help wha"
mkdir -p "$work/files" && touch "$work/files/a.gpuh" "$work/files/a.txt"
got=$(cd "$work/files" && complete_bash stats "")
[[ $got == a.gpuh ]] && ok "bash offers captures to stats" || fail "bash: stats offers '$got'"
got=$(cd "$work/files" && complete_bash jobs "a.")
[[ $(wc -l <<< "$got") == 2 ]] && ok "bash offers any file to jobs" || fail "bash: jobs offers '$got'"
((fails == 0)) || { echo "$fails failed"; exit 1; }
