#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Publish/subscribe delivery at full size: 4 publishers x 100,000
messages to 100 subscribers spread over the shards of `percore kv
--shards 3`, channels and patterns mixed, checked by kv_pubsub_delivery
(each subscriber gets every message it should once, in each publisher's
order, nothing else; each PUBLISH counts its receivers); then the
checker itself: bad arguments refused, and subscribers closed under
the load caught.

Exit 0 when all pass, 1 when anything fails.

usage: pubsub_delivery_test.py PERCORE KV_PUBSUB_DELIVERY"""
import subprocess
import sys
import time

from oracle import KvServer, RedisPeer, enc


def checker(tool, port, *args, timeout=600):
    return subprocess.run([tool, str(port)] + [str(a) for a in args], capture_output=True,
                          text=True, timeout=timeout)


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    percore, tool = sys.argv[1], sys.argv[2]
    fails = []
    kv = KvServer(percore, 3)
    try:
        run = checker(tool, kv.port, 4, 100000, 100, 500)
        print(run.stdout.strip())
        if run.returncode or "each once and in order" not in run.stdout:
            fails.append("full size: exit %d: %s %s" % (run.returncode, run.stdout, run.stderr))
        for bad in ((), (0, 1, 1, 1), ("x", 1, 1, 1), (1, 0, 1, 1), (1, 17, 1, 1)):
            r = subprocess.run([tool] + [str(a) for a in bad], capture_output=True, text=True)
            if r.returncode != 2 or "usage" not in r.stderr:
                fails.append("arguments %r: exit %d, %r" % (bad, r.returncode, r.stderr))
        # subscribers closed under a running load (CLIENT KILL TYPE
        # pubsub): the checker must fail, not hang
        ctl = RedisPeer(kv.port)
        p = subprocess.Popen([tool, str(kv.port), "1", "2000000", "4", "60"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        ctl.send(enc("CLIENT", "KILL", "TYPE", "pubsub"))
        ctl.reader.reply()
        out, err = p.communicate(timeout=120)
        ctl.close()
        if p.returncode != 1 or "FAIL" not in out:
            fails.append("a killed subscriber: exit %d: %r %r" % (p.returncode, out, err))
    finally:
        rc, err = kv.stop()
        if rc != 0 or "Sanitizer" in err or "runtime error" in err:
            fails.append("percore kv exited %d: %s" % (rc, err[-3000:]))
    for f in fails:
        print("FAIL " + f)
    print("pubsub delivery test: %d failures" % len(fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
