# Sourced: pipeline_steps_ns GANTT_CLI CAPTURE...: the steps of pipeline_parallel in ns, the first
# stage_forward's start to the last stage_backward's end over the captures (before them the
# communicator and a barrier, which no pipeline change touches).
pipeline_steps_ns() {
  local cli=$1
  shift
  for f in "$@"; do "$cli" dump "$f" --kind kernel; done | awk '
    { for (i = 1; i <= NF; i++) { split($i, a, "="); v[a[1]] = a[2] }
      if (v["name"] ~ /stage_forward/ && (lo == "" || v["start_ns"] + 0 < lo)) lo = v["start_ns"] + 0
      if (v["name"] ~ /stage_backward/ && v["end_ns"] + 0 > hi) hi = v["end_ns"] + 0 }
    END { printf "%.0f\n", hi - lo }'
}
