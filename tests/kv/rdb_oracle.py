#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Round trips of values between redis-server and percore kv's value codec
(RDB version 10, DUMP's framing), for every type and encoding:
random strings (empty, integers, binary, long compressible and not, 1 MB),
hashes and sorted sets small (listpack) and large, sets of integers
(intset) and not, lists short and long, elements small and large.

Each value is made in redis-server and DUMPed; then
 - the codec alone (kv_rdb_tool) decodes and encodes it again, and
 - for the types percore kv has commands for, kv_exec RESTOREs it and
   DUMPs it back;
each result is RESTOREd into redis-server under a new key, which must
hold the same value in the same encoding. Where Redis's own encoding of a
value is deterministic (strings, listpack, intset, skiplist), redis-server's
DUMP of the new key must also equal the first DUMP byte for byte.
Exit 0 when all match, 1 when any differs, 77 when redis-server is not
installed.

usage: rdb_oracle.py KV_RDB_TOOL KV_EXEC [REDIS_SERVER]"""
import os
import random
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle import ExecPeer, RedisPeer, enc, start_redis  # noqa: E402

SEED = int(os.environ.get("PC_TEST_SEED", "0x5eed0033"), 0)
KV_TYPES = ("string", "hash", "set")   # the types kv_exec can RESTORE


def call(peer, *args):
    peer.send(enc(*args))
    return peer.reader.reply()[1]


def value(v):
    """A parsed reply as plain Python data."""
    kind, x = v
    if kind == b"*":
        return [value(item) for _, item in x]
    if kind == b"-":
        raise RuntimeError("error reply: %r" % x)
    return x


def rand_bytes(rng, n):
    return bytes(rng.getrandbits(8) for _ in range(n))


def rand_str(rng):
    pick = rng.randrange(10)
    if pick == 0:
        return b""
    if pick == 1:
        return str(rng.choice([0, 1, -1, 127, -128, 128, -129, 32767, -32768, 32768,
                               2 ** 31 - 1, -2 ** 31, 2 ** 31, 2 ** 63 - 1, -2 ** 63,
                               rng.randrange(-10 ** 12, 10 ** 12)])).encode()
    if pick == 2:
        return rng.choice([b"007", b"+1", b"-0", b" 1", b"1.5", b"12345678901", b"99999999999999999999"])
    if pick == 3:
        return rand_bytes(rng, rng.randrange(1, 80))
    if pick == 4:
        unit = rand_bytes(rng, rng.randrange(1, 12))
        return (unit * 10000)[:rng.randrange(21, 20000)]
    if pick == 5:
        return rand_bytes(rng, rng.randrange(21, 3000))
    return b"%s:%d" % (rng.choice([b"user", b"k", b"field", b"x" * 70]), rng.randrange(1000))


def rand_score(rng):
    return rng.choice([0, 1, -1, 1.5, -2.25, 1e300, -1e-300, 3.141592653589793, 2 ** 53,
                       float("inf"), float("-inf"), rng.randrange(-1000, 1000),
                       rng.uniform(-1e6, 1e6)])


def fmt_score(s):
    return "inf" if s == float("inf") else "-inf" if s == float("-inf") else repr(s)


def make_values(rng, redis):
    """(key, type) of each value made in redis-server."""
    made = []
    n = 0

    def key():
        nonlocal n
        n += 1
        return b"k%d" % n

    for v in [rand_str(rng) for _ in range(150)] + [b"x" * (1 << 20), rand_bytes(rng, 1 << 16)]:
        k = key()
        call(redis, "SET", k, v)
        made.append((k, "string"))
    for size in [1, 2, 5, 100, 512, 513, 2000] + [rng.randrange(1, 60) for _ in range(20)]:
        k = key()
        long_values = rng.random() < 0.2
        for i in range(size):
            f = rand_str(rng) + b"%d" % i
            v = rand_str(rng) if not long_values else b"v" * 100
            call(redis, "HSET", k, f, v)
        made.append((k, "hash"))
    for size, ints in [(1, True), (3, True), (512, True), (513, True), (5, False), (600, False)] + \
            [(rng.randrange(1, 40), rng.random() < 0.6) for _ in range(20)]:
        k = key()
        for i in range(size):
            m = str(rng.choice([i, -i, i * 40000, i * 3000000000, rng.randrange(-2 ** 63, 2 ** 63)])) \
                if ints else rand_str(rng) + b"%d" % i
            call(redis, "SADD", k, m)
        made.append((k, "set"))
    for size in [1, 2, 10, 1000, 20000] + [rng.randrange(1, 80) for _ in range(20)]:
        k = key()
        for i in range(size):
            call(redis, "RPUSH", k, rand_str(rng) if rng.random() < 0.9 else b"L" * 10000)
        made.append((k, "list"))
    for size in [1, 3, 128, 129, 1000] + [rng.randrange(1, 50) for _ in range(20)]:
        k = key()
        long_members = rng.random() < 0.2
        for i in range(size):
            m = rand_str(rng) + b"%d" % i + (b"m" * 80 if long_members else b"")
            call(redis, "ZADD", k, fmt_score(rand_score(rng)), m)
        made.append((k, "zset"))
    return made


def snapshot(redis, k, t):
    """The value of k in a form compared exactly, and its encoding."""
    get = {"string": ("GET",), "hash": ("HGETALL",), "set": ("SMEMBERS",),
           "list": ("LRANGE", 0, -1), "zset": ("ZRANGE", 0, -1, "WITHSCORES")}[t]
    v = value(call(redis, get[0], k, *get[1:]))
    if t == "hash":
        v = sorted(zip(v[0::2], v[1::2]))
    elif t == "set":
        v = sorted(v)
    return v, value(call(redis, "OBJECT", "ENCODING", k)), value(call(redis, "TYPE", k))


def deterministic(encoding):
    return encoding in (b"int", b"embstr", b"raw", b"listpack", b"intset", b"skiplist")


def tool_roundtrip(tool, payloads):
    """Every payload through kv_rdb_tool: the re-encoded payloads, or
    ("refused", why)."""
    data = b"".join(struct.pack("<I", len(p)) + p for p in payloads)
    out = subprocess.run([tool], input=data, stdout=subprocess.PIPE, check=True, timeout=600).stdout
    res, pos = [], 0
    for _ in payloads:
        (n,) = struct.unpack_from("<I", out, pos)
        pos += 4
        if n == 0xFFFFFFFF:
            (m,) = struct.unpack_from("<I", out, pos)
            res.append(("refused", out[pos + 4:pos + 4 + m]))
            pos += 4 + m
        else:
            res.append(out[pos:pos + n])
            pos += n
    return res


def exec_roundtrip(kv_exec, payloads):
    """Each payload RESTOREd into kv_exec and DUMPed back."""
    peer = ExecPeer(kv_exec)
    res = []
    for i, p in enumerate(payloads):
        k = b"r%d" % i
        ok = call(peer, "RESTORE", k, 0, p)
        res.append(value(call(peer, "DUMP", k)) if ok == (b"+", b"OK") else ("refused", ok))
    peer.close()
    return res


def check(redis, made, payloads, results, label, failures):
    for (k, t), orig, got in zip(made, payloads, results):
        if isinstance(got, tuple):
            failures.append("%s %s (%s): refused: %r" % (label, k, t, got[1]))
            continue
        nk = b"copy:" + k
        r = call(redis, "RESTORE", nk, 0, got, "REPLACE")
        if r != (b"+", b"OK"):
            failures.append("%s %s (%s): redis-server refuses our payload: %r" % (label, k, t, r))
            continue
        a, b = snapshot(redis, k, t), snapshot(redis, nk, t)
        if a != b:
            failures.append("%s %s (%s): value or encoding differs after the round trip (%r vs %r)"
                            % (label, k, t, a[1:], b[1:]))
        elif deterministic(a[1]) and value(call(redis, "DUMP", nk)) != orig:
            failures.append("%s %s (%s, %s): redis-server's DUMP differs after the round trip"
                            % (label, k, t, a[1].decode()))


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    tool, kv_exec = sys.argv[1], sys.argv[2]
    server = sys.argv[3] if len(sys.argv) > 3 else "redis-server"
    if not shutil.which(server) and not os.access(server, os.X_OK):
        print("rdb_oracle: skipped, redis-server is not installed (scripts/deps.sh installs it)")
        return 77
    rng = random.Random(SEED)
    print("rdb_oracle: PC_TEST_SEED=%#x" % SEED)
    proc, port = start_redis(server)
    failures = []
    try:
        redis = RedisPeer(port)
        made = make_values(rng, redis)
        payloads = [value(call(redis, "DUMP", k)) for k, _ in made]
        check(redis, made, payloads, tool_roundtrip(tool, payloads), "codec", failures)
        kv = [(m, p) for m, p in zip(made, payloads) if m[1] in KV_TYPES]
        check(redis, [m for m, _ in kv], [p for _, p in kv],
              exec_roundtrip(kv_exec, [p for _, p in kv]), "RESTORE/DUMP", failures)
        redis.close()
    finally:
        proc.kill()
        proc.wait()
    for f in failures:
        print("MISMATCH " + f)
    print("rdb_oracle: %d values, %d round trips differ" % (len(made), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
