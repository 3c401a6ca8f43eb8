#!/usr/bin/env bash
# Sampling overhead: the demo app, a 2-thread OpenMP molecular-dynamics-like
# code (bench/src/omp_md_steps.c: three parallel regions and their barriers
# per time step, thousands of steps) and an MPI app on 2 ranks, under the
# tracer with sampling off (RTRACE_SAMPLE_HZ=0), at the default rate (250 Hz)
# and at 4x it (1000 Hz). Both runs of a pair carry the tracer, so the ratio
# is the cost of sampling alone (timer signals, unwinding, the symbolisation
# at exit).
#
#   bench/sampling_overhead.sh [--build DIR] [--repeats N] [--quick]
#
# Every measurement is a pair started together on the same cores: the run
# without sampling and the run with it. The demo kernels (1 OpenMP thread)
# are both pinned to one CPU and time-sliced there; the MPI app's two jobs
# (2 ranks each) are bound by mpirun, rank r of both on core r. A pair shares
# its cores' conditions (a neighbour on a sibling hyperthread, the memory
# bandwidth of the moment), and its CPU-time ratio cancels them: on this
# 2-core VM back-to-back runs drift by 10-30% (a 2% effect is unreadable),
# same-core pairs of triad agree within +-0.5%, and pairs of two identical
# runs give 1.000 +- 0.005. The OpenMP code's two jobs (2 threads each) are
# placed like the MPI app's: thread t of both on core t (GOMP_CPU_AFFINITY),
# so a sampled thread that delays its partner at a barrier is in the pair's
# ratio. Its threads wait passively (OMP_WAIT_POLICY=passive): four threads
# spinning at barriers on two cores measure the scheduler (ratios of 0.9-1.1
# between identical runs here), not the sampler.
#
# Reported per workload: CPU time (user+sys of the whole process, all threads,
# from wait4 via /usr/bin/time), wall time, and the tracer's own account of
# its sampling cost (time in the signal handler + symbolisation at exit, from
# each rank's log). The target (<= 2% at the default rate) is checked on both:
# the own account, and the side-by-side CPU-time ratio unless its excess lies
# within the repeats' noise (then "inconclusive"). Exit 1 when either misses
# on any workload.
set -euo pipefail

source "$(dirname "$0")/tracer_bench_lib.sh"
tracer_bench_init sampling_overhead.sh 5 '2,34p' "$@"
[[ -x /usr/bin/time ]] || { echo "sampling_overhead.sh: needs /usr/bin/time (Debian package time)" >&2; exit 2; }

command -v taskset >/dev/null || { echo "sampling_overhead.sh: needs taskset (Debian package util-linux)" >&2; exit 2; }
ncpu=$(nproc)

