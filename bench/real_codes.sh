#!/usr/bin/env bash
# Four real codes from Debian through rtrace, as a new user runs them: LAMMPS
# (LJ melt, 32000 atoms), Quantum ESPRESSO (pw.x, Si8, 10 k-points), GROMACS
# (gmx_mpi, SPC/E water box, PME) and HPCC (HPL N=3000 on a 1x1 grid plus the
# rest of the suite). Each input is sized so that the plain run takes 5-10 s at
# 1 rank on the quiet 2-core VM. Per code it runs:
#   (a) plain: `mpirun -np N --bind-to none CODE` at N = 1 and 2;
#   (b) `rtrace --sweep ranks=1,2 --counts sim --ert MODE -o run.h5 -- CODE`,
#       then `rtrace analyze run.h5 --json a.json` (and the text report);
# and prints, per rank count: plain seconds, the timed run under the tracer,
# the counting pass (the whole pass and its Valgrind run) and its ratio to the
# timed run, the ERT (the time between the counting pass and the point's
# progress line: measuring the partition's ceilings, and the commit); then the
# checks of issue 29's "Done when" (no level named registers; no cache-capacity
# at a step whose summary names mpi first; HPCC's DGEMM and QE's ZGEMM get a
# rate or a sentence naming the kernel mismatch; counting pass <= 20x the timed
# run) and the code's own timers and FLOP counts against rtrace's, each PASS,
# FAIL or INFO; exit 1 when a check fails. Long (tens of minutes: the counting
# passes run under Valgrind): not a ctest; run it on a quiet machine.
#
#   bench/real_codes.sh [--build DIR] [--codes lammps,qe,gromacs,hpcc] [--ert auto|quick|none|FILE]
#                       [--ert-cache fresh|shared|user] [--size full|small] [--scratch DIR] [--keep]
#                       [--cost] [--no-sweep] [--no-install]
#
#   --ert MODE      passed to rtrace (default auto, rtrace's own default)
#   --ert-cache     fresh (default): an empty ERT cache per code, so each sweep
#                   pays the ERT as a new user does; shared: one empty cache for
#                   the whole bench; user: rtrace's own (~/.cache/rtrace)
#   --size small    inputs of about 1 s (a quick try of the script, not the target)
#   --cost          also where the counting pass's time goes, per rank count:
#                   plain, `valgrind --tool=none`, `--tool=cachegrind`, `rtrace
#                   counts` as the sweep starts it with Open MPI's waiting ranks
#                   polling (OMPI_MCA_mpi_yield_when_idle=0) and yielding (=1), with
#                   instructions, FLOPs and L1 bytes in and outside the MPI runtime
#   --no-sweep      only the plain runs (and --cost)
#   --keep          keep the scratch directory (default: removed at the end)
#
# Pure MPI: OMP_NUM_THREADS=1 for every run (OpenBLAS and GROMACS threads too).
# Missing Debian packages are installed as scripts/setup.sh does.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
inputs="$root/bench/real_codes"
build="$root/build"
codes="lammps,qe,gromacs,hpcc"
ert="auto"
ert_cache="fresh"
size="full"
scratch=""
keep=0
cost=0
sweep=1
install=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=$(cd "$2" && pwd) || { echo "real_codes.sh: --build $2: no such directory" >&2; exit 2; }; shift 2 ;;  # the sweeps run in scratch directories
    --codes) codes="$2"; shift 2 ;;
    --ert) ert="$2"; shift 2 ;;
    --ert-cache) ert_cache="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --scratch) scratch="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --cost) cost=1; shift ;;
    --no-sweep) sweep=0; shift ;;
    --no-install) install=0; shift ;;
    -h|--help) sed -n '2,37p' "$0"; exit 0 ;;
    *) echo "real_codes.sh: unknown argument \`$1\` (--help lists them)" >&2; exit 2 ;;
  esac
