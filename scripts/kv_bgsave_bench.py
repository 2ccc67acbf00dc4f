#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""BGSAVE of `percore kv` beside redis-server on the same keys: for each
server, repetitions interleaved (kv, redis, kv, redis, ...):

  idle     BGSAVE with no load: its time (BGSAVE to rdb_bgsave_in_progress
           0) and the peak RSS meanwhile, of the server and, for Redis, of
           its forked child (RSS, and the child's own dirty pages);
  load     redis-benchmark SET over the same keys (-r, -d), once alone and
           once with BGSAVEs back to back for the whole run: p99 latency
           of each, server CPU per SET (the process and its reaped
           children), and the peak RSS during the saves;
  stalls   percore kv's stall detector's count over both (turns past its
           threshold, 25 ms: /metrics, percore_stalls_total).

Prints one line per measurement and a Markdown table of the medians.

usage: kv_bgsave_bench.py PERCORE [--keys N] [--reps N] [--requests N] [--servers kv,redis]"""
import argparse
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "kv"))
from oracle import free_port  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def call(sock, line):
    sock.sendall(line.encode() + b"\r\n")
    data = b""
    while not data.endswith(b"\r\n") or (data[:1] == b"$" and data.count(b"\r\n") < 2):
        data += sock.recv(1 << 20)
    return data


def info_field(sock, field):
    text = call(sock, "INFO persistence").decode(errors="replace")
    m = re.search(r"%s:(\S+)" % field, text)
    return m.group(1) if m else None


def stalls(mport):
    """percore_stalls_total summed over the shards (0 for redis-server)."""
    if not mport:
        return 0
    s = socket.create_connection(("127.0.0.1", mport), timeout=60)
    s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
    text = b""
    while True:
        b = s.recv(1 << 16)
        if not b:
            break
        text += b
    s.close()
    return sum(float(m.group(1)) for m in
               re.finditer(rb"^percore_stalls_total(?:\{[^}]*\})? (\S+)", text, re.M))


def start(kind, percore, d):
    port, mport = free_port(), None
    if kind == "kv":
        while mport in (None, port):
            mport = free_port()
        args = [percore, "kv", "--port", str(port), "--save", "", "--metrics-port", str(mport)]
    else:
        args = ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no",
                "--dir", d]
    p = subprocess.Popen(args, cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            return p, port, socket.create_connection(("127.0.0.1", port), timeout=600), mport
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def load_keys(port, payload, n):
    s = socket.create_connection(("127.0.0.1", port), timeout=600)
    want = n * 5
    got = [0]

    def reader():
        while got[0] < want:
            got[0] += len(s.recv(1 << 22))
    t = threading.Thread(target=reader)
    t.start()
    s.sendall(payload)
    t.join()
    s.close()


def kb(path, field):
    try:
        with open(path) as f:
            for ln in f:
                if ln.startswith(field + ":"):
                    return int(ln.split()[1])
    except OSError:
        pass
    return 0


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / TICK


class Sampler:
    """Peak RSS of pid and its children (and the children's dirty pages),
    every 10 ms while running."""

    def __init__(self, pid):
        self.pid, self.stop = pid, threading.Event()
        self.rss = self.child_rss = self.child_dirty = 0
        self.t = threading.Thread(target=self.run)
        self.t.start()

    def run(self):
        while not self.stop.is_set():
            self.rss = max(self.rss, kb("/proc/%d/status" % self.pid, "VmRSS"))
            for c in children(self.pid):
                self.child_rss = max(self.child_rss, kb("/proc/%d/status" % c, "VmRSS"))
                self.child_dirty = max(self.child_dirty,
                                       kb("/proc/%d/smaps_rollup" % c, "Private_Dirty"))
            time.sleep(0.01)

    def done(self):
        self.stop.set()
        self.t.join()
        return self


def bgsave(sock):
    t0 = time.monotonic()
    r = call(sock, "BGSAVE")
    if not r.startswith(b"+"):
        raise RuntimeError("BGSAVE: %r" % r)
    while info_field(sock, "rdb_bgsave_in_progress") != "0":
        time.sleep(0.005)
    if info_field(sock, "rdb_last_bgsave_status") != "ok":
        raise RuntimeError("BGSAVE failed")
    return time.monotonic() - t0


def bench_set(port, args):
    out = subprocess.run(["redis-benchmark", "-p", str(port), "-t", "set", "-r", str(args.keys),
                          "-d", "100", "-c", "50", "-n", str(args.requests), "--csv"],
                         stdout=subprocess.PIPE, check=True).stdout.decode()
    row = [ln for ln in out.splitlines() if ln.startswith('"SET"')][0]
    vals = [v.strip('"') for v in row.split(",")]
    return float(vals[1]), float(vals[6])  # requests/s, p99 ms


def one(kind, args, payload):
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        p, port, sock, mport = start(kind, args.percore, d)
        try:
            load_keys(port, payload, args.keys)
            res = {}
            stalls0 = stalls(mport)
            s = Sampler(p.pid)
            res["idle_s"] = bgsave(sock)
            s.done()
            res["idle_rss"], res["idle_child_rss"] = s.rss, s.child_rss
            res["idle_child_dirty"] = s.child_dirty
            c0 = cpu_s(p.pid)
            res["alone_rps"], res["alone_p99"] = bench_set(port, args)
            res["alone_cpu_ns"] = (cpu_s(p.pid) - c0) * 1e9 / args.requests
            stop, saves = threading.Event(), [0]
            ctl = socket.create_connection(("127.0.0.1", port), timeout=600)

            def saver():
                while not stop.is_set():
                    bgsave(ctl)
                    saves[0] += 1
            s = Sampler(p.pid)
            c0 = cpu_s(p.pid)
            th = threading.Thread(target=saver)
            th.start()
            res["save_rps"], res["save_p99"] = bench_set(port, args)
            res["save_cpu_ns"] = (cpu_s(p.pid) - c0) * 1e9 / args.requests
            stop.set()
            th.join()
            s.done()
            res["load_rss"], res["load_child_rss"] = s.rss, s.child_rss
            res["load_child_dirty"] = s.child_dirty
            res["saves"] = saves[0]
            res["stalls"] = stalls(mport) - stalls0
            ctl.close()
            return res
        finally:
            sock.close()
            p.send_signal(signal.SIGTERM)
            p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("percore")
    ap.add_argument("--keys", type=int, default=1000000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--requests", type=int, default=1000000)
    ap.add_argument("--dir", default=None, help="where the dumps go (default: the temp dir)")
    ap.add_argument("--servers", default="kv,redis", help="which to run: kv, redis or both")
    args = ap.parse_args()
    rng = random.Random(32)
    # redis-benchmark's key names (key:%012d), 100-byte values LZF cannot shrink
    val = [rng.randbytes(100) for _ in range(1024)]
    payload = b"".join(b"*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$100\r\n%s\r\n" % (i, val[i % 1024])
                       for i in range(args.keys))
    kinds = args.servers.split(",")
    runs = {k: [] for k in kinds}
    for r in range(args.reps):
        for kind in kinds:
            res = one(kind, args, payload)
            runs[kind].append(res)
            print(kind, r, " ".join("%s=%.4g" % kv for kv in sorted(res.items())), flush=True)
    med = {k: {f: statistics.median(x[f] for x in v) for f in v[0]} for k, v in runs.items()}
    if len(kinds) < 2:
        return
    rows = [("BGSAVE, no load: time (s)", "idle_s", 1, "%.2f"),
            ("peak RSS during it, server (MB)", "idle_rss", 1024, "%.0f"),
            ("peak RSS of the forked child (MB)", "idle_child_rss", 1024, "%.0f"),
            ("SET p99 without a save (ms)", "alone_p99", 1, "%.3f"),
            ("SET p99 with saves back to back (ms)", "save_p99", 1, "%.3f"),
            ("SET K/s without / with saves", None, 0, ""),
            ("server CPU per SET without / with saves (ns)", None, 0, ""),
            ("peak RSS under load with saves, server (MB)", "load_rss", 1024, "%.0f"),
            ("peak RSS of the child under load (MB)", "load_child_rss", 1024, "%.0f"),
            ("the child's own dirty pages under load (MB)", "load_child_dirty", 1024, "%.0f"),
            ("saves during the loaded run", "saves", 1, "%.0f"),
            ("stalls past 25 ms (kv's detector)", "stalls", 1, "%.0f")]
    print("\n| %d keys, medians of %d | percore kv | redis-server |" % (args.keys, args.reps))
    print("|---|---|---|")
    for name, f, div, fmt in rows:
        if name.startswith("SET K/s"):
            cells = ["%.0f / %.0f" % (m["alone_rps"] / 1000, m["save_rps"] / 1000)
                     for m in (med["kv"], med["redis"])]
        elif name.startswith("server CPU"):
            cells = ["%.0f / %.0f" % (m["alone_cpu_ns"], m["save_cpu_ns"])
                     for m in (med["kv"], med["redis"])]
        else:
            cells = [fmt % (m[f] / div) for m in (med["kv"], med["redis"])]
        print("| %s | %s | %s |" % (name, cells[0], cells[1]))
    for k in ("kv", "redis"):
        print("%s: p99 with saves / without = %.2fx" %
              (k, med[k]["save_p99"] / med[k]["alone_p99"]))


if __name__ == "__main__":
    main()
