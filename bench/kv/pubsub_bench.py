#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PUBLISH throughput and delivery to 1, 10 and 100 subscribers:
`percore kv --shards N` beside redis-server, the same load
(kv_pubsub_load) against each in turn, repetitions interleaved; medians.
Server CPU (user + system, /proc/PID/stat) per delivered message.
--shards 0: kv's default count. --baseline PERCORE2: another build of
percore in the same interleaved run (rows "base"; ratio is kv / redis).
--rate R: publishers paced to R PUBLISHes per second in all, each message
stamped with when it was due (kv_pubsub_load's RATE): latency at one
offered load for every server, where unpaced it is the queue in front of
the slowest part (the load tool's one reader, for a server faster than it).
--subs: the subscriber counts (default 1,10,100).

usage: pubsub_bench.py PERCORE KV_PUBSUB_LOAD [--shards N] [--reps R]
                       [--msgs M] [--pubs P] [--depth D] [--size S]
                       [--rate R] [--subs 1,10,100] [--baseline PERCORE2]"""
import argparse
import os
import signal
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "kv"))
from oracle import KvServer, start_redis, process_cpu_s as cpu_s  # noqa: E402

def one(load, port, pid, subs, a):
    before = cpu_s(pid)
    out = subprocess.run([load, str(port), str(subs), str(a.pubs), str(a.msgs), str(a.depth),
                          str(a.size), str(a.rate)], capture_output=True, text=True, timeout=300)
    cpu = cpu_s(pid) - before
    if out.returncode:
        raise RuntimeError("load failed: %s %s" % (out.stdout, out.stderr))
    got = dict(kv.split("=") for kv in out.stdout.split())
    got = {k: float(v) for k, v in got.items()}
    got["cpu_us_per_delivery"] = cpu * 1e6 / (subs * a.pubs * a.msgs)
    got["cpu_us_per_publish"] = cpu * 1e6 / (a.pubs * a.msgs)
    return got


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("percore")
    ap.add_argument("load")
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--msgs", type=int, default=20000)
    ap.add_argument("--pubs", type=int, default=2)
    ap.add_argument("--depth", type=int, default=16)
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--rate", type=float, default=0)
    ap.add_argument("--subs", default="1,10,100")
    ap.add_argument("--baseline")
    a = ap.parse_args()
    keys = ["publishes_per_s", "deliveries_per_s", "p50_us", "p99_us", "cpu_us_per_delivery",
            "cpu_us_per_publish"]
    print("pubs=%d msgs=%d depth=%d size=%d shards=%d reps=%d rate=%s (medians)" % (
        a.pubs, a.msgs, a.depth, a.size, a.shards, a.reps, a.rate or "unpaced"))
    print("%-6s %-8s " % ("subs", "server") + " ".join("%14s" % k[:14] for k in keys))
    kvs = [("kv", a.percore)] + ([("base", a.baseline)] if a.baseline else [])
    for subs in [int(x) for x in a.subs.split(",")]:
        res = {"kv": [], "base": [], "redis": []}
        for _ in range(a.reps):
            for name, path in kvs:
                kv = KvServer(path, a.shards or None)
                try:
                    res[name].append(one(a.load, kv.port, kv.proc.pid, subs, a))
                finally:
                    kv.stop()
            proc, port = start_redis("redis-server")
            try:
                res["redis"].append(one(a.load, port, proc.pid, subs, a))
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait()
        med = {s: {k: statistics.median(r[k] for r in rs) for k in keys}
               for s, rs in res.items() if rs}
        for s in [n for n, _ in kvs] + ["redis"]:
            print("%-6d %-8s " % (subs, s) + " ".join("%14.2f" % med[s][k] for k in keys))
        print("%-6d %-8s " % (subs, "ratio") + " ".join(
            "%14.2f" % (med["kv"][k] / med["redis"][k] if med["redis"][k] else 0) for k in keys))
    return 0


if __name__ == "__main__":
    sys.exit(main())
