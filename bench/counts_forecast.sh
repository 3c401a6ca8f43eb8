#!/usr/bin/env bash
# The counting pass's cost forecast against reality: `rtrace run --counts sim`
# predicts the counting run's time before it starts (a short calibration:
# reference kernels natively and under the tool, docs/counts.md "Cost") and
# reports the time it took; this prints both for a few apps, side by side.
#
#   bench/counts_forecast.sh [--build DIR] [--quick]
#
# Apps: tests/counts/apps (a STREAM triad, a 7-point stencil, DGEMM through
# OpenBLAS, an OpenMP table on 2 threads, a time-stepping loop) and, where
# Debian's packages are installed, LAMMPS (the LJ melt of its bench/in.lj)
# and HPCC (HPL and the rest on one rank, small N). Wall times: on a shared
# machine both the timed and the counting run feel the load (the calibration
# is in CPU seconds and does not): say so when quoting.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build"
quick=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "counts_forecast.sh: unknown argument \`$1\`" >&2; exit 2 ;;
  esac
done
rtrace="$build/bin/rtrace"
[[ -x "$rtrace" ]] || { echo "counts_forecast.sh: no rtrace under \`$build/bin\` (build first)" >&2; exit 2; }
"$rtrace" counts --check || exit 2
scratch="$(mktemp -d /tmp/rtrace-counts-forecast.XXXXXX)"
trap 'rm -rf "$scratch"' EXIT
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

printf 'counting pass: predicted before it starts vs taken (wall, this host'"'"'s caches); %s\n' "$(valgrind --version)"
printf '%-34s %9s %10s %9s %10s %9s  %s\n' app "timed s" "counted s" "taken x" "predicted" "pred/taken" "from"
n=0
# One row per configuration of the sweep: the first configuration's forecast
# comes from the reference kernels, the next ones' from the app's own cost on
# the previous configuration (`this app's own cost`).
forecast() {
  local name="$1" sweep="$2"; shift 2
  local out="$scratch/$n.h5" log="$scratch/$n.txt"
  n=$((n + 1))
  if ! (cd "$scratch" && "$rtrace" --sweep "$sweep" --ert none --counts sim -o "$out" -- "$@") 2>"$log" >/dev/null; then
    printf '%-34s failed: %s\n' "$name" "$(tail -1 "$log")"
    return
  fi
  # "point threads=1: counting pass ok, 01:23 (25x the timed run; predicted 22x)" and "[1/2] threads=1: ok (3.21 s)"
  local labels
  labels=$(sed -n 's/.*\] \([^:]*\): ok (.*/\1/p' "$log")
  for label in $labels; do
    local ok taken predicted timed counted how
    ok=$(grep -m1 "point $label: counting pass ok" "$log" || true)
    taken=$(sed -n 's/.*(\([0-9.]*\)x the timed run; predicted \([0-9.]*\)x).*/\1/p' <<<"$ok")
    predicted=$(sed -n 's/.*(\([0-9.]*\)x the timed run; predicted \([0-9.]*\)x).*/\2/p' <<<"$ok")
    timed=$(sed -n "s/.*\] $label: ok (\([0-9.]*\) s).*/\1/p" "$log" | head -1)
    counted=$(sed -n 's/.*counting pass ok, \([0-9:]*\) .*/\1/p' <<<"$ok" | awk -F: '{print ($1 * 60 + $2)}')
    how=$(grep -m1 "point $label: counting pass under Valgrind" "$log" | grep -q "this app's own cost" && echo app || echo kernels)
    if [[ -z "$taken" || -z "$predicted" ]]; then
      printf '%-34s no forecast: %s\n' "$name $label" "$(grep -m1 "point $label: counting pass" "$log" || tail -1 "$log")"
      continue
    fi
    printf '%-34s %9s %10s %8sx %9sx %10s  %s\n' "$name $label" "$timed" "$counted" "$taken" "$predicted" \
      "$(awk -v p="$predicted" -v t="$taken" 'BEGIN { if (t > 0) printf "%.2f", p / t; else print "-" }')" "$how"
  done
}

bin="$build/bin"
scale=1
[[ $quick == 1 ]] && scale=0
forecast "triad 16M x 40" threads=1,2 "$bin/counts_triad" $((4000000 + 12000000 * scale)) 40
forecast "stencil 192^3 x 40" threads=1,2 "$bin/counts_stencil" 192 $((10 + 30 * scale))
[[ -x "$bin/counts_dgemm" ]] && forecast "dgemm (OpenBLAS) 1500" threads=1,2 "$bin/counts_dgemm" $((600 + 900 * scale))
forecast "omp table 4 MiB" threads=1,2 "$bin/counts_omp_table" 4194304 $((50 + 150 * scale))
forecast "time steps 2M x 400" threads=1,2 "$bin/counts_steps" 2000000 $((100 + 300 * scale))
if command -v lmp >/dev/null; then
  cat > "$scratch/in.lj" <<'LJ'
# 3d Lennard-Jones melt (LAMMPS bench/in.lj)
variable x index 1
variable y index 1
variable z index 1
units lj
atom_style atomic
lattice fcc 0.8442
region box block 0 20 0 20 0 20
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create 1.44 87287 loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
neigh_modify delay 0 every 20 check no
fix 1 all nve
run ${steps}
LJ
  forecast "LAMMPS LJ 32k atoms, 200 steps" ranks=1,2 lmp -in "$scratch/in.lj" -var steps $((50 + 150 * scale)) -log none -screen none
fi
if command -v hpcc >/dev/null; then
  cat > "$scratch/hpccinf.txt" <<HPCC
HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
$((1000 + 500 * scale))         Ns
1            # of NBs
80           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
1            Ps
1            Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
HPCC
  forecast "HPCC N=$((1000 + 500 * scale))" ranks=1,2 hpcc
fi