done
case "$size" in full|small) ;; *) echo "real_codes.sh: --size must be full or small, not \`$size\`" >&2; exit 2 ;; esac
case "$ert_cache" in fresh|shared|user) ;;
  *) echo "real_codes.sh: --ert-cache must be fresh, shared or user, not \`$ert_cache\`" >&2; exit 2 ;; esac
IFS=',' read -r -a code_list <<<"$codes"
for c in "${code_list[@]}"; do
  case "$c" in lammps|qe|gromacs|hpcc) ;;
    *) echo "real_codes.sh: unknown code \`$c\` (lammps, qe, gromacs, hpcc)" >&2; exit 2 ;; esac
done

if ((install)); then
  # shellcheck source=../scripts/setup.sh
  source "$root/scripts/setup.sh"
  RTRACE_PACKAGES=(lammps quantum-espresso quantum-espresso-data gromacs gromacs-data hpcc
                   openmpi-bin valgrind time procps python3-h5py hdf5-tools)
  rtrace_install_packages
fi
rtrace="$build/bin/rtrace"
[[ -x "$rtrace" ]] || { echo "real_codes.sh: no rtrace under \`$build/bin\` (build first)" >&2; exit 2; }
python=/usr/bin/python3
"$python" -c 'import h5py' 2>/dev/null || { echo "real_codes.sh: $python has no h5py (Debian python3-h5py)" >&2; exit 2; }
for tool in lmp pw.x gmx gmx_mpi hpcc mpirun valgrind /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "real_codes.sh: \`$tool\` not found" >&2; exit 2; }
done

if [[ -z "$scratch" ]]; then
  scratch="$(mktemp -d "${TMPDIR:-/tmp}/rtrace-real-codes.XXXXXX")"
else
  mkdir -p "$scratch"
fi
((keep)) || trap 'rm -rf -- "$scratch"' EXIT
if [[ "$(id -u)" -eq 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMP_NUM_THREADS=1
summary="$scratch/summary.jsonl"
: >"$summary"
failed=0  # a check failed or a code could not be measured: exit 1

log() { printf '[real_codes] %s\n' "$*" >&2; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

# ------------------------------------------------------------- the codes

# prepare CODE DIR: the code's inputs in DIR (generated files made here).
prepare() {
  local code="$1" dir="$2"
  mkdir -p "$dir"
  case "$code" in
    lammps) cp "$inputs/lammps-lj.in" "$dir/" ;;
    qe)
      cp "$inputs/qe-si8.in" "$dir/"
      zcat /usr/share/doc/quantum-espresso/examples/atomic/pseudo-LDA-0.5/Si.pz-vbc.UPF.gz >"$dir/Si.pz-vbc.UPF"
      if [[ "$size" == small ]]; then
        sed -i 's/ecutwfc = 45.0/ecutwfc = 30.0/; s/^ 4 4 4 0 0 0/ 2 2 2 0 0 0/' "$dir/qe-si8.in"
      fi
      ;;
    gromacs)
      cp "$inputs/gromacs-md.mdp" "$dir/md.mdp"
      cp "$inputs/gromacs-water.top" "$dir/water.top"
      (cd "$dir" && gmx -quiet solvate -cs spc216.gro -box 3.5 3.5 3.5 -o water.gro -p water.top >solvate.log 2>&1 &&
        gmx -quiet grompp -f md.mdp -c water.gro -p water.top -o md.tpr >grompp.log 2>&1) ||
        { echo "real_codes.sh: gromacs input generation failed (see $dir/solvate.log, grompp.log)" >&2; return 1; }
      rm -f "$dir"/\#*\# "$dir/mdout.mdp"
      ;;
    hpcc)
      cp "$inputs/hpccinf.txt" "$dir/"
      [[ "$size" == small ]] && sed -i 's/^3000         Ns/1000         Ns/' "$dir/hpccinf.txt"
      # HPCC appends its results to ./hpccoutf.txt: to stdout instead, so the
      # run file keeps each point's own (the counting run's go elsewhere).
      ln -sfn /dev/stdout "$dir/hpccoutf.txt"  # a kept scratch directory has it already
      ;;
  esac
}

