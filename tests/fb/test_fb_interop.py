#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Holds percore's FlatBuffers code against the official tools.

For every message table (echo, heartbeat, error, chat) and the test schema
tests/fb/alltypes.fbs, with random values (seed printed; PC_FB_SEED repeats
a run; PC_FB_KEEP=DIR keeps the files) and edge cases:
  1. percore builds a buffer; `flatc --json` turns it into the same values;
  2. `flatc -b` builds a buffer from JSON; percore verifies and reads it;
  3. python3-flatbuffers, through code `flatc --python` generates into a
     temporary folder, builds a buffer; percore reads it;
  4. percore builds a buffer; the generated Python code reads it;
and buffers that are cut short, of the wrong table or with the wrong file
identifier are rejected by percore's verifier, never read. Last, the
Python chat client (chat_client.py) sends frames whose bodies percore reads
and reads the frames percore builds, over a socket pair.

A handful of processes do all of it, so a busy machine does not slow it
down much: this one, one `fb_interop batch` for every percore encode and
decode (requests sent in batches), and one flatc run per table and
direction (flatc takes one root type per run).

usage: with_flatbuffers.sh test_fb_interop.py FB_INTEROP_BINARY
"""
import importlib
import json
import os
import random
import socket
import struct
import subprocess
import sys
import tempfile
import threading

import flatbuffers

sys.dont_write_bytecode = True  # keep the source tree clean
import chat_client  # noqa: E402

HELPER = sys.argv[1]
SRC = os.environ.get("PC_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
SCHEMAS = {
    "echo": "schemas/echo.fbs", "heartbeat": "schemas/heartbeat.fbs",
    "error": "schemas/error.fbs", "chat": "schemas/chat.fbs",
    "test": "tests/fb/alltypes.fbs",
}
FILE_IDS = {"test": b"PCAT"}
COLORS = {"Red": 0, "Green": 1, "Blue": 5}
INT_RANGE = {
    "u8": (0, 2**8 - 1), "i8": (-2**7, 2**7 - 1), "u16": (0, 2**16 - 1),
    "i16": (-2**15, 2**15 - 1), "u32": (0, 2**32 - 1), "i32": (-2**31, 2**31 - 1),
    "u64": (0, 2**64 - 1), "i64": (-2**63, 2**63 - 1),
}
R = True  # required
# table: [(field, kind, default or None, required)] in schema order.
SPEC = {
    "echo.Echo": [("id", "u64", 0, 0), ("payload", "bytes", None, 0)],
    "heartbeat.Heartbeat": [("seq", "u32", 0, 0), ("time_ns", "u64", 0, 0)],
    "error.Error": [("code", "i32", 0, 0), ("message", "str", None, 0)],
    "chat.Join": [("room", "str", None, R), ("user", "str", None, R)],
    "chat.Say": [("room", "str", None, R), ("text", "str", None, R)],
    "chat.Leave": [("room", "str", None, R)],
    "chat.Message": [("room", "str", None, R), ("user", "str", None, R),
                     ("text", "str", None, R), ("seq", "u64", 0, 0)],
    "chat.History": [("room", "str", None, R),
                     ("messages", "tables:chat.Message", None, 0)],
    "test.Child": [("name", "str", None, 0), ("value", "i32", -1, 0)],
    "test.AllTypes": [
        ("flag", "bool", True, 0), ("i8", "i8", -5, 0), ("u8", "u8", 0, 0),
        ("i16", "i16", 300, 0), ("u16", "u16", 0, 0), ("i32", "i32", 0, 0),
        ("u32", "u32", 0, 0), ("i64", "i64", -7, 0), ("u64", "u64", 0, 0),
        ("f32", "float", 1.5, 0), ("f64", "float", 0.0, 0),
        ("color", "color", 1, 0), ("name", "str", None, R),
        ("pos", "vec3", None, 0), ("pair", "pair", None, 0),
        ("bytes", "bytes", None, 0), ("ints", "ints", None, 0),
        ("longs", "longs", None, 0), ("names", "strs", None, 0),
        ("pairs", "pairs", None, 0), ("child", "table:test.Child", None, 0),
        ("children", "tables:test.Child", None, 0),
    ],
}
MESSAGE_TABLES = [t for t in SPEC if t != "test.Child"]
PER_TABLE = int(os.environ.get("PC_FB_CASES", "12"))
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


# ---- values: random generation and one normal form --------------------------

def rand_str(rng):
    alphabet = ("abcdefghijklmnopqrstuvwxyz ABCXYZ0123456789.,!?-_'\"\\/\n\t"
                "\u00e9\u00fc\u00df\u65e5\u672c\U0001f600\u0394")
    n = rng.choice([0, 1, 3, 8, 17, 40, rng.randint(0, 300)])
    return "".join(rng.choice(alphabet) for _ in range(n))


def rand_int(rng, kind):
    lo, hi = INT_RANGE[kind]
    return rng.choice([lo, hi, 0, 1, rng.randint(lo, hi), rng.randint(lo, hi)])


def rand_value(rng, kind):
    if kind in INT_RANGE:
        return rand_int(rng, kind)
    simple = {
        "bool": lambda: rng.random() < 0.5,
        "float": lambda: rng.randint(-80000, 80000) / 8,  # exact in float and text
        "color": lambda: rng.choice(list(COLORS.values())),
        "str": lambda: rand_str(rng),
        "bytes": lambda: [rng.randint(0, 255) for _ in range(rng.randint(0, 64))],
        "ints": lambda: [rand_int(rng, "i32") for _ in range(rng.randint(0, 9))],
        "longs": lambda: [rand_int(rng, "i64") for _ in range(rng.randint(0, 9))],
        "strs": lambda: [rand_str(rng) for _ in range(rng.randint(0, 5))],
        "vec3": lambda: {c: rng.randint(-800, 800) / 4 for c in "xyz"},
        "pair": lambda: {"a": rand_int(rng, "u8"), "b": rand_int(rng, "i64")},
        "pairs": lambda: [rand_value(rng, "pair") for _ in range(rng.randint(0, 5))],
    }
    if kind in simple:
        return simple[kind]()
    sub = kind.split(":", 1)[1]
    if kind.startswith("tables:"):
        return [rand_table(rng, sub) for _ in range(rng.randint(0, 4))]
    return rand_table(rng, sub)


def rand_table(rng, table):
    """Random values; optional fields left out, scalars sometimes at default."""
    out = {}
    for name, kind, default, required in SPEC[table]:
        if not required and rng.random() < 0.2:
            continue
        out[name] = default if default is not None and rng.random() < 0.2 \
            else rand_value(rng, kind)
    return out


def norm(table, d):
    """One form for values from any source: defaults filled in for absent
    scalars, integers as int, enum names as numbers."""
    out = {}
    for name, kind, default, _ in SPEC[table]:
        if d.get(name) is None:
            if default is not None:
                out[name] = norm_value(kind, default)
            continue
        out[name] = norm_value(kind, d[name])
    return out


def norm_value(kind, v):
    if kind in INT_RANGE:
        return int(v)
    if kind == "bool":
        return bool(v)
    if kind == "float":
        return float(v)
    if kind == "color":
        return COLORS[v] if isinstance(v, str) else int(v)
    if kind in ("bytes", "ints", "longs"):
        return [int(x) for x in v]
    if kind == "vec3":
        return {c: float(v[c]) for c in "xyz"}
    if kind == "pair":
        return {"a": int(v.get("a", 0)), "b": int(v.get("b", 0))}
    if kind == "pairs":
        return [norm_value("pair", p) for p in v]
    if kind.startswith("tables:"):
        return [norm(kind[7:], e) for e in v]
    if kind.startswith("table:"):
        return norm(kind[6:], v)
    return v  # str, strs


def to_helper_json(table, d):
    """The helper's JSON: 64-bit integers as decimal strings."""
    out = {}
    for name, kind, _, _ in SPEC[table]:
        if name not in d:
            continue
        v = d[name]
        if kind in ("u64", "i64"):
            v = str(v)
        elif kind == "longs":
            v = [str(x) for x in v]
        elif kind == "pair":
            v = {"a": v["a"], "b": str(v["b"])}
        elif kind == "pairs":
            v = [{"a": p["a"], "b": str(p["b"])} for p in v]
        elif kind.startswith("tables:"):
            v = [to_helper_json(kind[7:], e) for e in v]
        elif kind.startswith("table:"):
            v = to_helper_json(kind[6:], v)
        out[name] = v
    return out


