#!/bin/sh
# validate_no_gpu_test.sh VALIDATE BUNDLE_OR_BUILD WORK: on a machine without a
# GPU, validate.sh must not pass: it says "no GPU" in one line, exits 77
# (nothing validated) and writes no report. Bad usage exits 2. With a GPU this
# test skips (the gpu-labelled gpu_validate_quick runs the real thing).
validate=$1 dir=$2 work=$3
rm -rf "$work"
if "$dir/bin/rtrace" ert --list-gpus >/dev/null 2>&1; then echo "skipped: this machine has a GPU"; exit 77; fi
out=$("$validate" --quick --bundle "$dir" "$work/out" 2>&1); rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 77 ] || { echo "FAIL: validate.sh without a GPU exited $rc (expected 77, never 0)"; exit 1; }
printf '%s\n' "$out" | grep -q "^validate.sh: no GPU: " || { echo "FAIL: no 'no GPU' line"; exit 1; }
[ ! -e "$work/out" ] || { echo "FAIL: validate.sh wrote $work/out without a GPU"; exit 1; }
out=$("$validate" --bundle /nonexistent "$work/out" 2>&1); rc=$?
[ "$rc" -eq 2 ] || { echo "FAIL: --bundle /nonexistent exited $rc (expected 2): $out"; exit 1; }
out=$("$validate" 2>&1); rc=$?
[ "$rc" -eq 2 ] || { echo "FAIL: no OUT argument exited $rc (expected 2): $out"; exit 1; }
echo PASS
