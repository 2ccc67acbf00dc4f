#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian packages that building, testing and benchmarking need,
# and only those that are missing. Safe to run often: it does nothing when
# everything is present. Uses sudo when not root.
set -euo pipefail

packages=(
  # build
  cmake make gcc g++ pkg-config clang libclang-rt-14-dev
  # libraries percore uses
  libhwloc-dev hwloc libnuma-dev numactl liburing-dev libcjson-dev
  # the metrics endpoint's HTTP request parser
  libhttp-parser-dev
  # hwloc's static link flags name -ludev (pkg-config --static)
  libudev-dev
  # tests (tests/core/commands.txt names the commands the tests run and
  # their packages; tests/core/test_deps_cover.py keeps it and this in step)
  libcmocka-dev python3 libbenchmark-tools python3-scipy chromium jq curl
  binutils file
  # the manual pages: rendered (groff), read and found (man, col)
  groff-base man-db bsdextrautils
  # the API reference (HTML, and its warnings as a test)
  doxygen
  # a real Prometheus server and promtool against the metrics endpoint
  prometheus
  flatbuffers-compiler python3-flatbuffers
  # aarch64 cross build of the runtime and its tests, run under qemu
  # (tests/cross); the :arm64 libraries co-install with the amd64 ones
  gcc-aarch64-linux-gnu qemu-user libcmocka-dev:arm64 libnuma-dev:arm64
  libhwloc-dev:arm64 liburing-dev:arm64 libcjson-dev:arm64
  # the runtime library only: libhttp-parser-dev:arm64 conflicts with the
  # amd64 one, whose header serves both (tests/cross/aarch64 links the .so.2.9)
  libhttp-parser2.9:arm64
  # benchmark peers
  libjemalloc-dev libmimalloc-dev libgoogle-perftools-dev libtcmalloc-minimal4
  libck-dev libuv1-dev libabsl-dev libglib2.0-dev
  # files beside fio (its io_uring engine), the journal beside RocksDB
  # (bench/io)
  fio librocksdb-dev
  # the kv server's oracle and clients
  redis-server redis-tools libhiredis-dev python3-redis
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
# The :arm64 packages come from Debian multiarch: arm64 must be a foreign
# architecture before the package lists are read.
if printf '%s\n' "${missing[@]}" | grep -q ':arm64$' &&
   ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $sudo dpkg --add-architecture arm64
fi
# A stale or absent package list makes the install fail; refresh it first.
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
