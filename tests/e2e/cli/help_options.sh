# Sourced by the tests that hold the docs, man pages and completions to gantt-cli's --help.
# The subcommands `gantt-cli --help` lists, one a line.
help_subcommands() {
  "$1" --help | sed -n '/^Subcommands:/,$p' | awk 'NR > 1 && NF { print $1 }'
}
# Every option name `gantt-cli SUB --help` prints, long and short, one a line. Option lines
# are indented and start with a dash: "  -o,--output TEXT  ...".
help_options() {
  "$1" "$2" --help | grep -E '^ +-' | awk '{ print $1 }' | tr ',' '\n' | grep -E '^--?[A-Za-z]'
}