# one_run HZ DIR CMD...: prints "wall cpu own" of one traced run; pinned to
# CPU $pin when that is set.
one_run() {
  local hz="$1" dir="$2"; shift 2
  mkdir -p "$dir"
  local -a pin_cmd=()
  [[ -n "${pin:-}" ]] && pin_cmd=(taskset -c "$pin")
  # The preload starts after time(1), so only the measured command is traced.
  "${pin_cmd[@]}" /usr/bin/time -f "%e %U %S" -o "$dir/time.txt" \
    env LD_PRELOAD="$lib" RTRACE_TRACE_DIR="$dir" RTRACE_LOG=error RTRACE_SAMPLE_HZ="$hz" "$@" >/dev/null 2>&1
  ls "$dir"/*.h5 >/dev/null 2>&1 || { echo "sampling_overhead.sh: run at $hz Hz wrote no trace file: $*" >&2; exit 1; }
  # The tracer's own account of its sampling cost, per rank's log: the time
  # inside the signal handler and the symbolisation at exit (seconds, summed).
  local own
  own=$(strings "$dir"/*.h5 | { grep -o 'symbolised in [0-9.]* s; [0-9]* samples took [0-9.]* s' || true; } |
        awk '{s += $3 + $8} END {printf "%.6f", s + 0}')
  awk -v own="$own" '{printf "%s %.4f %s\n", $1, $2 + $3, own}' "$dir/time.txt"
}

failed=0

# report NAME HOW: medians, ratios and the verdict from the caller's arrays.
report() {
  local name="$1" how="$2"
  local mw0 mc0 mw1 mc1 mw4 mc4 mr1 mr4 mq1 mq4 mo1 mo4
  mw0=$(printf '%s\n' "${w0[@]}" | median); mc0=$(printf '%s\n' "${c0[@]}" | median)
  mw1=$(printf '%s\n' "${w1[@]}" | median); mc1=$(printf '%s\n' "${c1[@]}" | median)
  mw4=$(printf '%s\n' "${w4[@]}" | median); mc4=$(printf '%s\n' "${c4[@]}" | median)
  mr1=$(printf '%s\n' "${r1[@]}" | median); mr4=$(printf '%s\n' "${r4[@]}" | median)
  mq1=$(printf '%s\n' "${q1[@]}" | median); mq4=$(printf '%s\n' "${q4[@]}" | median)
  mo1=$(printf '%s\n' "${o1[@]}" | median); mo4=$(printf '%s\n' "${o4[@]}" | median)
  awk -v n="$name" -v how="$how" -v w0="$mw0" -v c0="$mc0" -v w1="$mw1" -v c1="$mc1" -v w4="$mw4" -v c4="$mc4" \
      -v r="$repeats" -v r1="$mr1" -v r4="$mr4" -v q1="$mq1" -v q4="$mq4" -v all1="${r1[*]}" -v o1="$mo1" -v o4="$mo4" 'BEGIN{
    printf "%s (%s; medians of %d; ratios: median of the per-repeat pairs)\n", n, how, r
    printf "  off      cpu %8.3f s  wall %8.3f s\n", c0, w0
    printf "  250 Hz   cpu %8.3f s  wall %8.3f s  cpu ratio %.4f (%+.2f%%)  wall ratio %.4f (%+.2f%%)\n", c1, w1, r1, (r1-1)*100, q1, (q1-1)*100
    printf "  1000 Hz  cpu %8.3f s  wall %8.3f s  cpu ratio %.4f (%+.2f%%)  wall ratio %.4f (%+.2f%%)\n", c4, w4, r4, (r4-1)*100, q4, (q4-1)*100
    printf "  250 Hz cpu ratios per repeat: %s\n", all1
    printf "  the tracer'"'"'s own account (signal handler + symbolisation) / CPU time: 250 Hz %.3f%%, 1000 Hz %.3f%%\n", o1*100, o4*100
  }'
  if ((quick)); then
    echo "  no verdict: --quick runs last under a second, where the fixed cost at exit (symbolisation, ~20 ms) alone is a few percent"
    return
  fi
  # Verdict at the default rate. The tracer's own account must be <= 2%. The
  # side-by-side ratio must be too, unless the excess lies within the pairs'
  # own noise (half their interquartile range): then it cannot tell, and the
  # run says so rather than passing or failing on noise.
  local noise
  noise=$(printf '%s\n' "${r1[@]}" | sort -g | awk '{v[NR]=$1} END {q1=v[int((NR+3)/4)]; q3=v[int((3*NR+1)/4)]; print (q3-q1)/2}')
  if awk -v o="$mo1" 'BEGIN{exit !(o > 0.02)}'; then
    echo "  MISSED: the tracer's own account of sampling at the default rate is above 2% of the CPU time"
    failed=1
  elif awk -v a="$mr1" -v n="$noise" 'BEGIN{exit !(a > 1.02 + n)}'; then
    echo "  MISSED: CPU overhead at the default rate above 2% (paired ratio $mr1, noise +-$noise)"
    failed=1
  elif awk -v a="$mr1" 'BEGIN{exit !(a > 1.02)}'; then
    echo "  INCONCLUSIVE side by side: paired ratio $mr1 is above 1.02 but within the pairs' noise (+-$noise); the own account is the evidence"
  else
    echo "  met: <= 2% at the default rate (paired ratio $mr1, noise +-$noise)"
  fi
}

# pair_set NAME PIN CMD...: per repeat, the run without sampling and the run
# at 250 Hz started together, then likewise for 1000 Hz; each sampled run is
# paired with the run started beside it. PIN "cpu": both pinned to one CPU
# (alternating between repeats); "own": the command binds itself (mpirun
# --bind-to core puts rank r of both jobs on core r; GOMP_CPU_AFFINITY puts
# OpenMP thread t of both on core t).
pair_set() {
  local name="$1" how="$2"; shift 2
  local -a w0=() c0=() w1=() c1=() w4=() c4=() r1=() r4=() q1=() q4=() o1=() o4=()
  local i a0 b0 a1 b1 a4 b4 o1x o4x a0b b0b x
  for ((i = 0; i < repeats; i++)); do
    local pin="" d="$scratch/$name-$i"
    [[ "$how" == cpu ]] && pin=$((i % ncpu))
    mkdir -p "$d"
    one_run 0 "$d/off" "$@" >"$d/off.txt" & one_run 250 "$d/250" "$@" >"$d/250.txt" & wait
    one_run 0 "$d/off4" "$@" >"$d/off4.txt" & one_run 1000 "$d/1000" "$@" >"$d/1000.txt" & wait
    for x in off 250 off4 1000; do
      [[ -s "$d/$x.txt" ]] || { echo "sampling_overhead.sh: a run of the $x pair failed: $*" >&2; exit 1; }
    done
    # wall, CPU and own account: 250 Hz against the run beside it, 1000 Hz likewise.
    read -r a0 b0 x <"$d/off.txt"; read -r a1 b1 o1x <"$d/250.txt"
    read -r a0b b0b x <"$d/off4.txt"; read -r a4 b4 o4x <"$d/1000.txt"
    w0+=("$a0"); c0+=("$b0"); w1+=("$a1"); c1+=("$b1"); w4+=("$a4"); c4+=("$b4")
    o1+=("$(awk -v o="$o1x" -v c="$b1" 'BEGIN{print o/c}')")
    o4+=("$(awk -v o="$o4x" -v c="$b4" 'BEGIN{print o/c}')")
    r1+=("$(awk -v a="$b1" -v b="$b0" 'BEGIN{print a/b}')")
    r4+=("$(awk -v a="$b4" -v b="$b0b" 'BEGIN{print a/b}')")
    q1+=("$(awk -v a="$a1" -v b="$a0" 'BEGIN{print a/b}')")
    q4+=("$(awk -v a="$a4" -v b="$a0b" 'BEGIN{print a/b}')")
  done
  if [[ "$how" == cpu ]]; then
    report "$name" "pairs time-sliced on one CPU"
  else
    report "$name" "pairs side by side, rank or thread r of both on core r"
  fi
}

echo "sampling overhead: $lib, $repeats repeats (target: <= 2% CPU at 250 Hz)"
if demo=$(find_bin rtrace-demo); then
  # Runs of about 3 s of CPU time: wait4 reports it in 10 ms steps, and the
  # fixed cost at exit (symbolisation, ~20-40 ms) is part of what is measured.
  OMP_NUM_THREADS=1 pair_set "rtrace-demo triad" cpu "$demo" triad --size $(( quick ? 4000000 : 16000000 )) \
    --iters $(( quick ? 20 : 100 )) --quiet
  OMP_NUM_THREADS=1 pair_set "rtrace-demo stencil7" cpu "$demo" stencil7 --size $(( quick ? 96 : 256 )) \
    --iters $(( quick ? 20 : 140 )) --quiet
elif app=$(find_bin tracer_sampled_omp_app); then
  OMP_NUM_THREADS=1 pair_set "tracer_sampled_omp_app" cpu "$app" normal $(( quick ? 40 : 150 )) $(( quick ? 80 : 300 ))
else
  echo "sampling_overhead.sh: neither rtrace-demo nor tracer_sampled_omp_app is built" >&2; exit 2
fi
# The 2-thread OpenMP code, built here (any C compiler with OpenMP).
if ((ncpu < 2)); then
  echo "omp_md_steps: not measured (2 threads need 2 CPUs; this machine has $ncpu)"
elif ! ${CC:-cc} -O2 -fopenmp "$(dirname "$0")/src/omp_md_steps.c" -o "$scratch/omp_md_steps" -lm 2>"$scratch/cc.log"; then
  echo "omp_md_steps: not measured (cannot compile it: $(head -1 "$scratch/cc.log"))"
else
  # About 4 s of CPU time per run on this VM (2 threads).
  OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive GOMP_CPU_AFFINITY="0 1" \
    pair_set "omp_md_steps (2 OpenMP threads)" own "$scratch/omp_md_steps" $(( quick ? 400 : 4000 )) 4000
fi
if ! command -v mpirun >/dev/null || ! app=$(find_bin tracer_sampled_mpi_app); then
  echo "tracer_sampled_mpi_app: not measured (no mpirun or the app is not built)"
elif ((ncpu < 2)); then
  echo "tracer_sampled_mpi_app: not measured (2 ranks need 2 CPUs; this machine has $ncpu)"
else
  pair_set "tracer_sampled_mpi_app (2 ranks)" own mpirun -np 2 --bind-to core --map-by core -x OMP_NUM_THREADS=1 \
    -x LD_PRELOAD -x RTRACE_TRACE_DIR -x RTRACE_LOG -x RTRACE_SAMPLE_HZ "$app" $(( quick ? 40 : 150 )) $(( quick ? 80 : 300 ))
fi
exit "$failed"
