#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""kill -9 of `percore kv --appendonly yes --shards 2` under pipelined
load, then a restart, several rounds on the same files. Four clients
pipeline SETs of keys of their own, MSETs of four keys and MULTI ... EXEC
transactions of four SETs (both spanning the shards, but for the few
whose keys all fall on one), each multi-key write giving all its keys
the same value, and keep a ledger of every write acknowledged. After
each restart: with appendfsync always every acknowledged write is there;
with everysec every one acknowledged more than 2 s before the kill (the
rounds are short, so every few rounds one runs longer than that); in
both, no MSET or EXEC is there in part (all four keys or none), and
every write there was sent. Each round also asks for a BGREWRITEAOF at a
random moment of its load, so kills fall before, during and after
rewrites (their switches included). Every few rounds one file's last
record (a command, or a group whole), when it is one a crash could tear
(a client's write of that round, never a rewrite's synced records), is
also cut at a random offset before the restart: the same holds for what
precedes it.
Exit 0 when all rounds pass, 1 otherwise.

usage: aof_crash.py PERCORE [ROUNDS]"""
import os
import random
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_test as st  # noqa: E402
from oracle import enc  # noqa: E402
from server_test import Conn, check  # noqa: E402

SEED = int(os.environ.get("PC_TEST_SEED", "0x5eed0c31"), 0)
CLIENTS = 4
DEPTH = 8
PAUSE = 0.02  # between a client's batches: fewer writes (and keys) per round
EVERYSEC_WINDOW = 2.0
CUT_EVERY = 5   # every fifth round tears a file
LONG_EVERY = 5  # everysec: every fifth round runs past the window


def multi_key(kind, name):
    """The keys of an MSET (kind m) or EXEC (kind x) write."""
    return ["%s:%s:%d" % (kind, name, i) for i in range(4)]


def request(kind, name):
    """(the request's bytes, how many replies it gets)."""
    if kind == "m":
        return enc("MSET", *[x for k in multi_key(kind, name) for x in (k, name)]), 1
    if kind == "x":
        sets = [enc("SET", k, name) for k in multi_key(kind, name)]
        return enc("MULTI") + b"".join(sets) + enc("EXEC"), len(sets) + 2
    return enc("SET", "s:" + name, name), 1


class Client(threading.Thread):
    """Pipelines writes until the server goes; acked: (time, kind, name)."""

    def __init__(self, port, cid, rnd, rng):
        super().__init__(daemon=True)
        self.c = Conn(port)
        self.cid, self.rnd, self.rng = cid, rnd, rng
        self.acked = []
        self.sent = set()

    def run(self):
        seq = 0
        try:
            while True:
                batch = []
                for _ in range(DEPTH):
                    seq += 1
                    name = "%d:%d:%d" % (self.rnd, self.cid, seq)
                    r = self.rng.random()
                    batch.append(("m" if r < 0.2 else "x" if r < 0.4 else "s", name))
                for _, name in batch:
                    self.sent.add(name)
                reqs = [request(kind, name) for kind, name in batch]
                self.c.send(b"".join(req for req, _ in reqs))
                for (kind, name), (_, n) in zip(batch, reqs):
                    last = [self.c.reply() for _ in range(n)][-1]
                    if last == b"+OK" or (kind == "x" and last == [b"+OK"] * 4):
                        self.acked.append((time.monotonic(), kind, name))
                time.sleep(PAUSE)
        except (OSError, EOFError, AssertionError):
            pass


def start(d, mode):
    return st.Server("--appendonly", "yes", "--appendfsync", mode, "--dir", d)


def verify(srv, ledger, sent, mode, kills, cut_rounds):
    """Every acknowledged write there (always; everysec: but the last
    2 s), no MSET or EXEC in part, nothing there that was not sent."""
    c = Conn(srv.port)
    present = {}
    cursor = b"0"
    while True:  # SCAN's small replies: one reply of every key is slow to parse here
        cursor, keys = c.call("SCAN", cursor, "COUNT", "1000")
        for k in keys:
            present[k.decode()] = True
        if cursor == b"0":
            break
    multi = {}
    for k in present:
        if k[:2] in ("m:", "x:"):
            name = k[2:k.rindex(":")]
            multi[k[0], name] = multi.get((k[0], name), 0) + 1
            check(name in sent, "a key never sent: %s" % k)
        else:
            check(k[2:] in sent, "a key never sent: %s" % k)
    for (kind, name), n in multi.items():
        if n != 4:
            check(False, "%s %s recovered in part (%s of 4 keys)" %
                  ("MSET" if kind == "m" else "EXEC", name,
                   sorted(k for k in present if k.startswith("%s:%s:" % (kind, name)))))
    missing, lost = 0, None
    for t, kind, name in ledger:
        rnd = int(name.split(":")[0])
        if rnd in cut_rounds:
            continue  # a torn file's tail held writes of that round
        if mode == "everysec" and t > kills[rnd] - EVERYSEC_WINDOW:
            continue  # may be lost by the kill that ended its round
        there = multi.get((kind, name)) == 4 if kind in "mx" else ("s:" + name) in present
        if not there:
            missing += 1
            lost = lost or "%s %s %.2fs before its kill" % (kind, name, kills[rnd] - t)
    check(not missing, "%s: %d acknowledged writes missing (%s)" % (mode, missing, lost))
    c.close()
    return len(present)


def last_record(data):
    """(start, end, name, key) of a file's last record: its last command,
    or its last group whole (MULTI to EXEC: one append); key: the
    command's first argument."""
    starts, names, keys, i = [], [], [], 0
    while i < len(data):
        starts.append(i)
        j = data.index(b"\r\n", i)
        argc, i = int(data[i + 1:j]), j + 2
        for a in range(argc):
            j = data.index(b"\r\n", i)
            n = int(data[i + 1:j])
            if a == 0:
                names.append(data[j + 2:j + 2 + n].upper())
            if a == 1:
                keys.append(data[j + 2:j + 2 + n].decode())
            i = j + 2 + n + 2
        if argc < 2:
            keys.append("")
    k = len(starts) - 1
    if names[k] == b"EXEC":
        while names[k] != b"MULTI":
            k -= 1
    return starts[k], len(data), names[k], keys[k]


def tearable(name, key, rec, rnd):
    """Whether a crash could have torn this last record: a write a client
    of round rnd sent (its SET, its MSET, a MULTI group). Not a rewrite's
    marker, nor a key's record a rewrite's walk wrote (a SET of a key of
    an earlier round, or of a key an MSET or EXEC wrote): both are
    synced before the new file takes the old one's place, so no crash
    tears them, and tearing the walk's record of one key of an MSET
    would leave that MSET in part."""
    if name in (b"MULTI", b"MSET"):
        return b"\r\n%s:%d:" % (b"m" if name == b"MSET" else b"x", rnd) in rec
    return name == b"SET" and key.startswith("s:%d:" % rnd)


def cut_file(d, rng, rnd):
    """Tears one file's last record if a crash could have (tearable()):
    cut at a random offset inside it (the writes it held may go, those
    before it must stay)."""
    fs = [os.path.join(d, x) for x in sorted(os.listdir(d)) if "-of-" in x]
    rng.shuffle(fs)
    for f in fs:
        data = open(f, "rb").read().rstrip(b"#")  # always pads the end with '#'
        if not data:
            continue
        start, end, name, key = last_record(data)
        if tearable(name, key, data[start:end], rnd) and end - start > 1:
            os.truncate(f, rng.randrange(start + 1, end))
            return


def rounds(mode, n, rng):
    d = tempfile.mkdtemp(prefix="pc_aofcrash_")
    ledger, sent, kills, cut_rounds = [], set(), [], set()
    try:
        for rnd in range(n):
            srv = start(d, mode)
            cut = rnd % CUT_EVERY == CUT_EVERY - 1  # tears a file after its kill
            if rnd:
                keys = verify(srv, ledger, sent, mode, kills, cut_rounds)
                print("  %s round %d: %d keys after the restart" % (mode, rnd, keys))
            clients = [Client(srv.port, i, rnd, random.Random(rng.random()))
                       for i in range(CLIENTS)]
            for c in clients:
                c.start()
            deadline = time.monotonic() + 60  # the round's time counts from the first reply
            while not any(c.acked for c in clients) and time.monotonic() < deadline:
                time.sleep(0.01)
            # short rounds; everysec's every few a longer one, so some of
            # its writes are older than the window when the kill comes
            long_round = mode == "everysec" and rnd % LONG_EVERY == LONG_EVERY - 1
            run_for = EVERYSEC_WINDOW + 0.5 if long_round else rng.uniform(0.2, 0.6)
            rewrite_at = rng.uniform(0, run_for)
            time.sleep(rewrite_at)
            Conn(srv.port).send(enc("BGREWRITEAOF"))  # its reply is not the point
            time.sleep(run_for - rewrite_at)
            kills.append(time.monotonic())
            srv.p.kill()
            srv.p.wait()
            for c in clients:
                c.join(30)
                ledger += c.acked
                sent |= c.sent
            check(any(c.acked for c in clients), "writes were acknowledged")
            if cut:
                cut_file(d, rng, rnd)
                cut_rounds.add(rnd)
        srv = start(d, mode)
        verify(srv, ledger, sent, mode, kills, cut_rounds)
        srv.stop()
    except AssertionError:
        if os.environ.get("PC_KEEP"):
            print("files kept in %s" % d)
            d = None
        raise
    finally:
        if d:
            shutil.rmtree(d, ignore_errors=True)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    st.PERCORE = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    rng = random.Random(SEED)
    t0 = time.monotonic()
    try:
        for mode in os.environ.get("PC_AOF_MODES", "always everysec").split():
            rounds(mode, n, rng)
    except AssertionError as e:
        print("FAIL: %s" % e)
        return 1
    print("ok (%.1fs)" % (time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
