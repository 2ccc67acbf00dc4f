#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""appendonly and appendfsync of `percore kv` switched at run time by
CONFIG SET, as Redis 7.0 does: four clients pipeline SETs and MSETs (over
both shards) keeping a ledger of what was acknowledged while appendonly
goes on and off and appendfsync changes; after the last switch-on has
written the files and a moment with always, a kill -9 and a restart on
the same files keep every acknowledged write (each key the latest value
acknowledged or a later one sent), no MSET in part. Also: CONFIG SET's
replies beside redis-server's; INFO while a switch-on runs (and while a
BGSAVE holds it back), BGREWRITEAOF during one and once off; a switch-on
into a directory gone is refused, appendonly stays off; a one-shard file
written by a switch-on passes redis-check-aof and loads into
redis-server with the same keys; a server started without appendonly,
switched on, stopped by SIGTERM and started with --appendonly yes has
every key.
Exit 0 when all pass, 1 on a failure, 77 when redis-server or
redis-check-aof is not installed.

usage: aof_switch_test.py PERCORE [TEST...]"""
import os
import random
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_test as st  # noqa: E402
from aof_rewrite_test import check_files, info, more_types, preload  # noqa: E402
from aof_test import files, kill9, redis_snapshot, run, same, snapshot, workload  # noqa: E402
from oracle import enc, free_port  # noqa: E402
from server_test import Conn, check  # noqa: E402

SEED = int(os.environ.get("PC_TEST_SEED", "0x5eed5031"), 0)
CLIENTS = 4
DEPTH = 16
KEYS = 64      # SET keys per client, overwritten
GROUPS = 16    # MSET groups of four keys per client, overwritten
PRELOAD = 50000


def server(d, shards, *extra):
    return st.Server("--shards", str(shards), "--dir", d, *extra)


def wait_on(c, timeout=60):
    """Until the switch-on has written the files; returns INFO."""
    deadline = time.monotonic() + timeout
    while True:
        i = info(c)
        if i["aof_enabled"] == "1" and i["aof_rewrite_in_progress"] == "0" \
                and i["aof_rewrite_scheduled"] == "0":
            return i
        check(time.monotonic() < deadline, "the switch-on never ended: %r" % i)
        time.sleep(0.05)


class Client(threading.Thread):
    """Pipelines SETs of its keys and MSETs of its groups (each value a
    sequence number) until the server goes; acked[key]: the latest
    acknowledged, sent: the highest sent."""

    def __init__(self, port, cid, rng):
        super().__init__(daemon=True)
        self.c = Conn(port)
        self.cid, self.rng = cid, rng
        self.acked = {}
        self.sent = 0

    def run(self):
        seq = 0
        try:
            while True:
                batch = []
                for _ in range(DEPTH):
                    seq += 1
                    if self.rng.random() < 0.25:
                        g = self.rng.randrange(GROUPS)
                        keys = ["m:%d:%d:%d" % (self.cid, g, i) for i in range(4)]
                        batch.append((keys, enc("MSET", *[x for k in keys for x in (k, seq)])))
                    else:
                        k = "s:%d:%d" % (self.cid, self.rng.randrange(KEYS))
                        batch.append(([k], enc("SET", k, seq)))
                self.sent = seq
                self.c.send(b"".join(req for _, req in batch))
                for i, (keys, _) in enumerate(batch):
                    if self.c.reply() == b"+OK":
                        for k in keys:
                            self.acked[k] = seq - DEPTH + 1 + i
        except (OSError, EOFError, AssertionError):
            pass


def verify(c, clients):
    """Each key the latest value acknowledged or a later one sent; each
    MSET group's keys one value."""
    for cl in clients:
        acked = dict(cl.acked)
        for k, v in acked.items():
            got = c.call("GET", k)
            check(got is not None and v <= int(got) <= cl.sent,
                  "%s: %r after the restart, %d acknowledged, %d sent" % (k, got, v, cl.sent))
        for g in range(GROUPS):
            vals = c.call("MGET", *["m:%d:%d:%d" % (cl.cid, g, i) for i in range(4)])
            check(len(set(vals)) == 1, "MSET group %d:%d in part: %r" % (cl.cid, g, vals))


