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
import statistics
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_scipy import ALPHA, bh, permutation_p, rejects, report_p  # noqa: E402
from scipy.stats import mannwhitneyu  # noqa: E402

MARGIN = 0.05

# ours -> [(other row, kind, scale)], in the order the report lists them
PAIRS = {
    "SlabAlloc/64": [("Peer/glibc/64", "peer", 1), ("Peer/jemalloc/64", "peer", 1)],
    "SpscQueue/Concurrent/affinity:on": [("Peer/ck_ring/Concurrent/affinity:on", "peer", 1)],
    "Counter/Striped/threads:2": [("Counter/Atomic/threads:2", "variant", 1)],
    # a bare cache-line bounce is a reference, not a physical limit
    "CrossCore/RTT/idle:spin/affinity:on": [("Peer/core2core/RTT/affinity:on", "reference", 1)],
    "CrossCore/OneWay/idle:spin/affinity:on": [("Peer/core2core/RTT/affinity:on", "reference",
                                                0.5)],
    # packing's gain beside the mixed stream; the mixed stream beside a
    # ring of 8-byte items
    "CrossCore/Throughput/affinity:on": [("CrossCore/Throughput/mixed/affinity:on",
                                         "variant", 1)],
    "CrossCore/Throughput/mixed/affinity:on": [
        ("Peer/ck_ring/Concurrent/affinity:on", "peer", 1),
        ("Peer/spsc64/Concurrent/affinity:on", "variant", 1)],
    "CrossCore/RTT/idle:adaptive/affinity:on": [("Peer/core2core/RTT/affinity:on",
                                                 "reference", 1)],
    # the wake-up cost: a finding beside the spinning row
    "CrossCore/RTT/idle:sleep/affinity:on": [("CrossCore/RTT/idle:spin/affinity:on",
                                              "variant", 1)],
    # spin meets busy polling, sleep meets sleep
    "SessionEcho/Latency/64/idle:adaptive": [("Peer/epoll_busy/Latency/64", "peer", 1)],
    "SessionEcho/Latency/64/idle:sleep": [("Peer/epoll_echo/Latency/64", "peer", 1)],
    # echo throughput and connection rate by idle behaviour; the plain
    # io_uring server is a peer
    "SessionEcho/64": [("Peer/epoll_busy/64", "peer", 1)],
    "SessionEcho/64/idle:sleep": [("Peer/epoll_echo/64", "peer", 1)],
    "SessionEcho/64/backend:uring/idle:sleep": [("Peer/epoll_echo/64", "peer", 1),
                                                ("Peer/uring_echo/64", "peer", 1)],
    "Session/Create": [("Peer/epoll_busy/Create", "peer", 1)],
    "Session/Create/idle:sleep": [("Peer/epoll_echo/Create", "peer", 1)],
    "SlabAlloc/256": [("Peer/glibc/256", "peer", 1)],
    # batched: beside our per-item queue only, never ck_ring's per-item row
    "SpscQueue/Concurrent/batch:32/affinity:on": [("SpscQueue/Concurrent/affinity:on", "variant", 1)],
    "MpscQueue/2P1C": [("Peer/ck_ring/mpsc/2P1C", "peer", 1)],
    "TimingWheel/Expire": [("Peer/libuv/Expire", "peer", 1)],
    # re-arms leave the cascading out: shown, not counted
    "TimingWheel/1000": [("Peer/libuv/1000", "reference", 1)],
}
COUNTED = ("peer", "limit")


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


def counter(doc, name):
    """Per-repetition values of one counter, for the rows that have it."""
    out = {}
    for r in doc["benchmarks"]:
        if r.get("run_type") == "iteration" and name in r:
            out.setdefault(r["run_name"], []).append(r[name])
    return out


def judge(x, y, alpha=ALPHA):
    p = report_p(x, y)
    hl = math.exp(np.median(np.subtract.outer(np.log(y), np.log(x))))
    u1 = mannwhitneyu(x, y, alternative="two-sided").statistic
    half = len(x) * len(y) / 2
    verdict = ("no significant difference" if p >= alpha or u1 == half
               else "faster" if u1 < half else "slower")
    return p, hl, u1, half, verdict


def verdict_of(p, u1, half):
    return ("no significant difference" if p >= ALPHA or u1 == half
            else "faster" if u1 < half else "slower")


