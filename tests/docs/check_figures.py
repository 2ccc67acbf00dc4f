#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scripts/render_figures.py renders a results file into a document's
figures block, and the committed docs/BENCHMARKS.md holds what it renders.

    check_figures.py SOURCE_DIR PERCORE

  - rendered from the report fixture into a scratch document, the block
    names the fixture's revision, the `percore bench` command line its
    options stand for and its machine, and has a row for every pair that
    `percore report --json` gives, with that pair's speedup, interval and
    verdict; the text around the markers is left as it was;
  - a document without the markers is refused (exit status not 0);
  - docs/BENCHMARKS.md's block is exactly what the script renders from the
    results file the block names (so nobody edited a figure by hand).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

src, percore = sys.argv[1], sys.argv[2]
script = os.path.join(src, "scripts", "render_figures.py")
fixture = "tests/fixtures/report/results.json"
BEGIN, END = "<!-- figures:begin -->", "<!-- figures:end -->"


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def render(results, doc, cwd):
    return subprocess.run([sys.executable, script, results, doc, "--percore", percore],
                          cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def block_of(text):
    b, e = text.find(BEGIN), text.find(END)
    return text[b:e + len(END)] if 0 <= b < e else None


env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
with tempfile.TemporaryDirectory() as tmp:
    before, after = "# A page\n\ntext before\n\n", "\n\ntext after\n"
    doc = os.path.join(tmp, "doc.md")
    with open(doc, "w") as f:
        f.write(before + BEGIN + "\nstale\n" + END + after)
    out = render(fixture, doc, src)
    if out.returncode:
        fail(f"render_figures.py failed: {out.stderr}")
    text = open(doc).read()
    block = block_of(text)
    if not block or not text.startswith(before) or not text.endswith(after):
        fail("the text around the markers changed, or the block is gone")
    if "stale" in block:
        fail("the old block's content is still there")
    res = json.load(open(os.path.join(src, fixture)))
    pc = res["percore"]
    o = pc["options"]
    for want in (f"revision `{pc['git_revision']}`",
                 f"`percore bench --repetitions {o['repetitions']} --min-time {o['min_time']:g} "
                 f"--seed {o['seed']} --affinity {o['affinity']}",
                 f"host `{res['context']['host_name']}`",
                 next(a["value"] for a in pc["audit"] if a["id"] == "cpu.model")):
        if want not in block:
            fail(f"the block lacks {want!r}:\n{block}")
    rep = json.loads(subprocess.run([percore, "report", os.path.join(src, fixture), "--json",
                                     "-o", tmp], stdout=subprocess.PIPE, env=env,
                                    check=True, text=True).stdout)
    rows = [l for l in block.split("\n") if l.startswith("| ") and not l.startswith("| ours")]
    if len(rows) != len(rep["pairs"]):
        fail(f"{len(rows)} rows for {len(rep['pairs'])} pairs")
    for q in rep["pairs"]:
        want = (f"| {q['ours']} | {q['against']} | {q['speedup']:.2f}x "
                f"[{q['ci_low']:.2f}x, {q['ci_high']:.2f}x] |")
        row = [r for r in rows if r.startswith(want)]
        if len(row) != 1 or not row[0].rstrip(" |").endswith(q["text"]):
            fail(f"no row {want} ... {q['text']}")

    bare = os.path.join(tmp, "bare.md")
    with open(bare, "w") as f:
        f.write("no markers\n")
    if render(fixture, bare, src).returncode == 0:
        fail("a document without the markers was accepted")
    if open(bare).read() != "no markers\n":
        fail("a document without the markers was changed")

    committed = open(os.path.join(src, "docs", "BENCHMARKS.md")).read()
    block = block_of(committed)
    if not block:
        fail("docs/BENCHMARKS.md has no figures block")
    m = re.search(r"From `([^`]+)`", block)
    if not m:
        fail("docs/BENCHMARKS.md's block does not name its results file")
    if not os.path.exists(os.path.join(src, m.group(1))):
        print(f"ok: rendering checked; docs/BENCHMARKS.md's block comes from {m.group(1)},"
              " which is not here to render again")
        sys.exit(0)
    copy = os.path.join(tmp, "BENCHMARKS.md")
    with open(copy, "w") as f:
        f.write(committed)
    out = render(m.group(1), copy, src)
    if out.returncode or block_of(open(copy).read()) != block:
        fail(f"docs/BENCHMARKS.md's figures are not what scripts/render_figures.py renders "
             f"from {m.group(1)}: run it again, do not edit the block")
print("ok: the figures block names revision, command line and machine, has every pair,"
      " and docs/BENCHMARKS.md's block is the script's")
