#!/usr/bin/env bash
# The Valgrind tool alone: every kind of floating-point instruction of
# apps/flop_kinds.c is counted exactly (FMA = 2), under its precision and
# vector width, and attributed to its function; instructions match cachegrind's.
#   tool_flops_test.sh VALGRIND_LIB_DIR FLOP_KINDS_APP
set -euo pipefail
lib="$1" app="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
n=1000
VALGRIND_LIB="$lib" valgrind -q --stats=yes --tool=rtrace-count --out-dir="$work" "$app" "$n" >/dev/null 2>"$work/stats.txt"
raw=("$work"/counts-*.txt)
# --stats=yes: the helper calls made (one per batch of accesses), not 0.
calls="$(sed -n 's/.*rtrace-count: \([0-9]*\) helper calls.*/\1/p' "$work/stats.txt")"
[[ -n "$calls" && "$calls" -gt 0 ]] || { echo "FAIL --stats=yes: helper calls [$calls]"; exit 1; }
[[ ${#raw[@]} -eq 1 && -f "${raw[0]}" ]] || { echo "expected one raw file, got: ${raw[*]}"; exit 1; }
grep -q '^end$' "${raw[0]}" || { echo "raw file not complete"; exit 1; }

# Per function: the 12 FLOP columns (fields 5..16 of a "c" row) summed over threads.
sums="$(awk '$1 == "fn" { name[$2] = $6 } $1 == "c" { f = name[$3]; for (k = 5; k <= 16; k++) s[f, k] += $k; seen[f] = 1 }
  END { for (f in seen) { printf "%s", f; for (k = 5; k <= 16; k++) printf " %d", s[f, k]; printf "\n" } }' "${raw[0]}")"
fail=0
check() {  # function, then the 12 expected per-iteration FLOPs (fp64 s/128/256/512, fp32 ..., fp16 ...)
  local fn="$1"; shift
  local want="$fn"
  for v in "$@"; do want+=" $((v * n))"; done
  local got
  got="$(grep -E "^$fn " <<<"$sums" || echo "$fn (missing)")"
  if [[ "$got" != "$want" ]]; then
    echo "FAIL $fn: got [$got] want [$want]"
    fail=1
  else
    echo "ok   $got"
  fi
}
#                      fp64: s 128 256 512  fp32: s 128 256 512  fp16
check sse_scalar          2 0 0 0            0 0 0 0              0 0 0 0
check sse_scalar_f        0 0 0 0            2 0 0 0              0 0 0 0
check sse_packed          0 4 0 0            0 0 0 0              0 0 0 0
check sse_packed_f        0 0 0 0            0 8 0 0              0 0 0 0
check avx_packed          0 0 8 0            0 0 0 0              0 0 0 0
check avx_packed_f        0 0 0 0            0 0 16 0             0 0 0 0
check fma256              0 0 8 0            0 0 0 0              0 0 0 0
check fma256f             0 0 0 0            0 0 16 0             0 0 0 0
check fma128              0 4 0 0            0 0 0 0              0 0 0 0
check fma128f             0 0 0 0            0 8 0 0              0 0 0 0
check fma_sd              2 0 0 0            0 0 0 0              0 0 0 0
check fma_ss              0 0 0 0            2 0 0 0              0 0 0 0
check div_sqrt256         0 0 8 0            0 0 0 0              0 0 0 0
check min_max256          0 0 8 0            0 0 0 0              0 0 0 0
check x87                 2 0 0 0            0 0 0 0              0 0 0 0
check hadd256             0 0 4 0            0 0 0 0              0 0 0 0
check addsub256           0 0 4 0            0 0 0 0              0 0 0 0
check rcp_rsqrt256        0 0 0 0            0 0 16 0             0 0 0 0

# Instructions: the same count as cachegrind's I refs, same environment.
ours="$(awk '$1 == "c" { s += $4 } END { print s }' "${raw[0]}")"
cg="$(VALGRIND_LIB="$lib" valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$app" "$n" 2>&1 >/dev/null |
  sed -n 's/.*I *refs: *\([0-9,]*\).*/\1/p' | tr -d ,)"
if [[ "$ours" != "$cg" ]]; then
  echo "FAIL instructions: ours $ours, cachegrind $cg"
  fail=1
else
  echo "ok   instructions $ours (= cachegrind)"
fi
exit $fail
