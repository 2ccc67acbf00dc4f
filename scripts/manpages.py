#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Manual pages and bash completion for the percore command, made from its
own --help text, so neither can drift from what the program says.

    manpages.py --percore BIN --out DIR [--version V]

writes DIR/man1/percore.1, DIR/man1/percore-COMMAND.1 for every command
that `percore --help` lists, and DIR/bash-completion/percore, which offers
an option's values where its text names them ("epoll (default) or uring").

The help texts share one layout, which this reads:
  usage: percore CMD ...          (continued on indented lines)
  paragraphs                      description
  options:                        (optional heading)
    --name ARG   text             an item: two spaces, the option, its text
                 more text        continued at the text's column
  paragraphs                      notes; one starting "Exit status:" is
                                  the EXIT STATUS section
"""
import argparse
import os
import re
import subprocess
import sys
from collections import Counter


def run_help(percore, *args):
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
    out = subprocess.run([percore, *args, "--help"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, text=True)
    if out.returncode != 0:
        sys.exit(f"manpages: '{percore} {' '.join(args)} --help' exited "
                 f"{out.returncode}: {out.stderr.strip()}")
    return out.stdout


def blocks(text):
    """Blank-line separated groups of lines."""
    out, cur = [], []
    for line in text.rstrip("\n").split("\n"):
        if line.strip():
            cur.append(line.rstrip())
        elif cur:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


ITEM = re.compile(r"^  (\S.*)$")


def text_column(lines):
    """The column where item texts start: the commonest column after the
    first run of two or more spaces in an item line."""
    cols = Counter()
    for line in lines:
        m = re.match(r"^  (\S(?:\S| (?! ))*)\s{2,}\S", line)
        if m:
            cols[len(m.group(0)) - 1] += 1
    return cols.most_common(1)[0][0] if cols else None


def parse_items(lines):
    """(term, text) pairs from an option block."""
    col = text_column(lines)
    items = []
    for line in lines:
        indent = len(line) - len(line.lstrip(" "))
        if indent == 2:
            if col and len(line) > col and line[col - 1] == " ":
                term, text = line[:col].strip(), line[col:].strip()
            else:
                parts = re.split(r"\s{2,}", line.strip(), maxsplit=1)
                term, text = parts[0], parts[1] if len(parts) > 1 else ""
            items.append([term, text])
        elif items:
            items[-1][1] = (items[-1][1] + " " + line.strip()).strip()
    return items


def is_item_block(b):
    body = b[1:] if b[0].endswith(":") and not b[0].startswith(" ") else b
    return bool(body) and all(line.startswith("  ") for line in body) and \
        any(ITEM.match(line) for line in body)


def parse(text):
    bs = blocks(text)
    usage = [bs[0][0][len("usage: "):]] + [l.strip() for l in bs[0][1:]]
    desc, items, notes, exit_status = [], [], [], []
    for b in bs[1:]:
        if is_item_block(b):
            items += parse_items(b[1:] if b[0].endswith(":") else b)
            continue
        para = " ".join(l.strip() for l in b)
        # A paragraph may end with the exit status on lines of its own.
        m = re.search(r"(?:^|(?<=\. ))Exit status:", para)
        if m:
            if para[:m.start()].strip():
                (notes if items else desc).append(para[:m.start()].strip())
            exit_status.append(para[m.start():][len("Exit status:"):].strip())
        else:
            (notes if items else desc).append(para)
    return {"usage": usage, "desc": desc, "items": items, "notes": notes,
            "exit": exit_status}


def esc(s):
    """Text for a roff line: backslashes and hyphens escaped, no line
    starting with a control character."""
    s = s.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + s if s[:1] in (".", "'") else s


def term_roff(term):
    """--name ARG as bold option, italic argument."""
    out = []
    for word in term.split(" "):
        if word.startswith("-"):
            w = word.rstrip(",")
            out.append("\\fB" + esc(w) + "\\fR" + ("," if word.endswith(",") else ""))
        else:
            out.append("\\fI" + esc(word) + "\\fR")
    return " ".join(out)


def page(name, summary, version, h, extra=None):
    up = name.upper()
    r = [f'.TH {esc(up)} 1 "" "percore {esc(version)}" "percore manual"',
         ".\\\" Made by scripts/manpages.py from the program's --help; edit that.",
         ".nh", ".ad l",
         ".SH NAME", f"{esc(name)} \\- {esc(summary)}",
         ".SH SYNOPSIS", ".nf"] + [esc(u) for u in h["usage"]] + [".fi"]
    if h["desc"]:
        r.append(".SH DESCRIPTION")
        for i, p in enumerate(h["desc"]):
            if i:
                r.append(".PP")
            r.append(esc(p))
    if extra:
        r += extra
    if h["items"]:
        r.append(".SH OPTIONS")
        for term, text in h["items"]:
            r += [".TP", term_roff(term), esc(text)]
    if h["notes"]:
        r.append(".SH NOTES")
        for i, p in enumerate(h["notes"]):
            if i:
                r.append(".PP")
            r.append(esc(p))
    if h["exit"]:
        r += [".SH EXIT STATUS", esc(" ".join(h["exit"]))]
    return r


def commands(top):
    """(name, summary) from the top-level help's commands: block."""
    out = []
    for b in blocks(top):
        if b[0] == "commands:":
            for line in b[1:]:
                m = re.match(r"^  (\S+)\s+(.*)$", line)
                if m:
                    out.append((m.group(1), m.group(2)))
    return out


