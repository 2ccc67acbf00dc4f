#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The counters every echo row records beside its time (bench/net/): a
# short filtered `percore bench --full` run of our echo rows (frames one
# at a time, and in bursts while sleeping) and the busy-polling peer, each with server_cpu_ns_per_req above 0 and
# client_util, the generator's CPU over its timed part, in (0, 1.05]
# (slack for clocks read a moment apart). On a loaded machine the
# generator is preempted and its share stays well under 1: the test
# asserts that the figures exist and make sense, never how large they are.
set -u
pc="$PC_BUILD_DIR/tools/percore/percore"
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# pinned rows where there are two cores to pin to, else the unpinned ones
rows='^(SessionEcho/64(/frames:burst/idle:sleep)?|Peer/epoll_busy/64)/affinity:o[nf]+$'
"$pc" bench --full --list --filter "$rows" >"$tmp/list" \
  || { echo "FAIL: percore bench --list exited $?"; exit 1; }
[ -s "$tmp/list" ] || { echo "FAIL: no echo rows match $rows"; exit 1; }
# a few thousand round trips a repetition, not the one that --min-time
# 0.001 would leave on a slow build
"$pc" bench --full --filter "$rows" --repetitions 2 --min-time 0.02 --quiet \
  --out "$tmp/out.json" >/dev/null 2>"$tmp/err" \
  || { echo "FAIL: percore bench exited $?"; cat "$tmp/err"; exit 1; }
"$py" - "$tmp/out.json" "$tmp/list" <<'PY' || { cat "$tmp/err"; exit 1; }
import json, sys
rows = [b for b in json.load(open(sys.argv[1]))["benchmarks"]
        if b["run_type"] == "iteration"]
want = set(open(sys.argv[2]).read().split())
fails = []
seen = set()
for b in rows:
    name = b["name"]
    seen.add(name)
    if b.get("error_occurred"):
        fails.append("%s: failed: %s" % (name, b.get("error_message")))
        continue
    cpu, util = b.get("server_cpu_ns_per_req"), b.get("client_util")
    if not isinstance(cpu, (int, float)) or not cpu > 0:
        fails.append("%s: server_cpu_ns_per_req %r, want above 0" % (name, cpu))
    if not isinstance(util, (int, float)) or not 0 < util <= 1.05:
        fails.append("%s: client_util %r, want in (0, 1.05]" % (name, util))
    print("%s: %d round trips, server %.0f ns CPU a request, client %.2f busy"
          % (name, b["iterations"], cpu or 0, util or 0))
if seen != want:
    fails.append("rows %s, want %s" % (sorted(seen), sorted(want)))
for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
PY
echo "ok: echo rows carry plausible server CPU and client busy share"