# The command (argv) of CODE, with {ranks} where a file name must differ per point.
command_of() {
  local code="$1"
  case "$code" in
    lammps) cmd=(lmp -in lammps-lj.in -var steps "$([[ $size == small ]] && echo 100 || echo 700)" -log none -nocite) ;;
    qe) cmd=(pw.x -inp qe-si8.in) ;;
    gromacs)
      cmd=(gmx_mpi mdrun -s md.tpr -nsteps "$([[ $size == small ]] && echo 400 || echo 2000)" -ntomp 1 -nb cpu
           -deffnm "md-r{ranks}")
      ;;
    hpcc) cmd=(hpcc) ;;
  esac
}

# A run of nothing but the code's start and end, for the startup cost (--cost).
startup_command_of() {
  local code="$1"
  case "$code" in
    lammps) cmd=(lmp -in lammps-lj.in -var steps 0 -log none -nocite) ;;
    gromacs) cmd=(gmx_mpi mdrun -s md.tpr -nsteps 0 -ntomp 1 -nb cpu -deffnm "md-r{ranks}") ;;
    *) cmd=() ;;
  esac
}

# run_in DIR RANKS ENV... -- ARGV: one plain run (mpirun), wall/CPU in DIR/time.txt.
run_in() {
  local dir="$1" ranks="$2"; shift 2
  local envs=()
  while [[ "$1" != "--" ]]; do envs+=("$1"); shift; done
  shift
  local argv=("${@//\{ranks\}/$ranks}")
  (cd "$dir" && env "${envs[@]}" /usr/bin/time -f '%e %U %S' -o time.txt \
    mpirun -np "$ranks" --bind-to none "${argv[@]}" >out.txt 2>err.txt) ||
    log "$(basename "$dir"): exit $? ($(tail -1 "$dir/err.txt" 2>/dev/null))"
}

# Each stderr line with the epoch time it arrived.
stamp() { while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done; }

run_code() {
  local code="$1" d="$scratch/$1"
  log "$code: preparing inputs ($size), load $(load)"
  prepare "$code" "$d/input"
  command_of "$code"
  local r
  for r in 1 2; do
    rm -rf "$d/plain-r$r"; cp -a "$d/input" "$d/plain-r$r"
    log "$code: plain, $r rank(s), load $(load)"
    run_in "$d/plain-r$r" "$r" -- "${cmd[@]}"
  done
  if ((sweep)); then
    rm -rf "$d/sweep"; cp -a "$d/input" "$d/sweep"
    local cache_env=()
    case "$ert_cache" in
      fresh) cache_env=(RTRACE_CACHE_DIR="$d/ert-cache") ;;
      shared) cache_env=(RTRACE_CACHE_DIR="$scratch/ert-cache") ;;
    esac
    log "$code: rtrace --sweep ranks=1,2 --counts sim --ert $ert, load $(load)"
    (cd "$d/sweep" &&
      { env "${cache_env[@]}" "$rtrace" --sweep ranks=1,2 --counts sim --ert "$ert" -o run.h5 -- "${cmd[@]}" \
          2>&1 >sweep.out && echo "exit 0" || echo "exit $?"; } | stamp >sweep.log)
    (cd "$d/sweep" && "$rtrace" analyze run.h5 --json a.json >a.txt 2>analyze.err) ||
      log "$code: rtrace analyze failed: $(tail -1 "$d/sweep/analyze.err")"
    log "$code: done, load $(load)"
    "$python" "$inputs/report.py" sweep "$code" "$d" "$summary" || failed=1
  fi
  if ((cost)); then
    cost_of "$code"
  fi
}

