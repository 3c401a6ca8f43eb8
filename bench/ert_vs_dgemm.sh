#!/bin/sh
# rtrace's FP64 FMA ceiling vs OpenBLAS DGEMM (Debian libopenblas-dev) on the
# same threads, measured side by side. Target: 1.0 <= ratio <= 1.5: the ERT
# kernel runs at the FMA peak, which DGEMM approaches but cannot beat; a
# ceiling 50% above DGEMM counts FLOPs its kernel did not execute. Exit 1 when
# the ratio is outside.
# usage: bench/ert_vs_dgemm.sh [BUILD_DIR=build] [THREADS=all cores]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
threads=${2:-$(nproc)}
rtrace=$build/bin/rtrace
[ -x "$rtrace" ] || { echo "ert_vs_dgemm: $rtrace not found (build target rtrace first)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
inc=
for d in /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas /usr/include/x86_64-linux-gnu; do
  [ -f "$d/cblas.h" ] && { inc=$d; break; }
done
[ -n "$inc" ] || { echo "ert_vs_dgemm: cblas.h not found (apt-get install libopenblas-dev)" >&2; exit 2; }
${CC:-cc} -O2 -I"$inc" "$here/src/dgemm_bench.c" -o "$work/dgemm_bench" -lopenblas

export OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads
"$rtrace" ert --threads "$threads" --quiet --json "$work/ert.json"
"$work/dgemm_bench" > "$work/dgemm.txt"
python3 - "$work/ert.json" "$work/dgemm.txt" "$threads" <<'PY'
import json, sys
ert = dict(json.load(open(sys.argv[1]))["empirical"]["gflops"]["data"])
fields = open(sys.argv[2]).read().split()
dgemm = float(fields[fields.index("dgemm_gflops") + 1])
peak = ert["FP64 FMA"]
ratio = peak / dgemm
met = 1.0 <= ratio <= 1.5
print(f"threads {sys.argv[3]}: rtrace FP64 FMA {peak:.1f} GFLOP/s, OpenBLAS DGEMM {dgemm:.1f} GFLOP/s, "
      f"ratio {ratio:.3f} (target 1.0 <= ratio <= 1.5: {'met' if met else 'MISSED'})")
sys.exit(0 if met else 1)
PY
