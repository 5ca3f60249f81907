#!/usr/bin/env python3
"""Baseline (a): the seed tool's way of drawing a Gantt chart, kept as it was written:
pandas.read_csv, then three broken_barh calls per event inside an iterrows loop
(launch->queued grey, queued->start light blue, exec coloured), then savefig to PNG.
Each broken_barh call adds a collection to the axes, so the cost grows faster than
linearly with the event count: run it on a few thousand events only.

baseline_naive.py EVENTS.csv OUT.png
"""
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

df = pd.read_csv(sys.argv[1])
streams = sorted(df["stream"].unique())
row = {s: i for i, s in enumerate(streams)}
t0 = df["start_ns"].min()
fig, ax = plt.subplots(figsize=(19.2, 1 + len(streams)), dpi=100)
for _, ev in df.iterrows():
    y = row[ev["stream"]] * 10
    launch = (ev["launch_ns"] - t0) / 1e3
    queued = (ev["queued_ns"] - t0) / 1e3
    start = (ev["start_ns"] - t0) / 1e3
    end = (ev["end_ns"] - t0) / 1e3
    ax.broken_barh([(launch, queued - launch)], (y, 2), facecolors="grey")
    ax.broken_barh([(queued, start - queued)], (y + 2, 2), facecolors="lightblue")
    ax.broken_barh([(start, end - start)], (y + 4, 5), facecolors="tab:blue")
ax.set_yticks([row[s] * 10 + 5 for s in streams])
ax.set_yticklabels(["stream %d" % s for s in streams])
ax.set_xlabel("time (us)")
fig.savefig(sys.argv[2])
