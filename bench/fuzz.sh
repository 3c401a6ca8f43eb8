#!/usr/bin/env bash
# Runs one libFuzzer target for a while: bench/fuzz.sh TARGET SECONDS
#
#   TARGET   sweep_spec | run_file | tracer_strings | ert_import | options_json | analysis_load
#   SECONDS  total fuzzing time (CI: about 30)
#
# Builds build-fuzz (clang, -DRTRACE_ENABLE_FUZZ=ON) when the binary is missing.
# The seed corpus tests/fuzz/corpus/TARGET is only read; new inputs go to
# $RTRACE_FUZZ_BUILD_DIR/fuzz-work/TARGET/corpus, crashes/hangs to .../artifacts.
# Prints one summary line. Every crash, leak, hang or OOM artifact is replayed
# and classified as "rtrace" (an rtrace frame anywhere above libhdf5, or no
# libhdf5 frame), "libhdf5" (crashes inside the HDF5 library on corrupted
# files, a known limitation: docs/reliability.md), "slow" (listed on stderr)
# or "gone"; exits 1 when any finding is in rtrace code (fix it, then copy the
# input to tests/fuzz/regressions/TARGET/).
# Environment: RTRACE_FUZZ_BUILD_DIR (default build-fuzz), RTRACE_FUZZ_NICE
# (default 19), RTRACE_FUZZ_ARGS (extra libFuzzer flags).
set -euo pipefail
root="${RTRACE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
if [[ $# -ne 2 || ! "$2" =~ ^[0-9]+$ ]]; then
  echo "usage: bench/fuzz.sh TARGET SECONDS" >&2
  exit 2
fi
target="$1" seconds="$2"
build="${RTRACE_FUZZ_BUILD_DIR:-$root/build-fuzz}"
seeds="$root/tests/fuzz/corpus/$target"
regressions="$root/tests/fuzz/regressions/$target"
if [[ ! -d "$seeds" ]]; then
  echo "bench/fuzz.sh: unknown target '$target' (no seed corpus $seeds); targets: $(ls "$root/tests/fuzz/corpus" | tr '\n' ' ')" >&2
  exit 2
fi
bin="$build/bin/fuzz_$target"
if [[ ! -x "$bin" ]]; then
  if [[ ! -f "$build/CMakeCache.txt" ]]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
      -DRTRACE_ENABLE_FUZZ=ON -DRTRACE_ENABLE_TESTS=OFF -DRTRACE_ENABLE_CUDA=OFF -DRTRACE_NATIVE=OFF \
      "-DRTRACE_COMPONENTS=tracer;launcher;analysis" >/dev/null
  fi
  cmake --build "$build" --target "fuzz_$target" -j "${RTRACE_BUILD_JOBS:-2}" >/dev/null
fi
work="$build/fuzz-work/$target"
mkdir -p "$work/corpus" "$work/artifacts"
log="$work/fuzz.log"
dirs=("$work/corpus" "$seeds")
[[ -d "$regressions" ]] && dirs+=("$regressions")
# Text targets stay small; HDF5 targets take the seed files' size.
maxlen=()
case "$target" in sweep_spec|tracer_strings|options_json) maxlen=(-max_len=4096) ;; esac
start=$(date +%s)
export LSAN_OPTIONS="suppressions=$root/tests/fuzz/lsan.supp:print_suppressions=0"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_odr_violation=0}"
set +e
# Fork mode with -ignore_crashes: libhdf5 1.10 itself crashes on some corrupted
# files (see docs/reliability.md); the fuzzer records each crash as an artifact
# and goes on, and every artifact is classified below by where it crashed.
# -timeout: an input running longer than 10 s is a hang; -rss_limit_mb: a blow-up.
/usr/bin/time -f '%U %S' -o "$work/cpu.txt" nice -n "${RTRACE_FUZZ_NICE:-19}" "$bin" "${dirs[@]}" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$work/artifacts/" "${maxlen[@]}" ${RTRACE_FUZZ_ARGS:-} >"$log" 2>&1
rc=$?
set -e
elapsed=$(( $(date +%s) - start ))
last=$(grep -E '^#[0-9]+: cov:' "$log" | tail -1)
runs=$(sed -E 's/^#([0-9]+):.*/\1/' <<<"$last")
cov=$(grep -oE 'cov: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || true)
# Classify every artifact: replay it against this binary and look for an
# rtrace frame above libhdf5 (tests/fuzz/classify.py). Each artifact is
# replayed once per binary: classified.tsv keeps the answers and is dropped
# when the binary is rebuilt, so a burst of library crashes costs one replay
# each, and none is left out.
cache="$work/classified.tsv"
[[ -f "$cache" && "$cache" -nt "$bin" ]] || : >"$cache"
mapfile -t found < <(ls -tr "$work"/artifacts/* 2>/dev/null || true)
todo=()
for a in "${found[@]}"; do
  grep -q -F "$(printf '\t%s\t' "$(basename "$a")")" "$cache" || todo+=("$a")
done
if [[ ${#todo[@]} -gt 0 ]]; then
  python3 "$root/tests/fuzz/classify.py" "$bin" "${todo[@]}" >>"$cache" || {
    echo "bench/fuzz.sh: classify.py failed" >&2; exit 1; }
fi
: >"$work/findings.txt"
for a in "${found[@]}"; do
  grep -F "$(printf '\t%s\t' "$(basename "$a")")" "$cache" | head -1 >>"$work/findings.txt" || true
done
ours=$(grep -c '^rtrace' "$work/findings.txt" || true)
hdf5=$(grep -c '^libhdf5' "$work/findings.txt" || true)
slow=$(grep -c '^slow' "$work/findings.txt" || true)
gone=$(grep -c '^gone' "$work/findings.txt" || true)
cpu=$(tail -1 "$work/cpu.txt" 2>/dev/null | awk '{printf "%d", $1 + $2}' || echo 0)
# One JSON line per run, summed by scripts/gen-reliability.py.
printf '{"target": "%s", "date": "%s", "wall_s": %d, "cpu_s": %s, "inputs": %s, "coverage": %s, "rtrace_findings": %d, "hdf5_findings": %d, "slow": %d, "gone": %d}\n' \
  "$target" "$(date -u +%FT%TZ)" "$elapsed" "${cpu:-0}" "${runs:-0}" "${cov:-0}" "$ours" "$hdf5" "$slow" "$gone" >>"$work/runs.jsonl"
echo "fuzz $target: ${elapsed}s (${cpu}s CPU), ${runs:-?} inputs, coverage ${cov:-?} edges, corpus $(ls "$work/corpus" | wc -l) files, findings (${#found[@]} artifacts replayed): ${ours} in rtrace, ${hdf5} inside libhdf5, ${slow} slow (a timeout that finishes on replay), ${gone} gone (details: $work/findings.txt)"
if [[ $slow -ne 0 ]]; then
  echo "slow inputs (over the 10 s limit under load, finish on replay; not hangs, but look at them):" >&2
  grep '^slow' "$work/findings.txt" | cut -f2 | sed "s|^|  $work/artifacts/|" >&2
fi
if [[ $rc -ne 0 && $ours -eq 0 && $hdf5 -eq 0 ]]; then
  echo "bench/fuzz.sh: the fuzzer failed (rc $rc); log: $log" >&2
  exit 1
fi
if [[ $ours -ne 0 ]]; then
  grep '^rtrace' "$work/findings.txt" >&2
  echo "copy each input to tests/fuzz/regressions/$target/ once fixed; log: $log" >&2
  exit 1
fi
