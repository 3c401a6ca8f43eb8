#!/bin/sh
# Wall time of a full CPU characterisation (target <= 15 s on the 2-core CI
# machine) and of --quick (target <= 3 s), plus the ceilings they found.
# Exit 1 when a target is missed.
# usage: bench/ert_speed.sh [BUILD_DIR=build] [THREADS=all cores]
set -eu
build=${1:-build}
threads=${2:-$(nproc)}
rtrace=$build/bin/rtrace
[ -x "$rtrace" ] || { echo "ert_speed: $rtrace not found (build target rtrace first)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
timed() {  # prints seconds of wall time of "$@"
  start=$(date +%s.%N)
  "$@" > /dev/null
  end=$(date +%s.%N)
  echo "$end - $start" | bc -l
}
full=$(timed "$rtrace" ert --threads "$threads" --quiet -o "$work/full.h5" --json "$work/full.json")
quick=$(timed "$rtrace" ert --threads "$threads" --quick --quiet -o "$work/quick.h5" --json "$work/quick.json")
python3 - "$work/full.json" "$work/quick.json" "$full" "$quick" <<'PY'
import json, sys
def ceilings(path):
    e = json.load(open(path))["empirical"]
    return ", ".join(f"{n} {v:.0f}" for n, v in e["gbytes"]["data"] + e["gflops"]["data"])
full, quick = float(sys.argv[3]), float(sys.argv[4])
print(f"full : {full:5.2f} s (target <= 15 s: {'met' if full <= 15 else 'MISSED'})  {ceilings(sys.argv[1])}")
print(f"quick: {quick:5.2f} s (target <= 3 s: {'met' if quick <= 3 else 'MISSED'})  {ceilings(sys.argv[2])}")
sys.exit(0 if full <= 15 and quick <= 3 else 1)
PY
