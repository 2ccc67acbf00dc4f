#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# percore topo: output on this machine and on the fixtures, --json as data
# (read back with python3), placement errors (exit 1) and usage errors
# (exit 2), each with its one-line reason.
set -u
pc="$PC_BUILD_DIR/tools/percore/percore"
fx="$PC_SOURCE_DIR/tests/fixtures/topo"
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
fail=0

# run WANT_STATUS DESCRIPTION ARGS... : stdout in $out, stderr in $err
run() {
  local want=$1 what=$2; shift 2
  "$pc" topo "$@" >"$out" 2>"$err"; local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: $what: exit $got, want $want"; cat "$out" "$err"; fail=1; return 1
  fi
  echo "ok: $what"
}
has() { # file text description
  grep -qF -- "$2" "$1" || { echo "FAIL: $3: no '$2' in:"; cat "$1"; fail=1; }
}
# json PYTHON-EXPRESSION DESCRIPTION: the expression sees the output as d
json() {
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
    "$out" "$1" || { echo "FAIL: $2: $1 is false"; head -c 3000 "$out"; fail=1; }
}

run 0 "this machine" && {
  has "$out" "this machine:" "machine header"
  has "$out" "NUMA node 0" "node section"
  has "$out" "placement: policy auto" "placement section"
}
run 0 "this machine as JSON" --json && {
  json "len(d['topology']['cpus']) == $(getconf _NPROCESSORS_CONF)" "one entry per CPU"
  json "d['topology']['limits']['affinity'] is not None" "affinity recorded"
  json "d['placement']['shards'] == len(d['placement']['placement']) >= 1" "shards listed"
  json "all(s['cpu'] >= 0 for s in d['placement']['placement'])" "pinned shards"
}

# Fixture (1): 10 shards take the 8 P-cores, then 2 E-cores, and warn.
run 0 "hybrid, 10 shards" --xml "$fx/hybrid.xml" --shards 10 && {
  has "$out" "IntelCore 5600 MHz, IntelAtom 4300 MHz (fastest first)" "kinds line"
  has "$out" "warning: 2 of 10 shards run on slower cores" "E-core warning"
  has "$out" "(shared with CPUs 16-19)" "E-cluster L2"
}
run 0 "hybrid, 10 shards, JSON" --xml "$fx/hybrid.xml" --shards 10 --json && {
  json "[s['cpu'] for s in d['placement']['placement']] == [0,2,4,6,8,10,12,14,16,17]" "P then E"
  json "[s['kind'] for s in d['placement']['placement']][7:9] == ['IntelCore','IntelAtom']" "kinds"
  json "len(d['placement']['warnings']) == 1" "one warning"
  json "d['topology']['kinds_source'] == 'hwloc cpukinds'" "kinds from hwloc"
  json "d['topology']['cores'][0]['cpus'] == [0,1]" "SMT siblings of core 0"
}
run 1 "hybrid, 10 shards, pcore" --xml "$fx/hybrid.xml" --shards 10 --policy pcore &&
  has "$err" "percore topo: 10 shards but only 8 IntelCore cores are usable" "pcore reason"

# Fixture (2): 8 shards, 4 per node.
run 0 "server, 8 shards" --xml "$fx/server2s.xml" --shards 8 --json &&
  json "[s['node'] for s in d['placement']['placement']].count(1) == 4" "4 on node 1"
run 0 "server, spread" --xml "$fx/server2s.xml" --shards 4 --policy spread --json &&
  json "[s['cpu'] for s in d['placement']['placement']] == [0,16,1,17]" "round robin"

# Fixture (3), and the same container planned from outside.
run 0 "container" --xml "$fx/container.xml" --quota 2.5 --json && {
  json "[s['cpu'] for s in d['placement']['placement']] == [16,17]" "2 shards on node 1"
  json "d['topology']['limits']['quota_shards'] == 2" "quota caps"
  json "d['topology']['limits']['usable_cpus'] == '16-19'" "usable CPUs"
}
run 0 "planned container" --xml "$fx/server2s.xml" --allowed 16-19 --quota 2.5 &&
  has "$out" "CPU quota: 2.50 CPUs (default shards at most 2)" "quota line"
run 1 "container, unusable CPU" --xml "$fx/container.xml" --cpus 0-1 &&
  has "$err" "CPU 0 is not usable" "unusable reason"

# Fixture (4) and oversubscription.
run 1 "vm, 3 shards" --xml "$fx/vm2.xml" --shards 3 && {
  has "$err" "3 shards but only 2 usable CPUs" "oversubscription refused"
  has "$err" "--oversubscribe" "the error names the flag"
}
run 0 "vm, 3 shards oversubscribed" --xml "$fx/vm2.xml" --shards 3 --oversubscribe &&
  has "$out" "warning: 3 shards on 2 usable CPUs" "oversubscription warning"
run 0 "vm, off" --xml "$fx/vm2.xml" --policy off && has "$out" "not pinned" "off"
# auto on every CPU floats each shard over its node's CPUs; fewer stay put
run 0 "vm, every CPU" --xml "$fx/vm2.xml" && has "$out" "each free on its node's CPUs" "floats"
run 0 "vm, every CPU, JSON" --xml "$fx/vm2.xml" --json &&
  json "d['placement']['floating'] and d['placement']['pinned']" "floating"
run 0 "vm, one shard, JSON" --xml "$fx/vm2.xml" --shards 1 --json &&
  json "not d['placement']['floating']" "one shard stays on its CPU"
run 0 "vm, spread, JSON" --xml "$fx/vm2.xml" --policy spread --json &&
  json "not d['placement']['floating']" "spread pins"
run 1 "vm, CPU 99" --xml "$fx/vm2.xml" --cpus 0,99 &&
  has "$err" "CPU 99 does not exist" "nonexistent CPU"

# Unreadable topologies.
bad=$(mktemp); echo "<topology version=\"2.0\"><object" >"$bad"
run 1 "malformed XML" --xml "$bad" && has "$err" "not a valid hwloc XML topology" "reason"
rm -f "$bad"
run 1 "missing XML" --xml /nonexistent.xml && has "$err" "No such file" "reason"

# Usage errors: exit 2 and a one-line reason.
for args in "--shards abc" "--shards -1" "--policy fastest" "--cpus 1-" "--cpus 1 --policy auto" \
            "--policy list" "--quota -1" "--quota x" "--allowed 3-1" "extra" "--bogus" \
            "--cpus 1-0" "--cpus"; do
  # shellcheck disable=SC2086
  run 2 "usage: $args" $args && has "$err" "percore topo:" "reason for $args"
done
# An empty list is a usage error like a malformed one; errors name the option.
run 2 "usage: --cpus ''" --cpus '' && has "$err" "--cpus: the CPU list is empty" "empty list"
run 2 "usage: --allowed ''" --allowed '' && has "$err" "--allowed" "empty allowed list"
run 2 "usage: --bogus" --bogus && has "$err" "unknown option '--bogus'" "the option named"
run 2 "usage: --cpus without a value" --cpus && has "$err" "--cpus needs a value" "missing value"
run 0 "--help" --help && has "$out" "--oversubscribe" "help lists options"
exit $fail