def check_cpu(by, judged, adj, fails):
    """The server CPU verdicts of the report against scipy's; returns
    {(ours, other, "cpu"): (verdict, decided)} as the findings count them."""
    out = {}
    for key, (p, hl, u1, half, _) in judged.items():
        if len(key) != 3:
            continue
        r = by.get(key[:2], {}).get("server_cpu")
        pa = adj.get(key)
        verdict = verdict_of(pa if pa is not None else p, u1, half)
        if r is None:
            fails.append("%s vs %s: no server CPU verdict" % key[:2])
            continue
        decided = verdict != "no significant difference" or (
            r["ci_low"] >= 1 / (1 + MARGIN) and r["ci_high"] <= 1 + MARGIN)
        out[key] = (verdict, decided)
        said = {"faster": "less CPU", "slower": "more CPU"}.get(verdict, verdict)
        if abs(r["p_value"] - p) > 1e-9 or abs(r["speedup"] / hl - 1) > 1e-9 or \
           r["verdict"] != said or r["decided"] != decided or \
           (pa is None) != (r["p_adjusted"] is None) or \
           (pa is not None and abs(r["p_adjusted"] - pa) > 1e-9):
            fails.append("%s vs %s server CPU: percore %s; want p=%s adj=%s speedup=%s %s"
                         % (key[0], key[1], r, p, pa, hl, said))
    for (ours, other), r in by.items():
        if r.get("server_cpu") is not None and (ours, other, "cpu") not in judged:
            fails.append("%s vs %s: a server CPU verdict without the figures" % (ours, other))
    return out


def main():
    pc, fx = sys.argv[1], sys.argv[2]
    with open(os.path.join(fx, "results.json")) as f:
        doc = json.load(f)
    t = times(doc)
    cpu = counter(doc, "server_cpu_ns_per_req")
    util = counter(doc, "client_util")
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
    judged = {}
    for ours, lst in PAIRS.items():
        for other, kind, scale in lst:
            x, y = t[ours], [scale * v for v in t[other]]
            judged[(ours, other)] = judge(x, y)
            # the server CPU per request, where both rows record it
            if ours in cpu and other in cpu:
                judged[(ours, other, "cpu")] = judge(cpu[ours], [scale * v for v in cpu[other]])
    # every test of the counted pairs is adjusted together
    fam = [(o, a) for o, lst in PAIRS.items() for a, k, _ in lst if k in COUNTED]
    fam += [(o, a, "cpu") for o, a in fam if (o, a, "cpu") in judged]
    adj = dict(zip(fam, bh([judged[f][0] for f in fam])))
    cpu_pairs = check_cpu(by, judged, adj, fails)
    if got["summary"].get("tests") != len(fam):
        fails.append("summary tests = %s, want %d" % (got["summary"].get("tests"), len(fam)))
    lifted = 0
    n_bound = 0
    for ours, lst in PAIRS.items():
        for other, kind, scale in lst:
            x, y = t[ours], [scale * v for v in t[other]]
            p, hl, u1, half, _ = judged[(ours, other)]
            pa = adj.get((ours, other))
            verdict = verdict_of(pa if pa is not None else p, u1, half)
            lifted += pa is not None and p < ALPHA <= pa and u1 != half
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
            got_pa = r["p_adjusted"]
            if (pa is None) != (got_pa is None) or (pa is not None and abs(got_pa - pa) > 1e-9):
                fails.append("%s vs %s: adjusted p %s, want %s" % (ours, other, got_pa, pa))
            if abs(r["p_value"] - p) > 1e-9 or abs(r["speedup"] / hl - 1) > 1e-9 or \
               r["verdict"] != verdict or r["decided"] != decided:
                fails.append("%s vs %s: percore p=%s speedup=%s %s decided=%s; want p=%s "
                             "speedup=%s %s decided=%s" % (ours, other, r["p_value"],
                                                           r["speedup"], r["verdict"],
                                                           r["decided"], p, hl, verdict,
                                                           decided))
            client_bound = any(statistics.median(util.get(n, [0])) >= 0.9 for n in (ours, other))
            if r.get("client_bound") != client_bound:
                fails.append("%s vs %s: client_bound %s" % (ours, other, r.get("client_bound")))
            if kind not in COUNTED:
                counts["variants"] += 1
                continue
            # a client-bound pair counts by its servers' CPU where it has it
            if client_bound and (ours, other, "cpu") in cpu_pairs:
                verdict, decided = cpu_pairs[(ours, other, "cpu")]
                n_bound += 1
            counts["pairs"] += 1
            counts["decided"] += decided
            if kind == "limit":
                counts["below_limit"] += verdict == "faster"
                continue
            counts["faster"] += verdict == "faster"
            counts["slower"] += verdict == "slower"
            counts["within_margin"] += verdict == "no significant difference" and decided
    # the fixture holds a pair the adjustment turns back, and the plain
    # io_uring server wins a pair that counts as a loss
    if not lifted:
        fails.append("no pair is significant raw and not after the adjustment")
    if by.get(("SessionEcho/64/backend:uring/idle:sleep", "Peer/uring_echo/64"),
              {}).get("verdict") != "slower":
        fails.append("the loss to Peer/uring_echo is not counted as slower")
    # a client-bound pair whose throughput is level counts as a win on CPU
    if not n_bound or got["summary"].get("client_bound") != n_bound:
        fails.append("client-bound pairs counted on CPU: %s, want %d"
                     % (got["summary"].get("client_bound"), n_bound))
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
