#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""BGREWRITEAOF of `percore kv --appendonly yes`: the rewritten files hold
the same keys (every type, expiry), are smaller after overwrites, pass
redis-check-aof, and a one-shard one loads into redis-server 7.0; writes
made during a rewrite are kept; Redis 7.0's replies (started, already in
progress, scheduled while a BGSAVE runs, BGSAVE refused during one and
BGSAVE SCHEDULE run after it) and INFO fields; the automatic rule with CONFIG GET/SET of its settings; a
kill -9 during a rewrite loses no acknowledged write and leaves no
rewrite file behind; files of a crash between two shards' switches (one
file rewritten, the other not) recover every write spanning shards, and a write spanning shards
that a start skipped as partial stays skipped there.
Exit 0 when all pass, 1 on a failure, 77 when redis-server or
redis-check-aof is not installed.

usage: aof_rewrite_test.py PERCORE [TEST...]"""
import os
import random
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_test as st  # noqa: E402
from aof_test import (files, kill9, logical_size, redis_snapshot, run, same,  # noqa: E402
                      snapshot, start, workload)
from oracle import enc  # noqa: E402
from server_test import Conn, check  # noqa: E402

SEED = int(os.environ.get("PC_TEST_SEED", "0x5eed0a31"), 0)


def info(c):
    out = {}
    for ln in c.call("INFO", "persistence").decode().split("\r\n"):
        if ":" in ln:
            k, v = ln.split(":", 1)
            out[k] = v
    return out


def wait_rewrites(c, n, timeout=60):
    """Until n rewrites finished and none runs; returns INFO."""
    deadline = time.monotonic() + timeout
    while True:
        i = info(c)
        if int(i["aof_rewrites"]) >= n and i["aof_rewrite_in_progress"] == "0" \
                and i["aof_rewrite_scheduled"] == "0":
            return i
        check(time.monotonic() < deadline, "rewrite %d never ended: %r" % (n, i))
        time.sleep(0.05)


def preload(c, n, prefix="p", size=16):
    """n keys, pipelined."""
    val = "x" * size
    for lo in range(0, n, 1000):
        c.send(b"".join(enc("SET", "%s%d" % (prefix, i), val) for i in range(lo, min(n, lo + 1000))))
        for _ in range(lo, min(n, lo + 1000)):
            check(c.reply() == b"+OK", "preload")


def more_types(c):
    c.call("HSET", "h", "a", "1", "b", "2")
    c.call("SADD", "set", "x", "y", "z")
    c.call("RPUSH", "list", "1", "2", "3")
    c.call("ZADD", "z", "1", "a", "2.5", "b")
    c.call("PEXPIRE", "h", "600000")
    c.call("MSET", "m1", "1", "m2", "2", "m3", "3", "m4", "4")


def check_files(d):
    for f in files(d):
        r = subprocess.run(["redis-check-aof", f], capture_output=True, text=True)
        check(r.returncode == 0 and "is valid" in r.stdout,
              "redis-check-aof %s: %s" % (f, r.stdout + r.stderr))
    left = [x for x in os.listdir(d) if x.endswith(".rewrite")]
    check(not left, "rewrite files left: %r" % left)


def settled_size(c, sub, timeout=30):
    """The files' bytes once every record is written: with everysec and
    no the records reach the files after the replies (up to a
    millisecond later, or more on a loaded machine), so the size is read
    once it is the server's own count (aof_current_size, published as
    batches land) and holds still."""
    deadline = time.monotonic() + timeout
    last = -1
    while True:
        size = sum(logical_size(f) for f in files(sub))
        if size and size == last and size == int(info(c)["aof_current_size"]):
            return size
        check(time.monotonic() < deadline, "the files never settled: %d bytes" % size)
        last = size
        time.sleep(0.05)


def t_rewrite(d):
    """Two shards in each mode, one shard with everysec: a rewrite keeps
    every key, shrinks overwritten files, and writes after it are
    appended to the new file."""
    rng = random.Random(SEED)
    for shards, modes in ((1, ("everysec",)), (2, ("always", "everysec", "no"))):
        for mode in modes:
            sub = os.path.join(d, "%s%d" % (mode, shards))
            os.mkdir(sub)
            srv = start(sub, shards, "--appendfsync", mode)
            c = Conn(srv.port)
            workload(c, rng)
            more_types(c)
            for i in range(300):
                c.call("SET", "over", str(i))  # overwrites the rewrite drops
            # the workload's expired key goes now: its DEL is not appended
            # after the rewrite, past the base size compared below
            c.call("EXISTS", "gone")
            before = settled_size(c, sub)
            check(c.call("BGREWRITEAOF") == b"+Background append only file rewriting started",
                  "BGREWRITEAOF reply")
            i = wait_rewrites(c, 1)
            check(i["aof_last_bgrewrite_status"] == "ok", "status ok: %r" % i)
            after = sum(logical_size(f) for f in files(sub))
            check(after < before, "rewritten files smaller: %d -> %d" % (before, after))
            check(int(i["aof_base_size"]) == after, "aof_base_size %s == %d" %
                  (i["aof_base_size"], after))
            c.call("SET", "after", "rewrite")
            c.call("INCR", "ctr")
            want = snapshot(c)
            c.close()
            if mode == "always":
                kill9(srv)
            else:
                srv.stop()
            check_files(sub)
            srv = start(sub, shards, "--appendfsync", mode)
            c = Conn(srv.port)
            same(want, snapshot(c), "after a rewrite, %s, %d shards" % (mode, shards))
            c.close()
            srv.stop()


def t_rewrite_redis_loads(d):
    """A rewritten one-shard file loads into redis-server (no markers)."""
    sub = os.path.join(d, "one")
    os.mkdir(sub)
    srv = start(sub, 1)
    c = Conn(srv.port)
    workload(c, random.Random(SEED + 1))
    more_types(c)
    c.call("BGREWRITEAOF")
    wait_rewrites(c, 1)
    c.call("SET", "after", "1")
    c.close()
    srv.stop()
    with open(files(sub)[0], "rb") as f:
        check(b"PERCORE" not in f.read(), "a one-shard file has no markers")
    rdir = os.path.join(d, "redis")
    os.mkdir(rdir)
    shutil.copy(files(sub)[0], os.path.join(rdir, "appendonly.aof"))
    srv = start(sub, 1)
    c = Conn(srv.port)
    want = snapshot(c)
    c.close()
    srv.stop()
    got = redis_snapshot(rdir)[0]
    same(want, got, "redis-server loading a rewritten file")


def t_replies(d):
    """Redis 7.0's replies and INFO fields; BGSAVE and a rewrite exclude
    each other; CONFIG GET/SET of the automatic rule's settings."""
    srv = start(d, 2)
    c = Conn(srv.port)
    i = info(c)
    for f in ("aof_rewrite_in_progress", "aof_rewrite_scheduled", "aof_rewrites"):
        check(i[f] == "0", "%s 0 at start: %r" % (f, i))
    check(i["aof_last_bgrewrite_status"] == "ok", "status ok at start")
    check(c.call("CONFIG", "GET", "auto-aof-rewrite-*") ==
          [b"auto-aof-rewrite-min-size", b"67108864", b"auto-aof-rewrite-percentage", b"100"],
          "CONFIG GET auto-aof-rewrite-*")
    check(c.call("CONFIG", "SET", "auto-aof-rewrite-percentage", "-1").startswith(b"-ERR"),
          "a negative percentage refused")
    preload(c, 50000)
    # the walk takes a while over 50k keys: the second call finds it running
    check(c.call("BGREWRITEAOF") == b"+Background append only file rewriting started", "started")
    r = c.call("BGREWRITEAOF")
    busy = r == b"-ERR Background append only file rewriting already in progress"
    r2 = c.call("BGSAVE")
    wait_rewrites(c, 1)
    check(busy, "a second BGREWRITEAOF refused while one runs: %r" % r)
    check(r2 == b"-ERR An AOF log rewriting in progress: can't BGSAVE right now. Use BGSAVE "
          b"SCHEDULE in order to schedule a BGSAVE whenever possible." or r2.startswith(b"+"),
          "BGSAVE during a rewrite: %r" % r2)
    # a BGSAVE running: the rewrite is scheduled, and runs once it ends
    while info(c).get("rdb_bgsave_in_progress") == "1":
        time.sleep(0.05)
    check(c.call("BGSAVE") == b"+Background saving started", "BGSAVE")
    r = c.call("BGREWRITEAOF")
    check(r in (b"+Background append only file rewriting scheduled",
                b"+Background append only file rewriting started"), "during BGSAVE: %r" % r)
    i = wait_rewrites(c, 2)
    check(i["aof_last_bgrewrite_status"] == "ok", "scheduled rewrite ok")
    check(int(c.call("DBSIZE")) == 50000, "keys kept")
    c.close()
    srv.stop()
    srv = start(d, 2)
    c = Conn(srv.port)
    check(int(c.call("DBSIZE")) == 50000, "keys kept after a restart")
    c.close()
    srv.stop()
    check_files(d)


