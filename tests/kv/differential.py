#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A randomized differential test of percore kv against redis-server: a
seeded generator of commands over every type (strings, keys, hashes,
sets, lists, sorted sets, bits) on a few shared key names, so values
change type and WRONGTYPE comes up, sent in pipelined batches to
`percore kv --shards 1` and `--shards 3` and to a real redis-server, the
replies compared byte for byte (as sets where Redis's order is a hash
table's; by length for random picks; TTLs within a second and the
longest lag between the two servers' runs of a batch).

On a mismatch it prints the seed (PC_TEST_SEED) and a shortened sequence
that still ends in a differing reply: commands are dropped while the last
reply still differs, each try replayed on both servers after FLUSHALL.

With several shards, the commands whose keys must share a shard
(SAMESHARD in commands.def) are left out: their names hash to random
shards. Exit 0 when every reply matches, 1 when any differs, 77 when
redis-server is not installed.

usage: differential.py PERCORE [COMMANDS] [REDIS_SERVER]"""
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402

SEED = int(os.environ.get("PC_TEST_SEED", "0xd1ff0033"), 0)
COMMANDS = int(os.environ.get("PC_DIFF_COMMANDS", "100000"))
BATCH = 64
SHRINK_SECONDS = 60

KEYS = ["d%d" % i for i in range(8)]
LEX_KEYS = ["lex0", "lex1"]
FIELDS = ["f%d" % i for i in range(6)] + [""]
MEMBERS = ["m%d" % i for i in range(10)] + ["", "1", "-2", "x" * 70]
NUMS = ["0", "1", "-1", "7", "2.5", "1e3", "-0", "inf", "abc", "9223372036854775807"]
SCORES = ["0", "1", "-1", "2.5", "inf", "-inf", "(1", "1e3", "(2.5"]
LEX = ["-", "+", "[m3", "(m5", "[m", "(m10"]

# Replies whose order is a hash table's (compared as sets or pairs), and
# random picks (compared by length).
SORTED = {"SMEMBERS", "SINTER", "SUNION", "SDIFF", "HKEYS", "HVALS", "KEYS"}
PAIRS = {"HGETALL"}
LENGTH = {"SRANDMEMBER", "HRANDFIELD", "ZRANDMEMBER"}
TTL = {"TTL": "ttl", "PTTL": "pttl"}


def sameshard_commands(defs):
    """Commands whose keys must live on one shard (CROSSSLOT otherwise)."""
    out = set()
    for line in open(defs):
        if line.startswith("KV_COMMAND(") and "SAMESHARD" in line:
            out.add(line.split('"')[1].upper())
    return out


class Gen:
    """A seeded stream of commands."""

    def __init__(self, rng, skip):
        self.rng, self.skip = rng, skip
        r = rng
        k, m, f, n = self.k, self.m, self.f, self.n
        i = self.i
        self.gens = [
            # strings and numbers
            lambda: ("SET", k(), m()), lambda: ("SET", k(), n(), r.choice(["NX", "XX", "GET", "KEEPTTL"])),
            lambda: ("GET", k()), lambda: ("APPEND", k(), m()), lambda: ("STRLEN", k()),
            lambda: ("INCR", k()), lambda: ("INCRBY", k(), n()), lambda: ("DECRBY", k(), i()),
            lambda: ("INCRBYFLOAT", k(), n()), lambda: ("GETRANGE", k(), i(), i()),
            lambda: ("SETRANGE", k(), r.randrange(0, 20), m()), lambda: ("GETDEL", k()),
            lambda: ("MSET", k(), m(), k(), n()), lambda: ("MGET", k(), k(), k()),
            lambda: ("MSETNX", k(), m(), k(), m()), lambda: ("SETNX", k(), m()), lambda: ("GETSET", k(), n()),
            lambda: ("SUBSTR", k(), i(), i()), lambda: ("LCS", k(), k()),
            # bits
            lambda: ("SETBIT", k(), r.randrange(0, 64), r.choice(["0", "1"])),
            lambda: ("GETBIT", k(), r.randrange(0, 64)), lambda: ("BITCOUNT", k(), i(), i()),
            lambda: ("BITPOS", k(), r.choice(["0", "1"]), i()),
            lambda: ("BITOP", r.choice(["AND", "OR", "XOR"]), k(), k(), k()),
            lambda: ("BITFIELD", k(), "INCRBY", r.choice(["u8", "i5", "u1"]), r.randrange(0, 30), n()),
            # keys
            lambda: ("DEL", k(), k()), lambda: ("EXISTS", k(), k()), lambda: ("TYPE", k()),
            lambda: ("EXPIRE", k(), r.randrange(100, 1000)), lambda: ("PERSIST", k()), lambda: ("TTL", k()),
            lambda: ("PTTL", k()), lambda: ("RENAME", k(), k()), lambda: ("RENAMENX", k(), k()),
            lambda: ("COPY", k(), k(), *r.choice([(), ("REPLACE",)])), lambda: ("UNLINK", k()),
            lambda: ("TOUCH", k(), k()), lambda: ("KEYS", "d*"), lambda: ("DBSIZE",),
            lambda: ("OBJECT", "ENCODING", k()),
            lambda: ("SORT", k(), *r.choice([(), ("ALPHA",), ("DESC", "ALPHA"), ("DESC",),
                                             ("LIMIT", i(), i(), "ALPHA")])),
            lambda: ("SORT", k(), "ALPHA", *r.choice([(), ("DESC",)]), "STORE", k()),
            lambda: ("SORT", k(), "BY", "nosort", *r.choice([(), ("DESC",)]), "STORE", k()),
            lambda: ("SORT_RO", k(), "ALPHA", "GET", "#", "LIMIT", r.randrange(0, 3), r.randrange(-1, 3)),
            # hashes
            lambda: ("HSET", k(), f(), m(), f(), n()), lambda: ("HGET", k(), f()),
            lambda: ("HMGET", k(), f(), f()), lambda: ("HDEL", k(), f(), f()), lambda: ("HLEN", k()),
            lambda: ("HEXISTS", k(), f()), lambda: ("HINCRBY", k(), f(), i()),
            lambda: ("HINCRBYFLOAT", k(), f(), n()), lambda: ("HSETNX", k(), f(), m()),
            lambda: ("HSTRLEN", k(), f()), lambda: ("HGETALL", k()), lambda: ("HKEYS", k()),
            lambda: ("HVALS", k()), lambda: ("HRANDFIELD", k(), r.randrange(-3, 4)),
            # sets
            lambda: ("SADD", k(), m(), m(), m()), lambda: ("SREM", k(), m(), m()), lambda: ("SCARD", k()),
            lambda: ("SISMEMBER", k(), m()), lambda: ("SMISMEMBER", k(), m(), m()),
            lambda: ("SMEMBERS", k()), lambda: ("SRANDMEMBER", k(), r.randrange(-3, 4)),
            lambda: ("SMOVE", k(), k(), m()), lambda: ("SINTER", k(), k()), lambda: ("SUNION", k(), k()),
            lambda: ("SDIFF", k(), k()), lambda: ("SINTERCARD", 2, k(), k()),
            lambda: (r.choice(["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"]), k(), k(), k()),
            # lists
            lambda: ("LPUSH", k(), m(), m()), lambda: ("RPUSH", k(), m()), lambda: ("LPUSHX", k(), m()),
            lambda: ("RPUSHX", k(), m()), lambda: ("LPOP", k()), lambda: ("RPOP", k(), r.randrange(0, 4)),
            lambda: ("LLEN", k()), lambda: ("LRANGE", k(), i(), i()), lambda: ("LINDEX", k(), i()),
            lambda: ("LSET", k(), i(), m()),
            lambda: ("LINSERT", k(), r.choice(["BEFORE", "AFTER"]), m(), m()),
            lambda: ("LREM", k(), i(), m()), lambda: ("LTRIM", k(), i(), i()),
            lambda: ("LPOS", k(), m(), "RANK", r.choice(["1", "-1", "2"]), "COUNT", r.randrange(0, 3)),
            lambda: ("LMOVE", k(), k(), r.choice(["LEFT", "RIGHT"]), r.choice(["LEFT", "RIGHT"])),
            lambda: ("RPOPLPUSH", k(), k()),
            lambda: ("LMPOP", 2, k(), k(), r.choice(["LEFT", "RIGHT"]), "COUNT", r.randrange(1, 4)),
            # sorted sets
            lambda: ("ZADD", k(), *r.choice([(), ("NX",), ("XX",), ("GT", "CH"), ("LT",)]),
                     self.s().lstrip("("), m()),
            lambda: ("ZADD", k(), "0", m(), "0", m()), lambda: ("ZINCRBY", k(), n(), m()),
            lambda: ("ZREM", k(), m(), m()), lambda: ("ZCARD", k()), lambda: ("ZCOUNT", k(), self.s(), self.s()),
            lambda: ("ZSCORE", k(), m()), lambda: ("ZMSCORE", k(), m(), m()), lambda: ("ZRANK", k(), m()),
            lambda: ("ZREVRANK", k(), m()), lambda: ("ZRANGE", k(), i(), i(), "WITHSCORES"),
            lambda: ("ZRANGE", k(), self.s(), self.s(), "BYSCORE", "LIMIT", r.randrange(0, 3), r.randrange(-1, 3)),
            lambda: ("ZPOPMIN", k(), r.randrange(0, 3)), lambda: ("ZPOPMAX", k()),
            lambda: ("ZREMRANGEBYRANK", k(), i(), i()), lambda: ("ZREMRANGEBYSCORE", k(), self.s(), self.s()),
            lambda: ("ZRANDMEMBER", k(), r.randrange(-3, 4)),
            lambda: ("ZMPOP", 2, k(), k(), r.choice(["MIN", "MAX"])),
        ]

        # lex ranges are defined only where every score is equal: keys of
        # their own, which only these commands touch
        lk = self.lk
        self.lex_gens = [
            lambda: ("ZADD", lk(), "0", m(), "0", m()), lambda: ("ZREM", lk(), m()),
            lambda: ("ZLEXCOUNT", lk(), r.choice(LEX), r.choice(LEX)),
            lambda: ("ZRANGEBYLEX", lk(), r.choice(LEX), r.choice(LEX), "LIMIT", 0, r.randrange(-1, 3)),
            lambda: ("ZREVRANGEBYLEX", lk(), r.choice(LEX), r.choice(LEX)),
            lambda: ("ZRANGE", lk(), r.choice(LEX), r.choice(LEX), "BYLEX", "REV"),
            lambda: ("ZREMRANGEBYLEX", lk(), r.choice(LEX), r.choice(LEX)),
        ]

    def lk(self):
        return self.rng.choice(LEX_KEYS)

    def k(self):
        return self.rng.choice(KEYS)

    def m(self):
        return self.rng.choice(MEMBERS)

    def f(self):
        return self.rng.choice(FIELDS)

    def n(self):
        return self.rng.choice(NUMS)

    def s(self):
        return self.rng.choice(SCORES)

    def i(self):
        return str(self.rng.randrange(-6, 7))

    def next(self):
        while True:
            gens = self.lex_gens if self.rng.random() < 0.05 else self.gens
            cmd = self.rng.choice(gens)()
            if cmd[0] not in self.skip:
                return tuple(str(a) for a in cmd)


def mode_of(cmd):
    name = cmd[0].upper()
    if name in SORTED:
        return "sorted"
    if name in PAIRS:
        return "pairs"
    if name in LENGTH and len(cmd) > 2:
        return "len"
    return TTL.get(name, "exact")


def run(cmds, ours, redis):
    """Sends cmds to both in pipelined batches: the index of the first
    reply that differs with both replies, or None. redis-server runs a
    batch once percore kv has answered it: a command runs there later
    than here by at most the batch's time on both, and an EXPIRE's and a
    later TTL's delays may differ by as much (seconds on a loaded
    machine), on top of the second a TTL's rounding may take."""
    lag_ms = 0
    for start in range(0, len(cmds), BATCH):
        batch = cmds[start:start + BATCH]
        item = oracle.RAW(b"".join(oracle.enc(*c) for c in batch), len(batch))
        t0 = time.monotonic()
        mine, theirs = oracle.replies(ours, item), oracle.replies(redis, item)
        lag_ms = max(lag_ms, int((time.monotonic() - t0) * 1000) + 1)
        for j, (a, b) in enumerate(zip(mine, theirs)):
            if not oracle.same(mode_of(batch[j]), a, b, lag_ms):
                return start + j, a[0], b[0]
    return None


