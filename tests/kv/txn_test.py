#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Transactions over several shards of `percore kv`, with the redis
Python package (python3-redis), each part on a fresh server with 3 shards:

  atomic   16 clients run MULTI INCR a INCR b INCR c EXEC (a, b, c on
           three shards) while 4 readers read all three in one MULTI or
           one MGET: every read sees them equal; at the end each is the
           number of transactions run;
  cas      8 clients each add 1 to a counter 100 times with WATCH, GET,
           MULTI, SET, INCR of a key on another shard, EXEC, retried on
           a null reply: both end exactly at 800;
  watch    a key watched on one shard, changed by another client (a
           write, a delete, an expiry, RENAME, MSET and SUNIONSTORE
           reaching it from another shard, FLUSHALL): EXEC answers null
           and runs nothing; unchanged, EXEC runs;
  redis_py pipeline(transaction=True) and transaction() with WATCH over
           keys of every shard: replies, errors at run time in place,
           an error at queue time running nothing; SCAN inside MULTI;
  closing  clients closing right after sending EXECs over shards: each
           runs whole or not at all, the server exits clean;
  subscribe SUBSCRIBE and PSUBSCRIBE inside MULTI beside a key of each
           shard (the EXEC shipped to it or run at home), of two shards
           and of none: the same bytes as redis-server's, and a PUBLISH
           from another connection counts the subscription and reaches it;
           a client closed before such an EXEC answered leaves no
           subscription behind;
  counted  SUBSCRIBE in an EXEC spanning two of the three shards while
           every shard is busy: a PUBLISH from a connection on any shard,
           sent once EXEC answered, counts the subscriber.

usage: txn_test.py PERCORE"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle import RedisPeer, enc, run_parts, start_redis  # noqa: E402
from server_test import race  # noqa: E402

SHARDS = 3
FAILURES = []


def check(ok, what):
    if not ok:
        FAILURES.append(what)
        print("  FAIL " + what)


def on_shards(r, names):
    """Which shard keeps each name: each is set for a moment, then each
    shard's keys are walked alone with SCAN (a cursor names its shard:
    cursor % shards). Needs an empty keyspace."""
    r.mset({n: 1 for n in names})
    where = {}
    for s in range(SHARDS):
        cursor = s
        while True:
            cursor, keys = r.scan(cursor, count=1000)
            where.update((k.decode(), s) for k in keys)
            if cursor % SHARDS != s or cursor == 0:
                break
    r.delete(*names)
    return where


def spread(r, prefix, count):
    """count names, name i on shard i % SHARDS."""
    where = on_shards(r, ["%s%d" % (prefix, i) for i in range(64)])
    names = []
    for i in range(count):
        names.append(next(n for n, s in sorted(where.items())
                          if s == i % SHARDS and n not in names))
    return names


def connect(redis, port):
    """A redis-py client of the server: by address, since a name such as
    redis-py's default "localhost" needs /etc/hosts, which a minimal
    machine may lack, and may mean ::1 where the server listens on
    127.0.0.1 alone."""
    return redis.Redis(host="127.0.0.1", port=port)

def t_atomic(redis, port):
    r = connect(redis, port)
    keys = spread(r, "p", SHARDS)
    writers, per_writer, stop = 16, 150, threading.Event()
    reads = [0]

    def write():
        c = connect(redis, port)
        for _ in range(per_writer):
            p = c.pipeline(transaction=True)
            for k in keys:
                p.incr(k)
            p.execute()

    def read(in_multi):
        c = connect(redis, port)
        while not stop.is_set():
            if in_multi:
                p = c.pipeline(transaction=True)
                for k in keys:
                    p.get(k)
                got = p.execute()
            else:
                got = c.mget(keys)
            reads[0] += 1
            if len(set(got)) != 1:
                check(False, "a reader (%s) saw %r" % ("MULTI" if in_multi else "MGET", got))
                return

    race([threading.Thread(target=read, args=(i % 2 == 0,)) for i in range(4)],
         [threading.Thread(target=write) for _ in range(writers)], stop)
    want = b"%d" % (writers * per_writer)
    check(r.mget(keys) == [want] * SHARDS, "after %d transactions: %r" % (writers * per_writer, r.mget(keys)))
    check(reads[0] > 0, "the readers read")


