#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The shared libraries export exactly what their installed headers declare.

  check_abi.py INCLUDE_DIR LIBPERCORE.so LIBPERCORE_BENCH.so
      Fails (exit 1) when a library exports a symbol no header of its own
      declares, when a declared function or variable is not exported, when
      a header declares a function without PC_API, when libpercore
      needs a symbol that libpercore-bench defines (the runtime must never
      call the tools), or when libpercore needs a library only the tools
      may (cJSON: the runtime writes its own JSON).
  check_abi.py --maps INCLUDE_DIR
      Prints the version scripts' global lists as the headers declare them
      (for writing cmake/percore.map and cmake/percore-bench.map).

Declarations are read with the compiler: gcc -aux-info lists every function
the umbrella header declares, and the preprocessed text holds each PC_API
declaration (functions and variables) with its visibility attribute.
"""
import os
import re
import subprocess
import sys
import tempfile

# Headers whose declarations libpercore-bench exports; every other public
# header belongs to libpercore.
TOOLS_HEADERS = {"bench.h", "audit.h", "tune.h", "load.h", "json.h"}
API_ATTR = '__attribute__((visibility("default")))'
# Shared libraries libpercore must not need (its DT_NEEDED entries), by
# name prefix: they belong to libpercore-bench.
TOOLS_ONLY_LIBS = ("libcjson",)


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def header_declarations(include):
    """{header basename: set(names)} for every PC_API declaration, and the
    set of functions declared without PC_API."""
    with tempfile.TemporaryDirectory() as tmp:
        tu = os.path.join(tmp, "all.c")
        aux = os.path.join(tmp, "aux.txt")
        with open(tu, "w") as f:
            f.write('#include "percore.h"\n')
        flags = ["gcc", "-D_GNU_SOURCE", "-I" + include]
        run(flags + ["-aux-info", aux, "-fsyntax-only", tu])
        pre = run(flags + ["-E", tu])
        with open(aux) as f:
            aux_lines = f.readlines()

    # Every extern function a public header declares, by header.
    functions = {}
    inc = os.path.realpath(include)
    for line in aux_lines:
        m = re.match(r"/\* (\S+):\d+:N[CF] \*/ extern .*?(\w+) \(", line)
        if m and os.path.realpath(m.group(1)).startswith(inc + os.sep):
            functions[m.group(2)] = os.path.basename(m.group(1))

    # The PC_API declarations, attributed to the header they appear in
    # through the preprocessor's line markers.
    declared = {}
    current = None
    statement = ""
    for line in pre.splitlines():
        m = re.match(r'# \d+ "([^"]+)"', line)
        if m:
            current = m.group(1)
            continue
        statement += " " + line
        while ";" in statement:
            text, statement = statement.split(";", 1)
            if API_ATTR not in text:
                continue
            text = text[text.index(API_ATTR) + len(API_ATTR):]
            head = text.split("(", 1)[0] if "(" in text else text.split("[", 1)[0]
            name = re.findall(r"\w+", head)[-1]
            declared.setdefault(os.path.basename(current), set()).add(name)
    marked = set().union(*declared.values()) if declared else set()
    unmarked = {f"{n} ({h})" for n, h in functions.items() if n not in marked}
    return declared, unmarked


def library_sets(declared):
    tools = set()
    runtime = set()
    for header, names in declared.items():
        (tools if header in TOOLS_HEADERS else runtime).update(names)
    return runtime, tools


def exported(lib):
    out = run(["nm", "-D", "--defined-only", lib])
    return {l.split()[-1].split("@")[0] for l in out.splitlines()
            if l.split()[-2] not in ("A",)}


def undefined(lib):
    out = run(["nm", "-D", "--undefined-only", lib])
    return {l.split()[-1].split("@")[0] for l in out.splitlines()}


def needed(lib):
    """The DT_NEEDED entries of a shared library."""
    out = run(["readelf", "-d", lib])
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def compare(what, lib, names, errors):
    have = exported(lib)
    for s in sorted(have - names):
        errors.append(f"{what}: exports {s}, which none of its headers declares")
    for s in sorted(names - have):
        errors.append(f"{what}: does not export {s}, which its headers declare")
    return have


def main(argv):
    if len(argv) == 3 and argv[1] == "--maps":
        runtime, tools = library_sets(header_declarations(argv[2])[0])
        for title, names in (("percore.map", runtime), ("percore-bench.map", tools)):
            print(f"# {title}")
            for n in sorted(names):
                print(f"\t\t{n};")
        return 0
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    include, rt_lib, tools_lib = argv[1:]
    declared, unmarked = header_declarations(include)
    runtime, tools = library_sets(declared)
    errors = [f"declared without PC_API: {u}" for u in sorted(unmarked)]
    rt_have = compare("libpercore", rt_lib, runtime, errors)
    tools_have = compare("libpercore-bench", tools_lib, tools, errors)
    for s in sorted(undefined(rt_lib) & tools_have):
        errors.append(f"libpercore needs {s} from libpercore-bench")
    rt_needed = needed(rt_lib)
    if not any(n.startswith("libc.so") for n in rt_needed):
        errors.append(f"readelf found no libc among libpercore's NEEDED: {rt_needed}")
    for n in rt_needed:
        if n.startswith(TOOLS_ONLY_LIBS):
            errors.append(f"libpercore needs {n}, which only libpercore-bench may")
    for e in errors:
        print("FAIL:", e)
    if errors:
        return 1
    print(f"ok: libpercore exports {len(rt_have)} symbols, libpercore-bench "
          f"{len(tools_have)}, each declared by its headers; the runtime "
          "needs nothing from the tools nor "
          f"{', '.join(TOOLS_ONLY_LIBS)} (NEEDED: {' '.join(rt_needed)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
