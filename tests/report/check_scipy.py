#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""percore compare's and percore report's statistics against scipy.

compare: writes two results files holding many sample sets (exact and
approximate cases, with and without ties, one-repetition sets), runs
`percore compare --json`, and checks every p-value, of real time and of CPU
time, against what compare.py's calc_utest computes (scipy.stats.mannwhitneyu,
two-sided) within 1e-6, the minimum-repetitions rule (no p-value where
compare.py has none), and the verdict that follows from the p-value, its
direction read from scipy's U statistic.

report: writes one results file of pairs (SlabAlloc/N beside Peer/glibc/N),
runs `percore report --json`, and checks each pair's p-value against the
permutation distribution of U enumerated here (small samples, ties kept) or
scipy's normal approximation (larger ones); the Hodges-Lehmann speedup
against numpy's median of the log differences; and its interval by what
defines it: scipy's test rejects a shift just outside either end and keeps
one just inside. Every pair counts, so the verdicts follow the p-values
adjusted over all of them (Benjamini-Hochberg, bh() below).

usage: check_scipy.py PERCORE
"""
import itertools
import json
import math
import os
import random
import subprocess
import sys
import tempfile

import numpy as np
from scipy.stats import mannwhitneyu, rankdata

ALPHA = 0.05
sys.path.insert(0, "/usr/share/benchmark")
try:
    from gbench.report import calc_utest  # Debian's libbenchmark-tools
except ImportError:
    calc_utest = None


def reference_p(x, y, cx, cy):
    """compare.py's time and CPU p-values, or None where it runs no test."""
    if calc_utest is not None:
        _, cpu_p, time_p = calc_utest([cx, cy], [x, y])
        return time_p, cpu_p
    if min(len(x), len(y)) < 2:  # compare.py's UTEST_MIN_REPETITIONS
        return None, None
    return (mannwhitneyu(x, y, alternative="two-sided").pvalue,
            mannwhitneyu(cx, cy, alternative="two-sided").pvalue)


def sample_sets(rng):
    sets = []
    sizes = [(1, 1), (1, 5), (2, 2), (2, 6), (3, 3), (3, 30), (4, 7), (5, 5), (6, 8),
             (7, 7), (8, 8), (8, 25), (9, 9), (10, 12), (15, 11), (20, 20), (40, 35)]
    for nx, ny in sizes:
        for shift in (0.0, 0.02, 0.3):
            x = [100 * (1 + rng.gauss(0, 0.05)) for _ in range(nx)]
            y = [100 * (1 + shift + rng.gauss(0, 0.05)) for _ in range(ny)]
            sets.append((x, y))
    # ties: integer times from a narrow range force the normal approximation
    for nx, ny in [(3, 3), (5, 5), (6, 9), (8, 8), (12, 12), (25, 30)]:
        for hi in (3, 6):
            x = [float(rng.randint(10, 10 + hi)) for _ in range(nx)]
            y = [float(rng.randint(11, 11 + hi)) for _ in range(ny)]
            sets.append((x, y))
    sets.append(([5.0] * 6, [5.0] * 6))                   # all equal
    sets.append(([1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]))  # fully separated
    return sets


def cpu_of(t, i, k):
    """A CPU time near the real time, different from it: tested apart."""
    return t * (0.9 + 0.2 * random.Random(i * 1000 + k).random())


def results_file(path, sets, side):
    rows = []
    for i, pair in enumerate(sets):
        values = pair[side]
        for k, t in enumerate(values):
            rows.append({"name": "S/%d" % i, "run_name": "S/%d" % i,
                         "run_type": "iteration", "repetitions": len(values),
                         "repetition_index": k, "threads": 1, "iterations": 1,
                         "real_time": t, "cpu_time": cpu_of(t, i, k + 100 * side),
                         "time_unit": "ns"})
    with open(path, "w") as f:
        json.dump({"context": {}, "benchmarks": rows}, f)


def min_p(nx, ny):
    """The smallest two-sided p any untied samples of these sizes give."""
    return mannwhitneyu(list(range(nx)), list(range(nx, nx + ny)),
                        alternative="two-sided").pvalue


