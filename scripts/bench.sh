#!/usr/bin/env bash
# make bench: run the benchmark suite on a Release build and write results.
#   bench.sh BUILD_DIR [default|full]
set -euo pipefail
build=$1 suite=${2:-default}
pc="$build/tools/percore/percore"
out=build/bench
mkdir -p "$out"
args=(--out "$out/results.json")
[ "$suite" = full ] && args+=(--full)
"$pc" bench "${args[@]}"
echo "bench: results in $out/results.json" >&2
