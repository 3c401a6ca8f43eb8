#!/bin/sh
# usage: cli_test.sh RTRACE
# `rtrace ert` end to end: a quick 2-thread characterisation that `rtrace
# validate` accepts and whose JSON has ERT's layout, then bad input.
set -u
rtrace=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$rtrace" ert --threads 2 --quick -o "$dir/e.h5" --json "$dir/e.json" || fail "quick run exited $?"
"$rtrace" validate "$dir/e.h5" || fail "rtrace validate rejects the ERT file"
ls "$dir" | grep -q tmp && fail "temporary files left: $(ls "$dir")"
python_ok=0
for py in /usr/bin/python3 python3; do
  if "$py" - "$dir/e.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
e = d["empirical"]
names = [n for n, v in e["gbytes"]["data"]]
flops = [n for n, v in e["gflops"]["data"]]
assert names and names[-1] == "DRAM", names
assert set(names) <= {"L1d", "L2", "L3", "DRAM"}, names
assert {"FP64 FMA", "FP64 no-FMA", "FP32 FMA", "FP32 no-FMA"} <= set(flops), flops
assert all(v > 0 for n, v in e["gbytes"]["data"] + e["gflops"]["data"])
assert e["metadata"]["THREADS"] == 2
print("json ok:", names, flops)
PY
  then python_ok=1; break; fi
done
[ "$python_ok" = 1 ] || fail "roofline.json does not have ERT's layout"

# Bad input: one line on stderr, exit 2.
expect_usage() {
  expected=$1
  shift
  out=$("$@" 2>&1 >/dev/null)
  rc=$?
  [ "$rc" = 2 ] || fail "'$*' exited $rc, expected 2 ($out)"
  [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "'$*' printed more than one line: $out"
  printf '%s\n' "$out" | grep -qF -- "$expected" || fail "'$*' said: $out (expected: $expected)"
  echo "ok: $out"
}
expect_usage "--threads must be at least 1 (got 0)" "$rtrace" ert --threads 0 --quick
expect_usage "the argument ('x') for option '--threads' is invalid" "$rtrace" ert --threads x
expect_usage "cannot write output file \`/nonexistent-dir/e.h5\`" "$rtrace" ert --quick -o /nonexistent-dir/e.h5
expect_usage "unrecognised option '--bogus'" "$rtrace" ert --bogus
if [ ! -e /dev/nvidia0 ]; then
  expect_usage "rtrace ert: --sms needs an NVIDIA GPU: no GPU found (libcuda.so.1 not loadable)" "$rtrace" ert --sms 5
fi
"$rtrace" ert --help | grep -q -- "--threads" || fail "--help does not list --threads"
echo PASS
