#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scripts/kv_hop_cpu.py --counts against what a hop must cost: one
repetition of SET and MSET (10 random keys) at depth 1, 2,000 requests
each, on one shard, two shards and redis-server.

  one shard      no mesh message, no wake-up, no lock;
  two shards     SET: no lock, about one message a request (half the
                 keys hop, a request and its answer each); MSET: two
                 locks a request (one per shard; all ten keys on one
                 shard once in 512), at most as many waits as locks;
  redis-server   only its context switches are known;
  every row      throughput and CPU per request above zero.

usage: hop_counts_test.py PERCORE"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "kv_hop_cpu.py")


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def main():
    run = subprocess.run([sys.executable, SCRIPT, "--percore", sys.argv[1], "--servers",
                          "kv1,kv2,redis", "--tests", "set,mset", "--depths", "1", "--reps", "1",
                          "--requests", "8000", "--counts", "--json"],
                         capture_output=True, text=True, timeout=300)
    check(run.returncode == 0, "kv_hop_cpu exited %d: %s" % (run.returncode, run.stderr[-800:]))
    rows = {r["test"]: r for r in json.loads(run.stdout)}
    check(set(rows) == {"set", "mset"}, "rows %s" % sorted(rows))
    for test, row in rows.items():
        for s in ("kv1", "kv2", "redis"):
            check(row[s]["rps"] > 0 and row[s]["cpu_ns"] > 0, "%s %s: %r" % (test, s, row[s]))
            check(row[s]["per_request"]["switches"] >= 0, "%s %s switches" % (test, s))
        one = row["kv1"]["per_request"]
        check(one["messages"] == 0 and one["wake-ups"] == 0 and one["locks"] == 0,
              "%s on one shard: %r" % (test, one))
        check(all(row["redis"]["per_request"][k] is None for k in
                  ("sleeps", "wake-ups", "messages", "locks", "lock waits")),
              "redis-server counts: %r" % row["redis"]["per_request"])
    two = rows["set"]["kv2"]["per_request"]
    check(two["locks"] == 0, "SET took locks: %r" % two)
    check(0.8 <= two["messages"] <= 1.3, "SET on two shards: %.3f messages a request"
          % two["messages"])
    two = rows["mset"]["kv2"]["per_request"]
    check(1.95 <= two["locks"] <= 2.0, "MSET on two shards: %.3f locks a request" % two["locks"])
    check(two["lock waits"] <= two["locks"], "MSET: more lock waits than locks: %r" % two)
    print("ok   hop counts: SET %.3f messages, MSET %.3f locks a request"
          % (rows["set"]["kv2"]["per_request"]["messages"], two["locks"]))


if __name__ == "__main__":
    main()
