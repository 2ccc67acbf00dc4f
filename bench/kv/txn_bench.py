#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""EXEC of two INCRs beside redis-server: `percore kv --shards 2` with the
two keys on different shards (so every EXEC locks keys on both), the
same server with both keys on one shard (for scale: no lock), and
redis-server, each loaded by kv_txn_load (50 connections, one MULTI INCR a
INCR b EXEC in flight each) for SECONDS, in REPS interleaved repetitions;
then both servers with a pair of keys of its own per connection (on two
shards for kv), where no two transactions contend for a key.
Prints per run and as medians: transactions/s, and the server's CPU time
(user + system, every thread) per transaction. --set: MULTI SET a v SET
b v EXEC instead of the INCRs. --baseline PERCORE2: another
build's 2-shard rows in the same interleaved run (the key placement is the
same in both builds), and each row's ratio to them.

usage: txn_bench.py PERCORE KV_TXN_LOAD [REPS] [SECONDS] [--set] [--baseline PERCORE2]"""
import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "kv"))
from oracle import KvServer, start_redis, process_cpu_s as cpu_s, apart, colocated  # noqa: E402

CONNS = 50


def run(load, port, pid, keys, seconds, extra):
    before = cpu_s(pid)
    cmd = [load, "--port", str(port), "--seconds", str(seconds), "--conns", str(CONNS),
           "--per-tx", "2"] + extra
    for k in keys:
        cmd += ["--key", k]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    cpu = cpu_s(pid) - before
    txs = int(out.split("(")[1].split()[0])
    return float(out.split()[0]), cpu * 1e6 / txs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    ap.add_argument("percore", help="the percore binary")
    ap.add_argument("load", help="the kv_txn_load binary")
    ap.add_argument("reps", nargs="?", type=int, default=3,
                    help="interleaved repetitions (default 3)")
    ap.add_argument("seconds", nargs="?", default="3",
                    help="seconds of load per repetition (default 3)")
    ap.add_argument("--baseline", help="another percore build, run beside it")
    ap.add_argument("--set", action="store_true",
                    help="transactions of two SETs instead of two INCRs")
    a = ap.parse_args()
    percore, load, reps, seconds = a.percore, a.load, a.reps, a.seconds
    kv = KvServer(percore, shards=2)
    base = KvServer(a.baseline, shards=2) if a.baseline else None
    redis, rport = start_redis("redis-server")
    try:
        peer = kv.peer()
        k, one = apart(peer, ["a", "b"]), colocated(peer, ["c", "d"])
        names = ["p%d" % i for i in range(2 * CONNS)]
        own = apart(peer, names)
        runs = {"kv, 2 shards": ([k("a"), k("b")], kv.port, kv.proc.pid),
                "kv, 1 shard": ([one("c"), one("d")], kv.port, kv.proc.pid),
                "redis-server": (["a", "b"], rport, redis.pid),
                "kv, own keys": ([own(n) for n in names], kv.port, kv.proc.pid),
                "redis, own keys": (names, rport, redis.pid)}
        if base:
            runs["base, 2 shards"] = (runs["kv, 2 shards"][0], base.port, base.proc.pid)
            runs["base, own keys"] = (runs["kv, own keys"][0], base.port, base.proc.pid)
        peer.close()
        res = {name: [] for name in runs}
        for rep in range(reps):
            # every other repetition in reverse, so that no row always
            # follows the same one
            order = list(runs.items())[::-1 if rep % 2 else 1]
            for name, (keys, port, pid) in order:
                res[name].append(run(load, port, pid, keys, seconds,
                                     ["--cmd", "SET", "--value", "v"] if a.set else []))
        for name, rows in res.items():
            for tps, us in rows:
                print("%-15s %9.0f tx/s  %6.2f us CPU/tx" % (name, tps, us))
        med = {n: (statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows))
               for n, rows in res.items()}
        for n, (tps, us) in med.items():
            print("median %-15s %9.0f tx/s  %6.2f us CPU/tx" % (n, tps, us))
        for n, peer_row in (("kv, 2 shards", "redis-server"), ("kv, 1 shard", "redis-server"),
                            ("kv, own keys", "redis, own keys")):
            a, b = med[n], med[peer_row]
            print("ratio %s / redis: throughput %.2f, CPU per transaction %.2f"
                  % (n, a[0] / b[0], a[1] / b[1]))
        for n in ("2 shards", "own keys") if base else ():
            a, b = med["kv, " + n], med["base, " + n]
            print("ratio kv / base, %s: throughput %.2f, CPU per transaction %.2f"
                  % (n, a[0] / b[0], a[1] / b[1]))
    finally:
        if base:
            base.stop()
        kv.stop()
        redis.kill()
        redis.wait()


if __name__ == "__main__":
    sys.exit(main())
