#!/usr/bin/env bash
# rtrace-demo-plain is what the counting pass can run: no region API (an
# unmodified code) and no AVX-512 instruction (Valgrind 3.19 has none).
#   plain_demo_test.sh RTRACE_DEMO_PLAIN
set -euo pipefail
bin="$1"
# Each listing is counted whole (grep -c): `grep -q` quits at the first match,
# and under pipefail the listing tool's SIGPIPE would turn a found match into "none".
found() { [ "$("$@" | grep -c "$pattern")" -gt 0 ]; }
pattern=rtrace_region
if found nm -D "$bin"; then
  echo "FAIL: $bin calls the region API"; exit 1
fi
pattern=librtrace
if found ldd "$bin"; then
  echo "FAIL: $bin links an rtrace library"; exit 1
fi
pattern=%zmm
if found objdump -d --no-show-raw-insn "$bin"; then
  echo "FAIL: $bin has AVX-512 instructions (zmm registers)"; exit 1
fi
out="$("$bin" triad --size 100003 --iters 3 --threads 2)"
grep -q 'check=ok' <<<"$out" || { echo "FAIL: $out"; exit 1; }
echo "ok: unannotated, no AVX-512, checks ok"