def differs(cmds, ours, redis):
    """Whether cmds, replayed from empty servers, end in a differing reply."""
    got = run([("FLUSHALL",)] + cmds, ours, redis)
    return got is not None and got[0] == len(cmds)


def shrink(cmds, ours, redis):
    """A shorter sequence whose last reply still differs (delta debugging
    over what comes before the last command), within SHRINK_SECONDS."""
    deadline = time.monotonic() + SHRINK_SECONDS
    chunk = max(1, (len(cmds) - 1) // 2)
    while chunk >= 1 and time.monotonic() < deadline:
        i, removed = 0, False
        while i < len(cmds) - 1 and time.monotonic() < deadline:
            trial = cmds[:i] + cmds[min(i + chunk, len(cmds) - 1):]
            if len(trial) < len(cmds) and differs(trial, ours, redis):
                cmds, removed = trial, True
            else:
                i += chunk
        if not removed:
            chunk //= 2
    return cmds


def one_config(percore, shards, server_port, skip):
    rng = random.Random(SEED + shards)
    gen = Gen(rng, skip)
    cmds = [gen.next() for _ in range(COMMANDS)]
    kv = oracle.KvServer(percore, shards=shards)
    failures = []
    try:
        ours, redis = kv.peer(), oracle.RedisPeer(server_port)
        got = run([("FLUSHALL",)] + cmds, ours, redis)
        if got is not None:
            idx, a, b = got
            seq = shrink(cmds[:idx], ours, redis)
            failures.append("--shards %d, PC_TEST_SEED=%#x: command %d %r\n  kv:    %s\n  redis: %s\n"
                            "  a shortened sequence (%d commands) that still differs:\n    %s"
                            % (shards, SEED, idx, cmds[idx - 1], oracle.show(a), oracle.show(b),
                               len(seq), "\n    ".join(" ".join(c) for c in seq)))
        ours.close()
        redis.close()
    finally:
        rc, err = kv.stop()
        if rc != 0 or "Sanitizer" in err or "runtime error" in err:
            failures.append("percore kv --shards %d exited %d: %s" % (shards, rc, err[-3000:]))
    return failures


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    percore = sys.argv[1]
    defs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "apps", "kv",
                        "proto", "commands.def")
    server = sys.argv[2] if len(sys.argv) > 2 else "redis-server"
    if not any(os.access(os.path.join(d, server), os.X_OK) for d in os.environ["PATH"].split(":")) \
            and not os.access(server, os.X_OK):
        print("differential: skipped, redis-server is not installed (scripts/deps.sh installs it)")
        return 77
    print("differential: PC_TEST_SEED=%#x, %d commands per configuration" % (SEED, COMMANDS))
    proc, port = oracle.start_redis(server)
    failures = []
    try:
        for shards in (1, 3):
            skip = sameshard_commands(defs) if shards > 1 else set()
            t0 = time.monotonic()
            failures += one_config(percore, shards, port, skip)
            print("differential: --shards %d done in %.1f s" % (shards, time.monotonic() - t0))
    finally:
        proc.kill()
        proc.wait()
    for f in failures:
        print("MISMATCH " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
