#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Several clients at once against `percore kv --shards 2` (or
PC_TEST_SHARDS), checked against a serial order of the same commands
replayed on a real redis-server.

Each client runs its own connection, one command at a time, picking at
random from SET/GET/INCR/DEL/MSET/MGET/APPEND/EXISTS over a small keyspace
whose keys land on both shards, and records every command and reply. The
keyspace is split so that the order the server chose is observable:

  n:I        counters: INCR, GET, EXISTS
  s:I        strings built by APPEND of tokens unique to client and step,
             read by GET
  k:I        plain keys: SET of unique values, GET, DEL, EXISTS
  g:J:0..3   groups, always written together: MSET of one token to every
             key of the group (now and then a pipeline of them, which kv
             runs as one transaction), DEL of the whole group; read by
             MGET (with a counter beside it) and EXISTS of the whole group

What is checked, per key (each client's commands on a key are ordered by
the server; that is what a Redis client may rely on, and what a
shard-per-core server must keep):
  - counters: the INCR replies of a key are 1..N, each once, N its INCR
    count, and the final value N; each client's INCR replies and GETs of a
    key never go down.
  - appended strings: the final value is every APPEND's token exactly
    once, each client's tokens in the order it sent them; an APPEND's reply
    is the length where its token ends in the final value; each client's
    GETs are prefixes of the final value that never shrink.
  - plain keys: a GET returns a value some client SET on that key, or nil;
    a final nil needs a DEL.
  - groups, the atomicity of multi-key commands: every MGET of a group
    sees one token on all its keys, or nil on all (never a mix of two
    writes), and never an older token of its own client's than that
    client's last MSET there; EXISTS of a group is 0 or 4; DEL of a group
    removes 0 or 4.
Then every write is replayed on redis-server in a serial order that these
checks establish (the counters' INCRs, the appends in the order of the
final string, each plain key's and group's last write last), comparing
each replayed INCR and APPEND reply with the one kv gave, and the whole
final keyspace of both servers, key by key.

PC_TEST_SHARDS (default 2) sets the shard count: with three, group g:3
spans all three, so its MSETs hold the middle shard's keys while the last
shard's part runs and lets go at once (multi.c).

Bounded in time (PC_TEST_SECONDS, default 15 s of load). Exit 0 when all
holds, 1 when anything differs, 77 (skip) when redis-server or the Python
redis package (python3-redis) is missing.

usage: concurrent_oracle.py PERCORE [REDIS_SERVER]"""
import os
import random
import shutil
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle import KvServer, start_redis  # noqa: E402

try:
    import redis
except ImportError:
    redis = None

SEED = int(os.environ.get("PC_TEST_SEED", "0x5eed0016"), 0)
SECONDS = float(os.environ.get("PC_TEST_SECONDS", "15"))
SHARDS = int(os.environ.get("PC_TEST_SHARDS", "2"))
CLIENTS = 6
MAX_OPS = 4000          # a client's commands at most: the time bounds it too
COUNTERS = [b"n:%d" % i for i in range(4)]
STRINGS = [b"s:%d" % i for i in range(3)]
PLAIN = [b"k:%d" % i for i in range(4)]
# g:3's keys live on all of three shards (PC_TEST_SHARDS=3): its MSETs
# hold the first two shards' keys while the last one's part runs.
GROUPS = [[b"g:%d:%d" % (j, k) for k in range(4)] for j in range(4)]


def client(port, cid, seed, deadline, log, errors):
    """One connection's commands and replies, as (command tuple, reply)."""
    rng = random.Random(seed)
    c = redis.Redis(host="127.0.0.1", port=port, socket_timeout=60)
    try:
        step = 0
        while step < MAX_OPS and time.monotonic() < deadline:
            if rng.random() < 0.05:
                cmds = burst(rng, cid, step)
                p = c.pipeline(transaction=False)
                for cmd in cmds:
                    p.execute_command(cmd[0].decode(), *cmd[1:])
                log.extend(zip(cmds, p.execute()))
            else:
                cmds = [pick(rng, cid, step)]
                log.append((cmds[0], run(c, cmds[0])))
            step += len(cmds)
    except Exception as e:  # a dead connection is a failure, not a skip
        errors.append("client %d: %r" % (cid, e))
    finally:
        c.close()


