#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""BGSAVE of `percore kv` (no fork: each shard walks a point-in-time view
while it serves), checked with redis-check-rdb and by loading the dump
into a real redis-server 7.0:

  point_in_time  a client keeps writing while the save runs (strings,
                 hashes, lists, sets, sorted sets modified, deleted,
                 renamed, given or cleared an expiry, expiring, and many
                 keys created so the tables grow): it reads its writes
                 back at once, and the dump holds exactly the state when
                 BGSAVE answered, no key twice, none added later;
  errors         BGSAVE while one runs, BGSAVE SCHEDULE, bad arguments,
                 SAVE while one runs (Redis's replies);
  kill9          kill -9 during a BGSAVE leaves the previous dump whole;
  stop           so does a stop (SIGTERM, no drain) during one (or, on a
                 machine slow enough that the save ended first, the dump
                 is the whole new one), and it leaves no temporary file;
  enospc         a disk that fills during the save (a small tmpfs in a
                 private mount namespace, `unshare -rm`) makes it fail
                 with status err, the previous dump kept and the
                 temporary file gone; the server serves on and saves
                 again once there is room;
  concurrent     three shards under writers on every shard (counters,
                 multi-shard MSETs, keys created in sequence): the dump
                 is a cut between the replies before and after BGSAVE,
                 MSET pairs whole, each writer's keys a gapless prefix.

Exit 0 when all hold, 1 when one fails, 77 when redis-server or
redis-check-rdb is not installed.

usage: bgsave_test.py PERCORE [TEST...]"""
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle import enc  # noqa: E402
from save_oracle import start_redis, loaded  # noqa: E402
from server_test import Conn, check, listening_port  # noqa: E402

SEED = int(os.environ.get("PC_TEST_SEED", "0x5eed0032"), 0)
PERCORE = None
LONG_TTL = 600000
SHORT_TTL = 3000


class Kv:
    """One `percore kv` in directory d (its dump's place), on a port the
    kernel picks; wrap: a command line to run it under (unshare)."""

    def __init__(self, d, shards=2, wrap=None, extra=()):
        # no save rules: a stop would save the dump the test checks
        args = [PERCORE, "kv", "--port", "0", "--shards", str(shards), "--oversubscribe",
                "--policy", "off", "--save", ""] + list(extra)
        if wrap:
            args = wrap + args
        self.p = subprocess.Popen(args, cwd=d, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE)
        self.port = listening_port(self.p)
        self.err = []
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        for line in self.p.stderr:
            self.err.append(line)

    def pid(self):
        """The server's own pid (under unshare, the shell exec'd it)."""
        return self.p.pid

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(timeout=120)
        log = b"".join(self.err)
        if self.p.returncode != 0 or b"Sanitizer" in log or b"runtime error" in log:
            raise AssertionError("server exit %d:\n%s" % (self.p.returncode,
                                                            log.decode(errors="replace")))

    def kill9(self):
        self.p.kill()
        self.p.wait()


def pipeline(c, cmds, batch=2000):
    """Sends cmds in batches; returns every reply."""
    out = []
    for i in range(0, len(cmds), batch):
        part = cmds[i:i + batch]
        c.send(b"".join(enc(*x) for x in part))
        out += [c.reply() for _ in part]
    return out


def info(c, field):
    text = c.call("INFO", "persistence").decode()
    m = re.search(r"^%s:(\S+)" % field, text, re.M)
    return m.group(1)


def wait_saved(c, timeout=120):
    deadline = time.monotonic() + timeout
    while info(c, "rdb_bgsave_in_progress") != "0":
        if time.monotonic() > deadline:
            raise AssertionError("BGSAVE still running after %ds" % timeout)
        time.sleep(0.02)
    return info(c, "rdb_last_bgsave_status")


def check_rdb(path):
    """redis-check-rdb's counts: (keys read, already expired)."""
    r = subprocess.run([shutil.which("redis-check-rdb"), path], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    out = r.stdout.decode(errors="replace")
    check(r.returncode == 0 and "RDB looks OK" in out, "redis-check-rdb refused %s:\n%s" %
          (path, out))
    keys = int(re.search(r"(\d+) keys read", out).group(1))
    gone = int(re.search(r"(\d+) already expired", out).group(1))
    return keys, gone


def read_state(c, keys):
    """{key: (type, value)} and {key: pttl} of keys as c's server holds
    them, pipelined (absent keys left out)."""
    types = pipeline(c, [("TYPE", k) for k in keys])
    reads = []
    for k, t in zip(keys, types):
        t = t[1:].decode()
        reads.append({"string": ("GET", k), "hash": ("HGETALL", k), "list": ("LRANGE", k, 0, -1),
                      "set": ("SMEMBERS", k), "zset": ("ZRANGE", k, 0, -1, "WITHSCORES"),
                      "none": ("PTTL", k)}[t])
    vals = pipeline(c, reads)
    ttls = pipeline(c, [("PTTL", k) for k in keys])
    state, ttl = {}, {}
    for k, t, v, p in zip(keys, types, vals, ttls):
        t = t[1:].decode()
        if t == "none":
            continue
        if t == "hash":
            v = dict(zip(v[::2], v[1::2]))
        elif t == "set":
            v = set(v)
        elif t == "zset":
            v = {m: float(s) for m, s in zip(v[::2], v[1::2])}
        state[k] = (t, v)
        ttl[k] = p
    return state, ttl


def same_state(what, got, got_ttl, want, want_ttl):
    """Values equal; TTLs: none where none, within (0, want] elsewhere."""
    bad = []
    if set(got) != set(want):
        extra, missing = set(got) - set(want), set(want) - set(got)
        bad.append("%s: %d keys extra (%r...), %d missing (%r...)" %
                   (what, len(extra), sorted(extra)[:3], len(missing), sorted(missing)[:3]))
    for k in set(got) & set(want):
        if got[k] != want[k]:
            bad.append("%s: %r is %r, want %r" % (what, k, str(got[k])[:80], str(want[k])[:80]))
        elif want_ttl.get(k, -1) == -1 and got_ttl[k] != -1:
            bad.append("%s: %r has PTTL %d, want none" % (what, k, got_ttl[k]))
        elif want_ttl.get(k, -1) != -1 and not 0 < got_ttl[k] <= want_ttl[k]:
            bad.append("%s: %r has PTTL %d, want up to %d" % (what, k, got_ttl[k], want_ttl[k]))
    check(not bad, "\n".join(bad[:10]))


def build(rng, n_strings):
    """The keys before the save: (commands, state, ttls, keys that expire
    during it)."""
    cmds, state, ttl = [], {}, {}
    for i in range(n_strings):
        k = b"s:%d" % i
        v = b"v%d" % i if i % 3 else bytes(rng.getrandbits(8) for _ in range(rng.randrange(40)))
        if i % 7 == 0:
            cmds.append(("SET", k, v, "PX", LONG_TTL))
            ttl[k] = LONG_TTL
        else:
            cmds.append(("SET", k, v))
        state[k] = ("string", v)
    for i in range(12):
        cmds.append(("SET", b"big:%d" % i, b"%d" % i * (1 << 20)))
        state[b"big:%d" % i] = ("string", b"%d" % i * (1 << 20))
    for i in range(300):
        n = 700 if i % 50 == 0 else 5
        h = {b"f%d" % j: b"x%d" % (i * j) for j in range(n)}
        lst = [b"e%d" % j for j in range(n)]
        st = {b"%d" % (j * 3) for j in range(n)} if i % 2 else {b"m%d" % j for j in range(n)}
        z = {b"z%d" % j: float(j) / 4 for j in range(n)}
        cmds += [("HSET", b"h:%d" % i) + tuple(x for p in h.items() for x in p),
                 ("RPUSH", b"l:%d" % i) + tuple(lst), ("SADD", b"st:%d" % i) + tuple(st),
                 ("ZADD", b"z:%d" % i) + tuple(x for m, s in z.items() for x in (repr(s), m))]
        state[b"h:%d" % i] = ("hash", h)
        state[b"l:%d" % i] = ("list", lst)
        state[b"st:%d" % i] = ("set", st)
        state[b"z:%d" % i] = ("zset", z)
    short = set()
    for i in range(100):
        k = b"x:%d" % i
        cmds.append(("SET", k, b"short", "PX", SHORT_TTL))
        short.add(k)
    return cmds, state, ttl, short


def mutations(rng, n_strings, round_):
    """One batch of writes of every kind, and what each key reads after."""
    cmds, after = [], []
    for _ in range(200):
        i = rng.randrange(n_strings)
        k = b"s:%d" % i
        pick = rng.randrange(8)
        if pick == 0:
            cmds.append(("SET", k, b"new%d" % round_))
            after.append((("GET", k), b"new%d" % round_))
        elif pick == 1:
            cmds.append(("DEL", k))
            after.append((("EXISTS", k), 0))
        elif pick == 2:
            cmds.append(("PEXPIRE", k, 1))  # expires (and goes) during the save
        elif pick == 3:
            cmds.append(("PERSIST", k))
        elif pick == 4:
            cmds.append(("APPEND", k, b"+"))
        elif pick == 5:
            cmds.append(("RENAME", k, b"renamed:%d:%d" % (round_, i)))
        else:
            cmds.append(("PEXPIRE", k, LONG_TTL // 2))
    for _ in range(40):
        j = rng.randrange(300)
        cmds += [("HSET", b"h:%d" % j, b"f0", b"changed"), ("LPOP", b"l:%d" % j),
                 ("RPUSH", b"l:%d" % j, b"pushed"), ("SADD", b"st:%d" % j, b"added"),
                 ("SREM", b"st:%d" % j, b"3"), ("ZINCRBY", b"z:%d" % j, 5, b"z1"),
                 ("DEL", b"z:%d" % rng.randrange(300))]
        after.append((("HGET", b"h:%d" % j, b"f0"), b"changed"))
        after.append((("SISMEMBER", b"st:%d" % j, b"added"), 1))
    base = round_ * 3000
    cmds += [("SET", b"n:%d" % (base + i), b"later") for i in range(3000)]
    cmds.append(("SET", b"big:%d" % (round_ % 12), b"replaced"))
    after.append((("GET", b"n:%d" % (base + 2999)), b"later"))
    return cmds, after


def t_point_in_time(d):
    rng = random.Random(SEED)
    n = 100000
    srv = Kv(d)
    try:
        c = Conn(srv.port)
        cmds, state, ttl, short = build(rng, n)
        replies = pipeline(c, cmds)
        check(all(not (isinstance(r, bytes) and r.startswith(b"-")) for r in replies),
              "building the keys failed")
        check(c.call("BGSAVE") == b"+Background saving started", "BGSAVE did not start")
        rounds = during = 0
        while rounds < 40:
            running = info(c, "rdb_bgsave_in_progress") == "1"
            cmds, after = mutations(rng, n, rounds)
            replies = pipeline(c, cmds)
            check(all(not (isinstance(r, bytes) and r.startswith(b"-ERR")) or
                      cmd[0] == "RENAME" for cmd, r in zip(cmds, replies)),
                  "a write during BGSAVE failed")
            got = pipeline(c, [a for a, _ in after])
            for (req, want), g in zip(after, got):
                # a key deleted by a later write of the same batch reads
                # otherwise: only the batch's last write of a key counts
                if req[0] in ("HGET", "SISMEMBER") or req[1].startswith(b"n:"):
                    check(g == want, "%r read %r after the write, want %r" % (req, g, want))
            during += running
            rounds += 1
            if not running and rounds > 3:
                break
        check(wait_saved(c) == "ok", "BGSAVE failed")
        copied = int(info(c, "rdb_snapshot_copied_keys"))
        check(during > 0 and copied > 0,
              "no write landed during the save (%d batches, %d copies)" % (during, copied))
        time.sleep(SHORT_TTL / 1000 + 0.1)  # the short keys are past their TTL now
        keys, gone = check_rdb(os.path.join(d, "dump.rdb"))
        check(keys == len(state) + len(short),
              "the dump has %d keys, the state at BGSAVE %d" % (keys, len(state) + len(short)))
        check(gone == len(short), "%d keys of the dump expired, want %d" % (gone, len(short)))
        c.close()
    finally:
        srv.stop()
    proc, peer = start_redis(shutil.which("redis-server"), d)
    try:
        loaded(peer)
        rc = Conn(peer.sock.getpeername()[1])
        check(rc.call("DBSIZE") == len(state),
              "redis-server loaded %d keys, want %d" % (rc.call("DBSIZE"), len(state)))
        got, got_ttl = read_state(rc, sorted(state))
        same_state("redis-server on the dump", got, got_ttl, state, ttl)
        rc.close()
    finally:
        proc.kill()
        proc.wait()


def t_errors(d):
    srv = Kv(d)
    try:
        c = Conn(srv.port)
        pipeline(c, [("SET", b"k%d" % i, b"v" * 100) for i in range(100000)])
        check(c.call("BGSAVE", "now") == b"-ERR syntax error", "BGSAVE now")
        check(c.call("BGSAVE", "schedule", "x") == b"-ERR syntax error", "BGSAVE schedule x")
        check(c.call("BGSAVE", "SCHEDULE") == b"+Background saving started", "BGSAVE SCHEDULE")
        again = [c.call("BGSAVE"), c.call("BGSAVE", "schedule"), c.call("SAVE")]
        running = info(c, "rdb_bgsave_in_progress") == "1"
        if running:  # Redis refuses all three while its save runs
            check(again == [b"-ERR Background save already in progress"] * 3,
                  "while a save runs: %r" % again)
        check(wait_saved(c) == "ok", "BGSAVE failed")
        check(abs(c.call("LASTSAVE") - time.time()) < 5, "LASTSAVE not updated")
        check(c.call("BGSAVE") == b"+Background saving started", "BGSAVE after the end")
        check(wait_saved(c) == "ok", "BGSAVE failed")
        check_rdb(os.path.join(d, "dump.rdb"))
        c.close()
    finally:
        srv.stop()


def save_running(srv, d, more, what):
    """A first dump of 20,000 keys saved; then the writes in more and a
    second BGSAVE, still running when this returns. Returns the dump's
    path and its bytes from the first save."""
    c = Conn(srv.port)
    pipeline(c, [("SET", b"a%d" % i, b"v%d" % i) for i in range(20000)])
    c.call("BGSAVE")
    check(wait_saved(c) == "ok", "the first BGSAVE failed")
    path = os.path.join(d, "dump.rdb")
    before = open(path, "rb").read()
    pipeline(c, more)
    check(c.call("BGSAVE") == b"+Background saving started", "BGSAVE did not start")
    check(info(c, "rdb_bgsave_in_progress") == "1", "the save ended before the %s" % what)
    return path, before


def t_kill9(d):
    srv = Kv(d)
    path, before = save_running(srv, d, [("SET", b"b%d" % i, b"w" * 200) for i in range(250000)],
                                "kill")
    srv.kill9()
    check(open(path, "rb").read() == before, "kill -9 during BGSAVE changed the dump")
    keys, _ = check_rdb(path)
    check(keys == 20000, "the previous dump has %d keys, want 20000" % keys)


def t_stop(d):
    # no drain: the save is still running when the shards stop
    srv = Kv(d, extra=["--drain", "0"])
    # values that do not compress: a save long enough to stop inside
    noise = random.Random(SEED).randbytes(1 << 20)
    path, before = save_running(srv, d, [("SET", b"b%d" % i, noise[i % 4096 * 200:][:400])
                                         for i in range(200000)], "stop")
    check(any(n.startswith("temp-") for n in os.listdir(d)),
          "no temporary file while the save runs: %s" % os.listdir(d))
    srv.stop()
    check(os.listdir(d) == ["dump.rdb"], "files after the stop: %s" % sorted(os.listdir(d)))
    if open(path, "rb").read() != before:
        # a machine slow enough let the save end first: then it is whole
        keys, _ = check_rdb(path)
        check(keys == 220000, "the dump after the stop has %d keys, want 20000 or 220000" % keys)
        print("stop: the save ended before the stop")


def t_enospc(d):
    small = os.path.join(d, "small")
    os.mkdir(small)
    probe = subprocess.run(["unshare", "-rm", "sh", "-c",
                            "mount -t tmpfs -o size=1m none %s" % small],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if probe.returncode != 0:
        print("enospc: skipped (no private mount namespace: unshare -rm failed)")
        return
    wrap = ["unshare", "-rm", "sh", "-c",
            'mount -t tmpfs -o size=2m none %s && cd %s && exec "$@"' % (small, small), "sh"]
    srv = Kv(d, wrap=wrap)
    try:
        c = Conn(srv.port)
        root = "/proc/%d/cwd" % srv.pid()  # the tmpfs, as the server sees it
        pipeline(c, [("SET", b"k%d" % i, b"v%d" % i) for i in range(1000)])
        check(c.call("BGSAVE") == b"+Background saving started", "BGSAVE did not start")
        check(wait_saved(c) == "ok", "the first BGSAVE failed")
        before = open(os.path.join(root, "dump.rdb"), "rb").read()
        last = c.call("LASTSAVE")
        rng = random.Random(SEED)  # values LZF cannot shrink: 4 MB on a 2 MB disk
        vals = [rng.randbytes(100) for _ in range(40000)]
        pipeline(c, [("SET", b"f%d" % i, v) for i, v in enumerate(vals)])
        c.call("BGSAVE")
        check(wait_saved(c) == "err", "a save onto a full disk did not fail")
        check(sorted(os.listdir(root)) == ["dump.rdb"],
              "after a failed save the disk holds %r" % sorted(os.listdir(root)))
        check(open(os.path.join(root, "dump.rdb"), "rb").read() == before,
              "a failed save changed the dump")
        check(c.call("LASTSAVE") == last, "a failed save moved LASTSAVE")
        check(c.call("GET", "f39999") == vals[-1], "the server lost a key")
        pipeline(c, [("DEL", b"f%d" % i) for i in range(40000)])
        c.call("BGSAVE")
        check(wait_saved(c) == "ok", "a save with room again failed")
        keys, _ = check_rdb(os.path.join(root, "dump.rdb"))
        check(keys == 1000, "the dump has %d keys, want 1000" % keys)
        log = b"".join(srv.err)
        check(b"No space left on device" in log, "the failure was not logged:\n%r" % log[-500:])
        c.close()
    finally:
        srv.stop()


def writer_states(n):
    """The states a writer's keys pass through, in order, for n rounds of
    SET w:j, INCR cnt, MSET pa pb j: (w keys, counter, pa)."""
    states = [(0, 0, None)]
    for j in range(n):
        prev = j - 1 if j else None
        states += [(j + 1, j, prev), (j + 1, j + 1, prev), (j + 1, j + 1, j)]
    return states


def t_concurrent(d):
    srv = Kv(d, shards=3)
    writers, stop = 4, threading.Event()
    done = [0] * writers   # operations answered, per writer
    errors = []

    def writer(t):
        c = Conn(srv.port)
        j = 0
        try:
            while not stop.is_set():
                for req in (("SET", b"w%d:%d" % (t, j), b"%d" % j), ("INCR", b"cnt%d" % t),
                            ("MSET", b"pa%d" % t, b"%d" % j, b"pb%d" % t, b"%d" % j)):
                    r = c.call(*req)
                    if isinstance(r, bytes) and r.startswith(b"-"):
                        errors.append("writer %d: %r" % (t, r))
                        return
                    done[t] += 1
                j += 1
        except Exception as e:  # noqa: BLE001 (reported by the main thread)
            errors.append("writer %d: %r" % (t, e))
        finally:
            c.close()

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(writers)]
    try:
        c = Conn(srv.port)
        pipeline(c, [("SET", b"base%d" % i, b"b" * 50) for i in range(100000)])
        for th in threads:
            th.start()
        time.sleep(0.3)
        low = list(done)
        check(c.call("BGSAVE") == b"+Background saving started", "BGSAVE did not start")
        # BGSAVE answers once every shard fixed its view (Redis once it
        # forked): a writer's request sent after this was not in the view;
        # the one it has out now may have been
        high = [x + 1 for x in done]
        check(wait_saved(c) == "ok", "BGSAVE failed under load")
        stop.set()
        for th in threads:
            th.join()
        check(not errors, "; ".join(errors))
        check(min(high) > 0, "the writers wrote nothing")
        check_rdb(os.path.join(d, "dump.rdb"))
        c.close()
    finally:
        stop.set()
        srv.stop()
    proc, peer = start_redis(shutil.which("redis-server"), d)
    try:
        loaded(peer)
        rc = Conn(peer.sock.getpeername()[1])
        total = 100000
        for t in range(writers):
            n = high[t] // 3 + 1
            have = pipeline(rc, [("EXISTS", b"w%d:%d" % (t, j)) for j in range(n)])
            m = sum(have)
            check(have == [1] * m + [0] * (n - m),
                  "writer %d: its keys in the dump are not the first %d" % (t, m))
            cnt = rc.call("GET", b"cnt%d" % t)
            pa, pb = rc.call("GET", b"pa%d" % t), rc.call("GET", b"pb%d" % t)
            check(pa == pb, "writer %d: MSET half in the dump (%r, %r)" % (t, pa, pb))
            got = (m, int(cnt or 0), None if pa is None else int(pa))
            states = writer_states(n)
            check(got in states[low[t]:high[t] + 1],
                  "writer %d: the dump holds %r, not a state between its %d and %d answered "
                  "operations" % (t, got, low[t], high[t]))
            total += m + (cnt is not None) + 2 * (pa is not None)
        check(rc.call("DBSIZE") == total, "the dump holds %d keys, want %d" %
              (rc.call("DBSIZE"), total))
        rc.close()
    finally:
        proc.kill()
        proc.wait()


TESTS = {"point_in_time": t_point_in_time, "errors": t_errors, "kill9": t_kill9,
         "stop": t_stop, "enospc": t_enospc, "concurrent": t_concurrent}


def main():
    global PERCORE
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    if not shutil.which("redis-server") or not shutil.which("redis-check-rdb"):
        print("skip: redis-server or redis-check-rdb not installed (redis-server, redis-tools)")
        return 77
    PERCORE = os.path.abspath(sys.argv[1])
    names = sys.argv[2:] or list(TESTS)
    failed = 0
    for name in names:
        with tempfile.TemporaryDirectory() as d:
            t0 = time.monotonic()
            try:
                TESTS[name](d)
                print("%s: ok (%.1fs)" % (name, time.monotonic() - t0))
            except AssertionError as e:
                failed += 1
                print("%s: FAILED: %s" % (name, e))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
