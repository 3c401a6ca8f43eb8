#!/bin/sh
# usage: validate_damaged.sh RTRACE DIR_OF_GZIPPED_FILES WORKDIR
set -u
rtrace=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
n=0
for gz in "$src"/*.gz; do
  f="$work/$(basename "$gz" .gz)"
  gzip -dc "$gz" >"$f"
  err=$(RTRACE_VALIDATE_TIMEOUT=5 "$rtrace" validate "$f" 2>&1 >/dev/null)
  rc=$?
  lines=$(printf '%s\n' "$err" | wc -l)
  if [ "$rc" -ne 2 ] || [ "$lines" -ne 1 ] || ! printf '%s' "$err" | grep -q "damaged file"; then
    echo "FAIL: $f: exit $rc, stderr: $err"
    exit 1
  fi
  echo "ok: $(basename "$f"): $err"
  n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "FAIL: no inputs in $src"; exit 1; }
