#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# percore bench's contract: --list, filters, exit status 0/1/2 with a
# one-line reason, --json on stdout, --out written whole, --pm-qos recorded.
set -u
pc="$PC_BUILD_DIR/tools/percore/percore"
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
quick=(--repetitions 2 --min-time 0.01)

check() { # expected-status description args...
  local want=$1 what=$2; shift 2
  "$pc" bench "$@" >"$tmp/out" 2>"$tmp/err"; local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: $what: exit $got, want $want"; cat "$tmp/out" "$tmp/err"; fail=1
  else
    echo "ok: $what"
  fi
}
expect() { # file pattern description
  if grep -qE -- "$2" "$1"; then echo "ok: $3"; else echo "FAIL: $3: no '$2' in:"; cat "$1"; fail=1; fi
}
pycheck() { # description python-code (reads the JSON file $tmp/j)
  if "$py" -c "import json,sys; d=json.load(open('$tmp/j')); $2" 2>"$tmp/pyerr"; then
    echo "ok: $1"
  else
    echo "FAIL: $1"; cat "$tmp/pyerr"; fail=1
  fi
}

check 0 "--help" --help
expect "$tmp/out" "--pm-qos" "help names --pm-qos"

check 0 "--list" --list
expect "$tmp/out" "^Peer/memcpy/4096$" "list has Peer/memcpy/4096"
expect "$tmp/out" "^Peer/malloc/64$" "list has Peer/malloc/64"
check 0 "--list --json" --list --json --filter memcpy
cp "$tmp/out" "$tmp/j"
pycheck "--list --json is an array of names" \
  "assert [b['name'] for b in d] == ['Peer/memcpy/4096'] and d[0]['threads'] == 1"

check 1 "--filter with no match" --filter no-such-benchmark
expect "$tmp/err" "no benchmark matches 'no-such-benchmark'" "no match says why"
check 1 "--list with no match" --list --filter no-such-benchmark

# Usage errors: status 2 and one line naming the problem.
usage() { # description pattern args...
  local what=$1 pat=$2; shift 2
  check 2 "$what" "$@"
  expect "$tmp/err" "^percore bench: .*$pat" "$what says why"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || { echo "FAIL: $what: reason is not one line"; fail=1; }
}
usage "bad regex"            "bad filter"     --filter '('
usage "zero repetitions"     "repetitions"    --repetitions 0
usage "negative repetitions" "--repetitions"  --repetitions -3
usage "text repetitions"     "--repetitions"  --repetitions abc
usage "zero min-time"        "min-time"       --min-time 0
usage "text min-time"        "--min-time"     --min-time 1x
usage "negative max-cv"      "max-cv"         --max-cv -1
usage "bad affinity"         "--affinity"     --affinity sideways
usage "text seed"            "--seed"         --seed twelve
usage "unknown option"       "unknown option" --bogus
usage "missing value"        "needs a value"  --repetitions
usage "stray argument"       "unexpected"     Peer/memcpy
usage "negative budget"      "budget"         --budget -1
usage "text budget"          "--budget"       --budget soon
usage "huge max-repetitions" "max-repetitions" --max-repetitions 100001
usage "text max-repetitions" "--max-repetitions" --max-repetitions many

# More rounds: a pair (SlabAlloc/64 beside Peer/malloc/64) gets rows until
# it is decided or capped; a row in no pair stays at the minimum. The end
# says how many pairs were decided.
check 0 "--max-repetitions" --quiet --out "$tmp/m.json" --repetitions 2 --min-time 0.005 \
  --max-repetitions 6 --filter '^(SlabAlloc/64|Peer/malloc/64|Peer/memcpy/4096)$'
expect "$tmp/err" "^percore bench: [0-1] of 1 pairs decided after [0-9]+ rounds" \
  "the end counts the decided pairs"
cp "$tmp/m.json" "$tmp/j"
pycheck "only the pair's rows got more repetitions" "
reps = {r['run_name']: r['repetitions'] for r in d['benchmarks'] if r['run_type'] == 'iteration'}
o, pc = d['percore']['options'], d['percore']
assert reps['Peer/memcpy/4096'] == 2, reps
assert 2 <= reps['SlabAlloc/64'] <= 6 and reps['SlabAlloc/64'] == reps['Peer/malloc/64'], reps
assert o['max_repetitions'] == 6 and o['budget_s'] == 0
assert pc['rounds_stopped'] in ('decided', 'max_repetitions'), pc['rounds_stopped']
assert pc['rounds'] == max(reps.values())"

# An output path that cannot be written fails before anything runs.
check 1 "--out into a missing folder" --out "$tmp/none/r.json" --filter memcpy "${quick[@]}"
expect "$tmp/err" "cannot write" "unwritable --out says why"
if grep -q "round" "$tmp/err"; then echo "FAIL: ran before checking --out"; fail=1; fi

# --json: the results on stdout, nothing else; --quiet: no progress.
check 0 "--json --quiet" --json --quiet --filter '^Peer/malloc/' "${quick[@]}"
cp "$tmp/out" "$tmp/j"
pycheck "--json output parses with every row" "
rows = d['benchmarks']
assert len(rows) == 2 + 6, len(rows)
assert {r['run_name'] for r in rows} == {'Peer/malloc/64'}
assert d['percore']['options']['repetitions'] == 2"
[ -s "$tmp/err" ] && { echo "FAIL: --quiet still wrote to stderr:"; cat "$tmp/err"; fail=1; }

# The table and the file; progress on stderr; the PM QoS request recorded
# whether or not this machine lets us hold it.
check 0 "--out with --pm-qos" --out "$tmp/r.json" --pm-qos --filter memcpy "${quick[@]}"
expect "$tmp/out" "^Peer/memcpy/4096 +[0-9.]+ (ns|us)" "table row for Peer/memcpy/4096"
expect "$tmp/out" "time/item +items/s +bytes/s +CV" "table header"
expect "$tmp/err" "round 2 of 2" "progress names the round"
[ -e "$tmp/r.json.tmp" ] && { echo "FAIL: temporary file left behind"; fail=1; }
cp "$tmp/r.json" "$tmp/j"
pycheck "--out file records the PM QoS request" "
q = d['percore']['pm_qos']
assert d['percore']['options']['pm_qos'] is True
assert q['requested'] is True
assert q['held'] is True or q['error'] in ('EACCES', 'ENOENT', 'EPERM', 'ENODEV'), q"
if grep -q '"held": false' "$tmp/r.json"; then
  expect "$tmp/err" "warning: cannot hold a PM QoS request" "unheld PM QoS is a warning"
fi

# The keyspace rows fail themselves when a stored key is not found,
# with the look ahead and without.
check 0 "KvDb/Lookup10 rows run" --filter '^KvDb/Lookup10/100000/' "${quick[@]}"
expect "$tmp/out" "^KvDb/Lookup10/100000/ahead +[0-9.]+ (ns|us)" "table row for the look ahead"
expect "$tmp/out" "^KvDb/Lookup10/100000/plain +[0-9.]+ (ns|us)" "table row without it"

exit $fail
