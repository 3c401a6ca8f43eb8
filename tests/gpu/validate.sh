#!/usr/bin/env bash
# tests/gpu/validate.sh: end-to-end validation of rtrace on an NVIDIA GPU, from
# a bundle (scripts/bundle.sh) or a build tree: no build step, no network.
#
#   tests/gpu/validate.sh [--quick] [--bundle DIR] OUT
#
# DIR holds bin/rtrace, bin/rtrace-demo-cuda, bin/rtrace-demo-check and
# lib/librtrace_tracer.so (a bundle, or a build directory); default: the bundle
# this script sits in. Device facts come from `rtrace ert --list-gpus` (the
# driver), never from nvidia-smi. Checks, one table row each with the number
# measured (a row FAILs; the script exits 1 if any did):
#   - every demo's result check, read from the run file (/points/*/stdout);
#   - FLOPs of the exactly countable demos within 1% of the analytic count:
#     FP64 (triad, stencil7, gsrb, spmv, dgemm), FP32 (fma fp32), FP16 (fma
#     half2: 4 FLOPs per HFMA2; fma half: 2 per scalar HFMA), tensor (fma
#     wmma-fp16, dmma-fp64, and wgmma-fp16 on compute capability 9.0: 2 FLOPs
#     per math op); gpp is reported, not judged (divides and sqrt expand);
#   - triad's DRAM bytes within 10% of 24 bytes per element;
#   - the whole-device ERT: its SMs measured by %smid = the device's SMs, its
#     HBM (or DRAM) ceiling >= 0.9 x the published bandwidth of a GPU known by
#     name (tests/gpu/gpu_spec.sh: H100 SXM 3350, H200 4800 GB/s, ...; else
#     2 x memory clock x bus, which on an H200 is 4.42 TB/s, not its 4.8),
#     its FP16 tensor ceiling (wgmma on 9.0) >= 0.85 x the dense spec of a GPU
#     known by name (H100, H200, A100), reported otherwise;
#   - an SM sweep of triad with rtrace's defaults (the unmodified-app path:
#     times in the partition, counts from a metrics run, ERT per partition),
#     per point: measured SMs (sms_achieved) = granted; triad traced as many
#     times as it ran, with time > 0; its FLOPs counted (with their provenance)
#     within 1% of the analytic count; the point's ERT measured on the granted
#     SMs; then: no ceiling falls as SMs grow (beyond CEILING_TOL and noise),
#     triad's time falls as SMs grow until HBM saturates (>= 0.8 x the
#     whole-device HBM ceiling) and does not rise after, and `rtrace analyze`
#     draws triad's roofline trajectory. A point with no kernel data FAILs;
#   - no MPS daemon or server (nvidia-cuda-mps-control/-server) left running by rtrace.
# Writes OUT/<gpu-name>.md (copy it to docs/validation/), OUT/*.h5 and logs.
#
# Exit: 0 every check passed; 1 a check failed; 2 bad usage or an incomplete
# DIR; 77 no GPU (nothing was validated: this is not a pass; ctest's skip code).
set -uo pipefail
export LC_ALL=C  # sort/join order and the decimal point of every number parsed here

FLOPS_TOL="${FLOPS_TOL:-0.01}"
DRAM_TOL="${DRAM_TOL:-0.10}"
HBM_MIN_FRACTION="${HBM_MIN_FRACTION:-0.9}"
CEILING_TOL="${CEILING_TOL:-0.05}"
TC_MIN_FRACTION="${TC_MIN_FRACTION:-0.85}"
POINT_TIMEOUT="${POINT_TIMEOUT:-600}"

usage() { echo "usage: $0 [--quick] [--bundle DIR] OUT" >&2; exit 2; }
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=gpu_spec.sh
. "$HERE/gpu_spec.sh" || { echo "validate.sh: $HERE/gpu_spec.sh is missing" >&2; exit 2; }
BUNDLE=""
QUICK=0
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --bundle) [ $# -ge 2 ] || usage; BUNDLE="$2"; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    -*) echo "validate.sh: unknown option \`$1'" >&2; usage ;;
    *) [ -z "$OUT" ] || usage; OUT="$1" ;;
  esac
  shift
