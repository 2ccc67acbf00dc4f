#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""SAVE's dump against redis-server 7.0: kv_exec (one shard) is given
random keys of every type (strings empty, integer, binary, 1 MB; hashes,
sets of integers and not, lists, sorted sets, small and large), some with
an expiry, and SAVEs; redis-check-rdb must pass the dump, and a
redis-server started on it must hold the same keys, values and TTLs.
A SAVE that cannot write its file fails and leaves the
previous dump as it was.
Exit 0 when all match, 1 when any differs, 77 when redis-server or
redis-check-rdb is not installed.

usage: save_oracle.py KV_EXEC"""
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle import RedisPeer, enc  # noqa: E402

SEED = int(os.environ.get("PC_TEST_SEED", "0x5eed0032"), 0)
TTL_MS = 600000


def call(peer, *args):
    peer.send(enc(*args))
    _, (kind, x) = peer.reader.reply()
    if kind == b"*":
        return [plain(item) for item in x]
    return x


def plain(item):
    """An array element as its bare value (the reader nests kind and value)."""
    while isinstance(item, tuple):
        item = item[-1]
    return item


def rand_member(rng):
    pick = rng.randrange(4)
    if pick == 0:
        return str(rng.randrange(-2 ** 40, 2 ** 40)).encode()
    if pick == 1:
        return bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 20)))
    return b"m%d" % rng.randrange(10 ** 6) * rng.choice((1, 1, 10))


def make_keys(rng):
    """(command list, expected {key: (type, value)}, keys with TTL)."""
    cmds, want, ttl = [], {}, set()
    for i in range(300):
        key = b"k%d" % i if i % 5 else bytes(rng.getrandbits(8) for _ in range(8)) + b"%d" % i
        kind = rng.choice(("string", "hash", "set", "list", "zset"))
        n = rng.choice((1, 3, 20, 700))
        if kind == "string":
            v = rng.choice((b"", str(rng.randrange(-2 ** 63, 2 ** 63)).encode(),
                            bytes(rng.getrandbits(8) for _ in range(50)),
                            b"x" * (1 << 20) if i % 97 == 0 else b"ab" * 100))
            cmds.append(("SET", key, v))
            want[key] = ("string", v)
        elif kind == "hash":
            h = {rand_member(rng): rand_member(rng) for _ in range(n)}
            cmds.append(("HSET", key) + tuple(x for kv in h.items() for x in kv))
            want[key] = ("hash", h)
        elif kind == "set":
            ints = rng.random() < 0.5
            s = {str(rng.randrange(-1000, 10 ** 6)).encode() if ints else rand_member(rng)
                 for _ in range(n)}
            cmds.append(("SADD", key) + tuple(s))
            want[key] = ("set", s)
        elif kind == "list":
            lst = [rand_member(rng) for _ in range(n)]
            cmds.append(("RPUSH", key) + tuple(lst))
            want[key] = ("list", lst)
        else:
            z = {rand_member(rng): rng.choice((1, -2.5, 3.25, rng.randrange(10 ** 6)))
                 for _ in range(n)}
            args = []
            for m, sc in z.items():
                args += [repr(float(sc)).encode(), m]
            cmds.append(("ZADD", key) + tuple(args))
            want[key] = ("zset", z)
        if rng.random() < 0.3:
            cmds.append(("PEXPIRE", key, str(TTL_MS)))
            ttl.add(key)
    return cmds, want, ttl


def run_exec(kv_exec, cwd, cmds):
    data = b"".join(enc(*c) for c in cmds)
    out = subprocess.run([os.path.abspath(kv_exec)], input=data, cwd=cwd, stdout=subprocess.PIPE,
                         check=True).stdout
    return out


def start_redis(server, d):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    proc = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", d, "--dbfilename", "dump.rdb"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            return proc, RedisPeer(port)
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("redis-server did not answer on port %d" % port)


def loaded(peer):
    """Waits until redis-server has loaded its dump (PING no -LOADING)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        peer.send(enc("PING"))
        _, (kind, _) = peer.reader.reply()
        if kind == b"+":
            return
        time.sleep(0.05)
    raise RuntimeError("redis-server did not load the dump")


def compare(peer, want, ttl):
    bad = []
    keys = set(call(peer, "KEYS", "*"))
    if keys != set(want):
        bad.append("keys differ: %d in redis, %d written" % (len(keys), len(want)))
    for key, (kind, v) in want.items():
        t = call(peer, "TYPE", key)
        if t != kind.encode():
            bad.append("%r: type %r, want %s" % (key, t, kind))
            continue
        if kind == "string":
            got = call(peer, "GET", key)
        elif kind == "hash":
            flat = call(peer, "HGETALL", key)
            got = dict(zip(flat[::2], flat[1::2]))
        elif kind == "set":
            got = set(call(peer, "SMEMBERS", key))
        elif kind == "list":
            got = call(peer, "LRANGE", key, "0", "-1")
        else:
            flat = call(peer, "ZRANGE", key, "0", "-1", "WITHSCORES")
            got = {m: float(s) for m, s in zip(flat[::2], flat[1::2])}
            v = {m: float(s) for m, s in v.items()}
        if got != v:
            bad.append("%r: value differs" % key)
        pttl = call(peer, "PTTL", key)
        if key in ttl and not 0 < pttl <= TTL_MS:
            bad.append("%r: PTTL %d, want within %d" % (key, pttl, TTL_MS))
        if key not in ttl and pttl != -1:
            bad.append("%r: PTTL %d, want none" % (key, pttl))
    return bad


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    server, check = shutil.which("redis-server"), shutil.which("redis-check-rdb")
    if not server or not check:
        print("skip: redis-server or redis-check-rdb not installed (redis-server, redis-tools)")
        return 77
    rng = random.Random(SEED)
    bad = []
    cmds, want, ttl = make_keys(rng)
    with tempfile.TemporaryDirectory() as d:
        out = run_exec(sys.argv[1], d, cmds + [("SAVE",)])
        if not out.endswith(b"+OK\r\n"):
            print("SAVE did not answer OK: %r" % out[-200:])
            return 1
        r = subprocess.run([check, os.path.join(d, "dump.rdb")], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        if r.returncode != 0:
            print("redis-check-rdb refused the dump:\n" + r.stdout.decode(errors="replace"))
            return 1
        before = open(os.path.join(d, "dump.rdb"), "rb").read()
        # a SAVE that cannot write leaves the dump as it was
        # (its name is taken by a directory: the rename fails)
        os.makedirs(os.path.join(d, "blocked", "inside"))
        out = run_exec(sys.argv[1], d, [("SET", "a", "b"),
                                        ("CONFIG", "SET", "dbfilename", "blocked"),
                                        ("SAVE",)])
        if not out.endswith(b"-ERR\r\n"):
            bad.append("a SAVE that cannot write answered %r" % out[-40:])
        if sorted(os.listdir(d)) != ["blocked", "dump.rdb"]:
            bad.append("a failed SAVE left %r" % sorted(os.listdir(d)))
        proc, peer = start_redis(server, d)
        try:
            loaded(peer)
            bad += compare(peer, want, ttl)
        finally:
            proc.kill()
            proc.wait()
        if open(os.path.join(d, "dump.rdb"), "rb").read() != before:
            bad.append("a failed SAVE changed the dump")
    for b in bad[:20]:
        print(b)
    print("%d keys compared, %d differences" % (len(want), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
