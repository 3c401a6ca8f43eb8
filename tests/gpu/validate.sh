#!/usr/bin/env bash
# tests/gpu/validate.sh: end-to-end validation of rtrace on an NVIDIA GPU.
#
#   tests/gpu/validate.sh [--quick] [--no-build] [--build-dir DIR] OUTPUT_DIR
#
# In one go (about 8 minutes on an H100; --quick: about 2):
#   1. builds rtrace with CUDA (unless --no-build; then DIR must hold a build);
#   2. `rtrace ert` on the whole device, and ceilings at 3+ SM partitions (by
#      the SM sweeps' per-point ERT, --ert auto);
#   3. every CUDA demo kernel/variant under the tracer in metrics mode: FP64
#      FLOPs vs the analytic count (within 1%; gpp is reported, not judged:
#      divides and sqrt expand to FMA sequences) and triad's DRAM bytes vs 24
#      bytes per element (within 10%);
#   4. an SM sweep of stencil7 and gpp, analysed with `rtrace analyze`;
# and writes OUTPUT_DIR/<gpu-name>.md (tables, date, driver) plus charts.
# Copy that file to docs/validation/ to publish it.
#
# Exit: 0 every check passed, 1 a check failed, 2 bad usage or build failure,
# 77 no GPU (nvidia-smi or libcuda.so.1 missing): the ctest skip code.
set -uo pipefail

# ---- settings (one place to change how the tracer is asked for metrics)
# launcher: `rtrace --tracer cuda-metrics ... -- app` (the supported path);
# direct:   inject the tracer by hand (CUDA_INJECTION64_PATH, RTRACE_TRACER_MODE,
#           RTRACE_TRACE_DIR, as docs/architecture.md fixes them).
METRICS_VIA="${METRICS_VIA:-launcher}"
METRICS_TRACER="${METRICS_TRACER:-cuda-metrics}"   # --tracer value / RTRACE_TRACER_MODE
SWEEP_TRACER="${SWEEP_TRACER:-cuda}"               # trace mode for the SM sweeps
ERT_MODE="${ERT_MODE:-auto}"                       # --ert for the sweeps: auto | quick
FLOPS_TOL="${FLOPS_TOL:-0.01}"
DRAM_TOL="${DRAM_TOL:-0.10}"
POINT_TIMEOUT="${POINT_TIMEOUT:-600}"

usage() { echo "usage: $0 [--quick] [--no-build] [--build-dir DIR] OUTPUT_DIR" >&2; exit 2; }
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${RTRACE_BUILD_DIR:-$SRC/build-gpu}"
QUICK=0
DO_BUILD=1
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --no-build) DO_BUILD=0 ;;
    --build-dir) [ $# -ge 2 ] || usage; BUILD="$2"; shift ;;
    -h|--help) sed -n 2,22p "$0"; exit 0 ;;
    -*) echo "$0: unknown option \`$1'" >&2; usage ;;
    *) [ -z "$OUT" ] || usage; OUT="$1" ;;
  esac
  shift
done
[ -n "$OUT" ] || usage

# ---- is there a GPU? (before anything is built or written)
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "validate.sh: no GPU found (nvidia-smi missing or it lists no device); skipping"
  exit 77
fi
if ! { ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; } &&
   ! ls /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/lib64/libcuda.so.1 /usr/lib/wsl/lib/libcuda.so.1 >/dev/null 2>&1; then
  echo "validate.sh: no GPU found (libcuda.so.1, the driver library, is missing); skipping"
  exit 77
fi

mkdir -p "$OUT" || exit 2
OUT="$(cd "$OUT" && pwd)"
LOG="$OUT/logs"
mkdir -p "$LOG"
START=$(date +%s)
log() { printf '[validate %4ds] %s\n' "$(( $(date +%s) - START ))" "$*"; }

GPU_NAME="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
DRIVER="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
SMS="$(nvidia-smi --query-gpu=multiprocessor_count --format=csv,noheader 2>/dev/null | head -1 | tr -dc 0-9)"
CC="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -dc 0-9)"
SLUG="$(printf '%s' "$GPU_NAME" | tr 'A-Z' 'a-z' | tr -c 'a-z0-9\n' '-' | sed 's/--*/-/g; s/^-//; s/-$//')"
REPORT="$OUT/${SLUG:-gpu}.md"
log "GPU: $GPU_NAME, driver $DRIVER, ${SMS:-?} SMs, compute capability ${CC:-?}"

# ---- build
if [ "$DO_BUILD" -eq 1 ]; then
  log "building rtrace with CUDA in $BUILD"
  cmake_args=(-S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRTRACE_ENABLE_CUDA=ON -DRTRACE_ENABLE_TESTS=OFF)
  [ -n "$CC" ] && cmake_args+=("-DCMAKE_CUDA_ARCHITECTURES=$CC")
  if ! cmake "${cmake_args[@]}" >"$LOG/cmake.log" 2>&1 ||
     ! cmake --build "$BUILD" -j "$(nproc)" --target rtrace rtrace_tracer rtrace-demo-cuda rtrace-demo-check \
       >"$LOG/build.log" 2>&1; then
    echo "validate.sh: build failed, see $LOG/cmake.log and $LOG/build.log" >&2
    tail -20 "$LOG/build.log" >&2 2>/dev/null
    exit 2
  fi
