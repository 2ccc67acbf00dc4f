#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The rows of percore kv beside redis-server (bench/kv/): each runs its
# server and redis-benchmark, reports redis-benchmark's rps, p50_ms and
# p99_ms with no errors, and its time per item is 1/rps. Skipped where the
# Redis packages are absent.
set -u
pc="$PC_BUILD_DIR/tools/percore/percore"
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null \
  || { echo "SKIP: redis-server and redis-benchmark are not installed"; exit 77; }

"$pc" bench --filter '^(KV|Peer/redis)/(SET|GET)/P1$' --repetitions 1 --min-time 0.001 \
  --json --quiet >"$tmp/out.json" 2>"$tmp/err" \
  || { echo "FAIL: percore bench exited $?"; cat "$tmp/err"; exit 1; }
"$py" - "$tmp/out.json" <<'PY' || { cat "$tmp/err"; exit 1; }
import json, sys
rows = {b["name"]: b for b in json.load(open(sys.argv[1]))["benchmarks"]
        if b["run_type"] == "iteration"}
want = ["KV/SET/P1", "KV/GET/P1", "Peer/redis/SET/P1", "Peer/redis/GET/P1"]
fail = [f"{n}: missing" for n in want if n not in rows]
for n in want:
    r = rows.get(n)
    if not r:
        continue
    if r.get("errors") != 0:
        fail.append(f"{n}: errors {r.get('errors')}")
    if not r.get("rps", 0) > 0 or not 0 < r.get("p50_ms", 0) <= r.get("p99_ms", 0):
        fail.append(f"{n}: rps {r.get('rps')} p50_ms {r.get('p50_ms')} p99_ms {r.get('p99_ms')}")
    elif abs(r["items_per_second"] / r["rps"] - 1) > 0.01:
        fail.append(f"{n}: items/s {r['items_per_second']} is not redis-benchmark's rps {r['rps']}")
if fail:
    sys.exit("FAIL: " + "; ".join(fail))
PY
echo ok
