#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Instructions per EXEC of `percore kv`, counted by callgrind: MULTI INCR a
INCR b EXEC from kv_txn_load's 50 connections, with the two keys on
different shards (--keys own: a pair of its own per connection; shared:
one pair every connection uses) or with one shard (--shards 1). The count
covers every thread of the server between two dumps taken around the
load, so start-up and shutdown are not in it, over the transactions the
load completed. Unlike CPU time it does not move with a busy machine; the
shards run one at a time under valgrind, on epoll (valgrind cannot leave a
shard blocked in io_uring_enter), with the sleep idle policy.

usage: scripts/kv_txn_cost.py [--percore PATH] [--load PATH] [--shards N]
                              [--keys own|shared] [--seconds S] [--json]"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "kv"))
from oracle import RedisPeer, apart, free_port  # noqa: E402

CONNS = 50


def connect(port, proc):
    """A peer once the server (slow under valgrind) listens."""
    for _ in range(600):
        if proc.poll() is not None:
            raise RuntimeError("percore kv exited %d under valgrind" % proc.returncode)
        try:
            return RedisPeer(port)
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("percore kv did not start under valgrind")


def key_names(peer, shards, keys):
    """kv_txn_load's --key list: pairs on different shards (every pair
    of its own, or one pair shared), or plain names with one shard."""
    names = ["p%d" % i for i in range(2 * CONNS if keys == "own" else 2)]
    if shards == 1:
        return names
    place = apart(peer, names)
    return [place(n) for n in names]


def total_instructions(pattern):
    total = 0
    for path in glob.glob(pattern):
        with open(path) as f:
            for line in f:
                if line.startswith(("summary:", "totals:")):
                    total += int(line.split()[1])
                    break
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    ap.add_argument("--percore", default=os.path.join(ROOT, "build/release/tools/percore/percore"))
    ap.add_argument("--load", default=os.path.join(ROOT, "build/release/bench/kv/kv_txn_load"))
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--keys", choices=("own", "shared"), default="own")
    ap.add_argument("--seconds", type=float, default=6, help="load time (default 6)")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of text")
    a = ap.parse_args()
    a.percore, a.load = os.path.abspath(a.percore), os.path.abspath(a.load)  # the server runs elsewhere
    work = tempfile.mkdtemp(prefix="kv_txn_cost.")
    port = free_port()
    out = os.path.join(work, "cg.out")
    print("kv_txn_cost: percore kv --shards %d under callgrind, %s keys, %g s of load"
          % (a.shards, a.keys, a.seconds), file=sys.stderr)
    proc = subprocess.Popen(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
                             a.percore, "kv", "--port", str(port), "--shards", str(a.shards),
                             "--oversubscribe", "--policy", "off", "--backend", "epoll",
                             "--idle-policy", "sleep", "--save", ""],
                            cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        peer = connect(port, proc)
        keys = key_names(peer, a.shards, a.keys)
        peer.close()
        subprocess.run(["callgrind_control", "-d", str(proc.pid)], capture_output=True,
                       check=True)
        cmd = [a.load, "--port", str(port), "--seconds", str(a.seconds), "--conns", str(CONNS),
               "--per-tx", "2"]
        for k in keys:
            cmd += ["--key", k]
        said = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        subprocess.run(["callgrind_control", "-d", str(proc.pid)], capture_output=True,
                       check=True)
    finally:
        proc.terminate()
        proc.wait()
    txs = int(said.split("(")[1].split()[0])
    per_tx = total_instructions(out + ".2") / max(txs, 1)
    if a.json:
        print(json.dumps({"shards": a.shards, "keys": a.keys, "transactions": txs,
                          "instructions_per_tx": round(per_tx)}))
    else:
        print("shards %d, %s keys: %d transactions, %.0f instructions per EXEC"
              % (a.shards, a.keys, txs, per_tx))
    return 0


if __name__ == "__main__":
    sys.exit(main())