fi
BIN="$BUILD/bin"
for exe in rtrace rtrace-demo-cuda rtrace-demo-check; do
  [ -x "$BIN/$exe" ] || { echo "validate.sh: $BIN/$exe is missing (build it or drop --no-build)" >&2; exit 2; }
done
RTRACE="$BIN/rtrace"
DEMO="$BIN/rtrace-demo-cuda"
CHECK="$BIN/rtrace-demo-check"

# SM partitions: quarters of the device, multiples of 8 (Hopper's green-context
# granularity; the launcher snaps and records what it achieved), plus the whole.
SMS="${SMS:-0}"
partitions() {
  local s q list=""
  for q in 1 2 3; do
    s=$(( SMS * q / 4 / 8 * 8 ))
    [ "$s" -ge 8 ] && list="$list,$s"
  done
  list="${list#,},$SMS"
  [ "$QUICK" -eq 1 ] && list="$(( SMS / 2 / 8 * 8 )),$SMS"
  printf '%s' "$list"
}
SM_LIST="$(partitions)"

FAILURES=()
fail() { FAILURES+=("$1"); log "FAIL: $1"; }

{
  echo "# rtrace GPU validation: $GPU_NAME"
  echo
  echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "- host: $(hostname)"
  echo "- GPU: $GPU_NAME ($SMS SMs, compute capability $CC), driver $DRIVER"
  echo "- CUDA: $(nvcc --version 2>/dev/null | tail -1 || echo unknown)"
  echo "- rtrace: $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo unknown), mode $([ $QUICK -eq 1 ] && echo quick || echo full)"
  echo "- metrics via: $METRICS_VIA ($METRICS_TRACER); tolerances: FLOPs ${FLOPS_TOL}, DRAM ${DRAM_TOL}"
} >"$REPORT"

# ---- 1. ERT on the whole device
log "ERT on the whole device ($SMS SMs)"
ert_args=(ert --sms "$SMS" -o "$OUT/ert-full.h5" --json "$OUT/ert-full.json" --quiet)
[ "$QUICK" -eq 1 ] && ert_args+=(--quick)
if timeout "$POINT_TIMEOUT" "$RTRACE" "${ert_args[@]}" >"$LOG/ert-full.log" 2>&1; then
  echo -e "\n## Ceilings, whole device" >>"$REPORT"
  "$CHECK" ceilings "$OUT/ert-full.h5" --markdown "$REPORT" >/dev/null 2>>"$LOG/ert-full.log" ||
    fail "reading the whole-device ERT file"
else
  fail "rtrace ert on the whole device (see $LOG/ert-full.log)"
fi

# ---- 2. metrics mode: analytic FLOPs and compulsory bytes
# kernel, variant, size, iters (sizes: triad 1.5 GB >> L2 so its traffic is DRAM)
if [ "$QUICK" -eq 1 ]; then
  CASES=("triad - 33554432 2" "stencil7 - 128 2" "gsrb all 96 1" "spmv all 262144 1" "gpp all 256 1" "dgemm - 512 1")
else
  CASES=("triad - 67108864 3" "stencil7 - 256 3" "gsrb all 192 2" "spmv all 2097152 2" "gpp all 512 1" "dgemm - 2048 1")
