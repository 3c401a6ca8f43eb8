#!/bin/sh
# usage: validate_damaged.sh RTRACE DIR_OF_GZIPPED_FILES WORKDIR
# Under a sanitizer (scripts/sanitize.sh), the crash inside libhdf5 that each
# of these files causes is reported by the sanitizer in the reading child:
# those reports go to WORKDIR/reports (not the job's report directory) and
# each must be inside libhdf5 (tests/fuzz/classify.py), never in rtrace.
set -u
rtrace=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
sanitized=0
for var in ASAN_OPTIONS UBSAN_OPTIONS; do
  eval "opts=\${$var:-}"
  [ -n "$opts" ] || continue
  sanitized=1
  mkdir -p "$work/reports"
  name=$(echo "$var" | cut -d_ -f1 | tr 'A-Z' 'a-z')
  opts=$(printf '%s' "$opts" | tr ':' '\n' | grep -v '^log_path=' | tr '\n' ':')
  export "$var=${opts}log_path=$work/reports/$name"
done
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
if [ "$sanitized" -eq 1 ]; then
  python3 - "$work/reports" "$rtrace" "$(dirname "$0")/../fuzz" <<'PY' || exit 1
import os, sys
reports, binary, fuzz = sys.argv[1:4]
sys.path.insert(0, fuzz)
import classify
bad = 0
for name in sorted(os.listdir(reports)) if os.path.isdir(reports) else []:
    text = open(os.path.join(reports, name), errors="replace").read()
    where, kind, frame = classify.classify_output(text, binary, False)
    if where == "gone":
        continue
    print(f"{'ok' if where == 'libhdf5' else 'FAIL'}: sanitizer report {name}: {kind} in {frame} ({where})")
    bad += where != "libhdf5"
sys.exit(1 if bad else 0)
PY
fi
