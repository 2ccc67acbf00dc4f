#!/usr/bin/env bash
# The percore command's contract: --help, exit codes 0/1/2, one-line reasons.
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
rm -f /tmp/pc_cli.$$
exit $fail
