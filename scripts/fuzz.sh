#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs libFuzzer targets.
#   fuzz.sh --one BINARY CORPUS SECONDS   one target, bounded (ctest, make test)
#   fuzz.sh BUILD_DIR                     every target in BUILD_DIR, open-ended
# The seed corpus in the repository is copied so a bounded run never writes
# into the source tree; new findings stay in the build folder.
set -euo pipefail

run_one() {
  local bin=$1 corpus=$2 seconds=$3
  local work; work="$(dirname "$bin")/$(basename "$bin").corpus"
  mkdir -p "$work"
  [ -d "$corpus" ] && cp -n "$corpus"/* "$work"/ 2>/dev/null || true
  local args=(-print_final_stats=1 -artifact_prefix="$(dirname "$bin")/")
  # A bounded run (make test) uses a fixed seed, so its mutations are the
  # same on every machine and a pass here is a pass in CI; open-ended runs
  # (make fuzz) explore with a fresh seed each time.
  [ "$seconds" -gt 0 ] && args+=(-max_total_time="$seconds" -seed=1)
  echo "fuzz: $(basename "$bin") for ${seconds}s (0 = until interrupted), corpus $work" >&2
  "$bin" "${args[@]}" "$work"
}

if [ "${1:-}" = "--one" ]; then
  run_one "$2" "$3" "$4"
  exit
fi
build=${1:?usage: fuzz.sh BUILD_DIR | --one BIN CORPUS SECONDS}
found=0
for bin in "$build"/tests/*/fuzz_*; do
  [ -x "$bin" ] && [ -f "$bin" ] || continue
  found=1
  name=$(basename "$bin")
  run_one "$bin" "$(dirname "$0")/../tests/fuzz/corpus/${name#fuzz_}" 0
done
[ $found -eq 1 ] || { echo "fuzz: no fuzz targets in $build" >&2; exit 1; }
