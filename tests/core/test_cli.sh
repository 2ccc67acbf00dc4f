#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The percore command's contract: --help, exit codes 0/1/2, one-line reasons
# naming the bad option; --version; the examples' arguments.
set -u
pc="$PC_BUILD_DIR/tools/percore/percore"
fail=0
check() { # expected-status description command...
  local want=$1 what=$2; shift 2
  "$@" >/tmp/pc_cli.$$ 2>&1; local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: $what: exit $got, want $want"; cat /tmp/pc_cli.$$; fail=1
  else
    echo "ok: $what"
  fi
}
check 0 "--help"                 "$pc" --help
check 0 "--version"              "$pc" --version
check 2 "no command"             "$pc"
check 2 "unknown command"        "$pc" no-such-command
"$pc" no-such-command 2>&1 | grep -q "unknown command 'no-such-command'" \
  || { echo "FAIL: unknown command has no reason"; fail=1; }
# Every listed subcommand answers --help with status 0.
for c in $("$pc" --help | awk '/^commands:/{on=1;next} on && NF==0{exit} on{print $1}'); do
  check 0 "$c --help" "$pc" "$c" --help
done
# 'percore help CMD' prints what 'percore CMD --help' prints, for every
# command; 'percore help' alone the list, 'percore help nope' a reason.
for c in $("$pc" --help | awk '/^commands:/{on=1;next} on && NF==0{exit} on{print $1}'); do
  check 0 "help $c" "$pc" help "$c"
  if [ "$("$pc" help "$c" 2>&1)" = "$("$pc" "$c" --help 2>&1)" ]; then echo "ok: help $c is $c --help"
  else echo "FAIL: 'percore help $c' differs from 'percore $c --help'"; fail=1; fi
done
check 0 "help" "$pc" help
grep -q "^commands:" /tmp/pc_cli.$$ || { echo "FAIL: 'percore help' lists no commands"; fail=1; }
check 2 "help no-such-command" "$pc" help no-such-command
grep -q "unknown command 'no-such-command'" /tmp/pc_cli.$$ ||
  { echo "FAIL: 'percore help no-such-command' gives no reason"; fail=1; }
# Every subcommand names an option it does not know, and exits 2.
for c in $("$pc" --help | awk '/^commands:/{on=1;next} on && NF==0{exit} on{print $1}'); do
  check 2 "$c --bogus" "$pc" "$c" --bogus
  grep -q -- "--bogus" /tmp/pc_cli.$$ || { echo "FAIL: $c --bogus: the option is not named"; fail=1; }
done
# The build line names the sanitizer, "none" when there is none.
"$pc" --version | grep -Eq 'sanitizer: (none|asan|tsan|fuzz)\)$' && echo "ok: --version sanitizer" \
  || { echo "FAIL: --version: $("$pc" --version)"; fail=1; }

# The examples answer --help and refuse what they cannot parse (exit 2),
# before starting anything.
examples=0
for ex in "$PC_BUILD_DIR"/examples/*; do
  [ -x "$ex" ] && [ -f "$ex" ] || continue
  examples=$((examples + 1))
  name=$(basename "$ex")
  check 0 "$name --help" timeout 10 "$ex" --help
  grep -q "^usage: $name" /tmp/pc_cli.$$ || { echo "FAIL: $name --help: no usage"; fail=1; }
  for bad in "--bogus" "x" "7000x" "70000" "7000 y" "0 1 2"; do
    # shellcheck disable=SC2086
    check 2 "$name $bad" timeout 10 "$ex" $bad
  done
done
[ "$examples" -ge 2 ] || { echo "FAIL: $examples examples found in $PC_BUILD_DIR/examples"; fail=1; }
rm -f /tmp/pc_cli.$$
exit $fail
