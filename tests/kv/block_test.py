#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Blocking commands over TCP against `percore kv --shards 2`, the replies
compared with a real redis-server doing the same steps: timeouts, a push
by another client waking the longest waiting one (on keys of both shards,
by LPUSH, RPUSH, ZADD, LMOVE's destination, a MULTI/EXEC; one spanning
both shards serves its blocked client only once it ran whole), INFO's
blocked_clients as clients block and stop waiting, waiters served
first come first served, a client leaving while blocked losing nothing,
BLMOVE and BRPOPLPUSH with source and destination on different shards,
CLIENT UNBLOCK, CLIENT LIST and CLIENT KILL across shards, outside MULTI
and queued inside it, CLIENT LIST's buffer fields; then stress runs: consumers
blocked on keys of both shards, producers pushing, every item delivered
exactly once, and moves across shards while CLIENT UNBLOCK interrupts.
Exit 0 when all hold, 1 otherwise, 77 when redis-server is missing.

usage: block_test.py PERCORE [REDIS_SERVER]"""
import os
import random
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle as o  # noqa: E402

SEED = o.SEED


def cmd(peer, *args):
    peer.send(o.enc(*args))
    return peer.reader.reply()[0]


def send(peer, *args):
    peer.send(o.enc(*args))


def reply(peer):
    return peer.reader.reply()[0]


def timeouts(port, k):
    """Each blocking command times out with its nil, no earlier than asked."""
    out = []
    for args in (("BLPOP", k("a"), k("b"), 0.2), ("BRPOP", k("a"), 0.15), ("BLMOVE", k("a"), k("c"), "LEFT", "RIGHT", 0.1),
                 ("BRPOPLPUSH", k("a"), k("c"), 0.1), ("BLMPOP", 0.1, 2, k("a"), k("b"), "LEFT"),
                 ("BZPOPMIN", k("z"), 0.1), ("BZPOPMAX", k("z"), k("y"), 0.1), ("BZMPOP", 0.1, 1, k("z"), "MIN")):
        p = o.RedisPeer(port)
        t0 = time.monotonic()
        got = cmd(p, *args)
        took = time.monotonic() - t0
        out.append((args[0], got, took >= float(args[-1] if args[0] not in ("BLMPOP", "BZMPOP") else args[1]) - 0.01))
        p.close()
    return out


def wake(port, k):
    """Pushes by another client wake a blocked one, whichever way."""
    out = []
    cases = [(("BLPOP", k("a"), k("b"), 0), ("RPUSH", k("b"), "x", "y")),
             (("BRPOP", k("b"), k("a"), 0), ("LPUSH", k("a"), "l1", "l2")),
             (("BZPOPMIN", k("z"), k("y"), 0), ("ZADD", k("y"), 2, "m", 1, "n")),
             (("BZMPOP", 0, 2, k("z"), k("y"), "MAX", "COUNT", 5), ("ZADD", k("z"), 7, "q")),
             (("BLMPOP", 0, 2, k("c"), k("d"), "RIGHT", "COUNT", 2), ("RPUSH", k("d"), 1, 2, 3)),
             (("BLMOVE", k("e"), k("f"), "RIGHT", "LEFT", 0), ("RPUSH", k("e"), "mv")),
             (("BRPOPLPUSH", k("e"), k("f"), 0), ("RPUSH", k("e"), "mv2")),
             (("BLPOP", k("g"), 0), ("LMOVE", k("d"), k("g"), "LEFT", "LEFT")),
             (("BLPOP", k("h"), 0), "MULTI")]
    for blocked, push in cases:
        a, b = o.RedisPeer(port), o.RedisPeer(port)
        send(a, *blocked)
        time.sleep(0.1)
        if push == "MULTI":
            got = [cmd(b, "MULTI"), cmd(b, "RPUSH", k("h"), "t1"), cmd(b, "RPUSH", k("h"), "t2"), cmd(b, "EXEC")]
        else:
            got = [cmd(b, *push)]
        got.append(reply(a))
        got += [cmd(b, "LRANGE", k("f"), 0, -1), cmd(b, "LRANGE", k("d"), 0, -1), cmd(b, "ZRANGE", k("y"), 0, -1),
                cmd(b, "LRANGE", k("h"), 0, -1)]
        out.append((blocked, got))
        a.close()
        b.close()
    return out


def exec_spanning(port, k):
    """An EXEC over both shards pushing to a list a client is blocked on,
    the push among the commands of the list's shard, locked last: the
    blocked client is served after the whole EXEC, as Redis serves it,
    so a command after the push in the same EXEC still sees the element,
    and the woken client reads the EXEC's write on the other shard."""
    out = []
    for tail in ((), (("LLEN", k("b")),)):
        a, b = o.RedisPeer(port), o.RedisPeer(port)
        send(a, "BLPOP", k("b"), 0)
        time.sleep(0.1)
        steps = [("SET", k("a"), "v%d" % len(tail)), ("RPUSH", k("b"), "x")] + list(tail)
        got = [cmd(b, "MULTI")] + [cmd(b, *step) for step in steps] + [cmd(b, "EXEC")]
        got += [reply(a), cmd(a, "GET", k("a")), cmd(b, "LLEN", k("b"))]
        out.append(got)
        a.close()
        b.close()
    return out


