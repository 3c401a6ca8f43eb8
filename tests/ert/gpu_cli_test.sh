#!/bin/sh
# usage: gpu_cli_test.sh RTRACE
# `rtrace ert --sms N --quick` on a GPU: a valid ERT file with sms_achieved
# verified by the %smid probe. Skips (77) where there is no GPU.
set -u
rtrace=$1
dir=$(mktemp -d)
# The machine's reference (issue 32) lives in the rtrace cache: this test's own.
export RTRACE_CACHE_DIR="$dir/cache"
trap 'rm -rf "$dir"' EXIT
out=$("$rtrace" ert --sms 8 --quick -o "$dir/g.h5" --json "$dir/g.json" 2>&1)
rc=$?
if [ $rc = 2 ] && printf '%s' "$out" | grep -q "no GPU found\|built without CUDA"; then
  echo "skipped: $out"
  exit 77
fi
[ $rc = 0 ] || { echo "FAIL: rtrace ert --sms 8 exited $rc: $out"; exit 1; }
printf '%s\n' "$out"
"$rtrace" validate "$dir/g.h5" || { echo "FAIL: invalid GPU ERT file"; exit 1; }
printf '%s\n' "$out" | grep -q "HBM\|DRAM" || { echo "FAIL: no HBM/DRAM ceiling"; exit 1; }
echo PASS
