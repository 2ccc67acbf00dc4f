#!/usr/bin/env bash
# make install works: the library, headers, percore.pc, the CMake package and
# the percore binary land under a fresh prefix, and a program builds against
# them through pkg-config and runs.
set -euo pipefail
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$PC_BUILD_DIR" --prefix "$prefix" >/dev/null
libdir=$(ls -d "$prefix"/lib*/pkgconfig | head -1 | xargs dirname)
for f in "$libdir/libpercore.a" "$libdir/libpercore.so" "$prefix/include/percore.h" \
         "$prefix/include/percore/bench.h" "$libdir/pkgconfig/percore.pc" \
         "$libdir/cmake/percore/percoreConfig.cmake" "$prefix/bin/percore"; do
  [ -e "$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
cat >"$prefix/prog.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <percore.h>
int main(void) { return strlen(pc_version()) > 0 ? (puts(pc_version()), 0) : 1; }
C
extra=()
case "${PC_SANITIZE:-}" in
  asan) extra=(-fsanitize=address,undefined) ;;
  tsan) extra=(-fsanitize=thread) ;;
esac
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc "${extra[@]}" -o "$prefix/prog" "$prefix/prog.c" $(pkg-config --cflags --libs percore) -Wl,-rpath,"$libdir"
"$prefix/prog"
echo "ok: installed percore $(pkg-config --modversion percore) builds and runs via pkg-config"
