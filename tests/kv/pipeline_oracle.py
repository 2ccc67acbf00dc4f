#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Pipelines against redis-server: the same random pipelines, each sent in
one write, to `percore kv` with 2 shards and with 3 and to a real
redis-server, one connection each; every reply must be byte for byte the
same.

The commands mix keys of both shards over a few names, so a pipeline
holds requests that run at home, requests that hop to the other shard,
and commands over several shards (MSET, MGET, DEL, EXISTS, RENAME,
MSETNX) between them, runs of MSETs, and now and then many such commands
on keys of their own: their replies must come back in request order, and
each must see exactly what the requests before it on the connection did.
With 3 shards a command over two of them can finish before a request
sent earlier to the third. Runs of commands on members of a large set,
hash and sorted set (past the listpack sizes, so with a member index)
come now and then: a pipeline's members are hashed ahead once, and each
lookup and insertion must still find its own.

usage: pipeline_oracle.py PERCORE [REDIS_SERVER]
PC_TEST_SEED sets the seed (printed); exit 0 all equal, 1 a difference,
77 (skipped) without redis-server.
"""
import os
import random
import shutil
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle import KvServer, start_redis  # noqa: E402

SEED = int(os.environ.get("PC_TEST_SEED", "0"), 0) or random.randrange(1 << 32)
PIPELINES = int(os.environ.get("KV_PIPELINES", "300"))
KEYS = ["p:%d" % i for i in range(10)]


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Reader:
    """Reads whole RESP2 replies from a socket, as raw bytes."""

    def __init__(self, sock):
        self.s, self.buf = sock, b""

    def _more(self):
        d = self.s.recv(1 << 16)
        if not d:
            raise EOFError("connection closed")
        self.buf += d

    def _line(self, at):
        while True:
            i = self.buf.find(b"\r\n", at)
            if i >= 0:
                return i
            self._more()

    def _end(self, at):
        """Where the reply starting at `at` ends."""
        e = self._line(at)
        kind, head = self.buf[at:at + 1], self.buf[at + 1:e]
        if kind in b"+-:":
            return e + 2
        n = int(head)
        if kind == b"$":
            if n < 0:
                return e + 2
            while len(self.buf) < e + 2 + n + 2:
                self._more()
            return e + 2 + n + 2
        at = e + 2
        for _ in range(max(n, 0)):
            at = self._end(at)
        return at

    def reply(self):
        end = self._end(0)
        r, self.buf = self.buf[:end], self.buf[end:]
        return r


def command(rng, step):
    k = lambda: rng.choice(KEYS)  # noqa: E731
    kinds = [
        lambda: ["SET", k(), "v%d" % step],
        lambda: ["GET", k()],
        lambda: ["INCR", k()],
        lambda: ["APPEND", k(), "a"],
        lambda: ["STRLEN", k()],
        lambda: ["DEL"] + [k() for _ in range(rng.randint(1, 3))],
        lambda: ["EXISTS"] + [k() for _ in range(rng.randint(1, 3))],
        lambda: ["MGET"] + [k() for _ in range(rng.randint(1, 4))],
        lambda: ["MSET"] + sum(([k(), "m%d" % step] for _ in range(rng.randint(1, 3))), []),
        lambda: ["MSETNX"] + sum(([k(), "n%d" % step] for _ in range(rng.randint(1, 2))), []),
        lambda: ["RENAME", k(), k()],
        lambda: ["HSET", k(), "f", step],
        lambda: ["SADD", k(), step % 4],
        lambda: ["TYPE", k()],
        lambda: ["PING"],
        lambda: ["DBSIZE"],
    ]
    weights = [14, 14, 6, 4, 3, 5, 4, 6, 6, 2, 2, 2, 2, 2, 1, 1]
    return rng.choices(kinds, weights)[0]()


def mset_run(rng, step):
    """MSETs one after another, as a pipeline of them comes: kv runs such a
    run over several shards as one transaction, and each must still see
    (and leave) what running them one at a time would. Now and then wide
    ones, with an MGET of as many keys between them: a read's look ahead
    keeps 1,024 arguments at most, so some of them are kept whole, one in
    part and the rest not at all, and each must run as parsed. A few wider
    still: a request brings its keys' hashes into the run up to 256 keys,
    so a run mixes requests hashed once with requests hashed again."""
    width = rng.random()
    pairs = (257, 300) if width < 0.05 else (20, 60) if width < 0.3 else (1, 4)
    cmds = []
    for i in range(rng.randint(2, 80)):
        cmds.append(["MSET"] + sum(([rng.choice(KEYS), "r%d.%d" % (step, i)]
                                    for _ in range(rng.randint(*pairs))), []))
        if pairs[0] > 1 and rng.random() < 0.2:
            cmds.append(["MGET"] + [rng.choice(KEYS) for _ in range(rng.randint(*pairs))])
    return cmds


# A set, a hash and a sorted set with a member index (past the listpack
# sizes), made before the first pipeline; their members are m0..m299.
BIG = ("big:s", "big:h", "big:z")
BIG_MEMBERS = 300


def big_fill():
    ms = ["m%d" % i for i in range(BIG_MEMBERS)]
    return [["SADD", BIG[0]] + ms,
            ["HSET", BIG[1]] + sum(([m, "v"] for m in ms), []),
            ["ZADD", BIG[2]] + sum(([i, m] for i, m in enumerate(ms)), [])]


def members_run(rng, step):
    """Members looked up, added, changed and removed, present or not, some
    named twice in the run."""
    m = lambda: "m%d" % rng.randrange(BIG_MEMBERS + 100)  # noqa: E731
    kinds = [
        lambda: ["SADD", BIG[0], m()], lambda: ["SREM", BIG[0], m()],
        lambda: ["SISMEMBER", BIG[0], m()],
        lambda: ["HSET", BIG[1], m(), "w%d" % step], lambda: ["HGET", BIG[1], m()],
        lambda: ["HDEL", BIG[1], m()], lambda: ["HINCRBY", BIG[1], m(), 1],
        lambda: ["ZADD", BIG[2], rng.randrange(1000), m()], lambda: ["ZSCORE", BIG[2], m()],
        lambda: ["ZREM", BIG[2], m()], lambda: ["ZINCRBY", BIG[2], 2, m()],
        lambda: ["ZRANK", BIG[2], m()],
    ]
    return [rng.choice(kinds)() for _ in range(rng.randint(2, 60))]


def disjoint(rng, pipeline):
    """Commands over several shards on keys no other command of the
    pipeline names, with requests on other keys between them: kv keeps up
    to 64 such commands under way while the requests after them go on,
    so the sixty-fifth waits; a read of all the keys at the end."""
    keys = ["d:%d:%d" % (pipeline, i) for i in range(4 * 120)]
    cmds, at = [], 0
    for i in range(rng.randint(40, 120)):
        mine, at = keys[at:at + 3], at + 3
        cmds.append(rng.choice([["MSET"] + sum(([k, "x%d" % i] for k in mine), []),
                                ["MGET"] + mine, ["DEL"] + mine, ["EXISTS"] + mine]))
        if rng.random() < 0.5:
            cmds.append(["SET", keys[at], "s%d" % i])
            at += 1
    return cmds + [["MGET"] + keys[:at]]


def run(ours, theirs, rng, fails, pipeline):
    n = rng.choice([1, 2, 5, 16, 64, 200])
    cmds = disjoint(rng, pipeline) if rng.random() < 0.1 else []
    for i in range(n):
        r = rng.random()
        cmds += (mset_run(rng, i) if r < 0.05 else members_run(rng, i) if r < 0.1
                 else [command(rng, i)])
    n = len(cmds)
    wire = b"".join(encode(c) for c in cmds)
    ours[0].sendall(wire)
    theirs[0].sendall(wire)
    for i, c in enumerate(cmds):
        a, b = ours[1].reply(), theirs[1].reply()
        if a != b:
            fails.append("pipeline of %d, request %d %r: kv %r, redis %r"
                         % (n, i, c, a[:80], b[:80]))
            fails.append("the pipeline: %r" % cmds[:i + 1])
            return False
    return True


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    server = sys.argv[2] if len(sys.argv) > 2 else "redis-server"
    if not shutil.which(server):
        print("pipeline oracle: skipped, redis-server is not installed (scripts/deps.sh)")
        return 77
    print("pipeline oracle: PC_TEST_SEED=%#x, %d pipelines" % (SEED, PIPELINES))
    fails = []
    for shards in (2, 3):
        compare(sys.argv[1], server, shards, random.Random(SEED + shards), fails)
    for f in fails:
        print("FAIL " + f)
    print("pipeline oracle: %d failures" % len(fails))
    return 1 if fails else 0


def compare(percore, server, shards, rng, fails):
    proc, port = start_redis(server)
    kv = KvServer(percore, shards)
    try:
        socks = [socket.create_connection(("127.0.0.1", p), timeout=60) for p in (kv.port, port)]
        ours, theirs = [(s, Reader(s)) for s in socks]
        for c in big_fill():
            for s, r in (ours, theirs):
                s.sendall(encode(c))
                r.reply()
        for pipeline in range(PIPELINES):
            if not run(ours, theirs, rng, fails, pipeline):
                break
        for s in socks:
            s.close()
    finally:
        proc.kill()
        proc.wait()
        rc, err = kv.stop()
        if rc != 0 or "Sanitizer" in err or "runtime error" in err:
            fails.append("%d shards: percore kv exited %d: %s" % (shards, rc, err[-3000:]))


if __name__ == "__main__":
    sys.exit(main())