def run(c, cmd):
    """One command through redis-py (which wants its name as text)."""
    return c.execute_command(cmd[0].decode(), *cmd[1:])


def pick(rng, cid, step):
    token = b"%d.%d;" % (cid, step)
    r = rng.random()
    if r < 0.18:
        return (b"INCR", rng.choice(COUNTERS))
    if r < 0.24:
        return (rng.choice((b"GET", b"EXISTS")), rng.choice(COUNTERS))
    if r < 0.38:
        return (b"APPEND", rng.choice(STRINGS), token)
    if r < 0.44:
        return (b"GET", rng.choice(STRINGS))
    if r < 0.54:
        return (b"SET", rng.choice(PLAIN), b"v" + token)
    if r < 0.60:
        return (rng.choice((b"GET", b"DEL", b"EXISTS")), rng.choice(PLAIN))
    g = rng.choice(GROUPS)
    if r < 0.74:
        return (b"MSET",) + tuple(x for k in g for x in (k, token))
    if r < 0.78:
        return (b"DEL",) + tuple(g)
    if r < 0.82:
        return (b"EXISTS",) + tuple(g)
    return (b"MGET",) + tuple(g) + (rng.choice(COUNTERS),)


def burst(rng, cid, step):
    """A pipeline of MSETs to groups, then an MGET of one of them: kv runs
    the MSETs as one transaction over the shards, which must stay atomic
    for every reader and seen by the client's own next read."""
    n = rng.randint(2, 12)
    groups = [rng.choice(GROUPS) for _ in range(n)]
    cmds = []
    for i, g in enumerate(groups):
        cmds.append((b"MSET",) + tuple(x for k in g for x in (k, b"%d.%d;" % (cid, step + i))))
        if rng.random() < 0.3:  # goes on while the MSETs before it are under way
            cmds.append((b"INCR", rng.choice(COUNTERS)))
    return cmds + [(b"MGET",) + tuple(rng.choice(groups)) + (rng.choice(COUNTERS),)]


