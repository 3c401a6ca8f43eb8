#!/usr/bin/env bash
# The main job: installs what is missing, builds rtrace, sweeps the bundled demo
# app over thread counts (with per-point ERT ceilings), analyzes the sweep and
# prints where the report is. On a machine with an NVIDIA GPU it also sweeps SMs.
#   scripts/demo.sh [OUTPUT_DIR]      (default: demo-output/)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
rtrace_setup

OUT="${1:-$RTRACE_ROOT/demo-output}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
BIN="$RTRACE_BUILD_DIR/bin"
RUN="$OUT/run.h5"
NPROC="$(nproc)"
# A fresh sweep each time (use `rtrace --resume -o ...` by hand to continue one).
# A run is an index file plus its points directory (schema 1.6): remove both.
rm -rf "$RUN" "$RUN.d"

rtrace_log "sweeping threads=1..$NPROC over the demo kernels (rtrace-demo all)"
set +e
"$BIN/rtrace" --sweep "threads=1..$NPROC" --ert auto -o "$RUN" -- "$BIN/rtrace-demo" all
sweep_rc=$?
set -e
if [ "$sweep_rc" -eq 2 ]; then
  rtrace_log "the sweep could not start"
  exit 2
fi
"$BIN/rtrace" validate "$RUN"

GPU_RUN=""
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && [ -x "$BIN/rtrace-demo-cuda" ]; then
  GPU_RUN="$OUT/gpu-run.h5"
  rm -rf "$GPU_RUN" "$GPU_RUN.d"
  SMS="$(nvidia-smi --query-gpu=multiprocessor_count --format=csv,noheader 2>/dev/null | head -1 || true)"
  SMS="${SMS:-132}"
  rtrace_log "GPU found: sweeping sms=16..$SMS:x2 over the CUDA demos"
  "$BIN/rtrace" --sweep "sms=16..$SMS:x2" --tracer cuda --ert auto -o "$GPU_RUN" -- "$BIN/rtrace-demo-cuda" all || true
fi

rtrace_log "analyzing"
"$BIN/rtrace" analyze "$RUN" --html "$OUT/report.html" --svg "$OUT/charts" --json "$OUT/analysis.json" \
  --csv "$OUT/csv" | tee "$OUT/analysis.txt"
if [ -n "$GPU_RUN" ] && [ -f "$GPU_RUN" ]; then
  "$BIN/rtrace" analyze "$GPU_RUN" --html "$OUT/gpu-report.html" --svg "$OUT/gpu-charts" --json "$OUT/gpu-analysis.json" |
    tee "$OUT/gpu-analysis.txt" || true
fi

echo
echo "run file : $RUN"
echo "report   : $OUT/report.html"
echo "charts   : $OUT/charts/"
echo "json     : $OUT/analysis.json"
[ -n "$GPU_RUN" ] && echo "gpu      : $OUT/gpu-report.html"
exit 0
