# SPDX-License-Identifier: MIT
"""What the chat tests share: examples/chat_server started on a free
loopback port, FlatBuffers code generated for chat_client.py into a
temporary folder, clients whose every wait is bounded, the server's
statistics, and a clean stop (SIGTERM, exit status 0, nothing on stderr
from the sanitizers).

Run the tests through with_flatbuffers.sh, which picks an interpreter that
has python3-flatbuffers and skips (77) without it or flatc.
"""
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # keep the source tree clean
import chat_client  # noqa: E402

SRC = os.environ.get("PC_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
BUILD = os.environ.get("PC_BUILD_DIR") or os.path.join(SRC, "build", "release")
# Sanitizers slow the server down; every wait scales with this.
WAIT = 20.0 if os.environ.get("PC_SANITIZE") else 5.0
STATS = 0xFFFFFF01  # PC_MSG_STATS (percore/session.h)


def fail(why):
    print("FAIL:", why)
    sys.exit(1)


def skip(why):
    print("SKIP:", why)
    sys.exit(77)


class Chat:
    """A running chat server: its port and the message ids."""

    def __init__(self, port):
        self.port = port
        self.ids = chat_client.message_ids(SRC)

    def client(self):
        return chat_client.ChatClient.connect(self.port, self.ids, WAIT)

    def stats(self, client=None):
        """The server's statistics (a dict), asked over client or a
        connection of its own; "shard" is the shard that answered."""
        c = client or self.client()
        c.send_frame(STATS, b"")
        flags, msg_id, body = c.receive()
        if client is None:
            c.close()
        if (flags, msg_id) != (0, STATS):
            fail("statistics request answered with flags %d id %d" % (flags, msg_id))
        return json.loads(body)

    def stats_when(self, ok):
        """The statistics once ok(stats) holds, or as they are at the
        deadline (sessions are counted closed when the client has closed
        its side too)."""
        end = time.monotonic() + WAIT
        while True:
            st = self.stats()
            if ok(st) or time.monotonic() > end:
                return st
            time.sleep(0.01)


@contextlib.contextmanager
def chat_server(shards=2):
    """examples/chat_server with this many shards on 127.0.0.1, port 0."""
    binary = os.path.join(BUILD, "examples", "chat_server")
    if not os.access(binary, os.X_OK):
        skip("%s is not built" % binary)
    with tempfile.TemporaryDirectory(prefix="pc-chat-") as gen:
        chat_client.generate_code(SRC, gen)
        srv = subprocess.Popen([binary, "0", str(shards)], stderr=subprocess.PIPE, text=True)
        try:
            line = srv.stderr.readline()
            m = re.search(r"127\.0\.0\.1:(\d+) with (\d+) shards", line)
            if not m or int(m.group(2)) != shards:
                fail("no listening line with %d shards: %r" % (shards, line))
            yield Chat(int(m.group(1)))
        finally:
            srv.terminate()
            try:
                _, err = srv.communicate(timeout=WAIT)
            except subprocess.TimeoutExpired:
                srv.kill()
                fail("the server did not stop on SIGTERM")
        if srv.returncode != 0 or err.strip():
            fail("the server exited with %d: %s" % (srv.returncode, err.strip()))


def main(run, shards=2):
    """A test's main: run(chat) against a server of this many shards."""
    with chat_server(shards) as chat:
        run(chat)
    print("ok")