done
[ -n "$OUT" ] || usage
if [ -z "$BUNDLE" ]; then
  if [ -x "$HERE/../../bin/rtrace" ]; then BUNDLE="$HERE/../.."
  else echo "validate.sh: --bundle DIR is required (a bundle from scripts/bundle.sh, or a build directory)" >&2; exit 2; fi
fi
BUNDLE="$(cd "$BUNDLE" 2>/dev/null && pwd)" || { echo "validate.sh: --bundle: no such directory" >&2; exit 2; }
RTRACE="$BUNDLE/bin/rtrace"
DEMO="$BUNDLE/bin/rtrace-demo-cuda"
CHECK="$BUNDLE/bin/rtrace-demo-check"
for f in "$RTRACE" "$DEMO" "$CHECK"; do
  [ -x "$f" ] || { echo "validate.sh: $f is missing: is $BUNDLE a CUDA bundle or build?" >&2; exit 2; }
done
[ -f "$BUNDLE/lib/librtrace_tracer.so" ] || { echo "validate.sh: $BUNDLE/lib/librtrace_tracer.so is missing" >&2; exit 2; }

# A bundle built against a newer glibc than the node's does not even start:
# say that, not "no GPU".
if ! started="$("$RTRACE" --version 2>&1)"; then
  echo "validate.sh: $RTRACE does not start on this node: $(printf '%s' "$started" | head -2 | tr '\n' ' ')" >&2
  echo "validate.sh: (a GLIBC_x.y 'not found' means the bundle was built on a newer distribution: see BUNDLE.txt)" >&2
  exit 2
fi

# ---- the device, from the driver (before anything is written)
GPUS="$("$RTRACE" ert --list-gpus 2>&1)"
if [ $? -ne 0 ] || [ -z "$GPUS" ]; then
  echo "validate.sh: no GPU: ${GPUS:-rtrace ert --list-gpus printed nothing}"
  echo "validate.sh: nothing was validated (exit 77: not a pass)"
  exit 77
fi
GPU_LINE="$(printf '%s\n' "$GPUS" | grep '^gpu=0 ' | head -1)"
field() { printf '%s\n' "$GPU_LINE" | sed -n "s/.* $1=\\([^ ]*\\).*/\\1/p"; }
GPU_NAME="$(printf '%s\n' "$GPU_LINE" | sed -n 's/.* name="\([^"]*\)".*/\1/p')"
SMS="$(field sms)"
CC="$(field cc)"
SPEC_BW="$(field spec_bandwidth_gbs)"
PART_MIN="$(field sm_partition_min)"
PART_ALIGN="$(field sm_partition_align)"
DRIVER="$(field driver_cuda)"
case "$SMS" in ''|*[!0-9]*) echo "validate.sh: cannot read the SM count from: $GPU_LINE" >&2; exit 2 ;; esac
[ "$SMS" -gt 0 ] || { echo "validate.sh: the driver reports $SMS SMs: $GPU_LINE" >&2; exit 2; }

mkdir -p "$OUT" || exit 2
OUT="$(cd "$OUT" && pwd)"
LOG="$OUT/logs"
mkdir -p "$LOG"
START=$(date +%s)
log() { printf '[validate %4ds] %s\n' "$(( $(date +%s) - START ))" "$*" >&2; }
SLUG="$(printf '%s' "$GPU_NAME" | tr 'A-Z' 'a-z' | tr -c 'a-z0-9\n' '-' | sed 's/--*/-/g; s/^-//; s/-$//')"
REPORT="$OUT/${SLUG:-gpu}.md"
DETAILS="$OUT/details.md"
: >"$DETAILS"
log "GPU 0: $GPU_NAME, $SMS SMs, cc $CC, spec bandwidth $SPEC_BW GB/s, driver for CUDA $DRIVER"

# ---- the table: one row per check
ROWS=()
FAILED=0
row() {  # check, measured, expected, verdict
  ROWS+=("| $1 | $2 | $3 | $4 |")
  printf '%-58s %-22s %-26s %s\n' "$1" "$2" "$3" "$4"
  case "$4" in FAIL*) FAILED=$((FAILED + 1)) ;; esac
}
# Numbers are checked as numbers: "", "n/a" or "none" never compare (awk would
# compare such strings as strings, and "n/a" >= 0.8*h is true).
is_num() { printf '%s' "$1" | grep -Eq '^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$'; }
positive() { is_num "$1" && awk -v a="$1" 'BEGIN { exit !(a > 0) }'; }
ratio_ok() { is_num "$1" && awk -v r="$1" -v t="$2" 'BEGIN { exit !(r - 1 <= t && 1 - r <= t) }'; }
ge() { is_num "$1" && is_num "$2" && awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 0) }'; }

