#!/usr/bin/env bash
# Collective ranks.h5 (parallel HDF5 inside MPI_Finalize) vs one file per rank
# (RTRACE_TRACER_COLLECTIVE=0), at 64 oversubscribed ranks, side by side; also
# ranks.h5 gathered to rank 0 and written serially (RTRACE_TRACER_COLLECTIVE=gather).
#
#   bench/tracer_write.sh [--build DIR] [--ranks N] [--repeats N]
#
# Write time = the slowest rank's tracer write (the tracer logs it at
# RTRACE_LOG=info); wall = the whole mpirun. Prints medians and the ratios.
# Target: the default writer (gather) takes at most 1.5x the per-rank files'
# write time (one ranks.h5 must not cost much more than N files); exit 1 when
# missed.
set -euo pipefail

build=""
ranks=64
repeats=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --ranks) ranks="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "tracer_write.sh: unknown argument \`$1\`" >&2; exit 2 ;;
  esac
done
root="$(cd "$(dirname "$0")/.." && pwd)"
if [[ -z "$build" ]]; then
  for d in "$root/build" "$root/build-tracer"; do
    [[ -f "$d/lib/librtrace_tracer.so" && -x "$d/bin/tracer_test_mpi_app" ]] && { build="$d"; break; }
  done
fi
lib="$build/lib/librtrace_tracer.so"
app="$build/bin/tracer_test_mpi_app"
[[ -f "$lib" && -x "$app" ]] || { echo "tracer_write.sh: need rtrace_tracer and tracer_test_mpi_app built under \`$build\`" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "tracer_write.sh: mpirun not found" >&2; exit 2; }

scratch="$(mktemp -d /tmp/rtrace-write.XXXXXX)"
trap 'rm -rf "$scratch"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1

now() { date +%s.%N; }
source "$(dirname "$0")/tracer_bench_lib.sh"  # median

declare -A write_t wall_t nfiles
for mode in collective gather per-rank; do write_t[$mode]=""; wall_t[$mode]=""; done
for ((i = 0; i < repeats; i++)); do
  for mode in collective gather per-rank; do
    dir="$scratch/$mode-$i"
    mkdir -p "$dir"
    collective=1; [[ $mode == per-rank ]] && collective=0; [[ $mode == gather ]] && collective=gather
    t0=$(now)
    LD_PRELOAD="$lib" RTRACE_TRACE_DIR="$dir" RTRACE_LOG=info RTRACE_TRACER_COLLECTIVE=$collective \
      mpirun -np "$ranks" --oversubscribe --bind-to none -x LD_PRELOAD -x RTRACE_TRACE_DIR -x RTRACE_LOG \
      -x RTRACE_TRACER_COLLECTIVE "$app" >/dev/null 2>"$dir.log" || { echo "tracer_write.sh: mpirun failed ($mode), see below" >&2; tail -5 "$dir.log" >&2; exit 1; }
    t1=$(now)
    w=$(grep -Eo 'written (collectively )?in [0-9.]+ s' "$dir.log" | awk '{print $(NF-1)}' | sort -g | tail -1)
    n=$(grep -Ec 'written (collectively )?in' "$dir.log" || true)
    [[ "$n" == "$ranks" ]] || { echo "tracer_write.sh: $mode: only $n of $ranks ranks reported a write" >&2; grep -m3 error "$dir.log" >&2 || true; exit 1; }
    write_t[$mode]+="$w "
    wall_t[$mode]+="$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}') "
    nfiles[$mode]=$(ls "$dir" | wc -l)
  done
done
echo "tracer write at $ranks oversubscribed ranks on $(getconf _NPROCESSORS_ONLN) cores, median of $repeats (interleaved)"
for mode in collective gather per-rank; do
  w=$(tr ' ' '\n' <<<"${write_t[$mode]}" | grep . | median)
  t=$(tr ' ' '\n' <<<"${wall_t[$mode]}" | grep . | median)
  printf '%-11s files %3d  slowest rank write %8.3f s  mpirun wall %8.3f s\n' "$mode" "${nfiles[$mode]}" "$w" "$t"
  eval "med_w_${mode//-/_}=$w; med_t_${mode//-/_}=$t"
done
awk -v a="$med_w_collective" -v b="$med_w_per_rank" -v c="$med_t_collective" -v d="$med_t_per_rank" \
  -v e="$med_w_gather" -v f="$med_t_gather" \
  'BEGIN{printf "ratio collective/per-rank: write %.2f  wall %.2f\nratio gather/per-rank:     write %.2f  wall %.2f\n", a/b, c/d, e/b, f/d
         met = e / b <= 1.5
         printf "target gather/per-rank write <= 1.5: %s\n", met ? "met" : "MISSED"
         exit met ? 0 : 1}'
