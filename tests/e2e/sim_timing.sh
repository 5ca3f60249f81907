# Sourced by the simulator's timing tests (the span a model predicts against the one measured,
# a bubble share under a threshold, a straggler against the ranks' arrival jitter). The
# simulator's stream workers are threads that the launching thread wakes for every operation;
# where a wake-up round trip costs far more than on a usual machine, the spans measure the
# machine, not the schedule. Measured: a paravirtualised 2-core VM 17-26 us (the prediction
# and 1F1B tests then missed in every attempt, and the straggler's 400 us stood within twice
# the ranks' 182 us jitter), a usual machine a few.
sim_slow_wake_us=15

# The round trip in microseconds (tests/support/thread_wake).
sim_wake_us() {
  "$1" || { echo "FAIL: $1 did not run" >&2; exit 1; }
}

# True where a round trip takes over sim_slow_wake_us.
sim_wakes_slowly() {  # sim_wakes_slowly WAKE_US
  awk -v w="$1" -v max="$sim_slow_wake_us" 'BEGIN { exit !(w > max) }'
}

# Skips the test (77), saying so, where wake-ups are slow.
sim_timing_or_skip() {  # sim_timing_or_skip THREAD_WAKE_BIN
  local wake
  wake=$(sim_wake_us "$1")
  if sim_wakes_slowly "$wake"; then
    echo "SKIP: a thread wake-up round trip takes $wake us here (over $sim_slow_wake_us us): the simulator's spans would measure the machine"
    exit 77
  fi
  echo "thread wake-up round trip: $wake us"
}