# MPS control daemons and servers, from /proc (no pgrep needed): "pid:name ".
# comm is cut at 15 characters ("nvidia-cuda-mps"); argv[0] tells which one.
mps_processes() {
  local p comm name
  for p in /proc/[0-9]*; do
    comm="$(cat "$p/comm" 2>/dev/null)" || continue
    [ "$comm" = "nvidia-cuda-mps" ] || continue
    name="$(tr '\0' '\n' <"$p/cmdline" 2>/dev/null | head -1)"
    printf '%s:%s ' "${p#/proc/}" "${name##*/}"
  done
}
MPS_BEFORE="$(mps_processes)"

# ---- 1. ERT on the whole device
log "ERT on the whole device ($SMS SMs)"
ert_args=(ert --sms "$SMS" -o "$OUT/ert-full.h5" --json "$OUT/ert-full.json" --quiet)
[ "$QUICK" -eq 1 ] && ert_args+=(--quick)
HBM=""
if timeout "$POINT_TIMEOUT" "$RTRACE" "${ert_args[@]}" >"$LOG/ert-full.log" 2>&1 &&
   "$CHECK" ceilings "$OUT/ert-full.h5" >"$OUT/ert-full.md" 2>>"$LOG/ert-full.log"; then
  achieved="$(sed -n 's/.*achieved \([-0-9]*\)).*/\1/p' "$OUT/ert-full.md" | head -1)"
  if [ "$achieved" = "$SMS" ]; then row "ERT whole device: SMs measured (%smid)" "$achieved" "$SMS" pass
  else row "ERT whole device: SMs measured (%smid)" "${achieved:-none}" "$SMS" FAIL; fi
  HBM="$(awk -F'|' '{gsub(/ /, "", $2)} $2 == "HBM" || $2 == "DRAM" {gsub(/ /, "", $3); print $3; exit}' "$OUT/ert-full.md")"
  # The product's published bandwidth where rtrace knows it, else the driver's clock x bus.
  hbm_spec="$(hbm_spec_gbs "$GPU_NAME")"
  hbm_basis="$hbm_spec published"
  [ -n "$hbm_spec" ] || { hbm_spec="$SPEC_BW"; hbm_basis="$SPEC_BW = 2 x clock x bus"; }
  want="$(awk -v s="$hbm_spec" -v f="$HBM_MIN_FRACTION" 'BEGIN { printf "%.0f", s * f }')"
  if [ -n "$HBM" ] && ge "$HBM" "$want"; then row "HBM ceiling, whole device (GB/s)" "$HBM" ">= $want ($HBM_MIN_FRACTION x $hbm_basis)" pass
  else row "HBM ceiling, whole device (GB/s)" "${HBM:-none}" ">= $want ($HBM_MIN_FRACTION x $hbm_basis)" FAIL; fi
  { echo "### ERT, whole device"; echo; cat "$OUT/ert-full.md"; echo; } >>"$DETAILS"
else
  row "ERT whole device" "exit $?" "0" "FAIL (see logs/ert-full.log)"
fi

