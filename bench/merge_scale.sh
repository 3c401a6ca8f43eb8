#!/usr/bin/env bash
# bench/merge_scale.sh: how long `rtrace merge` takes for many part files.
#
#   bench/merge_scale.sh [--build DIR] [--files N] [--kernels K] [--keep]
#
# Generates N synthetic rank (trace) files with tests/merge's generator
# (`rtrace-merge-synth`, each rank: 8 regions, 6 MPI functions, K kernel
# launches, 32 memcpys, like one GPU rank of a traced app), then times, side by
# side in this one run:
#   * N/4, N/2 and N rank files merged into one trace file (growth with N),
#   * the same N merged again (everything a duplicate: the scan cost),
#   * N rank files merged into a committed point of a run file (--point),
#   * N/16 point files (one array task each) merged into one run file.
# Prints seconds and the ratio to the target: N=4096 rank files in <= 60 s.
# Needs the targets rtrace and rtrace-merge-synth built in DIR (default: build):
#   cmake --build build --target rtrace rtrace-merge-synth
set -euo pipefail

build="build"
files=4096
kernels=256
keep=0
target_s=60
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --files) files="$2"; shift 2 ;;
    --kernels) kernels="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "merge_scale.sh: unknown argument \`$1\` (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$files" =~ ^[0-9]+$ && "$files" -ge 8 ]] || { echo "merge_scale.sh: --files needs an integer >= 8" >&2; exit 2; }
[[ "$kernels" =~ ^[0-9]+$ ]] || { echo "merge_scale.sh: --kernels needs an integer" >&2; exit 2; }
rtrace="$build/bin/rtrace"
synth="$build/bin/rtrace-merge-synth"
for b in "$rtrace" "$synth"; do
  [[ -x "$b" ]] || { echo "merge_scale.sh: $b not built (cmake --build $build --target rtrace rtrace-merge-synth)" >&2; exit 2; }
done

work="$(mktemp -d "${TMPDIR:-/tmp}/rtrace-merge-scale.XXXXXX")"
if [[ "$keep" -eq 0 ]]; then trap 'rm -rf "$work"' EXIT; fi

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
mib() { du -sm "$1" | awk '{ print $1 }'; }

# Runs rtrace merge, prints its seconds; merge exit 1 (missing points) is fine here.
timed_merge() {
  local t0 t1 rc=0
  t0="$(now)"
  "$rtrace" merge --quiet "$@" || rc=$?
  t1="$(now)"
  if [[ "$rc" -gt 1 ]]; then echo "merge_scale.sh: rtrace merge $* failed (exit $rc)" >&2; exit 1; fi
  elapsed "$t0" "$t1"
}

echo "merge_scale: host $(hostname -s), $(nproc) cores, work dir $work ($(df -T "$work" | awk 'NR==2 { print $2 }'))"
t0="$(now)"
"$synth" trace "$work/ranks" "$files" --kernels "$kernels" --memcpy 32
t1="$(now)"
echo "merge_scale: generated $files rank files ($(mib "$work/ranks") MiB, $kernels kernels/rank) in $(elapsed "$t0" "$t1") s"

# Subsets for the growth curve: the first N/4 and N/2 files (hard links, same data).
for n in $((files / 4)) $((files / 2)); do
  mkdir -p "$work/subset-$n"
  for ((r = 0; r < n; r++)); do ln "$work/ranks/rank-$r.h5" "$work/subset-$n/rank-$r.h5"; done
done

printf '%-44s %8s %9s %12s\n' "case" "files" "seconds" "ms/file"
row() { printf '%-44s %8d %9s %12s\n' "$1" "$2" "$3" "$(awk -v s="$3" -v n="$2" 'BEGIN { printf "%.2f", 1000 * s / n }')"; }

s_q="$(timed_merge "$work/subset-$((files / 4))" -o "$work/q.h5")"
row "rank files -> trace file" $((files / 4)) "$s_q"
s_h="$(timed_merge "$work/subset-$((files / 2))" -o "$work/h.h5")"
row "rank files -> trace file" $((files / 2)) "$s_h"
s_full="$(timed_merge "$work/ranks" -o "$work/all.h5")"
row "rank files -> trace file" "$files" "$s_full"
s_dup="$(timed_merge "$work/ranks" -o "$work/all.h5")"
row "same again (all duplicates, no rewrite)" "$files" "$s_dup"

"$synth" run "$work/run.h5" 4 0 >/dev/null
s_point="$(timed_merge --point 0 "$work/ranks" -o "$work/run.h5")"
row "rank files -> point of a run file" "$files" "$s_point"

parts=$((files / 16))
mkdir -p "$work/parts"
t0="$(now)"
for ((p = 0; p < parts; p++)); do "$synth" run "$work/parts/part-$p.h5" "$parts" "$p"; done
t1="$(now)"
echo "merge_scale: generated $parts point files ($(mib "$work/parts") MiB) in $(elapsed "$t0" "$t1") s" >&2
s_parts="$(timed_merge "$work/parts" -o "$work/merged-run.h5")"
row "point files (array tasks) -> run file" "$parts" "$s_parts"
"$rtrace" validate "$work/all.h5" >/dev/null
"$rtrace" validate "$work/merged-run.h5" >/dev/null

echo "merge_scale: output $(du -m "$work/all.h5" | awk '{ print $1 }') MiB for $files ranks; both outputs pass rtrace validate"
ratio="$(awk -v s="$s_full" -v t="$target_s" 'BEGIN { printf "%.3f", s / t }')"
verdict="$(awk -v r="$ratio" 'BEGIN { print (r <= 1.0 ? "PASS" : "FAIL") }')"
echo "merge_scale: $files rank files merged in $s_full s; target <= $target_s s; ratio $ratio ($verdict)"
[[ "$verdict" == "PASS" ]]