def t_bgsave_schedule(d):
    """BGSAVE SCHEDULE as Redis 7.0's: during a rewrite it answers
    scheduled (rdb_bgsave_in_progress stays 0 meanwhile) and the save
    runs once the rewrite ended; with nothing running it starts; during
    a save it is refused."""
    srv = start(d, 2)
    c = Conn(srv.port)
    preload(c, 50000)
    c.send(enc("BGREWRITEAOF") + enc("BGSAVE", "SCHEDULE") + enc("INFO", "persistence"))
    check(c.reply() == b"+Background append only file rewriting started", "rewrite started")
    r = c.reply()
    i = dict(ln.split(":", 1) for ln in c.reply().decode().split("\r\n") if ":" in ln)
    # the walk over 50k keys takes a while: it still runs when SCHEDULE comes
    check(r == b"+Background saving scheduled", "BGSAVE SCHEDULE during a rewrite: %r" % r)
    check(i["rdb_bgsave_in_progress"] == "0" or i["aof_rewrite_in_progress"] == "0",
          "no save while the rewrite runs: %r" % i)
    check(c.call("BGSAVE").startswith(b"-ERR An AOF log rewriting in progress") or
          info(c)["aof_rewrite_in_progress"] == "0", "BGSAVE without SCHEDULE refused")
    wait_rewrites(c, 1)
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(d, "dump.rdb")) or \
            info(c)["rdb_bgsave_in_progress"] != "0":
        check(time.monotonic() < deadline, "the scheduled save ran: %r" % info(c))
        time.sleep(0.05)
    i = info(c)
    check(i["rdb_last_bgsave_status"] == "ok" and int(i["rdb_saves"]) >= 1,
          "the scheduled save ok: %r" % i)
    r = subprocess.run(["redis-check-rdb", os.path.join(d, "dump.rdb")], capture_output=True,
                       text=True)
    check(r.returncode == 0 and "50000 keys read" in r.stdout,
          "redis-check-rdb: %s" % (r.stdout + r.stderr)[-500:])
    check(c.call("BGSAVE", "SCHEDULE") == b"+Background saving started", "idle: started")
    r = c.call("BGSAVE", "SCHEDULE")
    check(r in (b"-ERR Background save already in progress", b"+Background saving started"),
          "during a save: %r" % r)
    while info(c)["rdb_bgsave_in_progress"] != "0":
        time.sleep(0.05)
    c.close()
    srv.stop()