def blocked_clients(peer):
    """INFO's blocked_clients."""
    info = cmd(peer, "INFO", "clients").decode()
    return int(info.split("blocked_clients:")[1].split()[0])


def info_blocked(port, k):
    """INFO's blocked_clients counts the clients waiting on keys of either
    shard: up as each blocks, down as one is served, leaves or times out."""
    b = o.RedisPeer(port)
    out = [blocked_clients(b)]
    waiting = []
    for key in ("a", "b", "a"):
        p = o.RedisPeer(port)
        send(p, "BLPOP", k(key), 0)
        waiting.append(p)
        time.sleep(0.1)
        out.append(blocked_clients(b))
    out.append(cmd(b, "RPUSH", k("b"), "x"))
    out += [reply(waiting[1]), blocked_clients(b)]
    waiting[2].close()  # leaves while blocked
    time.sleep(0.1)
    out.append(blocked_clients(b))
    out.append(cmd(b, "RPUSH", k("a"), "y"))
    out += [reply(waiting[0]), blocked_clients(b)]
    send(waiting[0], "BLPOP", k("c"), 1)  # times out
    time.sleep(0.1)
    out.append(blocked_clients(b))
    out += [reply(waiting[0]), blocked_clients(b)]
    for p in (b, waiting[0], waiting[1]):
        p.close()
    return out


def fifo(port, k):
    """Three clients blocked on one key are served in the order they
    blocked; one blocked on two keys is served once."""
    peers = [o.RedisPeer(port) for _ in range(4)]
    for i, p in enumerate(peers[:3]):
        send(p, "BLPOP", k("q"), 0) if i != 1 else send(p, "BLPOP", k("r"), k("q"), 0)
        time.sleep(0.1)
    got = [cmd(peers[3], "RPUSH", k("q"), 1, 2, 3, 4)] + [reply(p) for p in peers[:3]]
    got.append(cmd(peers[3], "RPUSH", k("r"), "only"))
    got.append(cmd(peers[3], "LRANGE", k("q"), 0, -1))
    got.append(cmd(peers[3], "LRANGE", k("r"), 0, -1))
    for p in peers:
        p.close()
    return got


def leave(port, k):
    """A client leaving while blocked takes nothing; the next one is served."""
    a, b, c = o.RedisPeer(port), o.RedisPeer(port), o.RedisPeer(port)
    send(a, "BLPOP", k("l"), k("m"), 0)
    time.sleep(0.1)
    a.close()
    time.sleep(0.1)
    send(b, "BRPOP", k("l"), 0)
    time.sleep(0.1)
    got = [cmd(c, "RPUSH", k("l"), "v1", "v2"), reply(b), cmd(c, "LRANGE", k("l"), 0, -1),
           cmd(c, "RPUSH", k("m"), "w"), cmd(c, "LRANGE", k("m"), 0, -1)]
    b.close()
    c.close()
    return got