class Check:
    def __init__(self, logs, final):
        self.logs, self.final, self.fails = logs, final, []

    def fail(self, fmt, *args):
        if len(self.fails) < 40:
            self.fails.append(fmt % args)

    def counters(self):
        """Returns {key: INCR count}."""
        incrs = {k: [] for k in COUNTERS}
        for cid, log in enumerate(self.logs):
            seen = {}
            for cmd, rep in log:
                if cmd[1] not in incrs or cmd[0] == b"EXISTS":
                    continue
                v = int(rep) if rep is not None else 0
                if cmd[0] == b"INCR":
                    incrs[cmd[1]].append(v)
                if v < seen.get(cmd[1], 0):
                    self.fail("client %d: %s %s gave %d after %d", cid, cmd[0], cmd[1], v,
                              seen[cmd[1]])
                seen[cmd[1]] = v
        for k, got in incrs.items():
            n = len(got)
            if sorted(got) != list(range(1, n + 1)):
                self.fail("%s: %d INCRs replied %s, want 1..%d once each", k, n,
                          sorted(set(range(1, n + 1)) ^ set(got))[:10], n)
            if n and self.final.get(k) != b"%d" % n:
                self.fail("%s: final %r after %d INCRs", k, self.final.get(k), n)
        return {k: len(v) for k, v in incrs.items()}

    def appends(self):
        """Returns {key: [tokens in the final order]}."""
        order = {}
        for k in STRINGS:
            final = self.final.get(k) or b""
            tokens = [t + b";" for t in final.split(b";")[:-1]]
            order[k] = tokens
            ends, at = {}, 0
            for t in tokens:
                at += len(t)
                ends.setdefault(t, at)
            sent = [(cid, cmd[2], rep) for cid, log in enumerate(self.logs)
                    for cmd, rep in log if cmd[0] == b"APPEND" and cmd[1] == k]
            if sorted(tokens) != sorted(t for _, t, _ in sent):
                self.fail("%s: final value holds %d tokens, %d APPENDs sent", k, len(tokens),
                          len(sent))
            for cid, t, rep in sent:
                if ends.get(t) != rep:
                    self.fail("%s: APPEND %r replied %r, its token ends at %r", k, t, rep,
                              ends.get(t))
            for cid, log in enumerate(self.logs):
                mine = [cmd[2] for cmd, _ in log if cmd[0] == b"APPEND" and cmd[1] == k]
                if [t for t in tokens if t.startswith(b"%d." % cid)] != mine:
                    self.fail("%s: client %d's tokens out of its order", k, cid)
                last = b""
                for cmd, rep in log:
                    if cmd == (b"GET", k):
                        rep = rep or b""
                        if not final.startswith(rep) or len(rep) < len(last):
                            self.fail("client %d: GET %s = %r, not a growing prefix", cid, k,
                                      rep[-40:])
                        last = rep
        return order

    def plain(self):
        """Returns {key: a SET value written, or None}: the last write."""
        written = {k: set() for k in PLAIN}
        deleted = set()
        for log in self.logs:
            for cmd, _ in log:
                if cmd[0] == b"SET":
                    written[cmd[1]].add(cmd[2])
                elif cmd[0] == b"DEL" and cmd[1] in written:
                    deleted.add(cmd[1])
        for cid, log in enumerate(self.logs):
            for cmd, rep in log:
                if cmd[0] == b"GET" and cmd[1] in written and rep is not None and \
                        rep not in written[cmd[1]]:
                    self.fail("client %d: GET %s = %r, never SET there", cid, cmd[1], rep)
        last = {}
        for k in PLAIN:
            v = self.final.get(k)
            if v is not None and v not in written[k]:
                self.fail("%s: final %r never SET there", k, v)
            if v is None and written[k] and k not in deleted:
                self.fail("%s: gone without a DEL", k)
            last[k] = v
        return last

    def groups(self):
        """Returns {group index: its final token, or None}."""
        last = {}
        tokens = [set() for _ in GROUPS]
        for log in self.logs:
            for cmd, _ in log:
                if cmd[0] == b"MSET":
                    tokens[GROUPS.index(list(cmd[1::2]))].add(cmd[2])
        for cid, log in enumerate(self.logs):
            mine = {}                        # group -> the step of my last MSET there
            for cmd, rep in log:
                keys = list(cmd[1:5])
                if keys not in GROUPS:
                    continue
                if cmd[0] == b"MSET":
                    mine[GROUPS.index(keys)] = int(cmd[2].split(b".")[1][:-1])
                if cmd[0] == b"MGET" and len(set(rep[:4])) != 1:
                    self.fail("client %d: MGET of %s saw a mix: %r", cid, keys[0][:3], rep[:4])
                elif cmd[0] == b"MGET" and rep[0] and rep[0].startswith(b"%d." % cid) and \
                        int(rep[0].split(b".")[1][:-1]) < mine.get(GROUPS.index(keys), -1):
                    self.fail("client %d: MGET of %s saw its older write %r", cid, keys[0][:3],
                              rep[0])
                if cmd[0] in (b"EXISTS", b"DEL") and rep not in (0, 4):
                    self.fail("client %d: %s of group %s = %r, not 0 or 4", cid, cmd[0],
                              keys[0][:3], rep)
        for j, g in enumerate(GROUPS):
            vals = [self.final.get(k) for k in g]
            if len(set(vals)) != 1:
                self.fail("group %d ends mixed: %r", j, vals)
            elif vals[0] is not None and vals[0] not in tokens[j]:
                self.fail("group %d ends with %r, never written", j, vals[0])
            last[j] = vals[0]
        return last


