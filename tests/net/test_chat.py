#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The chat example across shards, with FlatBuffers bodies (the Python
client of tests/fb/chat_client.py): every member of a room, whichever shard
its connection landed on, gets every message of that room exactly once and
in the same order (the room's home shard numbers them 1, 2, ...); other
rooms' members get none; a member that leaves gets nothing more.

usage: tests/fb/with_flatbuffers.sh test_chat.py
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fb"))
import chat_harness  # noqa: E402
from chat_harness import fail  # noqa: E402

ROUNDS = 5


def joined(chat, room, user):
    c = chat.client()
    c.join(room, user)
    flags, msg_id, _ = c.receive()
    if (flags, msg_id) != (0, chat.ids["HISTORY"]):
        fail("join %s answered flags %d id %d" % (room, flags, msg_id))
    return c


def run(chat):
    alpha = [joined(chat, "alpha", "a%d" % i) for i in range(16)]
    beta = [joined(chat, "beta", "b%d" % i) for i in range(3)]
    shards = {chat.stats(c)["shard"] for c in alpha}
    if shards != {0, 1}:
        fail("alpha's members were not spread over both shards: %r" % shards)
    # Every alpha member speaks; everyone in alpha hears all, in one order.
    for r in range(ROUNDS):
        for i, c in enumerate(alpha):
            c.say("alpha", "hello %d from %d" % (r, i))
    total = ROUNDS * len(alpha)
    seen = None
    for c in alpha:
        got = [c.receive_message() for _ in range(total)]
        if [m["seq"] for m in got] != list(range(1, total + 1)):
            fail("sequence numbers out of order: %r" % [m["seq"] for m in got][:20])
        if seen is None:
            seen = got
        elif got != seen:
            fail("two members saw different orders")
        if not c.quiet(0.05):
            fail("an alpha member got more than was said")
    said = sorted((m["user"], m["text"]) for m in seen)
    want = sorted(("a%d" % i, "hello %d from %d" % (r, i)) for r in range(ROUNDS) for i in range(16))
    if said != want or any(m["room"] != "alpha" for m in seen):
        fail("the messages heard are not the ones said")
    for i in range(16):  # one speaker's messages keep the order it said them in
        mine = [m["text"] for m in seen if m["user"] == "a%d" % i]
        if mine != ["hello %d from %d" % (r, i) for r in range(ROUNDS)]:
            fail("a%d's messages out of order: %r" % (i, mine))
    for b in beta:
        if not b.quiet(0.3):
            fail("a beta member heard alpha")
    # Leave: no more delivery to that member; the others still hear.
    gone = alpha.pop()
    gone.leave("alpha")
    flags, msg_id, _ = gone.receive()
    if (flags, msg_id) != (0, chat.ids["LEAVE"]):
        fail("leave answered flags %d id %d" % (flags, msg_id))
    alpha[0].say("alpha", "after")
    for c in alpha:
        m = c.receive_message()
        if (m["text"], m["seq"]) != ("after", total + 1):
            fail("a remaining member missed a message: %r" % m)
    if not gone.quiet(0.3):
        fail("a member that left still hears the room")


if __name__ == "__main__":
    chat_harness.main(run, shards=2)