# ---- 1b. the FP16 tensor ceiling: wgmma on compute capability 9.0 (rtrace's
# default there, "TC FP16->FP32"), mma.sync elsewhere; on 9.0 mma.sync is its
# own "TC FP16->FP32 mma.sync". Judged against the dense FP16->FP32 spec of
# the GPUs whose spec rtrace knows by name, reported otherwise.
tc_ceiling() { awk -F'|' -v want="$2" '{n = $2; gsub(/^ +| +$/, "", n)} n == want {gsub(/ /, "", $3); print $3; exit}' "$1" 2>/dev/null; }
tc_fp16_spec() { tc_fp16_spec_gflops "$GPU_NAME"; }  # gpu_spec.sh
if [ -f "$OUT/ert-full.md" ]; then
  tc="$(tc_ceiling "$OUT/ert-full.md" "TC FP16->FP32")"
  spec="$(tc_fp16_spec)"
  what="$([ "$CC" = "9.0" ] && echo "wgmma" || echo "mma.sync")"
  if [ -n "$spec" ]; then
    want="$(awk -v s="$spec" -v f="$TC_MIN_FRACTION" 'BEGIN { printf "%.0f", s * f }')"
    if ge "$tc" "$want"; then row "FP16 tensor ceiling, $what (GFLOP/s)" "$tc" ">= $want ($TC_MIN_FRACTION x $spec)" pass
    else row "FP16 tensor ceiling, $what (GFLOP/s)" "${tc:-none}" ">= $want ($TC_MIN_FRACTION x $spec)" FAIL; fi
  else
    row "FP16 tensor ceiling, $what (GFLOP/s)" "${tc:-none}" "reported (no spec known for $GPU_NAME)" info
  fi
  [ "$CC" = "9.0" ] && row "FP16 tensor ceiling, mma.sync (GFLOP/s)" "$(tc_ceiling "$OUT/ert-full.md" "TC FP16->FP32 mma.sync")" \
    "reported (its own ceiling on sm_90)" info
fi

# ---- 2. metrics mode: result checks, analytic FLOPs, compulsory bytes
# kernel variant size iters (triad's 3 x 8 x size bytes are far beyond any L2)
if [ "$QUICK" -eq 1 ]; then
  CASES=("triad - 33554432 2" "stencil7 - 128 2" "gsrb all 96 1" "spmv all 262144 1" "gpp all 256 1" "dgemm - 512 1"
         "fma fp32 1048576 2" "fma half2 1048576 2" "fma half 1048576 2" "fma wmma-fp16 1048576 2"
         "fma dmma-fp64 262144 2")
  [ "$CC" = "9.0" ] && CASES+=("fma wgmma-fp16 1048576 2")
else
  CASES=("triad - 67108864 3" "stencil7 - 256 3" "gsrb all 192 2" "spmv all 2097152 2" "gpp all 512 1" "dgemm - 2048 1"
         "fma fp32 4194304 3" "fma half2 4194304 3" "fma half 4194304 3" "fma wmma-fp16 4194304 3"
         "fma dmma-fp64 1048576 3")
  [ "$CC" = "9.0" ] && CASES+=("fma wgmma-fp16 4194304 3")
