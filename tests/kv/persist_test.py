#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""percore kv's dump across restarts, against redis-server 7.0:

- round trip: 100,000 random keys (binary, empty, 1 MB and integer
  strings, hashes, sets, lists and sorted sets small and large, a third
  with a TTL) in `percore kv --shards 2`, SAVE, restart with 3 shards:
  the same keys, values and TTLs; then redis-server started on that
  dump holds them too, SAVEs its own dump (LZF, listpacks, intsets),
  and percore kv started on it holds them again;
- a stream in redis-server's dump stops the start naming key and type,
  unless --rdb-skip-unsupported (then skipped and counted in INFO);
- truncated and bit-flipped dumps stop the start with a message naming
  the file and the offset, exit status 1;
- kill -9 during SAVE leaves a dump that loads whole (the old or the new);
- SHUTDOWN: its errors byte for byte as redis-server's; saves with the
  rules, not with NOSAVE or --save ''; SAVE saves; a failed save refuses
  it unless FORCE; the server exits 0;
- SIGTERM saves with the rules (those CONFIG SET left), not with none;
  a save that fails at SIGTERM exits 1;
- save rules fire (small intervals), CONFIG GET/SET save as Redis's,
  INFO persistence's counters.
Exit 0 when all hold, 1 when any fails, 77 without redis-server.

usage: persist_test.py PERCORE"""
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle import enc, free_port  # noqa: E402  (enc: a multibulk request)

SEED = int(os.environ.get("PC_TEST_SEED", "0x5eed3200"), 0)
TTL_MS = 3600000
NKEYS = 100000
FAILS = []


def check(ok, what):
    if not ok:
        FAILS.append(what)
        print("FAIL: " + what, flush=True)
    return ok


class Conn:
    """A RESP2 client that pipelines, parsing replies from one buffer by
    offset (copied once per refill, not per reply)."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.buf, self.pos = b"", 0

    def _fill(self):
        chunk = self.s.recv(1 << 22)
        if not chunk:
            raise EOFError("connection closed")
        self.buf = self.buf[self.pos:] + chunk
        self.pos = 0

    def _line(self):
        end = self.buf.find(b"\r\n", self.pos)
        while end < 0:
            self._fill()
            end = self.buf.find(b"\r\n", self.pos)
        line = self.buf[self.pos:end]
        self.pos = end + 2
        return line

    def _bulk(self, n):
        while len(self.buf) - self.pos < n + 2:
            self._fill()
        v = self.buf[self.pos:self.pos + n]
        self.pos += n + 2
        return v

    def reply(self):
        line = self._line()
        kind = line[:1]
        if kind == b"$":
            n = int(line[1:])
            return None if n < 0 else self._bulk(n)
        if kind == b":":
            return int(line[1:])
        if kind == b"+":
            return line[1:]
        if kind == b"-":
            return (kind, line[1:])
        n = int(line[1:])
        return None if n < 0 else [self.reply() for _ in range(n)]

    def raw(self, *args):
        """One request; its reply as the bytes on the wire."""
        self.s.sendall(enc(*args))
        if self.pos == len(self.buf):
            self.buf, self.pos = b"", 0
        start = self.pos
        self.reply()
        return self.buf[start:self.pos]

    def call(self, *args):
        self.s.sendall(enc(*args))
        return self.reply()

    def pipeline(self, cmds, chunk=2000):
        out = []
        for i in range(0, len(cmds), chunk):
            part = cmds[i:i + chunk]
            self.s.sendall(b"".join(enc(*c) for c in part))
            out += [self.reply() for _ in part]
        return out

    def close(self):
        self.s.close()