# --cost: the counting pass's parts, one rank count at a time, runs side by side.
cost_of() {
  local code="$1" d="$scratch/$1" r v
  command_of "$code"
  for r in 1 2; do
    for v in plain none cachegrind counts-spin counts-yield; do
      rm -rf "$d/cost-r$r-$v"; cp -a "$d/input" "$d/cost-r$r-$v"
      log "$code: cost, $r rank(s), $v, load $(load)"
      local argv=("${cmd[@]//\{ranks\}/$r}")
      case "$v" in
        plain) run_in "$d/cost-r$r-$v" "$r" -- "${argv[@]}" ;;
        none|cachegrind)
          run_in "$d/cost-r$r-$v" "$r" -- valgrind -q --tool="$v" \
            $([[ $v == cachegrind ]] && echo --cachegrind-out-file=/dev/null) "${argv[@]}" ;;
        counts-spin|counts-yield)
          # Open MPI's waiting ranks polling (its default) or yielding, whatever rtrace counts sets.
          local envs=(OMPI_MCA_mpi_yield_when_idle=$([[ "$v" == counts-yield ]] && echo 1 || echo 0))
          (cd "$d/cost-r$r-$v" && env "${envs[@]}" /usr/bin/time -f '%e %U %S' -o time.txt \
            "$rtrace" counts -o c.h5 --geometry auto --threads 1 --ranks "$r" --ranks-per-node "$r" \
            --app-index 5 --quiet -- mpirun -np "$r" --bind-to none "${argv[@]}" >out.txt 2>err.txt) ||
            log "$code cost $v: exit $? ($(tail -1 "$d/cost-r$r-$v/err.txt"))"
          ;;
      esac
    done
    startup_command_of "$code"
    if ((${#cmd[@]})); then
      local sargv=("${cmd[@]//\{ranks\}/$r}")
      for v in plain none counts; do rm -rf "$d/cost-r$r-startup-$v"; cp -a "$d/input" "$d/cost-r$r-startup-$v"; done
      run_in "$d/cost-r$r-startup-plain" "$r" -- "${sargv[@]}"
      run_in "$d/cost-r$r-startup-none" "$r" -- valgrind -q --tool=none "${sargv[@]}"
      (cd "$d/cost-r$r-startup-counts" && /usr/bin/time -f '%e %U %S' -o time.txt \
        "$rtrace" counts -o c.h5 --geometry auto --threads 1 --ranks "$r" --ranks-per-node "$r" --app-index 5 \
        --quiet -- mpirun -np "$r" --bind-to none "${sargv[@]}" >out.txt 2>err.txt) || true
    fi
    command_of "$code"
  done
  "$python" "$inputs/report.py" cost "$code" "$d" || true
}

log "scratch $scratch; $(nproc --all) cores, load $(load); rtrace $("$rtrace" --version 2>/dev/null || echo '?')"
for c in "${code_list[@]}"; do
  run_code "$c"
done

if ((sweep)); then
  "$python" - "$summary" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def f(x):
    return "n/a" if x is None else (f"{x:.1f}" if x >= 10 else f"{x:.2f}")
print("\n== summary (s; ratio = counting pass / timed run under the tracer)")
print(f"{'code':<8} {'plain1':>7} {'plain2':>7} {'traced1':>7} {'traced2':>7} {'count1':>7} {'count2':>7} "
      f"{'ratio1':>6} {'ratio2':>6} {'ert1':>6} {'ert2':>6} {'sweep':>7}  checks")
for r in rows:
    print(f"{r['code']:<8} {f(r.get('plain1')):>7} {f(r.get('plain2')):>7} {f(r.get('traced1')):>7} "
          f"{f(r.get('traced2')):>7} {f(r.get('count1')):>7} {f(r.get('count2')):>7} {f(r.get('ratio1')):>6} "
          f"{f(r.get('ratio2')):>6} {f(r.get('ert1')):>6} {f(r.get('ert2')):>6} {f(r.get('sweep')):>7}  "
          f"{r.get('pass', 0)} pass, {r.get('fail', 0)} fail, {r.get('info', 0)} info")
PY
fi
log "load at the end $(load)"
((keep)) && log "kept $scratch"
exit "$failed"