def expected_verdict(p, x, y):
    """The verdict percore compare owes: significant in the direction of
    scipy's U statistic, else inconclusive where no untied outcome could
    have been significant, else unchanged."""
    u1 = mannwhitneyu(x, y, alternative="two-sided").statistic
    half = len(x) * len(y) / 2
    if p < ALPHA and u1 != half:
        return "improved" if u1 > half else "regressed"
    if min_p(len(x), len(y)) >= ALPHA:
        return "inconclusive"
    return "unchanged"


def check_compare(pc, sets):
    fails = 0
    with tempfile.TemporaryDirectory() as tmp:
        base, new = os.path.join(tmp, "base.json"), os.path.join(tmp, "new.json")
        results_file(base, sets, 0)
        results_file(new, sets, 1)
        out = subprocess.run([pc, "compare", base, new, "--json", "--alpha", str(ALPHA)],
                             check=True, capture_output=True, text=True).stdout
    rows = {r["name"]: r for r in json.loads(out)["rows"]}
    worst = 0.0
    for i, (x, y) in enumerate(sets):
        cx = [cpu_of(t, i, k) for k, t in enumerate(x)]
        cy = [cpu_of(t, i, k + 100) for k, t in enumerate(y)]
        r = rows["S/%d" % i]
        want, want_cpu = reference_p(x, y, cx, cy)
        if want is None:
            ok = (r["p_value"] is None and r["verdict"] == "inconclusive" and
                  r["cpu_p_value"] is None)
        else:
            worst = max(worst, abs(r["p_value"] - want), abs(r["cpu_p_value"] - want_cpu))
            ok = (abs(r["p_value"] - want) <= 1e-6 and
                  abs(r["cpu_p_value"] - want_cpu) <= 1e-6 and
                  r["verdict"] == expected_verdict(want, x, y) and
                  r["cpu_verdict"] == expected_verdict(want_cpu, cx, cy))
        if not ok:
            fails += 1
            print("FAIL: set %d (%d vs %d): percore p=%s/%s verdict=%s/%s, compare.py p=%s/%s"
                  % (i, len(x), len(y), r["p_value"], r["cpu_p_value"], r["verdict"],
                     r["cpu_verdict"], want, want_cpu))
    print("compare: %d sample sets, largest p-value difference %.3g, compare.py's "
          "calc_utest %s" % (len(sets), worst,
                             "used" if calc_utest else "missing: scipy directly"))
    return fails


# ---- percore report: the pairs ----------------------------------------------

def permutation_p(x, y):
    """Two-sided p of U over every split of the pooled values (ties keep
    their mean rank): 2 min(P(U <= u), P(U >= u)), at most 1."""
    pooled = list(x) + list(y)
    ranks = rankdata(pooled)
    n, m = len(pooled), len(x)
    obs = sum(ranks[:m])
    le = ge = total = 0
    for idx in itertools.combinations(range(n), m):
        s = sum(ranks[i] for i in idx)
        total += 1
        le += s <= obs + 1e-9
        ge += s >= obs - 1e-9
    return min(1.0, 2 * min(le, ge) / total)


def report_p(x, y):
    if len(x) <= 8 or len(y) <= 8:
        return permutation_p(x, y)
    return mannwhitneyu(x, y, alternative="two-sided", method="asymptotic").pvalue


def rejects(x, y, shift):
    """Whether scipy's test tells x from y / exp(shift) at ALPHA."""
    lx = np.log(x)
    ly = np.log(y) - shift
    method = "exact" if min(len(x), len(y)) <= 8 else "asymptotic"
    return mannwhitneyu(lx, ly, alternative="two-sided", method=method).pvalue <= ALPHA


