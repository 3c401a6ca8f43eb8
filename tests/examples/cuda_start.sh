#!/bin/sh
# cuda_start.sh DEMO: without a GPU, DEMO exits 2 with "no GPU found";
# with one, a tiny triad passes its check.
demo=$1
out=$("$demo" triad --size 4096 --iters 2 2>&1); rc=$?
printf '%s\n' "$out"
if printf '%s\n' "$out" | grep -q "no GPU found"; then
  [ "$rc" -eq 2 ] || { echo "cuda_start: 'no GPU found' but exit $rc (expected 2)" >&2; exit 1; }
  exit 0
fi
[ "$rc" -eq 0 ] && printf '%s\n' "$out" | grep -q "check=ok" || { echo "cuda_start: exit $rc" >&2; exit 1; }
