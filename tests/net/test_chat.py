#!/usr/bin/env python3
"""The chat example across shards: every member of a room, whichever shard
its connection landed on, gets every message of that room exactly once and
in the same order (the room's home shard numbers them); other rooms' members
get none; LEAVE stops delivery; a bad request gets an error reply."""
import os
import re
import select
import socket
import struct
import subprocess
import sys
import time

JOIN, SAY, LEAVE, MESSAGE = 1, 2, 3, 4
ERROR = 0x02
WAIT = 20.0 if os.environ.get("PC_SANITIZE") else 5.0


def frame(msg_id, body=b"", flags=0):
    return struct.pack(">BBIIH", 1, flags, msg_id, len(body), 0) + body


class Client:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
        self.buf = b""

    def send(self, msg_id, body=b"", flags=0):
        self.s.sendall(frame(msg_id, body, flags))

    def recv(self):
        """One frame (flags, id, body), or None at the deadline."""
        end = time.monotonic() + WAIT
        while True:
            if len(self.buf) >= 12:
                _, flags, msg_id, n, _ = struct.unpack(">BBIIH", self.buf[:12])
                if len(self.buf) >= 12 + n:
                    body = self.buf[12:12 + n]
                    self.buf = self.buf[12 + n:]
                    return flags, msg_id, body
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.s], [], [], left)[0]:
                return None
            chunk = self.s.recv(65536)
            if not chunk:
                return None
            self.buf += chunk

    def quiet(self, seconds=0.3):
        """True when nothing arrives for a while."""
        return not select.select([self.s], [], [], seconds)[0] and not self.buf


def fail(why):
    print("FAIL:", why)
    sys.exit(1)


def main():
    binary = os.path.join(os.environ.get("PC_BUILD_DIR", "build/release"), "examples", "chat_server")
    if not os.access(binary, os.X_OK):
        print("skip: %s is not built" % binary)
        sys.exit(77)
    srv = subprocess.Popen([binary, "0", "2"], stderr=subprocess.PIPE, text=True)
    try:
        line = srv.stderr.readline()
        m = re.search(r"127\.0\.0\.1:(\d+)", line)
        if not m:
            fail("no listening line: %r" % line)
        run(int(m.group(1)))
    finally:
        srv.terminate()
        try:
            rc = srv.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            srv.kill()
            fail("the server did not stop on SIGTERM")
    if rc != 0:
        fail("the server exited with %d" % rc)
    print("ok")


def joined(c, room):
    c.send(JOIN, room)
    r = c.recv()
    if r != (0, JOIN, room):
        fail("join %r answered %r" % (room, r))


def run(port):
    alpha = [Client(port) for _ in range(16)]
    beta = [Client(port) for _ in range(3)]
    for c in alpha:
        joined(c, b"alpha")
    for c in beta:
        joined(c, b"beta")
    # Every alpha member speaks; everyone in alpha hears all, in one order.
    rounds = 5
    for r in range(rounds):
        for i, c in enumerate(alpha):
            c.send(SAY, b"hello %d from %d" % (r, i))
    total = rounds * len(alpha)
    seen = None
    senders = set()
    for c in alpha:
        got = []
        for _ in range(total):
            f = c.recv()
            if f is None or f[1] != MESSAGE:
                fail("alpha member got %r after %d messages" % (f, len(got)))
            got.append(f[2])
        nums = [int(re.match(rb"alpha #(\d+) from ([0-9a-f]+): ", b).group(1)) for b in got]
        if nums != list(range(1, total + 1)):
            fail("sequence numbers out of order: %r" % nums[:20])
        if seen is None:
            seen = got
        elif got != seen:
            fail("two members saw different orders")
        senders |= {int(re.match(rb"alpha #\d+ from ([0-9a-f]+)", b).group(1), 16) >> 48 for b in got}
        if not c.quiet(0.05):
            fail("an alpha member got more than was said")
    if senders != {0, 1}:
        fail("members were not spread over both shards: %r" % senders)
    for b in beta:
        if not b.quiet():
            fail("a beta member heard alpha")
    # Leave: no more delivery to that member; the others still hear.
    gone = alpha.pop()
    gone.send(LEAVE)
    if gone.recv() != (0, LEAVE, b""):
        fail("leave not acknowledged")
    alpha[0].send(SAY, b"after")
    for c in alpha:
        f = c.recv()
        if f is None or not f[2].endswith(b": after"):
            fail("a remaining member missed a message: %r" % (f,))
    if not gone.quiet():
        fail("a member that left still hears the room")
    # A request the server does not know, and SAY outside a room.
    beta[0].send(99, b"?")
    f = beta[0].recv()
    if f is None or f[0] != ERROR or f[1] != 99:
        fail("unknown request answered %r" % (f,))
    gone.send(SAY, b"nobody hears")
    f = gone.recv()
    if f is None or f[0] != ERROR:
        fail("SAY outside a room answered %r" % (f,))


if __name__ == "__main__":
    main()
