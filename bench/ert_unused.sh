#!/usr/bin/env bash
# `--ert auto` on an unannotated app costs nothing: a 2-point sweep (threads=1,2)
# of an app with no regions, counters or GPU metrics, traced (--tracer auto),
# with a fresh empty ERT cache, timed with --ert auto and --ert none
# alternately (3 runs each, medians). Target: auto / none <= 1.10 and no ceilings.
#
# usage: bench/ert_unused.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
rtrace="$build/bin/rtrace"
[[ -x "$rtrace" ]] || { echo "ert_unused: $rtrace not built" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/rtrace-ert-unused.XXXXXX")
trap 'rm -rf -- "$work"' EXIT
app=(/bin/sleep 0.3)

sweep() {  # $1: ert mode, $2: run index; prints the sweep's wall seconds
  local out="$work/$1-$2.h5" t0 t1
  rm -rf "$work/cache"
  t0=$(date +%s.%N)
  RTRACE_CACHE_DIR="$work/cache" "$rtrace" --sweep threads=1,2 --ert "$1" -o "$out" -- "${app[@]}" \
    >/dev/null 2>"$work/log-$1-$2"
  t1=$(date +%s.%N)
  (find "$work/cache" -name '*.h5' 2>/dev/null || true) >>"$work/ert-files"
  echo "$t1 - $t0" | bc -l
}
median3() { printf '%s\n' "$@" | sort -g | sed -n 2p; }

: >"$work/ert-files"
auto=() none=()
for i in 1 2 3; do
  auto+=("$(sweep auto "$i")")
  none+=("$(sweep none "$i")")
done
a=$(median3 "${auto[@]}")
n=$(median3 "${none[@]}")
ratio=$(echo "$a / $n" | bc -l)
ceilings=$(cat "$work/ert-files" | wc -l)
printf 'sweep --ert none   %.3f s (median of %s)\n' "$n" "${none[*]}"
printf 'sweep --ert auto   %.3f s (median of %s)\n' "$a" "${auto[*]}"
printf 'auto / none        %.3f (target <= 1.10)\n' "$ratio"
printf 'ERT files written  %d (target 0)\n' "$ceilings"
grep -h "nothing to place" "$work/log-auto-1" | sed 's/^/note seen: /' || true
printf 'load average       %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
if (( $(echo "$ratio <= 1.10" | bc -l) )) && (( ceilings == 0 )); then
  echo "ert_unused: PASS"
else
  echo "ert_unused: FAIL"
  exit 1
fi
