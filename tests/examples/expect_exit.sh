#!/bin/sh
# expect_exit.sh CODE PATTERN CMD [ARGS...]
# Runs CMD (argv verbatim), passes when it exits with CODE and its combined
# output contains PATTERN (a fixed string; empty = anything).
code=$1; pattern=$2; shift 2
out=$("$@" 2>&1); rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne "$code" ]; then
  echo "expect_exit: exit code $rc, expected $code" >&2; exit 1
fi
if [ -n "$pattern" ] && ! printf '%s\n' "$out" | grep -qF -- "$pattern"; then
  echo "expect_exit: output does not contain: $pattern" >&2; exit 1
fi
exit 0
