#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# In a real cgroup: put a child process into a new cpuset cgroup holding one
# CPU and check `percore topo --json` finds only that CPU usable (and the
# cgroup's cpuset recorded); then remove the cgroup. Cgroup v1 or v2,
# whichever this machine lets us create; exit 77 with the reason otherwise.
set -u
pc="$PC_BUILD_DIR/tools/percore/percore"
skip() { echo "SKIP: $*"; exit 77; }

[ "$(id -u)" -eq 0 ] || skip "needs root to create a cgroup"
cpus=$(python3 -c 'import os; print(" ".join(map(str, sorted(os.sched_getaffinity(0)))))')
set -- $cpus
[ $# -ge 2 ] || skip "only one usable CPU: a one-CPU cpuset would prove nothing"
cpu=${!#}   # the last usable CPU, so "usable" cannot be CPU 0 by accident
name="pc_topo_test.$$"
cg="" out=$(mktemp) enabled=""
cleanup() {
  [ -n "$cg" ] && rmdir "$cg" 2>/dev/null
  # leave the v2 root as we found it
  [ -n "$enabled" ] && echo -cpuset >"$enabled/cgroup.subtree_control" 2>/dev/null
  rm -f "$out"
}
trap cleanup EXIT

# Mount points of one file system type from mountinfo, with super options:
# "point opts" per line. Optional fields end at " - ", so fields are found
# relative to that separator.
mounts() {
  awk -v want="$1" '{ for (i = 7; i <= NF && $i != "-"; i++) ;
                      if ($(i + 1) == want) print $5, $(i + 3) }' /proc/self/mountinfo
}

# v2: a cgroup2 mount whose root offers cpuset to its children.
try_v2() {
  local root
  root=$(mounts cgroup2 | awk '{ print $1; exit }')
  [ -n "$root" ] && grep -qw cpuset "$root/cgroup.controllers" 2>/dev/null || return 1
  if ! grep -qw cpuset "$root/cgroup.subtree_control"; then
    echo +cpuset >"$root/cgroup.subtree_control" 2>/dev/null || return 1
    enabled=$root
  fi
  mkdir "$root/$name" 2>/dev/null || return 1
  cg="$root/$name"
  echo "$cpu" >"$cg/cpuset.cpus" 2>/dev/null || return 1
}
# v1: the cpuset hierarchy; a child needs both cpus and mems set.
try_v1() {
  local root
  root=$(mounts cgroup | awk '$2 ~ /(^|,)cpuset(,|$)/ { print $1; exit }')
  [ -n "$root" ] || return 1
  mkdir "$root/$name" 2>/dev/null || return 1
  cg="$root/$name"
  echo "$cpu" >"$cg/cpuset.cpus" 2>/dev/null && cat "$root/cpuset.mems" >"$cg/cpuset.mems" 2>/dev/null
}
if try_v2; then version=2
else
  [ -n "$cg" ] && rmdir "$cg" 2>/dev/null; cg=""
  try_v1 || skip "cannot create a cpuset cgroup (v2: no cpuset controller to delegate; v1: no writable cpuset hierarchy)"
  version=1
fi
echo "cgroup v$version: $cg holds CPU $cpu"

# The child moves itself in, then becomes percore.
sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" topo --json' _ "$cg" "$pc" >"$out"
status=$?
[ $status -eq 0 ] || { echo "FAIL: percore topo exited $status"; cat "$out"; exit 1; }
python3 - "$out" "$cpu" "$version" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
cpu, version = int(sys.argv[2]), int(sys.argv[3])
lim = d["topology"]["limits"]
usable = [c["cpu"] for c in d["topology"]["cpus"] if c["usable"]]
checks = [
    (usable == [cpu], "usable CPUs %s, want [%d]" % (usable, cpu)),
    (lim["usable_cpus"] == str(cpu), "usable_cpus %s" % lim["usable_cpus"]),
    (lim["cpuset"] == str(cpu), "cgroup cpuset %s" % lim["cpuset"]),
    (lim["cgroup_version"] == version, "cgroup version %s" % lim["cgroup_version"]),
    ([s["cpu"] for s in d["placement"]["placement"]] == [cpu], "placement"),
]
bad = [msg for ok, msg in checks if not ok]
for msg in bad:
    print("FAIL:", msg)
sys.exit(1 if bad else 0)
PY
echo "ok: only CPU $cpu usable inside the cgroup"
