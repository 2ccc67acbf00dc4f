#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make bench: run the benchmark suite on a Release build and write the report.
#   bench.sh BUILD_DIR [default|full]
#
# Builds nothing (make already did). Steps:
#   1. percore env: the environment audit, warnings shown (skipped when this
#      build has no env command yet)
#   2. the suite, threaded benchmarks pinned and unpinned (--affinity both):
#      5 interleaved rounds, then more rounds of the rows whose pair (ours
#      beside a peer) is not yet decided, while the run stays within
#      PC_BENCH_BUDGET seconds (default 540, so make bench ends within about
#      ten minutes on a 2-CPU machine) -> build/bench/results.json.
#      Repetitions last PC_BENCH_MIN_TIME seconds (default 0.02, a tenth of
#      percore bench's own default): the U test decides by the number of
#      repetitions, not their length, and on a VM the time per iteration
#      moves between levels that last seconds (host contention), so a
#      repetition five times longer scatters about as much (measured: the
#      median IQR of every row 28% at 0.1 s, 30% at 0.02 s) and five short
#      ones decide far more than one long one. The noise experiment's
#      PM QoS rows (Noise/.../pm_qos:on) are in it, interleaved with the
#      rest: each holds the request itself during its repetitions, and is
#      skipped with the reason where the request cannot be made
#   3. percore tune --dry-run: which tune steps apply on this machine
#      -> build/bench/tune.json (changes nothing)
#   4. percore report -> build/bench/report.md and build/bench/report.html
set -euo pipefail
build=$1 suite=${2:-default}
pc="$build/tools/percore/percore"
out=build/bench
mkdir -p "$out"
# files left by an earlier run must not pass for this run's
rm -f "$out/noise-pmqos.json" "$out/tune.json" "$out/findings.json"

# Whether this build's percore has a subcommand, or bench an option: the
# commands land one by one, and the script works before and after each.
has_cmd() { "$pc" "$1" --help >/dev/null 2>&1; }
bench_has() { "$pc" bench --help 2>/dev/null | grep -- "$1" >/dev/null; }

common=()
[ "$suite" = full ] && common+=(--full)
bench_has --affinity && common+=(--affinity both)
budget=${PC_BENCH_BUDGET:-540}
common+=(--min-time "${PC_BENCH_MIN_TIME:-0.02}")
main=()
bench_has --budget && main+=(--budget "$budget")

if has_cmd env; then
  echo "== percore env" >&2
  # warnings are for the reader of the results, not a reason to stop
  "$pc" env || echo "bench: percore env reported a problem (see above)" >&2
else
  echo "bench: this build has no 'percore env'; the results carry no audit" >&2
fi

echo "== percore bench (${suite} suite)" >&2
"$pc" bench "${common[@]}" "${main[@]}" --out "$out/results.json"

inputs=("$out/results.json")

report=(-o "$out")
if has_cmd tune && "$pc" tune --dry-run --json >"$out/tune.json" 2>/dev/null \
   && grep -q '"steps"' "$out/tune.json"; then
  report+=(--tune "$out/tune.json")
else
  rm -f "$out/tune.json" # the report judges the tune steps from the audit
fi
if "$pc" report --help | grep -- --json >/dev/null; then
  "$pc" report "${inputs[@]}" "${report[@]}" --json >"$out/findings.json"
  jq -r '.summary | "Pairs decided: \(.decided) of \(.pairs) (\(.faster) faster, \(.slower) slower, \(.within_margin) within the margin, \(.undecided) undecided)"' \
    "$out/findings.json" 2>/dev/null || true
else
  "$pc" report "${inputs[@]}" "${report[@]}" >/dev/null
fi
echo
echo "Results: ${inputs[*]}"
echo "Report:  $out/report.md"
[ -f "$out/findings.json" ] && echo "         $out/findings.json (the verdicts as JSON)"
echo "         $out/report.html"
