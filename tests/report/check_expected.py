#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The numbers of the golden report, worked out again without percore.

tests/fixtures/report/expected.md is what `percore report` wrote for the
fixture results, so comparing the report with it only shows that the report
did not change. This script reads the fixture JSON files itself and checks
the key figures of every table in the expected file against its own
computation with Python's statistics module: time per item (median over
repetitions of 1e9 / items_per_second), rates (median), CV (sample standard
deviation over mean of real time), speedups (the Hodges-Lehmann estimate
of the peer's time per item over ours, and of its server CPU per request
over ours where both record it), the noise table's median, mean and standard deviation, the
counters' medians and the architecture table's ops/s and efficiency. A
displayed figure passes when it is the computed value rounded to the digits
shown. Tables it does not know are left alone, but each kind it knows must
be found, so a renamed column fails loudly instead of checking nothing.

usage: check_expected.py EXPECTED.md RESULTS.json [PM_QOS_RESULTS.json...]
       (a file whose run held the PM QoS request names its rows NAME/pm_qos:on)
"""
import json
import math
import re
import statistics
import sys

# the counters of rows that set a server beside its client
SERVER_COUNTERS = ("server_cpu_ns_per_req", "client_util")
UNITS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
PREFIX = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
          "Ki": 1024.0, "Mi": 1024.0 ** 2, "Gi": 1024.0 ** 3, "Ti": 1024.0 ** 4}


def load(paths):
    """{name: {"real": [...ns], "tpi": [...], "items": [...], "bytes": [...],
    counters: [...]}} from the repetition rows of every file."""
    out = {}
    for i, path in enumerate(paths):
        d = json.load(open(path, encoding="utf-8"))
        pc = d.get("percore", {})
        held = pc.get("pm_qos", {}).get("held", pc.get("options", {}).get("pm_qos", False))
        suffix = "/pm_qos:on" if i > 0 and held else ""
        seen = {}
        for b in d["benchmarks"]:
            if b.get("run_type") != "iteration":
                continue
            name = b["name"] + suffix
            if name in out and name not in seen:
                continue  # the first file that has a name wins
            seen[name] = True
            r = out.setdefault(name, {"real": [], "tpi": [], "items": [], "bytes": [],
                                      "counters": {}})
            real = b["real_time"] * UNITS[b.get("time_unit", "ns")]
            ips = b.get("items_per_second", 0) or 0
            r["real"].append(real)
            r["tpi"].append(1e9 / ips if ips > 0 else real)
            r["items"].append(ips)
            r["bytes"].append(b.get("bytes_per_second", 0) or 0)
            for k, v in b.items():
                if (k.endswith("_us") or k in SERVER_COUNTERS) and isinstance(v, (int, float)):
                    r["counters"].setdefault(k, []).append(v)
    return out


def tolerance(text):
    """Half a unit of the last digit shown in a number's text."""
    frac = text.split(".")[1] if "." in text else ""
    return 0.5 * 10 ** -len(frac) * (1 + 1e-9)


def parse(cell):
    """(value, tolerance, kind) of a displayed figure, or None."""
    cell = cell.strip()
    m = re.match(r"^([0-9.]+) (ns|us|µs|ms|s)$", cell)
    if m:
        u = UNITS[m.group(2)]
        return float(m.group(1)) * u, tolerance(m.group(1)) * u, "time"
    m = re.match(r"^([0-9.]+) (k|M|G|T|Ki|Mi|Gi|Ti)?(B)?/s$", cell)
    if m:
        p = PREFIX[m.group(2) or ""]
        return float(m.group(1)) * p, tolerance(m.group(1)) * p, "bytes" if m.group(3) else "rate"
    m = re.match(r"^([0-9.]+)%", cell)
    if m:
        return float(m.group(1)) / 100, tolerance(m.group(1)) / 100, "pct"
    m = re.match(r"^([0-9.]+)(x?)$", cell)
    if m:
        return float(m.group(1)), tolerance(m.group(1)), "ratio" if m.group(2) else "number"
    return None


