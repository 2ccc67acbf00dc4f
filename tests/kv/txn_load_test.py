#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/kv/kv_txn_load against `percore kv --shards 2`, as txn_bench.py
runs it: every connection on the same two keys, then (--per-tx 2) each
connection on a pair of its own, the two keys of every pair on different
shards. Each EXEC increments both keys of its pair, so afterwards each
pair's keys are equal, each pair counts its connection's transactions,
and the pairs together count at least the transactions the tool reports
(and no more than one in flight per connection beyond); bad arguments
are refused with usage.

Exit 0 when all pass, 1 when anything fails.

usage: txn_load_test.py PERCORE KV_TXN_LOAD"""
import subprocess
import sys

from oracle import KvServer, apart, enc

CONNS = 4


def run_load(load, port, keys, extra):
    """Transactions the tool reports; raises on a failed run."""
    cmd = [load, "--port", str(port), "--conns", str(CONNS), "--seconds", "0.5"] + extra
    for k in keys:
        cmd += ["--key", k]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if out.returncode or " 0 bad" not in out.stdout:
        raise AssertionError("exit %d: %s %s" % (out.returncode, out.stdout, out.stderr))
    return int(out.stdout.split("(")[1].split()[0])


def values(peer, keys):
    out = []
    for k in keys:
        peer.send(enc("GET", k))
        _, (_, v) = peer.reader.reply()
        out.append(int(v or 0))
    return out


def check(failures, what, pairs, done, per_pair):
    """pairs: [(a, b)] values after a run the tool counted done
    transactions of; per_pair: how many connections shared each pair."""
    total = sum(a for a, _ in pairs)
    if any(a != b for a, b in pairs):
        failures.append("%s: a pair's keys differ: %r" % (what, pairs))
    if not done <= total <= done + CONNS:
        failures.append("%s: %d counted, %d reported" % (what, total, done))
    if any(a < 1 for a, _ in pairs) and per_pair == 1:
        failures.append("%s: a connection ran no transaction: %r" % (what, pairs))


def main():
    percore, load = sys.argv[1], sys.argv[2]
    failures = []
    kv = KvServer(percore, 2)
    peer = kv.peer()
    try:
        hot = apart(peer, ["a", "b"])
        keys = [hot("a"), hot("b")]
        done = run_load(load, kv.port, keys, [])
        check(failures, "shared keys", [tuple(values(peer, keys))], done, CONNS)

        names = ["p%d" % i for i in range(2 * CONNS)]
        own = apart(peer, names)
        keys = [own(n) for n in names]
        done = run_load(load, kv.port, keys, ["--per-tx", "2"])
        v = values(peer, keys)
        check(failures, "own keys", list(zip(v[0::2], v[1::2])), done, 1)

        # MULTI SET a v SET b v EXEC, as txn_bench.py --set runs it
        hot = apart(peer, ["s", "t"])
        keys = [hot("s"), hot("t")]
        run_load(load, kv.port, keys, ["--cmd", "SET", "--value", "v1"])
        got = []
        for k in keys:
            peer.send(enc("GET", k))
            got.append(peer.reader.reply()[1][1])
        if got != [b"v1", b"v1"]:
            failures.append("SET transactions left %r" % got)

        port = ["--port", str(kv.port)]
        for bad in (port + ["--per-tx", "3", "--key", "a", "--key", "b"],
                    port + ["--conns", "0", "--key", "a"], port, ["--key", "a"],
                    port + ["--value", "x" * 300, "--key", "a"]):
            out = subprocess.run([load] + bad, capture_output=True, text=True, timeout=60)
            if out.returncode != 2 or "usage:" not in out.stderr:
                failures.append("%r: exit %d, %r" % (bad, out.returncode, out.stderr))
    except (AssertionError, OSError, EOFError, ValueError) as e:
        failures.append(str(e))
    finally:
        peer.close()
        rc, err = kv.stop()
        if rc:
            failures.append("percore kv exited %d: %s" % (rc, err[-2000:]))
    for f in failures:
        print("FAIL:", f)
    print("txn_load_test: %s" % ("ok" if not failures else "%d failures" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