def cross(port, k):
    """BLMOVE and BRPOPLPUSH with source and destination on different
    shards (same-shard pairs too, where k places them so): served at once,
    woken by a push, timed out, refused for a destination of another
    type when woken (nothing popped), waiters first come first served
    whatever they wait with, a waiter that leaves taking nothing."""
    s, t, u = k("s"), k("t"), k("u")
    a, b, c, d = (o.RedisPeer(port) for _ in range(4))
    got = [cmd(d, "RPUSH", s, "now"), cmd(a, "BLMOVE", s, t, "LEFT", "RIGHT", 0),
           cmd(a, "BRPOPLPUSH", s, t, 0.1), cmd(a, "BLMOVE", s, t, "RIGHT", "LEFT", 0.1)]
    send(a, "BLMOVE", s, t, "RIGHT", "LEFT", 0)
    time.sleep(0.1)
    got += [cmd(d, "RPUSH", s, "w1", "w2"), reply(a), cmd(d, "LRANGE", s, 0, -1), cmd(d, "LRANGE", t, 0, -1)]
    cmd(d, "DEL", s)
    # oldest first: a BLMOVE, a BLPOP, a BRPOPLPUSH on one source
    send(a, "BLMOVE", s, t, "LEFT", "LEFT", 0)
    time.sleep(0.1)
    send(b, "BLPOP", s, 0)
    time.sleep(0.1)
    send(c, "BRPOPLPUSH", s, u, 0)
    time.sleep(0.1)
    got += [cmd(d, "RPUSH", s, "f1"), reply(a), cmd(d, "RPUSH", s, "f2", "f3"), reply(b), reply(c)]
    got += [cmd(d, "LRANGE", t, 0, -1), cmd(d, "LRANGE", u, 0, -1), cmd(d, "LRANGE", s, 0, -1)]
    # a destination of another type: WRONGTYPE when woken, the element kept
    cmd(d, "DEL", s, t)
    cmd(d, "SET", t, "str")
    send(a, "BLMOVE", s, t, "LEFT", "LEFT", 0)
    time.sleep(0.1)
    send(b, "BLMOVE", s, u, "LEFT", "LEFT", 0)
    time.sleep(0.1)
    got += [cmd(d, "RPUSH", s, "keep"), reply(a), reply(b), cmd(d, "LRANGE", s, 0, -1), cmd(d, "GET", t)]
    # one that leaves takes nothing; the next waiter gets it
    send(a, "BRPOPLPUSH", s, t, 0)
    time.sleep(0.1)
    a.close()
    time.sleep(0.1)
    send(b, "BRPOPLPUSH", s, u, 0)
    time.sleep(0.1)
    got += [cmd(d, "RPUSH", s, "left"), reply(b), cmd(d, "LRANGE", s, 0, -1), cmd(d, "LRANGE", u, 0, -1)]
    for p in (b, c, d):
        p.close()
    return got


def unblock(port, k):
    """CLIENT UNBLOCK from other connections (on either shard): nil by
    default or with TIMEOUT, Redis's error with ERROR, :0 for a client
    not blocked (or unblocked already), argument errors; a cross-shard
    BLMOVE unblocked too; the key keeps what a later push brings."""
    got = []
    others = [o.RedisPeer(port) for _ in range(3)]
    for i, (blocked, how) in enumerate([(("BLPOP", k("a"), k("b"), 0), ()),
                                        (("BRPOP", k("a"), 0), ("TIMEOUT",)),
                                        (("BZPOPMIN", k("z"), 0), ("ERROR",)),
                                        (("BLMOVE", k("s"), k("t"), "LEFT", "LEFT", 0), ("error",)),
                                        (("BRPOPLPUSH", k("s"), k("t"), 0), ()),
                                        (("BLMPOP", 0, 2, k("a"), k("b"), "LEFT"), ("timeout",))]):
        a = o.RedisPeer(port)
        me = int(cmd(a, "CLIENT", "ID")[1:-2])
        send(a, *blocked)
        time.sleep(0.1)
        u = others[i % len(others)]
        got += [cmd(u, "CLIENT", "UNBLOCK", me, *how), reply(a), cmd(u, "CLIENT", "UNBLOCK", me, *how),
                cmd(others[(i + 1) % len(others)], "CLIENT", "UNBLOCK", me)]
        got.append(cmd(a, "PING"))
        a.close()
    u = others[0]
    me = int(cmd(u, "CLIENT", "ID")[1:-2])
    got += [cmd(u, "CLIENT", "UNBLOCK", me), cmd(u, "CLIENT", "UNBLOCK", 999999),
            cmd(u, "CLIENT", "UNBLOCK", "x"), cmd(u, "CLIENT", "UNBLOCK", me, "maybe"),
            cmd(u, "CLIENT", "UNBLOCK", me, "ERROR", "x"), cmd(u, "CLIENT", "UNBLOCK"),
            cmd(u, "RPUSH", k("a"), "after"), cmd(u, "LRANGE", k("a"), 0, -1), cmd(u, "LRANGE", k("t"), 0, -1)]
    for p in others:
        p.close()
    return got


