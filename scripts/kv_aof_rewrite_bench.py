#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Append-only file rewrites and starts with many keys, `percore kv`
beside redis-server, both in the same directory (same disk and file
system), appendfsync everysec.

latency: with --keys keys loaded, SET p99 (redis-benchmark -t set -c 50
-r KEYS) while BGREWRITEAOF runs, against the same load with no rewrite;
the run starts with the rewrite and the share of the run it overlapped
is reported. Rows for percore kv only (redis-server's rewrite is a fork,
a different cost).

start: seconds from exec to the first PONG with --keys keys in the files
after a rewrite: percore kv's per-shard files; redis-server's AOF with
aof-use-rdb-preamble no (RESP, like for like) and yes (its default, an
RDB base).

Each row's repetitions are interleaved (--reps rounds of every row), each
on a fresh directory; the figures are medians.

usage: scripts/kv_aof_rewrite_bench.py [--percore PATH] [--dir DIR]
           [--reps N] [--keys N] [--shards N] [--requests N]"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "kv"))
from aof_rewrite_test import info as persistence_info  # noqa: E402
from oracle import enc, free_port  # noqa: E402
from server_test import Conn  # noqa: E402


def call(port, *args):
    """One command over a fresh connection: its reply."""
    c = Conn(port)
    try:
        return c.call(*args)
    finally:
        c.close()


def info(port):
    c = Conn(port)
    try:
        return persistence_info(c)
    finally:
        c.close()


def wait_pong(port, p, deadline=600):
    t_end = time.monotonic() + deadline
    while True:
        try:
            if call(port, "PING") == b"+PONG":
                return
        except (OSError, EOFError):
            pass
        if p.poll() is not None or time.monotonic() > t_end:
            raise RuntimeError("server did not answer PING")
        time.sleep(0.005)


def start(kind, args, d, preamble="no"):
    port = free_port()
    if kind == "kv":
        cmd = [args.percore, "kv", "--port", str(port), "--shards", str(args.shards),
               "--appendonly", "yes", "--appendfsync", "everysec", "--dir", d, "--save", "",
               "--auto-aof-rewrite-percentage", "0"]
    else:
        cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "yes", "--appendfsync", "everysec", "--dir", d,
               "--aof-use-rdb-preamble", preamble, "--auto-aof-rewrite-percentage", "0"]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_pong(port, p)
    return p, port, time.monotonic() - t0


def stop(p, port):
    try:
        call(port, "SHUTDOWN", "NOSAVE")
    except (OSError, EOFError):
        pass
    try:
        p.wait(120)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def load(port, data):
    r = subprocess.run(["redis-cli", "-p", str(port), "--pipe"], input=data,
                       capture_output=True, check=True)
    if b"errors: 0" not in r.stdout:
        raise RuntimeError("load: %s" % r.stdout[-300:])


def rewrite(port):
    call(port, "BGREWRITEAOF")
    while True:
        i = info(port)
        if i["aof_rewrite_in_progress"] == "0" and i["aof_rewrite_scheduled"] == "0":
            return
        time.sleep(0.02)


def bench_p99(port, args):
    out = subprocess.run(["redis-benchmark", "-p", str(port), "-t", "set", "-c", "50",
                          "-r", str(args.keys), "-n", str(args.requests), "--csv", "-q"],
                         capture_output=True, text=True, check=True).stdout
    row = [x.strip('"') for x in out.strip().splitlines()[-1].split(",")]
    # "SET",rps,avg,min,p50,p95,p99,max
    return float(row[1]), float(row[6])


def latency_round(args, data, with_rewrite):
    d = tempfile.mkdtemp(prefix="pc_aofrwbench_", dir=args.dir)
    p, port, _ = start("kv", args, d)
    try:
        load(port, data)
        overlap = [0.0]
        t0 = time.monotonic()
        if with_rewrite:
            call(port, "BGREWRITEAOF")

            def watch():
                while info(port)["aof_rewrite_in_progress"] == "1":
                    time.sleep(0.01)
                overlap[0] = time.monotonic() - t0
            w = threading.Thread(target=watch)
            w.start()
        rps, p99 = bench_p99(port, args)
        run = time.monotonic() - t0
        if with_rewrite:
            w.join()
        return rps, p99, min(1.0, overlap[0] / run) if with_rewrite else 0.0
    finally:
        stop(p, port)
        shutil.rmtree(d, ignore_errors=True)


def start_round(kind, args, data, preamble):
    d = tempfile.mkdtemp(prefix="pc_aofrwbench_", dir=args.dir)
    try:
        p, port, _ = start(kind, args, d, preamble)
        load(port, data)
        rewrite(port)
        stop(p, port)
        size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)
        p, port, secs = start(kind, args, d, preamble)
        n = call(port, "DBSIZE")
        stop(p, port)
        if n != args.keys:
            raise RuntimeError("%s loaded %d keys of %d" % (kind, n, args.keys))
        return secs, size
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--percore", default="build/release/tools/percore/percore")
    ap.add_argument("--dir", default=None, help="where the files go (default: the temp dir)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--keys", type=int, default=1000000)
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--requests", type=int, default=1000000)
    ap.add_argument("--only", choices=("latency", "start"), default=None)
    args = ap.parse_args()
    data = b"".join(enc("SET", "key:%010d" % i, "v" * 16) for i in range(args.keys))
    lat = {False: [], True: []}
    starts = {("kv", "no"): [], ("redis", "no"): [], ("redis", "yes"): []}
    for r in range(args.reps):
        if args.only in (None, "latency"):
            for wr in (False, True):
                lat[wr].append(latency_round(args, data, wr))
                print("round %d latency rewrite=%s: %r" % (r, wr, lat[wr][-1]), flush=True)
        if args.only in (None, "start"):
            for key in starts:
                starts[key].append(start_round(key[0], args, data, key[1]))
                print("round %d start %s: %r" % (r, key, starts[key][-1]), flush=True)
    if lat[False]:
        base = statistics.median(x[1] for x in lat[False])
        during = statistics.median(x[1] for x in lat[True])
        print("SET p99 ms, %d keys, %d shards: no rewrite %.3f (%.0f rps), during a rewrite %.3f "
              "(%.0f rps; the rewrite covered %.0f%% of the run): ratio %.2f" %
              (args.keys, args.shards, base, statistics.median(x[0] for x in lat[False]), during,
               statistics.median(x[0] for x in lat[True]),
               100 * statistics.median(x[2] for x in lat[True]), during / base))
    for key, v in starts.items():
        if v:
            print("start with %d keys, %s (rdb preamble %s): %.2f s, files %d bytes" %
                  (args.keys, key[0], key[1], statistics.median(x[0] for x in v),
                   statistics.median(x[1] for x in v)))


if __name__ == "__main__":
    main()
