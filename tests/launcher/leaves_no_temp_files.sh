#!/bin/sh
# A passing test case leaves nothing in the temporary directory (the fake MPS
# fixture's ERT template stayed behind once per case: 956 files in /tmp here).
#   leaves_no_temp_files.sh TEST_BINARY GTEST_FILTER
set -u
tmp=$(mktemp -d) || exit 1
log=$(mktemp) || exit 1
trap 'rm -rf "$tmp" "$log"' EXIT
TMPDIR="$tmp" "$1" --gtest_filter="$2" > "$log" 2>&1 || { cat "$log"; echo "FAIL: $2 failed"; exit 1; }
left=$(ls -A "$tmp")
[ -z "$left" ] || { echo "FAIL: $2 left in TMPDIR: $left"; exit 1; }
echo "ok: $2 left nothing in TMPDIR"
