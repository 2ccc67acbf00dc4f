#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every external command the tests run comes from a package that
scripts/deps.sh installs.

A fresh Debian machine has only the packages of priority "required"; the
tests must not lean on anything else that merely happens to be installed
on the machine they were written on. Two checks:

(a) The test scripts (tests/**/*.sh, *.py, CMakeLists.txt) are scanned for
    commands in command position. A command counts when it is on PATH here
    and no "required" package ships it (or no package at all), and is not
    a shell builtin. Each such command must be in tests/core/commands.txt.
(b) Each manifest line "command package [deps-entry]" must hold: the
    deps-entry (the package itself by default) is in deps.sh's list, the
    package is that entry or one of its direct dependencies, the command is
    installed, and dpkg says the package ships it (through alternatives
    links; behind a shim on PATH that dpkg does not know, /usr/bin's).
    A line whose package is "-" names a command deps.sh does not install: every test file that
    uses it must look for it first (command -v / shutil.which) and skip.
"""
import glob
import os
import re
import shutil
import subprocess
import sys

SRC = os.environ.get("PC_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MANIFEST = os.path.join(SRC, "tests", "core", "commands.txt")
DEPS = os.path.join(SRC, "scripts", "deps.sh")
BIN_DIRS = ("/bin", "/usr/bin", "/sbin", "/usr/sbin")

# Where a shell word is a command: line start, after an operator or a
# keyword, or after a prefix command (command -v, timeout N, env A=b...).
SH_PREFIX = (r'(?:^|[;&|({!`]|\$\(|\b(?:then|do|else|elif|if|while|until|exec|'
             r'command(?:\s+-v)?|xargs|sudo|nice|timeout(?:\s+-\S+)*\s+\S+)\s|'
             r'\benv(?:\s+-\S+)*(?:\s+[A-Za-z_]\w*=\S*)+\s)'
             r'\s*(?:[A-Za-z_]\w*=\S*\s+)*["\']?')
NAME = r'([A-Za-z][\w.+-]*)'
# Inside a lookahead, so that matches may overlap: in "a && command -v b"
# both "command" and "b" are in command position.
SH_CMD = re.compile(r'(?=' + SH_PREFIX + NAME + r'(?=$|[\s;|&)"\'`]))')
# Python: the program of a subprocess argument list, a shutil.which()
# argument, or a fallback program name ("... or 'redis-server'").
PY_CMD = re.compile(r'(?:\[\s*|which\(\s*|\b(?:or|else)\s+)["\']' + NAME + r'["\']')
CMAKE_CMD = re.compile(r'\bCOMMAND\s+' + NAME + r'(?=\s|\))')


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True).stdout


def required_packages():
    out = run(["dpkg-query", "-W", "-f=${Package} ${Priority}\n"])
    return {p for p, _, prio in (l.partition(" ") for l in out.splitlines())
            if prio == "required"}


def shell_builtins():
    out = run(["bash", "-c", "compgen -b; compgen -k"])
    return set(out.split())


def dpkg_files():
    """{path: package} for everything dpkg installed in BIN_DIRS."""
    owners = {}
    for lst in glob.glob("/var/lib/dpkg/info/*.list"):
        pkg = os.path.basename(lst)[:-len(".list")].split(":")[0]
        with open(lst, errors="replace") as f:
            for line in f:
                path = line.rstrip("\n")
                if os.path.dirname(path) in BIN_DIRS:
                    owners.setdefault(path, pkg)
    return owners


def path_programs():
    """{command name: its path}, the first on PATH, then BIN_DIRS."""
    progs = {}
    for d in os.environ.get("PATH", "").split(":") + list(BIN_DIRS):
        if d and os.path.isdir(d):
            for n in os.listdir(d):
                p = os.path.join(d, n)
                if n not in progs and os.access(p, os.X_OK) and not os.path.isdir(p):
                    progs[n] = p
    return progs


def owner_of(path, owners):
    """The package of a program, through links (alternatives) and either
    side of the /usr merge; None when dpkg ships none of them."""
    for p in (path, os.path.realpath(path)):
        for q in (p, p[len("/usr"):] if p.startswith("/usr/") else "/usr" + p):
            if q in owners:
                return owners[q]
    return None


def candidates(owners):
    """Commands a fresh machine may lack: on PATH or in BIN_DIRS here, not
    shipped by a required package, not a shell builtin."""
    required = required_packages()
    return ({n for n, p in path_programs().items() if owner_of(p, owners) not in required}
            - shell_builtins())


def strip_sh_comment(line):
    if line.lstrip().startswith("#"):
        return ""
    return re.sub(r'(^|\s)#.*', '', line)


def used_commands(wanted):
    """{command: set(test files)} for the commands of wanted the tests run."""
    uses = {}
    files = (glob.glob(os.path.join(SRC, "tests", "**", "*.sh"), recursive=True) +
             glob.glob(os.path.join(SRC, "tests", "**", "*.py"), recursive=True) +
             glob.glob(os.path.join(SRC, "tests", "**", "CMakeLists.txt"), recursive=True))
    for path in files:
        if path.startswith(os.path.join(SRC, "tests", "fixtures") + os.sep):
            continue  # generators of test data, not tests
        rel = os.path.relpath(path, SRC)
        with open(path, errors="replace") as f:
            for line in f:
                if path.endswith(".sh"):
                    found = SH_CMD.findall(strip_sh_comment(line))
                elif path.endswith(".py"):
                    found = PY_CMD.findall(line)
                else:
                    found = CMAKE_CMD.findall(line)
                for c in found:
                    if c in wanted:
                        uses.setdefault(c, set()).add(rel)
    return uses


def deps_packages():
    """The package names of deps.sh's packages=( ... ) list."""
    with open(DEPS) as f:
        text = f.read()
    m = re.search(r'^packages=\((.*?)^\)', text, re.S | re.M)
    if not m:
        sys.exit(f"FAIL: no packages=( ... ) list in {DEPS}")
    body = re.sub(r'#.*', '', m.group(1))
    return set(body.split())


def manifest():
    """[(command, package, deps entry, line number)]"""
    rows = []
    with open(MANIFEST) as f:
        for n, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if len(words) not in (2, 3):
                sys.exit(f"FAIL: {MANIFEST}:{n}: want 'command package [deps-entry]'")
            rows.append((words[0], words[1], words[-1], n))
    return rows


def depends_of(pkg):
    out = run(["dpkg-query", "-W", "-f=${Pre-Depends}, ${Depends}", pkg])
    return {re.split(r'[\s:(]', alt.strip())[0]
            for dep in out.split(",") for alt in dep.split("|") if alt.strip()}


def shipping_package(cmd, owners):
    """The package that ships the command found on PATH, falling back to
    BIN_DIRS when that one is not dpkg's (a version manager's shim, say);
    None when the command is not installed, "" when dpkg ships none."""
    found = [p for p in [shutil.which(cmd)] if p]
    found += [p for p in (os.path.join(d, cmd) for d in BIN_DIRS) if os.path.exists(p)]
    for path in found:
        pkg = owner_of(path, owners)
        if pkg:
            return pkg
    return "" if found else None


def guarded(path, cmd):
    with open(os.path.join(SRC, path), errors="replace") as f:
        text = f.read()
    return re.search(r'command -v ["\']?' + re.escape(cmd) + r'\b', text) or \
        re.search(r'which\(\s*["\']' + re.escape(cmd) + r'["\']', text)


def main():
    if not os.path.isdir("/var/lib/dpkg/info") or not run(["bash", "-c", "command -v dpkg"]):
        print("skip: not a dpkg system; deps.sh installs Debian packages")
        return 77
    errors = []
    rows = manifest()
    listed = {r[0]: r for r in rows}
    deps = deps_packages()
    owners = dpkg_files()

    uses = used_commands(candidates(owners) | set(listed))
    for cmd in sorted(set(uses) - set(listed)):
        errors.append(f"{cmd} is run by {', '.join(sorted(uses[cmd]))} but is not in "
                      f"tests/core/commands.txt (add it with its package, and the "
                      f"package to scripts/deps.sh)")

    for cmd, pkg, entry, n in rows:
        if pkg == "-":
            for path in sorted(uses.get(cmd, ())):
                if not guarded(path, cmd):
                    errors.append(f"{path} runs {cmd}, which deps.sh does not install, "
                                  f"without looking for it first (command -v) to skip")
            continue
        if entry not in deps:
            errors.append(f"commands.txt:{n}: {cmd} needs {entry}, which scripts/deps.sh "
                          f"does not install")
            continue
        if entry != pkg and pkg not in depends_of(entry):
            errors.append(f"commands.txt:{n}: {entry} does not depend on {pkg}")
        owner = shipping_package(cmd, owners)
        if owner is None:
            errors.append(f"commands.txt:{n}: {cmd} is not installed (run scripts/deps.sh)")
        elif owner != pkg:
            errors.append(f"commands.txt:{n}: {cmd} comes from package "
                          f"'{owner or 'none'}', not {pkg}")

    for e in errors:
        print("FAIL: " + e)
    if errors:
        return 1
    print(f"ok: the {len(uses)} commands the tests run beyond the required packages "
          f"come from packages deps.sh installs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
