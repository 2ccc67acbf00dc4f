#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""kill -9 of `percore kv --appendonly yes --shards 2` under pipelined
load, then a restart, several rounds on the same files. Four clients
pipeline SETs of keys of their own and MSETs of four keys (spanning both
shards), keeping a ledger of every write acknowledged. After each restart:
with appendfsync always every acknowledged write is there; with everysec
every one acknowledged more than 2 s before the kill; in both, no MSET is
there in part (all four keys or none), and every write there was sent.
Each round also asks for a BGREWRITEAOF at a random moment of its load,
so kills fall before, during and after rewrites (their switches
included). A round of each mode also cuts a file at a random offset before the restart
(a torn last record): the same holds for what precedes the cut.
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
DEPTH = 16
EVERYSEC_WINDOW = 2.0


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
                    if self.rng.random() < 0.25:
                        batch.append(("m", name, enc("MSET", *[x for i in range(4) for x in
                                                               ("m:%s:%d" % (name, i), name)])))
                    else:
                        batch.append(("s", name, enc("SET", "s:" + name, name)))
                for _, name, _ in batch:
                    self.sent.add(name)
                self.c.send(b"".join(req for _, _, req in batch))
                for kind, name, _ in batch:
                    r = self.c.reply()
                    if r == b"+OK":
                        self.acked.append((time.monotonic(), kind, name))
        except (OSError, EOFError, AssertionError):
            pass


def start(d, mode):
    return st.Server("--appendonly", "yes", "--appendfsync", mode, "--dir", d)


def verify(srv, ledger, sent, mode, kills, cut_rounds):
    """Every acknowledged write there (always; everysec: but the last
    2 s), no MSET in part, nothing there that was not sent."""
    c = Conn(srv.port)
    present = {}
    for k in c.call("KEYS", "*"):
        present[k.decode()] = True
    mset = {}
    for k in present:
        if k.startswith("m:"):
            name = k[2:k.rindex(":")]
            mset[name] = mset.get(name, 0) + 1
            check(name in sent, "a key never sent: %s" % k)
        else:
            check(k[2:] in sent, "a key never sent: %s" % k)
    for name, n in mset.items():
        check(n == 4, "MSET %s recovered in part (%d of 4 keys)" % (name, n))
    missing, lost = 0, None
    for t, kind, name in ledger:
        rnd = int(name.split(":")[0])
        if rnd in cut_rounds:
            continue  # a torn file's tail held writes of that round
        if mode == "everysec" and t > kills[rnd] - EVERYSEC_WINDOW:
            continue  # may be lost by the kill that ended its round
        there = (mset.get(name) == 4) if kind == "m" else ("s:" + name) in present
        if not there:
            missing += 1
            lost = lost or "%s %s %.2fs before its kill" % (kind, name, kills[rnd] - t)
    check(not missing, "%s: %d acknowledged writes missing (%s)" % (mode, missing, lost))
    c.close()
    return len(present)


def cut_file(d, rng):
    """Cuts one file at a random offset of its last 4 KiB (a torn tail);
    the writes after the cut may go, those before it must stay."""
    f = os.path.join(d, rng.choice(sorted(x for x in os.listdir(d) if "-of-" in x)))
    size = os.path.getsize(f)
    if size > 1:
        os.truncate(f, size - rng.randrange(1, min(size, 4096)))


def rounds(mode, n, rng):
    d = tempfile.mkdtemp(prefix="pc_aofcrash_")
    ledger, sent, kills, cut_rounds = [], set(), [], set()
    try:
        for rnd in range(n):
            srv = start(d, mode)
            cut = rnd == n - 1  # the last round tears a file
            if rnd:
                keys = verify(srv, ledger, sent, mode, kills, cut_rounds)
                print("  %s round %d: %d keys after the restart" % (mode, rnd, keys))
            clients = [Client(srv.port, i, rnd, random.Random(rng.random()))
                       for i in range(CLIENTS)]
            for c in clients:
                c.start()
            run_for = rng.uniform(0.4, 1.5)
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
                cut_file(d, rng)
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
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 6
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
