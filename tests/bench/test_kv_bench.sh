#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The rows of percore kv beside redis-server (bench/kv/): each runs its
# server and redis-benchmark, reports redis-benchmark's rps, p50_ms and
# p99_ms with no errors, and its time per item is 1/rps. The scaling rows
# KV/<cmd>/P16/shards:N are listed for N = 1 .. usable CPUs - 1, run the
# same way, and stand in the report's "KV scaling" table. Skipped where
# the Redis packages are absent.
set -u
pc="$PC_BUILD_DIR/tools/percore/percore"
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null \
  || { echo "SKIP: redis-server and redis-benchmark are not installed"; exit 77; }

# Which scaling rows exist: every count up to 8 (then powers of two).
"$pc" bench --list --filter '^KV/.*/shards:' >"$tmp/list" \
  || { echo "FAIL: percore bench --list exited $?"; exit 1; }
"$py" - "$tmp/list" <<'PY' || exit 1
import os, sys
names = open(sys.argv[1]).read().split()
most = len(os.sched_getaffinity(0)) - 1
want = [f"KV/{c}/P16/shards:{n}" for c in ("SET", "GET", "INCR", "MSET10")
        for n in range(1, min(most, 8) + 1)]
missing = [n for n in want if n not in names]
if missing:
    sys.exit(f"FAIL: scaling rows missing from the list: {missing}")
PY

scale=
[ "$(nproc)" -ge 2 ] && scale='|KV/(SET|GET)/P16/shards:1'
"$pc" bench --filter "^((KV|Peer/redis)/(SET|GET)/P1$scale)\$" --repetitions 1 \
  --min-time 0.001 --quiet --out "$tmp/out.json" >/dev/null 2>"$tmp/err" \
  || { echo "FAIL: percore bench exited $?"; cat "$tmp/err"; exit 1; }
"$pc" report "$tmp/out.json" -o "$tmp" >/dev/null 2>>"$tmp/err" \
  || { echo "FAIL: percore report exited $?"; cat "$tmp/err"; exit 1; }
"$py" - "$tmp/out.json" "$tmp/report.md" "$scale" <<'PY' || { cat "$tmp/err"; exit 1; }
import json, sys
rows = {b["name"]: b for b in json.load(open(sys.argv[1]))["benchmarks"]
        if b["run_type"] == "iteration"}
want = ["KV/SET/P1", "KV/GET/P1", "Peer/redis/SET/P1", "Peer/redis/GET/P1"]
scaling = ["KV/SET/P16/shards:1", "KV/GET/P16/shards:1"] if sys.argv[3] else []
want += scaling
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
report = open(sys.argv[2]).read()
if scaling:
    table = report.split("### KV scaling", 1)
    if len(table) < 2:
        fail.append("the report has no KV scaling table")
    else:
        for cmd in ("SET/P16", "GET/P16"):
            if f"| `{cmd}` | 1 |" not in table[1]:
                fail.append(f"the KV scaling table has no {cmd} row at 1 shard")
if fail:
    sys.exit("FAIL: " + "; ".join(fail))
PY
echo ok
