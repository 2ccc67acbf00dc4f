#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# scripts/spdx.sh and the license line.
#   test_spdx.sh script  --check and --add on a scratch tree holding one file
#                        of each kind: what --check reports, where --add puts
#                        the line (after a #! line), that the files still
#                        work, and that a second --add changes nothing
#   test_spdx.sh tree    --check over the source tree: every source file
#                        carries the line
set -euo pipefail
src=${PC_SOURCE_DIR:?}
spdx="$src/scripts/spdx.sh"
tag="SPDX-License-Identifier: MIT"

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

check_script() {
	local t
	t=$(mktemp -d)
	trap 'rm -rf "$t"' RETURN
	mkdir -p "$t/sub" "$t/build"
	printf '/* a file */\nint f(void) { return 1; }\n' >"$t/a.c"
	printf '#ifndef A_H\n#define A_H\nint f(void);\n#endif\n' >"$t/sub/a.h"
	printf 'extern "C" int f();\nint g() { return f(); }\n' >"$t/b.cc"
	printf 'int h() { return 2; }\n' >"$t/c.cpp"
	printf '#!/usr/bin/env python3\nprint("ok")\n' >"$t/p.py"
	printf '#!/bin/sh\necho ok\n' >"$t/s.sh"
	printf 'set(X 1)\n' >"$t/sub/x.cmake"
	printf 'project(x C)\n' >"$t/CMakeLists.txt"
	printf 'all:\n\t@echo ok\n' >"$t/Makefile"
	printf 'not a source file\n' >"$t/notes.md"
	printf 'int ignored;\n' >"$t/build/gen.c"
	printf '/* %s */\nint k;\n' "$tag" >"$t/has.c"
	chmod +x "$t/s.sh" "$t/p.py"

	local out rc=0
	out=$(bash "$spdx" --check "$t" 2>/dev/null) || rc=$?
	[ "$rc" -eq 1 ] || fail "--check exited $rc on a tree missing lines, expected 1"
	local expect="CMakeLists.txt Makefile a.c b.cc c.cpp p.py s.sh sub/a.h sub/x.cmake"
	local got
	got=$(echo "$out" | sort | tr '\n' ' ' | sed 's/ $//')
	[ "$got" = "$expect" ] || fail "--check listed '$got', expected '$expect'"

	bash "$spdx" --add "$t" >/dev/null
	bash "$spdx" --check "$t" >/dev/null || fail "--check still finds files after --add"
	[ "$(head -n 1 "$t/a.c")" = "/* $tag */" ] || fail "a.c: $(head -n 1 "$t/a.c")"
	[ "$(head -n 1 "$t/b.cc")" = "/* $tag */" ] || fail "b.cc: $(head -n 1 "$t/b.cc")"
	[ "$(head -n 1 "$t/Makefile")" = "# $tag" ] || fail "Makefile: $(head -n 1 "$t/Makefile")"
	[ "$(head -n 1 "$t/s.sh")" = "#!/bin/sh" ] || fail "s.sh lost its #! line"
	[ "$(sed -n 2p "$t/s.sh")" = "# $tag" ] || fail "s.sh line 2: $(sed -n 2p "$t/s.sh")"
	[ "$(sed -n 2p "$t/p.py")" = "# $tag" ] || fail "p.py line 2: $(sed -n 2p "$t/p.py")"
	[ -x "$t/s.sh" ] || fail "s.sh lost its execute bit"
	grep -q SPDX "$t/notes.md" && fail "notes.md is not a source file but was changed"
	[ "$(grep -c SPDX "$t/has.c")" -eq 1 ] || fail "has.c got a second line"
	[ "$("$t/s.sh")" = ok ] || fail "s.sh no longer runs"
	[ "$(python3 "$t/p.py")" = ok ] || fail "p.py no longer runs"
	cc -fsyntax-only -I"$t/sub" "$t/a.c" || fail "a.c no longer compiles"
	c++ -fsyntax-only "$t/b.cc" "$t/c.cpp" || fail "C++ files no longer compile"
	make -s -C "$t" >/dev/null || fail "Makefile no longer works"

	local before after
	before=$(cat "$t"/a.c "$t"/s.sh)
	bash "$spdx" --add "$t" >/dev/null
	after=$(cat "$t"/a.c "$t"/s.sh)
	[ "$before" = "$after" ] || fail "a second --add changed files"

	rc=0
	bash "$spdx" --frobnicate >/dev/null 2>&1 || rc=$?
	[ "$rc" -eq 2 ] || fail "unknown option exited $rc, expected 2"
	echo "ok: spdx.sh --check lists each kind, --add puts the line after #!, files still work"
}

check_tree() {
	grep -q "^MIT License" "$src/LICENSE" || fail "LICENSE is not the MIT license"
	local out
	if ! out=$(bash "$spdx" --check "$src" 2>&1); then
		echo "$out" | head -n 20
		fail "source files without '$tag' (scripts/spdx.sh --add adds it)"
	fi
	echo "ok: every source file carries '$tag'"
}

case ${1:-} in
script) check_script ;;
tree) check_tree ;;
*) echo "usage: $0 script|tree" >&2; exit 2 ;;
esac