fi
for c in "${CASES[@]}"; do
  read -r kernel variant size iters <<<"$c"
  name="$kernel${variant/#-/}"
  [ "$variant" != "-" ] && name="$kernel-$variant"
  log "metrics: $name (size $size, iters $iters)"
  expect="$OUT/expect-$name.tsv"
  data="$OUT/metrics-$name.h5"
  rm -f "$expect" "$data"
  app=("$DEMO" "$kernel" --size "$size" --iters "$iters" --expect "$expect")
  [ "$variant" != "-" ] && app+=(--variant "$variant")
  timeout $((POINT_TIMEOUT + 60)) "$RTRACE" --tracer cuda-metrics --ert none --timeout "$POINT_TIMEOUT" -o "$data" -- \
    "${app[@]}" >"$LOG/metrics-$name.log" 2>&1
  rc=$?
  if [ ! -f "$data" ]; then
    row "$name: result check" "no run file (rtrace exit $rc)" "ok" "FAIL (see logs/metrics-$name.log)"
    continue
  fi
  # The demo's own result check, from the file (the point's captured output).
  point="$("$CHECK" points "$data" 2>>"$LOG/metrics-$name.log" | grep -v '^#' | head -1)"
  status="$(printf '%s\n' "$point" | cut -f3)"
  check="$(printf '%s\n' "$point" | cut -f10)"
  if [ "$status" = "ok" ] && [ "$check" = "ok" ]; then row "$name: result check (from the run file)" "$check" "ok" pass
  else row "$name: result check (from the run file)" "status ${status:-?}, check ${check:-?}" "ok" FAIL; fi
  if [ ! -s "$expect" ]; then
    row "$name: FLOPs" "no expectations written" "-" "FAIL (see logs/metrics-$name.log)"
    continue
  fi
  "$CHECK" kernels "$data" --expect "$expect" --flops-tol "$FLOPS_TOL" --dram-tol "$DRAM_TOL" \
    --dram-check rtd_triad_k >"$LOG/check-$name.md" 2>>"$LOG/metrics-$name.log"
  crc=$?
  if [ "$crc" -eq 3 ]; then
    row "$name: FLOPs" "no kernel metrics in the file" "metrics for every launch" FAIL
    continue
  fi
  { echo "### $name"; echo; cat "$LOG/check-$name.md"; echo; } >>"$DETAILS"
  # | `sym` | region | launches | counter | analytic | measured | ratio | verdict | dram analytic | measured | ratio | dram verdict |
  while IFS='|' read -r _ sym region launches counter analytic measured ratio verdict dram_a dram_m dram_r dram_v _; do
    sym="$(echo "$sym" | tr -d '` ')"; counter="$(echo "$counter" | tr -d ' ')"; ratio="$(echo "$ratio" | tr -d ' ')"
    verdict="$(echo "$verdict" | sed 's/^ *//; s/ *$//')"; launches="$(echo "$launches" | tr -d ' ')"
    case "$verdict" in
      pass) row "$name: $counter FLOPs of $sym (ratio)" "$ratio" "1 +- $FLOPS_TOL" pass ;;
      info*) row "$name: $counter FLOPs of $sym (ratio)" "$ratio" "reported, not judged" info ;;
      *) row "$name: $counter FLOPs of $sym (ratio)" "${ratio} (launches $launches)" "1 +- $FLOPS_TOL" "FAIL" ;;
    esac
    if [ "$sym" = "rtd_triad_k" ]; then
      dram_r="$(echo "$dram_r" | tr -d ' ')"
      if ratio_ok "$dram_r" "$DRAM_TOL"; then row "$name: DRAM bytes / (24 x elements)" "$dram_r" "1 +- $DRAM_TOL" pass
      else row "$name: DRAM bytes / (24 x elements)" "${dram_r:-none}" "1 +- $DRAM_TOL" FAIL; fi
    fi
  done < <(grep '^| `' "$LOG/check-$name.md")
done

# ---- 3. SM sweep of triad the way an unmodified app is swept: rtrace's
# defaults (--tracer auto: kernel times inside each MPS partition, kernel
# counts from a metrics run, inside the partition when CUPTI allows it, else
# outside; the ERT of every partition). Every row below fails on missing or
# empty data: a point without kernel rows is a FAIL, never a skipped compare.
ALIGN=$(( PART_ALIGN > 0 ? PART_ALIGN : 8 ))
MIN=$(( PART_MIN > 0 ? PART_MIN : ALIGN ))
SM_LIST=""
for q in 8 4 2 1; do  # SMS/8, /4, /2 (whole multiples of the granularity), then the whole device
  s=$(( SMS / q / ALIGN * ALIGN ))
  [ "$q" -eq 1 ] && s=$SMS
  [ "$s" -ge "$MIN" ] || continue
  case ",$SM_LIST," in *",$s,"*) ;; *) SM_LIST="$SM_LIST,$s" ;; esac