class Kv:
    """`percore kv` on a kernel-chosen port, its log in a file."""

    def __init__(self, d, *extra, shards=2, expect_fail=False):
        self.log = os.path.join(d, "kv-%d.log" % time.monotonic_ns())
        self.p = subprocess.Popen([PERCORE, "kv", "--port", "0", "--shards", str(shards),
                                   "--oversubscribe", "--policy", "off", "--dir", d, *extra],
                                  stdout=subprocess.DEVNULL, stderr=open(self.log, "wb"))
        deadline = time.monotonic() + 120
        while True:
            text = self.text()
            m = re.search(r"listening on [^ ]*:(\d+) \(", text)
            if m:
                self.port = int(m.group(1))
                break
            if self.p.poll() is not None or time.monotonic() > deadline:
                if not expect_fail:
                    raise RuntimeError("percore kv did not start: %s" % text)
                self.port = None
                break
            time.sleep(0.02)

    def text(self):
        with open(self.log, "rb") as f:
            return f.read().decode(errors="replace")

    def conn(self):
        return Conn(self.port)

    def wait(self, timeout=60):
        try:
            return self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            return None

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()


def start_redis(d, *extra):
    port = free_port()
    p = subprocess.Popen([REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                          "--appendonly", "no", "--dir", d, "--dbfilename", "dump.rdb", *extra],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            c = Conn(port)
            if c.call("PING") == b"PONG":
                return p, c
            c.close()
        except (OSError, EOFError):
            pass
        time.sleep(0.05)
    p.kill()
    raise RuntimeError("redis-server did not start")


def stop_redis(p):
    p.kill()
    p.wait()


# ---- the data ---------------------------------------------------------------

def member(rng):
    pick = rng.randrange(4)
    if pick == 0:
        return str(rng.randrange(-2 ** 40, 2 ** 40)).encode()
    if pick == 1:
        return rng.randbytes(rng.randrange(1, 16))
    return b"m%d" % rng.randrange(10 ** 6) * rng.choice((1, 1, 10))


def string_value(rng, i):
    if i % 20000 == 7:
        return bytes([i % 251]) * (1 << 20)          # 1 MB
    pick = rng.randrange(5)
    if pick == 0:
        return b""
    if pick == 1:
        return str(rng.randrange(-2 ** 63, 2 ** 63)).encode()
    if pick == 2:
        return str(rng.randrange(-1000, 1000)).encode()
    if pick == 3:
        return rng.randbytes(rng.randrange(1, 40))
    return b"ab" * rng.randrange(11, 200)             # LZF-compressible


def make_collection(rng, key, kind, size):
    """(write command, the value as snapshot() reads it back)."""
    if kind == "hash":
        h = {member(rng): member(rng) for _ in range(size)}
        return ("HSET", key) + tuple(x for kv in h.items() for x in kv), frozenset(h.items())
    if kind in ("set", "iset"):
        s = {member(rng) if kind == "set" else str(rng.randrange(-10 ** 6, 10 ** 6)).encode()
             for _ in range(size)}
        return ("SADD", key) + tuple(s), frozenset(s)
    if kind == "list":
        lst = tuple(member(rng) for _ in range(size))
        return ("RPUSH", key) + lst, lst
    z = {member(rng): rng.choice((1.5, -2.25, float(rng.randrange(10 ** 6)))) for _ in range(size)}
    args = tuple(x for m, sc in z.items() for x in (repr(sc), m))
    return ("ZADD", key) + args, tuple(sorted(z.items(), key=lambda ms: (ms[1], ms[0])))


def make_data(rng, n):
    """(write commands, {key: (type, value, has TTL)}) for n keys: mostly
    strings, every type in small and large encodings; a third with a
    TTL. Strings without one go by MSET, a hundred at a time."""
    cmds, model, mset = [], {}, []
    for i in range(n):
        key = b"k%d" % i if i % 7 else rng.randbytes(6) + b"%d" % i
        ttl = rng.random() < 1 / 3
        if i % 100:
            v = string_value(rng, i)
            model[key] = (b"string", v, ttl)
            if ttl:
                cmds.append(("SET", key, v, "PX", TTL_MS))
            else:
                mset += [key, v]
            if len(mset) >= 200:
                cmds.append(("MSET",) + tuple(mset))
                mset = []
            continue
        kind = rng.choice(("hash", "set", "iset", "list", "zset"))
        cmd, v = make_collection(rng, key, kind, rng.choice((1, 3, 20, 600)))
        cmds.append(cmd)
        model[key] = ({"iset": b"set"}.get(kind, kind.encode()), v, ttl)
        if ttl:
            cmds.append(("PEXPIRE", key, TTL_MS))
    if mset:
        cmds.append(("MSET",) + tuple(mset))
    return cmds, model


READ = {b"string": ("GET",), b"hash": ("HGETALL",), b"set": ("SMEMBERS",),
        b"list": ("LRANGE", 0, -1), b"zset": ("ZRANGE", 0, -1, "WITHSCORES")}


def shape(t, v):
    """A reply as make_collection() keeps the value."""
    if t == b"hash":
        return frozenset(zip(v[::2], v[1::2]))
    if t == b"set":
        return frozenset(v)
    if t == b"zset":
        return tuple((m, float(s)) for m, s in zip(v[::2], v[1::2]))
    if t == b"list":
        return tuple(v)
    return v


def snapshot(c, model):
    """The keyspace read as model's types say ({key: (type, value, has
    TTL)}), and whether KEYS * names exactly model's keys. A value of
    another type reads as its error; PTTLs must lie within TTL_MS."""
    keys = c.call("KEYS", "*")
    exact = len(keys) == len(model) and set(keys) == set(model)
    strings = [k for k, m in model.items() if m[0] == b"string"]
    others = [k for k, m in model.items() if m[0] != b"string"]
    vals = []
    for i in range(0, len(strings), 1000):
        vals += c.call("MGET", *strings[i:i + 1000])
    vals += c.pipeline([(READ[model[k][0]][0], k) + READ[model[k][0]][1:] for k in others])
    snap = {}
    for k, v, ttl in zip(strings + others, vals, c.pipeline([("PTTL", k) for k in strings + others])):
        check(ttl < 0 or 0 < ttl <= TTL_MS, "%r: PTTL %r" % (k, ttl))
        t = model[k][0]
        snap[k] = (t, shape(t, v) if not isinstance(v, tuple) else v, ttl >= 0)
    return snap, exact


def same(model, c, what):
    got, exact = snapshot(c, model)
    check(exact, "%s: KEYS * does not name exactly the keys written" % what)
    if got == model:
        return True
    diff = [k for k in model if got.get(k) != model[k]]
    return check(False, "%s: %d of %d keys differ, e.g. %r" % (what, len(diff), len(model), diff[:3]))


def info(c, field):
    text = c.call("INFO", "persistence").decode()
    m = re.search(r"^%s:(\S+)" % field, text, re.M)
    return m.group(1) if m else None


# ---- the cases --------------------------------------------------------------

def round_trip(d):
    """percore kv -> SAVE -> percore kv -> redis-server -> percore kv."""
    rng = random.Random(SEED)
    cmds, want = make_data(rng, NKEYS)
    kv = Kv(d, "--save", "")
    c = kv.conn()
    replies = c.pipeline(cmds, chunk=500)
    check(not any(isinstance(r, tuple) for r in replies), "a write was refused")
    same(want, c, "percore kv as written")
    check(c.call("SAVE") == b"OK", "SAVE")
    kv.kill()
    kv = Kv(d, "--save", "", shards=3)
    c = kv.conn()
    same(want, c, "percore kv restarted on its own dump")
    check(info(c, "rdb_last_load_keys_loaded") == str(NKEYS), "rdb_last_load_keys_loaded")
    check(info(c, "loading") == "0", "loading:0 once started")
    check("loaded" in kv.text() and "dump.rdb" in kv.text(), "the load is in the log")
    kv.kill()
    check(subprocess.run([CHECK_RDB, os.path.join(d, "dump.rdb")], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL).returncode == 0, "redis-check-rdb")
    rp, rc = start_redis(d)
    same(want, rc, "redis-server on percore kv's dump")
    check(rc.call("SAVE") == b"OK", "redis-server SAVE")
    stop_redis(rp)
    kv = Kv(d, "--save", "")
    same(want, kv.conn(), "percore kv on redis-server's dump")
    kv.kill()


def unsupported(d):
    """A stream stops the start naming it; skipped when asked."""
    rp, rc = start_redis(d)
    rc.call("FLUSHALL")
    rc.call("SET", "plain", "v")
    rc.call("XADD", "events", "*", "f", "v")
    rc.call("SAVE")
    stop_redis(rp)
    kv = Kv(d, expect_fail=True)
    check(kv.wait() == 1, "a stream in the dump: exit status 1")
    text = kv.text()
    check("events" in text and "stream" in text and "dump.rdb" in text,
          "the refusal names the file, key and type: %r" % text[-300:])
    kv = Kv(d, "--rdb-skip-unsupported", "--save", "")
    c = kv.conn()
    check(c.call("KEYS", "*") == [b"plain"], "the others loaded when skipping")
    check(info(c, "rdb_last_load_keys_skipped") == "1", "skipped keys counted")
    kv.kill()


def corrupt(d):
    """Truncated and bit-flipped dumps: the start stops, naming file and
    offset."""
    path = os.path.join(d, "dump.rdb")
    good = open(path, "rb").read()
    rng = random.Random(SEED + 1)
    cases = [("truncated", good[:len(good) // 2]), ("truncated", good[:len(good) - 3]),
             ("truncated", good[:5])]
    for _ in range(3):
        bad = bytearray(good)
        bad[rng.randrange(9, len(bad))] ^= 1 << rng.randrange(8)
        cases.append(("bit-flipped", bytes(bad)))
    for what, data in cases:
        open(path, "wb").write(data)
        kv = Kv(d, expect_fail=True)
        rc = kv.wait()
        text = kv.text()
        check(rc == 1, "%s dump: exit status %r" % (what, rc))
        check(path in text and "offset" in text, "%s dump: message %r" % (what, text[-300:]))
    open(path, "wb").write(good)


def kill_during_save(d):
    """kill -9 while SAVE writes: the dump there loads whole, the keys
    before it or after."""
    sub = os.path.join(d, "kill")
    os.makedirs(sub)
    kv = Kv(sub, "--save", "")
    c = kv.conn()
    _, before = make_data(random.Random(SEED + 2), 20000)
    c.pipeline([("SET", k, v[1]) for k, v in before.items() if v[0] == b"string"] +
               [("DEL", k) for k, v in before.items() if v[0] != b"string"])
    before = {k: v[:2] + (False,) for k, v in before.items() if v[0] == b"string"}
    check(c.call("SAVE") == b"OK", "the first SAVE")
    c.pipeline([("SET", b"big%d" % i, b"x" * 100000) for i in range(300)])
    c.s.sendall(enc("SAVE"))
    time.sleep(0.02)
    kv.p.send_signal(signal.SIGKILL)
    kv.p.wait()
    kv = Kv(sub, "--save", "")
    c = kv.conn()
    n = c.call("DBSIZE")
    check(n in (len(before), len(before) + 300),
          "after kill -9 during SAVE: %d keys, want %d or %d" % (n, len(before), len(before) + 300))
    if n == len(before):
        same(before, c, "the dump before the SAVE killed")
    kv.kill()


def shutdown_cases(d):
    """SHUTDOWN's errors as redis-server's; when it saves; FORCE."""
    sub = os.path.join(d, "sd")
    os.makedirs(sub)
    rp, rc = start_redis(sub, "--dbfilename", "blocked", "--save", "3600 1")
    kv = Kv(sub, "--dbfilename", "blocked")
    c = kv.conn()
    # both save to a name a directory holds now: the save fails
    os.makedirs(os.path.join(sub, "blocked", "inside"))
    for args in (("SHUTDOWN", "FOO"), ("SHUTDOWN", "SAVE", "NOSAVE"), ("SHUTDOWN", "ABORT"),
                 ("SHUTDOWN", "ABORT", "NOW"), ("SHUTDOWN", "NOW", "ABORT")):
        mine, theirs = c.raw(*args), rc.raw(*args)
        check(mine == theirs, "%r: %r, redis-server %r" % (args, mine, theirs))
    # a save that cannot write refuses it
    c.call("SET", "a", "1")
    rc.call("SET", "a", "1")
    mine, theirs = c.raw("SHUTDOWN"), rc.raw("SHUTDOWN")
    check(mine == theirs, "failed save: SHUTDOWN %r, redis-server %r" % (mine, theirs))
    stop_redis(rp)
    check(kv.p.poll() is None, "still running after a refused SHUTDOWN")
    c.s.sendall(enc("SHUTDOWN", "FORCE"))
    check(kv.wait() == 0, "SHUTDOWN FORCE: exit status 0")
    # the default rules save; NOSAVE does not; --save '' does not; SAVE does
    for extra, args, saved in (((), ("SHUTDOWN",), True), ((), ("SHUTDOWN", "NOSAVE"), False),
                               (("--save", ""), ("SHUTDOWN",), False),
                               (("--save", ""), ("SHUTDOWN", "SAVE"), True)):
        dump = os.path.join(sub, "dump.rdb")
        if os.path.exists(dump):
            os.unlink(dump)
        kv = Kv(sub, *extra)
        c = kv.conn()
        c.call("SET", "k", "v")
        c.s.sendall(enc(*args))
        check(kv.wait() == 0, "%r %r: exit status 0" % (extra, args))
        check(os.path.exists(dump) == saved, "%r %r: dump written %r" % (extra, args, not saved))
    kv = Kv(sub, "--save", "")
    check(kv.conn().call("GET", "k") == b"v", "SHUTDOWN SAVE's dump loads")
    kv.kill()
    sigterm_cases(sub)


def sigterm_cases(sub):
    """SIGTERM saves the dump when save rules are set, as redis-server
    does: every shard's keys, the settings as CONFIG SET left them; a save
    that cannot write exits 1 naming it."""
    dump = os.path.join(sub, "dump.rdb")
    for extra, config, saved in (((), None, True), (("--save", ""), None, False),
                                 ((), ("save", ""), False), (("--save", ""), ("save", "60 1"), True)):
        if os.path.exists(dump):
            os.unlink(dump)
        kv = Kv(sub, *extra)
        c = kv.conn()
        if config:
            check(c.call("CONFIG", "SET", *config) == b"OK", "CONFIG SET %r" % (config,))
        c.pipeline([("SET", "t%d" % i, i) for i in range(200)])
        kv.p.send_signal(signal.SIGTERM)
        check(kv.wait() == 0, "SIGTERM %r %r: exit status 0" % (extra, config))
        check(os.path.exists(dump) == saved, "SIGTERM %r %r: dump written %r" %
              (extra, config, not saved))
    kv = Kv(sub, "--save", "")
    c = kv.conn()
    check(c.call("DBSIZE") == 200 and c.call("GET", "t199") == b"199",
          "the dump saved at SIGTERM holds every shard's keys")
    kv.kill()
    kv = Kv(sub, "--dbfilename", "blocked-at-stop")
    os.makedirs(os.path.join(sub, "blocked-at-stop", "inside"))  # the name is a directory's now
    kv.conn().call("SET", "k", "v")
    kv.p.send_signal(signal.SIGTERM)
    check(kv.wait() == 1, "a failed save at SIGTERM: exit status 1")
    check("the dump at the stop failed" in kv.text(), "a failed save at SIGTERM is logged")


def rules_and_config(d):
    """Save rules fire; CONFIG save and INFO's counters as redis-server's."""
    sub = os.path.join(d, "rules")
    os.makedirs(sub)
    kv = Kv(sub, "--save", "1 5")
    c = kv.conn()
    c.pipeline([("SET", "r%d" % i, i) for i in range(3)])
    time.sleep(2.2)
    check(not os.path.exists(os.path.join(sub, "dump.rdb")), "3 changes of 5: no save")
    check(info(c, "rdb_changes_since_last_save") == "3", "3 changes since the last save")
    c.pipeline([("SET", "r%d" % i, i) for i in range(3, 5)])
    deadline = time.monotonic() + 10
    while info(c, "rdb_saves") != "1" and time.monotonic() < deadline:
        time.sleep(0.1)
    check(info(c, "rdb_saves") == "1", "the rule saved once")
    check(info(c, "rdb_changes_since_last_save") == "0", "no changes since")
    check(info(c, "rdb_last_bgsave_status") == "ok", "rdb_last_bgsave_status:ok")
    check(os.path.exists(os.path.join(sub, "dump.rdb")), "the rule's dump")
    kv.kill()
    # CONFIG GET/SET save and the change counter, both servers
    rp, rc = start_redis(d)
    kv = Kv(sub, "--save", "")
    c = kv.conn()
    for args in (("CONFIG", "GET", "save"), ("CONFIG", "SET", "save", "100 10 50 5"),
                 ("CONFIG", "GET", "save"), ("CONFIG", "SET", "save", "1"),
                 ("CONFIG", "SET", "save", "0 5"), ("CONFIG", "SET", "save", "5 -1"),
                 ("CONFIG", "SET", "save", "a b"), ("CONFIG", "GET", "save"),
                 ("CONFIG", "SET", "save", ""), ("CONFIG", "GET", "save")):
        mine, theirs = c.raw(*args), rc.raw(*args)
        check(mine == theirs, "%r: %r, redis-server %r" % (args, mine, theirs))
    for srv in (c, rc):
        srv.call("FLUSHALL")
        srv.call("SAVE")
        srv.pipeline([("SET", "a", 1), ("MSET", "b", 2, "c", 3), ("INCR", "a"), ("DEL", "b", "c")])
    mine, theirs = info(c, "rdb_changes_since_last_save"), info(rc, "rdb_changes_since_last_save")
    check(mine == theirs, "rdb_changes_since_last_save %r, redis-server %r" % (mine, theirs))
    for f in ("rdb_bgsave_in_progress", "rdb_last_bgsave_status", "loading"):
        check(info(c, f) == info(rc, f), "INFO %s" % f)
    check(abs(int(info(c, "rdb_last_save_time")) - int(c.call("LASTSAVE"))) <= 1, "rdb_last_save_time")
    stop_redis(rp)
    kv.kill()


def main():
    global PERCORE, REDIS, CHECK_RDB
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    PERCORE = os.path.abspath(sys.argv[1])
    REDIS, CHECK_RDB = shutil.which("redis-server"), shutil.which("redis-check-rdb")
    if not REDIS or not CHECK_RDB:
        print("skip: redis-server or redis-check-rdb not installed (scripts/deps.sh)")
        return 77
    with tempfile.TemporaryDirectory() as d:
        t0 = t = time.monotonic()
        round_trip(d)
        for case in (lambda: kill_during_save(d), lambda: corrupt(d),
                     lambda: unsupported(d), lambda: shutdown_cases(d),
                     lambda: rules_and_config(d)):
            print("%.1f s" % (time.monotonic() - t), flush=True)
            t = time.monotonic()
            case()
        print("%.1f s, all: %.1f s" % (time.monotonic() - t, time.monotonic() - t0))
    print("%d failures" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