def client_list(port, k):
    """CLIENT LIST from any connection lists every connection of every
    shard once, with Redis's field names in its order; TYPE and ID filter
    (ids in the order asked); its errors are Redis's."""
    peers = [o.RedisPeer(port) for _ in range(5)]
    ids = []
    for i, p in enumerate(peers):
        cmd(p, "CLIENT", "SETNAME", "lister%d" % i)
        ids.append(int(cmd(p, "CLIENT", "ID")[1:-2]))
    many = [o.RedisPeer(port) for _ in range(16)]  # ids unique over every shard
    many_ids = [cmd(p, "CLIENT", "ID") for p in many]
    for p in many:
        p.close()
    cmd(peers[4], "SUBSCRIBE", "news")
    send(peers[3], "BLPOP", k("a"), 0)
    time.sleep(0.1)
    out = [len(set(many_ids + [b":%d\r\n" % i for i in ids])) == len(many_ids) + len(ids)]
    for p in peers[:3]:
        text = cmd(p, "CLIENT", "LIST").split(b"\r\n", 1)[1][:-2]
        names = sorted(w for line in text.split(b"\n") for w in line.split(b" ") if w.startswith(b"name=lister"))
        own = [line for line in text.split(b"\n") if b"name=lister" in line and b"cmd=client|list" in line]
        out.append((names, len(own)))
    text = cmd(peers[0], "CLIENT", "LIST", "ID", ids[2], 999999, ids[1], ids[2]).split(b"\r\n", 1)[1][:-2]
    out.append([line.split(b" ")[4] for line in text.split(b"\n") if line])
    text = cmd(peers[0], "CLIENT", "LIST", "TYPE", "pubsub").split(b"\r\n", 1)[1][:-2]
    out.append([w for line in text.split(b"\n") for w in line.split(b" ") if w.startswith(b"name=")])
    text = cmd(peers[1], "CLIENT", "LIST", "TYPE", "normal").split(b"\r\n", 1)[1][:-2]
    out.append(sorted(w for line in text.split(b"\n") for w in line.split(b" ") if w.startswith(b"name=lister")))
    out += [cmd(peers[0], "CLIENT", "LIST", "TYPE", "master"), cmd(peers[0], "CLIENT", "LIST", "ID"),
            cmd(peers[0], "CLIENT", "LIST", "ID", 1, "x"), cmd(peers[0], "CLIENT", "LIST", "TYPE", "x"),
            cmd(peers[0], "CLIENT", "LIST", "TYPE", "normal", "x"),
            cmd(peers[0], "CLIENT", "LIST", "ID", *range(10 ** 9, 10 ** 9 + 100000))]
    line = cmd(peers[0], "CLIENT", "LIST", "ID", ids[0]).split(b"\r\n")[1]
    fields = [w.split(b"=")[0] for w in line.split(b" ")]
    out.append([w for w in line.split(b" ") if w.startswith(b"laddr=")] == [b"laddr=127.0.0.1:%d" % port])
    # the states it shows: waiting on keys, subscribed, inside MULTI
    cmd(peers[2], "MULTI")
    cmd(peers[2], "SET", k("b"), 1)
    cmd(peers[2], "GET", k("b"))
    text = cmd(peers[0], "CLIENT", "LIST", "ID", ids[3], ids[4], ids[2]).split(b"\r\n", 1)[1][:-2]
    keep = (b"name", b"flags", b"sub", b"psub", b"multi", b"cmd")
    out.append([[w for w in line.split(b" ") if w.split(b"=")[0] in keep] for line in text.split(b"\n") if line])
    out.append(cmd(peers[2], "DISCARD"))
    cmd(peers[0], "RPUSH", k("a"), "v")
    out.append(reply(peers[3]))
    for p in peers:
        p.close()
    return out, fields


