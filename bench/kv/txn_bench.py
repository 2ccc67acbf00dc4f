#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""EXEC of two INCRs beside redis-server: `percore kv --shards 2` with the
two keys on different shards (so every EXEC locks keys on both), and
redis-server, each loaded by kv_txn_load (50 connections, one MULTI INCR a
INCR b EXEC in flight each) for SECONDS, in REPS interleaved repetitions.
Prints per run and as medians: transactions/s, and the server's CPU time
(user + system, every thread) per transaction.

usage: txn_bench.py PERCORE KV_TXN_LOAD [REPS] [SECONDS]"""
import os
import socket
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "kv"))
from oracle import KvServer, start_redis, apart  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def run(load, port, pid, keys, seconds):
    before = cpu_s(pid)
    out = subprocess.run([load, "--port", str(port), "--seconds", str(seconds), "--conns", "50",
                          "--key", keys[0], "--key", keys[1]],
                         capture_output=True, text=True, check=True).stdout
    cpu = cpu_s(pid) - before
    txs = int(out.split("(")[1].split()[0])
    return float(out.split()[0]), cpu * 1e6 / txs


def main():
    percore, load = sys.argv[1], sys.argv[2]
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    seconds = sys.argv[4] if len(sys.argv) > 4 else "3"
    kv = KvServer(percore, shards=2)
    redis, rport = start_redis("redis-server")
    try:
        peer = kv.peer()
        k = apart(peer, ["a", "b"])
        keys = [k("a"), k("b")]
        peer.close()
        res = {"percore kv --shards 2": [], "redis-server": []}
        for _ in range(reps):
            res["percore kv --shards 2"].append(run(load, kv.port, kv.proc.pid, keys, seconds))
            res["redis-server"].append(run(load, rport, redis.pid, keys, seconds))
        for name, rows in res.items():
            for tps, us in rows:
                print("%-22s %9.0f tx/s  %6.2f us CPU/tx" % (name, tps, us))
        med = {n: (statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows))
               for n, rows in res.items()}
        for n, (tps, us) in med.items():
            print("median %-22s %9.0f tx/s  %6.2f us CPU/tx" % (n, tps, us))
        a, b = med["percore kv --shards 2"], med["redis-server"]
        print("ratio percore/redis: throughput %.2f, CPU per transaction %.2f" % (a[0] / b[0], a[1] / b[1]))
    finally:
        kv.stop()
        redis.kill()
        redis.wait()


if __name__ == "__main__":
    sys.exit(main())
