#!/bin/sh
# demo_kernels.sh DEMO: every CUDA demo kernel and variant at a small size passes
# its check on the GPU, and a corrupted result exits 1. Exit 77 without a GPU.
demo=$1
probe=$("$demo" triad --size 1024 --iters 1 2>&1); rc=$?
if [ "$rc" -eq 2 ] && printf '%s\n' "$probe" | grep -q "no GPU found"; then
  echo "demo_kernels.sh: no GPU found; skipping"
  exit 77
fi
failed=0
run() {
  out=$("$demo" "$@" 2>&1); rc=$?
  printf '%s\n' "$out"
  if [ "$rc" -ne 0 ]; then echo "demo_kernels.sh: FAILED: $demo $* (exit $rc)" >&2; failed=1; fi
}
run triad --size 1000003 --iters 2
run stencil7 --size 67 --iters 3
run gsrb --size 45 --iters 2 --variant all
run spmv --size 100003 --iters 2 --variant all
run gpp --size 160 --variant all
run dgemm --size 200 --iters 2
run fma --size 100003 --iters 3 --variant all
out=$("$demo" stencil7 --size 40 --iters 2 --inject-error 2>&1); rc=$?
if [ "$rc" -ne 1 ] || ! printf '%s\n' "$out" | grep -q "check FAILED"; then
  echo "demo_kernels.sh: --inject-error exited $rc, expected 1 with 'check FAILED'" >&2
  failed=1
fi
exit $failed