def client_kill(port, k):
    """CLIENT KILL from connections (on either shard) closes others by
    ID, ADDR (old form too), TYPE; SKIPME spares the caller unless told
    no (then its reply comes first); a client blocked when killed takes
    nothing; Redis's errors."""
    out = []
    for i in range(3):
        victim, blocked, killer = o.RedisPeer(port), o.RedisPeer(port), o.RedisPeer(port)
        vid = int(cmd(victim, "CLIENT", "ID")[1:-2])
        bid = int(cmd(blocked, "CLIENT", "ID")[1:-2])
        send(blocked, "BLPOP", k("a"), 0)
        time.sleep(0.1)
        vaddr = "127.0.0.1:%d" % victim.sock.getsockname()[1]
        out += [cmd(killer, "CLIENT", "KILL", "ID", bid), blocked.closed(),
                cmd(killer, "CLIENT", "KILL", "ID", bid), cmd(killer, "RPUSH", k("a"), "kept%d" % i)]
        if i == 0:
            out += [cmd(killer, "CLIENT", "KILL", "ADDR", vaddr, "ID", vid + 1000), victim.closed()]
            out += [cmd(killer, "CLIENT", "KILL", vaddr), victim.closed(), cmd(killer, "CLIENT", "KILL", vaddr)]
        elif i == 1:
            cmd(victim, "SUBSCRIBE", "news")
            out += [cmd(killer, "CLIENT", "KILL", "TYPE", "pubsub"), victim.closed()]
        else:
            here = "127.0.0.1:%d" % port
            out += [cmd(killer, "CLIENT", "KILL", "LADDR", "127.0.0.2:%d" % port, "ID", vid),
                    cmd(killer, "CLIENT", "KILL", "LADDR", here, "ADDR", vaddr, "USER", "default"), victim.closed()]
        me = "127.0.0.1:%d" % killer.sock.getsockname()[1]
        out += [cmd(killer, "CLIENT", "KILL", "ADDR", me), cmd(killer, "CLIENT", "KILL", "ADDR", me, "SKIPME", "no"),
                killer.closed()]
        for p in (victim, blocked, killer):
            p.close()
    p = o.RedisPeer(port)
    out += [cmd(p, "LRANGE", k("a"), 0, -1), cmd(p, "CLIENT", "KILL", "ID", "x"), cmd(p, "CLIENT", "KILL", "ID", 0),
            cmd(p, "CLIENT", "KILL", "TYPE", "x"), cmd(p, "CLIENT", "KILL", "USER", "x"),
            cmd(p, "CLIENT", "KILL", "SKIPME", "maybe"), cmd(p, "CLIENT", "KILL", "ID", 1, "TYPE"),
            cmd(p, "CLIENT", "KILL", "1.2.3.4:5")]
    p.close()
    return out


def split_exec(raw):
    """An EXEC reply whose first element is CLIENT LIST's text: its
    header, the ids the text lists, and the raw replies after it."""
    head, rest = raw.split(b"\r\n", 1)
    size, rest = rest.split(b"\r\n", 1)
    text, rest = rest[:int(size[1:])], rest[int(size[1:]) + 2:]
    ids = {int(w[3:]) for line in text.split(b"\n") for w in line.split(b" ") if w.startswith(b"id=")}
    return head, ids, rest


def multi_clients(port, k):
    """CLIENT LIST, KILL and UNBLOCK queued inside MULTI act over every
    shard, as outside: eight victims and eight blocked clients (each
    connection lands on either shard, so some are another shard's than
    the caller's but with odds of 2^-16), listed, killed (closed),
    unblocked (nil), among keyed commands whose replies keep their place
    in EXEC's array; a CLIENT KILL of the caller itself inside MULTI
    answers EXEC's array up to its own reply, runs the rest unanswered,
    then closes the connection, as Redis does."""
    a = o.RedisPeer(port)
    victims = [o.RedisPeer(port) for _ in range(8)]
    blocked = [o.RedisPeer(port) for _ in range(8)]
    vids = [int(cmd(p, "CLIENT", "ID")[1:-2]) for p in victims]
    bids = [int(cmd(p, "CLIENT", "ID")[1:-2]) for p in blocked]
    for i, p in enumerate(blocked):
        send(p, "BLPOP", k("a" if i % 2 else "b"), 0)
    time.sleep(0.2)
    steps = [("MULTI",), ("CLIENT", "LIST"), ("SET", k("c"), "v"), ("CLIENT", "KILL", "ID", 10 ** 9)]
    steps += [("CLIENT", "KILL", "ID", v) for v in vids]
    steps += [("CLIENT", "UNBLOCK", b) for b in bids]
    steps += [("CLIENT", "UNBLOCK", bids[0]), ("GET", k("c")), ("CLIENT", "KILL", "ADDR", "1.2.3.4:5")]
    got = [cmd(a, *s) for s in steps]
    head, ids, rest = split_exec(cmd(a, "EXEC"))
    got += [head, set(vids + bids) <= ids, rest]
    got += [p.closed() for p in victims]
    got += [reply(p) for p in blocked]
    listed = split_exec(b"*1\r\n" + cmd(a, "CLIENT", "LIST", "ID", *(vids + bids)))[1]
    got += [cmd(a, "LRANGE", k("a"), 0, -1), listed == set(bids)]
    for q in victims + blocked:
        q.close()
    return got + kill_itself(port, k, a)


