#!/bin/bash
# Scale target of `rtrace analyze` (issue 6): a synthetic run with 10^6 kernel
# records over 64 ranks x 8 points, analysed with JSON output.
# Targets on the 2-core CI machine: <= 5 s wall and <= 2 GiB peak RSS.
# Usage: bench/analyze_scale.sh [BUILD_DIR] [RECORDS]
set -euo pipefail
BUILD=${1:-build}
RECORDS=${2:-1000000}
BIN=$BUILD/bin
[ -x "$BIN/rtrace" ] && [ -x "$BIN/rtrace-synth" ] || { echo "build rtrace and rtrace-synth in $BUILD first" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "needs GNU time (/usr/bin/time; Debian package 'time')" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
echo "generating: $RECORDS kernel records, 64 ranks x 8 points ..."
"$BIN/rtrace-synth" scale -o "$WORK/scale.h5" --ranks 64 --points 8 --records "$RECORDS"
echo "run file: $(du -h "$WORK/scale.h5" | cut -f1)"
/usr/bin/time -v "$BIN/rtrace" analyze "$WORK/scale.h5" --json "$WORK/out.json" -q 2> "$WORK/time.txt"
wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$WORK/time.txt")
rss_kib=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$WORK/time.txt")
secs=$(echo "$wall" | awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
awk -v s="$secs" -v r="$rss_kib" 'BEGIN {
  gib = r / 1048576;
  printf "analyze wall time: %.2f s (target <= 5 s, ratio %.2f)\n", s, s / 5;
  printf "analyze peak RSS:  %.3f GiB (target <= 2 GiB, ratio %.3f)\n", gib, gib / 2;
  exit !(s <= 5 && gib <= 2) }' && echo "PASS" || { echo "FAIL"; exit 1; }