def to_flatc_json(table, d):
    """flatc's JSON: enums by name."""
    out = dict(d)
    for name, kind, _, _ in SPEC[table]:
        if name not in d:
            continue
        if kind == "color":
            out[name] = {v: k for k, v in COLORS.items()}[d[name]]
        elif kind.startswith("tables:"):
            out[name] = [to_flatc_json(kind[7:], e) for e in d[name]]
        elif kind.startswith("table:"):
            out[name] = to_flatc_json(kind[6:], d[name])
    return out


# ---- the tools ---------------------------------------------------------------

def schema_of(table):
    return os.path.join(SRC, SCHEMAS[table.split(".")[0]])


def root_type(table):
    return "percore.%s" % table


class Helper:
    """One `fb_interop batch` process for every case: a request per line,
    an answer per line, each file read and checked as the single commands
    do. A process per case made this test slow; so did a round trip per
    case on a busy machine, so requests go in batches."""

    def __init__(self):
        self.proc = subprocess.Popen([HELPER, "batch"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, encoding="utf-8")

    def ask(self, requests):
        """[(exit status, decoded values or None, reason)] for requests. A
        thread writes them while this one reads the answers, so neither
        pipe can fill up and stop both sides."""
        def send():
            try:
                for r in requests:
                    self.proc.stdin.write(json.dumps(r) + "\n")
                self.proc.stdin.flush()
            except BrokenPipeError:
                pass  # it died: the reading side says so
        writer = threading.Thread(target=send)
        writer.start()
        answers = []
        for r in requests:
            line = self.proc.stdout.readline()
            if not line:  # it died (a sanitizer report is on stderr)
                writer.join()
                raise RuntimeError("fb_interop batch stopped, exit %s, at %r"
                                   % (self.proc.wait(), r))
            a = json.loads(line)
            answers.append((a["status"], a["value"], a["error"]))
        writer.join()
        return answers

    def close(self):
        """Its exit status: LeakSanitizer reports at exit."""
        self.proc.stdin.close()
        rc = self.proc.wait()
        self.proc.stdout.close()
        return rc


helper = None  # the Helper of this run, set by main()


def helper_encode_all(table, cases):
    """Encode each (values, path) of cases with percore's builder."""
    requests = []
    for values, path in cases:
        with open(path + ".in.json", "w") as f:
            json.dump(to_helper_json(table, values), f)
        requests.append({"op": "encode", "table": table, "in": path + ".in.json", "out": path})
    for rc, _, why in helper.ask(requests):
        check(rc == 0, "%s: percore could not encode: %s" % (table, why))


def helper_decode_all(table, paths):
    """[(exit status, values or None)] of each file."""
    answers = helper.ask([{"op": "decode", "table": table, "in": p} for p in paths])
    return [(rc, got if rc == 0 else None) for rc, got, _ in answers]


def helper_encode(table, values, path):
    helper_encode_all(table, [(values, path)])


def helper_decode(table, path):
    """(exit status, values or None)."""
    return helper_decode_all(table, [path])[0]


def flatc(args, cwd):
    r = subprocess.run(["flatc"] + args, capture_output=True, text=True, cwd=cwd)
    check(r.returncode == 0, "flatc %s: %s%s" % (" ".join(args), r.stdout, r.stderr))
    return r.returncode == 0


# ---- python3-flatbuffers through generated code ------------------------------

def camel(name):
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def module(table):
    ns, name = table.split(".")
    return importlib.import_module("percore.%s.%s" % (ns, name))


def py_vector(b, mod, name, kind, v):
    start = getattr(mod, "Start%sVector" % camel(name))
    if kind == "bytes":
        return b.CreateByteVector(bytes(v))
    if kind == "strs" or kind.startswith("tables:"):
        refs = [b.CreateString(s) for s in v] if kind == "strs" \
            else [py_table(b, kind[7:], e) for e in v]
        start(b, len(refs))
        for r in reversed(refs):
            b.PrependUOffsetTRelative(r)
        return b.EndVector()
    start(b, len(v))
    for x in reversed(v):
        if kind == "ints":
            b.PrependInt32(x)
        elif kind == "longs":
            b.PrependInt64(x)
        else:  # pairs
            module("test.Pair").CreatePair(b, x["a"], x["b"])
    return b.EndVector()


def py_table(b, table, d):
    mod = module(table)
    refs = {}
    for name, kind, _, _ in SPEC[table]:
        if name not in d:
            continue
        if kind == "str":
            refs[name] = b.CreateString(d[name])
        elif kind.startswith("table:"):
            refs[name] = py_table(b, kind[6:], d[name])
        elif kind in ("bytes", "ints", "longs", "strs", "pairs") or kind.startswith("tables:"):
            refs[name] = py_vector(b, mod, name, kind, d[name])
    mod.Start(b)
    for name, kind, _, _ in SPEC[table]:
        if name not in d:
            continue
        add = getattr(mod, "Add" + camel(name))
        v = d[name]
        if name in refs:
            add(b, refs[name])
        elif kind == "vec3":
            add(b, module("test.Vec3").CreateVec3(b, v["x"], v["y"], v["z"]))
        elif kind == "pair":
            add(b, module("test.Pair").CreatePair(b, v["a"], v["b"]))
        else:
            add(b, v)
    return mod.End(b)


def py_build(table, d):
    b = flatbuffers.Builder(0)
    b.Finish(py_table(b, table, d), file_identifier=FILE_IDS.get(table.split(".")[0]))
    return bytes(b.Output())


def py_read_value(kind, o):
    if kind == "str":
        return o.decode("utf-8")
    if kind == "pair":
        return {"a": o.A(), "b": o.B()}
    if kind == "vec3":
        return {"x": o.X(), "y": o.Y(), "z": o.Z()}
    if kind.startswith("table"):
        return py_object(kind.split(":")[1], o)
    return o


def py_object(table, o):
    out = {}
    for name, kind, _, _ in SPEC[table]:
        acc = getattr(o, camel(name))
        if kind in ("bytes", "ints", "longs", "strs", "pairs") or kind.startswith("tables:"):
            if getattr(o, camel(name) + "IsNone")():
                continue
            n = getattr(o, camel(name) + "Length")()
            item = {"strs": "str", "pairs": "pair"}.get(kind, kind.replace("tables:", "table:"))
            out[name] = [py_read_value(item, acc(i)) for i in range(n)]
        else:
            v = acc()
            if v is not None:
                out[name] = py_read_value(kind, v)
    return out


def py_read(table, buf):
    ns, name = table.split(".")
    return py_object(table, getattr(module(table), name).GetRootAs(buf, 0))


# ---- the checks --------------------------------------------------------------

def round_trips(tmp, table, cases):
    schema, base = schema_of(table), os.path.join(tmp, table)
    ours = ["%s.ours%d.bin" % (base, i) for i in range(len(cases))]
    helper_encode_all(table, list(zip(cases, ours)))
    # 1. percore -> flatc --json
    out = os.path.join(tmp, "json-" + table)
    if flatc(["--json", "--strict-json", "--defaults-json", "--raw-binary",
              "--root-type", root_type(table), "-o", out, schema, "--"] + ours, tmp):
        for values, path in zip(cases, ours):
            name = os.path.splitext(os.path.basename(path))[0] + ".json"
            with open(os.path.join(out, name)) as f:
                got = json.load(f)
            check(norm(table, got) == norm(table, values),
                  "%s: flatc read %s as %r, expected %r" % (table, path, got, values))
    # 2. flatc -b -> percore
    jsons = []
    for i, values in enumerate(cases):
        jsons.append("%s.flatc%d.json" % (base, i))
        with open(jsons[-1], "w") as f:
            json.dump(to_flatc_json(table, values), f)
    if flatc(["-b", "--strict-json", "--root-type", root_type(table), "-o", tmp, schema]
             + jsons, tmp):
        read = helper_decode_all(table, [j[:-5] + ".bin" for j in jsons])
        for values, j, (rc, got) in zip(cases, jsons, read):
            check(rc == 0 and norm(table, got) == norm(table, values),
                  "%s: percore read flatc's %s as %r (exit %d)" % (table, j, got, rc))
    # 3. python builds -> percore reads; 4. percore builds -> python reads
    pys = ["%s.py%d.bin" % (base, i) for i in range(len(cases))]
    for values, path in zip(cases, pys):
        with open(path, "wb") as f:
            f.write(py_build(table, values))
    read = helper_decode_all(table, pys)
    for i, values in enumerate(cases):
        rc, got = read[i]
        check(rc == 0 and norm(table, got) == norm(table, values),
              "%s: percore read Python's %s as %r (exit %d)" % (table, pys[i], got, rc))
        with open(ours[i], "rb") as f:
            got = py_read(table, f.read())
        check(norm(table, got) == norm(table, values),
              "%s: Python read %s as %r, expected %r" % (table, ours[i], got, values))
    return ours[-1], cases[-1]


def decode_bytes_all(tmp, table, datas):
    """[(exit status, values or None)] of percore reading each buffer."""
    paths = []
    for i, data in enumerate(datas):
        paths.append(os.path.join(tmp, "bad%d.bin" % i))
        with open(paths[-1], "wb") as f:
            f.write(data)
    return helper_decode_all(table, paths)


def decode_bytes(tmp, table, data):
    return decode_bytes_all(tmp, table, [data])[0]


def rejects(tmp, table, path, data, why):
    rc, _ = decode_bytes(tmp, table, data)
    check(rc == 3, "%s: percore accepted %s (%s), exit %d" % (table, path, why, rc))


def rejections(tmp, built):
    # Cut short: rejected, or (when only trailing padding went) read exactly
    # as before. Padding is at most 7 bytes. Every length near the end and
    # a sample before it (test_fb_verify tries every length of a buffer).
    for table, (path, values) in built.items():
        with open(path, "rb") as f:
            data = f.read()
        accepted = 0
        cuts = set(range(0, len(data), max(1, len(data) // 16)))
        cuts = sorted(cuts | set(range(max(0, len(data) - 12), len(data))))
        read = decode_bytes_all(tmp, table, [data[:n] for n in cuts])
        for n, (rc, got) in zip(cuts, read):
            accepted += rc == 0
            check(rc == 3 or (rc == 0 and norm(table, got) == norm(table, values)),
                  "%s: %s cut to %d bytes read as %r (exit %d)" % (table, path, n, got, rc))
        check(accepted < 8, "%s: %d cuts of %s accepted" % (table, accepted, path))
    # Wrong table: a Leave has no user or text, which Message requires.
    leave = built["chat.Leave"][0]
    with open(leave, "rb") as f:
        rejects(tmp, "chat.Message", leave, f.read(), "a Leave")
    # Wrong file identifier.
    alltypes = built["test.AllTypes"][0]
    with open(alltypes, "rb") as f:
        data = bytearray(f.read())
    data[4:8] = b"XXXX"
    rejects(tmp, "test.AllTypes", alltypes, bytes(data), "identifier XXXX")


def edge_cases(table):
    """The smallest and the largest values of every field, once each."""
    lo, hi, empty = {}, {}, {}
    for name, kind, default, required in SPEC[table]:
        if kind in INT_RANGE:
            lo[name], hi[name] = INT_RANGE[kind]
        elif kind == "str":
            lo[name], hi[name] = "", "x" * 1000
            if required:
                empty[name] = ""
        elif kind in ("bytes", "ints", "longs", "strs", "pairs") or kind.startswith("tables:"):
            lo[name] = []
    return [lo, hi, empty]


def client_frames(tmp, rng):
    """The Python chat client's frames carry bodies percore reads, and it
    reads the bodies percore builds, through a socket pair standing in for
    the server (the chat server itself is tested elsewhere)."""
    ids = chat_client.message_ids(SRC)
    check(sorted(ids) == ["ERROR", "HISTORY", "JOIN", "LEAVE", "MESSAGE", "SAY"],
          "message ids from fb_chat.h and fb_error.h: %r" % ids)
    ours, theirs = socket.socketpair()
    client = chat_client.ChatClient(ours, ids)
    sent = [("JOIN", "chat.Join", rand_table(rng, "chat.Join")),
            ("SAY", "chat.Say", rand_table(rng, "chat.Say")),
            ("LEAVE", "chat.Leave", rand_table(rng, "chat.Leave"))]
    client.join(sent[0][2]["room"], sent[0][2]["user"])
    client.say(sent[1][2]["room"], sent[1][2]["text"])
    client.leave(sent[2][2]["room"])
    for name, table, values in sent:
        version, flags, msg_id, length, reserved = struct.unpack(">BBIIH", recv_exactly(theirs, 12))
        check((version, flags, msg_id, reserved) == (1, 0, ids[name], 0),
              "client frame header for %s: %r" % (name, (version, flags, msg_id, reserved)))
        rc, got = decode_bytes(tmp, table, recv_exactly(theirs, length))
        check(rc == 0 and norm(table, got) == norm(table, values),
              "percore read the client's %s as %r (exit %d)" % (table, got, rc))
    # Server to client: a heartbeat first (skipped), then a Message, then a History.
    frames = []
    for table, msg_id, flags in (("heartbeat.Heartbeat", 2, 1), ("chat.Message", ids["MESSAGE"], 0),
                                 ("chat.History", ids["HISTORY"], 0)):
        values = rand_table(rng, table)
        path = os.path.join(tmp, "frame.bin")
        helper_encode(table, values, path)
        with open(path, "rb") as f:
            body = f.read()
        theirs.sendall(struct.pack(">BBIIH", 1, flags, msg_id, len(body), 0) + body)
        frames.append(values)
    got = client.receive_message()
    check(norm("chat.Message", got) == norm("chat.Message", frames[1]),
          "client read percore's Message as %r, expected %r" % (got, frames[1]))
    flags, msg_id, body = client.receive()
    got = chat_client.read_history(body)
    check(msg_id == ids["HISTORY"] and norm("chat.History", got) == norm("chat.History", frames[2]),
          "client read percore's History as %r, expected %r" % (got, frames[2]))
    for bad in (struct.pack(">BBIIH", 2, 0, 1, 0, 0), struct.pack(">BBIIH", 1, 4, 1, 0, 0),
                struct.pack(">BBIIH", 1, 0, 1, 0, 1), struct.pack(">BBIIH", 1, 0, 1, 17 << 20, 0)):
        try:
            chat_client.decode_header(bad)
            check(False, "client accepted the malformed header %r" % bad)
        except ValueError:
            pass
    ours.close()
    theirs.close()


def recv_exactly(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        check(chunk != b"", "socket closed after %d of %d bytes" % (len(data), n))
        if not chunk:
            break
        data += chunk
    return data


def main():
    global helper
    seed = int(os.environ.get("PC_FB_SEED", random.SystemRandom().randrange(2**32)))
    print("seed %d (PC_FB_SEED=%d repeats this run)" % (seed, seed))
    rng = random.Random(seed)
    keep = os.environ.get("PC_FB_KEEP")  # a folder to leave the files in
    with tempfile.TemporaryDirectory(prefix="pc-fb-") as scratch:
        tmp = keep or scratch
        os.makedirs(tmp, exist_ok=True)
        chat_client.generate_code(SRC, os.path.join(tmp, "gen"), SCHEMAS.values())
        helper = Helper()
        built = {}
        for table in MESSAGE_TABLES:
            cases = edge_cases(table) + [rand_table(rng, table) for _ in range(PER_TABLE)]
            built[table] = round_trips(tmp, table, cases)
            print("%-20s %d cases both ways through flatc and Python" % (table, len(cases)))
        rejections(tmp, built)
        client_frames(tmp, rng)
        print("chat client frames over a socket pair checked")
        rc = helper.close()
        check(rc == 0, "fb_interop batch exited with %d" % rc)
    if failures:
        print("%d failures" % len(failures))
        return 1
    print("all interop checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
