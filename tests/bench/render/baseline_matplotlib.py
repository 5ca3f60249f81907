#!/usr/bin/env python3
"""Baseline (b): a competent matplotlib Gantt chart: one broken_barh per stream and stage
with all of that stream's spans at once (vectorised with numpy), then savefig to a
1920-pixel PNG. This is what a careful engineer writes before reaching for a tool.

baseline_matplotlib.py EVENTS.csv OUT.png
"""
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

df = pd.read_csv(sys.argv[1], usecols=["stream", "launch_ns", "queued_ns", "start_ns", "end_ns"])
t0 = df["start_ns"].min()
streams = sorted(df["stream"].unique())
fig, ax = plt.subplots(figsize=(19.2, 1 + len(streams)), dpi=100)
for i, (stream, g) in enumerate(df.groupby("stream", sort=True)):
    y = i * 10
    launch = (g["launch_ns"].to_numpy(np.float64) - t0) / 1e3
    queued = (g["queued_ns"].to_numpy(np.float64) - t0) / 1e3
    start = (g["start_ns"].to_numpy(np.float64) - t0) / 1e3
    end = (g["end_ns"].to_numpy(np.float64) - t0) / 1e3
    ax.broken_barh(list(zip(launch, queued - launch)), (y, 2), facecolors="grey")
    ax.broken_barh(list(zip(queued, start - queued)), (y + 2, 2), facecolors="lightblue")
    ax.broken_barh(list(zip(start, end - start)), (y + 4, 5), facecolors="tab:blue")
ax.set_yticks([i * 10 + 5 for i in range(len(streams))])
ax.set_yticklabels(["stream %d" % s for s in streams])
ax.set_xlabel("time (us)")
fig.savefig(sys.argv[2])