done
SM_LIST="${SM_LIST#,}"
TRIAD_N=$([ "$QUICK" -eq 1 ] && echo 33554432 || echo 67108864)
TRIAD_IT=$([ "$QUICK" -eq 1 ] && echo 3 || echo 5)
TRIAD_FLOPS=$(awk -v n="$TRIAD_N" -v i="$TRIAD_IT" 'BEGIN { printf "%.0f", 2 * n * i }')
log "SM sweep of triad over sms=$SM_LIST (rtrace's defaults: times in the partition, counts, ERT per partition)"
run="$OUT/sm-triad.h5"
rm -rf "$run" "$run.d"
timeout $((POINT_TIMEOUT * 12)) "$RTRACE" --sweep "sms=$SM_LIST" --ert quick --timeout "$POINT_TIMEOUT" \
  -o "$run" -- "$DEMO" triad --size "$TRIAD_N" --iters "$TRIAD_IT" >"$LOG/sweep-triad.log" 2>&1
rc=$?
if [ ! -f "$run" ]; then
  row "SM sweep of triad" "no run file (rtrace exit $rc)" "a run file" "FAIL (see logs/sweep-triad.log)"
else
  [ "$rc" -eq 0 ] || row "SM sweep of triad: rtrace exit status" "$rc" "0" "FAIL (see logs/sweep-triad.log)"
  "$RTRACE" validate "$run" >>"$LOG/sweep-triad.log" 2>&1 || row "SM sweep of triad: rtrace validate" "invalid" "valid" FAIL
  "$CHECK" points "$run" >"$OUT/sm-triad-points.tsv" 2>>"$LOG/sweep-triad.log"
  "$CHECK" point-kernels "$run" rtd_triad_k >"$OUT/sm-triad-kernels.tsv" 2>>"$LOG/sweep-triad.log"
  "$CHECK" ert-sms "$run" >"$OUT/sm-triad-ert.tsv" 2>>"$LOG/sweep-triad.log"
  "$CHECK" ceiling-values "$run" >"$OUT/sm-triad-ceilings.tsv" 2>>"$LOG/sweep-triad.log"
  { echo "### SM sweep of triad (sms=$SM_LIST)"; echo; echo '```'
    cat "$OUT/sm-triad-points.tsv" "$OUT/sm-triad-kernels.tsv" "$OUT/sm-triad-ert.tsv" "$OUT/sm-triad-ceilings.tsv"
    echo '```'; echo; } >>"$DETAILS"
  [ -n "$(grep -v '^#' "$OUT/sm-triad-points.tsv")" ] || row "SM sweep of triad: points" "none in the file" "one per SM count" FAIL
  : >"$OUT/sm-triad-scaling.tsv"
  # id label status exit requested granted achieved method wall check
  while IFS=$'\t' read -r id label status exit_code req granted achieved method wall check; do
    [ "$status" = "ok" ] && [ "$check" = "ok" ] || row "sms sweep point $id ($label): run" "status $status, check $check" "ok" FAIL
    if [ "$achieved" -gt 0 ] 2>/dev/null && [ "$achieved" = "$granted" ]; then
      row "sms sweep point $id: SMs measured (%smid) = granted" "$achieved" "$granted (requested $req, $method)" pass
    else
      row "sms sweep point $id: SMs measured (%smid) = granted" "${achieved:-none}" "$granted (requested $req, $method)" FAIL
    fi
    # point granted traced seconds counted flops dram provenance
    k="$(awk -F'\t' -v id="$id" '$1 == id' "$OUT/sm-triad-kernels.tsv")"
    traced="$(printf '%s' "$k" | cut -f3)"; secs="$(printf '%s' "$k" | cut -f4)"
    counted="$(printf '%s' "$k" | cut -f5)"; flops="$(printf '%s' "$k" | cut -f6)"; prov="$(printf '%s' "$k" | cut -f8)"
    if [ "$traced" = "$TRIAD_IT" ] && positive "$secs"; then
      row "sms sweep point $id: triad launches traced, time" "$traced, $secs s" "$TRIAD_IT launches, time > 0" pass
    else
      row "sms sweep point $id: triad launches traced, time" "${traced:-none}, ${secs:-none} s" "$TRIAD_IT launches, time > 0" FAIL
    fi
    [ "$prov" = "-" ] && prov=""
    r=""
    [ "${counted:-0}" -gt 0 ] 2>/dev/null && is_num "$flops" &&
      r="$(awk -v a="$flops" -v b="$TRIAD_FLOPS" 'BEGIN { printf "%.4f", a / b }')"
    if [ "$counted" = "$TRIAD_IT" ] && ratio_ok "$r" "$FLOPS_TOL"; then
      row "sms sweep point $id: triad FLOPs counted / analytic ($prov)" "$r" "1 +- $FLOPS_TOL, $TRIAD_IT launches" pass
    else
      row "sms sweep point $id: triad FLOPs counted / analytic (${prov:-no counts})" "${r:-none} (${counted:-0} launches)" \
        "1 +- $FLOPS_TOL, $TRIAD_IT launches" FAIL
    fi
    e="$(awk -F'\t' -v id="$id" '$1 == id {print $3}' "$OUT/sm-triad-ert.tsv")"
    if [ -n "$e" ] && [ "$e" = "$granted" ]; then row "sms sweep point $id: its ERT's SMs (%smid) = granted" "$e" "$granted" pass
    else row "sms sweep point $id: its ERT's SMs (%smid) = granted" "${e:-no ERT}" "$granted" FAIL; fi
    positive "$secs" && printf '%s\t%s\t%s\n' "$id" "$achieved" "$secs" >>"$OUT/sm-triad-scaling.tsv"
  done < <(grep -v '^#' "$OUT/sm-triad-points.tsv")

  # Ceilings may not fall as SMs grow (HBM flattens; beyond noise: by more than
  # CEILING_TOL and with non-overlapping repeats).
  drops="$(grep -v '^#' "$OUT/sm-triad-ceilings.tsv" | sort -t $'\t' -k3,3 -k2,2n |
    awk -F'\t' -v tol="$CEILING_TOL" '
      $3 == name && $4 < (1 - tol) * value && $6 < min { printf "%s %d -> %d SMs: %.4g -> %.4g\n", $3, sms, $2, value, $4 }
      { name = $3; sms = $2; value = $4; min = $5 }')"
  n_ceil="$(grep -vc '^#' "$OUT/sm-triad-ceilings.tsv")"
  if [ "$n_ceil" -eq 0 ]; then
    row "ceilings of every partition, non-decreasing with SMs" "no ceilings in the run" "one set per point" FAIL
  elif [ -z "$drops" ]; then
    row "ceilings of every partition, non-decreasing with SMs" "$n_ceil values" "no drop > $CEILING_TOL beyond noise" pass
  else
    while IFS= read -r d; do row "ceiling falls with more SMs" "$d" "no drop > $CEILING_TOL beyond noise" FAIL; done <<<"$drops"
  fi

  # Kernel time per point, in SM order: it must fall while triad's bandwidth is
  # under 0.8 x the whole-device HBM ceiling, and must not rise after.
  bytes=$(awk -v n="$TRIAD_N" -v i="$TRIAD_IT" 'BEGIN { printf "%.0f", 24 * n * i }')
  sort -t $'\t' -k2,2n "$OUT/sm-triad-scaling.tsv" -o "$OUT/sm-triad-scaling.tsv"
  prev_t=""; prev_s=""
  while IFS=$'\t' read -r id sms t; do
    bw=$(awk -v b="$bytes" -v t="$t" 'BEGIN { printf "%.0f", b / t / 1e9 }')
    if [ -n "$prev_t" ]; then
      if positive "${HBM:-}" && ge "$prev_bw" "$(awk -v h="$HBM" 'BEGIN { print 0.8 * h }')"; then
        if awk -v a="$t" -v b="$prev_t" 'BEGIN { exit !(a <= 1.05 * b) }'; then v=pass; else v=FAIL; fi
        row "triad time $prev_s -> $sms SMs (HBM saturated)" "$(printf '%.4f -> %.4f s' "$prev_t" "$t")" "no rise (<= 1.05 x)" "$v"
      else
        if awk -v a="$t" -v b="$prev_t" 'BEGIN { exit !(a <= 0.9 * b) }'; then v=pass; else v=FAIL; fi
        row "triad time $prev_s -> $sms SMs ($prev_bw GB/s before)" "$(printf '%.4f -> %.4f s' "$prev_t" "$t")" "falls (<= 0.9 x)" "$v"
      fi
    fi
    prev_t=$t; prev_s=$sms; prev_bw=$bw
  done <"$OUT/sm-triad-scaling.tsv"
  points_n="$(grep -vc '^#' "$OUT/sm-triad-points.tsv")"
  timed_n="$(wc -l <"$OUT/sm-triad-scaling.tsv")"
  [ "$timed_n" -ge 2 ] && [ "$timed_n" -eq "$points_n" ] ||
    row "triad time vs SMs" "kernel times at $timed_n of $points_n points" "one per point, at least 2" FAIL

  # The roofline trajectory the analysis draws from those counts and ceilings.
  "$RTRACE" analyze "$run" --json "$OUT/sm-triad-analysis.json" >"$OUT/sm-triad-analysis.txt" 2>>"$LOG/sweep-triad.log"
  # (the JSON is indented one space per level: the trajectories' kernels until the next top-level key)
  if awk '/^ "trajectories": \[/ {t = 1; next} t && /^ "[a-z_]+":/ {t = 0}
          t && /"kernel": "[^"]*rtd_triad_k/ {found = 1} END {exit !found}' "$OUT/sm-triad-analysis.json" 2>/dev/null; then
    row "rtrace analyze: roofline trajectory of rtd_triad_k over sms" "present" "present" pass
  else
    row "rtrace analyze: roofline trajectory of rtd_triad_k over sms" "absent" "present" FAIL
  fi
