#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Blocking commands over TCP against `percore kv --shards 2`, the replies
compared with a real redis-server doing the same steps: timeouts, a push
by another client waking the longest waiting one (on keys of both shards,
by LPUSH, RPUSH, ZADD, LMOVE's destination, a MULTI/EXEC), waiters served
first come first served, a client leaving while blocked losing nothing,
BLMOVE across shards refused; then a stress run: consumers blocked on keys
of both shards, producers pushing, every item delivered exactly once.
Exit 0 when all hold, 1 otherwise, 77 when redis-server is missing.

usage: block_test.py PERCORE [REDIS_SERVER]"""
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle as o  # noqa: E402

SEED = o.SEED


def cmd(peer, *args):
    peer.send(o.enc(*args))
    return peer.reader.reply()[0]


def send(peer, *args):
    peer.send(o.enc(*args))


def reply(peer):
    return peer.reader.reply()[0]


def timeouts(port, k):
    """Each blocking command times out with its nil, no earlier than asked."""
    out = []
    for args in (("BLPOP", k("a"), k("b"), 0.2), ("BRPOP", k("a"), 0.15), ("BLMOVE", k("a"), k("c"), "LEFT", "RIGHT", 0.1),
                 ("BRPOPLPUSH", k("a"), k("c"), 0.1), ("BLMPOP", 0.1, 2, k("a"), k("b"), "LEFT"),
                 ("BZPOPMIN", k("z"), 0.1), ("BZPOPMAX", k("z"), k("y"), 0.1), ("BZMPOP", 0.1, 1, k("z"), "MIN")):
        p = o.RedisPeer(port)
        t0 = time.monotonic()
        got = cmd(p, *args)
        took = time.monotonic() - t0
        out.append((args[0], got, took >= float(args[-1] if args[0] not in ("BLMPOP", "BZMPOP") else args[1]) - 0.01))
        p.close()
    return out


def wake(port, k):
    """Pushes by another client wake a blocked one, whichever way."""
    out = []
    cases = [(("BLPOP", k("a"), k("b"), 0), ("RPUSH", k("b"), "x", "y")),
             (("BRPOP", k("b"), k("a"), 0), ("LPUSH", k("a"), "l1", "l2")),
             (("BZPOPMIN", k("z"), k("y"), 0), ("ZADD", k("y"), 2, "m", 1, "n")),
             (("BZMPOP", 0, 2, k("z"), k("y"), "MAX", "COUNT", 5), ("ZADD", k("z"), 7, "q")),
             (("BLMPOP", 0, 2, k("c"), k("d"), "RIGHT", "COUNT", 2), ("RPUSH", k("d"), 1, 2, 3)),
             (("BLMOVE", k("e"), k("f"), "RIGHT", "LEFT", 0), ("RPUSH", k("e"), "mv")),
             (("BRPOPLPUSH", k("e"), k("f"), 0), ("RPUSH", k("e"), "mv2")),
             (("BLPOP", k("g"), 0), ("LMOVE", k("d"), k("g"), "LEFT", "LEFT")),
             (("BLPOP", k("h"), 0), "MULTI")]
    for blocked, push in cases:
        a, b = o.RedisPeer(port), o.RedisPeer(port)
        send(a, *blocked)
        time.sleep(0.1)
        if push == "MULTI":
            got = [cmd(b, "MULTI"), cmd(b, "RPUSH", k("h"), "t1"), cmd(b, "RPUSH", k("h"), "t2"), cmd(b, "EXEC")]
        else:
            got = [cmd(b, *push)]
        got.append(reply(a))
        got += [cmd(b, "LRANGE", k("f"), 0, -1), cmd(b, "LRANGE", k("d"), 0, -1), cmd(b, "ZRANGE", k("y"), 0, -1),
                cmd(b, "LRANGE", k("h"), 0, -1)]
        out.append((blocked, got))
        a.close()
        b.close()
    return out


def fifo(port, k):
    """Three clients blocked on one key are served in the order they
    blocked; one blocked on two keys is served once."""
    peers = [o.RedisPeer(port) for _ in range(4)]
    for i, p in enumerate(peers[:3]):
        send(p, "BLPOP", k("q"), 0) if i != 1 else send(p, "BLPOP", k("r"), k("q"), 0)
        time.sleep(0.1)
    got = [cmd(peers[3], "RPUSH", k("q"), 1, 2, 3, 4)] + [reply(p) for p in peers[:3]]
    got.append(cmd(peers[3], "RPUSH", k("r"), "only"))
    got.append(cmd(peers[3], "LRANGE", k("q"), 0, -1))
    got.append(cmd(peers[3], "LRANGE", k("r"), 0, -1))
    for p in peers:
        p.close()
    return got


def leave(port, k):
    """A client leaving while blocked takes nothing; the next one is served."""
    a, b, c = o.RedisPeer(port), o.RedisPeer(port), o.RedisPeer(port)
    send(a, "BLPOP", k("l"), k("m"), 0)
    time.sleep(0.1)
    a.close()
    time.sleep(0.1)
    send(b, "BRPOP", k("l"), 0)
    time.sleep(0.1)
    got = [cmd(c, "RPUSH", k("l"), "v1", "v2"), reply(b), cmd(c, "LRANGE", k("l"), 0, -1),
           cmd(c, "RPUSH", k("m"), "w"), cmd(c, "LRANGE", k("m"), 0, -1)]
    b.close()
    c.close()
    return got


def compare(name, ours, theirs, failures):
    if ours != theirs:
        failures.append("%s:\n  kv:    %r\n  redis: %r" % (name, ours, theirs))


def stress(port, names, failures, items=3000, consumers=12, producers=3):
    """Consumers loop on BLPOP over keys of both shards; producers push
    every item once; each item must reach exactly one consumer."""
    got, lock = [], threading.Lock()
    done = threading.Event()

    def consume():
        p = o.RedisPeer(port)
        while not done.is_set():
            r = cmd(p, "BLPOP", *names, 0.5)
            if r.startswith(b"*2"):
                item = r.split(b"\r\n")[4]
                with lock:
                    got.append(item)
                    if len(got) == items:
                        done.set()
        p.close()

    def produce(i):
        p = o.RedisPeer(port)
        rng = random.Random(SEED + i)
        mine = range(i, items, producers)
        for n in mine:
            send(p, rng.choice(["LPUSH", "RPUSH"]), rng.choice(names), "it%d" % n)
        for _ in mine:
            reply(p)
        p.close()

    threads = [threading.Thread(target=consume) for _ in range(consumers)]
    threads += [threading.Thread(target=produce, args=(i,)) for i in range(producers)]
    for t in threads:
        t.start()
    done.wait(120)
    done.set()
    for t in threads:
        t.join(30)
    p = o.RedisPeer(port)
    left = cmd(p, "EXISTS", *names)
    p.close()
    want = sorted(b"it%d" % n for n in range(items))
    if sorted(got) != want:
        dup = len(got) - len(set(got))
        failures.append("stress: %d items delivered of %d, %d twice, %s left in the lists"
                        % (len(set(got)), items, dup, left))
    elif left != b":0\r\n":
        failures.append("stress: lists not empty after every item was delivered: %r" % left)


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    server = sys.argv[2] if len(sys.argv) > 2 else "redis-server"
    if not any(os.access(os.path.join(d, server), os.X_OK) for d in os.environ["PATH"].split(":")) \
            and not os.access(server, os.X_OK):
        print("block_test: skipped, redis-server is not installed (scripts/deps.sh installs it)")
        return 77
    print("block_test: PC_TEST_SEED=%#x" % SEED)
    proc, rport = o.start_redis(server)
    kv = o.KvServer(sys.argv[1])
    failures = []
    try:
        probe = kv.peer()
        keys = ["a", "b", "c", "d", "e", "f", "g", "h", "l", "m", "q", "r", "y", "z"]
        # neighbours on different shards, BLMOVE's source and destination on one
        k = o.placed(probe, keys, lambda i: 0 if keys[i] in ("e", "f") else i % 2)
        for name, fn in (("timeouts", timeouts), ("wake", wake), ("fifo", fifo), ("leave", leave)):
            probe.send(o.enc("FLUSHALL"))
            probe.reader.reply()
            r = o.RedisPeer(rport)
            cmd(r, "FLUSHALL")
            r.close()
            compare(name, fn(kv.port, k), fn(rport, k), failures)
        apart = o.apart(probe, ["s", "t"])
        got = cmd(probe, "BLMOVE", apart("s"), apart("t"), "LEFT", "LEFT", 0)
        if got != o.CROSSSLOT:
            failures.append("BLMOVE across shards: %r" % got)
        names = [o.apart(probe, ["k%d" % i for i in range(6)])("k%d" % i) for i in range(6)]
        probe.close()
        stress(kv.port, names, failures)
    except (OSError, EOFError) as e:
        failures.append("connection lost: %r" % e)
    finally:
        proc.kill()
        proc.wait()
        rc, err = kv.stop()
        if rc != 0 or "Sanitizer" in err or "runtime error" in err:
            failures.append("percore kv exited %d: %s" % (rc, err[-3000:]))
    for f in failures:
        print("FAIL " + f)
    print("block_test: %s" % ("ok" if not failures else "%d failures" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
