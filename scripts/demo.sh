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

# The same triad, built without annotations (rtrace-demo-plain), declares
# nothing: its roofline comes from the counting pass (--counts sim: one run
# per thread count under rtrace's Valgrind tool, on this host's cache
# geometry; docs/counts.md). A small problem keeps it quick: about 2 s of
# counting per thread count here, plus the timed runs; the ceilings are the
# ones the sweep above measured (imported from its run file, not measured
# again). Compare the triad loop's counted DRAM intensity with the declared
# one: 2 FLOPs per 32 bytes counted (write-allocate reads a line before
# writing it) against 2 per 24 declared (compulsory traffic only).
PLAIN_RUN="$OUT/plain-run.h5"
PLAIN_ARGS=(triad --size 2000000 --iters 5)
rm -rf "$PLAIN_RUN" "$PLAIN_RUN.d"
plain_start=$(date +%s)
if "$BIN/rtrace" counts --check >/dev/null 2>&1; then
  rtrace_log "counting the unannotated build: threads=1..$NPROC:x2, rtrace-demo-plain ${PLAIN_ARGS[*]} --counts sim"
  plain_ert=auto
  [ "$sweep_rc" -eq 0 ] && plain_ert="$RUN"
  "$BIN/rtrace" --sweep "threads=1..$NPROC:x2" --ert "$plain_ert" --counts sim -o "$PLAIN_RUN" -- \
    "$BIN/rtrace-demo-plain" "${PLAIN_ARGS[@]}" || true
  rtrace_log "counted sweep of the unannotated build: $(( $(date +%s) - plain_start )) s"
else
  rtrace_log "no counted roofline of the unannotated build: $("$BIN/rtrace" counts --check 2>&1 | head -1)"
fi

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
if [ -f "$PLAIN_RUN" ]; then
  echo
  echo "== unannotated build, counted (rtrace-demo-plain ${PLAIN_ARGS[*]}, --counts sim) =="
  "$BIN/rtrace" analyze "$PLAIN_RUN" --html "$OUT/plain-report.html" --svg "$OUT/plain-charts" \
    --json "$OUT/plain-analysis.json" > "$OUT/plain-analysis.txt" || true
  # The counted trajectories (application, functions), then the annotated
  # triad region of the main sweep beside them; without the ceiling warnings
  # (`!` lines, in the full reports).
  # shellcheck disable=SC2016
  no_warnings='/^    ! / { warn = 1; next } warn && /^      / { next } { warn = 0 } show'
  awk '/^\[[0-9]+\] .*counted\)/ { show = 1 } /^\[[0-9]+\] / && !/counted\)/ { show = 0 }
       /^Summary/ { show = 0 } '"$no_warnings" "$OUT/plain-analysis.txt"
  echo "== annotated build, declared (rtrace-demo all: region triad, its default size) =="
  awk '/^\[[0-9]+\] region triad / { show = 1 } /^\[[0-9]+\] / && !/^\[[0-9]+\] region triad / { show = 0 }
       /^Summary/ { show = 0 } '"$no_warnings" "$OUT/analysis.txt"
fi
if [ -n "$GPU_RUN" ] && [ -f "$GPU_RUN" ]; then
  "$BIN/rtrace" analyze "$GPU_RUN" --html "$OUT/gpu-report.html" --svg "$OUT/gpu-charts" --json "$OUT/gpu-analysis.json" |
    tee "$OUT/gpu-analysis.txt" || true
fi

echo
echo "run file : $RUN"
echo "report   : $OUT/report.html"
echo "charts   : $OUT/charts/"
echo "json     : $OUT/analysis.json"
[ -f "$PLAIN_RUN" ] && echo "counted  : $OUT/plain-report.html (the unannotated build, --counts sim)"
[ -n "$GPU_RUN" ] && echo "gpu      : $OUT/gpu-report.html"
exit 0
