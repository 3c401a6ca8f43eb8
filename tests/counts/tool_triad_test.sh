#!/usr/bin/env bash
# The Valgrind tool alone, known answers of a STREAM triad of n doubles
# (apps/triad.c) on a shrunken hierarchy (L1 4 KiB, L2 32 KiB, L3 256 KiB):
#   FLOPs = 2n exactly; L1 bytes = 24n within 1%;
#   DRAM reads within 1% of 24n, n well beyond the L3: b and c read (16n),
#   a write-allocated (8n); DRAM writes in 8n - (last level's share)..8n:
#   a written back, but for what the last level still holds at exit;
#   and the same with the L3 divided among 4 sharers (64 KiB each).
# And the hierarchy's bookkeeping: every line read into a level came from
# the level below (L2 read >= L3 read >= DRAM read for a cold stream).
#   tool_triad_test.sh VALGRIND_LIB_DIR TRIAD_APP
set -euo pipefail
lib="$1" app="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
n=200000
fail=0
run() {  # label, the last level's share in bytes, then tool options
  local label="$1" last_level="$2"; shift 2
  rm -f "$work"/counts-*.txt
  VALGRIND_LIB="$lib" valgrind -q --tool=rtrace-count --out-dir="$work" "$@" "$app" "$n" 1 4194304 >/dev/null
  local raw=("$work"/counts-*.txt)
  # The triad function's row: instructions, 12 FLOP kinds, L1 r/w, L2 r/w, L3 r/w, DRAM r/w.
  local row
  row="$(awk '$1 == "fn" && $6 == "triad" { id = $2 } $1 == "c" && $3 == id { for (k = 4; k <= NF; k++) s[k] += $k }
    END { for (k = 4; k <= 24; k++) printf "%d ", s[k]; printf "\n" }' "${raw[0]}")"
  read -r instr f1 f2 f3 f4 f5 f6 f7 f8 f9 f10 f11 f12 l1r l1w l2r l2w l3r l3w dr dw <<<"$row"
  local flops=$((f1 + f2 + f3 + f4 + f5 + f6 + f7 + f8 + f9 + f10 + f11 + f12))
  local l1=$((l1r + l1w)) dram=$((dr + dw))
  echo "$label: flops $flops l1 $l1 l2 $l2r/$l2w l3 $l3r/$l3w dram $dr/$dw (n=$n)"
  if [[ $flops -ne $((2 * n)) ]]; then echo "FAIL $label: FLOPs $flops != 2n = $((2 * n))"; fail=1; fi
  if (( l1 < 24 * n * 99 / 100 || l1 > 24 * n * 101 / 100 )); then echo "FAIL $label: L1 bytes $l1 not 24n +- 1%"; fail=1; fi
  # DRAM reads: b and c (16n) and a's write-allocate (8n), within 1% of 24n;
  # writes: a written back, all of it but what the last level still holds.
  if (( dr < 24 * n * 99 / 100 || dr > 24 * n * 101 / 100 )); then echo "FAIL $label: DRAM read $dr not 24n +- 1%"; fail=1; fi
  if (( dw < 8 * n - last_level || dw > 8 * n )); then echo "FAIL $label: DRAM write $dw not in 8n - $last_level..8n"; fail=1; fi
  # What is still dirty at exit is written back then (its own row): a reaches
  # memory whole, and no more than the caches hold is written at exit.
  local exit_dw
  exit_dw="$(awk '$1 == "fn" && $6 == "[dirty" { id = $2 } $1 == "c" && id != "" && $3 == id { s += $24 } END { printf "%d", s }' "${raw[0]}")"
  echo "$label: DRAM write at exit $exit_dw"
  if (( dw + exit_dw < 8 * n || exit_dw > last_level + 36864 )); then
    echo "FAIL $label: write-back at exit $exit_dw (triad $dw, 8n $((8 * n)))"; fail=1
  fi
  if [[ "$*" == *--L3=none* ]]; then
    if (( l3r != 0 || l3w != 0 || l2r < dr )); then echo "FAIL $label: without an L3, L2 misses go to DRAM"; fail=1; fi
  elif (( l2r < l3r || l3r < dr )); then
    echo "FAIL $label: reads grow downwards ($l2r, $l3r, $dr)"; fail=1
  fi
}
run "private L3" 262144 --L1=4K,4,64 --L2=32K,8,64 --L3=256K,8,64
run "L3 / 4" 65536 --L1=4K,4,64 --L2=32K,8,64 --L3=256K,8,64 --L3-sharers=4
run "no L3" 32768 --L1=4K,4,64 --L2=32K,8,64 --L3=none
# Set counts that are not powers of two (L1 12 sets, L3 85 sets: 1/3 of
# 192 KiB, 12 ways), which the tool indexes with a multiply by a reciprocal.
run "odd sets" 65280 --L1=3K,4,64 --L2=24K,6,64 --L3=192K,12,64 --L3-sharers=3
exit $fail
