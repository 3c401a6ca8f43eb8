#!/usr/bin/env bash
# rtrace's own cost per sweep point: a 50-point sweep of /bin/true with
# --ert none, whole sweep wall time minus the app's own time (sum of the
# points' wall_s as rtrace recorded them). Target: <= 50 ms per point.
#
# usage: bench/launcher_overhead.sh [BUILD_DIR] [POINTS]
# Prints one line per measurement and a final verdict line; exit 1 if over target.
set -euo pipefail
build=${1:-build}
points=${2:-50}
rtrace="$build/bin/rtrace"
[[ -x "$rtrace" ]] || { echo "launcher_overhead: $rtrace not built" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/rtrace-overhead.XXXXXX")
trap 'rm -rf -- "$work"' EXIT
python=$(command -v /usr/bin/python3 || command -v python3)

run_sweep() {  # $1: tracer mode; prints wall seconds of the whole sweep
  local out="$work/overhead-$1.h5" t0 t1
  t0=$(date +%s.%N)
  "$rtrace" --sweep "env:RTRACE_BENCH_I=1..$points" --ert none --tracer "$1" --verbose -o "$out" -- /bin/true \
    >/dev/null 2>"$work/log-$1"
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}

app_seconds() {  # sum of the recorded wall_s of every point
  "$python" - "$1" <<'PY'
import sys
try:
    import h5py
except ImportError:
    print("nan"); sys.exit(0)
with h5py.File(sys.argv[1], "r") as f:
    rows = f["/sweep/points"][()]
    print(sum(float(r["wall_s"]) for r in rows))
PY
}

# /bin/true alone, for reference: the cost of fork+exec+wait from a shell loop.
t0=$(date +%s.%N)
for ((i = 0; i < points; i++)); do /bin/true; done
t1=$(date +%s.%N)
bare=$(echo "($t1 - $t0) / $points * 1000" | bc -l)

wall=$(run_sweep none)
app=$(app_seconds "$work/overhead-none.h5")
if [[ "$app" == "nan" ]]; then
  echo "launcher_overhead: h5py not available (Debian python3-h5py); counting the app time as 0" >&2
  app=0
fi
per_point=$(echo "($wall - $app) / $points * 1000" | bc -l)
printf 'points                 %d\n' "$points"
printf 'sweep wall             %.3f s\n' "$wall"
printf 'app time (recorded)    %.3f s\n' "$app"
printf 'bare /bin/true         %.2f ms per run (shell loop, reference)\n' "$bare"
printf 'rtrace cost per point  %.2f ms (target <= 50 ms)\n' "$per_point"
# rtrace's own split of that cost (measured inside the sweep loop).
grep -h "own cost per point" "$work/log-none" | sed 's/^rtrace: /breakdown: /' || true
printf 'load average           %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
if (( $(echo "$per_point <= 50" | bc -l) )); then
  echo "launcher_overhead: PASS"
else
  echo "launcher_overhead: FAIL (over 50 ms per point)"
  exit 1
fi
