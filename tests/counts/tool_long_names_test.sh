#!/usr/bin/env bash
# The tool keeps apart two functions whose names differ only after 1300
# characters (apps/long_names.c): one bucket each, with their own FLOPs
# (n and 2n). A key cut to a fixed length merged them.
#   tool_long_names_test.sh VALGRIND_LIB_DIR LONG_NAMES_APP
set -euo pipefail
lib="$1" app="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
n=10000
VALGRIND_LIB="$lib" valgrind -q --tool=rtrace-count --out-dir="$work" "$app" "$n" >/dev/null
raw=("$work"/counts-*.txt)
# FLOPs per function name suffix (_one, _two): sum of the 12 FLOP kinds.
read -r buckets one two < <(awk '
  $1 == "fn" && $6 ~ /^counted_function_with_a_very_long_name_/ { nb++; if ($6 ~ /_one$/) one[$2] = 1; else if ($6 ~ /_two$/) two[$2] = 1 }
  $1 == "c" { f = 0; for (k = 5; k <= 16; k++) f += $k; if ($3 in one) s1 += f; if ($3 in two) s2 += f }
  END { printf "%d %d %d\n", nb, s1, s2 }' "${raw[0]}")
echo "buckets $buckets, flops _one $one _two $two (n=$n)"
fail=0
if [[ $buckets -ne 2 ]]; then echo "FAIL: $buckets buckets for the two long names, expected 2"; fail=1; fi
if [[ $one -ne $n ]]; then echo "FAIL: _one has $one FLOPs, expected $n"; fail=1; fi
if [[ $two -ne $((2 * n)) ]]; then echo "FAIL: _two has $two FLOPs, expected $((2 * n))"; fail=1; fi
exit $fail
