# SPDX-License-Identifier: MIT
# Sourced by the report tests: the percore binary, the fixtures, a scratch
# folder removed on exit, and bad() to record a failure and go on.
set -u
pc="$PC_BUILD_DIR/tools/percore/percore"
fx="$PC_SOURCE_DIR/tests/fixtures/report"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
