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
#   test_docs.sh readme      README.md is a newcomer's page: what percore is,
#                            the two commands, a small server that is
#                            examples/hello_server.c verbatim (built, and
#                            run here: it answers a frame), then where to
#                            go next; every local link it gives exists
#   test_docs.sh figures     scripts/render_figures.py renders a results file
#                            into a figures block, and docs/BENCHMARKS.md's
#                            block is its output (tests/docs/check_figures.py)
#   test_docs.sh kv          docs/KV.md's command list names every command
#                            and subcommand of apps/kv/proto/commands.def
#   test_docs.sh install     cmake --install puts the license, the examples,
#                            ARCHITECTURE.md, the pages (sections 1 and 3)
#                            and the completion in place, and man finds them
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
		echo --idle-policy|adaptive await mesh sleep spin
		load --idle-policy|adaptive await mesh sleep spin
		kv --idle-policy|adaptive await mesh sleep spin
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
	for f in pc_server_start pc_shard_call_q; do
		MANPATH="$prefix/share/man" man -w 3 "$f" 2>/dev/null |
			grep "^$prefix/share/man/man3/$f.3" >/dev/null || fail "man 3 $f does not find an installed page"
		MANPATH="$prefix/share/man" MANWIDTH=100 man 3 "$f" 2>/dev/null | col -b |
			grep "$f(" >/dev/null || fail "man 3 $f does not show its prototype"
	done
	[ -f "$prefix/share/doc/percore/ARCHITECTURE.md" ] || fail "ARCHITECTURE.md not installed"
	for f in "$PC_SOURCE_DIR"/examples/*.c; do
		cmp -s "$f" "$prefix/share/doc/percore/examples/$(basename "$f")" ||
			fail "examples/$(basename "$f") not installed under share/doc/percore"
	done
	echo "ok: make install puts LICENSE, the examples, ARCHITECTURE.md, the manual pages" \
	     "(man 1 and man 3) and the completion in place"
}

# The line numbers of README.md's level-2 headings matching $1.
heading_line() {
	grep -n "^## $1" "$PC_SOURCE_DIR/README.md" | head -1 | cut -d: -f1
}

# Send one frame to 127.0.0.1:$1 and print the reply's id and body.
frame_round_trip() {
	python3 - "$1" <<'PY'
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
body = b"world"
s.sendall(struct.pack(">BBIIH", 1, 0, 42, len(body), 0) + body)
buf = b""
while len(buf) < 12 or len(buf) < 12 + struct.unpack(">I", buf[6:10])[0]:
    chunk = s.recv(4096)
    if not chunk:
        break
    buf += chunk
print(struct.unpack(">I", buf[2:6])[0], buf[12:].decode())
PY
}

check_readme() {
	local readme=$PC_SOURCE_DIR/README.md ex=$PC_SOURCE_DIR/examples/hello_server.c
	local prog=$build/examples/hello_server shown cmds server next link tmp pid port got n
	cmds=$(heading_line "The two commands")
	server=$(heading_line "A small server")
	next=$(heading_line "Where to go next")
	[ -n "$cmds" ] && [ -n "$server" ] && [ -n "$next" ] ||
		fail "README.md lacks one of: The two commands, A small server, Where to go next"
	[ "$cmds" -lt "$server" ] && [ "$server" -lt "$next" ] ||
		fail "README.md's sections are not in a newcomer's order"
	grep -q "make test" "$readme" && grep -q "make bench" "$readme" ||
		fail "README.md does not give make test and make bench"
	grep -qi "keys survive a restart" "$readme" ||
		fail "README.md does not say that percore kv's keys survive a restart"
	# the first C block after the heading is the example, verbatim
	shown=$(awk -v from="$server" 'NR > from && /^```c$/ { on = 1; next } on && /^```$/ { exit } on' "$readme")
	[ "$shown" = "$(cat "$ex")" ] || fail "README.md's server is not examples/hello_server.c as it is"
	n=$(grep -Evc '^[[:space:]]*(/\*|\*|$)' "$ex")
	[ "$n" -le 40 ] || fail "examples/hello_server.c has $n lines of code; a first server fits in 40"
	for link in $(grep -oE '\]\([^)#]+' "$readme" | sed 's/^](//' | grep -v '^https\?:'); do
		[ -e "$PC_SOURCE_DIR/$link" ] || fail "README.md links to $link, which does not exist"
	done
	# and it serves
	[ -x "$prog" ] || fail "$prog is not built"
	tmp=$(mktemp -d)
	# made here: the job may not have run its redirections when sed first
	# reads them, and a sed that fails ends this script (set -e)
	: >"$tmp/out"
	"$prog" 0 >"$tmp/out" 2>"$tmp/err" &
	pid=$!
	# a job still running only: once waited for, its pid may be another's
	trap 'kill $(jobs -pr) 2>/dev/null || true; rm -rf "$tmp"' RETURN
	for _ in $(seq 600); do
		port=$(sed -n 's/^hello_server: port \([0-9]*\)$/\1/p' "$tmp/out")
		[ -n "$port" ] && break
		kill -0 "$pid" 2>/dev/null || fail "hello_server exited: $(cat "$tmp/err")"
		sleep 0.1
	done
	[ -n "$port" ] || fail "hello_server did not say its port within 60 s"
	got=$(frame_round_trip "$port") || fail "no answer from hello_server"
	[ "$got" = "42 hello, world" ] || fail "hello_server answered '$got'"
	kill -TERM "$pid"
	wait "$pid" || fail "hello_server exited $? on SIGTERM"
	echo "ok: README.md opens with what, the two commands, a server that is a built example" \
	     "(and answers), then where to go next"
}

[ -x "$percore" ] || fail "$percore is not built"
# Every record of commands.def (KV_COMMAND("name", ...) and
# KV_SUBCOMMAND("container|sub", ...)) is in KV.md's "## Commands" part,
# in capitals as the page writes it (a subcommand after its container).
check_kv_commands() {
	local src=${PC_SOURCE_DIR:?} section name word
	section=$(sed -n '/^## Commands/,/^## /p' "$src/docs/KV.md")
	[ -n "$section" ] || fail "docs/KV.md has no Commands section"
	while read -r name; do
		word=$(printf '%s' "${name##*|}" | tr 'a-z' 'A-Z')
		grep -qE "(^|[^A-Z-])$word([^A-Z-]|$)" <<<"$section" ||
			fail "docs/KV.md does not list $name (apps/kv/proto/commands.def)"
	done < <(sed -nE 's/^KV_(SUB)?COMMAND\("([^"]+)".*/\2/p' "$src/apps/kv/proto/commands.def")
	echo "docs/KV.md lists every command of commands.def"
}

case ${1:-} in
readme) check_readme ;;
kv) check_kv_commands ;;
figures) python3 "$PC_SOURCE_DIR/tests/docs/check_figures.py" "$PC_SOURCE_DIR" "$percore" ;;
man) check_man ;;
completion) check_completion ;;
install) check_install ;;
*) echo "usage: $0 man|completion|install|readme|figures" >&2; exit 2 ;;
esac
