#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Load time at start: percore kv (1 and 2 shards) beside redis-server
7.0, on the same dump of N keys (default 1,000,000) that redis-server
writes: 90% strings (DEBUG POPULATE, 16-byte values), 10% small hashes,
sets, lists and sorted sets (listpack and intset encodings), a third of
those with a TTL.

Each server is started on the dump and timed until it answers PING with
PONG (redis-server answers -LOADING before; percore kv does not listen
until every shard has loaded). Repetitions are interleaved; the table
gives the median of each and its CPU time (user + system, from wait4
after the server is killed: the load is nearly all of it).

usage: load_bench.py PERCORE [KEYS] [REPS]"""
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "kv"))
from persist_test import free_port  # noqa: E402


def ping(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def cli(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port)] + [str(a) for a in args],
                          stdout=subprocess.PIPE, check=True).stdout


def make_dump(d, n):
    port = free_port()
    p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                          "--save", "", "--appendonly", "no", "--dir", d,
                          "--enable-debug-command", "yes"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not ping(port):
        time.sleep(0.05)
    cli(port, "DEBUG", "POPULATE", n - n // 10, "key", 16)
    lines = []
    for i in range(n // 10):
        key = "c:%d" % i
        kind = i % 4
        if kind == 0:
            lines.append("HSET %s f1 %d f2 v%d f3 x" % (key, i, i))
        elif kind == 1:
            lines.append("SADD %s %d %d %d" % (key, i, i + 1, i + 2))
        elif kind == 2:
            lines.append("RPUSH %s a%d b c d" % (key, i))
        else:
            lines.append("ZADD %s 1 a 2 b%d 3.5 c" % (key, i))
        if i % 3 == 0:
            lines.append("EXPIRE %s 36000" % key)
    subprocess.run(["redis-cli", "-p", str(port), "--pipe"], input="\n".join(lines).encode(),
                   stdout=subprocess.DEVNULL, check=True)
    cli(port, "SAVE")
    keys = int(cli(port, "DBSIZE"))
    p.kill()
    p.wait()
    return keys


def run_once(argv, port):
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not ping(port):
        if p.poll() is not None:
            raise RuntimeError("%s exited %d" % (argv[0], p.returncode))
        time.sleep(0.005)
    wall = time.monotonic() - t0
    p.send_signal(signal.SIGKILL)
    _, _, ru = os.wait4(p.pid, 0)
    return wall, ru.ru_utime + ru.ru_stime


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    percore = os.path.abspath(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000000
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    if not shutil.which("redis-server"):
        print("skip: redis-server is not installed")
        return 77
    with tempfile.TemporaryDirectory() as d:
        keys = make_dump(d, n)
        size = os.path.getsize(os.path.join(d, "dump.rdb"))
        print("dump: %d keys, %.1f MB" % (keys, size / 1e6))
        runs = {}
        for _ in range(reps):
            for name in ("redis-server", "percore kv --shards 1", "percore kv --shards 2"):
                port = free_port()
                if name == "redis-server":
                    argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                            "--save", "", "--appendonly", "no", "--dir", d]
                else:
                    shards = re.search(r"\d+$", name).group(0)
                    argv = [percore, "kv", "--port", str(port), "--shards", shards,
                            "--oversubscribe", "--save", "", "--dir", d]
                runs.setdefault(name, []).append(run_once(argv, port))
        base = statistics.median(w for w, _ in runs["redis-server"])
        print("| server | load to first PONG, median s | CPU s | vs redis-server |")
        print("|---|---|---|---|")
        for name, r in runs.items():
            wall = statistics.median(w for w, _ in r)
            cpu = statistics.median(c for _, c in r)
            print("| %s | %.2f (%s) | %.2f | %.2fx |" %
                  (name, wall, ", ".join("%.2f" % w for w, _ in r), cpu, wall / base))
    return 0


if __name__ == "__main__":
    sys.exit(main())
