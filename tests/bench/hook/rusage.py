#!/usr/bin/env python3
"""rusage.py [--stderr FILE] [VAR=VALUE...] -- CMD...: runs CMD (its environment plus the assignments, so
LD_PRELOAD reaches the program and not this script) and prints
"cpu_seconds max_rss_kib exit_code" for CMD alone."""
import os
import resource
import subprocess
import sys

args = sys.argv[1:]
stderr = subprocess.DEVNULL
if args and args[0] == "--stderr":
    args.pop(0)
    stderr = open(args.pop(0), "a")
env = dict(os.environ)
while args and args[0] != "--":
    key, value = args.pop(0).split("=", 1)
    env[key] = value
args.pop(0)
done = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=stderr, env=env)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{usage.ru_utime + usage.ru_stime:.4f} {usage.ru_maxrss} {done.returncode}")
