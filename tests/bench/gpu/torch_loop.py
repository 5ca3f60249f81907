"""A launch-bound PyTorch loop for scripts/gpu-check.sh: many tiny kernels on one tensor.

    python3 torch_loop.py --launches 100000 --mode plain|torch_profiler

Prints the loop's wall time in nanoseconds on the last line (CUDA initialisation and warm-up
excluded, a final synchronisation included), so the three ways of running it compare the
cost per launch, not start-up.
"""
import argparse
import time

import torch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=100_000)
    ap.add_argument("--mode", choices=["plain", "torch_profiler"], default="plain")
    args = ap.parse_args()

    x = torch.zeros(256, device="cuda")
    for _ in range(100):
        x.add_(1.0)
    torch.cuda.synchronize()

    def loop() -> int:
        t0 = time.perf_counter_ns()
        for _ in range(args.launches):
            x.add_(1.0)
        torch.cuda.synchronize()
        return time.perf_counter_ns() - t0

    if args.mode == "torch_profiler":
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
            elapsed = loop()
    else:
        elapsed = loop()
    expected = 100 + args.launches
    assert float(x[0]) == float(expected), (float(x[0]), expected)
    print(elapsed)


if __name__ == "__main__":
    main()