def t_cas(redis, port):
    r = connect(redis, port)
    counter, other = spread(r, "c", 2)
    clients, per_client = 8, 100
    retries = [0]

    def add():
        c = connect(redis, port)
        for _ in range(per_client):
            while True:
                c.execute_command("WATCH", counter)
                v = int(c.get(counter) or 0)
                p = c.pipeline(transaction=True)
                p.set(counter, v + 1)
                p.incr(other)
                try:
                    p.execute()
                    break
                except redis.WatchError:
                    retries[0] += 1

    ts = [threading.Thread(target=add) for _ in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    want = b"%d" % (clients * per_client)
    check(r.mget(counter, other) == [want, want],
          "check-and-set from %d clients: %r" % (clients, r.mget(counter, other)))
    print("  cas: %d retries" % retries[0])


def t_watch(redis, port):
    r, other = connect(redis, port), connect(redis, port)
    # w, z on shard 0, x, q1 on shard 1, y, q2 on shard 2
    w, x, y, z, q1, q2 = spread(r, "w", 6)
    changes = [
        ("SET", lambda: other.set(w, "v")),
        ("DEL", lambda: other.delete(w)),
        ("RENAME from another shard", lambda: (other.set(x, "moved"), other.rename(x, w))),
        ("MSET over shards", lambda: other.mset({x: 1, w: 2, y: 3})),
        ("SUNIONSTORE from other shards", lambda: (other.sadd(x, "m"), other.sadd(y, "n"),
                                                   other.sunionstore(w, [x, y]))),
        ("FLUSHALL", lambda: other.flushall()),
    ]
    for name, change in changes:
        r.delete(w, x, y, z, q1, q2)
        r.set(w, "before")
        r.execute_command("WATCH", w)
        change()
        r.execute_command("MULTI")
        r.execute_command("INCR", q1)
        r.execute_command("INCR", q2)
        got = r.execute_command("EXEC")
        check(got is None, "WATCH, then %s by another client: EXEC answered %r" % (name, got))
        check(r.mget(q1, q2) == [None, None], "an EXEC aborted after %s ran its commands" % name)
    r.flushall()
    r.set(w, 1, px=100)
    r.execute_command("WATCH", w)
    time.sleep(0.3)
    r.execute_command("MULTI")
    r.execute_command("INCR", x)
    check(r.execute_command("EXEC") is None, "WATCH of a key that expired: EXEC ran")
    check(r.get(x) is None, "an aborted EXEC ran INCR")
    r.set(w, 1)
    r.execute_command("WATCH", w, y)
    other.set(z, 5)  # a key on the same shard as w, not watched
    r.execute_command("MULTI")
    r.execute_command("INCR", x)
    r.execute_command("INCR", z)
    check(r.execute_command("EXEC") == [1, 6], "EXEC with its watched keys unchanged")


def t_redis_py(redis, port):
    r = connect(redis, port)
    k = spread(r, "r", 6)
    p = r.pipeline(transaction=True)
    p.set(k[0], 1).incr(k[1]).mset({k[2]: "a", k[3]: "b"}).mget(k[2], k[3], k[4])
    p.rename(k[2], k[5]).exists(k[2], k[5]).dbsize().get(k[0])
    check(p.execute() == [True, 1, True, [b"a", b"b", None], True, 1, 4, b"1"],
          "pipeline(transaction=True) over shards")
    p = r.pipeline(transaction=True)
    p.incr(k[3]).lpush(k[4], "x").incr(k[1])
    got = p.execute(raise_on_error=False)
    check(isinstance(got[0], redis.ResponseError) and got[1:] == [1, 2],
          "a run-time error in place, the rest run: %r" % got)
    p = r.pipeline(transaction=True)
    p.incr(k[1]).execute_command("NOSUCH", k[2]).incr(k[0])
    try:
        p.execute()
        check(False, "a queue-time error: EXEC ran")
    except redis.ResponseError as e:  # the first queue-time error, EXEC's EXECABORT then
        check("unknown command 'NOSUCH'" in str(e), "a queue-time error: %s" % e)
    check(r.mget(k[0], k[1]) == [b"1", b"2"], "EXECABORT ran nothing")

    def move(pipe):
        a, b = int(pipe.get(k[0])), int(pipe.get(k[1]))
        pipe.multi()
        pipe.set(k[0], a - 1)
        pipe.set(k[1], b + 1)

    check(r.transaction(move, k[0], k[1]) == [True, True], "transaction() with WATCH")
    check(r.mget(k[0], k[1]) == [b"0", b"3"], "transaction()'s writes")
    # SCAN inside MULTI walks every shard, one call per EXEC
    names = {b"scan%d" % i for i in range(40)}
    r.mset({n: 1 for n in names})
    seen, cursor = set(), 0
    while True:
        p = r.pipeline(transaction=True)
        p.scan(cursor, match="scan*", count=7).dbsize()
        (cursor, keys), _ = p.execute()
        seen.update(keys)
        if cursor == 0:
            break
    check(seen == names, "SCAN in MULTI found %d of %d keys" % (len(seen & names), len(names)))


def t_closing(redis, port):
    """Clients that send an EXEC over shards and close at once: every EXEC
    runs whole or not at all, and the server stays sound (and exits clean)."""
    import socket
    r = connect(redis, port)
    a, b = spread(r, "x", 2)
    req = b"".join(b"*%d\r\n" % len(c) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in c)
                   for c in ([b"MULTI"], [b"INCR", a.encode()], [b"INCR", b.encode()], [b"EXEC"]))
    for _ in range(200):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(req * 3)
        s.close()
    va, vb = r.mget(a, b)
    check(va == vb, "EXECs of closed clients half run: %r %r" % (va, vb))
    check(r.ping(), "the server answers after them")
    # More, with the server stopped right behind them: clients closed with
    # an EXEC still in flight are freed after every shard has stopped,
    # when their EXEC must not look at a shard's memory.
    for _ in range(200):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(req * 3)
        s.close()


