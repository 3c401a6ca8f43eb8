#!/usr/bin/env bash
# bench/ingest_scale.sh: `rtrace merge`, `rtrace analyze` and `rtrace validate`
# of synthetic sweeps of 16k, 64k and 100k ranks: time and peak RSS at each
# size and how they grow, measured side by side in this one run.
#
#   bench/ingest_scale.sh [--build DIR] [--sizes N1,N2,...] [--keep]
#
# For each size N: a run of a ranks sweep `ranks=N/2,N` (1.5 N rank groups)
# whose points are committed empty, then filled the way a sweep's ranks
# arrive: `rtrace merge --point` of trace files (what the tracer's collective
# ranks.h5 is) holding N/2 ranks each, point 0 from the first file and point 1
# from both. Each rank is an unannotated MPI rank as the CPU tracer writes it
# (8 regions, 6 MPI functions, 8 ranks per host; tests/merge/synth.cpp). Then
# `rtrace analyze --json` of the run, then `rtrace validate` of it (every
# object and every table row of the run and its point files; its child
# process is what GNU time's RSS sees, the larger of parent and child).
# Prints wall and CPU seconds, peak RSS
# (GNU time), time per 1,000 ranks, and the ratios to the first size next to
# the ideal (linear) ratio. Anchor: HPCToolkit's hpcanalysis ingests 10^5
# ranks in about 10 s on Aurora.
# Needs rtrace and rtrace-merge-synth built in DIR (default: build):
#   cmake --build build --target rtrace rtrace-merge-synth
# Disk: about 17 KB per rank, twice (the trace files and the run); the
# default sizes write about 6 GB in $TMPDIR and take 25-45 minutes here
# (generating the inputs is most of it).
set -euo pipefail

build="build"
sizes="16384,65536,102400"
keep=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "ingest_scale.sh: unknown argument \`$1\` (see --help)" >&2; exit 2 ;;
  esac
done
IFS=, read -r -a sizes_list <<<"$sizes"
for n in "${sizes_list[@]}"; do
  [[ "$n" =~ ^[0-9]+$ && "$n" -ge 16 && $((n % 2)) -eq 0 ]] || { echo "ingest_scale.sh: sizes must be even integers >= 16, got \`$n\`" >&2; exit 2; }
done
rtrace="$build/bin/rtrace"
synth="$build/bin/rtrace-merge-synth"
for b in "$rtrace" "$synth"; do
  [[ -x "$b" ]] || { echo "ingest_scale.sh: $b not built (cmake --build $build --target rtrace rtrace-merge-synth)" >&2; exit 2; }
