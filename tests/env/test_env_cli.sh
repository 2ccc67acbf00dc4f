#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# percore env / tune / reset from the command line: JSON that parses and
# holds every id, fixture roots, usage errors, a tune/reset round trip on a
# copy of a fixture, and tune on the real machine without root (it must
# explain and exit 1; as root we drop to nobody, or else show the plan
# with --dry-run).
set -u
pc="$PC_BUILD_DIR/tools/percore/percore"
fix="$PC_SOURCE_DIR/tests/fixtures/env"
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok()  { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

ids="vm.hypervisor cpu.model cpu.smt cpu.governor cpu.turbo cpu.idle_states cpu.pm_qos mm.thp
mm.swap kernel.aslr kernel.nmi_watchdog kernel.perf_event_paranoid sched.isolated irq.irqbalance
cgroup.cpuset cgroup.cpu_quota cgroup.memory_limit load.busy_processes storage.rotational
storage.scheduler storage.nr_requests storage.write_cache storage.queues storage.nvme_apst storage.pcie_aspm"

# --json on this machine: an array with every id once, in order, each with
# a status among ok/warn/unknown and string value and fix.
if "$pc" env --json >"$tmp/env.json" 2>"$tmp/env.err"; then
  if $py - "$tmp/env.json" $ids <<'PY'
import json, sys
items = json.load(open(sys.argv[1]))
want = sys.argv[2:]
assert [i["id"] for i in items] == want, [i["id"] for i in items]
for i in items:
    assert sorted(i) == ["fix", "id", "status", "value"], i
    assert i["status"] in ("ok", "warn", "unknown"), i
    assert isinstance(i["value"], str) and i["value"], i
    assert isinstance(i["fix"], str), i
    assert i["status"] != "warn" or i["fix"], i
PY
  then ok "env --json parses and has every id"; else bad "env --json content"; fi
else
  bad "env --json exit status"; cat "$tmp/env.err"
fi

# text on this machine: every id with a status
"$pc" env >"$tmp/env.txt" || bad "env exit status"
for id in $ids; do
  grep -Eq "^(ok|warn|unknown) +$id " "$tmp/env.txt" || bad "env text lacks $id"
done
ok "env text lists every id"

# --root on a fixture reads the fixture, not this machine
out=$("$pc" env --root "$fix/container-v2") || bad "env --root exit status"
grep -Eq '^warn +cgroup.cpu_quota +1.50 CPUs' <<<"$out" && ok "env --root reads the fixture" \
  || bad "env --root: $out"
grep -Eq '^ok +cpu.pm_qos .*held by pid 40 \(latencyd\)' <<<"$out" || bad "env --root pm_qos"
"$pc" env --root "$fix/vm" --json | $py -c '
import json, sys
items = json.load(sys.stdin)
st = {i["id"]: i["status"] for i in items}
assert st["vm.hypervisor"] == "warn" and st["cpu.governor"] == "unknown", st
' && ok "env --root vm --json" || bad "env --root vm --json"

# --path audits the disk that holds the folder; without it, unknown
"$pc" env --json --path "$tmp" | $py -c '
import json, sys
st = {i["id"]: i for i in json.load(sys.stdin)}
assert "no --path given" not in st["storage.scheduler"]["value"], st["storage.scheduler"]
' && ok "env --path audits the folder's disk" || bad "env --path"
"$pc" env | grep -Eq '^unknown +storage.scheduler +no --path given' || bad "env without --path"

# usage errors: exit 2 with a one-line reason
for args in "env --bogus" "env --root" "env --path" "env extra" "tune --nope" "reset --turbo-off" "tune --state"; do
  "$pc" $args >/dev/null 2>"$tmp/err"; rc=$?
  [ $rc -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && ok "usage error: $args" \
    || { bad "usage error '$args': exit $rc"; cat "$tmp/err"; }
done

# percore bench runs the audit first and stores it as percore.audit
if "$pc" bench --filter '^Peer/memcpy/4096$' --repetitions 2 --min-time 0.01 --json --quiet \
     >"$tmp/bench.json" 2>"$tmp/bench.err"; then
  $py - "$tmp/bench.json" $ids <<'PY' && ok "bench stores the audit as percore.audit" || bad "bench percore.audit"
import json, sys
audit = json.load(open(sys.argv[1]))["percore"]["audit"]
assert [i["id"] for i in audit] == sys.argv[2:], audit
assert all(i["status"] in ("ok", "warn", "unknown") for i in audit), audit
PY
else
  bad "bench for the audit check"; cat "$tmp/bench.err"
fi

# tune / reset round trip on a copy of the desktop fixture
cp -a "$fix/desktop" "$tmp/desk"
"$pc" tune --root "$tmp/desk" --turbo-off >"$tmp/tune.txt" || bad "tune on a fixture copy"
grep -Eq '^cpu.governor +applied +powersave -> performance \(CPUs 0-7\)' "$tmp/tune.txt" \
  || { bad "tune report"; cat "$tmp/tune.txt"; }
[ -f "$tmp/desk/var/tmp/percore-tune.state" ] || bad "tune saved no state"
"$pc" env --root "$tmp/desk" | grep -Eq '^ok +cpu.governor +performance on 0-7' || bad "tuned governor"
"$pc" reset --root "$tmp/desk" --json >"$tmp/reset.json" || bad "reset on a fixture copy"
$py -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["state_removed"] and all(s["result"] == "restored" for s in j["steps"]), j' \
  "$tmp/reset.json" || bad "reset --json"
rm -rf "$tmp/desk/var"
diff -r "$fix/desktop" "$tmp/desk" && ok "tune/reset round trip restores the fixture" \
  || bad "round trip left differences"
# Nothing to reset is success, said in words and in JSON.
"$pc" reset --root "$tmp/desk" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] && grep -q "nothing to reset" "$tmp/out" && ok "reset without state: exit 0, explained" \
  || { bad "reset without state: exit $rc"; cat "$tmp/out" "$tmp/err"; }
"$pc" reset --root "$tmp/desk" --dry-run >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] && grep -q "nothing to reset" "$tmp/out" && ok "reset --dry-run without state: exit 0" \
  || { bad "reset --dry-run without state: exit $rc"; cat "$tmp/out" "$tmp/err"; }