fi

# ---- 4. no MPS daemon left behind
MPS_AFTER="$(mps_processes)"
if [ "$MPS_AFTER" = "$MPS_BEFORE" ]; then row "MPS daemons/servers after the run" "${MPS_AFTER:-none}" "as before: ${MPS_BEFORE:-none}" pass
else row "MPS daemons/servers after the run" "$MPS_AFTER" "as before: ${MPS_BEFORE:-none}" FAIL; fi

# ---- the report
ELAPSED=$(( $(date +%s) - START ))
{
  echo "# rtrace GPU validation: $GPU_NAME"
  echo
  echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ), host $(hostname), ${ELAPSED} s, mode $([ "$QUICK" -eq 1 ] && echo quick || echo full)"
  echo "- device (rtrace ert --list-gpus): \`$GPU_LINE\`"
  echo "- rtrace: $("$RTRACE" --version 2>/dev/null | head -1), from $BUNDLE"
  echo "- tolerances: FLOPs $FLOPS_TOL, DRAM $DRAM_TOL, HBM >= $HBM_MIN_FRACTION x spec (published where known: tests/gpu/gpu_spec.sh)"
  echo "- result: $([ "$FAILED" -eq 0 ] && echo "all checks passed" || echo "$FAILED check(s) FAILED")"
  echo
  echo "| check | measured | expected | verdict |"
  echo "|---|---|---|---|"
  printf '%s\n' "${ROWS[@]}"
  echo
  echo "## Details"
  echo
  cat "$DETAILS"
} >"$REPORT"
rm -f "$DETAILS"
echo
echo "validate.sh: $GPU_NAME: $([ "$FAILED" -eq 0 ] && echo "all checks passed" || echo "$FAILED check(s) FAILED"), ${ELAPSED} s"
echo "  report: $REPORT (copy it to docs/validation/), logs: $LOG/"
[ "$FAILED" -eq 0 ] || exit 1
exit 0