done
[[ -x /usr/bin/time ]] || { echo "ingest_scale.sh: needs GNU time (/usr/bin/time; Debian package 'time')" >&2; exit 2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/rtrace-ingest-scale.XXXXXX")"
if [[ "$keep" -eq 0 ]]; then trap 'rm -rf "$work"' EXIT; fi
echo "ingest_scale: host $(hostname -s), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), work dir $work"

# Runs a command under GNU time; prints "wall user+sys rss_kib". Exit 1 of
# merge (points missing) would be a bench error here: every point is filled.
measure() {
  local out="$work/time.txt"
  if ! /usr/bin/time -f "%e %U %S %M" -o "$out" "$@" >"$work/cmd.log" 2>&1; then
    echo "ingest_scale.sh: \`$*\` failed:" >&2
    tail -n 5 "$work/cmd.log" >&2
    exit 1
  fi
  awk '{ printf "%.2f %.2f %d\n", $1, $2 + $3, $4 }' "$out"
}

declare -A merge_wall merge_cpu merge_rss analyze_wall analyze_cpu analyze_rss validate_wall validate_cpu validate_rss
for n in "${sizes_list[@]}"; do
  half=$((n / 2))
  d="$work/n$n"
  mkdir -p "$d"
  t0="$(date +%s.%N)"
  # The two halves in parallel (two cores), then the run skeleton.
  "$synth" ranks "$d/a.h5" "$half" &
  "$synth" ranks "$d/b.h5" "$half" --first "$half"
  wait
  "$synth" ranks-sweep "$d/run.h5" "$half,$n"
  echo "ingest_scale: N=$n: inputs written in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }') s," \
    "$(du -sm "$d" | cut -f1) MiB"
  read -r w1 c1 r1 < <(measure "$rtrace" merge --quiet --point 0 "$d/a.h5" -o "$d/run.h5")
  read -r w2 c2 r2 < <(measure "$rtrace" merge --quiet --point 1 "$d/a.h5" "$d/b.h5" -o "$d/run.h5")
  merge_wall[$n]="$(awk -v a="$w1" -v b="$w2" 'BEGIN { printf "%.2f", a + b }')"
  merge_cpu[$n]="$(awk -v a="$c1" -v b="$c2" 'BEGIN { printf "%.2f", a + b }')"
  merge_rss[$n]=$((r1 > r2 ? r1 : r2))
  rm -f "$d/a.h5" "$d/b.h5"
  echo "ingest_scale: N=$n: merge ${merge_wall[$n]} s (cpu ${merge_cpu[$n]} s, ${merge_rss[$n]} KiB)"
  read -r w c r < <(measure "$rtrace" analyze "$d/run.h5" --json "$d/analysis.json" -q)
  analyze_wall[$n]="$w"
  analyze_cpu[$n]="$c"
  analyze_rss[$n]="$r"
  ranks_seen="$(/usr/bin/python3 -c 'import json,sys; print(max(c["ranks_found"] for c in json.load(open(sys.argv[1]))["configurations"]))' "$d/analysis.json" 2>/dev/null || echo "?")"
  [[ "$ranks_seen" == "$n" ]] || { echo "ingest_scale.sh: analyze found $ranks_seen ranks at the largest point, expected $n" >&2; exit 1; }
  echo "ingest_scale: N=$n: analyze ${w} s (cpu ${c} s, ${r} KiB)"
  # Every object, attribute and row; a timeout above the default 600 s so a
  # slow validate is measured rather than cut off.
  read -r w c r < <(measure "$rtrace" validate --timeout 3600 "$d/run.h5")
  grep -q "valid rtrace run file (schema [0-9.]*, 2 of 2 points complete)" "$work/cmd.log" ||
    { echo "ingest_scale.sh: validate: $(tail -n 1 "$work/cmd.log")" >&2; exit 1; }
  validate_wall[$n]="$w"
  validate_cpu[$n]="$c"
  validate_rss[$n]="$r"
  echo "ingest_scale: N=$n: validate ${w} s (cpu ${c} s, ${r} KiB)"
  [[ "$keep" -eq 1 ]] || rm -rf "$d"
done

first="${sizes_list[0]}"
echo
echo "ingest_scale: a sweep ranks=N/2,N (1.5 N rank groups); ratios against N=$first (ideal = linear)"
printf '%-8s %-8s %9s %9s %8s %9s %9s %9s %8s %9s %10s %9s %8s %9s %7s\n' "N" "groups" \
  "merge s" "cpu s" "RSS MiB" "ms/1k gr" "analyze s" "cpu s" "RSS MiB" "ms/1k gr" "validate s" "cpu s" "RSS MiB" "ms/1k gr" "ideal"
mib() { awk -v r="$1" 'BEGIN { printf "%.1f", r / 1024 }'; }
per_1k() { awk -v s="$1" -v g="$2" 'BEGIN { printf "%.1f", 1e6 * s / g }'; }
for n in "${sizes_list[@]}"; do
  groups=$((n + n / 2))
  printf '%-8s %-8s %9s %9s %8s %9s %9s %9s %8s %9s %10s %9s %8s %9s %7s\n' "$n" "$groups" \
    "${merge_wall[$n]}" "${merge_cpu[$n]}" "$(mib "${merge_rss[$n]}")" "$(per_1k "${merge_cpu[$n]}" "$groups")" \
    "${analyze_wall[$n]}" "${analyze_cpu[$n]}" "$(mib "${analyze_rss[$n]}")" "$(per_1k "${analyze_cpu[$n]}" "$groups")" \
    "${validate_wall[$n]}" "${validate_cpu[$n]}" "$(mib "${validate_rss[$n]}")" "$(per_1k "${validate_cpu[$n]}" "$groups")" \
    "$(awk -v a="$n" -v b="$first" 'BEGIN { printf "%.2f", a / b }')"
done
echo
echo "growth against N=$first: (cpu time ratio, RSS ratio); linear time is the ideal ratio, flat RSS is 1.00"
for n in "${sizes_list[@]}"; do
  awk -v n="$n" -v f="$first" -v mc="${merge_cpu[$n]}" -v mc0="${merge_cpu[$first]}" -v mr="${merge_rss[$n]}" \
      -v mr0="${merge_rss[$first]}" -v ac="${analyze_cpu[$n]}" -v ac0="${analyze_cpu[$first]}" \
      -v ar="${analyze_rss[$n]}" -v ar0="${analyze_rss[$first]}" -v vc="${validate_cpu[$n]}" \
      -v vc0="${validate_cpu[$first]}" -v vr="${validate_rss[$n]}" -v vr0="${validate_rss[$first]}" 'BEGIN {
    printf "  N=%-7d ideal %5.2f  merge cpu %5.2f rss %5.2f  analyze cpu %5.2f rss %5.2f  validate cpu %5.2f rss %5.2f\n",
      n, n / f, mc / mc0, mr / mr0, ac / ac0, ar / ar0, vc / vc0, vr / vr0 }'
done
last="${sizes_list[${#sizes_list[@]}-1]}"
echo "anchor: hpcanalysis ~10 s for 10^5 ranks (Aurora); rtrace analyze of N=$last ranks (the largest point," \
  "$((last + last / 2)) rank groups in all): ${analyze_wall[$last]} s wall, ${analyze_cpu[$last]} s cpu on this machine"