def kill_itself(port, k, a=None):
    """A CLIENT KILL of the caller itself inside MULTI: EXEC's array up to
    its own reply, the rest run unanswered (another connection killed, a
    counter incremented), then the connection closed."""
    a = a or o.RedisPeer(port)
    got = []
    me = int(cmd(a, "CLIENT", "ID")[1:-2])
    other = o.RedisPeer(port)
    oid = int(cmd(other, "CLIENT", "ID")[1:-2])
    for s in [("MULTI",), ("SET", k("d"), 1), ("CLIENT", "KILL", "ID", me, "SKIPME", "no"),
              ("INCR", k("d")), ("CLIENT", "KILL", "ID", oid), ("PING",)]:
        send(a, *s)
    got += [reply(a) for _ in range(6)]
    send(a, "EXEC")
    a.sock.settimeout(10)
    tail = b""
    while True:
        data = a.sock.recv(1 << 16)
        if not data:
            break
        tail += data
    got += [tail, other.closed()]
    p = o.RedisPeer(port)
    got.append(cmd(p, "GET", k("d")))
    for q in (a, other, p):
        q.close()
    return got


def fields_in_order(ours, theirs, failures):
    """Our CLIENT LIST fields are Redis 7.0's, all of them in its order
    (then lib-name and lib-ver, from Redis 7.2)."""
    if ours[-2:] != [b"lib-name", b"lib-ver"] or ours[:-2] != theirs:
        failures.append("CLIENT LIST fields %r, Redis's %r" % (ours, theirs))


def fields(line):
    """A CLIENT LIST line's fields, by name."""
    return dict(w.split(b"=", 1) for w in line.strip().split(b" "))


def line_of(peer, cid):
    return fields(cmd(peer, "CLIENT", "LIST", "ID", cid).split(b"\r\n")[1])


def buffers(port, k):
    """CLIENT LIST's buffer fields move as Redis's do: qbuf grows while a
    client sends half a request, and is 0 again once it is whole; multi-mem
    grows with MULTI's queue and is 0 after EXEC; omem grows for a client
    that does not read 16 replies of 1 MiB. CLIENT INFO shows the fields
    CLIENT LIST does, in its order."""
    watcher, half = o.RedisPeer(port), o.RedisPeer(port)
    hid = int(cmd(half, "CLIENT", "ID")[1:-2])
    out = [[f for f in fields(cmd(watcher, "CLIENT", "INFO").split(b"\r\n")[1])] ==
           [f for f in line_of(watcher, hid)]]
    request = o.enc("SET", k("a"), "v" * 100)
    qbuf = []
    for part in (request[:30], request[30:80]):
        half.send(part)
        time.sleep(0.2)
        qbuf.append(int(line_of(watcher, hid)[b"qbuf"]))
    half.send(request[80:])
    out += [reply(half), qbuf[0] > 0, qbuf[1] > qbuf[0], int(line_of(watcher, hid)[b"qbuf"])]
    mm = []
    for step in (("MULTI",), ("SET", k("a"), "x"), ("GET", k("a")), ("EXEC",)):
        cmd(half, *step)
        mm.append(int(line_of(watcher, hid)[b"multi-mem"]))
    out += [mm[0] == 0, 0 < mm[1] < mm[2], mm[3]]
    cmd(watcher, "SET", k("b"), "z" * (1 << 20))
    slow = socket.socket()
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.connect(("127.0.0.1", port))
    slow.sendall(o.enc("CLIENT", "ID"))
    sid = int(slow.recv(64)[1:-2])
    before = int(line_of(watcher, sid)[b"omem"])
    slow.sendall(o.enc("GET", k("b")) * 16)
    time.sleep(0.5)
    out += [before, int(line_of(watcher, sid)[b"omem"]) >= 1 << 20]
    slow.settimeout(30)
    want, got = 16 * ((1 << 20) + len(b"$1048576\r\n\r\n")), 0
    while got < want:
        got += len(slow.recv(1 << 20))
    out.append(got)
    for p in (watcher, half):
        p.close()
    slow.close()
    return out




