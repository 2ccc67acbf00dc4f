#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every skip in a cmocka test reaches ctest: cmocka's bare skip() exits 0
# (a pass to ctest), so tests skip through PC_SKIP and return
# pc_test_main() (tests/testmain.h), which exits 77.
set -u
cd "$PC_SOURCE_DIR/tests" || exit 1
fail=0
bare=$(grep -rnE '(^|[^_A-Za-z])skip\(\)' --include='*.c' --include='*.h' . | grep -v '^./testmain.h:')
if [ -n "$bare" ]; then
  echo "FAIL: cmocka's skip() used directly (use PC_SKIP from tests/testmain.h):"
  echo "$bare"
  fail=1
fi
for f in $(grep -rlE 'PC_SKIP\(' --include='*.c' .); do
  grep -q 'pc_test_main(' "$f" || { echo "FAIL: $f skips but its main does not return pc_test_main()"; fail=1; }
done
[ "$fail" -eq 0 ] && echo "ok: every cmocka skip exits 77"
exit "$fail"