fi
echo -e "\n## Metrics mode: measured vs analytic\n" >>"$REPORT"
HEADER_DONE=0
for c in "${CASES[@]}"; do
  read -r kernel variant size iters <<<"$c"
  log "metrics: $kernel (variant $variant, size $size, iters $iters)"
  expect="$OUT/expect-$kernel.tsv"
  rm -f "$expect"
  app=("$DEMO" "$kernel" --size "$size" --iters "$iters" --expect "$expect")
  [ "$variant" != "-" ] && app+=(--variant "$variant")
  if [ "$METRICS_VIA" = "launcher" ]; then
    data="$OUT/metrics-$kernel.h5"
    rm -f "$data"
    timeout $(( POINT_TIMEOUT + 60 )) "$RTRACE" --tracer "$METRICS_TRACER" --ert none --timeout "$POINT_TIMEOUT" \
      -o "$data" -- "${app[@]}" >"$LOG/metrics-$kernel.log" 2>&1
    rc=$?
  else
    tdir="$OUT/trace-$kernel"
    rm -rf "$tdir"; mkdir -p "$tdir"
    CUDA_INJECTION64_PATH="${RTRACE_TRACER_LIB:-$BUILD/lib/librtrace_tracer.so}" RTRACE_TRACER_MODE="$METRICS_TRACER" \
      RTRACE_TRACE_DIR="$tdir" timeout "$POINT_TIMEOUT" "${app[@]}" >"$LOG/metrics-$kernel.log" 2>&1
    rc=$?
    data="$(ls "$tdir"/ranks.h5 "$tdir"/rank-*.h5 2>/dev/null | head -1)"
  fi
  if [ "$rc" -ne 0 ] || [ ! -s "$expect" ] || [ -z "$data" ] || [ ! -f "$data" ]; then
    fail "$kernel under the tracer in metrics mode exited $rc (see $LOG/metrics-$kernel.log)"
    continue
  fi
  grep -q "check=ok" "$LOG/metrics-$kernel.log" || fail "$kernel: result check under the tracer"
  "$CHECK" kernels "$data" --expect "$expect" --flops-tol "$FLOPS_TOL" --dram-tol "$DRAM_TOL" \
    --dram-check rtd_triad_k >"$LOG/check-$kernel.md" 2>>"$LOG/metrics-$kernel.log"
  crc=$?
  if [ "$HEADER_DONE" -eq 0 ]; then cat "$LOG/check-$kernel.md" >>"$REPORT"; HEADER_DONE=1
  else tail -n +3 "$LOG/check-$kernel.md" >>"$REPORT"; fi
  [ "$crc" -eq 0 ] || fail "$kernel: metrics differ from the analytic counts (rtrace-demo-check exit $crc)"
done

# ---- 3. SM sweeps with per-partition ERT, then analyze
if [ "$QUICK" -eq 1 ]; then SWEEP_CASES=("stencil7 --size 256 --iters 5" "gpp --size 512 --variant blocked")
else SWEEP_CASES=("stencil7 --size 512 --iters 10" "gpp --size 1024 --variant blocked"); fi
echo -e "\n## SM sweeps (sms=$SM_LIST, --ert $ERT_MODE)\n" >>"$REPORT"
for c in "${SWEEP_CASES[@]}"; do
  read -r -a app_args <<<"$c"
  kernel="${app_args[0]}"
  run="$OUT/sm-$kernel.h5"
  rm -f "$run"
  log "SM sweep of $kernel over sms=$SM_LIST"
  if ! timeout $(( POINT_TIMEOUT * 4 )) "$RTRACE" --sweep "sms=$SM_LIST" --tracer "$SWEEP_TRACER" --ert "$ERT_MODE" \
       --timeout "$POINT_TIMEOUT" -o "$run" -- "$DEMO" "${app_args[@]}" >"$LOG/sweep-$kernel.log" 2>&1; then
    fail "SM sweep of $kernel (see $LOG/sweep-$kernel.log)"
    [ -f "$run" ] || continue
  fi
  "$RTRACE" validate "$run" >>"$LOG/sweep-$kernel.log" 2>&1 || fail "rtrace validate $run"
  mkdir -p "$OUT/charts-$kernel"
  if "$RTRACE" analyze "$run" --svg "$OUT/charts-$kernel" --html "$OUT/sm-$kernel.html" \
       --json "$OUT/sm-$kernel.json" >"$OUT/sm-$kernel.txt" 2>>"$LOG/sweep-$kernel.log"; then
    {
      echo "### $kernel"
      echo
      echo '```'
      cat "$OUT/sm-$kernel.txt"
      echo '```'
      echo
      for svg in "$OUT/charts-$kernel"/*.svg; do
        [ -f "$svg" ] && echo "![${svg##*/}](charts-$kernel/${svg##*/})"
      done
      echo
    } >>"$REPORT"
  else
    fail "rtrace analyze $run (see $LOG/sweep-$kernel.log)"
  fi
  echo -e "#### Ceilings per partition ($kernel sweep)" >>"$REPORT"
  "$CHECK" ceilings "$run" --markdown "$REPORT" >/dev/null 2>>"$LOG/sweep-$kernel.log" ||
    fail "reading the ceilings of $run"
done

# ---- summary
ELAPSED=$(( $(date +%s) - START ))
{
  echo
  echo "## Summary"
  echo
  echo "- elapsed: ${ELAPSED} s"
  if [ "${#FAILURES[@]}" -eq 0 ]; then
    echo "- result: all checks passed"
  else
    echo "- result: ${#FAILURES[@]} check(s) failed:"
    for f in "${FAILURES[@]}"; do echo "  - $f"; done
  fi
} >>"$REPORT"

echo
echo "validate.sh: $GPU_NAME (driver $DRIVER), ${ELAPSED} s"
echo "  report: $REPORT (copy to docs/validation/ to publish)"
echo "  charts: $OUT/charts-*/, logs: $LOG/"
if [ "${#FAILURES[@]}" -eq 0 ]; then
  echo "  result: all checks passed"
  exit 0
fi
echo "  result: ${#FAILURES[@]} check(s) failed:"
for f in "${FAILURES[@]}"; do echo "    - $f"; done
exit 1
