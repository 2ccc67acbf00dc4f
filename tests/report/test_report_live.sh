#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The report of a real run, as make bench makes it: percore bench writes
# the noise experiment pinned and unpinned, with and without the PM QoS
# request (Noise/ArraySum/pm_qos:on, held by the benchmark itself in the
# same run), and percore report reads it; percore compare reads it too.
. "$PC_SOURCE_DIR/tests/report/lib.sh"

run=(--filter '^(Noise/|Peer/malloc/64$)' --affinity both --min-time 0.01 --repetitions 3 --quiet)
"$pc" bench "${run[@]}" --out "$tmp/a.json" >/dev/null 2>"$tmp/a.err" \
  || { echo "FAIL: percore bench"; cat "$tmp/a.err"; exit 1; }
"$pc" report "$tmp/a.json" -o "$tmp/r" >/dev/null 2>"$tmp/r.err" \
  || { echo "FAIL: percore report"; cat "$tmp/r.err"; exit 1; }
md="$tmp/r/report.md"
for cfg in unpinned pinned; do
  grep -qE "^\| \`Noise/ArraySum\` \| $cfg \| 3 \|" "$md" || bad "no $cfg row of 3 repetitions"
done
if jq -e '[.benchmarks[].name] | any(test("pm_qos:on"))' "$tmp/a.json" >/dev/null; then
  for cfg in 'unpinned + PM QoS' 'pinned + PM QoS'; do
    grep -qF "| \`Noise/ArraySum\` | $cfg | 3 |" "$md" || bad "no '$cfg' row"
  done
  echo "ok: four noise configurations from one run"
else
  # the request could not be made here (no /dev/cpu_dma_latency, no root):
  # the rows are skipped with the reason, and the report lists them
  jq -e '[.percore.skipped[].name] | any(test("^Noise/ArraySum/pm_qos:on"))' "$tmp/a.json" \
    >/dev/null || bad "the PM QoS rows are neither measured nor skipped"
  grep -qF '| `Noise/ArraySum/pm_qos:on/affinity:on` |' "$md" \
    || bad "the report does not list the skipped PM QoS rows"
  grep -q '+ PM QoS' "$md" && bad "rows labelled PM QoS without the request held"
  echo "ok: PM QoS could not be held here, and the report says so"
fi
grep -qF '`Peer/malloc/64`' "$md" || bad "Peer/malloc/64 is missing"
grep -qF '| **Git revision** |' "$md" || bad "no git revision in System"

"$pc" compare "$tmp/a.json" "$tmp/a.json" --json >"$tmp/self.json" || bad "compare with itself"
# identical samples: never a verdict of change
jq -e '[.rows[].verdict] | all(. == "unchanged" or . == "inconclusive")' "$tmp/self.json" \
  >/dev/null || bad "a run compared with itself changed"
n=$(jq '[.benchmarks[] | select(.run_type == "iteration") | .name] | unique | length' "$tmp/a.json")
jq -e --argjson n "$n" '.summary.total == $n' "$tmp/self.json" >/dev/null \
  || bad "compare did not see the $n benchmarks of the run"
exit $fail
