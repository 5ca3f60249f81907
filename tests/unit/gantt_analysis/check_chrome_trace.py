#!/usr/bin/env python3
"""Checks a Chrome trace JSON the way viewers read it: it parses, every "X" slice on a track
nests properly (viewers drop or mis-draw partial overlaps), every flow end has a start, every
async stage slice ("b"/"e", nested per id) ends after it began and closes what it opened, every
counter value is a number >= 0, and timestamps have at most three decimals (integer
nanoseconds). Prints counts; exit 1 on error."""
import json
import re
import sys
from collections import defaultdict
from decimal import Decimal

raw = open(sys.argv[1], encoding="utf-8").read()
doc = json.loads(raw)
events = doc["traceEvents"]
errors = []
for m in re.finditer(r'"(ts|dur)":(-?[0-9.eE+]+)', raw):
    if not re.fullmatch(r"-?[0-9]+(\.[0-9]{1,3})?", m.group(2)):
        errors.append("time not integer-exact: " + m.group(0))
tracks = defaultdict(list)
flows_s, flows_f = set(), set()
names = {}
async_open = defaultdict(list)  # (cat, id) -> stack of (name, ts)
async_slices = counters = 0
for e in events:
    ph = e["ph"]
    if ph == "X":
        ts, dur = Decimal(str(e["ts"])), Decimal(str(e["dur"]))
        if ts < 0 or dur < 0:
            errors.append("negative time: %r" % e)
        tracks[(e["pid"], e["tid"])].append((ts, ts + dur, e["name"]))
    elif ph == "s":
        flows_s.add(e["id"])
    elif ph == "f":
        flows_f.add(e["id"])
    elif ph == "b":
        async_open[(e["cat"], e["id"])].append((e["name"], Decimal(str(e["ts"]))))
    elif ph == "e":
        stack = async_open[(e["cat"], e["id"])]
        if not stack or stack[-1][0] != e["name"] or stack[-1][1] > Decimal(str(e["ts"])):
            errors.append("async end without its begin, or before it: %r" % e)
        else:
            stack.pop()
            async_slices += 1
    elif ph == "C":
        counters += 1
        if any(not isinstance(v, (int, float)) or v < 0 for v in e["args"].values()):
            errors.append("counter value not a number >= 0: %r" % e)
    elif ph == "M" and e["name"] == "thread_name":
        names[(e["pid"], e["tid"])] = e["args"]["name"]
for key, slices in tracks.items():
    slices.sort(key=lambda s: (s[0], -s[1]))
    stack = []
    for s, t, n in slices:
        while stack and stack[-1] <= s:
            stack.pop()
        if stack and t > stack[-1]:
            errors.append("overlap without nesting on %s: %r" % (names.get(key, key), n))
        stack.append(t)
    if key not in names:
        errors.append("track without a name: %r" % (key,))
if any(async_open.values()):
    errors.append("async slices never ended: %d" % sum(len(v) for v in async_open.values()))
if flows_f - flows_s:
    errors.append("flow ends without starts: %d" % len(flows_f - flows_s))
print("slices=%d tracks=%d flows=%d async=%d counters=%d" % (sum(len(v) for v in tracks.values()), len(tracks),
                                                             len(flows_s), async_slices, counters))
for e in errors[:20]:
    print("ERROR", e)
sys.exit(1 if errors else 0)
