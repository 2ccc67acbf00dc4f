#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The license line every source file carries in its first lines:
#   SPDX-License-Identifier: MIT
#
#   scripts/spdx.sh --check [DIR]  list the source files without it; exit 1
#                                  if there are any, 0 if none
#   scripts/spdx.sh --add [DIR]    add it where missing, as a comment in the
#                                  file's own syntax, after a #! line
#
# Source files: *.c *.h *.cc *.cpp *.py *.sh *.cmake CMakeLists.txt Makefile.
# In a git tree the files are those git knows (tracked, or new and not
# ignored); elsewhere every such file under DIR outside build folders.
set -euo pipefail

tag="SPDX-License-Identifier: MIT"
head_lines=5 # the line must be this close to the top

usage() {
	echo "usage: $0 --check|--add [DIR]" >&2
	exit 2
}

[ $# -ge 1 ] && [ $# -le 2 ] || usage
mode=$1
root=${2:-$(cd "$(dirname "$0")/.." && pwd)}
case $mode in --check | --add) ;; *) usage ;; esac
[ -d "$root" ] || { echo "spdx: no such folder: $root" >&2; exit 2; }
cd "$root"

is_source() {
	case ${1##*/} in
	*.c | *.h | *.cc | *.cpp | *.py | *.sh | *.cmake | CMakeLists.txt | Makefile) return 0 ;;
	esac
	return 1
}

list_files() {
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git ls-files -z --cached --others --exclude-standard
	else
		find . -path ./build -prune -o -path ./.git -prune -o -type f -print0 |
			sed -z 's|^\./||'
	fi
}

# The comment that carries the tag in this file's syntax.
comment_for() {
	case ${1##*/} in
	*.c | *.h | *.cc | *.cpp) echo "/* $tag */" ;;
	*) echo "# $tag" ;;
	esac
}

has_tag() {
	head -n "$head_lines" -- "$1" | grep "$tag" >/dev/null
}

add_tag() {
	local f=$1 line tmp
	line=$(comment_for "$f")
	tmp=$(mktemp "$f.spdx.XXXXXX")
	if head -n 1 -- "$f" | grep -q '^#!'; then
		{ head -n 1 -- "$f"; echo "$line"; tail -n +2 -- "$f"; } >"$tmp"
	else
		{ echo "$line"; cat -- "$f"; } >"$tmp"
	fi
	chmod --reference="$f" "$tmp"
	mv -- "$tmp" "$f"
}

missing=0
while IFS= read -r -d '' f; do
	is_source "$f" || continue
	[ -f "$f" ] || continue # deleted in the work tree, still in the index
	has_tag "$f" && continue
	if [ "$mode" = --add ]; then
		add_tag "$f"
		echo "added: $f"
	else
		echo "$f"
		missing=$((missing + 1))
	fi
done < <(list_files)

if [ "$mode" = --check ] && [ "$missing" -gt 0 ]; then
	echo "spdx: $missing source file(s) without '$tag' in their first $head_lines lines" >&2
	exit 1
fi
exit 0
