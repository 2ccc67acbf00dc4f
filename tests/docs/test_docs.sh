#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The manual pages and the bash completion made at build time
# (cmake/docs.cmake, scripts/manpages.py), and what make install puts in
# place.
#   test_docs.sh man         every page renders without a warning (groff
#                            -ww, man -l) and names every option its
#                            command's --help names
#   test_docs.sh completion  the completion offers the commands, and each
#                            command's options as its --help lists them
#   test_docs.sh install     cmake --install puts the license, the pages and
#                            the completion in place, and man finds them
set -euo pipefail
build=${PC_BUILD_DIR:?}
percore=$build/tools/percore/percore
doc=$build/doc
export ASAN_OPTIONS=detect_leaks=0

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

commands() {
	"$percore" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } /^$/ { on = 0 }'
}

# The options the items of --help name (lines starting with two spaces and
# a dash: "-o, --out-dir DIR  text"), one per line; options mentioned in an
# item's text are not items.
help_options() {
	"$percore" "$@" --help | perl -ne '
		next unless /^  (-.*)/;
		my $t = $1;
		print "$1\n" while $t =~ s/^(--?[A-Za-z][\w-]*),?(?: [A-Z][A-Z.]*)?\s*//;' | sort -u
}

check_man() {
	local cmds page out n=0
	cmds=$(commands)
	[ -n "$cmds" ] || fail "percore --help lists no commands"
	for page in "$doc/man1/percore.1" $(for c in $cmds; do echo "$doc/man1/percore-$c.1"; done); do
		[ -f "$page" ] || fail "$page was not made"
		out=$(groff -man -Tutf8 -ww -z "$page" 2>&1) || fail "groff failed on $page: $out"
		[ -z "$out" ] || fail "groff warns on $page: $out"
		out=$(LC_ALL=C.UTF-8 MANWIDTH=100 man -l "$page" 2>&1 >/dev/null) || fail "man -l $page failed"
		[ -z "$out" ] || fail "man -l $page says: $out"
		n=$((n + 1))
	done
	for c in $cmds; do
		local text opt
		text=$(LC_ALL=C.UTF-8 MANWIDTH=200 man -l "$doc/man1/percore-$c.1" 2>/dev/null | col -b)
		grep -q "percore $c" <<<"$text" || fail "percore-$c(1) has no synopsis 'percore $c'"
		for opt in $(help_options "$c"); do
			grep -qE -- "(^|[^A-Za-z0-9-])$opt([^A-Za-z0-9-]|$)" <<<"$text" ||
				fail "percore-$c(1) lacks $opt, which percore $c --help names"
		done
		if "$percore" "$c" --help | grep "^Exit status:" >/dev/null; then
			grep -q "EXIT STATUS" <<<"$text" || fail "percore-$c(1) has no EXIT STATUS"
		fi
	done
	text=$(LC_ALL=C.UTF-8 MANWIDTH=200 man -l "$doc/man1/percore.1" 2>/dev/null | col -b)
	for c in $cmds; do
		grep -q "percore-$c(1)" <<<"$text" || fail "percore(1) does not point to percore-$c(1)"
	done
	echo "ok: $n pages render without warnings and name every option of --help"
}

# What the completion offers for the words given (the last one is being
# completed).
complete_words() {
	bash -c '
		source "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		_percore
		printf "%s\n" "${COMPREPLY[@]}"' _ "$doc/bash-completion/percore" "$@"
}

check_completion() {
	local comp=$doc/bash-completion/percore got c opt
	[ -f "$comp" ] || fail "$comp was not made"
	bash -n "$comp" || fail "$comp is not valid bash"
	got=$(complete_words percore "")
	for c in $(commands); do
		grep -qx "$c" <<<"$got" || fail "'percore <TAB>' does not offer $c"
	done
	[ "$(complete_words percore ec)" = echo ] || fail "'percore ec<TAB>' gives '$(complete_words percore ec)'"
	for c in $(commands); do
		got=$(complete_words percore "$c" -)
		for opt in $(help_options "$c"); do
			grep -qx -- "$opt" <<<"$got" || fail "'percore $c -<TAB>' does not offer $opt"
		done
	done
	got=$(complete_words percore load --dur)
	[ "$got" = --duration ] || fail "'percore load --dur<TAB>' gives '$got'"
	# An option's values, not file names: run where files are to offer.
	local here words want
	here=$(mktemp -d)
	trap 'rm -rf "$here"' RETURN
	touch "$here/auto.txt" "$here/epoll.txt" "$here/spin.txt" "$here/noeviction.txt"
	while IFS='|' read -r words want; do
		# shellcheck disable=SC2086 # words are split on purpose
		got=$(cd "$here" && complete_words percore $words "" | sort | xargs)
		[ "$got" = "$want" ] || fail "'percore $words <TAB>' gives '$got', want '$want'"
	done <<-'EOF'
		echo --policy|auto compact off pcore spread
		load --policy|auto compact off pcore spread
		kv --policy|auto compact off pcore spread
		topo --policy|auto compact list off pcore spread
		echo --backend|epoll uring
		kv --backend|epoll uring
		echo --idle-policy|adaptive sleep spin
		load --idle-policy|adaptive sleep spin
		kv --idle-policy|adaptive sleep spin
		kv --maxmemory-policy|allkeys-lru noeviction
	EOF
	got=$(cd "$here" && complete_words percore kv --maxmemory-policy all)
	[ "$got" = allkeys-lru ] || fail "'percore kv --maxmemory-policy all<TAB>' gives '$got'"
	bash -c "source '$comp'; complete -p percore" | grep _percore >/dev/null ||
		fail "sourcing the completion registers nothing for percore"
	echo "ok: completion offers every command, every option of each --help and the values of --policy, --backend, --idle-policy, --maxmemory-policy"
}

check_install() {
	local prefix page
	prefix=$(mktemp -d)
	trap 'rm -rf "$prefix"' RETURN
	cmake --install "$build" --prefix "$prefix" >/dev/null
	grep -q "^MIT License" "$prefix/share/doc/percore/LICENSE" || fail "LICENSE not installed"
	[ -f "$prefix/share/bash-completion/completions/percore" ] || fail "completion not installed"
	for c in "" $(for c in $(commands); do echo "-$c"; done); do
		page="$prefix/share/man/man1/percore$c.1"
		[ -f "$page" ] || fail "$page not installed"
	done
	MANPATH="$prefix/share/man" man -w percore | grep "^$prefix/share/man/man1/percore.1" >/dev/null ||
		fail "man -w percore does not find the installed page"
	MANPATH="$prefix/share/man" MANWIDTH=100 man percore-bench 2>/dev/null | col -b |
		grep -- "--repetitions" >/dev/null || fail "man percore-bench does not show --repetitions"
	echo "ok: make install puts LICENSE, the manual pages and the completion in place"
}

[ -x "$percore" ] || fail "$percore is not built"
case ${1:-} in
man) check_man ;;
completion) check_completion ;;
install) check_install ;;
*) echo "usage: $0 man|completion|install" >&2; exit 2 ;;
esac
