#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/kv/kv_pubsub_load against `percore kv --shards 2`, as
pubsub_bench.py runs it: unpaced and paced, every message delivered to
every subscriber (the tool exits 1 otherwise), its line complete, and the
paced run no shorter than its schedule (RATE bounds how fast messages
leave, never how slowly); bad arguments refused with usage.

Exit 0 when all pass, 1 when anything fails.

usage: pubsub_load_test.py PERCORE KV_PUBSUB_LOAD"""
import subprocess
import sys

from oracle import KvServer

KEYS = ("publishes_per_s", "deliveries_per_s", "p50_us", "p99_us", "seconds")


def run_load(load, port, args):
    """The tool's line as a dict; raises on a failed run."""
    out = subprocess.run([load, str(port)] + [str(a) for a in args],
                         capture_output=True, text=True, timeout=120)
    if out.returncode:
        raise AssertionError("exit %d: %s %s" % (out.returncode, out.stdout, out.stderr))
    got = dict(kv.split("=") for kv in out.stdout.split())
    missing = [k for k in KEYS if k not in got]
    if missing:
        raise AssertionError("line lacks %s: %r" % (missing, out.stdout))
    return {k: float(v) for k, v in got.items()}


def main():
    percore, load = sys.argv[1], sys.argv[2]
    failures = []
    kv = KvServer(percore, 2)
    try:
        # SUBS PUBS MSGS DEPTH SIZE [RATE]
        run_load(load, kv.port, [5, 2, 2000, 16, 32])
        subs, pubs, msgs, rate = 5, 2, 600, 2000.0
        got = run_load(load, kv.port, [subs, pubs, msgs, 4, 32, rate])
        schedule = (msgs - 1) * pubs / rate  # the last message's due time
        if got["seconds"] < schedule:
            failures.append("paced run took %.3f s, its schedule %.3f s" %
                            (got["seconds"], schedule))
        if got["p50_us"] <= 0 or got["p99_us"] < got["p50_us"]:
            failures.append("latencies out of order: %r" % got)
        for bad in ([5, 2, 100, 4, 32, -1], [5, 2, 100, 4], [0, 2, 100, 4, 32]):
            out = subprocess.run([load, str(kv.port)] + [str(a) for a in bad],
                                 capture_output=True, text=True, timeout=60)
            if out.returncode != 2:
                failures.append("%r: exit %d, not 2" % (bad, out.returncode))
    except AssertionError as e:
        failures.append(str(e))
    finally:
        rc, err = kv.stop()
        if rc:
            failures.append("percore kv exited %d: %s" % (rc, err[-2000:]))
    for f in failures:
        print("FAIL:", f)
    print("pubsub_load: %s" % ("ok" if not failures else "%d failed" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
