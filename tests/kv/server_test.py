#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`percore kv --shards 2` over TCP, driven by raw sockets, redis-cli and
the redis Python package: pipelines of thousands of commands in one write,
binary keys, huge values, inline commands, SCAN over both shards, multi-key
commands atomic across shards under concurrent writers, active expiry,
the output limit, protocol errors and the client limit, maxmemory
refusing a multi-shard write whole, a stop with closed clients' answers
still out, a drain that answers every command it ran, clients that do
not read kept within their output limit (memory, other clients served),
key counts exact at once, sizes with Redis's units, the input budget
against many partial requests. Every server must exit cleanly (a
sanitizer's report fails the test).

usage: server_test.py PERCORE [TEST...]"""
import atexit
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

SEED = int(os.environ.get("PC_TEST_SEED", "0x5eed0016"), 0)
PERCORE = None


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle import enc, program, scratch_dir  # noqa: E402  (a multibulk request)


def listening_port(p, lines=None):
    """The port of the `percore kv` p once its stderr says it listens; the
    lines before that are appended to `lines` when given."""
    line = b""
    deadline = time.monotonic() + 60
    while b"listening on" not in line:
        line = p.stderr.readline()
        if not line or time.monotonic() > deadline:
            raise RuntimeError("server did not start: %r" % line)
        if lines is not None:
            lines.append(line)
    return int(re.search(rb":(\d+) \(", line).group(1))


# Every server started, so that one a failed check left running goes
# when the test process ends rather than outliving it.
_started = []


@atexit.register
def _kill_left():
    for p in _started:
        if p.poll() is None:
            p.kill()
            p.wait()


class Server:
    """One `percore kv` on a port the kernel picks, two shards."""

    def __init__(self, *extra, env=None):
        cmd = [program(PERCORE), "kv", "--port", "0", "--shards", "2", "--oversubscribe",
               "--policy", "off", "--save", "", *os.environ.get("PC_KV_ARGS", "").split(), *extra]
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                  cwd=scratch_dir())
        _started.append(self.p)
        self.err = b""
        self.log = b""  # stderr lines totals() passed over
        self.start_log = []  # stderr lines up to the listening one
        self.port = listening_port(self.p, self.start_log)

    def totals(self):
        """The server's totals, from SIGUSR1 (name value lines on stderr)."""
        self.p.send_signal(signal.SIGUSR1)
        got = {}
        while "protocol_errors" not in got:
            line = self.p.stderr.readline()
            if not line:
                raise EOFError("server gone")
            words = line.decode(errors="replace").split()
            # the log (a stall warning, say) shares stderr: skip its lines
            if len(words) == 2 and words[1].isdigit():
                got[words[0]] = int(words[1])
            else:
                self.log += line
        return got

    def memory(self, field):
        """A figure of /proc/PID/status in bytes (VmRSS, VmHWM)."""
        with open("/proc/%d/status" % self.p.pid) as f:
            for ln in f:
                if ln.startswith(field + ":"):
                    return int(ln.split()[1]) * 1024
        raise AssertionError("no %s" % field)

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        out, err = self.p.communicate(timeout=120)
        self.err = err
        self.out = out
        bad = (b"Sanitizer" in err or b"runtime error" in err)
        if self.p.returncode != 0 or bad:
            raise AssertionError("server exit %d:\n%s" % (self.p.returncode,
                                                            err.decode(errors="replace")))


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.buf = b""

    def send(self, data):
        self.s.sendall(data)

    def fill(self):
        d = self.s.recv(1 << 20)
        if not d:
            raise EOFError("server closed")
        self.buf += d

    def line(self):
        while b"\r\n" not in self.buf:
            self.fill()
        i = self.buf.index(b"\r\n")
        ln, self.buf = self.buf[:i], self.buf[i + 2:]
        return ln

    def reply(self):
        ln = self.line()
        t, rest = ln[:1], ln[1:]
        if t in (b"+", b"-"):
            return ln
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.fill()
            v, self.buf = self.buf[:n], self.buf[n + 2:]
            return v
        if t == b"*":
            return [self.reply() for _ in range(int(rest))]
        raise AssertionError("bad reply line %r" % ln)

    def call(self, *args):
        self.send(enc(*args))
        return self.reply()

    def closed(self):
        """True once the server closed the connection (what it sent
        before is kept in buf)."""
        try:
            while True:
                d = self.s.recv(1 << 20)
                if not d:
                    return True
                self.buf += d
        except (ConnectionResetError, BrokenPipeError):
            return True

    def close(self):
        self.s.close()


def check(cond, what):
    if not cond:
        raise AssertionError(what)


# ---- the tests ---------------------------------------------------------------

def t_pipeline(srv):
    """Thousands of commands in one write, keys of both shards, replies in
    request order; then GETs, INCRs and DELs in one write."""
    c = Conn(srv.port)
    n = 5000
    c.send(b"".join(enc("SET", "key:%d" % i, "v%d" % i) for i in range(n)))
    for i in range(n):
        check(c.reply() == b"+OK", "SET %d" % i)
    req = []
    for i in range(n):
        req.append(enc("GET", "key:%d" % i))
        req.append(enc("INCR", "ctr:%d" % (i % 7)))
        req.append(enc("PING"))
    c.send(b"".join(req))
    counts = [0] * 7
    for i in range(n):
        check(c.reply() == b"v%d" % i, "GET %d out of order" % i)
        counts[i % 7] += 1
        check(c.reply() == counts[i % 7], "INCR %d" % i)
        check(c.reply() == b"+PONG", "PING %d" % i)
    # No command without keys between them: requests for this shard's
    # keys run while those of the other shard are out, and their replies
    # must still come in request order.
    c.send(b"".join(enc("GET", "key:%d" % i) + enc("INCR", "ctr:%d" % (i % 7))
                    for i in range(n)))
    for i in range(n):
        check(c.reply() == b"v%d" % i, "GET %d out of order (no barrier)" % i)
        counts[i % 7] += 1
        check(c.reply() == counts[i % 7], "INCR %d (no barrier)" % i)
    check(c.call("DBSIZE") == n + 7, "DBSIZE")
    c.send(b"".join(enc("DEL", "key:%d" % i) for i in range(n)))
    for i in range(n):
        check(c.reply() == 1, "DEL %d" % i)
    check(c.call("DBSIZE") == 7, "DBSIZE after DEL")
    check(c.call("FLUSHALL") == b"+OK", "FLUSHALL")
    c.close()


def t_binary(srv):
    """Keys and values with every byte value, CR LF and NUL included."""
    c = Conn(srv.port)
    rnd = random.Random(SEED)
    pairs = {}
    for i in range(300):
        k = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 40))) + b"\r\n\0%d" % i
        v = bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 300)))
        pairs[k] = v
    c.send(b"".join(enc("SET", k, v) for k, v in pairs.items()))
    for _ in pairs:
        check(c.reply() == b"+OK", "binary SET")
    keys = list(pairs)
    got = c.call("MGET", *keys)
    check(got == [pairs[k] for k in keys], "binary MGET")
    check(set(c.call("KEYS", "*")) == set(keys), "binary KEYS")
    check(c.call("DEL", *keys) == len(keys), "binary DEL")
    c.close()


