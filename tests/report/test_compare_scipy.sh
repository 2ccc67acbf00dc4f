#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# percore compare's p-values against scipy.stats.mannwhitneyu, as Google
# Benchmark's compare.py calls it, over random samples of many sizes.
set -u
py=/usr/bin/python3 # Debian's python, the one that sees python3-scipy
"$py" -c 'import scipy.stats' 2>/dev/null \
  || { echo "scipy is not installed for $py (python3-scipy): nothing to compare with"; exit 77; }
exec "$py" "$PC_SOURCE_DIR/tests/report/check_scipy.py" "$PC_BUILD_DIR/tools/percore/percore"
