#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The rows of percore kv beside redis-server (bench/kv/): each runs its
# server and redis-benchmark, reports redis-benchmark's rps, p50_ms and
# p99_ms with no failed repetition, and its time per item is 1/rps. Each
# records the configuration it ran (shards, -r keyspace, pinning), which
# must be the one its name says, with every thread of a pinned server held
# on the server's CPUs, the server's CPU per request and the client's
# share of its CPU. The scaling rows
# KV/<cmd>/P16/shards:N are listed for N = 1 .. usable CPUs - 1, run the
# same way, and stand in the report's "KV scaling" table. The other
# types' rows (redis-benchmark's default list) are in the full suite only,
# and run the same way (a pop after its unmeasured push). Skipped where
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

# The other types' rows: listed with --full only.
"$pc" bench --list --filter '^KV/LPOP/' >"$tmp/list" 2>/dev/null
"$pc" bench --list --full --filter '^KV/LPOP/' >"$tmp/list.full" 2>/dev/null
[ ! -s "$tmp/list" ] && grep -qx 'KV/LPOP/P1/keys:random' "$tmp/list.full" \
  || { echo "FAIL: KV/LPOP rows not in the full suite alone:"; cat "$tmp/list" \
       "$tmp/list.full"; exit 1; }

scale=
[ "$(nproc)" -ge 2 ] && scale='|KV/(SET|GET)/P16/shards:1'
# One key on one shard, random keys on one shard, random keys on every
# CPU, each beside redis-server under the same options; twice, so a row
# is more than one run.
rows='GET/P1|GET/P16/keys:random|GET/P1/keys:random/cpus:all|LPOP/P1/keys:random'
rows+='|LRANGE_100/P16/keys:random|SET/P1/keys:random/appendfsync:always'
PC_BENCH_KV_DIVIDE=10 "$pc" bench --full --filter "^((KV|Peer/redis)/($rows)$scale)\$" --repetitions 2 \
  --min-time 0.001 --quiet --out "$tmp/out.json" >/dev/null 2>"$tmp/err" \
  || { echo "FAIL: percore bench exited $?"; cat "$tmp/err"; exit 1; }
"$pc" report "$tmp/out.json" -o "$tmp" >/dev/null 2>>"$tmp/err" \
  || { echo "FAIL: percore report exited $?"; cat "$tmp/err"; exit 1; }
"$py" - "$tmp/out.json" "$tmp/report.md" "$scale" <<'PY' || { cat "$tmp/err"; exit 1; }
import json, os, sys
every = json.load(open(sys.argv[1]))["benchmarks"]
rows = {}
failed = [b["name"] for b in every if b.get("error_occurred")]
for b in every:
    if b["run_type"] == "iteration" and not b.get("error_occurred"):
        rows.setdefault(b["name"], []).append(b)
cpus = len(os.sched_getaffinity(0))
pinned = 1 if cpus >= 2 else 0
# name: (shards, keyspace, pinned); redis-server is one shard
want = {}
for srv in ("KV", "Peer/redis"):
    want[f"{srv}/GET/P1"] = (1, 0, pinned)
    want[f"{srv}/GET/P16/keys:random"] = (1, 100000, pinned)
    want[f"{srv}/GET/P1/keys:random/cpus:all"] = (cpus if srv == "KV" else 1, 100000, 0)
    want[f"{srv}/LPOP/P1/keys:random"] = (1, 100000, pinned)
    want[f"{srv}/LRANGE_100/P16/keys:random"] = (1, 100000, pinned)
    want[f"{srv}/SET/P1/keys:random/appendfsync:always"] = (1, 100000, pinned)
if sys.argv[3]:
    for t in ("SET", "GET"):
        want[f"KV/{t}/P16/shards:1"] = (1, 100000, 1)
fail = [f"{n}: a repetition failed" for n in failed]
fail += [f"{n}: missing" for n in want if n not in rows]
for n, (shards, keyspace, pin) in want.items():
    for r in rows.get(n, []):
        got = (r.get("shards"), r.get("keyspace"), r.get("pinned"))
        if got != (shards, keyspace, pin):
            fail.append(f"{n}: shards, keyspace, pinned {got}, not {(shards, keyspace, pin)}")
        # every thread of a pinned server (kv's log writer and watchdog too)
        if r.get("server_threads_unpinned") != 0:
            fail.append(f"{n}: {r.get('server_threads_unpinned')} server threads may leave "
                        "the server's CPUs")
        if not r.get("server_cpu_ns_per_req", 0) > 0:
            fail.append(f"{n}: server_cpu_ns_per_req {r.get('server_cpu_ns_per_req')}")
        if not 0 < r.get("client_util", 0) <= 1.05:
            fail.append(f"{n}: client_util {r.get('client_util')} is not a share of the CPU")
        if not r.get("rps", 0) > 0 or not 0 < r.get("p50_ms", 0) <= r.get("p99_ms", 0):
            fail.append(f"{n}: rps {r.get('rps')} p50_ms {r.get('p50_ms')} "
                        f"p99_ms {r.get('p99_ms')}")
        elif abs(r["items_per_second"] / r["rps"] - 1) > 0.01:
            fail.append(f"{n}: items/s {r['items_per_second']} is not redis-benchmark's "
                        f"rps {r['rps']}")
        # the appendfsync rows' servers kept files, the others none
        aof = r.get("aof_bytes")
        if ("appendfsync" in n) != (aof is not None) or (aof is not None and aof <= 0):
            fail.append(f"{n}: aof_bytes {aof}")
    if n in rows and len(rows[n]) != 2:
        fail.append(f"{n}: {len(rows[n])} repetitions, not 2")
report = open(sys.argv[2]).read()
if sys.argv[3]:
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