"$pc" reset --root "$tmp/desk" --json >"$tmp/reset.json" 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] && $py -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["nothing_to_reset"] is True and j["steps"] == [] and not j["state_removed"], j' \
  "$tmp/reset.json" && ok "reset --json without state: nothing_to_reset" \
  || { bad "reset --json without state: exit $rc"; cat "$tmp/reset.json" "$tmp/err"; }
"$pc" reset --root "$tmp/desk" --dry-run --json >"$tmp/reset.json" 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] && $py -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["nothing_to_reset"] and j["dry_run"], j' \
  "$tmp/reset.json" && ok "reset --dry-run --json without state" \
  || { bad "reset --dry-run --json without state: exit $rc"; cat "$tmp/reset.json" "$tmp/err"; }

# not applicable steps are listed (VM exposes nothing)
cp -a "$fix/vm" "$tmp/vm"
out=$("$pc" tune --root "$tmp/vm" --turbo-off --smt-off) || bad "tune on the VM fixture"
[ "$(grep -c 'not applicable' <<<"$out")" -eq 6 ] && ok "VM: six steps not applicable" \
  || bad "VM tune: $out"

# the real machine without root: explain, change nothing, exit 1
if [ "$(id -u)" -ne 0 ]; then
  "$pc" tune >"$tmp/out" 2>"$tmp/err"; rc=$?
  [ $rc -eq 1 ] && grep -q "only root may change them" "$tmp/err" && ok "tune without root: exit 1, explained" \
    || bad "tune without root: exit $rc"
elif command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
  setpriv --reuid=65534 --regid=65534 --clear-groups "$pc" tune >"$tmp/out" 2>"$tmp/err"; rc=$?
  [ $rc -eq 1 ] && grep -q "only root may change them" "$tmp/err" && grep -q "would apply\|already set\|not applicable" "$tmp/out" \
    && ok "tune as nobody: exit 1, the plan shown, explained" \
    || { bad "tune as nobody: exit $rc"; cat "$tmp/out" "$tmp/err"; }
  # the audit needs no root: as nobody every id is there, and the PM QoS
  # holders that cannot be seen make that check unknown, not ok
  setpriv --reuid=65534 --regid=65534 --clear-groups "$pc" env --json >"$tmp/nobody.json" 2>"$tmp/err" \
    && $py - "$tmp/nobody.json" $ids <<'PY' && ok "env as nobody: every id, pm_qos unknown" || bad "env as nobody"
import json, sys
items = json.load(open(sys.argv[1]))
assert [i["id"] for i in items] == sys.argv[2:], items
qos = [i for i in items if i["id"] == "cpu.pm_qos"][0]
assert qos["status"] == "unknown" and "root" in qos["fix"], qos
PY
else
  echo "note: running as root and cannot drop privileges: checking the plan via --dry-run"
fi
"$pc" tune --dry-run >"$tmp/out" || bad "tune --dry-run on this machine"
grep -q "dry run: nothing was written" "$tmp/out" && ok "tune --dry-run on this machine" || bad "dry run text"
exit $fail
