#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Server CPU time per echoed message: epoll, io_uring and the plain server.

On a machine where the load generator needs as much CPU per message as
the server (two CPUs: one each), echo throughput says how fast the client
is, not which server is cheaper: both servers serve as fast as it asks.
This measures what each costs instead: a one-shard `percore echo` (idle
policy sleep, so that waiting costs nothing) on each backend, and the
plain epoll server of the benchmarks (percore-peer-epoll-echo, which
sleeps in epoll_wait too), each on the first CPU, `percore load` on the
second, and the server's CPU time (every thread, from
/proc/PID/task/*/schedstat, nanoseconds) divided by the messages echoed,
with the share of it in user space (the server's rusage at exit: what a
server's own code costs, the rest being the kernel's work for its system
calls; the kernel splits CPU time at its timer tick, so the share means
something only over a few seconds of it: --messages 4000000).
For each row (a payload size and a connection count, 16 in flight per
connection) the servers take turns for --reps rounds, in an order that
changes every round; the figures are medians, the ratios are each
backend's median over the plain server's, from the same rounds. The
client's CPU share of the wall time is shown: near 100% means the client
set the pace.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

SERVERS = ("plain", "epoll", "uring")
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


def server_cmd(percore, backend, cpu):
    """The command line of a one-shard echo server on a port the kernel picks."""
    if backend == "plain":
        return [os.path.join(os.path.dirname(percore), "percore-peer-epoll-echo"), str(cpu)]
    return [percore, "echo", "--host", "127.0.0.1", "--port", "0", "--shards", "1",
            "--policy", str(cpu), "--backend", backend, "--idle-policy", "sleep",
            "--idle-timeout", "0"]


def start_server(percore, backend, cpu):
    """A one-shard echo server on a port the kernel picks: (process, port)."""
    server = subprocess.Popen(server_cmd(percore, backend, cpu), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    # "percore echo: listening on 127.0.0.1:PORT (1 shards, framed, BACKEND, ...)",
    # or the plain server's "listening on 127.0.0.1:PORT"
    line = server.stderr.readline()
    if "listening on" not in line:
        server.kill()
        raise RuntimeError(f"{backend}: the server did not start: {line.strip()}")
    if backend == "uring" and "io_uring" not in line:
        server.kill()
        raise RuntimeError("io_uring is unavailable here: the server fell back to epoll")
    port = int(line.split("listening on ")[1].split()[0].rsplit(":", 1)[1])
    return server, port


def stop_server(server):
    """Ends the server: the user-space share of its CPU time over its life."""
    server.terminate()
    server.stderr.read()  # until it exits: its statistics, unread
    _, _, usage = os.wait4(server.pid, 0)
    server.returncode = 0
    total = usage.ru_utime + usage.ru_stime
    return usage.ru_utime / total if total else 0.0


def one_round(percore, backend, size, conns, args, cpus):
    """One server, one load run: (server ns/echo, client CPU share, wall ns/echo,
    server user-space share)."""
    server, port = start_server(percore, backend, cpus[0])
    try:
        cpu0, t0 = task_cpu_ns(server.pid), time.monotonic_ns()
        load = subprocess.Popen(load_cmd(percore, port, cpus[1], size, args.messages, conns), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(load.pid, 0)
        wall = time.monotonic_ns() - t0
        cpu1 = task_cpu_ns(server.pid)
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"{backend}: the load generator reported errors")
    finally:
        user = stop_server(server)
    client = (usage.ru_utime + usage.ru_stime) * 1e9 / wall
    return (cpu1 - cpu0) / args.messages, client, wall / args.messages, user


def sizes(text):
    """A comma-separated list of positive integers."""
    try:
        out = [int(x) for x in text.split(",")]
    except ValueError:
        out = []
    if not out or min(out) <= 0:
        raise argparse.ArgumentTypeError(f"not a list of positive integers: {text}")
    return out


def measure_row(percore, size, conns, args, cpus):
    """Every server's medians for one row, and each backend's ratio over plain."""
    rows = {b: [] for b in SERVERS}
    for r in range(args.reps):
        # rotate the order, so that no server always runs first or last
        order = SERVERS[r % len(SERVERS):] + SERVERS[:r % len(SERVERS)]
        for b in order:
            print(f"{size} B x {conns}: round {r + 1}/{args.reps}: {b}", file=sys.stderr)
            rows[b].append(one_round(percore, b, size, conns, args, cpus))
    out = {"size": size, "conns": conns, "messages": args.messages, "reps": args.reps}
    for b in SERVERS:
        out[b] = {k: statistics.median(x[i] for x in rows[b])
                  for i, k in enumerate(("server_cpu_ns", "client_cpu_share", "wall_ns", "server_user_share"))}
        out[b]["server_cpu_ns_all"] = [x[0] for x in rows[b]]
    for b in BACKENDS:
        out[f"{b}_over_plain"] = out[b]["server_cpu_ns"] / out["plain"]["server_cpu_ns"]
    return out


def print_row(out):
    print(f"{out['size']} B, {out['conns']} connections x 16, {out['messages']} messages, "
          f"{out['reps']} rounds each (medians)")
    for b in SERVERS:
        o = out[b]
        print(f"  {b:6s} server {o['server_cpu_ns']:7.0f} ns/echo (user {o['server_user_share'] * 100:4.1f}%)"
              f"   wall {o['wall_ns']:7.0f} ns/echo"
              f"   client CPU {o['client_cpu_share'] * 100:4.0f}%")
    print(f"  server CPU over plain: epoll {out['epoll_over_plain']:.2f}x, "
          f"uring {out['uring_over_plain']:.2f}x")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                epilog="\n".join(__doc__.splitlines()[2:]),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("build", nargs="?", default="build/release",
                   help="a build folder holding tools/percore/percore (default build/release)")
    p.add_argument("--size", type=sizes, default=[64],
                   help="payload bytes, a comma-separated list (default 64)")
    p.add_argument("--conns", type=sizes, default=[16],
                   help="connections, 16 in flight each, a comma-separated list (default 16)")
    p.add_argument("--messages", type=int, default=500000, help="messages per round")
    p.add_argument("--reps", type=int, default=5, help="rounds per server (default 5)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    args = p.parse_args()
    percore = os.path.join(args.build, "tools/percore/percore")
    for prog in (percore, os.path.join(os.path.dirname(percore), "percore-peer-epoll-echo")):
        if not os.access(prog, os.X_OK):
            sys.exit(f"no {prog}: build it first")
    ncpu = os.cpu_count() or 1
    cpus = (0, 1 if ncpu > 1 else 0)
    results = []
    for conns in args.conns:
        for size in args.size:
            try:
                results.append(measure_row(percore, size, conns, args, cpus))
            except RuntimeError as e:
                sys.exit(f"echo_cpu: {e}")
            if not args.json:
                print_row(results[-1])
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
