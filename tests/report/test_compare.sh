#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# percore compare on two fixture runs with known differences: a clear shift
# with a low CV is significant in the right direction, a shift inside the
# noise is not, too few repetitions are inconclusive, a tied small sample
# can still be significant (as in compare.py), the direction follows the
# tested figure, CPU time is tested too; and the exit status follows
# --fail-on-regression, which leaves noisy rows out unless --include-noisy.
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
# fully apart with ties: p = 0.047 from the tie-corrected normal approximation
check Tied/Three regressed false
# cheaper per item, slower per iteration: the verdict follows the tested figure
check Items/Doubled regressed false
check Cpu/Only unchanged false
check Noisy/Slower regressed true
cpu() { jq -r --arg n "$1" '.rows[] | select(.name == $n) | .cpu_verdict' "$tmp/c.json"; }
[ "$(cpu Cpu/Only)" = regressed ] || bad "Cpu/Only: CPU time doubled, cpu_verdict $(cpu Cpu/Only)"
[ "$(cpu Clear/Faster)" = improved ] || bad "Clear/Faster: cpu_verdict $(cpu Clear/Faster)"
jq -e '.rows[] | select(.name == "Tied/Three") | (.p_value - 0.04685) | fabs < 1e-4' "$tmp/c.json" \
  >/dev/null || bad "Tied/Three p-value"
jq -e '.rows[] | select(.name == "Items/Doubled") | .change_pct > 19.9 and .change_pct < 20.1' \
  "$tmp/c.json" >/dev/null || bad "Items/Doubled: the change is of real time per iteration"

# exactly the fields the interface promises, in that order
keys=$(jq -c '[.rows[0] | keys_unsorted[]]' "$tmp/c.json")
[ "$keys" = '["name","base_median","new_median","change_pct","p_value","verdict","noisy","cpu_p_value","cpu_verdict"]' ] \
  || bad "row fields are $keys"
jq -e '.rows[] | select(.name == "Few/One") | .p_value == null' "$tmp/c.json" >/dev/null \
  || bad "Few/One has a p-value without a test"
jq -e '.rows[] | select(.name == "Clear/Faster") | (.change_pct == -20) and (.base_median == 100)
       and (.new_median == 80) and ((.p_value - 2/252) | fabs < 1e-12)' "$tmp/c.json" >/dev/null \
  || bad "Clear/Faster figures"
sum=$(jq -c '.summary | [.improved, .regressed, .unchanged, .inconclusive, .noisy, .total,
                         .only_in_base, .only_in_new, .min_repetitions, .significant_noisy]' "$tmp/c.json")
[ "$sum" = "[1,4,3,2,3,10,1,1,2,1]" ] && echo "ok: summary $sum" || bad "summary $sum"
jq -e '[.rows[].name] | index("Only/Base") == null and index("Only/New") == null' "$tmp/c.json" \
  >/dev/null || bad "a benchmark in one run only was compared"

# the alpha is the caller's: at 0.2 three repetitions each can be significant
"$pc" compare "$fx/compare-base.json" "$fx/compare-new.json" --json --alpha 0.2 >"$tmp/c2.json"
[ "$(jq -r '.rows[] | select(.name == "Few/Three") | .verdict' "$tmp/c2.json")" = improved ] \
  || bad "Few/Three at alpha 0.2 should be improved"
# a tighter noise threshold marks more rows: all but Few/One, whose single
# repetition per side has no CV at all, and Tied/Three, whose values are equal
"$pc" compare "$fx/compare-base.json" "$fx/compare-new.json" --json --max-cv 0.001 >"$tmp/c3.json"
[ "$(jq -c '[.rows[] | select(.noisy | not) | .name]' "$tmp/c3.json")" = '["Few/One","Tied/Three"]' ] \
  || bad "--max-cv 0.001 should make every row but Few/One and Tied/Three noisy"
# and then four of the five significant changes stand on noisy rows
[ "$(jq '.summary.significant_noisy' "$tmp/c3.json")" -eq 4 ] || bad "significant_noisy"
"$pc" compare "$fx/compare-base.json" "$fx/compare-new.json" --max-cv 0.001 \
  | grep -qF '4 of the 5 significant changes are on noisy rows.' || bad "no caution on noisy changes"

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
# one file pair per row: which regressions fail the run
only() { jq --arg n "$1" '.benchmarks |= map(select(.name == $n))' "$2"; }
for n in Noisy/Slower Cpu/Only; do
  only "$n" "$fx/compare-base.json" >"$tmp/b-${n%/*}.json"
  only "$n" "$fx/compare-new.json" >"$tmp/n-${n%/*}.json"
done
"$pc" compare "$tmp/b-Noisy.json" "$tmp/n-Noisy.json" --fail-on-regression >/dev/null 2>"$tmp/noisy.err"; st=$?
[ $st -eq 0 ] || bad "a regression on a noisy row alone failed the run (exit $st)"
grep -qF -- '--include-noisy counts them' "$tmp/noisy.err" || bad "the ignored noisy regression went unmentioned"
"$pc" compare "$tmp/b-Noisy.json" "$tmp/n-Noisy.json" --fail-on-regression --include-noisy \
  >/dev/null 2>&1; st=$?
[ $st -eq 1 ] || bad "--include-noisy should count the noisy regression (exit $st)"
"$pc" compare "$tmp/b-Cpu.json" "$tmp/n-Cpu.json" --fail-on-regression >/dev/null; st=$?
[ $st -eq 1 ] || bad "a CPU-time regression should fail the run (exit $st)"
"$pc" compare "$fx/compare-base.json" "$fx/compare-new.json" --include-noisy >/dev/null 2>&1; st=$?
[ $st -eq 2 ] || bad "--include-noisy without --fail-on-regression is a usage error (exit $st)"
"$pc" compare "$fx/compare-new.json" "$fx/compare-new.json" --fail-on-regression >/dev/null; st=$?
[ $st -eq 0 ] || bad "exit $st comparing a run with itself"
"$pc" compare "$fx/compare-new.json" "$fx/compare-base.json" --fail-on-regression --json \
  >"$tmp/rev.json"; st=$?
[ $st -eq 1 ] || bad "the reverse comparison has a regression too (Clear/Faster): exit $st"
[ "$(jq -r '.rows[] | select(.name == "Clear/Faster") | .verdict' "$tmp/rev.json")" = regressed ] \
  || bad "reversed, Clear/Faster should be regressed"

# the text and Markdown forms carry the same verdicts
"$pc" compare "$fx/compare-base.json" "$fx/compare-new.json" --md >"$tmp/c.md"
grep -qF '| `Clear/Faster` | 100 ns | 80.0 ns | -20.0% | 0.0079 | 5 vs 5 | improved | 0.0079 | improved |' "$tmp/c.md" \
  || bad "Markdown row for Clear/Faster"
"$pc" compare "$fx/compare-base.json" "$fx/compare-new.json" >"$tmp/c.txt"
grep -qE '^Clear/Slower +50\.0 ns +60\.0 ns +\+20\.0% +0\.0079 +5 vs 5 +regressed +0\.0079 +regressed$' "$tmp/c.txt" \
  || bad "text row for Clear/Slower"
grep -qF '1 improved, 4 regressed, 3 unchanged, 2 inconclusive (3 noisy)' "$tmp/c.txt" \
  || bad "text summary"
exit $fail