def t_off(d):
    """With appendonly no, BGREWRITEAOF is refused with a clear error."""
    srv = st.Server("--dir", d)
    c = Conn(srv.port)
    check(c.call("BGREWRITEAOF").startswith(b"-ERR BGREWRITEAOF needs appendonly yes"),
          "refused when appendonly is off")
    c.close()
    srv.stop()


def t_auto(d):
    """The automatic rule: past min-size and the percentage over the base,
    a rewrite starts by itself; percentage 0 turns it off."""
    srv = start(d, 2, "--auto-aof-rewrite-percentage", "0",
                "--auto-aof-rewrite-min-size", "10kb")
    c = Conn(srv.port)
    preload(c, 2000)
    time.sleep(1.5)
    check(info(c)["aof_rewrites"] == "0", "no rewrite with percentage 0")
    check(c.call("CONFIG", "SET", "auto-aof-rewrite-percentage", "50") == b"+OK", "CONFIG SET")
    i = wait_rewrites(c, 1, timeout=20)
    check(int(i["aof_base_size"]) > 0, "base size after the automatic rewrite")
    c.close()
    srv.stop()


def t_kill_during(d):
    """kill -9 while a rewrite runs, writes going on: every acknowledged
    write there after the restart, no rewrite file left."""
    for attempt in range(6):
        sub = os.path.join(d, "k%d" % attempt)
        os.mkdir(sub)
        srv = start(sub, 2, "--appendfsync", "always")
        c = Conn(srv.port)
        preload(c, 100000)
        acked, stop = [], threading.Event()

        def writer():
            w = Conn(srv.port)
            n = 0
            try:
                while not stop.is_set():
                    batch = ["w%d" % (n + i) for i in range(16)]
                    w.send(b"".join(enc("SET", k, k) for k in batch) +
                           enc("MSET", "ma%d" % n, "1", "mb%d" % n, "1", "mc%d" % n, "1"))
                    for k in batch:
                        if w.reply() == b"+OK":
                            acked.append(k)
                    if w.reply() == b"+OK":
                        acked.append("m%d" % n)
                    n += 16
            except (OSError, EOFError, AssertionError):
                pass

        t = threading.Thread(target=writer, daemon=True)
        t.start()
        time.sleep(0.2)
        c.call("BGREWRITEAOF")
        # 100,000 keys take about 0.1 s on a quiet machine, and longer on
        # a loaded one: a kill early in it, or in its walk
        time.sleep(random.Random(SEED + attempt).uniform(0.0, 0.08))
        running = info(c)["aof_rewrite_in_progress"] == "1"
        kill9(srv)
        stop.set()
        t.join(30)
        srv = start(sub, 2, "--appendfsync", "always")
        c = Conn(srv.port)
        check(int(c.call("DBSIZE")) >= 100000, "preloaded keys there")
        missing = [k for k in acked if (k.startswith("w") and c.call("GET", k) != k.encode())
                   or (k.startswith("m") and c.call("EXISTS", "ma" + k[1:], "mb" + k[1:],
                                                    "mc" + k[1:]) != 3)]
        check(not missing, "acknowledged writes missing: %r" % missing[:5])
        for k in c.call("KEYS", "ma*"):
            n = k.decode()[2:]
            check(c.call("EXISTS", "ma" + n, "mb" + n, "mc" + n) == 3, "MSET %s in part" % n)
        c.close()
        srv.stop()
        check_files(sub)
        if running:
            return
    raise AssertionError("the rewrite never ran at the kill in 6 tries")


