#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# percore report and compare on bad input: a clear one-line reason, the
# documented exit status, and nothing already written is lost.
. "$PC_SOURCE_DIR/tests/report/lib.sh"

# expect STATUS MESSAGE-SUBSTRING command...
expect() {
  local want=$1 msg=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"; local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: $*: exit $got, want $want"; cat "$tmp/err"; fail=1
  elif ! grep -qF -- "$msg" "$tmp/err"; then
    echo "FAIL: $*: stderr lacks '$msg':"; cat "$tmp/err"; fail=1
  elif [ "$(wc -l <"$tmp/err")" -ne 1 ]; then
    echo "FAIL: $*: reason is not one line:"; cat "$tmp/err"; fail=1
  else
    echo "ok: $want: $msg"
  fi
}

printf '{"benchmarks": [\n  {"name": "A", "real_time": }\n]}\n' >"$tmp/malformed.json"
printf '[1, 2, 3]\n' >"$tmp/array.json"
printf '{"context": {}}\n' >"$tmp/nobench.json"
printf '{"benchmarks": [{"name": "A", "real_time": "soon"}]}\n' >"$tmp/badtime.json"
printf '{"benchmarks": [{"real_time": 3}]}\n' >"$tmp/noname.json"
: >"$tmp/empty.json"

for cmd in report compare; do
  expect 2 "percore $cmd: " "$pc" $cmd
  expect 2 "unknown option '--bogus'" "$pc" $cmd --bogus "$fx/results.json" "$fx/results.json"
  expect 2 "--alpha wants a number" "$pc" $cmd --alpha 2 "$fx/results.json" "$fx/results.json"
  expect 2 "--max-cv wants a positive number" "$pc" $cmd --max-cv -1 "$fx/results.json" "$fx/results.json"
done
expect 2 "want two results files" "$pc" compare "$fx/results.json"
expect 2 "want two results files" "$pc" compare "$fx/results.json" "$fx/results.json" "$fx/results.json"
expect 2 "--md and --json exclude each other" "$pc" compare --md --json "$fx/results.json" "$fx/results.json"
expect 2 "needs a value" "$pc" report "$fx/results.json" --baseline

for cmd in "report" "compare $fx/results.json"; do
  expect 1 "$tmp/missing.json: No such file or directory" "$pc" $cmd "$tmp/missing.json"
  expect 1 "malformed.json:2: malformed JSON" "$pc" $cmd "$tmp/malformed.json"
  expect 1 "malformed JSON" "$pc" $cmd "$tmp/empty.json"
  expect 1 'array.json: not a benchmark results file (no "benchmarks" array)' "$pc" $cmd "$tmp/array.json"
  expect 1 'no "benchmarks" array' "$pc" $cmd "$tmp/nobench.json"
  expect 1 "benchmarks[0] (A): real_time is not a number" "$pc" $cmd "$tmp/badtime.json"
  expect 1 "benchmarks[0] is not an object with a name" "$pc" $cmd "$tmp/noname.json"
done
expect 1 "malformed JSON" "$pc" report "$fx/results.json" --baseline "$tmp/malformed.json"
expect 1 "malformed JSON" "$pc" report "$fx/results.json" "$tmp/malformed.json"
expect 1 "malformed.json:2: malformed JSON" "$pc" report "$fx/results.json" --tune "$tmp/malformed.json"
expect 1 'not a `percore tune --json` report' "$pc" report "$fx/results.json" --tune "$fx/results.json"
printf '{"steps": [1]}\n' >"$tmp/badsteps.json"
expect 1 'not a `percore tune --json` report' "$pc" report "$fx/results.json" --tune "$tmp/badsteps.json"

# a report that fails keeps the one already there
mkdir -p "$tmp/out-dir"
echo "earlier report" >"$tmp/out-dir/report.md"
echo "earlier html" >"$tmp/out-dir/report.html"
expect 1 "malformed JSON" "$pc" report "$tmp/malformed.json" -o "$tmp/out-dir"
grep -qx "earlier report" "$tmp/out-dir/report.md" || { echo "FAIL: report.md was lost"; fail=1; }
# an output folder that cannot be made
: >"$tmp/a-file"
expect 1 "exists and is not a directory" "$pc" report "$fx/results.json" -o "$tmp/a-file"
expect 1 "No such file or directory" "$pc" report "$fx/results.json" -o "$tmp/no/such/dir"
# a folder that cannot be written (skipped as root, who may write anywhere)
if [ "$(id -u)" -ne 0 ]; then
  mkdir -p "$tmp/ro" && cp "$tmp/out-dir/report.md" "$tmp/ro/" && chmod 555 "$tmp/ro"
  expect 1 "Permission denied" "$pc" report "$fx/results.json" -o "$tmp/ro"
  grep -qx "earlier report" "$tmp/ro/report.md" || { echo "FAIL: report.md was lost"; fail=1; }
fi
ls "$tmp/out-dir" | grep -q tmp && { echo "FAIL: a temporary file was left behind"; fail=1; }
exit $fail
