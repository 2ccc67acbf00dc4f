#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The installed headers behave in other people's builds:
#   - none defines a feature-test macro (_GNU_SOURCE and the like);
#   - each compiles alone, with nothing defined first, as C under -std=c11,
#     -std=c17 and -std=gnu11 with -Wall -Wextra -Wpedantic -Werror, and as
#     C++17 under -Wall -Wextra -Wpedantic -Werror (one translation unit
#     per header, standard and compiler);
#   - they put no name into a C++ program's global namespace beyond their
#     own pc_/PC_ ones (no using-declarations of std:: atomics);
#   - percore.h includes every other one;
#   - a slot-sequence ring cannot be handed to the copying functions of
#     spsc.h (they would lose the message), while its own functions take it.
set -euo pipefail
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$PC_BUILD_DIR" --prefix "$prefix" >/dev/null
inc=$prefix/include
tu=$prefix/tu
mkdir -p "$tu"
fail=0

bad=$(grep -lE '#[[:space:]]*define[[:space:]]+_(GNU|DEFAULT|POSIX_C|XOPEN|BSD)_SOURCE' \
      "$inc/percore.h" "$inc"/percore/*.h || true)
if [ -n "$bad" ]; then
  echo "FAIL: feature-test macros defined in: $bad"
  fail=1
fi

for h in "$inc"/percore/*.h; do
  name=percore/$(basename "$h")
  grep -q "#include \"$name\"" "$inc/percore.h" || { echo "FAIL: percore.h misses $name"; fail=1; }
done

# One job per header and language: c11 c17 gnu11 and c++17.
jobs=()
for h in "$inc/percore.h" "$inc"/percore/*.h; do
  rel=${h#"$inc"/}
  stem=$(echo "$rel" | tr '/.' '__')
  printf '#include <%s>\n' "$rel" >"$tu/$stem.c"
  cp "$tu/$stem.c" "$tu/$stem.cc"
  for std in c11 c17 gnu11; do
    jobs+=("gcc -std=$std -Wall -Wextra -Wpedantic -Werror -I$inc -fsyntax-only $tu/$stem.c")
  done
  jobs+=("g++ -std=c++17 -Wall -Wextra -Wpedantic -Werror -I$inc -fsyntax-only $tu/$stem.cc")
done
printf '%s\n' "${jobs[@]}" >"$tu/jobs"
# each failing command prints itself and its first errors
if ! xargs -d '\n' -P "$(nproc)" -I{} sh -c '{} 2>"$0.$$.err" || { echo "FAIL: {}"; head -5 "$0.$$.err"; exit 1; }' \
     "$tu/err" <"$tu/jobs"; then
  fail=1
fi

# A C++ program may use the standard atomics' names for its own things.
cat >"$tu/own_names.cc" <<'CC'
#include <percore.h>
static int memory_order_relaxed, atomic_load_explicit, atomic_store_explicit;
int main() { return memory_order_relaxed + atomic_load_explicit + atomic_store_explicit; }
CC
g++ -std=c++17 -Wall -Wextra -Wpedantic -Werror -I"$inc" -fsyntax-only "$tu/own_names.cc" ||
  { echo "FAIL: percore.h takes global names from a C++ program"; fail=1; }

cat >"$tu/seq_ok.c" <<'C'
#include <percore/spsc_seq.h>
size_t room(struct pc_spsc_seq *r) { return pc_spsc_seq_room(r, 1); }
C
cat >"$tu/seq_misuse.c" <<'C'
#include <percore/spsc_seq.h>
int push(struct pc_spsc_seq *r, const void *m) { return pc_spsc_push(r, m); }
C
gcc -std=c11 -Wall -Werror -I"$inc" -fsyntax-only "$tu/seq_ok.c" ||
  { echo "FAIL: a seq ring's own function does not take it"; fail=1; }
if gcc -std=c11 -Wall -Werror -I"$inc" -fsyntax-only "$tu/seq_misuse.c" 2>/dev/null; then
  echo "FAIL: pc_spsc_push() accepts a slot-sequence ring"
  fail=1
fi

[ "$fail" = 0 ] || exit 1
echo "ok: ${#jobs[@]} header compilations (C11, C17, GNU11, C++17; all pedantic), umbrella complete,"\
     "no feature-test macros, no names in C++'s global namespace, seq rings typed"