def compare(name, ours, theirs, failures):
    if ours != theirs:
        failures.append("%s:\n  kv:    %r\n  redis: %r" % (name, ours, theirs))


def produce(port, i, items, producers, verbs, keys):
    """Producer i of producers pushes its share of items "it<n>", each
    once, with one of verbs to one of keys (seeded)."""
    p = o.RedisPeer(port)
    rng = random.Random(SEED + i)
    mine = range(i, items, producers)
    for n in mine:
        send(p, rng.choice(verbs), rng.choice(keys), "it%d" % n)
    for _ in mine:
        reply(p)
    p.close()


def stress(port, names, failures, items=3000, consumers=12, producers=3):
    """Consumers loop on BLPOP over keys of both shards; producers push
    every item once; each item must reach exactly one consumer."""
    got, lock = [], threading.Lock()
    done = threading.Event()

    def consume():
        p = o.RedisPeer(port)
        while not done.is_set():
            r = cmd(p, "BLPOP", *names, 0.5)
            if r.startswith(b"*2"):
                item = r.split(b"\r\n")[4]
                with lock:
                    got.append(item)
                    if len(got) == items:
                        done.set()
        p.close()

    threads = [threading.Thread(target=consume) for _ in range(consumers)]
    threads += [threading.Thread(target=produce, args=(port, i, items, producers, ["LPUSH", "RPUSH"], names))
                for i in range(producers)]
    for t in threads:
        t.start()
    done.wait(120)
    done.set()
    for t in threads:
        t.join(30)
    p = o.RedisPeer(port)
    left = cmd(p, "EXISTS", *names)
    p.close()
    want = sorted(b"it%d" % n for n in range(items))
    if sorted(got) != want:
        dup = len(got) - len(set(got))
        failures.append("stress: %d items delivered of %d, %d twice, %s left in the lists"
                        % (len(set(got)), items, dup, left))
    elif left != b":0\r\n":
        failures.append("stress: lists not empty after every item was delivered: %r" % left)


