#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Connections moving to the shard of their keys (`percore kv
--move-clients`, pc_session_move), with the redis Python package, two
shards. INFO's moved_connections counts the moves.

  follow    one connection at a time: 100 INCRs of a key on one shard
            leave it there (a move or none, by where it was accepted);
            100 on the other shard's key move it exactly once, 100 back
            once more; 200 on random keys of both, never. Every counter
            ends exact, the replies count up by one, CLIENT ID and the
            name CLIENT SETNAME gave survive, and CLIENT LIST shows the
            connection once;
  pipeline  600 INCRs of the other shard's key in one write: the move
            comes between them, and every reply comes back once, in
            order, with what was sent behind it answered on the new shard;
  stay      a connection inside MULTI, or watching a key, does not move
            (its state lives on its shard); once out of them it does; a
            blocking pop after a move is served;
  clients   8 clients at once, each on its own key of one shard or the
            other, pipelined and not: every counter exact;
  off       --move-clients no: nothing moves.

usage: move_test.py PERCORE"""
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle import RedisPeer, enc, run_parts  # noqa: E402
from txn_test import connect  # noqa: E402

FAILURES = []
RUN = 100        # requests in a row for one shard, over kv's 64


def check(ok, what):
    if not ok:
        FAILURES.append(what)
        print("  FAIL " + what)


def value(reply):
    """A parsed reply as Python values; an error raises."""
    kind, v = reply
    if kind == b"-":
        raise RuntimeError(v)
    if kind == b"*":  # items as (raw bytes, parsed)
        return None if v is None else [value(x[1]) for x in v]
    return v


class Conn:
    """One connection, each request on it (redis-py's pipelines and
    transactions take another from its pool)."""

    def __init__(self, port):
        self.peer = RedisPeer(port)

    def cmd(self, *args):
        self.peer.send(enc(*args))
        return value(self.peer.reader.reply()[1])

    def pipe(self, reqs):
        """Every request in one write; the replies in order."""
        self.peer.send(b"".join(enc(*a) for a in reqs))
        return [value(self.peer.reader.reply()[1]) for _ in reqs]

    def close(self):
        self.peer.close()


def moved(r):
    return int(r.info("stats")["moved_connections"])


def shard_keys(r, prefix, each=1):
    """`each` keys on shard 0, then as many on shard 1 (SCAN walks one
    shard: cursor % 2 names it); one of each by default. Needs an empty
    keyspace."""
    names = ["%s%d" % (prefix, i) for i in range(64)]
    r.mset({n: 1 for n in names})
    where = {}
    for s in range(2):
        cursor = s
        while True:
            cursor, keys = r.scan(cursor, count=1000)
            where.update((k.decode(), s) for k in keys)
            if cursor % 2 != s or cursor == 0:
                break
    r.delete(*names)
    return [n for s in range(2) for n in [n for n in names if where[n] == s][:each]]


def incr_run(c, key, n, start, what):
    """n INCRs of key one at a time; each reply one more than the last."""
    for i in range(n):
        got = c.cmd("INCR", key)
        if got != start + i + 1:
            check(False, "%s: INCR %s answered %d, expected %d" % (what, key, got,
                                                                    start + i + 1))
            return


def t_follow(redis, port):
    watch = connect(redis, port)
    kx, ky = shard_keys(watch, "f")
    for round_ in range(6):
        c = Conn(port)
        c.cmd("CLIENT", "SETNAME", "mover%d" % round_)
        cid = c.cmd("CLIENT", "ID")
        base = moved(watch)
        start_x = int(watch.get(kx) or 0)
        start_y = int(watch.get(ky) or 0)
        incr_run(c, kx, RUN, start_x, "on x")
        first = moved(watch) - base
        check(first in (0, 1), "round %d: %d moves for one shard's key" % (round_, first))
        incr_run(c, ky, RUN, start_y, "on y")
        check(moved(watch) - base == first + 1,
              "round %d: to the other shard's key: %d moves, expected %d"
              % (round_, moved(watch) - base, first + 1))
        incr_run(c, kx, RUN, start_x + RUN, "back on x")
        check(moved(watch) - base == first + 2, "round %d: back: %d moves, expected %d"
              % (round_, moved(watch) - base, first + 2))
        rng = random.Random(round_)
        for _ in range(200):
            c.cmd("SET", "r:%d" % rng.randrange(1000), "v")
        check(moved(watch) - base == first + 2, "round %d: random keys moved it" % round_)
        check(c.cmd("CLIENT", "ID") == cid, "round %d: CLIENT ID changed" % round_)
        check(c.cmd("CLIENT", "GETNAME") == b"mover%d" % round_,
              "round %d: the name was lost" % round_)
        names = [cl["name"] for cl in watch.client_list()]
        check(names.count("mover%d" % round_) == 1,
              "round %d: CLIENT LIST names it %d times" % (round_, names.count("mover%d" % round_)))
        c.close()
    check(int(watch.get(kx)) == 6 * 2 * RUN and int(watch.get(ky)) == 6 * RUN,
          "counters %s %s, expected %d %d" % (watch.get(kx), watch.get(ky), 12 * RUN, 6 * RUN))


def settled(redis, port, prefix):
    """An observer, a key on each shard (x, y), and a connection served
    on x's shard after RUN INCRs of x; with the moves counted so far."""
    watch = connect(redis, port)
    kx, ky = shard_keys(watch, prefix)
    c = Conn(port)
    incr_run(c, kx, RUN, 0, "settle on x")
    return watch, kx, ky, c, moved(watch)


def t_pipeline(redis, port):
    watch, kx, ky, c, base = settled(redis, port, "p")
    got = c.pipe([("INCR", ky)] * 600)
    check(got == list(range(1, 601)), "pipeline: replies %r..." % got[:5])
    # the move leaves once every answer is written: by the next request
    incr_run(c, ky, 10, 600, "after the pipeline")
    check(moved(watch) - base == 1, "pipeline: %d moves" % (moved(watch) - base))
    # a pipeline back, in pieces the client sends while it moves
    peer = c.peer
    reqs = b"".join(enc("INCR", kx) for _ in range(2000))
    for i in range(0, len(reqs), 997):
        peer.send(reqs[i:i + 997])
    got = [value(peer.reader.reply()[1]) for _ in range(2000)]
    check(got == list(range(RUN + 1, RUN + 2001)), "pipeline back: replies out of order")
    incr_run(c, kx, 10, RUN + 2000, "after the second pipeline")
    check(moved(watch) - base == 2, "pipeline back: %d moves" % (moved(watch) - base))


def t_stay(redis, port):
    watch, kx, ky, c, base = settled(redis, port, "s")
    # inside MULTI: queued, run by EXEC at home
    got = c.pipe([("MULTI",)] + [("INCR", ky)] * RUN + [("EXEC",)])
    check(got[-1] == list(range(1, RUN + 1)), "MULTI: replies %r" % got[-1][:3])
    check(moved(watch) == base, "MULTI moved it")
    # watching a key of this shard while working on the other's
    c.cmd("WATCH", kx)
    incr_run(c, ky, RUN, RUN, "watching")
    check(moved(watch) == base, "a watching connection moved")
    c.cmd("UNWATCH")
    incr_run(c, ky, RUN, 2 * RUN, "unwatched")
    check(moved(watch) == base + 1, "unwatched: %d moves" % (moved(watch) - base))
    # a blocking pop on the shard it moved to, served by another client
    lst = ky + ":list"
    got = []
    t = threading.Thread(target=lambda: got.append(c.cmd("BLPOP", lst, 10)))
    t.start()
    time.sleep(0.2)
    watch.rpush(lst, "x")
    t.join()
    check(got == [[lst.encode(), b"x"]], "BLPOP after a move: %r" % got)


def t_clients(redis, port):
    watch = connect(redis, port)
    keys = shard_keys(watch, "c", 4)
    errors = []

    def client(i):
        c = Conn(port)
        key = keys[i]
        n = 0
        try:
            for r in range(20):
                if r % 3 == 0:
                    got = c.pipe([("INCR", key)] * 50)
                    if got != list(range(n + 1, n + 51)):
                        errors.append("client %d: pipeline %r" % (i, got[:3]))
                    n += 50
                else:
                    for _ in range(20):
                        n += 1
                        got = c.cmd("INCR", key)
                        if got != n:
                            errors.append("client %d: %d, expected %d" % (i, got, n))
        finally:
            c.close()
        if int(watch.get(key)) != n:
            errors.append("client %d: counter %s, expected %d" % (i, watch.get(key), n))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for e in errors[:10]:
        check(False, e)


def t_off(redis, port):
    watch = connect(redis, port)
    kx, ky = shard_keys(watch, "o")
    c = Conn(port)
    incr_run(c, kx, RUN, 0, "x")
    incr_run(c, ky, RUN, 0, "y")
    incr_run(c, kx, RUN, RUN, "x again")
    check(moved(watch) == 0, "--move-clients no: %d moves" % moved(watch))


TESTS = [("follow", t_follow, ()), ("pipeline", t_pipeline, ()), ("stay", t_stay, ()),
         ("clients", t_clients, ()), ("off", t_off, ("--move-clients", "no"))]


def main():
    return run_parts(sys.argv[1], TESTS, 2, check, FAILURES)


if __name__ == "__main__":
    sys.exit(main())
