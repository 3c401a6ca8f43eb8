#!/bin/sh
# usage: wakeup_test.sh RTRACE
# Issue 23: on a VM a worker can take a scheduler tick (4 ms) to wake, and the
# ERT timed that latency: FLOP ceilings at 2 threads 100x below one thread's,
# sometimes marked reliable. Here the last worker (of the last rank) is made
# to sleep 4 ms before every run of the FLOP kernels the ceilings come from
# (RTRACE_ERT_TEST_WAKE_DELAY_US, a test seam in the CPU runner). The code
# before the start gate, given the same seam and most of the CPUs, gave FP64
# FMA 26.7 GFLOP/s at 2 threads marked reliable, one thread alone 59.1
# (2026-11-25): too few runs were disturbed for the busy-machine verdict, and
# the ratio checks pass when every FLOP ceiling is low alike. The FLOP
# ceilings must come out right or be marked
# unreliable, never reliable and below one worker's: checked against an
# independent 1-thread run (a 100x error fails even a loose bound) and against
# the one-worker reference ERT measured in the same run.
set -u
rtrace=$1
dir=$(mktemp -d)
# The machine's reference (issue 32) lives in the rtrace cache: this test's own.
export RTRACE_CACHE_DIR="$dir/cache"
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "SKIP: one CPU"; exit 77; }
py=
for p in /usr/bin/python3 python3; do command -v "$p" >/dev/null && { py=$p; break; }; done
[ -n "$py" ] || { echo "SKIP: no python3"; exit 77; }

"$rtrace" ert --threads 1 --quick --precision fp64 --quiet --json "$dir/t1.json" || fail "1-thread run exited $?"

check() {  # check LABEL JSON: the delayed run's FLOP ceilings against one worker's
  "$py" - "$1" "$2" "$dir/t1.json" <<'PY'
import json, sys
label, delayed, single = sys.argv[1], json.load(open(sys.argv[2]))["rtrace"], json.load(open(sys.argv[3]))["rtrace"]
one = {c["name"]: c["value"] for c in single["ceilings"] if c["kind"] == "compute"}
ref = {c["name"]: c for c in delayed.get("one_worker_ceilings", [])}
bad, good, marked = [], [], []
for c in delayed["ceilings"]:
    if c["kind"] != "compute":
        continue
    name, v = c["name"], c["value"]
    if c["unreliable"]:
        marked.append(f"{name} {v:.1f} (unreliable: {c['unreliable_reason']})")
        continue
    # Never reliable and far below one thread's, measured independently
    # (0.5x: the two runs are seconds apart on a shared machine)...
    if v < 0.5 * one[name]:
        bad.append(f"{name} {v:.1f} GFLOP/s reliable, 1 thread alone {one[name]:.1f}")
    # ...nor below the same run's own one-worker reference beyond its noise.
    r = ref.get(name)
    if r is None:
        bad.append(f"{name}: no one-worker reference in the result")
    else:
        tol = min(0.5, 0.04 + (c["max"] - c["min"]) / v + (r["max"] - r["min"]) / r["value"])
        if v < r["value"] * (1 - tol):
            bad.append(f"{name} {v:.1f} GFLOP/s reliable, below the run's one-worker {r['value']:.1f}")
    good.append(f"{name} {v:.1f} (1 thread {one[name]:.1f})")
print(f"{label}: right: {', '.join(good) or '-'}; marked: {'; '.join(marked) or '-'}")
if bad:
    print(f"{label}: " + "; ".join(bad))
    sys.exit(1)
PY
}

RTRACE_ERT_TEST_WAKE_DELAY_US=4000 "$rtrace" ert --threads 2 --quick --precision fp64 --quiet --json "$dir/t2.json" ||
  fail "delayed 2-thread run exited $?"
check "2 threads, 4 ms wake-up" "$dir/t2.json" || fail "a reliable FLOP ceiling below one worker's (above)"

if command -v mpirun >/dev/null && "$rtrace" ert --help >/dev/null 2>&1; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  if RTRACE_ERT_TEST_WAKE_DELAY_US=4000 mpirun -np 2 --bind-to none -x RTRACE_ERT_TEST_WAKE_DELAY_US "$rtrace" ert \
       --ranks 2 --threads 1 --quick --precision fp64 --quiet --json "$dir/r2.json" 2>"$dir/r2.err"; then
    check "2 ranks, 4 ms wake-up" "$dir/r2.json" || fail "a reliable FLOP ceiling below one worker's (2 ranks, above)"
  elif grep -q "built without MPI" "$dir/r2.err"; then
    echo "note: no MPI in this build: ranks not tested"
  else
    cat "$dir/r2.err"
    fail "delayed 2-rank run failed"
  fi
fi
echo PASS