def t_switch_load(d):
    """appendonly on and off, appendfsync changed, under pipelined load;
    after the last switch-on and a moment with always, kill -9: nothing
    acknowledged is lost, no MSET in part."""
    rng = random.Random(SEED)
    srv = server(d, 2, "--appendonly", "no", "--appendfsync", "everysec")
    c = Conn(srv.port)
    preload(c, PRELOAD, size=64)  # each switch-on's walk takes a while
    clients = [Client(srv.port, i, random.Random(SEED + i)) for i in range(CLIENTS)]
    for cl in clients:
        cl.start()
    steps = [("appendonly", "yes"), ("appendfsync", "no"), ("appendonly", "no"),
             ("appendonly", "yes"), ("appendfsync", "always"), ("appendonly", "no"),
             ("appendfsync", "everysec"), ("appendonly", "yes"), ("appendfsync", "no"),
             ("appendonly", "no"), ("appendonly", "yes"), ("flip", None), ("flip", None),
             ("appendfsync", "always")]
    for name, value in steps:
        time.sleep(rng.uniform(0.1, 0.6))
        if name == "flip":  # off and on at once: the files still close
            c.send(enc("CONFIG", "SET", "appendonly", "no") +
                   enc("CONFIG", "SET", "appendonly", "yes"))
            check(c.reply() == b"+OK" and c.reply() == b"+OK", "off and on at once")
            continue
        check(c.call("CONFIG", "SET", name, value) == b"+OK", "CONFIG SET %s %s" % (name, value))
        if rng.random() < 0.4 and c.call("CONFIG", "GET", "appendonly")[1] == b"yes":
            wait_on(c)  # sometimes switched off only once written
    i = wait_on(c)
    check(i["aof_last_bgrewrite_status"] == "ok", "the last switch-on: %r" % i)
    time.sleep(1.0)
    for cl in clients:
        check(cl.is_alive() and cl.acked, "client %d stopped early" % cl.cid)
    kill9(srv)
    err = srv.p.stderr.read()
    check(b"Sanitizer" not in err and b"runtime error" not in err,
          "the killed server's report: %r" % err[-3000:])
    for cl in clients:
        cl.join(10)
    check_files(d)
    srv = server(d, 2, "--appendonly", "yes", "--appendfsync", "always")
    c = Conn(srv.port)
    verify(c, clients)
    c.close()
    srv.stop()


def start_redis(d):
    port = free_port()
    p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                          "--dir", d, "--save", ""],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            c = Conn(port)
            if c.call("PING") == b"+PONG":
                return p, c
        except OSError:
            pass
        check(time.monotonic() < deadline and p.poll() is None, "redis-server did not start")
        time.sleep(0.1)


def t_replies(d):
    """CONFIG SET appendonly / appendfsync: redis-server's replies, valid
    and invalid values; INFO while a switch-on runs, or waits for a
    BGSAVE; BGREWRITEAOF during a switch-on and once off."""
    rdir, pdir = os.path.join(d, "redis"), os.path.join(d, "percore")
    os.mkdir(rdir)
    os.mkdir(pdir)
    rp, r = start_redis(rdir)
    srv = server(pdir, 2)
    c = Conn(srv.port)
    try:
        for cmd in (("CONFIG", "SET", "appendfsync", "always"),
                    ("CONFIG", "SET", "appendfsync", "EVERYSEC"),
                    ("CONFIG", "SET", "appendfsync", "no"),
                    ("CONFIG", "SET", "appendfsync", "sometimes"),
                    ("CONFIG", "SET", "appendfsync", ""),
                    ("CONFIG", "GET", "appendfsync"),
                    ("CONFIG", "SET", "appendonly", "maybe"),
                    ("CONFIG", "SET", "appendonly", "no"),
                    ("CONFIG", "SET", "appendonly", "YES"),
                    ("CONFIG", "SET", "appendonly", "yes"),
                    ("CONFIG", "GET", "appendonly"),
                    ("CONFIG", "SET", "appendonly", "no"),
                    ("CONFIG", "SET", "appendonly", "no"),
                    ("CONFIG", "SET", "appendfsync", "always", "appendonly", "1"),
                    ("CONFIG", "GET", "appendfsync"), ("CONFIG", "GET", "appendonly")):
            want, got = r.call(*cmd), c.call(*cmd)
            check(want == got, "%r: redis-server %r, percore %r" % (cmd, want, got))
        # INFO at once: on already, its files being written
        for _ in range(20):
            c.call("SET", "k%d" % _, "v")
        before = int(info(c)["aof_rewrites"])  # the switch-on above may have ended
        c.send(enc("CONFIG", "SET", "appendonly", "yes") + enc("INFO", "persistence") +
               enc("BGREWRITEAOF"))
        check(c.reply() == b"+OK", "switch-on")
        i = dict(ln.split(":", 1) for ln in c.reply().decode().split("\r\n") if ":" in ln)
        check(i["aof_enabled"] == "1" and i["aof_rewrite_in_progress"] == "1",
              "INFO while switching on: %r" % i)
        got = c.reply()
        check(got == b"-ERR Background append only file rewriting already in progress",
              "BGREWRITEAOF while switching on: %r" % got)
        i = wait_on(c)
        check(int(i["aof_rewrites"]) == before + 1 and i["aof_last_bgrewrite_status"] == "ok",
              "INFO once on: %r" % i)
        check(len(files(pdir)) == 2, "two files: %r" % os.listdir(pdir))
        check(c.call("CONFIG", "SET", "appendonly", "no") == b"+OK", "off")
        check(info(c)["aof_enabled"] == "0", "INFO once off")
        got = c.call("BGREWRITEAOF")
        check(got == b"-ERR BGREWRITEAOF needs appendonly yes here", "BGREWRITEAOF off: %r" % got)
        # while a BGSAVE runs the switch-on waits for it, scheduled
        c.send(enc("BGSAVE") + enc("CONFIG", "SET", "appendonly", "yes") + enc("INFO", "persistence"))
        check(c.reply() == b"+Background saving started", "BGSAVE")
        check(c.reply() == b"+OK", "switch-on during a BGSAVE")
        i = dict(ln.split(":", 1) for ln in c.reply().decode().split("\r\n") if ":" in ln)
        check(i["aof_enabled"] == "1" and i["aof_rewrite_scheduled"] == "1" and
              i["aof_rewrite_in_progress"] == "0", "INFO while a BGSAVE runs: %r" % i)
        i = wait_on(c)
        check(int(i["aof_rewrites"]) == before + 2, "the scheduled switch-on ran: %r" % i)
    finally:
        rp.terminate()
        rp.wait()
        c.close()
        srv.stop()


