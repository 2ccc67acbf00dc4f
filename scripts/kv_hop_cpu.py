#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The cross-shard hop's cost: `percore kv --shards 1`, `percore kv
--shards 2` (one shard per CPU on two CPUs; --kv-shards changes it) and
redis-server with its defaults, under redis-benchmark -c 50 -r 100000 (--keyspace) at
each depth (-P), for SET, GET and MSET (10 keys). Each repetition starts
every server afresh and runs every row on it, the servers in turn, so the
repetitions interleave; the figures are medians of --reps. Server CPU is
every thread's (/proc/PID/task/*/schedstat) over the row, per request.

Two more tests run one connection instead (`redis-cli --pipe` of
--pipe-requests commands, random keys of 100,000, the same bytes for
every server): pipe-set, SETs alone; pipe-mixed, 30% SET, 30% GET, 10%
INCR and 5% each of DEL, EXPIRE, MGET of 3 keys, MSET of 2, EXISTS and
APPEND, so commands over several shards sit among the others. Their
requests/s are the commands over redis-cli's wall time.

With --counts, a second table says where a hop's cost may go, per
request, medians of the repetitions: the server's voluntary context
switches (every thread's, /proc/PID/task/*/status: waits that blocked),
and for percore kv its shards' waits in the kernel, wake-ups sent to
sleeping shards and mesh messages (its metrics endpoint), the locks
taken by commands over several shards and those that queued (INFO
stats' tx_locks and tx_lock_waits).

Printed: one table row per test and depth with requests/s and ns of
server CPU per request for each server, then the ratios the goals name:
one shard's CPU per request over redis-server's, the sharded server's
over one shard's (the hop's cost) and its throughput over
redis-server's; with --baseline, also each build's CPU per request over
the baseline's. Each ratio is paired by repetition: the median of the
repetitions' ratios and its quartiles, which say whether a figure is
outside the spread between repetitions. The
servers run in turn, their order reversed every other repetition, so
that neither build is always the one that runs first.

usage: scripts/kv_hop_cpu.py [--percore PATH] [--reps N] [--requests N]
                             [--depths 16,1] [--tests set,get,mset,pipe-mixed]
                             [--pipe-requests N] [--servers kv1,kv2,redis]
                             [--baseline PATH]
                             [--idle-policy P] [--counts] [--json]"""
import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "kv"))
from echo_cpu import task_cpu_ns  # noqa: E402
from oracle import free_port, wait_listening  # noqa: E402

# redis-benchmark's name for each test in its CSV output.
CSV_NAME = {"set": "SET", "get": "GET", "mset": "MSET (10 keys)", "incr": "INCR",
            "lpush": "LPUSH", "rpush": "RPUSH", "lpop": "LPOP", "rpop": "RPOP",
            "sadd": "SADD", "hset": "HSET", "spop": "SPOP", "zadd": "ZADD"}


def server_cmd(name, args, port):
    if name == "redis":
        return ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no"]
    shards = "1" if name.startswith("kv1") else str(args.kv_shards)
    binary = args.baseline if name.endswith("-base") else args.percore
    # no snapshot, as redis-server's line says: none left in the caller's folder
    cmd = [binary, "kv", "--port", str(port), "--shards", shards, "--save", ""]
    if args.counts:
        cmd += ["--metrics-port", str(free_port())]
    if args.idle_policy:
        cmd += ["--idle-policy", args.idle_policy]
    return cmd


def start(name, args):
    port = free_port()
    cmd = server_cmd(name, args, port)
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_listening(p, port, name)
    if "--metrics-port" in cmd:  # its own thread, which may listen later
        wait_listening(p, int(cmd[cmd.index("--metrics-port") + 1]), name + "'s metrics")
    return p, port, cmd


# --counts: a figure's name in the table, and the metric it sums over
# the shards (None: not a metric)
COUNTS = (("switches", None), ("sleeps", "percore_reactor_sleeps_total"),
          ("wake-ups", "percore_mesh_wakeups_sent_total"),
          ("messages", "percore_mesh_messages_sent_total"), ("locks", None),
          ("lock waits", None))


def voluntary_switches(pid):
    """Every thread's voluntary context switches so far."""
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                total += int(re.search(r"^voluntary_ctxt_switches:\s+(\d+)", f.read(),
                                       re.M).group(1))
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that ended meanwhile
    return total


def info_stats(port):
    """INFO stats of the server on port, as a dict of text fields."""
    out = subprocess.run(["redis-cli", "-p", str(port), "INFO", "stats"],
                         capture_output=True, text=True, check=True).stdout
    return dict(ln.split(":", 1) for ln in out.splitlines() if ":" in ln)


def counts_now(p, port, cmd):
    """The --counts figures so far: a dict by name, None where the
    server has no such figure (redis-server: all but the switches)."""
    got = {name: None for name, _ in COUNTS}
    got["switches"] = voluntary_switches(p.pid)
    if "--metrics-port" not in cmd:
        return got
    metrics = cmd[cmd.index("--metrics-port") + 1]
    body = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % metrics, timeout=30).read()
    for name, metric in COUNTS:
        if metric:
            got[name] = sum(float(v) for v in re.findall(
                r"^%s\{shard=\"\d+\"\} (\S+)$" % metric, body.decode(), re.M))
    info = info_stats(port)
    got["locks"], got["lock waits"] = int(info["tx_locks"]), int(info["tx_lock_waits"])
    return got


def bench_row(pid, port, test, depth, requests, keyspace):
    c0 = task_cpu_ns(pid)
    run = subprocess.run(["redis-benchmark", "-p", str(port), "-t", test, "-c", "50",
                          "-r", str(keyspace), "-P", str(depth), "-n", str(requests),
                          "--csv", "-q"], capture_output=True, text=True)
    cpu = task_cpu_ns(pid) - c0
    out = run.stdout
    if run.returncode:
        raise RuntimeError("redis-benchmark %s -P %d exited %d: %s"
                           % (test, depth, run.returncode, run.stderr[-500:]))
    m = re.search(r'"%s","([0-9.]+)"' % re.escape(CSV_NAME[test]), out)
    if not m:
        raise RuntimeError("no %s figure in redis-benchmark's output: %r" % (test, out))
    return float(m.group(1)), cpu / requests


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def pipe_command(rng, test, i):
    key = lambda: "key:%d" % rng.randrange(100000)  # noqa: E731
    r = rng.random() if test == "pipe-mixed" else 0.0
    for upto, make in ((0.3, lambda: ("SET", key(), "v%d" % i)), (0.6, lambda: ("GET", key())),
                       (0.7, lambda: ("INCR", "n:%d" % rng.randrange(1000))),
                       (0.75, lambda: ("DEL", key())), (0.8, lambda: ("EXPIRE", key(), "1000")),
                       (0.85, lambda: ("MGET", key(), key(), key())),
                       (0.9, lambda: ("MSET", key(), "a", key(), "b")),
                       (0.95, lambda: ("EXISTS", key())), (1.01, lambda: ("APPEND", key(), "x"))):
        if r < upto:
            return resp(*make())
    raise AssertionError(r)


def pipe_file(test, n, folder):
    """The commands of a pipe test, written once (seeded: the same bytes
    for every server and repetition)."""
    path = os.path.join(folder, "%s-%d.resp" % (test, n))
    if not os.path.exists(path):
        rng = random.Random(1)
        with open(path, "wb") as f:
            f.write(b"".join(pipe_command(rng, test, i) for i in range(n)))
    return path


def pipe_row(pid, port, path, n):
    c0, t0 = task_cpu_ns(pid), time.monotonic()
    with open(path, "rb") as f:
        run = subprocess.run(["redis-cli", "-p", str(port), "--pipe"], stdin=f,
                             capture_output=True, text=True)
    wall, cpu = time.monotonic() - t0, task_cpu_ns(pid) - c0
    if run.returncode or "errors: 0, replies: %d" % n not in run.stdout:
        raise RuntimeError("redis-cli --pipe: %s %s" % (run.stdout[-300:], run.stderr[-300:]))
    return n / wall, cpu / n


def per_request(before, after, n):
    return {k: None if before[k] is None else (after[k] - before[k]) / n for k in before}


def one_rep(name, args, rows, samples):
    p, port, cmd = start(name, args)
    try:
        for test, depth in rows:
            c0 = counts_now(p, port, cmd) if args.counts else None
            if test.startswith("pipe-"):
                n = args.pipe_requests
                row = pipe_row(p.pid, port, pipe_file(test, n, args.folder), n)
            else:
                n = args.requests if depth > 1 else args.requests // 4
                row = bench_row(p.pid, port, test, depth, n, args.keyspace)
            if args.counts:
                row += (per_request(c0, counts_now(p, port, cmd), n),)
            samples[(name, test, depth)].append(row)
    finally:
        p.terminate()
        p.wait()


def ratio(a, b):
    return a / b if b else float("nan")


def paired(xs, bases, field=1):
    """A figure of xs over the same of bases (field 1: CPU per request, 0:
    requests/s), repetition by repetition: the median ratio and its lower
    and upper quartiles. The servers of one repetition ran in turn, so a
    pair shares the machine's state of that moment; the quartiles say how
    far the pairs spread."""
    r = sorted(ratio(x[field], b[field]) for x, b in zip(xs, bases))
    q = statistics.quantiles(r, n=4, method="inclusive") if len(r) > 1 else [r[0]] * 3
    return {"median": q[1], "q1": q[0], "q3": q[2]}


# The goals, as ratios: name, server over server, the figure
# (1: CPU per request, 0: requests/s), the table's heading.
GOAL_RATIOS = (("kv1_vs_redis_cpu", "kv1", "redis", 1, "kv1/redis CPU"),
               ("hop_cpu", "kv2", "kv1", 1, "kv2/kv1 CPU"),
               ("kv2_vs_redis_rps", "kv2", "redis", 0, "kv2/redis rps"))


def quartiled(q):
    return "%.2fx (%.2f-%.2f)" % (q["median"], q["q1"], q["q3"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--percore", default="build/release/tools/percore/percore",
                    help="the percore binary (default: the release build's)")
    ap.add_argument("--reps", type=int, default=3, help="interleaved repetitions (default 3)")
    ap.add_argument("--requests", type=int, default=200000,
                    help="requests per row at depth > 1, a quarter at depth 1 (default 200000)")
    ap.add_argument("--depths", default="16,1", help="pipeline depths (default 16,1)")
    ap.add_argument("--keyspace", type=int, default=100000,
                    help="redis-benchmark -r: random keys, members or fields (default 100000)")
    ap.add_argument("--tests", default="set,get,mset",
                    help="redis-benchmark tests among set, get, mset, incr, lpush, rpush, lpop, "
                         "rpop, sadd, hset, spop, zadd, and pipe-set, pipe-mixed over one connection (default "
                         "set,get,mset)")
    ap.add_argument("--pipe-requests", type=int, default=300000,
                    help="commands of a pipe test (default 300000)")
    ap.add_argument("--kv-shards", type=int, default=2,
                    help="shards of the sharded kv (default 2, one per CPU here)")
    ap.add_argument("--idle-policy", default=None,
                    help="passed to both percore kv servers (default: kv's own default)")
    ap.add_argument("--servers", default="kv1,kv2,redis",
                    help="among kv1, kv2, redis, kv1-base and kv2-base (default kv1,kv2,redis)")
    ap.add_argument("--baseline", default=None,
                    help="another percore binary: the servers kv1-base and kv2-base")
    ap.add_argument("--counts", action="store_true",
                    help="also the context switches, shard sleeps, wake-ups, mesh messages, "
                         "locks and lock waits per request (percore kv with --metrics-port)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args()
    servers = args.servers.split(",")
    tests = args.tests.split(",")
    rows = [(t, int(d)) for d in args.depths.split(",") for t in tests
            if not t.startswith("pipe-")] + [(t, 0) for t in tests if t.startswith("pipe-")]
    args.folder = tempfile.mkdtemp(prefix="kv_hop_cpu.")
    samples = {(s, t, d): [] for s in servers for t, d in rows}
    if any(s.endswith("-base") for s in servers) and not args.baseline:
        ap.error("kv1-base and kv2-base need --baseline")
    try:
        for rep in range(args.reps):
            print("kv_hop_cpu: repetition %d of %d" % (rep + 1, args.reps), file=sys.stderr)
            for name in servers if rep % 2 == 0 else servers[::-1]:
                one_rep(name, args, rows, samples)
    finally:
        shutil.rmtree(args.folder)
    result = []
    for test, depth in rows:
        row = {"test": test, "depth": depth}
        for s in servers:
            xs = samples[(s, test, depth)]
            row[s] = {"rps": statistics.median(x[0] for x in xs),
                      "cpu_ns": statistics.median(x[1] for x in xs)}
            if args.counts:
                row[s]["per_request"] = {
                    k: None if xs[0][2][k] is None else statistics.median(x[2][k] for x in xs)
                    for k, _ in COUNTS}
        # the goals' ratios, each the median of the repetitions' pairs
        for key, a, b, field, _ in GOAL_RATIOS:
            if a in row and b in row:
                row[key] = paired(samples[(a, test, depth)], samples[(b, test, depth)], field)
        for s in ("kv1", "kv2"):
            if s in row and s + "-base" in row:
                row[s + "_vs_base_cpu"] = paired(samples[(s, test, depth)],
                                                  samples[(s + "-base", test, depth)])
        result.append(row)
    if args.json:
        print(json.dumps(result, indent=1))
        return
    head = " | ".join("%s K/s (ns/req)" % s for s in servers)
    goals = [g for g in GOAL_RATIOS if g[1] in servers and g[2] in servers]
    bases = [s for s in ("kv1", "kv2") if s in servers and s + "-base" in servers]
    print("| test | %s |%s%s" % (head, "".join(" %s (quartiles) |" % g[4] for g in goals),
                                 "".join(" %s/base CPU (quartiles) |" % s for s in bases)))
    print("|---|" + "---|" * (len(servers) + len(goals) + len(bases)))
    for row in result:
        cells = " | ".join("%.0f (%.0f)" % (row[s]["rps"] / 1000, row[s]["cpu_ns"])
                           for s in servers)
        ratios = "".join(" %s |" % quartiled(row[g[0]]) for g in goals)
        vs = "".join(" %s |" % quartiled(row[s + "_vs_base_cpu"]) for s in bases)
        print("| %s | %s |%s%s" % (row_name(row), cells, ratios, vs))
    if args.counts:
        print_counts(result, servers)


def row_name(row):
    return row["test"].upper() + (" P%d" % row["depth"] if row["depth"] else "")


def print_counts(result, servers):
    """The --counts table: per request, each server's medians."""
    print()
    print("| test | server | %s |" % " | ".join(name for name, _ in COUNTS))
    print("|---|---|" + "---|" * len(COUNTS))
    for row in result:
        for s in servers:
            got = row[s]["per_request"]
            print("| %s | %s | %s |" % (row_name(row), s, " | ".join(
                "-" if got[k] is None else "%.4f" % got[k] for k, _ in COUNTS)))


if __name__ == "__main__":
    main()