def hodges_lehmann(theirs, ours):
    """The Hodges-Lehmann estimate of theirs/ours: the median, on log
    times, of every ratio of one of their repetitions to one of ours."""
    return math.exp(statistics.median(math.log(t / o) for t in theirs for o in ours))


def cv(xs):
    return statistics.stdev(xs) / statistics.mean(xs)


def tables(md):
    """Each Markdown table as (header cells, [row cells...])."""
    out, cur = [], None
    for line in md.splitlines():
        if not line.startswith("|"):
            cur = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cur is None:
            cur = (cells, [])
            out.append(cur)
        elif all(re.match(r"^:?-+:?$", c) for c in cells):
            continue
        else:
            cur[1].append(cells)
    return out


def name_of(cell):
    m = re.match(r"^`([^`]+)`$", cell.strip())
    return m.group(1) if m else None


class Checker:
    def __init__(self, res):
        self.res, self.checked, self.fails, self.kinds = res, 0, [], set()

    def value(self, kind, where, cell, want):
        got = parse(cell)
        if got is None:
            self.fails.append("%s: '%s' is not a figure" % (where, cell))
            return
        v, tol, _ = got
        self.checked += 1
        self.kinds.add(kind)
        if abs(v - want) > tol:
            self.fails.append("%s: shows %s, computed %.6g" % (where, cell, want))

    def rate(self, r):
        if statistics.median(r["bytes"]) > 0:
            return statistics.median(r["bytes"])
        return statistics.median(r["items"])

    def pairs(self, head, rows):
        """Benchmark | Time/item | Rate | CV | Peer | Peer time/item | ..."""
        col = {h: i for i, h in enumerate(head)}
        ratio_col = next((i for h, i in col.items() if h.split(" [")[0] in ("Speedup", "Ratio")),
                         None)
        against = next((h for h in ("Against", "Peer") if h in col), None)
        ours = None
        for cells in rows:
            ours = name_of(cells[col["Benchmark"]]) or ours
            peer = name_of(cells[col[against]]) if against else None
            if ours not in self.res:
                continue
            o = self.res[ours]
            if name_of(cells[col["Benchmark"]]):
                self.value("time/item", ours, cells[col["Time/item"]], statistics.median(o["tpi"]))
                if "Rate" in col:
                    self.value("rate", ours + " rate", cells[col["Rate"]], self.rate(o))
                if "CV" in col and len(o["real"]) > 1:
                    self.value("cv", ours + " CV", cells[col["CV"]], cv(o["real"]))
            if peer not in self.res:
                continue
            p = self.res[peer]
            their_time = next((h for h in ("Its time/item", "Peer time/item") if h in col), None)
            their_cv = next((h for h in ("Its CV", "Peer CV") if h in col), None)
            # a one-way time meets half the limit's round trip (the
            # report's own rule, said above its table)
            half = "/OneWay/" in ours and "/RTT/" in peer
            if their_time:
                self.value("time/item", peer, cells[col[their_time]],
                           statistics.median(p["tpi"]) / (2 if half else 1))
            if their_cv and len(p["real"]) > 1:
                self.value("cv", peer + " CV", cells[col[their_cv]], cv(p["real"]))
            if ratio_col is not None:
                # the estimate, without its interval (check_fixture.py
                # checks the intervals)
                self.value("speedup", "%s vs %s" % (ours, peer), cells[ratio_col].split(" [")[0],
                           hodges_lehmann(p["tpi"], o["tpi"]) / (2 if half else 1))
            # the server CPU verdict, where both rows record the figure
            cpu_col = next((i for h, i in col.items() if h.startswith("Server CPU")), None)
            cpu = "server_cpu_ns_per_req"
            if cpu_col is not None and cpu in o["counters"] and cpu in p["counters"]:
                self.value("cpu speedup", "%s vs %s CPU" % (ours, peer),
                           cells[cpu_col].split(" [")[0],
                           hodges_lehmann(p["counters"][cpu], o["counters"][cpu]))
            elif cpu_col is not None and cells[cpu_col] != "-":
                self.fails.append("%s vs %s: a CPU verdict without the figures" % (ours, peer))

    def lone_peers(self, head, rows):
        """Peer | Time/item | Rate | CV"""
        col = {h: i for i, h in enumerate(head)}
        for cells in rows:
            name = name_of(cells[col["Peer"]])
            if name in self.res:
                r = self.res[name]
                self.value("time/item", name, cells[col["Time/item"]], statistics.median(r["tpi"]))
                self.value("rate", name + " rate", cells[col["Rate"]], self.rate(r))

    def noise(self, head, rows):
        """Benchmark | Configuration | Reps | Median | Mean | Stddev | CV"""
        col = {h: i for i, h in enumerate(head)}
        for cells in rows:
            base, conf = name_of(cells[col["Benchmark"]]), cells[col["Configuration"]]
            tags = ("/affinity:on" if conf.startswith("pinned") else
                    "/affinity:off" if conf.startswith("unpinned") else "")
            qos = "PM QoS" in conf
            name = next((n for n in self.res if n.startswith(base + "/") and
                         ("/pm_qos:on" in n) == qos and
                         (not tags or n.replace("/pm_qos:on", "").endswith(tags))), None)
            if not name:
                self.fails.append("noise table: no results for %s, %s" % (base, conf))
                continue
            real = self.res[name]["real"]
            self.value("noise", name + " reps", cells[col["Reps"]], len(real))
            self.value("noise", name + " median", cells[col["Median"]], statistics.median(real))
            self.value("noise", name + " mean", cells[col["Mean"]], statistics.mean(real))
            self.value("noise", name + " stddev", cells[col["Stddev"]], statistics.stdev(real))
            self.value("noise", name + " CV", cells[col["CV"]], cv(real))

    def counters(self, head, rows):
        """Benchmark | Counters (median): "p50_us 20, p99_us 40"."""
        for cells in rows:
            name = name_of(cells[0])
            if name not in self.res:
                continue
            for part in cells[1].split(","):
                k, shown = part.split()
                self.value("counter", "%s %s" % (name, k), shown,
                           statistics.median(self.res[name]["counters"][k]))

    def arch(self, head, rows):
        """Design | Cores | ops/s pinned | Efficiency | CV | ops/s unpinned | ..."""
        for cells in rows:
            design, cores = name_of(cells[0]), int(cells[1])
            for pinned, at in (("on", 2), ("off", 5)):
                name = "Arch/%s/cores:%d/affinity:%s" % (design, cores, pinned)
                one = "Arch/%s/cores:1/affinity:%s" % (design, pinned)
                if name not in self.res or cells[at] == "—":
                    continue
                ops = statistics.median(self.res[name]["items"])
                self.value("arch", name + " ops/s", cells[at], ops)
                ops1 = statistics.median(self.res[one]["items"])
                self.value("arch", name + " efficiency", cells[at + 1], ops / (cores * ops1))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    md = open(sys.argv[1], encoding="utf-8").read()
    c = Checker(load(sys.argv[2:]))
    for head, rows in tables(md):
        if head[:2] == ["Benchmark", "Time/item"] and ("Peer" in head or "Against" in head):
            c.pairs(head, rows)
        elif head[:2] == ["Peer", "Time/item"]:
            c.lone_peers(head, rows)
        elif head[:2] == ["Benchmark", "Configuration"]:
            c.noise(head, rows)
        elif head[:2] == ["Benchmark", "Counters (median)"]:
            c.counters(head, rows)
        elif head[:2] == ["Design", "Cores"]:
            c.arch(head, rows)
    for kind in ("time/item", "rate", "cv", "speedup", "cpu speedup", "noise", "counter",
                 "arch"):
        if kind not in c.kinds:
            c.fails.append("no %s figure found in %s: did a table change its columns?"
                           % (kind, sys.argv[1]))
    for f in c.fails:
        print("FAIL:", f)
    if c.fails:
        sys.exit(1)
    print("ok: %d figures of %s match an independent computation" % (c.checked, sys.argv[1]))


if __name__ == "__main__":
    main()