def t_huge(srv):
    """An 8 MiB value, set, read, appended to, in pieces of any size."""
    c = Conn(srv.port)
    big = bytes(random.Random(SEED).randrange(256) for _ in range(1 << 16)) * 128
    data = enc("SET", "big", big)
    for i in range(0, len(data), 100003):
        c.send(data[i:i + 100003])
    check(c.reply() == b"+OK", "SET big")
    check(c.call("GET", "big") == big, "GET big")
    check(c.call("APPEND", "big", b"tail") == len(big) + 4, "APPEND big")
    check(c.call("STRLEN", "big") == len(big) + 4, "STRLEN big")
    check(c.call("GETRANGE", "big", -4, -1) == b"tail", "GETRANGE big")
    check(c.call("MSET", "big", "small", "other", big) == b"+OK", "MSET big")
    check(c.call("MGET", "big", "other") == [b"small", big], "MGET big")
    c.call("FLUSHALL")
    c.close()


def t_inline(srv):
    """Inline commands, as typed into nc, mixed with multibulk ones."""
    c = Conn(srv.port)
    c.send(b"PING\r\nSET greeting \"hello world\"\r\nGET greeting\r\n" +
           enc("EXISTS", "greeting", "nothing") + b"\r\n  \r\nDEL greeting\n")
    check(c.reply() == b"+PONG", "inline PING")
    check(c.reply() == b"+OK", "inline SET")
    check(c.reply() == b"hello world", "inline GET")
    check(c.reply() == 1, "EXISTS after inline")
    check(c.reply() == 1, "inline DEL")
    c.close()


def t_scan(srv):
    """SCAN walks both shards: every key once or more, MATCH and COUNT
    obeyed, cursor 0 at the end."""
    c = Conn(srv.port)
    n = 3000
    c.send(b"".join(enc("SET", "s:%d" % i, i) for i in range(n)) +
           b"".join(enc("SET", "t:%d" % i, i) for i in range(100)))
    for _ in range(n + 100):
        c.reply()
    seen, cursor, calls = set(), b"0", 0
    while True:
        cursor, keys = c.call("SCAN", cursor, "MATCH", "s:*", "COUNT", 50)
        seen.update(keys)
        calls += 1
        check(calls < 100000, "SCAN does not end")
        if cursor == b"0":
            break
    check(seen == {b"s:%d" % i for i in range(n)}, "SCAN missed keys")
    check(c.call("SCAN", "x")[:1] == b"-", "SCAN bad cursor")
    check(len(c.call("KEYS", "t:*")) == 100, "KEYS over both shards")
    c.call("FLUSHALL")
    c.close()


def race(readers, writers, stop):
    """Runs readers and writers at once until every writer is done, then
    stops the readers (stop) and waits for them."""
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    for t in readers:
        t.join()