def rewrite_once(d):
    """A 2-shard server on d's files runs one BGREWRITEAOF and stops."""
    srv = start(d, 2)
    c = Conn(srv.port)
    c.call("BGREWRITEAOF")
    wait_rewrites(c, 1)
    c.close()
    srv.stop()


def marker_of(data):
    """The rewrite marker command that heads a rewritten file."""
    head = b"*2\r\n$15\r\nPERCORE.REWRITE\r\n$"
    check(data.startswith(head), "a marker heads the file")
    end = data.index(b"\r\n", len(head))
    return data[:end + 2 + int(data[len(head):end]) + 2]


def t_mixed_switch(d):
    """A crash between two shards' switches: one file rewritten, the other
    the old one through the rewrite's marker. Writes spanning both shards
    made before the rewrite are whole in neither file's groups any more,
    and must still be recovered on both."""
    srv = start(d, 2)
    c = Conn(srv.port)
    for i in range(50):
        c.call("MSET", *[x for j in range(6) for x in ("g%d:%d" % (i, j), str(i))])
    want = snapshot(c)
    c.close()
    srv.stop()
    old = {f: open(f, "rb").read() for f in files(d)}
    rewrite_once(d)
    new = {f: open(f, "rb").read() for f in files(d)}
    f0, f1 = sorted(new)
    mark = marker_of(new[f0])
    with open(f1, "wb") as f:
        f.write(old[f1] + mark)  # shard 1 never switched
    srv = start(d, 2)
    c = Conn(srv.port)
    same(want, snapshot(c), "files of a crash between two switches")
    c.close()
    srv.stop()


def t_dropped_then_mixed(d):
    """A write spanning shards that a start found partial (its other part
    was lost in a crash) stays dropped for good: after a rewrite that
    crashed between two shards' switches, the old file still holds the
    surviving part before the rewrite's marker, and it must not come
    back there."""
    srv = start(d, 2)
    c = Conn(srv.port)
    c.call("SET", "base", "1")
    c.close()
    srv.stop()
    f0, f1 = files(d)
    keep0 = logical_size(f0)
    keys = ["x:%d" % i for i in range(16)]
    srv = start(d, 2)
    c = Conn(srv.port)
    c.call("MSET", *[x for k in keys for x in (k, "v")])
    c.close()
    srv.stop()
    check(logical_size(f0) > keep0, "the MSET has a part in shard 0's file")
    os.truncate(f0, keep0)  # shard 0's part lost: the MSET is partial
    srv = start(d, 2)
    c = Conn(srv.port)
    check(c.call("EXISTS", *keys) == 0, "a partial MSET is not recovered")
    c.close()
    srv.stop()
    check(b"PERCORE.DROPPED" in open(f1, "rb").read(), "the skipped part is recorded")
    old1 = open(f1, "rb").read()
    rewrite_once(d)
    mark = marker_of(open(f0, "rb").read())
    with open(f1, "wb") as f:
        f.write(old1 + mark)  # shard 1 never switched
    srv = start(d, 2)
    c = Conn(srv.port)
    check(c.call("EXISTS", *keys) == 0, "a dropped MSET stays dropped after a mixed switch")
    check(c.call("GET", "base") == b"1", "the rest is kept")
    c.close()
    srv.stop()


TESTS = [t_rewrite, t_rewrite_redis_loads, t_replies, t_bgsave_schedule, t_off, t_auto,
         t_kill_during, t_mixed_switch, t_dropped_then_mixed]


def main():
    return run(TESTS, "pc_aofrw_")


if __name__ == "__main__":
    sys.exit(main())
