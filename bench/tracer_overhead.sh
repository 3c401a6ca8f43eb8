#!/usr/bin/env bash
# Tracer overhead: the demo app with and without the injected tracer (CPU
# regions + PMPI layer), runs interleaved side by side, median of repeats.
# Target: <= 1% of wall time overall; exit 1 when missed (on a shared, noisy
# machine it is: the exit status reports the measurement, not the intent).
#
#   [RTRACE_TRACER_COLLECTIVE=1|gather|0] bench/tracer_overhead.sh [--build DIR] [--repeats N] [--quick]
#
# Uses DIR/bin/rtrace-demo (and rtrace-demo-mpi) when built, else the
# tracer's own test apps. Prints one line per workload and the overall ratio.
set -euo pipefail

source "$(dirname "$0")/tracer_bench_lib.sh"
tracer_bench_init tracer_overhead.sh 7 '2,10p' "$@"

now() { date +%s.%N; }

# run_pair NAME CMD...: interleaves plain and traced runs, prints medians + ratio.
total_plain=0
total_traced=0
run_pair() {
  local name="$1"; shift
  local plain=() traced=()
  for ((i = 0; i < repeats; i++)); do
    local t0 t1 dir="$scratch/$name-$i"
    mkdir -p "$dir"
    t0=$(now); env -u LD_PRELOAD -u RTRACE_TRACE_DIR "$@" >/dev/null 2>&1; t1=$(now)
    plain+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')")
    t0=$(now); env LD_PRELOAD="$lib" RTRACE_TRACE_DIR="$dir" RTRACE_LOG=error "$@" >/dev/null 2>&1; t1=$(now)
    traced+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')")
    ls "$dir"/*.h5 >/dev/null 2>&1 || { echo "tracer_overhead.sh: traced run of $name wrote no trace file" >&2; exit 1; }
  done
  local mp mt
  mp=$(printf '%s\n' "${plain[@]}" | median)
  mt=$(printf '%s\n' "${traced[@]}" | median)
  awk -v n="$name" -v p="$mp" -v t="$mt" -v r="$repeats" \
    'BEGIN{printf "%-34s plain %8.4f s  traced %8.4f s  ratio %.4f  overhead %+.2f%%  (median of %d)\n", n, p, t, t/p, (t/p-1)*100, r}'
  total_plain=$(awk -v a="$total_plain" -v b="$mp" 'BEGIN{print a+b}')
  total_traced=$(awk -v a="$total_traced" -v b="$mt" 'BEGIN{print a+b}')
}

echo "tracer overhead: $lib, OMP_NUM_THREADS=$OMP_NUM_THREADS, $repeats repeats, interleaved"
if demo=$(find_bin rtrace-demo); then
  size=$(( quick ? 4000000 : 16000000 ))
  run_pair "rtrace-demo triad" "$demo" triad --size "$size" --iters 20 --quiet
  run_pair "rtrace-demo stencil7" "$demo" stencil7 --size $(( quick ? 96 : 160 )) --iters 20 --quiet
else
  app=$(find_bin tracer_test_omp_app) || { echo "tracer_overhead.sh: neither rtrace-demo nor tracer_test_omp_app is built" >&2; exit 2; }
  run_pair "tracer_test_omp_app (20k regions)" "$app" normal $(( quick ? 5000 : 20000 ))
fi
if command -v mpirun >/dev/null; then
  mpi_args=(mpirun -np 2 --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 -x LD_PRELOAD -x RTRACE_TRACE_DIR -x RTRACE_LOG
            -x "RTRACE_TRACER_COLLECTIVE=${RTRACE_TRACER_COLLECTIVE:-1}")
  if demo_mpi=$(find_bin rtrace-demo-mpi); then
    run_pair "rtrace-demo-mpi triad (2 ranks)" "${mpi_args[@]}" "$demo_mpi" triad --size $(( quick ? 4000000 : 16000000 )) --iters 20 --quiet
  elif app=$(find_bin tracer_test_mpi_app); then
    run_pair "tracer_test_mpi_app (2 ranks)" "${mpi_args[@]}" "$app"
  fi
fi
awk -v p="$total_plain" -v t="$total_traced" \
  'BEGIN{met = (t/p - 1) * 100 <= 1.0
         printf "overall: plain %.4f s  traced %.4f s  ratio %.4f  overhead %+.2f%%  (target <= 1%%: %s)\n", p, t, t/p, (t/p-1)*100, met ? "met" : "MISSED"
         exit met ? 0 : 1}'