def stress_move(port, sources, dests, failures, items=1500, consumers=8, producers=3):
    """Consumers loop on BLMOVE / BRPOPLPUSH from keys of one shard to keys
    of the other, while producers push and a third party unblocks them
    with CLIENT UNBLOCK at random: every item ends in a destination
    exactly once, and every move a consumer was told of is there."""
    moved, lock = [], threading.Lock()
    done = threading.Event()
    ids = []

    def consume(i):
        p = o.RedisPeer(port)
        with lock:
            ids.append(int(cmd(p, "CLIENT", "ID")[1:-2]))
        rng = random.Random(SEED + 100 + i)
        while not done.is_set():
            j = rng.randrange(len(sources))
            if rng.random() < 0.5:
                r = cmd(p, "BLMOVE", sources[j], dests[j], "LEFT", "RIGHT", 0.5)
            else:
                r = cmd(p, "BRPOPLPUSH", sources[j], dests[j], 0.5)
            if r.startswith(b"$") and r != b"$-1\r\n":
                with lock:
                    moved.append(r.split(b"\r\n")[1])
        p.close()

    def unblocker():
        p = o.RedisPeer(port)
        rng = random.Random(SEED + 999)
        while not done.is_set():
            with lock:
                pick = rng.choice(ids) if ids else None
            if pick is not None:
                cmd(p, "CLIENT", "UNBLOCK", pick, rng.choice(["TIMEOUT", "ERROR"]))
            time.sleep(0.002)
        p.close()

    threads = [threading.Thread(target=consume, args=(i,)) for i in range(consumers)]
    threads.append(threading.Thread(target=unblocker))
    pushers = [threading.Thread(target=produce, args=(port, i, items, producers, ["RPUSH"], sources))
               for i in range(producers)]
    for t in threads + pushers:
        t.start()
    for t in pushers:
        t.join(120)
    p = o.RedisPeer(port)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and cmd(p, "EXISTS", *sources) != b":0\r\n":
        time.sleep(0.05)
    done.set()
    for t in threads:
        t.join(30)
    landed = []
    for d in dests:
        r = cmd(p, "LRANGE", d, 0, -1)
        landed += [x for x in r.split(b"\r\n")[2::2]]
    left = cmd(p, "EXISTS", *sources)
    p.close()
    want = sorted(b"it%d" % n for n in range(items))
    if sorted(landed) != want or left != b":0\r\n":
        failures.append("stress_move: %d items in the destinations (%d distinct) of %d, sources left %r"
                        % (len(landed), len(set(landed)), items, left))
    if len(moved) != len(set(moved)) or not set(moved) <= set(landed):
        failures.append("stress_move: %d moves told, %d distinct, %d not in a destination"
                        % (len(moved), len(set(moved)), len(set(moved) - set(landed))))


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    server = sys.argv[2] if len(sys.argv) > 2 else "redis-server"
    if not any(os.access(os.path.join(d, server), os.X_OK) for d in os.environ["PATH"].split(":")) \
            and not os.access(server, os.X_OK):
        print("block_test: skipped, redis-server is not installed (scripts/deps.sh installs it)")
        return 77
    print("block_test: PC_TEST_SEED=%#x" % SEED)
    proc, rport = o.start_redis(server)
    kv = o.KvServer(sys.argv[1])
    failures = []
    try:
        probe = kv.peer()
        keys = ["a", "b", "c", "d", "e", "f", "g", "h", "l", "m", "q", "r", "y", "z"]
        # neighbours on different shards, BLMOVE's source and destination on one
        k = o.placed(probe, keys, lambda i: 0 if keys[i] in ("e", "f") else i % 2)
        def flush():
            probe.send(o.enc("FLUSHALL"))
            probe.reader.reply()
            r = o.RedisPeer(rport)
            cmd(r, "FLUSHALL")
            r.close()

        def both(steps, kk):
            for name, fn in steps:
                flush()
                compare(name, fn(kv.port, kk), fn(rport, kk), failures)

        both((("timeouts", timeouts), ("wake", wake), ("exec_spanning", exec_spanning),
              ("info_blocked", info_blocked), ("fifo", fifo), ("leave", leave)), k)
        # BLMOVE's source and destinations apart, then together
        names = ["a", "b", "s", "t", "u", "z"]
        for kk in (o.placed(probe, names, lambda i: i % 2), o.placed(probe, names, lambda i: 0)):
            both((("cross", cross), ("unblock", unblock)), kk)
        both((("client_kill", client_kill), ("multi_clients", multi_clients), ("buffers", buffers)), k)
        flush()
        one = o.KvServer(sys.argv[1], shards=1)  # EXEC on one keyspace (txn.c)
        try:
            compare("kill_itself, one shard", kill_itself(one.port, k), kill_itself(rport, k), failures)
        finally:
            rc, err = one.stop()
            if rc != 0 or "Sanitizer" in err or "runtime error" in err:
                failures.append("percore kv --shards 1 exited %d: %s" % (rc, err[-3000:]))
        flush()
        (ours, ofields), (theirs, tfields) = client_list(kv.port, k), client_list(rport, k)
        compare("client_list", ours, theirs, failures)
        fields_in_order(ofields, tfields, failures)
        srcs = [o.apart(probe, ["m%d" % i for i in range(8)])("m%d" % i) for i in range(8)]
        stress_move(kv.port, srcs[0::2], srcs[1::2], failures)
        names = [o.apart(probe, ["k%d" % i for i in range(6)])("k%d" % i) for i in range(6)]
        probe.close()
        stress(kv.port, names, failures)
    except (OSError, EOFError) as e:
        failures.append("connection lost: %r" % e)
    finally:
        proc.kill()
        proc.wait()
        rc, err = kv.stop()
        if rc != 0 or "Sanitizer" in err or "runtime error" in err:
            failures.append("percore kv exited %d: %s" % (rc, err[-3000:]))
    for f in failures:
        print("FAIL " + f)
    print("block_test: %s" % ("ok" if not failures else "%d failures" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
