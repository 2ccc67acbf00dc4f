#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The figures of a `make bench` run, rendered into the documents that
show them, so that no figure is copied by hand.

    render_figures.py RESULTS.json --percore BIN [--source TEXT] DOC.md...

reads RESULTS.json (build/bench/results.json), asks `percore report
RESULTS.json --json` for the verdict of every pair (the statistics stay in
one place), and rewrites in each DOC.md the block between

    <!-- figures:begin -->
    <!-- figures:end -->

with: the revision, the command line, the machine and the date of the run,
the report's summary, and a table per kind of pair (ours beside a peer,
beside a physical limit, our own variants). A document without the
markers is an error; nothing outside them changes. --source says in the
block where the results file came from (default: its path).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

BEGIN = "<!-- figures:begin -->"
END = "<!-- figures:end -->"


def report(percore, results):
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
        out = subprocess.run([percore, "report", results, "--json", "-o", tmp],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"render_figures: percore report failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def command_line(pc):
    """The run's command line: as recorded, or the `percore bench` call its
    recorded options stand for."""
    if pc.get("command_line"):
        return pc["command_line"]
    o = pc.get("options", {})
    args = ["percore", "bench"]
    if o.get("filter"):
        args += ["--filter", "'" + o["filter"] + "'"]
    for key, flag in (("repetitions", "--repetitions"), ("min_time", "--min-time"),
                      ("seed", "--seed"), ("affinity", "--affinity"),
                      ("max_cv", "--max-cv")):
        if key in o:
            args += [flag, f"{o[key]:g}" if isinstance(o[key], float) else str(o[key])]
    if o.get("budget_s"):
        args += ["--budget", f"{o['budget_s']:g}", "--max-repetitions",
                 str(o.get("max_repetitions", o.get("repetitions", 5)))]
    if o.get("interleave") is False:
        args.append("--no-interleave")
    if o.get("pm_qos"):
        args.append("--pm-qos")
    if o.get("suite") == "full":
        args.append("--full")
    return " ".join(args)


def machine(res):
    ctx, pc = res.get("context", {}), res.get("percore", {})
    audit = {a.get("id"): a.get("value") for a in pc.get("audit", [])}
    topo = pc.get("topology", {})
    parts = [audit.get("cpu.model") or "unknown CPU",
             f"{ctx.get('num_cpus', '?')} CPUs"]
    if topo:
        nodes = topo.get("nodes", [])
        cores = sum(n.get("cores", 0) for n in nodes)
        parts.append(f"{topo.get('packages', '?')} package(s), {len(nodes)} NUMA "
                     f"node(s), {cores} cores")
    if audit.get("vm.hypervisor"):
        parts.append(f"hypervisor: {audit['vm.hypervisor']}")
    if ctx.get("load_avg"):
        parts.append(f"load average {ctx['load_avg'][0]} before the run")
    return f"host `{ctx.get('host_name', '?')}`: " + ", ".join(parts)


def num(x, digits=2):
    return "?" if x is None else f"{x:.{digits}f}"


def p_text(p):
    if p is None:
        return "?"
    return "<0.0001" if p < 0.0001 else (f"{p:.4f}" if p < 0.01 else f"{p:.2f}")


def table(pairs):
    rows = ["| ours | against | speedup [95% CI] | p (adjusted) | verdict |",
            "|---|---|---|---|---|"]
    for q in pairs:
        p_adj = q.get("p_adjusted", q.get("p_value"))
        rows.append(f"| {q['ours']} | {q['against']} | {num(q.get('speedup'))}x "
                    f"[{num(q.get('ci_low'))}x, {num(q.get('ci_high'))}x] | "
                    f"{p_text(p_adj)} | {q.get('text') or q.get('verdict')} |")
    return rows


def block(res, rep, source):
    pc = res.get("percore", {})
    s = rep.get("summary", {})
    lines = [BEGIN,
             "<!-- Made by scripts/render_figures.py; edit the results, not this block. -->",
             "",
             f"From `{source}`: revision `{pc.get('git_revision', '?')}`, "
             f"run {res.get('context', {}).get('date', '?')}, percore {pc.get('version', '?')} "
             f"({pc.get('build_type', '?')}, {pc.get('compiler', '?')}).",
             "",
             f"- command line: `{command_line(pc)}`",
             f"- machine: {machine(res)}",
             "",
             f"{s.get('decided', 0)} of {s.get('pairs', 0)} pairs decided: ours faster in "
             f"{s.get('faster', 0)}, slower in {s.get('slower', 0)}, equal within "
             f"{num(100 * rep.get('margin', 0), 0)}% in {s.get('within_margin', 0)}; "
             f"{s.get('undecided', 0)} undecided (alpha {rep.get('alpha')}). Speedup = "
             "peer time / ours, the Hodges-Lehmann estimate with its 95% interval; "
             "a row counts as faster or slower only where the U test's p, adjusted over "
             "the run's tests (Benjamini-Hochberg), is below alpha.",
             ""]
    for kind, title in (("peer", "Ours beside a peer"),
                        ("limit", "Ours beside a physical limit"),
                        ("reference", "Ours beside a reference (shown, never counted)"),
                        ("variant", "Our own variants (shown, never counted)")):
        pairs = [q for q in rep.get("pairs", []) if q.get("kind") == kind]
        if pairs:
            lines += [f"**{title}**", ""] + table(pairs) + [""]
    lines.append(END)
    return "\n".join(lines)


def rewrite(path, text):
    with open(path) as f:
        doc = f.read()
    b, e = doc.find(BEGIN), doc.find(END)
    if b < 0 or e < b:
        sys.exit(f"render_figures: {path} has no {BEGIN} ... {END} block")
    new = doc[:b] + text + doc[e + len(END):]
    if new != doc:
        with open(path, "w") as f:
            f.write(new)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results")
    ap.add_argument("docs", nargs="+")
    ap.add_argument("--percore", required=True)
    ap.add_argument("--source")
    a = ap.parse_args()
    with open(a.results) as f:
        res = json.load(f)
    text = block(res, report(a.percore, a.results), a.source or a.results)
    for d in a.docs:
        rewrite(d, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
