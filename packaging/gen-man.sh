#!/usr/bin/env bash
# Writes gantt-cli.1.gz and gantt-cli-SUB.1.gz from the --help texts: the man pages say what
# --help says, so they cannot drift from it.
#   gen-man.sh GANTT_CLI OUT_DIR VERSION
set -euo pipefail
cli=$1 out=$2 version=$3
mkdir -p "$out"
# roff: a backslash is \e; a line starting with . or ' would be a request.
roff() { sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"; }
page() {  # page NAME SUMMARY HELP_TEXT
  local name=$1 summary=$2 text=$3 upper
  upper=$(tr '[:lower:]' '[:upper:]' <<< "$name")
  {
    echo ".TH $upper 1 \"\" \"gpuhook $version\" \"User Commands\""
    echo ".SH NAME"
    echo "$name \\- $(roff <<< "$summary")"
    echo ".SH DESCRIPTION"
    echo ".nf"
    roff <<< "$text"
    echo ".fi"
    echo ".SH SEE ALSO"
    if [[ $name == gantt-cli ]]; then
      echo "gantt-cli-record(1), gantt-cli-render(1), gantt-cli-stats(1), gantt-cli-diff(1), gantt-cli-diagnose(1)"
    else
      echo "gantt-cli(1)"
    fi
  } | gzip -9n > "$out/$name.1.gz"
}
page gantt-cli "read gpuhook captures, draw them as Gantt charts, compare and diagnose them" "$("$cli" --help)"
for sub in record info dump render stats diff diagnose export merge jobs; do
  text=$("$cli" "$sub" --help)
  page "gantt-cli-$sub" "$(head -n 1 <<< "$text")" "$text"
done
