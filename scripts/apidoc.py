#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The API reference, made from the contract comments of the public headers
(include/percore/*.h), so that it says what the headers say.

    apidoc.py check HEADER...            every public function and type has a
                                         contract comment directly above it;
                                         lists those that do not, exits 1
    apidoc.py man --out DIR [--version V] HEADER...
                                         DIR/man3/<function>.3 for every
                                         public function
    apidoc.py filter HEADER              the header as Doxygen should read it
                                         (Doxygen's INPUT_FILTER)

The headers keep plain C comments: a block comment that ends on the line
above a declaration is that declaration's contract. Doxygen reads only
its own comment forms, so `filter` rewrites those comments (and the
trailing comments of struct members) into them, escaping what Doxygen would
take for commands; line numbers stay as they are.

Public: functions named pc_* declared PC_API or defined inline in the
header, and the structs, unions, enums and typedefs it defines. Names with
a double underscore or a trailing underscore are internal helpers of the
inline code: they need a comment but get no page.
"""
import argparse
import os
import re
import sys

# Macros used alone on a line at file scope, without a ';': the C linkage
# markers, and those that define a family of functions (PC_FB_LOAD(u16,
# uint16_t)).
STANDALONE = re.compile(r"(PC_BEGIN_DECLS|PC_END_DECLS)\b|PC_[A-Z0-9_]+\([^()\n]*\)[ \t]*(?=\n)")


class Comment:
    def __init__(self, start, end, line, end_line, text, trailing, depth_kind):
        self.start, self.end = start, end          # offsets in the source
        self.line, self.end_line = line, end_line  # 1-based
        self.text = text                           # without /* */
        self.trailing = trailing                   # code before it on its line
        self.kind = depth_kind                     # None, "struct", "func"


class Decl:
    def __init__(self, kind, name, line, text, comment):
        self.kind, self.name, self.line = kind, name, line
        self.text, self.comment = text, comment
        self.group_of = None    # the first of the run whose comment it shares


def scan(src):
    """Comments and file-scope statements of a header, in order."""
    comments, stmts, macros = [], [], []
    i, n, line = 0, len(src), 1
    stack = []            # kinds of the open braces: "struct", "func", "init"
    stmt, stmt_line = [], None
    line_has_code = False

    def flush(end_line):
        nonlocal stmt, stmt_line
        text = "".join(stmt).strip()
        if text:
            stmts.append((stmt_line, end_line, text))
        stmt, stmt_line = [], None

    while i < n:
        c = src[i]
        if c == "\n":
            line += 1
            line_has_code = False
            if not stack:
                stmt.append(" ")
            i += 1
            continue
        if src.startswith("/*", i):
            j = src.index("*/", i + 2) + 2
            kind = stack[-1] if stack else None
            comments.append(Comment(i, j, line, line + src.count("\n", i, j),
                                    src[i + 2:j - 2], line_has_code, kind))
            line += src.count("\n", i, j)
            i = j
            continue
        if src.startswith("//", i):
            i = src.find("\n", i)
            i = n if i < 0 else i
            continue
        if c == "#" and not line_has_code and \
           re.match(r"#\s*(ifdef\s+__cplusplus|if\s+defined\s*\(?\s*__cplusplus)", src[i:i + 40]):
            # what only C++ reads (extern "C" {, the std:: atomics): up to
            # the #else or #endif, both of which stay in the scan
            k = re.compile(r"^[ \t]*#\s*(else|endif)\b", re.M).search(src, i + 1)
            line += src.count("\n", i, k.start())
            i = k.start()
            continue
        if c == "#" and not line_has_code:
            # a preprocessor line, with its continuations
            m = re.match(r"#\s*define\s+(\w+)", src[i:i + 200])
            if m and not stack:
                macros.append((line, m.group(1)))
            while i < n and src[i] != "\n":
                if src[i] == "\\" and src.startswith("\n", i + 1):
                    line += 1
                    i += 1
                i += 1
            continue
        if c in "\"'":
            j = i + 1
            while src[j] != c:
                j += 2 if src[j] == "\\" else 1
            if not stack:
                stmt.append(src[i:j + 1])
            line_has_code = True
            i = j + 1
            continue
        if not stack and not c.isspace():
            m = STANDALONE.match(src, i)
            if m and not "".join(stmt).strip():
                i = m.end()
                continue
            if stmt_line is None:
                stmt_line = line
        if not c.isspace():
            line_has_code = True
        if c == "{":
            if not stack:
                head = "".join(stmt)
                if re.search(r"\b(struct|union|enum)\b[^()]*$", head):
                    stack.append("struct")
                elif head.rstrip().endswith(")"):
                    stack.append("func")
                else:
                    stack.append("init")
                stmt.append("{")
            else:
                stack.append("struct" if stack[-1] == "struct" else "inner")
            i += 1
            continue
        if c == "}" and stack:
            kind = stack.pop()
            if not stack:
                stmt.append("}")
                if kind == "func":
                    flush(line)
            i += 1
            continue
        if not stack:
            stmt.append(c)
            if c == ";":
                flush(line)
        i += 1
    return comments, stmts, macros


ATTR = re.compile(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)")


def classify(text):
    """(kind, name) of a file-scope statement, or None when it declares
    nothing public (a forward declaration, an assertion, a macro use)."""
    t = ATTR.sub("", text)
    t = re.sub(r"\s+", " ", t).strip()
    body = t.split("{", 1)[0]
    if re.match(r"^(__extension__ )?typedef\b", t):
        m = re.search(r"\(\s*\*\s*(\w+)\s*\)\s*\(", t) or \
            re.search(r"(\w+)\s*(\[[^\]]*\]\s*)*;$", t) or \
            re.search(r"(\w+)\s*\(", t)
        return ("typedef", m.group(1)) if m else None
    m = re.match(r"^(struct|union|enum) (\w+) ?\{", t)
    if m:
        return (m.group(1), f"{m.group(1)} {m.group(2)}")
    m = re.search(r"\b(pc_\w+)\s*\(", body)
    if m and (t.startswith("PC_API") or re.match(r"^(PC_INLINE|static inline)\b", t)):
        return ("function", m.group(1))
    return None


RUN = ("function", "typedef")


def parse(path):
    with open(path) as f:
        src = f.read()
    comments, stmts, macros = scan(src)
    by_end = {c.end_line: c for c in comments if not c.trailing and c.kind is None}
    decls, prev_end = [], None
    for start, end, text in stmts:
        what = classify(text)
        if what:
            d = Decl(what[0], what[1], start, text, by_end.get(start - 1))
            d.end = end
            # A run of functions (and the typedefs they take) on
            # consecutive lines shares the comment above its first:
            # pc_topo_ncores(), pc_topo_core(), ...
            if d.comment is None and d.kind in RUN and decls and \
               decls[-1].kind in RUN and prev_end == start - 1:
                d.comment, d.group_of = decls[-1].comment, decls[-1]
            decls.append(d)
        prev_end = end
    # Macros are not checked, but a comment above one is its documentation.
    decls += [Decl("macro", name, line, "", by_end.get(line - 1))
              for line, name in macros]
    decls.sort(key=lambda d: d.line)
    return src, comments, decls


def internal(name):
    return "__" in name or name.endswith("_")


def comment_paragraphs(text):
    """The comment's text as paragraphs of joined lines."""
    lines = [re.sub(r"^\s*\*? ?", "", l).rstrip() for l in text.strip("*").split("\n")]
    paras, cur = [], []
    for l in lines:
        if l.strip():
            cur.append(l.strip())
        elif cur:
            paras.append(" ".join(cur))
            cur = []
    if cur:
        paras.append(" ".join(cur))
    return paras


# ---- check -----------------------------------------------------------------

def check(headers):
    missing = []
    for h in headers:
        _, _, decls = parse(h)
        for d in decls:
            if d.comment is None and d.kind != "macro" and not internal(d.name.split()[-1]):
                missing.append(f"{h}:{d.line}: {d.kind} {d.name} has no contract comment")
    for m in missing:
        print(m)
    print(f"apidoc: {len(missing)} public declaration(s) without a contract comment"
          if missing else "apidoc: every public declaration has a contract comment")
    return 1 if missing else 0


# ---- filter ------------------------------------------------------------------

def doxy_text(text):
    """A comment's text with what Doxygen would read as a command, an HTML
    tag or an entity escaped."""
    return re.sub(r"([\\@<>&#%$])", r"\\\1", text)


def filter_header(path):
    src, comments, decls = parse(path)
    documented = {d.comment.start for d in decls if d.comment}
    # the file's description: the first comment that is not the SPDX line
    intro = next((c for c in comments if "SPDX-License-Identifier" not in c.text), None)
    # A run of functions sharing one comment becomes a Doxygen member group,
    # whose first member's documentation the others take
    # (DISTRIBUTE_GROUP_DOC): "/** @{ */" before the comment, "/** @} */"
    # after the last member's line, so line numbers stay.
    line_ends = [k for k, ch in enumerate(src) if ch == "\n"]
    inserts = {}
    for d in decls:
        if d.group_of and d.group_of.group_of is None:
            inserts[d.group_of.comment.start] = "/** @{ */ "
        if d.group_of and not any(o.group_of is d for o in decls):
            inserts[line_ends[d.end - 1]] = " /** @} */"
    edits = [(c.start, c.end, c) for c in comments] + \
            [(k, k, t) for k, t in inserts.items()]
    edits.sort(key=lambda e: (e[0], isinstance(e[2], Comment)))
    out, pos = [], 0
    for start, end, c in edits:
        if isinstance(c, str):
            out.append(src[pos:start] + c)
            pos = start
            continue
        if c is intro and c.kind is None and c.start not in documented:
            opener = f"/** @file {os.path.basename(path)}\n *"
        elif c.start in documented:
            opener = "/**"
        elif c.kind == "struct":
            opener = "/**<" if c.trailing else "/**"
        else:
            continue
        out.append(src[pos:start])
        out.append(opener + doxy_text(c.text) + "*/")
        pos = end
    out.append(src[pos:])
    sys.stdout.write("".join(out))
    return 0


# ---- man ---------------------------------------------------------------------

def roff(s):
    s = s.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + s if s[:1] in (".", "'") else s


def prototype(text):
    """The declaration as a reader writes it: no export marker or
    attributes, the body of an inline function left out."""
    t = ATTR.sub("", text.split("{", 1)[0] if text.rstrip().endswith("}") else text)
    t = re.sub(r"\bPC_API\b|\bPC_INLINE\b|\bstatic inline\b", "", t)
    t = re.sub(r"\s+", " ", t).strip().rstrip(";").strip()
    return t + ";"


def summary(paras):
    first = paras[0] if paras else ""
    m = re.match(r"(.+?[.;:])(\s|$)", first)
    s = (m.group(1) if m else first).rstrip(".;:")
    if len(s) > 72:
        s = s[:72].rsplit(" ", 1)[0] + " ..."
    return s or "percore function"


def man_pages(headers, out, version):
    n = 0
    for h in headers:
        _, _, decls = parse(h)
        inc = "percore/" + os.path.basename(h)
        funcs = [d for d in decls if d.kind == "function" and not internal(d.name)]
        for d in funcs:
            paras = comment_paragraphs(d.comment.text) if d.comment else []
            r = [f'.TH {roff(d.name)} 3 "" "percore {roff(version)}" "percore API"',
                 f".\\\" Made by scripts/apidoc.py from {inc}; edit the header's comment.",
                 ".nh", ".ad l",
                 ".SH NAME", f"{roff(d.name)} \\- {roff(summary(paras))}",
                 ".SH SYNOPSIS", ".nf", f"\\fB#include <{roff(inc)}>\\fR", "",
                 f"\\fB{roff(prototype(d.text))}\\fR", ".fi",
                 ".PP", "Link with \\fI\\-lpercore\\fR"
                 + (" \\fI\\-lpercore\\-bench\\fR" if inc in BENCH_HEADERS else "")
                 + " (\\fBpkg\\-config \\-\\-libs "
                 + ("percore\\-bench" if inc in BENCH_HEADERS else "percore") + "\\fR).",
                 ".SH DESCRIPTION"]
            for i, p in enumerate(paras or ["Not documented."]):
                if i:
                    r.append(".PP")
                r.append(roff(p))
            others = [o.name for o in funcs if o is not d]
            if others:
                r += [".SH SEE ALSO", ", ".join(f"\\fB{roff(o)}\\fR(3)" for o in others)]
            path = os.path.join(out, "man3", d.name + ".3")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write("\n".join(r) + "\n")
            n += 1
    print(f"apidoc: {n} section 3 pages in {out}/man3")
    return 0


# Headers of the tools library, libpercore-bench (CMakeLists.txt).
BENCH_HEADERS = {"percore/bench.h", "percore/audit.h", "percore/tune.h",
                 "percore/load.h", "percore/json.h"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("headers", nargs="+")
    m = sub.add_parser("man")
    m.add_argument("--out", required=True)
    m.add_argument("--version", default="")
    m.add_argument("headers", nargs="+")
    f = sub.add_parser("filter")
    f.add_argument("header")
    a = ap.parse_args()
    if a.cmd == "check":
        return check(a.headers)
    if a.cmd == "man":
        return man_pages(a.headers, a.out, a.version)
    return filter_header(a.header)


if __name__ == "__main__":
    sys.exit(main())
