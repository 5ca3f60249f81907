# bash completion for gantt-cli: subcommands, each subcommand's options (read from its
# --help, so they never drift), and capture/summary files.
_gantt_cli() {
  local cur=${COMP_WORDS[COMP_CWORD]}
  local subs="record info dump render stats diff diagnose export merge jobs help version"
  if ((COMP_CWORD == 1)); then
    mapfile -t COMPREPLY < <(compgen -W "$subs --help --version" -- "$cur")
    return
  fi
  local sub=${COMP_WORDS[1]}
  if [[ $sub == help ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$subs" -- "$cur")
    return
  fi
  if [[ $cur == -* ]]; then
    local opts
    opts=$("${COMP_WORDS[0]}" "$sub" --help 2>/dev/null | grep -oE -- '(^|[ ,])--?[A-Za-z][A-Za-z0-9-]*' | tr -d ' ,')
    mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
    return
  fi
  if [[ $sub == jobs ]]; then  # scheduler records: any file (sacct text, CSV)
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    return
  fi
  if [[ $sub == record ]]; then
    mapfile -t COMPREPLY < <(compgen -c -- "$cur")
    return
  fi
  mapfile -t COMPREPLY < <(compgen -f -X '!@(*.gpuh|*.gsum)' -- "$cur"; compgen -d -- "$cur")
}
complete -F _gantt_cli gantt-cli