def t_atomic(srv):
    """Writers MSET all-old or all-new values over keys of both shards (and
    MSETNX, DEL, RENAME across shards); observers' MGETs must see one
    generation whole, never a mix."""
    keys = ["atom:%d" % i for i in range(12)]
    stop = threading.Event()
    errors = []
    rounds = int(os.environ.get("KV_ATOMIC_ROUNDS", "1500"))

    def writer(tag):
        c = Conn(srv.port)
        for g in range(rounds):
            val = "%s-%d" % (tag, g)
            args = []
            for k in keys:
                args += [k, val]
            r = c.call("MSET", *args)
            if r != b"+OK":
                errors.append("MSET %r" % r)
        c.close()

    def observer():
        c = Conn(srv.port)
        seen = 0
        while not stop.is_set() or seen < 10:
            vals = c.call("MGET", *keys)
            if len(set(vals)) != 1:
                errors.append("MGET saw a mix: %r" % vals[:4])
                break
            seen += 1
        c.close()

    # DEL and MSET of other keys in turn; readers see all or none of them
    dkeys = ["dx:%d" % i for i in range(12)]

    def deleter():
        c = Conn(srv.port)
        for g in range(rounds // 2):
            r = c.call("MSET", *sum(([k, "d%d" % g] for k in dkeys), []))
            n = c.call("DEL", *dkeys)
            if r != b"+OK" or n != len(dkeys):
                errors.append("MSET/DEL %r %r" % (r, n))
        c.close()

    def exister():
        c = Conn(srv.port)
        while not stop.is_set():
            n = c.call("EXISTS", *dkeys)
            vals = c.call("MGET", *dkeys)
            if n not in (0, len(dkeys)) or len(set(vals)) != 1:
                errors.append("EXISTS %r, MGET %r during MSET/DEL" % (n, vals[:3]))
                break
        c.close()

    # One writer counts generations up with MSET; plain GETs of the keys
    # one after another (each on its own shard) never see a generation
    # older than the one before: a key a transaction holds is not read
    # until every part of it is written.
    skeys = ["seq:%d" % i for i in range(16)]

    def counter():
        c = Conn(srv.port)
        for g in range(1, rounds + 1):
            if c.call("MSET", *sum(([k, str(g)] for k in skeys), [])) != b"+OK":
                errors.append("MSET seq")
        c.close()

    def sequencer():
        # several connections, so that reads start on different shards
        conns = [Conn(srv.port) for _ in range(4)]
        rnd = random.Random(7)
        while not stop.is_set():
            last = 0
            for k in skeys:
                g = int(rnd.choice(conns).call("GET", k))
                if g < last:
                    errors.append("GET %s saw generation %d after %d" % (k, g, last))
                    return
                last = g
        for c in conns:
            c.close()

    c = Conn(srv.port)
    c.call("MSET", *sum(([k, "init"] for k in keys), []))
    c.call("MSET", *sum(([k, "0"] for k in skeys), []))
    # readers of the same keys at once: their shared locks overlap
    obs = ([threading.Thread(target=observer) for _ in range(4)] +
           [threading.Thread(target=exister) for _ in range(2)] +
           [threading.Thread(target=sequencer) for _ in range(2)])
    wr = ([threading.Thread(target=writer, args=("w%d" % i,)) for i in range(2)] +
          [threading.Thread(target=deleter), threading.Thread(target=counter)])
    race(obs, wr, stop)
    check(not errors, "; ".join(errors[:3]))

    # RENAME back and forth over many pairs (some across shards): the
    # value is always under exactly one of the two names.
    pairs = [("ra:%d" % i, "rb:%d" % i) for i in range(16)]
    for a, _ in pairs:
        c.call("SET", a, "moving")
    stop.clear()

    def renamer():
        r = Conn(srv.port)
        for _ in range(rounds // 4):
            for a, b in pairs:
                src, dst = (a, b) if r.call("EXISTS", a) else (b, a)
                got = r.call("RENAME", src, dst)
                if got != b"+OK":
                    errors.append("RENAME %r" % got)
        r.close()

    def watcher():
        w = Conn(srv.port)
        while not stop.is_set():
            for a, b in pairs:
                got = w.call("MGET", a, b)
                if got.count(b"moving") != 1 or got.count(None) != 1:
                    errors.append("MGET during RENAME saw %r" % got)
                    stop.set()
                n = w.call("EXISTS", a, b)
                if n != 1:
                    errors.append("EXISTS during RENAME saw %r" % n)
                    stop.set()
        w.close()

    rt, wt = threading.Thread(target=renamer), threading.Thread(target=watcher)
    wt.start()
    rt.start()
    rt.join()
    stop.set()
    wt.join()
    check(not errors, "; ".join(errors[:3]))
    check(c.call("MSETNX", "nx:1", "a", "nx:2", "b", "nx:3", "c") == 1, "MSETNX new")
    check(c.call("MSETNX", "nx:4", "a", "nx:2", "z") == 0, "MSETNX one exists")
    check(c.call("MGET", "nx:1", "nx:2", "nx:3", "nx:4") == [b"a", b"b", b"c", None],
          "MSETNX all or nothing")
    check(c.call("RENAMENX", "nx:1", "nx:2") == 0, "RENAMENX onto a key")
    check(c.call("RENAME", "nothing", "nx:9")[:1] == b"-", "RENAME no such key")
    c.call("SET", "ttl:src", "v", "PX", 100000)
    for i in range(8):
        check(c.call("RENAME", "ttl:src" if i == 0 else "ttl:%d" % (i - 1), "ttl:%d" % i) ==
              b"+OK", "RENAME with TTL")
    check(0 < c.call("PTTL", "ttl:7") <= 100000, "RENAME keeps the TTL")
    c.call("FLUSHALL")
    c.close()


def on_shards(c, prefix, n):
    """Keys prefix0 .. prefix<n-1> split by the shard that owns them:
    (shard 0's, shard 1's). Each is set for a moment; SCAN from cursor 1
    walks shard 1 alone (a cursor names its shard: cursor % 2)."""
    names = ["%s%d" % (prefix, i) for i in range(n)]
    c.call("MSET", *sum(([k, "1"] for k in names), []))
    found, cursor = set(), b"1"
    while True:
        cursor, keys = c.call("SCAN", cursor, "MATCH", prefix + "*", "COUNT", 1000)
        found.update(k.decode() for k in keys)
        if int(cursor) % 2 == 0:
            break
    c.call("DEL", *names)
    return [k for k in names if k not in found], [k for k in names if k in found]


def t_exec_atomic(srv):
    """MULTI INCR k INCR k EXEC from several clients (each connection's
    EXEC runs on k's shard, whichever shard the connection lives on) while
    readers run MULTI GET k GET k EXEC: both GETs always equal and even,
    and k ends at twice the EXECs run."""
    rounds = int(os.environ.get("KV_ATOMIC_ROUNDS", "1500")) // 3
    errors, stop = [], threading.Event()

    def writer():
        c = Conn(srv.port)
        for _ in range(rounds):
            for cmd in (("MULTI",), ("INCR", "tx:k"), ("INCR", "tx:k")):
                c.send(enc(*cmd))
            got = [c.reply() for _ in range(3)] + [c.call("EXEC")]
            if got[:3] != [b"+OK", b"+QUEUED", b"+QUEUED"] or len(got[3]) != 2:
                errors.append("writer got %r" % got)
                break
        c.close()

    def reader():
        c = Conn(srv.port)
        while not stop.is_set():
            for cmd in (("MULTI",), ("GET", "tx:k"), ("GET", "tx:k")):
                c.send(enc(*cmd))
            [c.reply() for _ in range(3)]
            a, b = c.call("EXEC")
            if a != b or (a is not None and int(a) % 2):
                errors.append("EXEC's GETs saw %r and %r" % (a, b))
                break
        c.close()

    ws = [threading.Thread(target=writer) for _ in range(4)]
    rs = [threading.Thread(target=reader) for _ in range(2)]
    for t in ws + rs:
        t.start()
    for t in ws:
        t.join()
    stop.set()
    for t in rs:
        t.join()
    check(not errors, "; ".join(errors[:3]))
    c = Conn(srv.port)
    check(c.call("GET", "tx:k") == str(8 * rounds).encode(), "k ends at twice the EXECs")
    c.close()


def t_atomic_sets(srv):
    """Commands computed from sets on both shards are atomic: SMOVE of a
    member back and forth between two sets on different shards while
    readers find it in exactly one (SUNION has it, SINTER does not);
    SMOVEs between two sources while SUNIONSTORE stores their union on
    the other shard, and readers always see the destination whole."""
    c = Conn(srv.port)
    zero, one = on_shards(c, "sm:", 64)
    check(len(zero) >= 10 and len(one) >= 10, "keys of both shards: %d, %d" % (len(zero), len(one)))
    pairs = list(zip(zero[:6], one[:6]))
    for a, b in pairs:
        c.call("SADD", a, "m", "stay-a")
        c.call("SADD", b, "stay-b")
    rounds = int(os.environ.get("KV_ATOMIC_ROUNDS", "1500")) // 3
    stop = threading.Event()
    errors = []

    def mover():
        w = Conn(srv.port)
        where = {a: a for a, _ in pairs}
        for _ in range(rounds):
            for a, b in pairs:
                src, dst = (a, b) if where[a] == a else (b, a)
                got = w.call("SMOVE", src, dst, "m")
                if got != 1:
                    errors.append("SMOVE %s %s: %r" % (src, dst, got))
                    stop.set()
                    return
                where[a] = dst
        w.close()

    def reader():
        r = Conn(srv.port)
        while not stop.is_set():
            for a, b in pairs:
                union = set(r.call("SUNION", a, b))
                inter = r.call("SINTER", b, a)
                card = r.call("SINTERCARD", 2, a, b)
                if union != {b"m", b"stay-a", b"stay-b"} or inter != [] or card != 0:
                    errors.append("during SMOVE: SUNION %r, SINTER %r, SINTERCARD %r" %
                                  (union, inter, card))
                    stop.set()
        r.close()

    # members 0..39 split between two sources on different shards, moved
    # between them all along: their union is always all 40
    s0, s1, dst = zero[8], one[8], one[9]
    everything = {b"%d" % i for i in range(40)} | {b"x%d" % i for i in range(40)}
    c.call("SADD", s0, *sorted(everything)[:40])
    c.call("SADD", s1, *sorted(everything)[40:])

    def shuffler():
        w = Conn(srv.port)
        rnd = random.Random(11)
        for _ in range(rounds * 4):
            m = rnd.choice(sorted(everything))
            if w.call("SMOVE", s0, s1, m) == 0:
                w.call("SMOVE", s1, s0, m)
        w.close()

    def storer():
        w = Conn(srv.port)
        for _ in range(rounds):
            got = w.call("SUNIONSTORE", dst, s0, s1)
            if got != len(everything):
                errors.append("SUNIONSTORE stored %r members" % got)
                stop.set()
                return
        w.close()

    def dst_reader():
        r = Conn(srv.port)
        while not stop.is_set():
            got = r.call("SMEMBERS", dst)
            if got and set(got) != everything:
                errors.append("SMEMBERS of the stored union: %d members" % len(got))
                stop.set()
        r.close()

    writers = [threading.Thread(target=f) for f in (mover, shuffler, storer)]
    readers = [threading.Thread(target=f) for f in (reader, reader, dst_reader)]
    race(readers, writers, stop)
    check(not errors, "; ".join(errors[:3]))
    check(c.call("SCARD", dst) == len(everything), "the union stored")
    c.call("FLUSHALL")
    c.close()


def t_expiry(srv):
    """100,000 keys given a 1 s TTL, never touched again: active expiry
    deletes them and their memory comes back within a few seconds."""
    c = Conn(srv.port)
    base = srv.totals()["used_bytes"]
    n = 100000
    batch = 10000

    def each(cmd, *tail):
        for s in range(0, n, batch):
            c.send(b"".join(enc(cmd, "exp:%d" % i, *tail) for i in range(s, s + batch)))
            for _ in range(batch):
                check(c.reply() in (b"+OK", 1), cmd)
    each("SET", "x" * 32)
    full = None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        full = srv.totals()
        if full["keys"] == n:
            break
        time.sleep(0.1)
    check(full["keys"] == n, "keys counted: %r" % full)
    each("PEXPIRE", 1000)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        now = srv.totals()
        if now["keys"] == 0:
            break
        time.sleep(0.2)
    check(now["keys"] == 0, "keys left after expiry: %r" % now)
    check(now["used_bytes"] <= base + (full["used_bytes"] - base) // 10,
          "memory not returned: base %d full %d now %d" %
          (base, full["used_bytes"], now["used_bytes"]))
    check(c.call("DBSIZE") == 0, "DBSIZE after expiry")
    c.close()


def t_protocol_error(srv):
    """A protocol error gets Redis's reply after the replies before it,
    then the connection closes."""
    c = Conn(srv.port)
    c.send(enc("SET", "pe", "1") + enc("GET", "pe") + b"*1\r\n$abc\r\n")
    check(c.reply() == b"+OK", "before the error")
    check(c.reply() == b"1", "before the error")
    check(c.reply() == b"-ERR Protocol error: invalid bulk length", "protocol error reply")
    check(c.closed() and c.buf == b"", "closed after a protocol error")
    c = Conn(srv.port)
    c.send(b"SET a \"unbalanced\r\n")
    check(c.reply() == b"-ERR Protocol error: unbalanced quotes in request", "quotes")
    check(c.closed(), "closed after unbalanced quotes")
    c = Conn(srv.port)
    check(c.call("QUIT") == b"+OK", "QUIT")
    check(c.closed(), "closed after QUIT")
    check(srv.totals()["protocol_errors"] >= 2, "protocol errors counted")


def t_output_limit(srv):
    """A client that sends GETs of a large value and never reads is closed
    once its unsent replies pass the limit; others are served on."""
    c = Conn(srv.port)
    check(c.call("SET", "fat", b"f" * 100000) == b"+OK", "SET fat")
    hog = Conn(srv.port)
    try:
        # 2,000 replies of 100 kB: 200 times the limit, and few enough that
        # the other shard has answered them all before the server stops
        for _ in range(20):
            hog.send(b"".join(enc("GET", "fat") for _ in range(100)))
    except (BrokenPipeError, ConnectionResetError):
        pass
    deadline = time.monotonic() + 30
    while srv.totals()["output_limit_closes"] < 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    check(srv.totals()["output_limit_closes"] >= 1, "the hog was not closed")
    check(hog.closed(), "hog connection still open")
    hog.close()
    check(c.call("GET", "fat") == b"f" * 100000, "others served on")
    c.close()
    # the hog's requests may still be out on the other shard: the stop
    # frees them (the sanitizer's leak check at exit)


def t_output_memory(srv):
    """Clients that pipeline GETs of a 1 MB value and never read: each is
    closed near its limit (4 MiB) without the server building the rest
    of its replies, so memory stays bounded (2,000 replies would be
    2 GB), and PINGs on other connections (both shards) are answered
    promptly all along. The values lie on both shards: replies built
    on the client's shard and on the other one."""
    # the sanitizer's quarantine would hold freed replies: kept small
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=16"
    srv.stop()
    srv = Server("--client-output-limit", "4194304", env=env)
    try:
        keys = ["fat:%d" % i for i in range(8)]
        c = Conn(srv.port)
        for k in keys:
            check(c.call("SET", k, b"f" * 1000000) == b"+OK", "SET fat")
        pings = [Conn(srv.port) for _ in range(8)]
        for p in pings:
            check(p.call("PING") == b"+PONG", "PING")
        base = srv.memory("VmRSS")
        stop = threading.Event()
        slowest = [0.0]

        def pinger():
            while not stop.is_set():
                for p in pings:
                    t0 = time.monotonic()
                    p.send(enc("PING"))
                    p.s.settimeout(2)
                    try:
                        r = p.reply()
                    except socket.timeout:
                        r = None
                    slowest[0] = max(slowest[0], time.monotonic() - t0)
                    if r != b"+PONG":
                        stop.set()
                        return
                time.sleep(0.01)
        pt = threading.Thread(target=pinger)
        pt.start()
        try:
            for n in range(4):
                hog = Conn(srv.port)
                hog.send(b"".join(enc("GET", k) for k in keys for _ in range(250)))
                deadline = time.monotonic() + 60
                while (srv.totals()["output_limit_closes"] <= n and
                       time.monotonic() < deadline):
                    time.sleep(0.05)
                check(srv.totals()["output_limit_closes"] > n, "hog %d not closed" % n)
                hog.close()
        finally:
            stop.set()
            pt.join()
        grew = srv.memory("VmHWM") - base
        check(grew < 256 << 20, "memory grew by %d MB" % (grew >> 20))
        check(slowest[0] < 2, "slowest PING %.2f s" % slowest[0])
        check(c.call("GET", keys[0]) == b"f" * 1000000, "others served on")
        c.close()
        srv.stop()
    finally:
        if srv.p.returncode is None:
            srv.p.kill()
            srv.p.wait()


OOM = b"-OOM command not allowed when used memory > 'maxmemory'."


def t_oom_whole(srv):
    """--maxmemory, noeviction: MSETs and MSETNXs of 16 fresh keys (both
    shards own some) until refused; each is applied whole (+OK, every key
    set) or refused whole (Redis's -OOM, none set)."""
    c = Conn(srv.port)
    oks = ooms = 0
    g = 0
    while ooms < 30 and g < 4000:
        nx = g % 3 == 2
        keys = ["oom:%d:%d" % (g, i) for i in range(16)]
        val = b"%08d" % g + b"v" * 600
        r = c.call("MSETNX" if nx else "MSET", *sum(([k, val] for k in keys), []))
        got = c.call("MGET", *keys)
        if r in (b"+OK", 1):
            oks += 1
            check(got == [val] * 16, "MSET %d applied in part: %r" % (g, got))
        else:
            ooms += 1
            check(r == OOM, "MSET %d: %r" % (g, r))
            check(got == [None] * 16, "refused MSET %d applied in part" % g)
        g += 1
    check(oks > 0 and ooms == 30, "oks %d ooms %d" % (oks, ooms))
    check(c.call("FLUSHALL") == b"+OK", "FLUSHALL")
    check(c.call("MSET", "a", "1", "b", "2", "c", "3") == b"+OK", "room again")
    c.close()


def t_stop_inflight(srv):
    """Clients send long pipelines over both shards and vanish; the server
    is stopped at once, while their answers are still out: it exits
    cleanly, every closed client freed (closing 0, no leak reported).
    Three servers, as the answers are not always still out by then."""
    big = b"b" * 200000
    keys = ["big:%d" % i for i in range(8)]
    pipe = b"".join(enc("MGET", *keys) + enc("GET", keys[i % 8]) for i in range(300))
    for rnd in range(3):
        if rnd:
            srv = Server("--drain", "0")
        try:
            c = Conn(srv.port)
            check(c.call("MSET", *sum(([k, big] for k in keys), [])) == b"+OK", "MSET big")
            for _ in range(6):
                h = Conn(srv.port)
                h.send(pipe)
                h.s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
                h.close()
            c.close()
            srv.stop()
        except Exception:
            if srv.p.returncode is None:
                srv.p.kill()
                srv.p.wait()
            raise
        check(re.search(rb"^closing 0$", srv.out, re.M), "closing left: %r" % srv.out)


def t_drain_answers(srv):
    """Clients pipeline SETs over both shards; SIGTERM arrives mid-run.
    The drain answers every command it ran: the commands the server
    counted at exit equal the +OK replies the clients received (the
    drain's deadline, far away, cuts nothing). Three servers, as a reply
    is not always still out at the signal."""
    for rnd in range(3):
        if rnd:
            srv = Server("--drain", "60")
        got = [0] * 8
        started = threading.Barrier(len(got) + 1)

        def client(i):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=120)
            batch = b"".join(enc("SET", "dr:%d:%d" % (i, k), "v") for k in range(200))
            done = threading.Event()

            def writer():
                try:
                    while not done.is_set():
                        s.sendall(batch)
                except OSError:
                    pass
            w = threading.Thread(target=writer)
            w.start()
            started.wait()
            tail = b""
            try:
                while True:
                    d = s.recv(1 << 16)
                    if not d:
                        break
                    d = tail + d
                    got[i] += d.count(b"+OK\r\n")
                    tail = d[d.rfind(b"\n") + 1:]
            except OSError:
                pass
            done.set()
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            w.join()
            s.close()

        ts = [threading.Thread(target=client, args=(i,)) for i in range(len(got))]
        for t in ts:
            t.start()
        started.wait()
        time.sleep(1)
        try:
            srv.stop()
        finally:
            if srv.p.returncode is None:
                srv.p.kill()
                srv.p.wait()
            for t in ts:
                t.join()
        ran = int(re.search(rb"^commands (\d+)$", srv.out, re.M).group(1))
        check(ran == sum(got), "round %d: %d commands ran, %d answered: %r" %
              (rnd, ran, sum(got), srv.out))


def t_input_budget(srv):
    """--max-input-bytes 17M: 150 clients each send the first megabyte of
    a 4 MiB SET and wait. The server holds at most its budget per shard,
    closes the oldest holders (counted, logged) and serves a new client."""
    head = b"*3\r\n$3\r\nSET\r\n$4\r\npart\r\n$4194304\r\n"
    part = head + b"p" * ((1 << 20) - len(head))
    conns = [Conn(srv.port) for _ in range(150)]
    sent = [0] * len(conns)
    for h in conns:
        h.s.setblocking(False)
    # until nothing moved for 3 s and someone was closed: a busy machine
    # may leave the bytes in socket buffers for seconds before the server
    # reads them (90 s at most, then the checks say what happened)
    idle_until = time.monotonic() + 3
    deadline = time.monotonic() + 90
    while time.monotonic() < idle_until or (
            time.monotonic() < deadline and srv.totals()["input_shed"] < 1):
        moved = False
        for i, h in enumerate(conns):
            if sent[i] == len(part):
                continue
            try:
                n = h.s.send(part[sent[i]:])
            except BlockingIOError:
                continue
            except OSError:
                sent[i] = len(part)  # closed by the server
                continue
            sent[i] += n
            moved = True
        if moved:
            idle_until = time.monotonic() + 3
        else:
            time.sleep(0.02)
    t = srv.totals()
    check(t["input_shed"] >= 1, "nobody closed: %r" % t)
    check(t["input_held"] <= 2 * (17 << 20) + (2 << 20), "held %d" % t["input_held"])
    closed = 0
    for h in conns:
        h.s.setblocking(True)
        h.s.settimeout(0.01)
        try:
            closed += h.s.recv(64) == b""
        except socket.timeout:
            pass
        except OSError:
            closed += 1
        h.close()
    check(closed >= 1, "no client saw its close")
    c = Conn(srv.port)
    check(c.call("PING") == b"+PONG", "a new client served")
    c.close()
    srv.stop()
    check(b"input over the budget" in srv.log + srv.err, "the close was not logged")


def t_max_clients(srv):
    """Past --max-clients a client is told Redis's error and closed."""
    a, b = Conn(srv.port), Conn(srv.port)
    check(a.call("PING") == b"+PONG" and b.call("PING") == b"+PONG", "two clients")
    third = Conn(srv.port)
    check(third.reply() == b"-ERR max number of clients reached", "third refused")
    check(third.closed(), "third closed")
    check(srv.totals()["rejected_clients"] >= 1, "refusal counted")
    a.close()
    deadline = time.monotonic() + 30
    while srv.totals()["clients"] > 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    again = Conn(srv.port)
    check(again.call("PING") == b"+PONG", "room again after a close")
    b.close()
    again.close()


def metrics_url(srv):
    """The metrics endpoint's URL, from the server's "metrics on" line."""
    line = b""
    while b"metrics on" not in line:
        line = srv.p.stderr.readline()
        check(line, "no metrics line")
    return re.search(rb"(http://\S+/metrics)", line).group(1).decode()


def shard_sleeps(url):
    """Waits in the kernel so far, every shard's together."""
    import urllib.request
    body = urllib.request.urlopen(url, timeout=30).read().decode()
    vals = re.findall(r"^percore_reactor_sleeps_total\{shard=\"\d+\"\} (\S+)$", body, re.M)
    check(len(vals) == 2, "percore_reactor_sleeps_total: %d shards, want 2" % len(vals))
    return sum(float(v) for v in vals)


def sleeps_over(srv, seconds):
    """The shards' sleeps over a stretch of the given length that starts
    a second and a half after the server came up (past a one-second poll
    budget's first expiry), with a request served before it."""
    url = metrics_url(srv)
    c = Conn(srv.port)
    check(c.call("PING") == b"+PONG", "ping")
    time.sleep(1.5)
    before = shard_sleeps(url)
    time.sleep(seconds)
    after = shard_sleeps(url)
    c.close()
    return after - before


def t_poll_budget_long(srv):
    """--poll-budget 1000000 with adaptive: each shard's expiry timer (100
    ms) finds it polling still, so it never waits in the kernel."""
    got = sleeps_over(srv, 0.5)
    check(got == 0, "%d sleeps with a one-second poll budget" % got)


def t_poll_budget_zero(srv):
    """--poll-budget 0 with adaptive: a shard sleeps after its first empty
    turns, and each expiry timer (100 ms) wakes it once more."""
    got = sleeps_over(srv, 0.5)
    check(got >= 2, "%d sleeps in half a second with no poll budget" % got)


def info_stat(c, name):
    """A field of INFO stats, as an integer."""
    m = re.search(rb"^%s:(\d+)\r$" % name.encode(), c.call("INFO", "stats"), re.M)
    check(m, "INFO stats has no %s" % name)
    return int(m.group(1))


def t_tx_locks(srv):
    """INFO's tx_locks and tx_lock_waits (and their metrics): an MSET over
    both shards alone takes exactly two locks and waits for none, one on
    a single shard none; eight connections pipelining MSETs of the same
    keys on both shards make locks wait, every MSET applied whole (all
    four keys from the same one)."""
    url = metrics_url(srv)
    c = Conn(srv.port)
    keys = ["lk:%d" % i for i in range(40)]  # both shards but once in 2^39
    locks, waits = info_stat(c, "tx_locks"), info_stat(c, "tx_lock_waits")
    check(c.call("MSET", *[a for k in keys for a in (k, "v")]) == b"+OK", "mset")
    check(info_stat(c, "tx_locks") - locks == 2, "one MSET: %d locks" %
          (info_stat(c, "tx_locks") - locks))
    check(info_stat(c, "tx_lock_waits") == waits, "one MSET alone waited")
    # the hot keys, two on each shard (keys go to shards by a seed of the
    # server's): an MSET of a pair takes two locks when they part, none
    # when they share a shard
    other, same = [], []
    for k in keys[1:]:
        before = info_stat(c, "tx_locks")
        check(c.call("MSET", keys[0], "v", k, "v") == b"+OK", "mset pair")
        took = info_stat(c, "tx_locks") - before
        check(took in (0, 2), "an MSET of two keys took %d locks" % took)
        (other if took else same).append(k)
    check(len(other) >= 2 and same, "keys by shard: %d and %d" % (len(same) + 1, len(other)))
    hot = [keys[0], same[0], other[0], other[1]]
    waits = info_stat(c, "tx_lock_waits")
    deadline = time.monotonic() + 60
    errors = []

    def hammer(t):
        try:
            h = Conn(srv.port)
            for n in range(200):
                v = "%d.%d" % (t, n)
                h.send(b"".join(enc("MSET", *[a for k in hot for a in (k, v)])
                                for _ in range(16)))
                got = [h.reply() for _ in range(16)]
                if got != [b"+OK"] * 16:
                    errors.append("MSET replies %r" % got[:2])
                    return
                if n % 20 == 19 and info_stat(h, "tx_lock_waits") > waits:
                    break
            h.close()
        except Exception as e:  # reported by the caller
            errors.append(repr(e))

    while info_stat(c, "tx_lock_waits") == waits and time.monotonic() < deadline and not errors:
        ts = [threading.Thread(target=hammer, args=(t,)) for t in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    check(not errors, "; ".join(errors[:3]))
    locks, waits = info_stat(c, "tx_locks"), info_stat(c, "tx_lock_waits")
    check(waits > 0, "eight connections on the same keys: no lock waited")
    check(waits <= locks, "%d waits for %d locks" % (waits, locks))
    vals = c.call("MGET", *hot)
    check(len(set(vals)) == 1, "an MSET applied in part: %r" % vals)
    import urllib.request
    body = urllib.request.urlopen(url, timeout=30).read().decode()

    def total(name):
        return sum(int(float(v)) for v in re.findall(r"^%s\{shard=\"\d+\"\} (\S+)$" % name,
                                                    body, re.M))
    check(total("percore_kv_tx_locks_total") >= locks, "metrics: fewer locks than INFO")
    check(total("percore_kv_tx_lock_waits_total") >= waits, "metrics: fewer waits than INFO")
    c.close()


def t_metrics(srv):
    """--metrics-port: the server's series and percore_kv_* per shard, as
    Prometheus reads them."""
    import shutil
    import urllib.request
    url = metrics_url(srv)
    c = Conn(srv.port)
    args = []
    for i in range(100):
        args += ["m%d" % i, "v"]
    check(c.call("MSET", *args) == b"+OK", "mset")
    check(c.call("SET", "ttl", "v", "EX", "100") == b"+OK", "set ex")
    c.close()
    body = ""

    def total(name):
        vals = [float(v) for k, v in re.findall(r"^(%s\{shard=\"\d+\"\}) (\S+)$" % name,
                                                 body, re.M)]
        check(len(vals) == 2, "%s: %d shards, want 2" % (name, len(vals)))
        return sum(vals)

    deadline = time.monotonic() + 60
    while True:
        body = urllib.request.urlopen(url, timeout=30).read().decode()
        if total("percore_kv_keys") == 101 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    check(total("percore_kv_keys") == 101, "kv_keys %s" % total("percore_kv_keys"))
    check(total("percore_kv_keys_with_expiry") == 1, "kv_keys_with_expiry")
    check(total("percore_kv_commands_total") >= 2, "kv_commands_total")
    check(total("percore_kv_used_bytes") > 0, "kv_used_bytes")
    check(total("percore_sessions_accepted_total") >= 1, "sessions accepted")
    ready = url.replace("/metrics", "/ready")
    check(urllib.request.urlopen(ready, timeout=30).status == 200, "/ready")
    if not shutil.which("promtool"):
        skip("promtool is not installed: the exposition format went unchecked")
        return
    r = subprocess.run(["promtool", "check", "metrics"], input=body.encode(),
                       capture_output=True)
    check(r.returncode == 0, "promtool: %r" % (r.stdout + r.stderr))


def t_counts_now(srv):
    """The key counts (SIGUSR1 totals, percore_kv_keys, INFO keyspace)
    are exact as soon as the commands answered, long before an expiry
    period (an hour here) would publish them: single-key SETs and DELs
    on both shards, and a multi-shard MSET."""
    import urllib.request
    url = metrics_url(srv)

    def metric_keys():
        body = urllib.request.urlopen(url, timeout=30).read().decode()
        return sum(int(float(v)) for v in
                   re.findall(r'^percore_kv_keys\{shard="\d+"\} (\S+)$', body, re.M))

    c = Conn(srv.port)
    n = 1000
    c.send(b"".join(enc("SET", "now:%d" % i, "v") for i in range(n)))
    for _ in range(n):
        check(c.reply() == b"+OK", "SET")
    check(srv.totals()["keys"] == n, "SIGUSR1 keys after SET")
    check(metric_keys() == n, "percore_kv_keys after SET")
    check(b"db0:keys=%d," % n in c.call("INFO", "keyspace"), "INFO keyspace after SET")
    c.send(b"".join(enc("DEL", "now:%d" % i) for i in range(n // 2)))
    for _ in range(n // 2):
        check(c.reply() == 1, "DEL")
    check(c.call("MSET", *sum((["m:%d" % i, "v"] for i in range(10)), [])) == b"+OK", "MSET")
    check(srv.totals()["keys"] == n // 2 + 10, "SIGUSR1 keys after DEL and MSET")
    check(metric_keys() == n // 2 + 10, "percore_kv_keys after DEL and MSET")
    c.close()


def t_sizes(srv):
    """Sizes on the command line read as CONFIG SET reads them (Redis's
    units: k 1000, kb 1024, m, mb, any case), and 16777216, the floor
    --help states, is a valid --max-input-bytes."""
    c = Conn(srv.port)

    def get(name):
        return c.call("CONFIG", "GET", name)[1]
    check(get("maxmemory") == b"50000000", "--maxmemory 50M: %r" % get("maxmemory"))
    check(get("proto-max-bulk-len") == b"2097152", "--proto-max-bulk-len 2Mb")
    check(get("client-output-buffer-limit").startswith(b"normal 3072 "),
          "--client-output-limit 3KB: %r" % get("client-output-buffer-limit"))
    for val, want in (("50mb", b"52428800"), ("50M", b"50000000"), ("1Gb", b"1073741824"),
                      ("0", b"0")):
        check(c.call("CONFIG", "SET", "maxmemory", val) == b"+OK", "CONFIG SET %s" % val)
        check(get("maxmemory") == want, "CONFIG SET maxmemory %s: %r" % (val, get("maxmemory")))
    c.close()


def t_redis_cli(srv):
    """redis-cli typed at (stdin) and --pipe mass insertion."""
    cli = shutil.which("redis-cli")
    if not cli:
        skip("redis-cli is not installed")
        return
    base = [cli, "-p", str(srv.port)]
    out = subprocess.run(base, input=b"SET cli:a hello\nGET cli:a\nMSET cli:b 1 cli:c 2\n"
                         b"MGET cli:a cli:b cli:c\nDBSIZE\n", capture_output=True, timeout=60)
    check(out.returncode == 0, "redis-cli failed: %r" % out.stderr)
    check(out.stdout.split() == [b"OK", b"hello", b"OK", b"hello", b"1", b"2", b"3"],
          "redis-cli output %r" % out.stdout)
    n = 20000
    mass = b"".join(enc("SET", "pipe:%d" % i, "v%d" % i) for i in range(n))
    out = subprocess.run(base + ["--pipe"], input=mass, capture_output=True, timeout=120)
    check(out.returncode == 0, "redis-cli --pipe failed: %r" % out.stdout)
    check(b"errors: 0, replies: %d" % n in out.stdout, "--pipe said %r" % out.stdout)
    c = Conn(srv.port)
    check(c.call("DBSIZE") == n + 3, "DBSIZE after --pipe")
    check(c.call("GET", "pipe:%d" % (n - 1)) == b"v%d" % (n - 1), "last piped key")
    c.call("FLUSHALL")
    c.close()


def t_backend(srv):
    """INFO server names the backend the shards run: io_uring unless
    --backend epoll asked for the other or the kernel refused io_uring,
    which the start's log says."""
    args = os.environ.get("PC_KV_ARGS", "").split()
    want = b"epoll" if "epoll" in args else b"io_uring"
    if any(b"io_uring unavailable" in line for line in srv.start_log):
        want = b"epoll"
    c = Conn(srv.port)
    info = c.call("INFO", "server")
    c.close()
    got = re.search(rb"multiplexing_api:(\S+)", info)
    check(got and got.group(1) == want,
          "multiplexing_api %r, expected %r" % (got and got.group(1), want))


def batch_threads(pid):
    """How many of the process's threads run under SCHED_BATCH (policy 3,
    the 41st field of /proc/PID/task/TID/stat)."""
    n = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                stat = f.read()
        except FileNotFoundError:
            continue  # a thread that just ended
        # the name in parentheses may hold spaces: count fields after it
        fields = stat[stat.rindex(")") + 2:].split()
        n += fields[41 - 3] == "3"
    return n


def t_sched_batch(srv):
    """By default both shards' threads, and only they, run under
    SCHED_BATCH."""
    if "normal" in os.environ.get("PC_KV_ARGS", ""):
        skip("PC_KV_ARGS chose --sched normal")
        return
    got = batch_threads(srv.p.pid)
    check(got == 2, "%d threads under SCHED_BATCH, expected the 2 shards" % got)


def t_sched_normal(srv):
    """--sched normal: no thread under SCHED_BATCH, and the server serves."""
    got = batch_threads(srv.p.pid)
    check(got == 0, "%d threads under SCHED_BATCH with --sched normal" % got)
    c = Conn(srv.port)
    check(c.call("SET", "sched", "1") == b"+OK" and c.call("GET", "sched") == b"1", "set/get")
    c.close()


def t_redis_py(srv):
    """The redis Python package: commands, a pipeline of thousands, SCAN."""
    try:
        import redis
    except ImportError:
        skip("the redis Python package (python3-redis) is not installed")
        return
    r = redis.Redis(host="127.0.0.1", port=srv.port)
    check(r.ping(), "ping")
    check(r.set("py:a", "1") and r.get("py:a") == b"1", "set/get")
    check(r.incrby("py:a", 41) == 42, "incrby")
    check(r.mset({"py:%d" % i: i for i in range(50)}), "mset")
    check(r.mget(["py:%d" % i for i in range(50)]) == [b"%d" % i for i in range(50)], "mget")
    p = r.pipeline(transaction=False)
    for i in range(3000):
        p.set("pp:%d" % i, i)
        p.get("pp:%d" % i)
    res = p.execute()
    check(all(res[2 * i] is True and res[2 * i + 1] == b"%d" % i for i in range(3000)),
          "pipeline replies")
    check(len(set(r.scan_iter(match="pp:*", count=100))) == 3000, "scan_iter")
    check(r.delete(*["pp:%d" % i for i in range(3000)]) == 3000, "delete")
    check(r.set("py:t", "x", px=50000) and 0 < r.pttl("py:t") <= 50000, "px")
    check(r.rename("py:t", "py:u") and r.get("py:u") == b"x", "rename")
    r.flushall()
    r.close()


def cli_refusals():
    """Bad option values: exit 2 with the option named; --help exits 0."""
    bad = [("--port", "99999"), ("--shards", "0"), ("--maxmemory", "lots"),
           ("--maxmemory-policy", "bogus"), ("--max-clients", "-1"),
           ("--client-output-limit", "1Q"), ("--proto-max-bulk-len", "0"),
           ("--expire-period", "0"), ("--host", "not-an-address"),
           ("--max-input-bytes", "1M"), ("--max-input-bytes", "16777215"),
           ("--policy", "bogus"), ("--maxmemory", "1.5mb"), ("--maxmemory", "50t"),
           ("--sched", "bogus"), ("--poll-budget", "1000001"), ("--poll-budget", "x")]
    failures = []
    for opt, val in bad:
        r = subprocess.run([PERCORE, "kv", opt, val], capture_output=True, timeout=60)
        if r.returncode != 2 or opt.encode() not in r.stderr:
            failures.append("%s %s: exit %d, %r" % (opt, val, r.returncode, r.stderr[:200]))
    r = subprocess.run([PERCORE, "kv", "--help"], capture_output=True, timeout=60)
    if r.returncode != 0 or b"--max-clients" not in r.stdout:
        failures.append("--help: exit %d" % r.returncode)
    # --metrics-port on --port: refused (exit 1) without a hint at an
    # option kv does not have
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    r = subprocess.run([PERCORE, "kv", "--port", port, "--metrics-port", port, "--shards", "1",
                        "--oversubscribe"], capture_output=True, timeout=60)
    if r.returncode != 1 or b"--reuseport-join" in r.stderr or b"--metrics-port" not in r.stderr:
        failures.append("--metrics-port = --port: exit %d, %r" % (r.returncode, r.stderr[:300]))
    return failures


TESTS = [
    ("pipeline", (), t_pipeline),
    ("binary", (), t_binary),
    ("huge", (), t_huge),
    ("inline", (), t_inline),
    ("scan", (), t_scan),
    ("atomic", (), t_atomic),
    ("atomic_sets", (), t_atomic_sets),
    ("exec_atomic", (), t_exec_atomic),
    ("expiry", (), t_expiry),
    ("protocol_error", (), t_protocol_error),
    ("output_limit", ("--client-output-limit", "1M"), t_output_limit),
    ("output_memory", (), t_output_memory),
    ("max_clients", ("--max-clients", "2"), t_max_clients),
    ("oom_whole", ("--maxmemory", "1M"), t_oom_whole),
    ("stop_inflight", ("--drain", "0"), t_stop_inflight),
    ("drain_answers", ("--drain", "60"), t_drain_answers),
    ("input_budget", ("--max-input-bytes", "17M"), t_input_budget),
    ("metrics", ("--metrics-port", "0"), t_metrics),
    ("counts_now", ("--metrics-port", "0", "--expire-period", "3600000"), t_counts_now),
    ("sizes", ("--maxmemory", "50M", "--proto-max-bulk-len", "2Mb", "--client-output-limit",
               "3KB", "--max-input-bytes", "16777216"), t_sizes),
    ("redis_cli", (), t_redis_cli),
    ("backend", (), t_backend),
    ("sched_batch", (), t_sched_batch),
    ("sched_normal", ("--sched", "normal"), t_sched_normal),
    ("poll_budget_long", ("--idle-policy", "adaptive", "--poll-budget", "1000000",
                          "--expire-period", "100", "--metrics-port", "0"), t_poll_budget_long),
    ("poll_budget_zero", ("--idle-policy", "adaptive", "--poll-budget", "0",
                          "--expire-period", "100", "--metrics-port", "0"), t_poll_budget_zero),
    ("redis_py", (), t_redis_py),
    ("tx_locks", ("--metrics-port", "0"), t_tx_locks),
]


# Parts that could not run here, with the reason; the program exits 77
# (skipped) when any part was skipped and none failed, so a missing client
# never passes for a checked one.
SKIPPED = []


def skip(why):
    """Mark the running part skipped: the rest of the parts still run."""
    print("  skipped: " + why)
    SKIPPED.append(why)


def main():
    global PERCORE
    PERCORE = sys.argv[1]
    only = set(sys.argv[2:])
    failed = 0
    if not only or "cli" in only:
        bad = cli_refusals()
        for f in bad:
            print("FAIL cli: " + f)
        failed += len(bad)
        if not bad:
            print("ok   cli")
    for name, extra, fn in TESTS:
        if only and name not in only:
            continue
        t0 = time.monotonic()
        srv = Server(*extra)
        try:
            fn(srv)
        except Exception as e:  # report every test, then fail
            failed += 1
            print("FAIL %s: %s" % (name, e))
            srv.p.kill()
            srv.p.wait()
            continue
        try:
            if srv.p.returncode is None:
                srv.stop()
            print("ok   %s (%.1f s)" % (name, time.monotonic() - t0))
        except AssertionError as e:
            failed += 1
            print("FAIL %s at exit: %s" % (name, e))
    if failed:
        return 1
    if SKIPPED:
        print("SKIP: %d part(s) could not run: %s" % (len(SKIPPED), "; ".join(SKIPPED)))
        return 77
    return 0


if __name__ == "__main__":
    sys.exit(main())
