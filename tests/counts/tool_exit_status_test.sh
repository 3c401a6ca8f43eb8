#!/usr/bin/env bash
# The tool records the process's real exit status (Valgrind 3.19 hands a
# tool's fini 0 whatever the client did): exit 0 -> 0, exit 3 -> 3, killed by
# a signal (no exit syscall) -> -1.
#   tool_exit_status_test.sh VALGRIND_LIB_DIR
set -uo pipefail
lib="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail=0
check() {  # expected exit_code, then the shell script the app runs
  local want="$1" script="$2"
  rm -f "$work"/counts-*.txt
  VALGRIND_LIB="$lib" valgrind -q --tool=rtrace-count --out-dir="$work" /bin/sh -c "$script" >/dev/null 2>&1
  local got
  got="$(awk '$1 == "exit_code" { print $2 }' "$work"/counts-*.txt)"
  if [[ "$got" != "$want" ]]; then echo "FAIL \`$script\`: exit_code [$got], want $want"; fail=1; else echo "ok   \`$script\`: exit_code $got"; fi
}
check 0 'exit 0'
check 3 'exit 3'
check -1 'kill -SEGV $$'
exit $fail
