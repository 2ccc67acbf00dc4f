#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Google Benchmark's own compare.py (Debian libbenchmark-tools) reads two of
# our results files: it pairs the benchmarks by name and runs its U test
# over the repetitions.
set -u
pc="$PC_BUILD_DIR/tools/percore/percore"
cmp=/usr/share/benchmark/compare.py
py=/usr/bin/python3
[ -f "$cmp" ] || { echo "skip: $cmp missing (Debian package libbenchmark-tools)"; exit 77; }
"$py" -c 'import scipy' 2>/dev/null || { echo "skip: $py has no scipy (python3-scipy)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# compare.py runs its U test from 2 repetitions and calls 9 enough. Only the
# two peers checked below run: other areas' peers are slow under sanitizers.
for x in A B; do
  "$pc" bench --filter '^Peer/(memcpy|malloc)/' --repetitions 9 --min-time 0.01 --quiet --out "$tmp/$x.json" \
    >/dev/null || { echo "FAIL: percore bench for $x.json"; exit 1; }
done
"$py" "$cmp" --no-color benchmarks "$tmp/A.json" "$tmp/B.json" >"$tmp/cmp" 2>&1
rc=$?
cat "$tmp/cmp"
[ $rc -eq 0 ] || { echo "FAIL: compare.py exit $rc"; exit 1; }
for b in Peer/memcpy/4096 Peer/malloc/64; do
  # Nine repetition rows, the aggregates, and the U test line.
  n=$(grep -cE "^$b +[-+]?[0-9]" "$tmp/cmp")
  [ "$n" -eq 9 ] || { echo "FAIL: $b: $n repetition rows, want 9"; fail=1; }
  grep -qE "^${b}_median +[-+]?[0-9]" "$tmp/cmp" || { echo "FAIL: no ${b}_median row"; fail=1; }
  grep -qE "^${b}_pvalue +[0-9.]+ +[0-9.]+ +U Test, Repetitions: 9 vs 9$" "$tmp/cmp" \
    || { echo "FAIL: no U test line for $b"; fail=1; }
done
grep -q "Results unreliable" "$tmp/cmp" && { echo "FAIL: compare.py wants more repetitions"; fail=1; }
[ $fail -eq 0 ] && echo "ok: compare.py read both files"
exit $fail