def t_refused(d):
    """A switch-on into a directory gone: refused with Redis's error,
    appendonly stays off (CONFIG GET, INFO), writes go on."""
    gone = os.path.join(d, "gone")
    os.mkdir(gone)
    srv = server(d, 2)
    c = Conn(srv.port)
    check(c.call("CONFIG", "SET", "dir", gone) == b"+OK", "CONFIG SET dir")
    os.rmdir(gone)
    got = c.call("CONFIG", "SET", "appendonly", "yes")
    check(got == b"-ERR CONFIG SET failed (possibly related to argument 'appendonly') - "
          b"Unable to turn on AOF. Check server logs.", "refused: %r" % got)
    check(c.call("CONFIG", "GET", "appendonly") == [b"appendonly", b"no"], "still off")
    i = info(c)
    check(i["aof_enabled"] == "0" and i["aof_rewrite_in_progress"] == "0", "INFO: %r" % i)
    check(c.call("SET", "a", "1") == b"+OK", "writes go on")
    c.close()
    srv.stop()
    check(b"appendonly cannot be switched on" in srv.err, "logged: %r" % srv.err[-500:])


def t_redis_loads(d):
    """One shard switched on: redis-check-aof passes the file and
    redis-server loads it with the same keys."""
    sub = os.path.join(d, "one")
    os.mkdir(sub)
    srv = server(sub, 1)
    c = Conn(srv.port)
    workload(c, random.Random(SEED + 1))
    more_types(c)
    check(c.call("CONFIG", "SET", "appendonly", "yes") == b"+OK", "switch-on")
    c.call("SET", "during", "1")
    wait_on(c)
    c.call("SET", "after", "2")
    c.call("INCR", "ctr")
    want = snapshot(c)
    c.close()
    srv.stop()
    check_files(sub)
    rdir = os.path.join(d, "redis")
    os.mkdir(rdir)
    shutil.copy(files(sub)[0], os.path.join(rdir, "appendonly.aof"))
    got, log = redis_snapshot(rdir)
    same(want, got, "redis-server loading a switch-on's file (%s)" % log[-300:])


def t_sigterm(d):
    """Started with appendonly no, switched on, SIGTERM, started with
    --appendonly yes: every key there."""
    srv = server(d, 2, "--appendonly", "no")
    c = Conn(srv.port)
    workload(c, random.Random(SEED + 2))
    more_types(c)
    check(c.call("CONFIG", "SET", "appendonly", "yes") == b"+OK", "switch-on")
    for i in range(100):
        c.call("SET", "during%d" % i, str(i))
    wait_on(c)
    c.call("MSET", "x1", "1", "x2", "2", "x3", "3")
    c.call("DEL", "s5", "s6")
    want = snapshot(c)
    c.close()
    srv.stop()
    check_files(d)
    srv = server(d, 2, "--appendonly", "yes")
    c = Conn(srv.port)
    same(want, snapshot(c), "restarted with --appendonly yes")
    c.close()
    srv.stop()


TESTS = [t_replies, t_refused, t_redis_loads, t_sigterm, t_switch_load]


def main():
    return run(TESTS, "pc_aofsw_")


if __name__ == "__main__":
    sys.exit(main())
