#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Python chat client (python3-flatbuffers and flatc-generated code)
against examples/chat_server with 2 shards over loopback TCP:

  - two clients join a room and each gets a History (empty: a new room);
  - one says something; both get the Message with its room, user, text
    and sequence number 1; a third client joining then gets it in its
    History;
  - one leaves: it gets its Leave back and hears nothing more, while the
    others hear the next Message (seq 2);
  - refused requests (Say outside the room, a bad name, an unknown id)
    get an Error and the session goes on;
  - a valid frame with a garbage FlatBuffers body gets an Error (EPROTO)
    and is closed, counted as malformed, while the well-behaved clients
    keep being served (seq 3).

usage: with_flatbuffers.sh test_chat_client.py
"""
import errno
import os

import chat_harness
from chat_harness import fail
import chat_client

ROOM = "lobby-%d" % os.getpid()


def expect(client, what, ids, name):
    """The next frame is a plain (no flag) frame of message name; its body."""
    flags, msg_id, body = client.receive()
    if (flags, msg_id) != (0, ids[name]):
        detail = chat_client.read_error(body) if msg_id == ids["ERROR"] else body
        fail("%s: expected %s, got flags %d id %d: %r" % (what, name, flags, msg_id, detail))
    return body


def expect_error(client, what, ids, code):
    flags, msg_id, body = client.receive()
    err = chat_client.read_error(body) if msg_id == ids["ERROR"] else None
    if flags != chat_client.FLAG_ERROR or not err or err["code"] != code or not err["message"]:
        fail("%s: expected an Error %d, got flags %d id %d %r" % (what, code, flags, msg_id, err))
    return err


def message(client, what, **want):
    got = client.receive_message()
    if got != want:
        fail("%s: got %r, expected %r" % (what, got, want))


def run(chat):
    ids = chat.ids
    ann, bob = chat.client(), chat.client()
    for c, user in ((ann, "ann"), (bob, "bob")):
        c.join(ROOM, user)
        history = chat_client.read_history(expect(c, user + " joins", ids, "HISTORY"))
        if history != {"room": ROOM, "messages": []}:
            fail("History of a new room: %r" % history)

    ann.say(ROOM, "hello, bob")
    first = dict(room=ROOM, user="ann", text="hello, bob", seq=1)
    message(bob, "bob hears ann", **first)
    message(ann, "ann hears herself", **first)

    cat = chat.client()
    cat.join(ROOM, "cat")
    history = chat_client.read_history(expect(cat, "cat joins", ids, "HISTORY"))
    if history != {"room": ROOM, "messages": [first]}:
        fail("History after one message: %r" % history)

    bob.leave(ROOM)
    if chat_client.read_leave(expect(bob, "bob leaves", ids, "LEAVE")) != {"room": ROOM}:
        fail("the Leave answered is not bob's")
    cat.say(ROOM, "bye, bob")
    second = dict(room=ROOM, user="cat", text="bye, bob", seq=2)
    for c, who in ((ann, "ann"), (cat, "cat")):
        message(c, who + " hears cat", **second)
    if not bob.quiet(0.3):
        fail("bob still hears the room after leaving")

    # Refused requests: an Error each, and the session goes on.
    bob.say(ROOM, "let me back")
    expect_error(bob, "Say outside the room", ids, errno.ENOTCONN)
    bob.join("x" * 32, "bob")
    expect_error(bob, "a 32-byte room name", ids, errno.EINVAL)
    bob.send_frame(999, b"?")
    expect_error(bob, "an unknown message id", ids, errno.ENOSYS)

    # A valid frame whose body is not a Join: an Error, then closed.
    before = chat.stats()
    bad = chat.client()
    bad.send_frame(ids["JOIN"], b"\xff" * 16)
    err = expect_error(bad, "a garbage Join body", ids, errno.EPROTO)
    if "Join" not in err["message"]:
        fail("the Error does not name the Join: %r" % err)
    try:
        extra = bad.receive()
        fail("the session that sent garbage is still open: %r" % (extra,))
    except ConnectionError:
        pass
    bad.close()

    # Everyone well-behaved is still served, bob included.
    bob.join(ROOM, "bob")
    history = chat_client.read_history(expect(bob, "bob joins again", ids, "HISTORY"))
    if history != {"room": ROOM, "messages": [first, second]}:
        fail("History after two messages, oldest first: %r" % history)
    ann.say(ROOM, "still here")
    for c, who in ((ann, "ann"), (bob, "bob"), (cat, "cat")):
        message(c, who + " after the garbage", room=ROOM, user="ann", text="still here", seq=3)
    after = chat.stats_when(lambda st: st["closed_malformed"] > before["closed_malformed"])
    for key in ("malformed", "error_replies", "closed_malformed"):
        if after[key] - before[key] != 1:
            fail("%s went from %d to %d, expected one more" % (key, before[key], after[key]))
    for c in (ann, bob, cat):
        c.close()


if __name__ == "__main__":
    chat_harness.main(run, shards=2)