def term_options(term):
    """The options an item's term names: "-h, --help" gives both."""
    return re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", term)


def options_of(h):
    return [o for term, _ in h["items"] for o in term_options(term)]


def takes_path(term):
    return bool(re.search(r"\b(FILE|DIR)\b|\.json\b", term))


# A value: a word that ends where the list goes on or stops, with its
# optional note in parentheses ("epoll (default)"); "a" of "or a CPU
# list" is prose, not a value.
VALUE = re.compile(r"([a-z][a-z0-9-]*)(?:\s*\([^()]*\))?(?=$|[,;:.]|\s+or\s)")
VALUE_SEP = re.compile(r"\s*(?:,\s*or\s+|,\s*|\s+or\s+)")


def values_of(term, text):
    """The values an option takes when its text starts by naming them:
    "--backend B  epoll (default) or uring" gives [epoll, uring]. A label
    ending in a colon may come first ("placement: auto, compact, ...").
    None unless the option takes an argument and two values or more are
    named, so that "--conns C  connections (default 16)" names none."""
    if len(term.split()) < 2:
        return None
    rest = re.sub(r"^[A-Za-z ]+:\s+", "", text)
    vals = []
    while (m := VALUE.match(rest)):
        vals.append(m.group(1))
        rest = rest[m.end():]
        sep = VALUE_SEP.match(rest)
        if not sep:
            break
        rest = rest[sep.end():]
    return vals if len(vals) >= 2 else None


def completion(cmds, helps):
    names = " ".join(c for c, _ in cmds)
    lines = ["# SPDX-License-Identifier: MIT",
             "# bash completion for percore; made by scripts/manpages.py from",
             "# the program's --help.",
             "_percore()", "{",
             "\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}",
             "\tlocal opts=\"\" paths=\"\"",
             "\tif [ \"$COMP_CWORD\" -eq 1 ]; then",
             f"\t\tCOMPREPLY=($(compgen -W \"{names} --help --version\" -- \"$cur\"))",
             "\t\treturn",
             "\tfi",
             "\tcase ${COMP_WORDS[1]} in"]
    for c, _ in cmds:
        h = helps[c]
        opts = " ".join(dict.fromkeys(options_of(h) + ["--help"]))
        paths = " ".join(o for term, _ in h["items"] if takes_path(term)
                         for o in term_options(term))
        lines.append(f"\t{c})")
        for term, text in h["items"]:
            vals = values_of(term, text)
            opt = term_options(term)
            if vals and opt:
                lines.append(f"\t\tcase $prev in {'|'.join(opt)}) COMPREPLY=($(compgen -W "
                             f"\"{' '.join(vals)}\" -- \"$cur\")); return ;; esac")
        lines.append(f"\t\topts=\"{opts}\" paths=\"{paths}\" ;;")
    lines += ["\tesac",
              "\tcase \" $paths \" in",
              "\t*\" $prev \"*) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;",
              "\tesac",
              "\tif [[ $cur == -* ]]; then",
              "\t\tCOMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))",
              "\telse",
              "\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))",
              "\tfi",
              "}",
              "complete -F _percore percore", ""]
    return "\n".join(lines)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--percore", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--version", default="")
    a = ap.parse_args()

    top_text = run_help(a.percore)
    cmds = commands(top_text)
    if not cmds:
        sys.exit("manpages: 'percore --help' lists no commands")
    helps = {c: parse(run_help(a.percore, c)) for c, _ in cmds}
    top = parse(top_text)
    top["items"] = []  # the command list becomes COMMANDS below
    extra = [".SH COMMANDS"]
    for c, summary in cmds:
        extra += [".TP", f"\\fB{esc(c)}\\fR", esc(summary) + f" (\\fBpercore\\-{esc(c)}\\fR(1))"]
    top_summary = top["desc"].pop(0) if top["desc"] else "percore"
    top_summary = top_summary[0].lower() + top_summary[1:].rstrip(".")
    write(f"{a.out}/man1/percore.1",
          "\n".join(page("percore", top_summary, a.version, top, extra) + [
              ".SH SEE ALSO",
              ", ".join(f"\\fBpercore\\-{esc(c)}\\fR(1)" for c, _ in cmds)]) + "\n")
    for c, summary in cmds:
        r = page(f"percore-{c}", summary, a.version, helps[c])
        r += [".SH SEE ALSO", "\\fBpercore\\fR(1)"]
        write(f"{a.out}/man1/percore-{c}.1", "\n".join(r) + "\n")
    write(f"{a.out}/bash-completion/percore", completion(cmds, helps))


if __name__ == "__main__":
    main()
