#!/usr/bin/env bash
# The report of a real run: percore bench writes the noise experiment
# pinned and unpinned, once more with --pm-qos, and percore report reads
# both files as make bench does; percore compare reads them too.
. "$PC_SOURCE_DIR/tests/report/lib.sh"

run=(--filter '^(Noise/|Peer/malloc/64$)' --affinity both --min-time 0.01 --repetitions 3 --quiet)
"$pc" bench "${run[@]}" --out "$tmp/a.json" >/dev/null || { echo "FAIL: percore bench"; exit 1; }
"$pc" bench "${run[@]}" --pm-qos --out "$tmp/q.json" >/dev/null 2>"$tmp/q.err" \
  || { echo "FAIL: percore bench --pm-qos"; cat "$tmp/q.err"; exit 1; }
"$pc" report "$tmp/a.json" "$tmp/q.json" -o "$tmp/r" >/dev/null 2>"$tmp/r.err" \
  || { echo "FAIL: percore report"; cat "$tmp/r.err"; exit 1; }
md="$tmp/r/report.md"
for cfg in unpinned pinned; do
  grep -qE "^\| \`Noise/ArraySum\` \| $cfg \| 3 \|" "$md" || bad "no $cfg row of 3 repetitions"
done
if jq -e '.percore.pm_qos.held' "$tmp/q.json" >/dev/null 2>&1; then
  for cfg in 'unpinned + PM QoS' 'pinned + PM QoS'; do
    grep -qF "| \`Noise/ArraySum\` | $cfg | 3 |" "$md" || bad "no '$cfg' row"
  done
  echo "ok: four noise configurations"
else
  # the request could not be made here (no /dev/cpu_dma_latency, no root):
  # the rows must not claim it, and the report must say so
  grep -q 'PM QoS was requested but not held' "$md" || bad "a failed PM QoS request went unmentioned"
  grep -q 'pm_qos:on' "$md" && bad "rows labelled PM QoS without the request held"
  echo "ok: PM QoS could not be held here, and the report says so"
fi
grep -qF '`Peer/malloc/64`' "$md" || bad "Peer/malloc/64 is missing"
grep -qF '| **Git revision** |' "$md" || bad "no git revision in System"

"$pc" compare "$tmp/a.json" "$tmp/a.json" --json >"$tmp/self.json" || bad "compare with itself"
# identical samples: never a verdict of change
jq -e '[.rows[].verdict] | all(. == "unchanged" or . == "inconclusive")' "$tmp/self.json" \
  >/dev/null || bad "a run compared with itself changed"
jq -e '.summary.total == 3' "$tmp/self.json" >/dev/null || bad "compare did not see 3 benchmarks"
exit $fail
