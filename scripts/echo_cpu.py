#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Server CPU time per echoed message, epoll against io_uring.

On a machine where the load generator needs as much CPU per message as
the server (two CPUs: one each), echo throughput says how fast the client
is, not which server is cheaper: both servers serve as fast as it asks.
This measures what each costs instead: a one-shard `percore echo` (idle
policy sleep, so that waiting costs nothing) on the first CPU, `percore
load` on the second, and the server's CPU time (every thread, from
/proc/PID/task/*/schedstat, nanoseconds) divided by the messages echoed.
The backends alternate for --reps rounds; the figures are medians, the
ratio is epoll's cost over uring's from the same rounds. The client's CPU
share of the wall time is shown: near 100% means the client set the pace.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

BACKENDS = ("epoll", "uring")


def task_cpu_ns(pid):
    """CPU time of every thread of pid so far, in nanoseconds."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that ended meanwhile
    return total


def load_cmd(percore, port, cpu, size, messages, conns):
    return [percore, "load", "--port", str(port), "--size", str(size), "--messages",
            str(messages), "--conns", str(conns), "--depth", "16", "--policy", str(cpu)]


def start_server(percore, backend, cpu):
    """A one-shard echo server on a port the kernel picks: (process, port)."""
    server = subprocess.Popen([percore, "echo", "--host", "127.0.0.1", "--port", "0",
                               "--shards", "1", "--policy", str(cpu), "--backend", backend,
                               "--idle-policy", "sleep", "--idle-timeout", "0"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # "percore echo: listening on 127.0.0.1:PORT (1 shards, framed, BACKEND, ...)"
    line = server.stderr.readline()
    if "listening on" not in line:
        server.kill()
        raise RuntimeError(f"{backend}: the server did not start: {line.strip()}")
    if backend == "uring" and "io_uring" not in line:
        server.kill()
        raise RuntimeError("io_uring is unavailable here: the server fell back to epoll")
    port = int(line.split("listening on ")[1].split()[0].rsplit(":", 1)[1])
    return server, port


def one_round(percore, backend, args, cpus):
    """One server, one load run: (server ns/echo, client CPU share, wall ns/echo)."""
    server, port = start_server(percore, backend, cpus[0])
    try:
        cpu0, t0 = task_cpu_ns(server.pid), time.monotonic_ns()
        load = subprocess.Popen(load_cmd(percore, port, cpus[1], args.size, args.messages,
                                         args.conns), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(load.pid, 0)
        wall = time.monotonic_ns() - t0
        cpu1 = task_cpu_ns(server.pid)
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"{backend}: the load generator reported errors")
    finally:
        server.terminate()
        server.communicate()
    client = (usage.ru_utime + usage.ru_stime) * 1e9 / wall
    return (cpu1 - cpu0) / args.messages, client, wall / args.messages


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                epilog="\n".join(__doc__.splitlines()[2:]),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("build", nargs="?", default="build/release",
                   help="a build folder holding tools/percore/percore (default build/release)")
    p.add_argument("--size", type=int, default=64, help="payload bytes (default 64)")
    p.add_argument("--conns", type=int, default=16, help="connections, 16 in flight each")
    p.add_argument("--messages", type=int, default=500000, help="messages per round")
    p.add_argument("--reps", type=int, default=5, help="rounds per backend (default 5)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    args = p.parse_args()
    percore = os.path.join(args.build, "tools/percore/percore")
    if not os.access(percore, os.X_OK):
        sys.exit(f"no {percore}: build it first")
    ncpu = os.cpu_count() or 1
    cpus = (0, 1 if ncpu > 1 else 0)
    rows = {b: [] for b in BACKENDS}
    for r in range(args.reps):
        for b in (BACKENDS if r % 2 == 0 else BACKENDS[::-1]):
            print(f"round {r + 1}/{args.reps}: {b}", file=sys.stderr)
            try:
                rows[b].append(one_round(percore, b, args, cpus))
            except RuntimeError as e:
                sys.exit(f"echo_cpu: {e}")
    out = {"size": args.size, "conns": args.conns, "messages": args.messages, "reps": args.reps}
    for b in BACKENDS:
        out[b] = {k: statistics.median(x[i] for x in rows[b])
                  for i, k in enumerate(("server_cpu_ns", "client_cpu_share", "wall_ns"))}
    out["epoll_over_uring"] = out["epoll"]["server_cpu_ns"] / out["uring"]["server_cpu_ns"]
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{args.size} B, {args.conns} connections x 16, {args.messages} messages, "
          f"{args.reps} rounds each (medians)")
    for b in BACKENDS:
        o = out[b]
        print(f"  {b:6s} server {o['server_cpu_ns']:7.0f} ns/echo   wall {o['wall_ns']:7.0f} ns/echo"
              f"   client CPU {o['client_cpu_share'] * 100:4.0f}%")
    print(f"  server CPU, epoll / uring: {out['epoll_over_uring']:.2f}x")


if __name__ == "__main__":
    main()