def pair_sets(rng):
    sets = []
    for nx, ny in [(2, 2), (3, 3), (4, 4), (5, 5), (3, 8), (6, 6), (5, 9), (8, 8),
                   (9, 9), (12, 10), (20, 20), (30, 25), (60, 60)]:
        for ratio in (1.0, 1.03, 1.3):
            x = [100 * (1 + rng.gauss(0, 0.05)) for _ in range(nx)]
            y = [100 * ratio * (1 + rng.gauss(0, 0.05)) for _ in range(ny)]
            sets.append((x, y, False))
    for nx, ny in [(3, 3), (4, 5), (5, 5), (6, 7), (7, 8)]:
        x = [float(rng.randint(10, 13)) for _ in range(nx)]
        y = [float(rng.randint(11, 14)) for _ in range(ny)]
        sets.append((x, y, True))
    return sets


def bh(ps):
    """Benjamini-Hochberg adjusted p-values, in the order given."""
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    adj = [0.0] * m
    run = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        run = min(run, ps[i] * m / rank)
        adj[i] = run
    return adj


def check_report(pc, rng):
    sets = pair_sets(rng)
    rows = []
    for i, (x, y, _) in enumerate(sets):
        for name, values in (("SlabAlloc/%d" % i, x), ("Peer/glibc/%d" % i, y)):
            for k, t in enumerate(values):
                rows.append({"name": name, "run_name": name, "run_type": "iteration",
                             "repetitions": len(values), "repetition_index": k,
                             "threads": 1, "iterations": 1, "real_time": t,
                             "cpu_time": t, "time_unit": "ns"})
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "pairs.json")
        with open(path, "w") as f:
            json.dump({"context": {}, "benchmarks": rows}, f)
        out = subprocess.run([pc, "report", path, "--json", "-o", tmp], check=True,
                             capture_output=True, text=True).stdout
    got = {p["ours"]: p for p in json.loads(out)["pairs"]}
    fails, worst = 0, 0.0
    adj = bh([report_p(x, y) for x, y, _ in sets])
    for i, (x, y, tied) in enumerate(sets):
        r = got["SlabAlloc/%d" % i]
        want_p = report_p(x, y)
        hl = math.exp(np.median(np.subtract.outer(np.log(y), np.log(x))))
        problems = []
        worst = max(worst, abs(r["p_value"] - want_p))
        if abs(r["p_value"] - want_p) > 1e-6:
            problems.append("p %s, want %s" % (r["p_value"], want_p))
        if abs(r["speedup"] / hl - 1) > 1e-9:
            problems.append("speedup %s, want %s" % (r["speedup"], hl))
        u1 = mannwhitneyu(x, y, alternative="two-sided").statistic
        if abs(r["p_adjusted"] - adj[i]) > 1e-6:
            problems.append("adjusted p %s, want %s" % (r["p_adjusted"], adj[i]))
        if adj[i] >= ALPHA or u1 == len(x) * len(y) / 2:
            verdict = "no significant difference"
        else:
            verdict = "faster" if u1 < len(x) * len(y) / 2 else "slower"
        if r["verdict"] != verdict:
            problems.append("verdict %s, want %s" % (r["verdict"], verdict))
        lo, hi = r["ci_low"], r["ci_high"]
        if hi is None:  # no interval: even the widest would cover too little
            if min(len(x), len(y)) > 8 or 2 / math.comb(len(x) + len(y), len(x)) <= ALPHA:
                problems.append("no interval where one exists")
        elif not tied:
            for bound, inward in ((math.log(lo), 1), (math.log(hi), -1)):
                eps = 1e-9
                if not rejects(x, y, bound - inward * eps) or rejects(x, y, bound + inward * eps):
                    problems.append("interval end %.9g is not where the test turns"
                                    % math.exp(bound))
        decided = verdict != "no significant difference" or (
            hi is not None and lo >= 1 / 1.05 and hi <= 1.05)
        if r["decided"] != decided:
            problems.append("decided %s, want %s" % (r["decided"], decided))
        if problems:
            fails += 1
            print("FAIL: pair %d (%d vs %d%s): %s" % (i, len(x), len(y),
                                                     ", ties" if tied else "",
                                                     "; ".join(problems)))
    print("report: %d pairs, largest p-value difference %.3g" % (len(sets), worst))
    return fails


def main():
    pc = sys.argv[1]
    rng = random.Random(20250115)
    fails = check_compare(pc, sample_sets(rng))
    fails += check_report(pc, rng)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
