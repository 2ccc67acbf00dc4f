#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The API reference is complete (scripts/apidoc.py, cmake/Doxyfile.in):
#   test_api.sh comments  every public function and type of include/percore
#                         has a contract comment directly above it
#   test_api.sh doxygen   Doxygen reads the headers (through apidoc.py's
#                         filter) without a warning, undocumented functions
#                         and types included; only undocumented struct
#                         fields, enum values and macros are let pass
#   test_api.sh man       a section 3 page per public function was made,
#                         each renders without a warning
set -euo pipefail
src=${PC_SOURCE_DIR:?}
build=${PC_BUILD_DIR:?}

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

check_comments() {
	python3 "$src/scripts/apidoc.py" check "$src"/include/percore/*.h ||
		fail "public declarations without a contract comment (above)"
}

check_doxygen() {
	local tmp n
	command -v doxygen >/dev/null || { echo "SKIP: doxygen is not installed (scripts/deps.sh)"; exit 77; }
	[ -f "$build/doc/api/Doxyfile" ] || fail "$build/doc/api/Doxyfile was not configured"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' RETURN
	# the build's configuration, into a folder of its own, no HTML
	{ cat "$build/doc/api/Doxyfile"
	  echo "OUTPUT_DIRECTORY = $tmp"
	  echo "WARN_LOGFILE = $tmp/warnings.log"
	  echo "GENERATE_HTML = NO"; } | doxygen - >"$tmp/out" 2>&1 ||
		fail "doxygen failed: $(tail -5 "$tmp/out")"
	# a warning's continuation lines start with blanks
	grep -v '^[[:space:]]' "$tmp/warnings.log" |
		grep -vE 'warning: Member .* \((variable|enumvalue|macro definition)\) of .* is not documented\.$' \
		>"$tmp/bad" || true
	n=$(wc -l <"$tmp/bad")
	if [ "$n" -gt 0 ]; then
		sed -n 1,40p "$tmp/bad" >&2
		fail "doxygen: $n warning(s) on the public headers"
	fi
	echo "ok: doxygen reads every public header without a warning on a function or type"
}

check_man() {
	local dir=$build/doc/man3 f out n
	[ -d "$dir" ] || fail "$dir was not made"
	for f in pc_server_start pc_shard_call_q pc_spsc_push pc_arena_stats pc_tune_report_count; do
		[ -f "$dir/$f.3" ] || fail "no page for $f"
	done
	n=$(ls "$dir"/*.3 | wc -l)
	# one groff over all pages: its warnings name the page
	out=$(groff -man -Tutf8 -ww -z "$dir"/*.3 2>&1) || fail "groff failed: $out"
	[ -z "$out" ] || fail "groff warns: $out"
	out=$(MANWIDTH=100 man -l "$dir/pc_server_start.3" 2>/dev/null | col -b)
	grep -q "#include <percore/server.h>" <<<"$out" || fail "pc_server_start(3) has no #include line"
	grep -q "int pc_server_start(" <<<"$out" || fail "pc_server_start(3) has no prototype"
	grep -qi "returns" <<<"$out" || fail "pc_server_start(3) lacks the header's contract"
	echo "ok: $n section 3 pages render without warnings"
}

case ${1:-} in
comments) check_comments ;;
doxygen) check_doxygen ;;
man) check_man ;;
*) echo "usage: $0 comments|doxygen|man" >&2; exit 2 ;;
esac
