#!/usr/bin/env bash
# The counting pass's cost: `rtrace counts` (rtrace's Valgrind tool, this
# host's cache geometry, the raw files turned into count tables) against
# Valgrind's own cachegrind and the plain run, on the same apps, runs
# interleaved side by side. CPU seconds (user + system of the whole process
# tree) are compared, the median of the repeats: wall time on a shared machine
# is mostly other people's work. Target: the counting pass costs no more than
# cachegrind on each app (ratio <= 1.00); exit 1 when missed.
#
#   bench/counts_overhead.sh [--build DIR] [--repeats N] [--quick]
#
# Apps (tests/counts/apps, built for x86-64-v3): a STREAM triad (streaming,
# the simulation's worst case: every line misses every level), a 7-point
# stencil, DGEMM through OpenBLAS (FMA-bound: Valgrind emulates FMA, for
# every tool), a Fortran triad, and an OpenMP table sweep on 2 threads.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build"
repeats=5
quick=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --quick) quick=1; repeats=3; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "counts_overhead.sh: unknown argument \`$1\`" >&2; exit 2 ;;
  esac
done
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || { echo "counts_overhead.sh: --repeats needs a positive integer" >&2; exit 2; }
rtrace="$build/bin/rtrace"
[[ -x "$rtrace" ]] || { echo "counts_overhead.sh: no rtrace under \`$build/bin\` (build first)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "counts_overhead.sh: valgrind not found (Debian package valgrind)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "counts_overhead.sh: /usr/bin/time not found (Debian package time)" >&2; exit 2; }
"$rtrace" counts --check || exit 2
vglib="${RTRACE_VALGRIND_LIB:-$build/lib/rtrace-valgrind}"
scratch="$(mktemp -d /tmp/rtrace-counts-overhead.XXXXXX)"
trap 'rm -rf "$scratch"' EXIT
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OPENBLAS_NUM_THREADS=1

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
# CPU seconds (user + system) of a command and everything it started.
cpu() {
  /usr/bin/time -f '%U %S' -o "$scratch/time" "$@" >/dev/null 2>"$scratch/stderr" ||
    { echo "counts_overhead.sh: \`$*\` failed: $(tail -1 "$scratch/stderr")" >&2; exit 1; }
  awk '{print $1 + $2}' "$scratch/time"
}

missed=0
run_app() {
  local name="$1"; shift
  local plain=() cg=() ours=()
  for ((i = 0; i < repeats; i++)); do
    plain+=("$(cpu "$@")")
    # The environment `rtrace counts` gives the app (VALGRIND_LIB, HWLOC_COMPONENTS, OpenMP waiting),
    # given to cachegrind too: Valgrind's FMA emulation runs measurably faster or
    # slower with the stack alignment that the environment's size sets.
    cg+=("$(cpu env VALGRIND_LIB="$vglib" HWLOC_COMPONENTS=-x86 OMP_WAIT_POLICY=passive GOMP_SPINCOUNT=0 KMP_BLOCKTIME=0 \
              valgrind -q --tool=cachegrind --cachegrind-out-file=/dev/null "$@")")
    ours+=("$(cpu "$rtrace" counts --quiet -o "$scratch/c.h5" -- "$@")")
  done
  local p c o
  p=$(printf '%s\n' "${plain[@]}" | median)
  c=$(printf '%s\n' "${cg[@]}" | median)
  o=$(printf '%s\n' "${ours[@]}" | median)
  awk -v n="$name" -v p="$p" -v c="$c" -v o="$o" 'BEGIN {
    pp = p > 0.005 ? p : 0.005
    printf "%-28s %9.3f %9.3f %9.3f %9.1fx %9.1fx %9.2f%s\n", n, p, c, o, c / pp, o / pp, o / c, (o <= c ? "" : "  MISSED") }'
  awk -v c="$c" -v o="$o" 'BEGIN { exit (o <= c) ? 0 : 1 }' || missed=1
}

bin="$build/bin"
for app in counts_triad counts_stencil counts_dgemm counts_triad_f counts_omp_table; do
  [[ -x "$bin/$app" ]] || { echo "counts_overhead.sh: $app not built (tests/counts)" >&2; exit 2; }
done
echo "counting pass vs cachegrind vs plain: CPU seconds, median of $repeats, interleaved; $(valgrind --version)"
printf '%-28s %9s %9s %9s %10s %10s %9s\n' app "plain s" "cg s" "counts s" "cg/plain" "counts/pl" "counts/cg"
run_app "triad 4M x 5" "$bin/counts_triad" $((quick ? 1000000 : 4000000)) 5
run_app "stencil 128^3 x 5" "$bin/counts_stencil" $((quick ? 96 : 128)) 5
run_app "dgemm (OpenBLAS) 400" "$bin/counts_dgemm" $((quick ? 200 : 400))
run_app "triad (Fortran) 4M" "$bin/counts_triad_f" $((quick ? 1000000 : 4000000))
OMP_NUM_THREADS=2 run_app "omp table 2 threads" "$bin/counts_omp_table" 4194304 $((quick ? 8 : 20))
if ((missed)); then
  echo "target (counting pass <= cachegrind on every app): MISSED"
  exit 1
fi
echo "target (counting pass <= cachegrind on every app): met"
