#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`percore kv --appendonly yes`: the append-only files keep every write
across a stop and a kill -9 (one and two shards, each appendfsync mode),
with relative expiry, SPOP, INCRBYFLOAT and transactions in their
effective form; redis-check-aof passes every file; a one-shard file loads
into redis-server 7.0 with the same keys, values and TTLs; a torn last
record is cut (or refused with --aof-load-truncated no), a damaged record
elsewhere stops the start naming file, offset and redis-check-aof --fix,
and records nothing as dropped in the other files;
a write spanning shards whose part is missing from one file is recovered
on no shard, an EXEC over shards included (one marked group per shard it
writes on, a plain MULTI ... EXEC when it writes on one); keys expired or
evicted are recorded as DEL (redis-server loads the file with a write
made after an expiry as it was made; an evicted key stays gone after a
restart); files of another shard count are converted (a conversion a
crash cut short is completed at the next start); a full disk
refuses writes with MISCONF, keeps reads, and writes resume once there is
room again.
Exit 0 when all pass, 1 on a failure, 77 when redis-server or
redis-check-aof is not installed.

usage: aof_test.py PERCORE [TEST...]"""
import glob
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_test as st  # noqa: E402
from server_test import Conn, check  # noqa: E402
from oracle import enc, free_port  # noqa: E402

SEED = int(os.environ.get("PC_TEST_SEED", "0x5eed0031"), 0)
TTL_SLACK_MS = 5000


def start(d, shards, *extra):
    return st.Server("--shards", str(shards), "--appendonly", "yes", "--dir", d, *extra)


def kill9(srv):
    srv.p.kill()
    srv.p.wait()


def workload(c, rng):
    """Writes of every kind, some spanning shards; returns nothing (the
    state is read back whole)."""
    for i in range(60):
        c.call("SET", "s%d" % i, "v%d" % i)
    c.call("SET", "ex", "1", "EX", "1000")
    c.call("SET", "px", "1", "PX", "900000")
    c.call("SETEX", "setex", "800", "x")
    c.call("PSETEX", "psetex", "700000", "x")
    c.call("SET", "gone", "1", "PX", "1")
    c.call("EXPIRE", "s1", "600")
    c.call("PEXPIRE", "s2", "500000")
    c.call("EXPIREAT", "s3", str(int(time.time()) + 400))
    c.call("GETEX", "s4", "EX", "300")
    c.call("GETEX", "s5", "PERSIST")
    c.call("INCRBYFLOAT", "fl", "1.1")
    c.call("INCRBYFLOAT", "fl", "2.25")
    c.call("HINCRBYFLOAT", "hf", "f", "0.5")
    c.call("SADD", "set", *["m%d" % i for i in range(30)])
    c.call("SPOP", "set")
    c.call("SPOP", "set", "5")
    c.call("RPUSH", "list", *["e%d" % i for i in range(20)])
    c.call("LPOP", "list", "2")
    c.call("HSET", "hash", "a", "1", "b", "2", "c", "3")
    c.call("HDEL", "hash", "b")
    c.call("ZADD", "zset", "1", "a", "2.5", "b", "3", "c")
    c.call("ZINCRBY", "zset", "10", "a")
    c.call("INCR", "ctr")
    c.call("INCRBY", "ctr", "41")
    c.call("APPEND", "s6", "-more")
    c.call("SETRANGE", "s7", "1", "ZZ")
    c.call("MULTI")
    c.call("SET", "tx", "1")
    c.call("INCR", "tx")
    c.call("EXEC")
    c.call("MSET", *[x for i in range(10) for x in ("ms%d" % i, "mv%d" % i)])
    c.call("DEL", "s10", "s11", "s12", "s13")
    c.call("UNLINK", "s14", "s15")
    c.call("RENAME", "s16", "renamed")
    c.call("RENAMENX", "s17", "renamednx")
    c.call("SADD", "other", "x", "m1", "m2")
    c.call("SUNIONSTORE", "union", "set", "other")
    c.call("SMOVE", "other", "moved", "x")
    c.call("COPY", "hash", "hashcopy")
    c.call("MSETNX", "nx1", "1", "nx2", "2")
    c.call("DEL", "nonexistent")
    c.call("BITFIELD", "bf", "SET", "u8", "0", "200")
    c.call("SETBIT", "bits", "7", "1")
    for i in range(200):
        k = "r%d" % rng.randrange(40)
        c.call(rng.choice(("SET", "APPEND")), k, str(rng.randrange(1000)))


def snapshot(c):
    """Every key: its type, value (sorted where Redis's order is not the
    point) and TTL in ms (-1: none); under the key None, when it was read."""
    out = {None: time.monotonic()}
    for k in c.call("KEYS", "*"):
        t = c.call("TYPE", k)
        if t == b"+string":
            v = c.call("GET", k)
        elif t == b"+hash":
            v = sorted(c.call("HGETALL", k))
        elif t == b"+set":
            v = sorted(c.call("SMEMBERS", k))
        elif t == b"+list":
            v = c.call("LRANGE", k, "0", "-1")
        elif t == b"+zset":
            v = c.call("ZRANGE", k, "0", "-1", "WITHSCORES")
        else:
            raise AssertionError("type %r" % t)
        out[k] = (t, v, c.call("PTTL", k))
    return out


def same(a, b, what):
    """The same keys and values, and each TTL the same expiry time (it
    ran down by the time between the two readings, give or take)."""
    elapsed = (b.pop(None) - a.pop(None)) * 1000
    check(a.keys() == b.keys(), "%s: keys differ: %r" % (what, sorted(a.keys() ^ b.keys())[:10]))
    for k in a:
        ta, va, pa = a[k]
        tb, vb, pb = b[k]
        check((ta, va) == (tb, vb), "%s: %r: %r != %r" % (what, k, (ta, va), (tb, vb)))
        check(pb == pa if pa < 0 else pb >= 0 and abs(pa - elapsed - pb) < TTL_SLACK_MS,
              "%s: %r ttl %d != %d (%d ms later)" % (what, k, pa, pb, elapsed))


def files(d):
    return sorted(glob.glob(os.path.join(d, "appendonly.aof-*")))


def t_roundtrip(d):
    """A stop and a kill -9, each mode, one and two shards: the same keys."""
    rng = random.Random(SEED)
    for shards in (1, 2):
        for mode in ("always", "everysec", "no"):
            sub = os.path.join(d, "%s%d" % (mode, shards))
            os.mkdir(sub)
            srv = start(sub, shards, "--appendfsync", mode)
            c = Conn(srv.port)
            workload(c, rng)
            want = snapshot(c)
            c.close()
            if mode == "always":
                kill9(srv)  # acknowledged means on disk
            else:
                srv.stop()  # a stop syncs what was written
            srv = start(sub, shards, "--appendfsync", mode)
            c = Conn(srv.port)
            same(want, snapshot(c), "%s, %d shards" % (mode, shards))
            c.call("SET", "after", "restart")  # appends after the replayed records
            c.close()
            srv.stop()
            srv = start(sub, shards)
            c = Conn(srv.port)
            check(c.call("GET", "after") == b"restart", "write after a restart kept")
            c.close()
            srv.stop()
            check(len(files(sub)) == shards, "one file per shard: %r" % files(sub))
            check_aof(sub)


def logical_size(f):
    """A file's bytes less its padding: with appendfsync always the server
    extends the file ahead of its records with '#' (a comment to Redis)."""
    return len(open(f, "rb").read().rstrip(b"#"))


def starts_cut(sub, logf, kept, at):
    """A one-shard start on sub whose file's last record, k<kept+1>, is
    torn: k<kept> stays, the torn one is gone, the cut at offset `at` is
    logged, and after a stop the file ends there (no padding)."""
    srv = start(sub, 1, "--log-file", logf)
    c = Conn(srv.port)
    check(c.call("GET", "k%d" % kept) == b"v%d" % kept and
          c.call("GET", "k%d" % (kept + 1)) is None, "the torn record cut")
    c.close()
    srv.stop()
    check("torn record: cut at offset %d" % at in open(logf).read(), "the cut is logged")
    check(os.path.getsize(files(sub)[0]) == at, "file cut at the record, no padding")


def t_padding(d):
    """appendfsync always pads the file's end with '#': the live file is
    valid to redis-check-aof and loads into redis-server; a kill -9 leaves
    the padding and the next start cuts it, with a record torn in front
    of it; a stop leaves none."""
    sub = os.path.join(d, "pad")
    os.mkdir(sub)
    srv, c = filled(sub, 1)
    want = snapshot(c)
    f = files(sub)[0]
    data = open(f, "rb").read()
    deadline = time.monotonic() + 10
    while True:  # the size in INFO is published a little later
        size = int(re.search(rb"aof_current_size:(\d+)",
                             c.call("INFO", "persistence")).group(1))
        if size == logical_size(f) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    c.close()
    check(len(data) > size and data[size:] == b"#" * (len(data) - size) and
          data[:size].endswith(b"v49\r\n"), "padded past %d: %d bytes" % (size, len(data)))
    check_aof(sub)
    redis_same(d, sub, dict(want))
    kill9(srv)
    check(os.path.getsize(f) == len(data), "the padding stays after a kill -9")
    logf = os.path.join(d, "log1")
    srv = start(sub, 1, "--appendfsync", "always", "--log-file", logf)
    c = Conn(srv.port)
    same(want, snapshot(c), "after the kill -9")
    said = "%d bytes of padding cut at offset %d" % (len(data) - size, size)
    deadline = time.monotonic() + 10  # the log's writer thread writes it a little later
    while said not in open(logf).read():
        check(time.monotonic() < deadline, "the padding cut is logged")
        time.sleep(0.05)
    c.call("SET", "k50", "v50")
    c.close()
    kill9(srv)
    # the last record torn in front of the padding: its write cut short
    data = open(f, "rb").read()
    last = b"*3\r\n$3\r\nSET\r\n$3\r\nk50\r\n$3\r\nv50\r\n"
    end = len(data.rstrip(b"#"))
    check(data[:end].endswith(last), "k50 is the last record")
    with open(f, "r+b") as fh:
        fh.seek(end - 6)
        fh.write(b"#" * 6)
    starts_cut(sub, os.path.join(d, "log2"), 49, end - len(last))


def t_redis_loads(d):
    """A one-shard file loaded by redis-server 7.0: the same keys."""
    sub = os.path.join(d, "one")
    os.mkdir(sub)
    srv = start(sub, 1, "--appendfsync", "always")
    c = Conn(srv.port)
    workload(c, random.Random(SEED + 1))
    want = snapshot(c)
    c.close()
    srv.stop()
    redis_same(d, sub, want)


def redis_same(d, sub, want):
    """redis-server loading the one-shard file in sub: the keys want."""
    rdir = os.path.join(d, "redis")
    os.mkdir(rdir)
    # Redis 7 takes a lone appendfilename in dir as its base file
    shutil.copy(files(sub)[0], os.path.join(rdir, "appendonly.aof"))
    got, log = redis_snapshot(rdir)
    same(want, got, "redis-server loading the file (%s)" % log[-300:])


def redis_snapshot(rdir):
    """redis-server started on the append-only file in rdir: its keys
    (snapshot()) and its log."""
    port = free_port()
    p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                          "--dir", rdir, "--appendonly", "yes", "--save", ""],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    got = None
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                c = Conn(port)
                if c.call("PING") == b"+PONG":
                    break
            except OSError:
                pass
            check(time.monotonic() < deadline and p.poll() is None, "redis-server did not start")
            time.sleep(0.1)
        got = snapshot(c)
        c.close()
    finally:
        p.terminate()
        log = p.communicate(timeout=30)[0].decode(errors="replace")
    return got, log


def filled(d, shards, n=50):
    """A server with appendfsync always on d, keys k0.. v0.. SET: the
    server and a connection to it."""
    srv = start(d, shards, "--appendfsync", "always")
    c = Conn(srv.port)
    for i in range(n):
        c.call("SET", "k%d" % i, "v%d" % i)
    return srv, c


def fill(d, shards, n=50):
    srv, c = filled(d, shards, n)
    c.close()
    srv.stop()


def start_fails(d, shards, *extra):
    p = subprocess.run([st.PERCORE, "kv", "--port", "0", "--shards", str(shards),
                        "--oversubscribe", "--policy", "off", "--appendonly", "yes",
                        "--dir", d, *extra], capture_output=True, text=True, timeout=60)
    check(p.returncode == 1, "start refused (exit %d): %s" % (p.returncode, p.stderr))
    return p.stderr


def t_torn(d):
    """The last record cut short: dropped and logged, the rest kept; with
    --aof-load-truncated no the start is refused."""
    rng = random.Random(SEED + 2)
    for cut in range(1, 5):
        sub = os.path.join(d, "torn%d" % cut)
        os.mkdir(sub)
        fill(sub, 1)
        f = files(sub)[0]
        size = os.path.getsize(f)
        last = b"*3\r\n$3\r\nSET\r\n$3\r\nk49\r\n$3\r\nv49\r\n"
        keep = size - rng.randrange(1, len(last))
        os.truncate(f, keep)
        err = start_fails(sub, 1, "--aof-load-truncated", "no")
        check("torn" in err and "redis-check-aof --fix" in err and f in err, "refusal: " + err)
        starts_cut(sub, os.path.join(d, "log%d" % cut), 48, size - len(last))


def t_corrupt(d):
    """A damaged record before the end stops the start, naming the file,
    the offset and the repair."""
    sub = os.path.join(d, "bad")
    os.mkdir(sub)
    fill(sub, 1)
    f = files(sub)[0]
    data = bytearray(open(f, "rb").read())
    off = data.index(b"*3\r\n$3\r\nSET\r\n$3\r\nk20\r\n")
    data[off] = ord("X")
    open(f, "wb").write(bytes(data))
    err = start_fails(sub, 1)
    check(f in err and ("offset %d" % off) in err and "redis-check-aof --fix" in err,
          "refusal names file, offset and repair: " + err)


def t_damaged_drops_nothing(d):
    """A start refused for one damaged file records no write spanning
    shards as dropped in the others: once the file is repaired, the
    write is whole again."""
    sub = os.path.join(d, "damaged")
    os.mkdir(sub)
    srv = start(sub, 2, "--appendfsync", "always")
    c = Conn(srv.port)
    for i in range(20):
        c.call("SET", "a%d" % i, "v")
    keys = ["x:%d" % i for i in range(16)]
    c.call("MSET", *[x for k in keys for x in (k, "v")])
    c.close()
    srv.stop()
    f0, f1 = files(sub)
    good = open(f0, "rb").read()
    open(f0, "wb").write(b"X" + good[1:])  # its first record damaged
    err = start_fails(sub, 2)
    check("bad record at offset 0" in err, "refusal: " + err)
    check(b"PERCORE.DROPPED" not in open(f1, "rb").read(), "nothing recorded as dropped")
    open(f0, "wb").write(good)
    srv = start(sub, 2)
    c = Conn(srv.port)
    check(c.call("EXISTS", *keys) == len(keys), "the MSET whole after the repair")
    c.close()
    srv.stop()


def t_partial_multi(d):
    """A write over both shards whose part one file lacks (a crash between
    the two parts' syncs) is recovered on neither; what came before stays.
    Its keys are chosen on both shards (the key hash is random per
    directory: eight keys fall on one shard once in 128 starts)."""
    sub = os.path.join(d, "partial")
    os.mkdir(sub)
    srv, c = filled(sub, 2, 0)
    k0, k1 = st.on_shards(c, "k", 80)
    m0, m1 = st.on_shards(c, "m", 80)
    gone, kept = k0[:4] + k1[:4], k0[4:10] + k1[4:10]
    keys = m0[:8] + m1[:8]
    for k in gone + kept:
        c.call("SET", k, "v" + k)
    c.call("MSET", *[x for k in keys for x in (k, "new")])
    c.call("DEL", *gone)
    c.close()
    srv.stop()
    fs = files(sub)
    victim = fs[SEED % 2]
    data = open(victim, "rb").read()
    multi = b"*1\r\n$5\r\nMULTI\r\n"
    # drop this file's part of the DEL (its last group), then of the MSET
    for what, expect in (("DEL", lambda c: all(c.call("GET", k) == b"v" + k.encode()
                                               for k in gone)),
                         ("MSET", lambda c: all(c.call("EXISTS", k) == 0 for k in keys))):
        data = data[:data.rindex(multi)]
        open(victim, "wb").write(data)
        srv = start(sub, 2)
        c = Conn(srv.port)
        check(expect(c), "the partial %s is recovered on no shard" % what)
        check(all(c.call("EXISTS", k) == 1 for k in kept), "the rest is kept")
        c.close()
        srv.stop()


def groups(path):
    """The groups of a file: (marker id or None, parts or None) each."""
    data = open(path, "rb").read()
    out = []
    for m in re.finditer(rb"\*1\r\n\$5\r\nMULTI\r\n(\*3\r\n\$10\r\nPERCORE\.TX\r\n"
                         rb"\$\d+\r\n([^\r]*)\r\n\$\d+\r\n(\d+)\r\n)?", data):
        out.append((m.group(2), m.group(3) and int(m.group(3))))
    return out


def t_exec_groups(d):
    """An EXEC spanning shards: each shard it writes on records its part
    as one marked group (one id, the parts counted over the shards it
    writes on), a multi-shard MSET inside it included; an EXEC writing on
    one shard is a plain MULTI ... EXEC; an aborted one records nothing.
    With one file's part dropped (a crash between the parts' syncs) the
    EXEC is recovered on no shard, the rest is kept."""
    sub = os.path.join(d, "exec")
    os.mkdir(sub)
    srv = start(sub, 2, "--appendfsync", "always")
    c = Conn(srv.port)
    s0, s1 = st.on_shards(c, "x", 40)
    fs = files(sub)
    before = [len(groups(f)) for f in fs]
    c.call("MULTI")
    c.call("SET", s0[0], "a")
    c.call("GET", s1[5])
    c.call("SET", s0[1], "b")
    check(c.call("EXEC") == [b"+OK", None, b"+OK"], "EXEC writing on one shard")
    g = [groups(f)[before[i]:] for i, f in enumerate(fs)]
    check(g[0] == [(None, None)] and g[1] == [], "one shard's EXEC: a plain group: %r" % g)
    c.call("WATCH", s0[2])
    c.call("SET", s0[2], "moved")
    c.call("MULTI")
    c.call("SET", s0[3], "no")
    c.call("SET", s1[3], "no")
    check(c.call("EXEC") == [], "aborted EXEC (a null array)")
    before = [len(groups(f)) for f in fs]
    c.call("MULTI")
    c.call("SET", s0[4], "1")
    c.call("INCR", s1[4])
    c.call("MSET", s0[5], "m", s1[5], "m")
    check(c.call("EXEC") == [b"+OK", 1, b"+OK"], "EXEC over both shards")
    g = [groups(f)[before[i]:] for i, f in enumerate(fs)]
    check(len(g[0]) == 1 and len(g[1]) == 1 and g[0][0][0] and g[0] == g[1] and
          g[0][0][1] == 2, "one marked group per shard, one id, 2 parts: %r" % g)
    c.close()
    srv.stop()
    multi = b"*1\r\n$5\r\nMULTI\r\n"
    victim = fs[SEED % 2]
    data = open(victim, "rb").read()
    open(victim, "wb").write(data[:data.rindex(multi)])
    srv = start(sub, 2)
    c = Conn(srv.port)
    got = [c.call("EXISTS", k) for k in (s0[4], s1[4], s0[5], s1[5], s0[3], s1[3])]
    check(got == [0] * 6, "the partial EXEC recovered on no shard: %r" % got)
    check(c.call("GET", s0[0]) == b"a" and c.call("GET", s0[2]) == b"moved", "the rest kept")
    c.close()
    srv.stop()


def t_expired_del(d):
    """A key deleted past its expiry, by a lookup or by active expiry, is
    recorded as DEL, as Redis propagates it: a one-shard file loads into
    redis-server with a write made after the expiry as it was made
    (APPEND to an expired key starts a new value, without the old TTL)."""
    sub = os.path.join(d, "expired")
    os.mkdir(sub)
    srv = start(sub, 1, "--appendfsync", "always")
    c = Conn(srv.port)
    c.call("SET", "lazy", "old", "PX", "30")
    c.call("SET", "active", "v", "PX", "30")
    time.sleep(0.1)
    check(c.call("APPEND", "lazy", "new") == 3, "APPEND to an expired key")
    deadline = time.monotonic() + 20
    while b"DEL\r\n$6\r\nactive" not in open(files(sub)[0], "rb").read():
        check(time.monotonic() < deadline, "active expiry recorded as DEL")
        time.sleep(0.1)
    want = snapshot(c)
    c.close()
    kill9(srv)
    data = open(files(sub)[0], "rb").read()
    check(b"*2\r\n$3\r\nDEL\r\n$4\r\nlazy\r\n" in data, "lazy expiry recorded as DEL")
    srv = start(sub, 1)
    c = Conn(srv.port)
    same(dict(want), snapshot(c), "after a restart")
    c.close()
    srv.stop()
    redis_same(d, sub, want)


def t_evicted(d):
    """maxmemory with allkeys-lru: a key evicted is recorded as DEL and
    stays gone after a restart (kill -9, appendfsync always)."""
    sub = os.path.join(d, "evict")
    os.mkdir(sub)
    srv = start(sub, 2, "--appendfsync", "always", "--maxmemory", "2000000",
                "--maxmemory-policy", "allkeys-lru")
    c = Conn(srv.port)
    value = "v" * 1000
    for i in range(0, 4000, 100):
        c.send(b"".join(enc("SET", "e%d" % k, value) for k in range(i, i + 100)))
        for _ in range(100):
            check(c.reply() == b"+OK", "SET under maxmemory")
    info = c.call("INFO", "stats").decode()
    evicted = int(re.search(r"evicted_keys:(\d+)", info).group(1))
    check(evicted > 0, "keys were evicted")
    want = sorted(c.call("KEYS", "*"))
    c.close()
    kill9(srv)
    srv = start(sub, 2)
    c = Conn(srv.port)
    got = sorted(c.call("KEYS", "*"))
    check(got == want, "the same keys after a restart: %d, not %d" % (len(got), len(want)))
    c.close()
    srv.stop()


def check_aof(sub):
    for f in files(sub):
        r = subprocess.run(["redis-check-aof", f], capture_output=True, text=True)
        check(r.returncode == 0 and "is valid" in r.stdout,
              "redis-check-aof %s: %s" % (f, r.stdout + r.stderr))


def snapshot_of(sub, shards, *extra):
    srv = start(sub, shards, *extra)
    c = Conn(srv.port)
    got = snapshot(c)
    c.close()
    srv.stop()
    return got


def counts(sub):
    return sorted(f.rsplit("-of-", 1)[1] for f in files(sub))


def t_shard_count(d):
    """Files of another shard count are converted at start: 2 shards to 3
    and 3 to 1 keep every key (the one-shard file loads into
    redis-server); a conversion that a crash cut short (some new files
    in place, the old ones still there) or that ended before the old
    files went is completed; the old set with a file missing, or files
    of two other counts, or a damaged old file (nothing converted), are
    refused."""
    sub = os.path.join(d, "count")
    os.mkdir(sub)
    srv = start(sub, 2, "--appendfsync", "always")
    c = Conn(srv.port)
    workload(c, random.Random(SEED + 5))
    want = snapshot(c)
    c.close()
    srv.stop()
    old = {f: open(f, "rb").read() for f in files(sub)}
    same(dict(want), snapshot_of(sub, 3), "2 shards' files started with 3")
    check(counts(sub) == ["3"] * 3, "the files of 3 alone: %r" % files(sub))
    check_aof(sub)
    new = {f: open(f, "rb").read() for f in files(sub)}
    for f, data in old.items():  # a crash before shard 1's rename
        open(f, "wb").write(data)
    os.unlink(sorted(new)[1])
    same(dict(want), snapshot_of(sub, 3), "a conversion cut short")
    check(counts(sub) == ["3"] * 3, "completed: %r" % files(sub))
    for f, data in old.items():  # a crash before the old files went
        open(f, "wb").write(data)
    same(dict(want), snapshot_of(sub, 3), "a conversion that ended")
    check(counts(sub) == ["3"] * 3, "the old files removed: %r" % files(sub))
    same(dict(want), snapshot_of(sub, 1), "3 shards' files started with 1")
    check(counts(sub) == ["1"], "one file: %r" % files(sub))
    check_aof(sub)
    redis_same(d, sub, dict(want))
    for f, data in old.items():  # two other counts beside none of ours
        open(f, "wb").write(data)
    os.rename(files(sub)[0], os.path.join(sub, "appendonly.aof-0-of-5"))
    err = start_fails(sub, 3)
    check("files of" in err and "move one set away" in err, "refusal: " + err)
    os.unlink(os.path.join(sub, "appendonly.aof-0-of-5"))
    os.unlink(sorted(old)[1])
    err = start_fails(sub, 3)
    check(sorted(old)[1] in err and "is missing" in err, "refusal: " + err)
    bad = bytearray(old[sorted(old)[1]])
    at = bad.index(b"*", len(bad) // 2)
    bad[at] = ord("X")  # a damaged record: refused, and no file of 3 written
    open(sorted(old)[1], "wb").write(bytes(bad))
    err = start_fails(sub, 3)
    check("bad record at offset %d" % at in err, "refusal: " + err)
    check(counts(sub) == ["2", "2"], "nothing converted from a damaged file: %r" % files(sub))


def t_disk_full(d):
    """A full disk (a 2 MiB tmpfs in a private mount namespace): writes
    are refused with Redis's MISCONF text, reads go on, INFO says err;
    once space is freed, writes resume and the file is valid again."""
    mnt = os.path.join(d, "small")
    os.mkdir(mnt)
    script = ("mount -t tmpfs -o size=2m pc-aof-test %s && "
              "dd if=/dev/zero of=%s/filler bs=64k count=20 2>/dev/null && exec \"$@\"" %
              (mnt, mnt))
    cmd = ["unshare", "-rm", "sh", "-c", script, "sh", st.PERCORE, "kv", "--port", "0",
           "--shards", "1", "--appendonly", "yes", "--appendfsync", "always", "--dir", mnt]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = p.stderr.readline()
    if b"listening on" not in line:
        p.kill()
        print("  skipped: no private tmpfs here (%r)" % line[:200])
        return
    root = "/proc/%d/root%s" % (p.pid, mnt)
    try:
        c = Conn(int(re.search(rb":(\d+) \(", line).group(1)))
        check(c.call("SET", "k1", "v1") == b"+OK", "a write with room")
        big = "x" * 100000
        reply = None
        for i in range(40):
            reply = c.call("SET", "big%d" % i, big)
            if reply != b"+OK":
                break
        check(reply == b"-MISCONF Errors writing to the AOF file: No space left on device",
              "a write the disk cannot take: %r" % reply)
        check(c.call("SET", "k2", "v2").startswith(b"-MISCONF"), "writes refused")
        check(c.call("GET", "k1") == b"v1", "reads go on")
        check(b"aof_last_write_status:err" in c.call("INFO", "persistence"), "INFO says err")
        for i in range(40):
            c.call("DEL", "big%d" % i)  # refused too: the keys stay
        os.unlink(os.path.join(root, "filler"))
        deadline = time.monotonic() + 20
        while c.call("SET", "k3", "v3") != b"+OK":
            check(time.monotonic() < deadline, "writes resume once the disk has room")
            time.sleep(0.2)
        check(b"aof_last_write_status:ok" in c.call("INFO", "persistence"), "INFO says ok")
        f = os.path.join(root, "appendonly.aof-0-of-1")
        r = subprocess.run(["redis-check-aof", f], capture_output=True, text=True)
        check(r.returncode == 0 and "is valid" in r.stdout, "file valid: " + r.stdout)
        data = open(f, "rb").read()
        check(b"k1" in data and b"k3" in data and b"k2" not in data, "the file holds the keyspace")
        c.close()
    finally:
        p.send_signal(signal.SIGTERM)
        err = p.communicate(timeout=60)[1]
    check(p.returncode == 0 and b"Sanitizer" not in err, "clean exit: %s" % err[-2000:])


TESTS = [t_roundtrip, t_redis_loads, t_padding, t_torn, t_corrupt, t_damaged_drops_nothing, t_partial_multi,
         t_exec_groups, t_expired_del, t_evicted, t_shard_count, t_disk_full]


def run(tests, prefix):
    """Runs the tests sys.argv names (all without names) against the
    percore binary sys.argv[1], each in a directory of its own; the exit
    status: 0, 1 when any failed, 2 for usage, 77 without Redis's tools."""
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    st.PERCORE = sys.argv[1]
    for tool in ("redis-server", "redis-check-aof"):
        if not shutil.which(tool):
            print("SKIP: %s is not installed" % tool)
            return 77
    want = sys.argv[2:]
    failed = 0
    for t in tests:
        if want and t.__name__ not in want:
            continue
        d = tempfile.mkdtemp(prefix=prefix)
        t0 = time.monotonic()
        try:
            t(d)
            print("ok   %s (%.1fs)" % (t.__name__, time.monotonic() - t0))
        except Exception as e:  # noqa: BLE001 - report and go on
            failed += 1
            print("FAIL %s: %s" % (t.__name__, e))
        finally:
            shutil.rmtree(d, ignore_errors=True)
    return 1 if failed else 0


def main():
    return run(TESTS, "pc_aof_")


if __name__ == "__main__":
    sys.exit(main())
