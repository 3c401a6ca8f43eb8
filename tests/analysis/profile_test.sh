#!/bin/bash
# Where the time goes without annotations (issue 15): unannotated apps swept by
# the real `rtrace` with sampling on, analysed by the real `rtrace analyze`.
#   MODE omp: a serial function + a parallel loop over threads=1,2 ->
#             `setup_mesh` is the largest share of lost time, shape constant;
#             flame graphs, scaling-by-function chart, folded + speedscope export.
#   MODE mpi: a function only rank 0 runs, ranks=1,2 -> `rank0_setup` named,
#             with its imbalance across ranks.
# Samples count CPU time per thread, so the answers do not depend on how loaded
# the 2-core machine is (wall time does).
set -u
MODE=$1 RTRACE=$2 OMP_APP=$3 MPI_APP=$4 DIR=$5
rm -rf "$DIR" && mkdir -p "$DIR" && cd "$DIR" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

query() {
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); p=d.get("profile"); g=(p["groups"] or [None])[0] if p else None; print(eval(sys.argv[2]))' "$1" "$2"
}
check() {  # check JSON EXPR MESSAGE
  local v
  v=$(query "$1" "$2") || fail "$3: cannot evaluate $2"
  [ "$v" = "True" ] || { cat "${1%.json}.txt"; fail "$3 ($2 is $v)"; }
}

if [ "$MODE" = omp ]; then
  "$RTRACE" --sweep threads=1,2 --ert none --sample 500 --timeout 120 -o omp.h5 -- "$OMP_APP" normal 40 60 \
    > omp.log 2>&1 || fail "rtrace run: $(tail -3 omp.log)"
  "$RTRACE" validate omp.h5 > validate.txt 2>&1 || fail "validate: $(tail -3 validate.txt)"
  "$RTRACE" analyze omp.h5 --json omp.json --svg svg --html omp.html --folded folded > omp.txt ||
    fail "rtrace analyze"
  check omp.json 'p["available"] and len(p["groups"]) == 1' "profile present"
  check omp.json 'g["lost"][0]["short_name"] == "setup_mesh"' "serial function is the largest share of lost time"
  check omp.json 'g["lost"][0]["shape"] == "constant: serial"' "serial function's shape"
  check omp.json 'g["lost"][0]["share"] > 0.5' "serial function's share"
  check omp.json 'all(l["short_name"] != "parallel_sweep (OpenMP region)" or l["share"] < 0.2 for l in g["lost"])' "parallel loop loses little"
  grep -q 'Sampled: .* in `setup_mesh` (constant: serial' omp.txt || fail "no sampled sentence in the diagnosis"
  # The sampled shapes decide the thread loss: a mostly serial app is serial-fraction, even
  # when CPU/wall at 2 threads is as low as that of threads that never run (issue 23).
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); c=[x["cause"] for x in d["summary"][0]["steps"][0]["causes"]]
sys.exit(0 if "serial-fraction" in c and "threads-unused" not in c else 1)' omp.json ||
    { cat omp.txt; fail "mostly serial app at 2 threads: expected serial-fraction, not threads-unused"; }
  ls svg/flame-c000.svg svg/flame-c001.svg svg/scaling-by-function.svg > /dev/null || fail "missing profile SVGs"
  grep -q "Where the time goes" omp.html || fail "no profile section in the HTML"
  grep -q "setup_mesh" svg/flame-c001.svg || fail "flame graph without setup_mesh"
  grep -q ';setup_mesh(long) [0-9]*$' folded/c001.folded || fail "folded stacks without setup_mesh"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["profiles"][0]["type"] == "sampled"; assert len(d["profiles"][0]["samples"]) == len(d["profiles"][0]["weights"]) > 0' \
    folded/c001.speedscope.json || fail "speedscope JSON"
  # An unsampled run has no profile and --folded says so in one line.
  "$RTRACE" --sweep threads=1 --ert none --sample 0 -o off.h5 -- "$OMP_APP" normal 2 2 > off.log 2>&1 || fail "run --sample 0"
  "$RTRACE" analyze off.h5 --json off.json -q || fail "analyze off.h5"
  check off.json 'p is None' "no profile without sampling"
  "$RTRACE" analyze off.h5 --folded f2 -q 2> err.txt && fail "--folded without samples succeeded"
  [ "$(wc -l < err.txt)" -eq 1 ] || fail "--folded without samples: expected one line, got $(cat err.txt)"
  echo "OK"
  exit 0
fi

