#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make install works and gives users what they need: both libraries
# (static and shared), the public headers and no internal one, a
# pkg-config file and a CMake target per library, and the percore binary.
# Then a user's programs build against the installed tree and run:
#   - user_prog.c, strict C11 (-std=c11 -Wpedantic -Werror, _GNU_SOURCE
#     defined first), with pkg-config on the shared libraries and with
#     pkg-config --static on the static ones;
#   - user_prog.cc, C++17 (-Wpedantic -Werror, every public header through
#     percore.h), with pkg-config on the shared runtime alone;
#   - both again through find_package(percore) (tests/core/user_cmake);
#   - docs/LIBRARY.md's static link line, which must not link libpercore.so.
# Last, the installed shared libraries export exactly what the installed
# headers declare (check_abi.py).
set -euo pipefail
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
cmake --install "$PC_BUILD_DIR" --prefix "$prefix" >/dev/null
libdir=$(ls -d "$prefix"/lib*/pkgconfig | head -1 | xargs dirname)
inc=$prefix/include

fail() { echo "FAIL: $*"; exit 1; }
for f in "$libdir/libpercore.a" "$libdir/libpercore.so" "$libdir/libpercore-bench.a" \
         "$libdir/libpercore-bench.so" "$inc/percore.h" "$inc/percore/defs.h" \
         "$inc/percore/bench.h" "$libdir/pkgconfig/percore.pc" \
         "$libdir/pkgconfig/percore-bench.pc" "$libdir/cmake/percore/percoreConfig.cmake" \
         "$prefix/bin/percore"; do
  [ -e "$f" ] || fail "$f not installed"
done
for f in compiler.h asan.h backoff.h; do
  [ ! -e "$inc/percore/$f" ] || fail "internal header $f installed"
done

# Sanitized builds instrument the libraries: the programs need the runtime.
cflags=() ldflags=()
case "${PC_SANITIZE:-}" in
  asan) cflags=(-fsanitize=address,undefined) ;;
  tsan) cflags=(-fsanitize=thread) ;;
esac
export PKG_CONFIG_PATH="$libdir/pkgconfig"
rpath=(-Wl,-rpath,"$libdir")
strict_c=(cc -std=c11 -Wall -Wextra -Wpedantic -Werror "${cflags[@]}")
strict_cxx=(c++ -std=c++17 -Wall -Wextra -Wpedantic -Werror "${cflags[@]}")

# run NAME: the program prints ok and exits 0
run() {
  local out
  out=$("$1" 2>&1) || fail "$(basename "$1") exited $?: $out"
  [ "$out" = ok ] || fail "$(basename "$1") said: $out"
}
# needs PROGRAM 'lib1 lib2' 'lib3': the program links the first libraries
# dynamically and not the others
needs() {
  local d
  d=$(readelf -d "$1")
  for l in $2; do grep -q "\[$l\.so" <<<"$d" || fail "$(basename "$1") does not link $l.so"; done
  for l in $3; do ! grep -q "\[$l\.so" <<<"$d" || fail "$(basename "$1") links $l.so"; done
}

"${strict_c[@]}" -o "$prefix/c_shared" "$here/user_prog.c" \
  $(pkg-config --cflags --libs percore-bench) "${rpath[@]}"
needs "$prefix/c_shared" "libpercore libpercore-bench" ""
run "$prefix/c_shared"

"${strict_cxx[@]}" -o "$prefix/cxx_shared" "$here/user_prog.cc" \
  $(pkg-config --cflags --libs percore) "${rpath[@]}"
needs "$prefix/cxx_shared" libpercore libpercore-bench
run "$prefix/cxx_shared"

# --static lists the private dependencies (hwloc's include -ludev);
# -l:lib*.a takes the archives although the shared libraries sit beside
static_libs=$(pkg-config --static --libs percore-bench |
  sed -e 's/-lpercore-bench\b/-l:libpercore-bench.a/' -e 's/-lpercore\b/-l:libpercore.a/g')
"${strict_c[@]}" -o "$prefix/c_static" "$here/user_prog.c" \
  $(pkg-config --cflags percore-bench) $static_libs
needs "$prefix/c_static" "" "libpercore libpercore-bench"
run "$prefix/c_static"

# docs/LIBRARY.md's static link line, as written, gives a program without
# libpercore.so although the shared library sits beside the archive.
readme_static=$(grep -m1 -- '# with libpercore.a$' "$here/../../docs/LIBRARY.md") ||
  fail "docs/LIBRARY.md has no line marked '# with libpercore.a'"
readme_static=${readme_static%%  #*}
[[ $readme_static == "cc app.c "* ]] || fail "the documented static line is not 'cc app.c ...': $readme_static"
mkdir "$prefix/readme"
printf '#include <percore.h>\n#include <stdio.h>\n%s\n' \
  'int main(void) { puts(pc_version()[0] ? "ok" : "no version"); return 0; }' >"$prefix/readme/app.c"
(cd "$prefix/readme" && eval "${readme_static/#cc /cc ${cflags[*]} -o app }") ||
  fail "the documented static line does not build: $readme_static"
needs "$prefix/readme/app" "" libpercore
run "$prefix/readme/app"

cmake -S "$here/user_cmake" -B "$prefix/user_cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_FLAGS="${cflags[*]}" -DCMAKE_CXX_FLAGS="${cflags[*]}" \
  -DCMAKE_EXE_LINKER_FLAGS="${cflags[*]}" >/dev/null
cmake --build "$prefix/user_cmake" >/dev/null
needs "$prefix/user_cmake/user_c" "" "libpercore libpercore-bench"
needs "$prefix/user_cmake/user_cc" libpercore libpercore-bench
run "$prefix/user_cmake/user_c"
run "$prefix/user_cmake/user_cc"

python3 "$here/check_abi.py" "$inc" "$libdir/libpercore.so" "$libdir/libpercore-bench.so"
echo "ok: installed percore $(pkg-config --modversion percore): C11 and C++17 programs" \
     "build with pkg-config (shared and static) and find_package, and run"
