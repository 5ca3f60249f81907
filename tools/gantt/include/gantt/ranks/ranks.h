// Many ranks: cross-capture clock alignment, collectives matched across ranks, stragglers,
// busy-time imbalance and collective bandwidth.
//
// Why alignment needs the collectives: two captures from one boot share CLOCK_MONOTONIC_RAW
// and need no shift, but captures from different hosts only share CLOCK_REALTIME, which
// NTP keeps within milliseconds at best. A collective (communicator id + sequence number)
// ends at nearly the same instant on every rank, so the end times of many collectives pin
// the per-host offsets down to the spread of those ends (microseconds).
//
// Everything here is a pure function over plain inputs (unit-testable with synthetic
// numbers); the *_from_model adapters fill those inputs from a loaded gantt::Model.
//
// API stability: fields and functions are only ever added, never changed or removed.
//
// One header per concept: gantt/ranks/alignment.h, gantt/ranks/collectives.h and
// gantt/ranks/merge.h. This one includes the three for code written against it.
#pragma once

#include "gantt/ranks/alignment.h"
#include "gantt/ranks/collectives.h"
#include "gantt/ranks/merge.h"
