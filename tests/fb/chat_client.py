# SPDX-License-Identifier: MIT
"""A small chat client for percore's chat protocol, in Python.

Frames are percore's wire format (docs/ARCHITECTURE.md, "Wire format"): a
12-byte big-endian header (version 1, flags, message id, body length,
reserved 0) and a FlatBuffers body (schemas/chat.fbs). Bodies are built and
read with python3-flatbuffers and the code `flatc --python` generates, which
generate_code() writes into a folder the caller owns (generated code is
never kept in the repository).

Used by test_fb_interop.py (over a socket pair, against percore's C
reader and builder), and over TCP against examples/chat_server by
test_chat_client.py and tests/net/test_chat.py.
"""
import importlib
import os
import re
import select
import socket
import struct
import subprocess
import sys

import flatbuffers

VERSION = 1
HEADER = struct.Struct(">BBIIH")  # version, flags, message id, body length, reserved
FLAG_HEARTBEAT = 1
FLAG_ERROR = 2
MAX_BODY = 16 << 20


def message_ids(src):
    """{"JOIN": 16, ..., "ERROR": 3} from include/percore/fb_chat.h and
    fb_error.h, so the client and the server cannot disagree."""
    ids = {}
    for header in ("fb_chat.h", "fb_error.h"):
        with open(os.path.join(src, "include/percore", header)) as f:
            ids.update((m.group(1), int(m.group(2))) for m in
                       re.finditer(r"#define PC_MSG_(?:CHAT_)?(\w+)\s+(\d+)u", f.read()))
    return ids


def generate_code(src, folder, schemas=("schemas/chat.fbs", "schemas/error.fbs")):
    """Generate the Python code of schemas (paths below src) into folder
    and make it importable."""
    subprocess.run(["flatc", "--python", "-o", folder]
                   + [os.path.join(src, s) for s in schemas], check=True)
    if folder not in sys.path:
        sys.path.insert(0, folder)


def _table(name, space="chat"):
    return importlib.import_module("percore.%s.%s" % (space, name))


def encode_frame(msg_id, body, flags=0):
    if len(body) > MAX_BODY:
        raise ValueError("body of %d bytes is over the 16 MiB cap" % len(body))
    return HEADER.pack(VERSION, flags, msg_id, len(body), 0) + body


def decode_header(head):
    """(flags, message id, body length) of a 12-byte header; ValueError for
    one percore would call malformed."""
    version, flags, msg_id, length, reserved = HEADER.unpack(head)
    if version != VERSION or reserved != 0 or flags & ~3 or length > MAX_BODY:
        raise ValueError("malformed frame header %r" % head)
    return flags, msg_id, length


def _strings(name, fields):
    """A finished buffer of table name holding string fields in order."""
    mod = _table(name)
    b = flatbuffers.Builder(64)
    refs = [b.CreateString(v) for _, v in fields]
    mod.Start(b)
    for (field, _), ref in zip(fields, refs):
        getattr(mod, "Add" + field)(b, ref)
    b.Finish(mod.End(b))
    return bytes(b.Output())


def join_body(room, user):
    return _strings("Join", [("Room", room), ("User", user)])


def say_body(room, text):
    return _strings("Say", [("Room", room), ("Text", text)])


def leave_body(room):
    return _strings("Leave", [("Room", room)])


def _text(v):
    return None if v is None else v.decode("utf-8")


def read_message(body):
    """{"room", "user", "text", "seq"} of a Message body."""
    m = _table("Message").Message.GetRootAs(body, 0)
    return {"room": _text(m.Room()), "user": _text(m.User()),
            "text": _text(m.Text()), "seq": m.Seq()}


def read_leave(body):
    """{"room"} of a Leave body (the server's answer to one)."""
    return {"room": _text(_table("Leave").Leave.GetRootAs(body, 0).Room())}


def read_error(body):
    """{"code", "message"} of an Error body (schemas/error.fbs)."""
    e = _table("Error", "error").Error.GetRootAs(body, 0)
    return {"code": e.Code(), "message": _text(e.Message())}


def read_history(body):
    """{"room", "messages": [message, ...]} of a History body; "messages" is left out when the body has no vector."""
    h = _table("History").History.GetRootAs(body, 0)
    out = {"room": _text(h.Room())}
    # An absent vector and an empty one differ on the wire; keep the
    # difference so a reader can tell "no history field" from "none yet".
    if not h.MessagesIsNone():
        msgs = [h.Messages(i) for i in range(h.MessagesLength())]
        out["messages"] = [{"room": _text(m.Room()), "user": _text(m.User()),
                            "text": _text(m.Text()), "seq": m.Seq()} for m in msgs]
    return out


class ChatClient:
    """One connection: send Join, Say and Leave; receive frames. Over a
    socket with a timeout every receive is bounded (socket.timeout)."""

    def __init__(self, sock, ids):
        self.sock = sock
        self.ids = ids

    @classmethod
    def connect(cls, port, ids, timeout):
        """A client of a server on 127.0.0.1:port."""
        return cls(socket.create_connection(("127.0.0.1", port), timeout=timeout), ids)

    def send_frame(self, msg_id, body, flags=0):
        self.sock.sendall(encode_frame(msg_id, body, flags))

    def join(self, room, user):
        self.send_frame(self.ids["JOIN"], join_body(room, user))

    def say(self, room, text):
        self.send_frame(self.ids["SAY"], say_body(room, text))

    def leave(self, room):
        self.send_frame(self.ids["LEAVE"], leave_body(room))

    def close(self):
        self.sock.close()

    def _read_exactly(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed after %d of %d bytes" % (len(data), n))
            data += chunk
        return data

    def receive(self):
        """(flags, message id, body) of the next frame."""
        flags, msg_id, length = decode_header(self._read_exactly(HEADER.size))
        return flags, msg_id, self._read_exactly(length)

    def receive_message(self):
        """The next Message, skipping heartbeats; ValueError for an error
        reply or another message."""
        while True:
            flags, msg_id, body = self.receive()
            if flags & FLAG_HEARTBEAT:
                continue
            if flags & FLAG_ERROR and msg_id == self.ids["ERROR"]:
                raise ValueError("expected a Message, got the error %r" % read_error(body))
            if flags & FLAG_ERROR or msg_id != self.ids["MESSAGE"]:
                raise ValueError("expected a Message, got id %d flags %d" % (msg_id, flags))
            return read_message(body)

    def quiet(self, seconds):
        """True when nothing arrives for that long (nothing is consumed)."""
        return not select.select([self.sock], [], [], seconds)[0]
