#!/usr/bin/env bash
# make bench: run the benchmark suite on a Release build and write the report.
#   bench.sh BUILD_DIR [default|full]
#
# Builds nothing (make already did). Steps:
#   1. percore env: the environment audit, warnings shown (skipped when this
#      build has no env command yet)
#   2. the suite, threaded benchmarks pinned and unpinned (--affinity both)
#      -> build/bench/results.json. The noise experiment's PM QoS rows
#      (Noise/.../pm_qos:on) are in it, interleaved with the rest: each
#      holds the request itself during its repetitions, and is skipped with
#      the reason where the request cannot be made
#   3. percore tune --dry-run: which tune steps apply on this machine
#      -> build/bench/tune.json (changes nothing)
#   4. percore report -> build/bench/report.md and build/bench/report.html
set -euo pipefail
build=$1 suite=${2:-default}
pc="$build/tools/percore/percore"
out=build/bench
mkdir -p "$out"
# files left by an earlier run must not pass for this run's
rm -f "$out/noise-pmqos.json" "$out/tune.json"

# Whether this build's percore has a subcommand, or bench an option: the
# commands land one by one, and the script works before and after each.
has_cmd() { "$pc" "$1" --help >/dev/null 2>&1; }
bench_has() { "$pc" bench --help 2>/dev/null | grep -q -- "$1"; }

common=()
[ "$suite" = full ] && common+=(--full)
bench_has --affinity && common+=(--affinity both)

if has_cmd env; then
  echo "== percore env" >&2
  # warnings are for the reader of the results, not a reason to stop
  "$pc" env || echo "bench: percore env reported a problem (see above)" >&2
else
  echo "bench: this build has no 'percore env'; the results carry no audit" >&2
fi

echo "== percore bench (${suite} suite)" >&2
"$pc" bench "${common[@]}" --out "$out/results.json"

inputs=("$out/results.json")

report=(-o "$out")
if has_cmd tune && "$pc" tune --dry-run --json >"$out/tune.json" 2>/dev/null \
   && grep -q '"steps"' "$out/tune.json"; then
  report+=(--tune "$out/tune.json")
else
  rm -f "$out/tune.json" # the report judges the tune steps from the audit
fi
"$pc" report "${inputs[@]}" "${report[@]}" >/dev/null
echo
echo "Results: ${inputs[*]}"
echo "Report:  $out/report.md"
echo "         $out/report.html"
