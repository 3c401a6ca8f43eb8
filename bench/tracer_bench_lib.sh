# Shared by the tracer benchmarks (sourced, not run): their common options,
# the tracer library and binaries of a build, a scratch directory, and the
# median of the numbers on stdin.
#
#   source "$(dirname "$0")/tracer_bench_lib.sh"
#   tracer_bench_init NAME DEFAULT_REPEATS HELP_LINES "$@"
#
# tracer_bench_init parses --build DIR, --repeats N, --quick (3 repeats) and
# -h/--help (prints HELP_LINES of the calling script, a sed range such as
# 2,16p); it sets root, build, lib, repeats, quick and scratch (removed at
# exit), exports OMP_NUM_THREADS (default 2) and Open MPI's run-as-root
# permission. Bad input: one line on stderr, exit 2.

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

# First existing binary of that name among the build directories.
find_bin() {
  local d
  for d in "$build" "$root/build" "$root/build-tracer"; do
    [[ -x "$d/bin/$1" ]] && { echo "$d/bin/$1"; return 0; }
  done
  return 1
}

tracer_bench_init() {
  local name="$1" help_lines="$3"
  repeats="$2"
  shift 3
  build=""
  quick=0
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --build) build="$2"; shift 2 ;;
      --repeats) repeats="$2"; shift 2 ;;
      --quick) quick=1; repeats=3; shift ;;
      -h|--help) sed -n "$help_lines" "$0"; exit 0 ;;
      *) echo "$name: unknown argument \`$1\`" >&2; exit 2 ;;
    esac
  done
  root="$(cd "$(dirname "$0")/.." && pwd)"
  if [[ -z "$build" ]]; then
    local d
    for d in "$root/build" "$root/build-tracer"; do
      [[ -f "$d/lib/librtrace_tracer.so" ]] && { build="$d"; break; }
    done
  fi
  lib="$build/lib/librtrace_tracer.so"
  [[ -f "$lib" ]] || { echo "$name: no librtrace_tracer.so under \`$build/lib\` (build target rtrace_tracer)" >&2; exit 2; }
  scratch="$(mktemp -d "/tmp/rtrace-${name%.sh}.XXXXXX")"
  trap 'rm -rf "$scratch"' EXIT
  export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
}
