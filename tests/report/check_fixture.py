#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The report's key numbers on the fixture, computed here without percore.

Reads tests/fixtures/report/results.json, pairs its rows by the pairing
written out below (fair peers, limits and variants as the report must pair
them), recomputes each pair's p-value, Hodges-Lehmann speedup, interval,
verdict and decided flag with scipy and numpy, and checks them, the summary
counts and the key findings of `percore report --json` against that; then
checks that expected.md, the golden report, carries the same numbers.

usage: check_fixture.py PERCORE FIXTURE_DIR
"""
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_scipy import ALPHA, permutation_p, rejects, report_p  # noqa: E402
from scipy.stats import mannwhitneyu  # noqa: E402

MARGIN = 0.05

# ours -> [(other row, kind, scale)], in the order the report lists them
PAIRS = {
    "SlabAlloc/64": [("Peer/glibc/64", "peer", 1), ("Peer/jemalloc/64", "peer", 1)],
    "SpscQueue/Concurrent/affinity:on": [("Peer/ck_ring/Concurrent/affinity:on", "peer", 1)],
    "Counter/Striped/threads:2": [("Counter/Atomic/threads:2", "variant", 1)],
    "CrossCore/RTT/idle:spin/affinity:on": [("Peer/core2core/RTT/affinity:on", "limit", 1)],
    "CrossCore/OneWay/idle:spin/affinity:on": [("Peer/core2core/RTT/affinity:on", "limit", 0.5)],
    "CrossCore/Throughput/affinity:on": [("Peer/spsc64/Concurrent/affinity:on", "peer", 1),
                                         ("SpscQueue/Concurrent/affinity:on", "variant", 1)],
    "CrossCore/RTT/idle:adaptive/affinity:on": [("Peer/core2core/RTT/affinity:on", "limit", 1)],
    # spin meets busy polling, sleep meets sleep
    "SessionEcho/Latency/64/idle:adaptive": [("Peer/epoll_busy/Latency/64", "peer", 1)],
    "SessionEcho/Latency/64/idle:sleep": [("Peer/epoll_echo/Latency/64", "peer", 1)],
    # batched: beside our per-item queue only, never ck_ring's per-item row
    "SpscQueue/Concurrent/batch:32/affinity:on": [("SpscQueue/Concurrent/affinity:on", "variant", 1)],
    "MpscQueue/2P1C": [("Peer/ck_ring/mpsc/2P1C", "peer", 1)],
    "TimingWheel/Expire": [("Peer/libuv/Expire", "peer", 1)],
}


def times(doc):
    """Per-repetition time per item of every row, ns."""
    scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
    out = {}
    for r in doc["benchmarks"]:
        if r.get("run_type") != "iteration":
            continue
        t = (1e9 / r["items_per_second"] if r.get("items_per_second")
             else r["real_time"] * scale[r["time_unit"]])
        out.setdefault(r["run_name"], []).append(t)
    return out


def judge(x, y):
    p = report_p(x, y)
    hl = math.exp(np.median(np.subtract.outer(np.log(y), np.log(x))))
    u1 = mannwhitneyu(x, y, alternative="two-sided").statistic
    half = len(x) * len(y) / 2
    verdict = ("no significant difference" if p >= ALPHA or u1 == half
               else "faster" if u1 < half else "slower")
    return p, hl, verdict


def main():
    pc, fx = sys.argv[1], sys.argv[2]
    with open(os.path.join(fx, "results.json")) as f:
        t = times(json.load(f))
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [pc, "report", os.path.join(fx, "results.json"), os.path.join(fx, "noise-pmqos.json"),
             "--tune", os.path.join(fx, "tune.json"), "--json", "-o", tmp],
            check=True, capture_output=True, text=True).stdout
    got = json.loads(out)
    fails = []
    seen = [(p["ours"], p["against"], p["kind"]) for p in got["pairs"]]
    want = [(o, a, k) for o, lst in PAIRS.items() for a, k, _ in lst]
    if sorted(seen) != sorted(want):
        fails.append("pairs %s, want %s" % (sorted(set(seen) ^ set(want)), "none differing"))
    counts = {"pairs": 0, "decided": 0, "faster": 0, "slower": 0, "within_margin": 0,
              "below_limit": 0, "variants": 0}
    by = {(p["ours"], p["against"]): p for p in got["pairs"]}
    for ours, lst in PAIRS.items():
        for other, kind, scale in lst:
            x, y = t[ours], [scale * v for v in t[other]]
            p, hl, verdict = judge(x, y)
            r = by.get((ours, other))
            if r is None:
                continue
            lo, hi = r["ci_low"], r["ci_high"]
            for bound, inward in ((math.log(lo), 1), (math.log(hi), -1)):
                if len(set(x)) == len(x) and len(set(y)) == len(y) and (
                        not rejects(x, y, bound - inward * 1e-9) or
                        rejects(x, y, bound + inward * 1e-9)):
                    fails.append("%s vs %s: interval end %g" % (ours, other, math.exp(bound)))
            decided = verdict != "no significant difference" or (
                lo >= 1 / (1 + MARGIN) and hi <= 1 + MARGIN)
            if abs(r["p_value"] - p) > 1e-9 or abs(r["speedup"] / hl - 1) > 1e-9 or \
               r["verdict"] != verdict or r["decided"] != decided:
                fails.append("%s vs %s: percore p=%s speedup=%s %s decided=%s; want p=%s "
                             "speedup=%s %s decided=%s" % (ours, other, r["p_value"],
                                                           r["speedup"], r["verdict"],
                                                           r["decided"], p, hl, verdict,
                                                           decided))
            if kind == "variant":
                counts["variants"] += 1
                continue
            counts["pairs"] += 1
            counts["decided"] += decided
            if kind == "limit":
                counts["below_limit"] += verdict == "faster"
                continue
            counts["faster"] += verdict == "faster"
            counts["slower"] += verdict == "slower"
            counts["within_margin"] += verdict == "no significant difference" and decided
    for k, v in counts.items():
        if got["summary"][k] != v:
            fails.append("summary %s = %s, want %s" % (k, got["summary"][k], v))
    if got["summary"]["undecided"] != counts["pairs"] - counts["decided"]:
        fails.append("summary undecided")
    with open(os.path.join(fx, "expected.md")) as f:
        md = f.read()
    line = "Pairs decided: **%d of %d**" % (counts["decided"], counts["pairs"])
    for text in [line] + got["findings"]:
        if "- " + text not in md:
            fails.append("expected.md lacks the finding: %s" % text)
    if line not in " ".join(got["findings"]):
        fails.append("the JSON findings lack: %s" % line)
    for f in fails:
        print("FAIL:", f)
    print("fixture: %d pairs checked, %d decided, %d failures"
          % (len(want), counts["decided"], len(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
