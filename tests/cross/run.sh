#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds libpercore (the runtime) and its unit tests for aarch64
# (tests/cross/aarch64) and runs them under qemu-aarch64.
#
# Skips (exit 77) only when the cross tools are absent: scripts/deps.sh
# installs them (gcc-aarch64-linux-gnu, qemu-user, and the :arm64 libraries
# through Debian multiarch), so that happens only where packages cannot be
# installed. The test sizes are cut (PC_TEST_OPS, PC_STRESS_ITEMS here, the
# runtime's in tests/cross/aarch64/CMakeLists.txt) because emulation is
# 5-20 times slower than the host.
set -euo pipefail

src=${PC_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
out=${PC_BUILD_DIR:-$src/build}/cross-aarch64
jobs=${PC_CROSS_JOBS:-2}

need() {
	if ! eval "$2" >/dev/null 2>&1; then
		echo "cross: skipped, $1 is missing (scripts/deps.sh installs it)"
		exit 77
	fi
}
need aarch64-linux-gnu-gcc "command -v aarch64-linux-gnu-gcc"
need qemu-aarch64 "command -v qemu-aarch64"
for lib in cmocka numa hwloc uring cjson; do
	need "lib$lib-dev:arm64" "test -e /usr/lib/aarch64-linux-gnu/lib$lib.so"
done

cmake -S "$src/tests/cross/aarch64" -B "$out" -G "Unix Makefiles" \
	-DCMAKE_TOOLCHAIN_FILE="$src/cmake/toolchain-aarch64-linux-gnu.cmake" >/dev/null
cmake --build "$out" -j "$jobs" >/dev/null

# The programs must really be aarch64 code; the arch_probe test also checks
# what they see when they run.
for bin in "$out/arch_probe" "$out/test_spsc" "$out/test_engine"; do
	if ! file -b "$bin" | grep -q 'ARM aarch64'; then
		echo "cross: $bin is not an aarch64 program: $(file -b "$bin")" >&2
		exit 1
	fi
done
qemu-aarch64 "$out/arch_probe"

cd "$out"
PC_TEST_OPS=${PC_TEST_OPS:-200000} PC_STRESS_ITEMS=${PC_STRESS_ITEMS:-200000} \
	ctest --output-on-failure -j "$jobs"
