#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# percore report --json: the verdicts of the fixture's pairs, recomputed
# with scipy and numpy (check_fixture.py), and the summary's shape; the
# golden expected.md carries the same numbers.
. "$PC_SOURCE_DIR/tests/report/lib.sh"
py=/usr/bin/python3 # Debian's python, the one that sees python3-scipy
"$py" -c 'import scipy.stats, numpy' 2>/dev/null \
  || { echo "scipy is not installed for $py (python3-scipy): nothing to check with"; exit 77; }
"$py" "$PC_SOURCE_DIR/tests/report/check_fixture.py" "$pc" "$fx" || bad "the fixture's verdicts"

# the JSON replaces the list of paths on stdout and names the files written
"$pc" report "$fx/results.json" --json -o "$tmp/j" >"$tmp/j.json" || bad "report --json exited $?"
jq -e '.files == ["'"$tmp"'/j/report.md", "'"$tmp"'/j/report.html"]' "$tmp/j.json" >/dev/null \
  || bad "files: $(jq -c .files "$tmp/j.json")"
[ -f "$tmp/j/report.md" ] || bad "--json wrote no report.md"
keys=$(jq -c '[.pairs[0] | keys_unsorted[]]' "$tmp/j.json")
[ "$keys" = '["ours","against","kind","section","speedup","ci_low","ci_high","p_value","p_adjusted","verdict","decided","measurement_problem","text","n_ours","n_against","failed_ours","failed_against","client_bound","server_cpu"]' ] \
  || bad "pair fields are $keys"
# a row faster than the bare cache-line bounce is a reference: neither a
# win nor a measurement problem, and never counted
jq -e '.pairs[] | select(.ours == "CrossCore/RTT/idle:adaptive/affinity:on")
       | (.measurement_problem | not) and .kind == "reference" and .p_adjusted == null' \
  "$tmp/j.json" >/dev/null || bad "the cache-line bounce is still a limit"
jq -e '.summary.limit_pairs == 0 and .summary.below_limit == 0' "$tmp/j.json" >/dev/null \
  || bad "limit pairs counted"
# every counted pair carries an adjusted p no smaller than its own
jq -e '[.pairs[] | select(.kind == "peer" and .p_value != null)
        | .p_adjusted >= .p_value] | all' "$tmp/j.json" >/dev/null \
  || bad "adjusted p below the raw p"
# a failed repetition is counted and shown, never dropped silently
jq '(.benchmarks[] | select(.run_name == "SlabAlloc/64" and .repetition_index == 1)
     | .real_time) = 0' "$fx/results.json" >"$tmp/failed.json"
"$pc" report "$tmp/failed.json" --json -o "$tmp/f" >"$tmp/f.json" || bad "report of a failed rep"
jq -e '[.pairs[] | select(.ours == "SlabAlloc/64") | .failed_ours == 1 and .n_ours == 4] | all' \
  "$tmp/f.json" >/dev/null || bad "a failed repetition is not counted"
grep -qF '(1 of 5 failed)' "$tmp/f/report.md" || bad "the table does not show the failed repetition"
# no variant or reference is counted anywhere: the summary's pairs leave
# them out
jq -e '.summary.pairs == ([.pairs[] | select(.kind == "peer" or .kind == "limit")] | length)
       and .summary.variants == ([.pairs[] | select(.kind == "variant" or .kind == "reference")]
                                 | length)' \
  "$tmp/j.json" >/dev/null || bad "variants counted as pairs"
# a margin that is wider decides more; a bad margin is a usage error
"$pc" report "$fx/results.json" --json --margin 0.3 -o "$tmp/k" >"$tmp/k.json" \
  || bad "--margin 0.3 exited $?"
[ "$(jq .summary.undecided "$tmp/k.json")" -eq 0 ] || bad "--margin 0.3 leaves pairs undecided"
"$pc" report "$fx/results.json" --margin 0 -o "$tmp/k" >/dev/null 2>"$tmp/k.err"; st=$?
[ $st -eq 2 ] && grep -q -- '--margin' "$tmp/k.err" || bad "--margin 0: exit $st"
[ $fail -eq 0 ] && echo "ok: report --json"
exit $fail
