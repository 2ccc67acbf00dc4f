#!/usr/bin/env bash
# percore compare on two fixture runs with known differences: a clear shift
# with a low CV is significant in the right direction, a shift inside the
# noise is not, too few repetitions are inconclusive; and the exit status
# follows --fail-on-regression.
. "$PC_SOURCE_DIR/tests/report/lib.sh"

"$pc" compare "$fx/compare-base.json" "$fx/compare-new.json" --json >"$tmp/c.json" \
  || bad "compare exited $?"
verdict() { jq -r --arg n "$1" '.rows[] | select(.name == $n) | "\(.verdict) \(.noisy)"' "$tmp/c.json"; }
check() { # name verdict noisy
  local got; got=$(verdict "$1")
  [ "$got" = "$2 $3" ] && echo "ok: $1: $2 (noisy $3)" || bad "$1: got '$got', want '$2 $3'"
}
check Clear/Faster improved false
check Clear/Slower regressed false
check Noisy/Inside unchanged true
check Few/One inconclusive false
check Few/Three inconclusive false
check Tied/Values unchanged true

# exactly the fields the interface promises, in that order
keys=$(jq -c '[.rows[0] | keys_unsorted[]]' "$tmp/c.json")
[ "$keys" = '["name","base_median","new_median","change_pct","p_value","verdict","noisy"]' ] \
  || bad "row fields are $keys"
jq -e '.rows[] | select(.name == "Few/One") | .p_value == null' "$tmp/c.json" >/dev/null \
  || bad "Few/One has a p-value without a test"
jq -e '.rows[] | select(.name == "Clear/Faster") | (.change_pct == -20) and (.base_median == 100)
       and (.new_median == 80) and ((.p_value - 2/252) | fabs < 1e-12)' "$tmp/c.json" >/dev/null \
  || bad "Clear/Faster figures"
sum=$(jq -c '.summary | [.improved, .regressed, .unchanged, .inconclusive, .noisy, .total,
                         .only_in_base, .only_in_new, .min_repetitions, .significant_noisy]' "$tmp/c.json")
[ "$sum" = "[1,1,2,2,2,6,1,1,2,0]" ] && echo "ok: summary $sum" || bad "summary $sum"
jq -e '[.rows[].name] | index("Only/Base") == null and index("Only/New") == null' "$tmp/c.json" \
  >/dev/null || bad "a benchmark in one run only was compared"

# the alpha is the caller's: at 0.2 three repetitions each can be significant
"$pc" compare "$fx/compare-base.json" "$fx/compare-new.json" --json --alpha 0.2 >"$tmp/c2.json"
[ "$(jq -r '.rows[] | select(.name == "Few/Three") | .verdict' "$tmp/c2.json")" = improved ] \
  || bad "Few/Three at alpha 0.2 should be improved"
# a tighter noise threshold marks more rows: all but Few/One, whose single
# repetition per side has no CV at all
"$pc" compare "$fx/compare-base.json" "$fx/compare-new.json" --json --max-cv 0.001 >"$tmp/c3.json"
[ "$(jq -c '[.rows[] | select(.noisy | not) | .name]' "$tmp/c3.json")" = '["Few/One"]' ] \
  || bad "--max-cv 0.001 should make every row but Few/One noisy"
# and then both significant changes stand on noisy rows, which the text says
[ "$(jq '.summary.significant_noisy' "$tmp/c3.json")" -eq 2 ] || bad "significant_noisy"
"$pc" compare "$fx/compare-base.json" "$fx/compare-new.json" --max-cv 0.001 \
  | grep -qF '2 of the 2 significant changes are on noisy rows.' || bad "no caution on noisy changes"

# runs set up differently say so, beside the verdicts
jq '.context.host_name = "other-host" | .context.num_cpus = 64' "$fx/compare-new.json" >"$tmp/other.json"
"$pc" compare "$fx/compare-base.json" "$tmp/other.json" --json >"$tmp/c4.json"
[ "$(jq -r '.summary.setup_differs' "$tmp/c4.json")" = 'host_name fixture-host → other-host; num_cpus 2 → 64' ] \
  || bad "setup difference: $(jq -r '.summary.setup_differs' "$tmp/c4.json")"
jq -e '.summary.setup_differs == null' "$tmp/c.json" >/dev/null || bad "same setup reported as different"
"$pc" compare "$fx/compare-base.json" "$tmp/other.json" | grep -qF \
  'The runs were set up differently: host_name fixture-host → other-host; num_cpus 2 → 64.' \
  || bad "the text output does not say the setups differ"

# exit status
"$pc" compare "$fx/compare-base.json" "$fx/compare-new.json" >/dev/null; st=$?
[ $st -eq 0 ] || bad "exit $st without --fail-on-regression"
"$pc" compare "$fx/compare-base.json" "$fx/compare-new.json" --fail-on-regression >/dev/null; st=$?
[ $st -eq 1 ] || bad "exit $st with a regression and --fail-on-regression"
"$pc" compare "$fx/compare-new.json" "$fx/compare-new.json" --fail-on-regression >/dev/null; st=$?
[ $st -eq 0 ] || bad "exit $st comparing a run with itself"
"$pc" compare "$fx/compare-new.json" "$fx/compare-base.json" --fail-on-regression --json \
  >"$tmp/rev.json"; st=$?
[ $st -eq 1 ] || bad "the reverse comparison has a regression too (Clear/Faster): exit $st"
[ "$(jq -r '.rows[] | select(.name == "Clear/Faster") | .verdict' "$tmp/rev.json")" = regressed ] \
  || bad "reversed, Clear/Faster should be regressed"

# the text and Markdown forms carry the same verdicts
"$pc" compare "$fx/compare-base.json" "$fx/compare-new.json" --md >"$tmp/c.md"
grep -qF '| `Clear/Faster` | 100 ns | 80.0 ns | -20.0% | 0.0079 | 5 vs 5 | improved |' "$tmp/c.md" \
  || bad "Markdown row for Clear/Faster"
"$pc" compare "$fx/compare-base.json" "$fx/compare-new.json" >"$tmp/c.txt"
grep -qE '^Clear/Slower +50\.0 ns +60\.0 ns +\+20\.0% +0\.0079 +5 vs 5 +regressed$' "$tmp/c.txt" \
  || bad "text row for Clear/Slower"
grep -qF '1 improved, 1 regressed, 2 unchanged, 2 inconclusive (2 noisy)' "$tmp/c.txt" \
  || bad "text summary"
exit $fail