def subscribed_exec(port, keys, pattern, n):
    """MULTI, SET of each key, (P)SUBSCRIBE, EXEC on a new connection,
    then a PUBLISH from another, the message, a PING: every reply's
    bytes. Returns once the server let the subscriber go, so that the
    next case's PUBLISH does not count it."""
    sub, pub = RedisPeer(port), RedisPeer(port)
    chan = "news.%d" % n
    try:
        sub.send(enc("MULTI") + b"".join(enc("SET", k, "v") for k in keys) +
                 enc("PSUBSCRIBE" if pattern else "SUBSCRIBE", "news.*" if pattern else chan) +
                 enc("EXEC"))
        got = [sub.reader.reply()[0] for _ in range(len(keys) + 3)]
        pub.send(enc("PUBLISH", chan, "hello"))
        got += [pub.reader.reply()[0], sub.reader.reply()[0]]
        sub.send(enc("PING"))  # once the message is in: its delivery may trail the count
        got.append(sub.reader.reply()[0])
        sub.close()
        check(wait_published_to_none(pub, chan), "%s: a closed subscriber still counted" % chan)
        return got
    finally:
        sub.close()
        pub.close()


def wait_published_to_none(peer, chan, seconds=10):
    """PUBLISHes to chan until no client receives it (a closed
    connection's subscriptions go once the server has seen it close):
    whether that came within seconds."""
    deadline = time.monotonic() + seconds
    while True:
        peer.send(enc("PUBLISH", chan, "probe"))
        if peer.reader.reply()[0] == b":0\r\n":
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)


def t_subscribe(redis, port):
    keys = spread(connect(redis, port), "k", SHARDS)
    proc, rport = start_redis("redis-server")
    try:
        n = 0
        for q in [[k] for k in keys] + [keys[:2], []]:
            for pattern in (False, True):
                n += 1
                ours, theirs = (subscribed_exec(p, q, pattern, n) for p in (port, rport))
                check(ours == theirs, "%s beside %s: %r, redis-server %r" % (
                    "PSUBSCRIBE" if pattern else "SUBSCRIBE", q, ours, theirs))
        # closed before its EXEC answered: the subscriptions go with it
        ctl = RedisPeer(port)
        for q in [[k] for k in keys] + [keys[:2]]:
            gone = RedisPeer(port)
            gone.send(enc("MULTI") + b"".join(enc("SET", k, "v") for k in q) +
                      enc("SUBSCRIBE", "gone") + enc("EXEC"))
            gone.close()
        deadline = time.monotonic() + 10
        while True:
            ctl.send(enc("PUBLISH", "gone", "x") + enc("PUBSUB", "NUMSUB", "gone"))
            ctl.reader.reply()
            left = ctl.reader.reply()[0]
            if left.endswith(b":0\r\n") or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        check(left.endswith(b":0\r\n"), "closed subscribers still counted: %r" % left)
        ctl.close()
    finally:
        proc.terminate()
        proc.wait()


def t_counted(redis, port):
    keys = spread(connect(redis, port), "k", SHARDS)
    pubs = [RedisPeer(port) for _ in range(3 * SHARDS)]  # some on every shard
    stop = threading.Event()

    def busy(n):  # keeps every shard's queue of jobs from other shards full
        h = RedisPeer(port)
        while not stop.is_set():
            h.send(b"".join(enc("SET", keys[(n + i) % SHARDS], "x" * 4096) for i in range(64)))
            for _ in range(64):
                h.reader.reply()
        h.close()

    threads = [threading.Thread(target=busy, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    try:
        zero = 0
        for i in range(400):
            sub = RedisPeer(port)
            sub.send(enc("MULTI") + enc("SET", keys[i % SHARDS], "v") +
                     enc("SUBSCRIBE", "c%d" % i) + enc("EXEC"))
            for _ in range(4):
                sub.reader.reply()
            for p in pubs:
                p.send(enc("PUBLISH", "c%d" % i, "m"))
            zero += sum(p.reader.reply()[0] != b":1\r\n" for p in pubs)
            sub.close()
        check(zero == 0, "%d PUBLISHes after a SUBSCRIBE's EXEC did not count it" % zero)
    finally:
        stop.set()
        for t in threads:
            t.join()
        for p in pubs:
            p.close()


TESTS = [("atomic", t_atomic), ("cas", t_cas), ("watch", t_watch), ("redis_py", t_redis_py),
         ("closing", t_closing), ("subscribe", t_subscribe), ("counted", t_counted)]


def main():
    return run_parts(sys.argv[1], [(name, fn, ()) for name, fn in TESTS], SHARDS, check,
                     FAILURES)


if __name__ == "__main__":
    sys.exit(main())
