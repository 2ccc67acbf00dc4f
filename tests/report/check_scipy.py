#!/usr/bin/python3
"""percore compare's p-values against Google Benchmark's compare.py.

Writes two results files holding many sample sets (exact and approximate
cases, with and without ties, one-repetition sets), runs
`percore compare --json`, and checks every p-value against what compare.py's
calc_utest computes (scipy.stats.mannwhitneyu, two-sided) within 1e-6, the
minimum-repetitions rule (no p-value where compare.py has none), and the
verdict that follows from the p-value.

usage: check_scipy.py PERCORE
"""
import json
import math
import os
import random
import subprocess
import sys
import tempfile

from scipy.stats import mannwhitneyu

ALPHA = 0.05
sys.path.insert(0, "/usr/share/benchmark")
try:
    from gbench.report import calc_utest  # Debian's libbenchmark-tools
except ImportError:
    calc_utest = None


def reference_p(x, y):
    """compare.py's time p-value, or None where it runs no test."""
    if calc_utest is not None:
        _, _, p = calc_utest([x, y], [x, y])
        return p
    if min(len(x), len(y)) < 2:  # compare.py's UTEST_MIN_REPETITIONS
        return None
    return mannwhitneyu(x, y, alternative="two-sided").pvalue


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


def results_file(path, sets, side):
    rows = []
    for i, pair in enumerate(sets):
        values = pair[side]
        for k, t in enumerate(values):
            rows.append({"name": "S/%d" % i, "run_name": "S/%d" % i,
                         "run_type": "iteration", "repetitions": len(values),
                         "repetition_index": k, "threads": 1, "iterations": 1,
                         "real_time": t, "cpu_time": t, "time_unit": "ns"})
    with open(path, "w") as f:
        json.dump({"context": {}, "benchmarks": rows}, f)


def min_p(nx, ny):
    """The smallest two-sided p any untied samples of these sizes give."""
    return mannwhitneyu(list(range(nx)), list(range(nx, nx + ny)),
                        alternative="two-sided").pvalue


def main():
    pc = sys.argv[1]
    rng = random.Random(20250115)
    sets = sample_sets(rng)
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
        r, want = rows["S/%d" % i], reference_p(x, y)
        if want is None:
            ok = r["p_value"] is None and r["verdict"] == "inconclusive"
        else:
            worst = max(worst, abs(r["p_value"] - want))
            ok = abs(r["p_value"] - want) <= 1e-6
            if min_p(len(x), len(y)) >= ALPHA:
                verdict = "inconclusive"
            elif want >= ALPHA or r["change_pct"] == 0:
                verdict = "unchanged"
            else:
                verdict = "improved" if r["change_pct"] < 0 else "regressed"
            ok = ok and r["verdict"] == verdict
        if not ok:
            fails += 1
            print("FAIL: set %d (%d vs %d): percore p=%s verdict=%s, compare.py p=%s"
                  % (i, len(x), len(y), r["p_value"], r["verdict"], want))
    print("%d sample sets, largest p-value difference %.3g, compare.py's calc_utest %s"
          % (len(sets), worst, "used" if calc_utest else "missing: scipy directly"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