if [ "$MODE" = stripped ]; then
  # A stripped app calling a stripped shared library: the library's exported
  # kernel is named from .dynsym, the static functions of both are
  # module+0xOFFSET, and the report names both modules and how to get their
  # symbols (issue 25).
  app=$MPI_APP lib_dir=$(dirname "$MPI_APP")
  LD_LIBRARY_PATH=$lib_dir "$RTRACE" --sweep threads=1 --ert none --sample 500 --timeout 120 -o strip.h5 -- \
    "$app" 60000000 > strip.log 2>&1 || fail "rtrace run: $(tail -3 strip.log)"
  "$RTRACE" analyze strip.h5 --json strip.json --html strip.html > strip.txt || fail "rtrace analyze"
  check strip.json "any(f['name'] == 'sampled_kernel' for f in p['functions'])" "the stripped library's exported kernel is named from .dynsym"
  check strip.json "any(f['name'].startswith('libtracer_sampled_kernel.so+0x') for f in p['functions'])" "its static helper is module+offset"
  check strip.json "any(f['name'].startswith('tracer_sampled_lib_app+0x') for f in p['functions'])" "the stripped app's functions are module+offset"
  check strip.json "[m['module'] for m in p['unnamed_modules']][:2] == ['tracer_sampled_lib_app', 'libtracer_sampled_kernel.so'] or [m['module'] for m in p['unnamed_modules']][:2] == ['libtracer_sampled_kernel.so', 'tracer_sampled_lib_app']" "both modules listed as lacking symbols"
  check strip.json "[m for m in p['unnamed_modules'] if m['module'] == 'tracer_sampled_lib_app'][0]['share'] > 0.3" "the app's unnamed share"
  for f in strip.txt strip.html; do
    tr '\n' ' ' < "$f" | sed 's/  */ /g' | grep -q "without symbols is named module+0xOFFSET: .*tracer_sampled_lib_app" ||
      fail "$f: no hint naming the stripped app"
    tr '\n' ' ' < "$f" | sed 's/  */ /g' | grep -q -- "-dbgsym" || fail "$f: the hint does not say how to get symbols"
  done
  # An unstripped build names its own code and the hint leaves it out (the
  # loader's or libc's internal functions may still be unnamed: not the app's).
  "$RTRACE" --sweep threads=1 --ert none --sample 500 --timeout 120 -o full.h5 -- \
    "$lib_dir/../tracer_sampled_lib_app" 60000000 > full.log 2>&1 || fail "rtrace run (unstripped): $(tail -3 full.log)"
  "$RTRACE" analyze full.h5 --json full.json > full.txt || fail "rtrace analyze (unstripped)"
  # (a sample in a PLT stub has no symbol even there: a share, not absence)
  check full.json "all(m['module'] not in ('tracer_sampled_lib_app', 'libtracer_sampled_kernel.so') or m['share'] < 0.01 for m in p['unnamed_modules'])" "unstripped modules have symbols"
  tr '\n' ' ' < full.txt | sed 's/  */ /g' | grep -q "without symbols is named module+0xOFFSET: [^.]*tracer_sampled" &&
    fail "the hint names an unstripped module"
  echo "OK"
  exit 0
fi

if [ "$MODE" = fortran-mpi ]; then
  # Rank 0 computes, rank 1 waits in MPI_Alltoall (gfortran, `use mpi`): the
  # wait's samples pass through the tracer's Fortran wrapper
  # (mpi_alltoall_ -> its forwarding code -> Open MPI's binding -> PMPI_Alltoall
  # -> opal_progress) and are MPI time, not the tracer's (issue 25).
  "$RTRACE" --sweep ranks=2 --ert none --sample 500 --timeout 120 -o fmpi.h5 -- "$MPI_APP" 60 \
    > fmpi.log 2>&1 || fail "rtrace run: $(tail -3 fmpi.log)"
  "$RTRACE" analyze fmpi.h5 --json fmpi.json > fmpi.txt || fail "rtrace analyze"
  cpu() {  # CPU seconds of a profile function (0 when absent)
    query fmpi.json "sum(f['cpu_s'][0] or 0 for f in p['functions'] if f['name'] == '$1')"
  }
  alltoall=$(cpu MPI_Alltoall) tracer=$(cpu "rtrace tracer")
  echo "sampled CPU s: MPI_Alltoall $alltoall, rtrace tracer $tracer"
  check fmpi.json "any(f['name'] == 'MPI_Alltoall' and f['category'] == 'mpi' for f in p['functions'])" \
    "the Fortran MPI_Alltoall wait is an MPI function"
  check fmpi.json "$alltoall > 0.05" "the wait was sampled as MPI_Alltoall"
  check fmpi.json "$tracer < 0.25 * $alltoall" "the tracer's own time is not the wait"
  check fmpi.json "all(f['name'] != 'rtrace tracer' or f['category'] == 'rtrace' for f in p['functions'])" \
    "the tracer bucket's category"
  # Timed by the wrapper too: rank 1 spends rank 0's work in MPI_Alltoall.
  check fmpi.json "[c for c in d['configurations'][0]['mpi_calls'] if c['name'] == 'MPI_Alltoall'][0]['rank_time_max']['value'] > 5 * [c for c in d['configurations'][0]['mpi_calls'] if c['name'] == 'MPI_Alltoall'][0]['rank_time_min']['value']" \
    "MPI_Alltoall timed: the waiting rank's time"
  echo "OK"
  exit 0
fi

[ "$MPI_APP" != none ] || { echo "SKIP: built without MPI"; exit 77; }
"$RTRACE" --sweep ranks=1,2 --ert none --sample 500 --timeout 120 -o mpi.h5 -- "$MPI_APP" 40 60 \
  > mpi.log 2>&1 || fail "rtrace run: $(tail -3 mpi.log)"
"$RTRACE" analyze mpi.h5 --json mpi.json > mpi.txt || fail "rtrace analyze"
check mpi.json 'g["lost"][0]["short_name"] == "rank0_setup"' "the rank-0-only function is the largest share of lost time"
check mpi.json 'g["lost"][0]["imbalance"] > 0.8' "its imbalance across 2 ranks (ideal answer 1.0)"
grep -q 'in `rank0_setup` (constant: serial; imbalance' mpi.txt || fail "no imbalance in the sampled sentence"
check mpi.json 'any(f["category"] == "mpi" for f in p["functions"])' "MPI time attributed to MPI"
echo "OK"
