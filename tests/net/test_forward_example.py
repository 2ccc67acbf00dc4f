#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The forwarding example (examples/forward_server.c) under pipelined load:
8 connections, each with 64 requests in flight, for ROUNDS rounds. Every
request is forwarded to the shard that owns its key; every one must be
answered, in request order, with the key's counter after its addition,
and none refused ("busy" or any error frame).

Each connection adds to keys of its own (spread over every shard), so the
counter it must see after each request is known: the running sum of its
own deltas.

usage: PC_BUILD_DIR=build/asan test_forward_example.py
"""
import os
import re
import select
import socket
import struct
import subprocess
import sys
import time

CONNS = 8
DEPTH = 64
ROUNDS = 40
KEYS_PER_CONN = 24
SHARDS = 2
WAIT_S = 60  # a loaded machine: the bound on the whole run, not a speed
HEADER = struct.Struct(">BBIIH")


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def start_server(path):
    proc = subprocess.Popen([path, "0", str(SHARDS)], stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
    if not m:
        proc.kill()
        fail("no port in the server's first line: %r" % line)
    return proc, int(m.group(1))


def recv_exact(sock, n, deadline):
    buf = bytearray()
    while len(buf) < n:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([sock], [], [], left)[0]:
            fail("no reply within %d s" % WAIT_S)
        chunk = sock.recv(n - len(buf))
        if not chunk:
            fail("the server closed a connection")
        buf += chunk
    return bytes(buf)


def request(msg_id, key, delta):
    body = struct.pack("<QQ", key, delta)
    return HEADER.pack(1, 0, msg_id, len(body), 0) + body


def run(port):
    conns = [socket.create_connection(("127.0.0.1", port)) for _ in range(CONNS)]
    for s in conns:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    # Connection c owns keys c, c + CONNS, ...: spread over every shard.
    keys = [[c + CONNS * i for i in range(KEYS_PER_CONN)] for c in range(CONNS)]
    sums = [dict.fromkeys(k, 0) for k in keys]
    deadline = time.monotonic() + WAIT_S
    msg_id = 1
    answered = 0
    for r in range(ROUNDS):
        want = []
        for c, s in enumerate(conns):
            batch = []
            for i in range(DEPTH):
                key = keys[c][(r * DEPTH + i) % KEYS_PER_CONN]
                delta = r * DEPTH + i + 1
                sums[c][key] += delta
                batch.append(request(msg_id, key, delta))
                want.append((c, msg_id, sums[c][key]))
                msg_id += 1
            s.sendall(b"".join(batch))  # 64 requests in flight
        for c, mid, value in want:
            version, flags, got_id, length, _ = HEADER.unpack(recv_exact(conns[c], HEADER.size,
                                                                         deadline))
            body = recv_exact(conns[c], length, deadline)
            if flags:
                fail("request %d refused (flags %d): %r" % (mid, flags, body))
            if got_id != mid:
                fail("reply %d where %d was due: out of order" % (got_id, mid))
            if length != 8 or struct.unpack("<Q", body)[0] != value:
                fail("request %d: counter %r, expected %d" % (mid, body, value))
            answered += 1
    for s in conns:
        s.close()
    return answered


def main():
    build = os.environ.get("PC_BUILD_DIR")
    path = os.path.join(build, "examples", "forward_server") if build else ""
    if not os.access(path, os.X_OK):
        print("SKIP: examples/forward_server is not built (PC_BUILD_DIR=%r)" % build)
        sys.exit(77)
    proc, port = start_server(path)
    try:
        answered = run(port)
    finally:
        proc.send_signal(2)
        try:
            proc.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            fail("the server did not stop")
    if proc.returncode != 0:
        fail("the server exited with %d" % proc.returncode)
    print("ok: %d requests answered in order over %d connections" % (answered, CONNS))


if __name__ == "__main__":
    main()
