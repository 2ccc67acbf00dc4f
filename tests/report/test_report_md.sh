#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# percore report on the fixture results: the Markdown matches the expected
# file byte for byte, twice in a row (nothing in it depends on when or
# where it runs), and the HTML is self-contained.
. "$PC_SOURCE_DIR/tests/report/lib.sh"

"$pc" report "$fx/results.json" "$fx/noise-pmqos.json" --tune "$fx/tune.json" -o "$tmp/a" >"$tmp/out" \
  || { echo "FAIL: percore report exited $?"; exit 1; }
printf '%s\n' "$tmp/a/report.md" "$tmp/a/report.html" | diff - "$tmp/out" >/dev/null \
  || bad "stdout does not list the two files written: $(cat "$tmp/out")"
if diff -u "$fx/expected.md" "$tmp/a/report.md"; then
  echo "ok: report.md matches tests/fixtures/report/expected.md"
else
  bad "report.md differs from the expected file (diff above)"
fi

# the same inputs from another folder and file name give the same bytes
mkdir -p "$tmp/b"
cp "$fx/results.json" "$tmp/b/results.json"
cp "$fx/noise-pmqos.json" "$fx/tune.json" "$tmp/b/"
(cd "$tmp/b" && "$pc" report results.json noise-pmqos.json --tune tune.json >/dev/null) \
  || bad "report without -o failed"
cmp -s "$tmp/a/report.md" "$tmp/b/report.md" || bad "report.md differs between two runs"
cmp -s "$tmp/a/report.html" "$tmp/b/report.html" || bad "report.html differs between two runs"
[ -f "$tmp/b/report.html" ] && echo "ok: without -o the report lands beside the results"

h="$tmp/a/report.html"
for want in '<!DOCTYPE html>' '<style>' '<svg class="chart"' '<polyline' '<circle' \
            '<table>' 'Micro benchmarks' 'Architecture scaling' 'Noise experiment'; do
  grep -qF -- "$want" "$h" || bad "report.html lacks $want"
done
# nothing is fetched: no scripts, no links, no sources, only in-page anchors
for never in '<script' '<link' 'src=' 'url(' '@import' 'http:' 'https:'; do
  grep -qiF -- "$never" "$h" && bad "report.html contains '$never'"
done
grep -o 'href="[^"]*"' "$h" | grep -v '^href="#' && bad "report.html links outside itself"
[ "$fail" -eq 0 ] && echo "ok: report.html is self-contained"

# the summary counts what the fixture holds
grep -qF -- '- 54 benchmarks; **9 noisy**' "$tmp/a/report.md" || bad "noisy count"
grep -qF -- 'quietest **pinned + PM QoS**' "$tmp/a/report.md" || bad "noise verdict"

# one input alone: no PM QoS rows, and the report says so
"$pc" report "$fx/results.json" -o "$tmp/c" >/dev/null || bad "report of one file failed"
grep -q 'PM QoS was not measured both ways' "$tmp/c/report.md" \
  || bad "a single file does not say PM QoS was not compared"
grep -q 'pm_qos:on' "$tmp/c/report.md" && bad "pm_qos rows without the second file"
# without --tune the tune steps are judged from the audit, and a step the
# audit could not see is listed as not applicable, not left out
grep -qF '| Performance CPU governor | `cpu.governor` | unknown | not applicable here (not exposed) |' \
  "$tmp/c/report.md" || bad "tune steps from the audit"

# a PM QoS run that could not hold its request measured without it
jq '.percore.pm_qos.held = false | .percore.pm_qos.reason = "Permission denied"' \
  "$fx/noise-pmqos.json" >"$tmp/unheld.json"
"$pc" report "$fx/results.json" "$tmp/unheld.json" -o "$tmp/e" >/dev/null 2>"$tmp/e.err" \
  || bad "report with an unheld PM QoS file failed"
grep -qF '**PM QoS was requested but not held** in input 2 (Permission denied)' "$tmp/e/report.md" \
  || bad "an unheld PM QoS request went unmentioned"
grep -q 'pm_qos:on\|+ PM QoS' "$tmp/e/report.md" && bad "rows labelled PM QoS without the request held"
grep -q 'already loaded from an earlier file, skipped' "$tmp/e.err" \
  || bad "the duplicate rows of the unheld run were not reported"

# with a baseline the comparison appears
"$pc" report "$fx/compare-new.json" --baseline "$fx/compare-base.json" -o "$tmp/d" >/dev/null \
  || bad "report with --baseline failed"
grep -qF '## Comparison with the baseline' "$tmp/d/report.md" || bad "no comparison section"
grep -qF '**1 improved, 4 regressed, 3 unchanged, 2 inconclusive**' "$tmp/d/report.md" \
  || bad "comparison summary"
exit $fail
