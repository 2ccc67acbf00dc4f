#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""SET throughput and server CPU per request with append-only files:
`percore kv --appendonly yes` beside redis-server --appendonly yes, the
same appendfsync, both writing in the same directory (same disk and file
system), under redis-benchmark -t set -c 50 -r 100000 at depths 1 and 16.
For each row (a mode and a depth) the two servers take turns for --reps
rounds, each on a fresh directory; the figures are medians, the ratios
kv's median over redis-server's from the same rounds. Server CPU is every
thread's (/proc/PID/task/*/schedstat) over the run, per request.

usage: scripts/kv_aof_bench.py [--percore PATH] [--dir DIR] [--reps N]
                               [--requests N] [--shards N]"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "kv"))
from echo_cpu import task_cpu_ns  # noqa: E402
from oracle import free_port, wait_listening  # noqa: E402


def start(kind, args, d, mode):
    port = free_port()
    if kind == "kv":
        cmd = [args.percore, "kv", "--port", str(port), "--shards", str(args.shards),
               "--appendonly", "yes", "--appendfsync", mode, "--dir", d, "--save", ""]
    else:
        cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "yes", "--appendfsync", mode, "--dir", d,
               "--aof-use-rdb-preamble", "yes"]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_listening(p, port, kind)
    return p, port


def run(kind, args, mode, depth):
    d = tempfile.mkdtemp(prefix="pc_aofbench_", dir=args.dir)
    p, port = start(kind, args, d, mode)
    try:
        c0 = task_cpu_ns(p.pid)
        out = subprocess.run(["redis-benchmark", "-p", str(port), "-t", "set", "-c", "50",
                              "-r", "100000", "-P", str(depth), "-n", str(args.requests),
                              "--csv", "-q"], capture_output=True, text=True, check=True).stdout
        cpu = task_cpu_ns(p.pid) - c0
    finally:
        p.terminate()
        p.wait()
        shutil.rmtree(d, ignore_errors=True)
    rps = float(re.search(r'"SET","([0-9.]+)"', out).group(1))
    return rps, cpu / 1000.0 / args.requests


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--percore", default="build/release/tools/percore/percore")
    ap.add_argument("--dir", default=None, help="where the files go (default: $TMPDIR)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--requests", type=int, default=200000)
    ap.add_argument("--shards", type=int, default=1)
    args = ap.parse_args()
    print("| row | kv req/s | redis req/s | ratio | kv CPU us/req | redis CPU us/req | ratio |")
    print("|---|---|---|---|---|---|---|")
    for mode in ("everysec", "always"):
        for depth in (16, 1):
            res = {"kv": [], "redis": []}
            for r in range(args.reps):
                order = ("kv", "redis") if r % 2 == 0 else ("redis", "kv")
                for kind in order:
                    res[kind].append(run(kind, args, mode, depth))
            med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v))
                   for k, v in res.items()}
            print("| SET/P%d/appendfsync:%s | %.0f | %.0f | %.2fx | %.2f | %.2f | %.2fx |" %
                  (depth, mode, med["kv"][0], med["redis"][0], med["kv"][0] / med["redis"][0],
                   med["kv"][1], med["redis"][1], med["kv"][1] / med["redis"][1]))
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
