#!/usr/bin/env python3
"""Numbers for bench.sh from Google Benchmark JSON and rusage.py lines.
  bench_stats.py gbench FILE ITEMS   -> median manual time per item, ns
  bench_stats.py writer FILE [NAME]  -> "M records/s per CPU second" "M records/s of wall time"
  bench_stats.py sim PLAIN HOOKED N  -> "ns of CPU per kernel (least vs least)" "MiB of RSS added"
                                        "ns of CPU per kernel (median vs median)"
"""
import json
import statistics
import sys

SCALE_NS = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}

cmd = sys.argv[1]
if cmd == "gbench":
    data = json.load(open(sys.argv[2]))
    median = [b for b in data["benchmarks"] if b.get("aggregate_name") == "median"][0]
    print("%.1f" % (median["real_time"] * SCALE_NS[median["time_unit"]] / float(sys.argv[3])))
elif cmd == "writer":  # writer JSON [NAME]: the benchmark NAME (default: the first)
    runs = json.load(open(sys.argv[2]))["benchmarks"]
    b = [r for r in runs if len(sys.argv) < 4 or r["name"].startswith(sys.argv[3])][0]
    scale = SCALE_NS[b["time_unit"]] * 1e-9
    items = b["items_per_second"] * b["cpu_time"] * scale
    print("%.2f %.2f" % (b["items_per_second"] / 1e6, items / (b["real_time"] * scale) / 1e6))
elif cmd == "sim":
    plain = [line.split() for line in open(sys.argv[2])]
    hooked = [line.split() for line in open(sys.argv[3])]
    # CPU: least against least. On this shared machine a run's CPU time is inflated, never
    # deflated, by what else happens (interference, a run whose threads ping-pong): whole
    # runs came out 60% slower, hook or not, so medians of 7 moved by 1 us a kernel. The
    # fastest run of each side is the closest to its work. The medians go with it.
    n = int(sys.argv[4])
    cpu_min = min(float(x[0]) for x in hooked) - min(float(x[0]) for x in plain)
    cpu_med = statistics.median(float(x[0]) for x in hooked) - statistics.median(float(x[0]) for x in plain)
    rss = statistics.median(int(x[1]) for x in hooked) - statistics.median(int(x[1]) for x in plain)
    print("%.0f %.1f %.0f" % (cpu_min * 1e9 / n, rss / 1024, cpu_med * 1e9 / n))
elif cmd == "le":
    print(int(float(sys.argv[2]) <= float(sys.argv[3])))
elif cmd == "ge":
    print(int(float(sys.argv[2]) >= float(sys.argv[3])))
elif cmd == "sub":
    print("%.1f" % (float(sys.argv[2]) - float(sys.argv[3])))
