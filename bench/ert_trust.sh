#!/bin/sh
# ERT at rank partitions and its trust, measured side by side in one run:
#   1. ERT wall time at 2 threads (one process) and at 2 ranks x 1 thread
#      (mpirun --bind-to none, as `rtrace run` starts it), quick and full, and
#      their ratio. Targets: ranks / threads <= 1.5; quick <= 3 s, full <= 10 s.
#   2. FP64 FMA ceiling (2-thread full run) / OpenBLAS DGEMM on 2 threads: >= 1.0.
#   3. DRAM ceiling / an independent read-modify-write stream (bench/src/rmw_stream.c,
#      16 B per element like ERT's kernel) over 4x the LLC, ERT's DRAM range, on
#      2 threads: 0.9 .. 1.15.
# usage: bench/ert_trust.sh [BUILD_DIR=build]   exit 1 on a missed target.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
rtrace=$build/bin/rtrace
[ -x "$rtrace" ] || { echo "ert_trust: $rtrace not found (build target rtrace first)" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "ert_trust: mpirun not found" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

seconds() {  # runs "$@", prints its wall seconds
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>"$work/last.err" || { cat "$work/last.err" >&2; echo "ert_trust: '$*' failed" >&2; exit 2; }
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
tq=$(seconds "$rtrace" ert --threads 2 --quick --quiet -o "$work/t2q.h5" --json "$work/t2q.json")
rq=$(seconds mpirun -np 2 --bind-to none "$rtrace" ert --ranks 2 --threads 1 --quick --quiet -o "$work/r2q.h5" --json "$work/r2q.json")
tf=$(seconds "$rtrace" ert --threads 2 --quiet -o "$work/t2f.h5" --json "$work/t2f.json")
rf=$(seconds mpirun -np 2 --bind-to none "$rtrace" ert --ranks 2 --threads 1 --quiet -o "$work/r2f.h5" --json "$work/r2f.json")

# DGEMM and the RMW stream right after, on the same 2 threads.
inc=
for d in /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas /usr/include/x86_64-linux-gnu; do
  [ -f "$d/cblas.h" ] && { inc=$d; break; }
done
[ -n "$inc" ] || { echo "ert_trust: cblas.h not found (apt-get install libopenblas-dev)" >&2; exit 2; }
${CC:-cc} -O2 -I"$inc" "$here/src/dgemm_bench.c" -o "$work/dgemm_bench" -lopenblas
${CC:-cc} -O3 -march=native -fopenmp "$here/src/rmw_stream.c" -o "$work/rmw_stream"
OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2 "$work/dgemm_bench" >"$work/dgemm.txt"
llc=$(getconf LEVEL3_CACHE_SIZE 2>/dev/null || echo 0)
[ "${llc:-0}" -gt 0 ] 2>/dev/null || llc=$(getconf LEVEL2_CACHE_SIZE 2>/dev/null || echo 33554432)
OMP_NUM_THREADS=2 OMP_PROC_BIND=close OMP_PLACES=cores "$work/rmw_stream" $((4 * llc)) >"$work/rmw.txt"
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$tq" "$rq" "$tf" "$rf" "$work/t2f.json" "$work/dgemm.txt" "$work/rmw.txt" "$work" <<'PY'
import json, sys
tq, rq, tf, rf = (float(x) for x in sys.argv[1:5])
ert = json.load(open(sys.argv[5]))["empirical"]
gflops, gbytes = dict(ert["gflops"]["data"]), dict(ert["gbytes"]["data"])
f = open(sys.argv[6]).read().split(); dgemm = float(f[f.index("dgemm_gflops") + 1])
r = open(sys.argv[7]).read().split(); rmw = float(r[r.index("rmw_gbs") + 1]); rmw_bytes = int(r[r.index("bytes") + 1])
missed = []
def check(name, ok):
    if not ok: missed.append(name)
    return "met" if ok else "MISSED"
print(f"ERT quick: 2 threads {tq:.2f} s, 2 ranks x 1 thread {rq:.2f} s, ratio {rq / tq:.2f} "
      f"(<= 1.5: {check('quick ratio', rq / tq <= 1.5)}; <= 3 s: {check('quick time', max(tq, rq) <= 3)})")
print(f"ERT full:  2 threads {tf:.2f} s, 2 ranks x 1 thread {rf:.2f} s, ratio {rf / tf:.2f} "
      f"(<= 1.5: {check('full ratio', rf / tf <= 1.5)}; <= 10 s: {check('full time', max(tf, rf) <= 10)})")
peak = gflops["FP64 FMA"]
print(f"FP64 FMA {peak:.1f} GFLOP/s / OpenBLAS DGEMM {dgemm:.1f} = {peak / dgemm:.3f} (>= 1.0: {check('dgemm', peak / dgemm >= 1.0)})")
dram = gbytes.get("DRAM")
if dram is None:
    print("DRAM: no DRAM ceiling in the ERT result:", gbytes); missed.append("dram")
else:
    q = dram / rmw
    print(f"DRAM {dram:.1f} GB/s / read-modify-write stream {rmw:.1f} GB/s over {rmw_bytes >> 20} MiB = {q:.3f} "
          f"(0.9 .. 1.15: {check('dram', 0.9 <= q <= 1.15)})")
# Trust: what ERT itself flagged (disturbed runs redone, ceilings it could not make consistent).
for name in ("t2q", "r2q", "t2f", "r2f"):
    doc = json.load(open(f"{sys.argv[8]}/{name}.json"))
    meta = doc["empirical"]["metadata"]
    bad = [f"{c['name']} ({c['unreliable_reason']})" for c in doc["rtrace"]["ceilings"] if c.get("unreliable")]
    print(f"  {name}: {int(meta.get('runs_preempted') or 0)} of {int(meta.get('runs') or 0)} runs redone, "
          f"{int(meta.get('remeasured_series') or 0)} series re-measured; unreliable: {', '.join(bad) or 'none'}")
print("ert_trust: " + ("PASS" if not missed else "FAIL (" + ", ".join(missed) + ")"))
sys.exit(1 if missed else 0)
PY