def replay(r, chk, incrs, appends, plain, groups):
    """The writes, in the serial order the checks established, on redis."""
    for k, n in incrs.items():
        got = [run(r, (b"INCR", k)) for _ in range(n)]
        if got != list(range(1, n + 1)):
            chk.fail("redis: INCR %s replied %r", k, got[:5])
    for k, tokens in appends.items():
        at = 0
        for t in tokens:
            at += len(t)
            rep = run(r, (b"APPEND", k, t))
            if rep != at:
                chk.fail("redis: APPEND %s %r replied %r, kv %r", k, t, rep, at)
    for log in chk.logs:                     # everything else, then the last writes
        for cmd, _ in log:
            if cmd[0] in (b"SET", b"MSET") or (cmd[0] == b"DEL" and cmd[1] not in COUNTERS):
                run(r, cmd)
    for k, v in plain.items():
        run(r, (b"SET", k, v) if v is not None else (b"DEL", k))
    for j, v in groups.items():
        run(r, (b"DEL",) + tuple(GROUPS[j]) if v is None else
            (b"MSET",) + tuple(x for k in GROUPS[j] for x in (k, v)))


def snapshot(r):
    return {k: r.get(k) for k in r.keys(b"*")}


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    percore = sys.argv[1]
    server = sys.argv[2] if len(sys.argv) > 2 else "redis-server"
    if not shutil.which(server):
        print("concurrent oracle: skipped, redis-server is not installed (scripts/deps.sh)")
        return 77
    if redis is None:
        print("concurrent oracle: skipped, the Python redis package (python3-redis) is missing")
        return 77
    print("concurrent oracle: PC_TEST_SEED=%#x, %d clients, %g s, %d shards"
          % (SEED, CLIENTS, SECONDS, SHARDS))
    proc, port = start_redis(server)
    kv = KvServer(percore, shards=SHARDS)
    fails = []
    try:
        logs, errors = [[] for _ in range(CLIENTS)], []
        deadline = time.monotonic() + SECONDS
        threads = [threading.Thread(target=client, args=(kv.port, i, SEED * 100 + i, deadline,
                                                         logs[i], errors))
                   for i in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        fails += errors
        ours = redis.Redis(host="127.0.0.1", port=kv.port, socket_timeout=60)
        final = snapshot(ours)
        ours.close()
        chk = Check(logs, final)
        incrs, appends = chk.counters(), chk.appends()
        plain, groups = chk.plain(), chk.groups()
        theirs = redis.Redis(host="127.0.0.1", port=port, socket_timeout=60)
        replay(theirs, chk, incrs, appends, plain, groups)
        want = snapshot(theirs)
        theirs.close()
        for k in sorted(set(final) | set(want)):
            if final.get(k) != want.get(k):
                chk.fail("final %s: kv %r, redis after the replay %r", k,
                         (final.get(k) or b"")[-40:], (want.get(k) or b"")[-40:])
        fails += chk.fails
        ops = sum(len(x) for x in logs)
        print("concurrent oracle: %d commands from %d clients, %d keys at the end"
              % (ops, CLIENTS, len(final)))
        if ops < CLIENTS * 20:
            fails.append("only %d commands ran: too few to say anything" % ops)
    except (redis.RedisError, OSError) as e:
        fails.append("the check stopped: %r" % e)  # the server's own output follows
    finally:
        proc.kill()
        proc.wait()
        rc, err = kv.stop()
        if rc != 0 or "Sanitizer" in err or "runtime error" in err:
            fails.append("percore kv exited %d: %s" % (rc, err[-3000:]))
    for f in fails:
        print("FAIL " + f)
    print("concurrent oracle: %d failures" % len(fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
