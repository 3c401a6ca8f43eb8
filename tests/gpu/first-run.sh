#!/usr/bin/env bash
# tests/gpu/first-run.sh: the first checks to run on a GPU lent for a few
# minutes, cheapest first, in one call of under 10 minutes (FIRST_RUN_BUDGET,
# default 540 s of wall time for everything after the device query). Runs from
# a bundle (scripts/bundle.sh) or a build tree: the GPU machines have no HDF5,
# MPI or Boost of their own.
#
#   tests/gpu/first-run.sh [--bundle DIR] OUT
#
# Every check prints one line `[NN] PASS|FAIL|INFO  what: measured (want ...)`
# and a row of OUT/first-run.md; a check that did not get to run (the budget
# spent) is a FAIL, never a silent skip. In order:
#   environment: rtrace ert --list-gpus; the compute mode (PROHIBITED fails;
#     EXCLUSIVE_PROCESS is reported: rtrace stops its MPS server around the
#     runs outside a partition); MPS daemons or servers already running (a
#     foreign one disturbs or blocks an sms sweep); counter permission (the
#     driver's RmProfilingAdminOnly and the first cuda-metrics run);
#   whole-device cuda-metrics of the demo kernels, FLOPs against the analytic
#     count: fma half (2 per scalar HFMA), fma half2 (4 per HFMA2), wmma FP16
#     and DMMA FP64 (2 per tensor math op, in their own source type's column),
#     wgmma FP16 on compute capability 9.0, triad (FP64) and its DRAM bytes;
#   more than 4096 launches in one context: triad 4200 times, every launch
#     with counts (the range profiler restarted when its buffer filled);
#   a two-point sms sweep of triad: SMs measured = granted, whether CUPTI
#     profiled under MPS, where the counts came from (a green context, the
#     whole device), counts of every launch, no MPS daemon left behind;
#   a quick whole-device ERT: HBM and the FP16 tensor ceiling against the
#     published specs of tests/gpu/gpu_spec.sh.
#   and, from triad's metrics run, one kernel record per launch under kernel
#   replay (the join assumes it; issue 31).
#
# Exit: 0 every check passed, 1 a check failed, 2 bad usage or an incomplete
# bundle, 77 no GPU (nothing checked: not a pass).
set -uo pipefail
export LC_ALL=C

BUDGET="${FIRST_RUN_BUDGET:-540}"
FLOPS_TOL="${FLOPS_TOL:-0.01}"
DRAM_TOL="${DRAM_TOL:-0.10}"
HBM_MIN_FRACTION="${HBM_MIN_FRACTION:-0.9}"
TC_MIN_FRACTION="${TC_MIN_FRACTION:-0.85}"
PROC_ROOT="${FIRST_RUN_PROC_ROOT:-/proc}"                       # tests: a fake process table
NV_PARAMS="${FIRST_RUN_NV_PARAMS:-/proc/driver/nvidia/params}"  # tests: a fake driver parameter file

usage() { echo "usage: $0 [--bundle DIR] OUT" >&2; exit 2; }
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=gpu_spec.sh
. "$HERE/gpu_spec.sh" || { echo "first-run.sh: $HERE/gpu_spec.sh is missing" >&2; exit 2; }
BUNDLE=""
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) [ $# -ge 2 ] || usage; BUNDLE="$2"; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    -*) echo "first-run.sh: unknown option \`$1'" >&2; usage ;;
    *) [ -z "$OUT" ] || usage; OUT="$1" ;;
  esac
  shift
done
[ -n "$OUT" ] || usage
[ -n "$BUNDLE" ] || BUNDLE="$HERE/../.."
BUNDLE="$(cd "$BUNDLE" 2>/dev/null && pwd)" || { echo "first-run.sh: --bundle: no such directory" >&2; exit 2; }
RTRACE="$BUNDLE/bin/rtrace"
DEMO="$BUNDLE/bin/rtrace-demo-cuda"
CHECK="$BUNDLE/bin/rtrace-demo-check"
for f in "$RTRACE" "$DEMO" "$CHECK"; do
  [ -x "$f" ] || { echo "first-run.sh: $f is missing: is $BUNDLE a CUDA bundle or build?" >&2; exit 2; }
done
[ -f "$BUNDLE/lib/librtrace_tracer.so" ] || { echo "first-run.sh: $BUNDLE/lib/librtrace_tracer.so is missing" >&2; exit 2; }
if ! started="$("$RTRACE" --version 2>&1)"; then
  echo "first-run.sh: $RTRACE does not start on this node: $(printf '%s' "$started" | head -2 | tr '\n' ' ')" >&2
  exit 2
fi

# ---- the device (before anything is written)
GPUS="$("$RTRACE" ert --list-gpus 2>&1)"
if [ $? -ne 0 ] || ! printf '%s\n' "$GPUS" | grep -q '^gpu=0 '; then
  echo "first-run.sh: no GPU: ${GPUS:-rtrace ert --list-gpus printed nothing}"
  echo "first-run.sh: nothing was checked (exit 77: not a pass)"
  exit 77
fi
GPU_LINE="$(printf '%s\n' "$GPUS" | grep '^gpu=0 ' | head -1)"
field() { printf '%s\n' "$GPU_LINE" | sed -n "s/.* $1=\\([^ ]*\\).*/\\1/p"; }
GPU_NAME="$(printf '%s\n' "$GPU_LINE" | sed -n 's/.* name="\([^"]*\)".*/\1/p')"
SMS="$(field sms)"
CC="$(field cc)"
PART_ALIGN="$(field sm_partition_align)"
PART_MIN="$(field sm_partition_min)"
MODE="$(field compute_mode)"

mkdir -p "$OUT/logs" || exit 2
OUT="$(cd "$OUT" && pwd)"
LOG="$OUT/logs"
START=$(date +%s)
left() { echo $(( BUDGET - ($(date +%s) - START) )); }

N=0
FAILED=0
ROWS=()
row() {  # verdict, what, measured, want
  N=$((N + 1))
  printf '[%2d] %-4s  %s: %s (want %s)\n' "$N" "$1" "$2" "$3" "$4"
  ROWS+=("| $N | $2 | $3 | $4 | $1 |")
  [ "$1" = FAIL ] && FAILED=$((FAILED + 1))
  return 0
}
is_num() { printf '%s' "$1" | grep -Eq '^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$'; }
ratio_ok() { is_num "$1" && awk -v r="$1" -v t="$2" 'BEGIN { exit !(r - 1 <= t && 1 - r <= t) }'; }
ge() { is_num "$1" && is_num "$2" && awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 0) }'; }
# Runs a command under what is left of the budget (at most $1 s); 124 when cut.
budgeted() {
  local cap=$1; shift
  local t; t=$(left)
  [ "$t" -gt 5 ] || return 124
  [ "$t" -lt "$cap" ] || t=$cap
  timeout "$t" "$@"
}

# ---- 1. environment
row PASS "device (rtrace ert --list-gpus)" "$GPU_NAME, $SMS SMs, cc $CC" "a gpu=0 line"
case "$MODE" in
  DEFAULT) row PASS "compute mode" "$MODE" "DEFAULT or EXCLUSIVE_PROCESS" ;;
  EXCLUSIVE_PROCESS) row PASS "compute mode" "$MODE (rtrace stops its MPS server around outside runs)" \
                         "DEFAULT or EXCLUSIVE_PROCESS" ;;
  *) row FAIL "compute mode" "${MODE:-not reported}" "DEFAULT or EXCLUSIVE_PROCESS" ;;
esac
mps_processes() {  # "pid:name " of MPS daemons and servers (comm is cut at 15 characters)
  local p comm name
  for p in "$PROC_ROOT"/[0-9]*; do
    comm="$(cat "$p/comm" 2>/dev/null)" || continue
    [ "$comm" = "nvidia-cuda-mps" ] || continue
    name="$(tr '\0' '\n' <"$p/cmdline" 2>/dev/null | head -1)"
    printf '%s:%s ' "${p##*/}" "${name##*/}"
  done
}
MPS_BEFORE="$(mps_processes)"
if [ -z "$MPS_BEFORE" ]; then row PASS "MPS daemons/servers already running" "none" "none"
else row FAIL "MPS daemons/servers already running" "$MPS_BEFORE" "none (one not of rtrace's disturbs or blocks an sms sweep)"; fi
ADMIN_ONLY="$(sed -n 's/^RmProfilingAdminOnly: *//p' "$NV_PARAMS" 2>/dev/null | head -1)"
PERMISSION="RmProfilingAdminOnly=${ADMIN_ONLY:-unknown}, uid $(id -u)"

# ---- 2. whole-device cuda-metrics of the demo kernels
# name kernel variant size iters
CASES=("fma-half fma half 1048576 2" "fma-half2 fma half2 1048576 2" "fma-wmma-fp16 fma wmma-fp16 1048576 2"
       "fma-dmma-fp64 fma dmma-fp64 262144 2" "triad triad - 33554432 2")
[ "$CC" = "9.0" ] && CASES+=("fma-wgmma-fp16 fma wgmma-fp16 1048576 2")
PERMISSION_DONE=0
metrics_case() {  # name kernel variant size iters [--dram-check SYMBOL]
  local name=$1 kernel=$2 variant=$3 size=$4 iters=$5; shift 5
  local data="$OUT/metrics-$name.h5" expect="$OUT/expect-$name.tsv"
  rm -rf "$data" "$data.d" "$expect"
  local app=("$DEMO" "$kernel" --size "$size" --iters "$iters" --expect "$expect")
  [ "$variant" != "-" ] && app+=(--variant "$variant")
  budgeted 240 "$RTRACE" --tracer cuda-metrics --ert none --timeout 200 -o "$data" -- "${app[@]}" \
    >"$LOG/metrics-$name.log" 2>&1
  local rc=$?
  if [ "$PERMISSION_DONE" -eq 0 ]; then
    PERMISSION_DONE=1
    if grep -q "not permitted" "$LOG/metrics-$name.log"; then
      row FAIL "counter permission" "$PERMISSION: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES" \
        "counters (root, or NVreg_RestrictProfilingToAdminUsers=0)"
    elif [ -f "$data" ] && [ "$rc" -eq 0 ]; then row PASS "counter permission" "$PERMISSION: counters read" "counters"
    else row FAIL "counter permission" "$PERMISSION: unknown (the first metrics run: exit $rc)" "counters"; fi
  fi
  if [ "$rc" -eq 124 ]; then row FAIL "$name: FLOPs" "not run to its end (budget or timeout)" "a run"; return; fi
  if [ ! -s "$expect" ] || [ ! -f "$data" ]; then
    row FAIL "$name: FLOPs" "no run file or no expectations (rtrace exit $rc)" "a run"; return
  fi
  "$CHECK" kernels "$data" --expect "$expect" --flops-tol "$FLOPS_TOL" --dram-tol "$DRAM_TOL" "$@" \
    >"$LOG/check-$name.md" 2>>"$LOG/metrics-$name.log"
  if [ $? -eq 3 ]; then row FAIL "$name: FLOPs" "no kernel metrics in the file" "metrics for every launch"; return; fi
  local any=0 _ sym region launches counter analytic measured ratio verdict dram_a dram_m dram_r dram_v
  while IFS='|' read -r _ sym region launches counter analytic measured ratio verdict dram_a dram_m dram_r dram_v _; do
    any=1
    sym="$(echo "$sym" | tr -d '` ')"; counter="$(echo "$counter" | tr -d ' ')"; ratio="$(echo "$ratio" | tr -d ' ')"
    launches="$(echo "$launches" | tr -d ' ')"; dram_r="$(echo "$dram_r" | tr -d ' ')"
    local got="${launches%/*}" want="${launches#*/}"
    if [ "$got" = "$want" ] && ratio_ok "$ratio" "$FLOPS_TOL"; then
      row PASS "$name: $counter FLOPs / analytic" "$ratio, $launches launches counted" "1 +- $FLOPS_TOL, every launch"
    else
      row FAIL "$name: $counter FLOPs / analytic" "${ratio:-none}, $launches launches counted" "1 +- $FLOPS_TOL, every launch"
    fi
    if [ "$sym" = rtd_triad_k ] && [ "${1:-}" = --dram-check ]; then  # only where its arrays exceed L2
      if ratio_ok "$dram_r" "$DRAM_TOL"; then row PASS "$name: DRAM bytes / (24 x elements)" "$dram_r" "1 +- $DRAM_TOL"
      else row FAIL "$name: DRAM bytes / (24 x elements)" "${dram_r:-none}" "1 +- $DRAM_TOL"; fi
    fi
  done < <(grep '^| `' "$LOG/check-$name.md")
  [ "$any" -eq 1 ] || row FAIL "$name: FLOPs" "no kernel row" "one per kernel"
}
for c in "${CASES[@]}"; do
  read -r name kernel variant size iters <<<"$c"
  if [ "$kernel" = triad ]; then metrics_case "$name" "$kernel" "$variant" "$size" "$iters" --dram-check rtd_triad_k
  else metrics_case "$name" "$kernel" "$variant" "$size" "$iters"; fi
done

# Kernel replay runs each launch once per pass: the join assumes one kernel
# activity record per launch all the same (issue 31). Triad ran 2 times.
if [ -f "$OUT/metrics-triad.h5" ]; then
  k="$("$CHECK" point-kernels "$OUT/metrics-triad.h5" rtd_triad_k 2>>"$LOG/metrics-triad.log" | grep -v '^#' | head -1)"
  traced="$(printf '%s' "$k" | cut -f3)"; counted="$(printf '%s' "$k" | cut -f5)"
  if [ "$traced" = 2 ] && [ "$counted" = 2 ]; then
    row PASS "kernel replay: kernel records of 2 triad launches" "$traced records, $counted with counts" "2, 2"
  else
    row FAIL "kernel replay: kernel records of 2 triad launches" "${traced:-none} records, ${counted:-none} with counts" "2, 2"
  fi
fi

# ---- 3. more than 4096 launches in one context (one counter data image holds 4096 ranges)
metrics_case "triad-4200-launches" triad - 65536 4200

# ---- 4. a two-point sms sweep of triad with rtrace's defaults (--ert none: the ERT comes last)
ALIGN=$(( ${PART_ALIGN:-8} > 0 ? ${PART_ALIGN:-8} : 8 ))
MIN=$(( ${PART_MIN:-8} > 0 ? ${PART_MIN:-8} : ALIGN ))
S1=$(( SMS / 4 / ALIGN * ALIGN )); [ "$S1" -ge "$MIN" ] || S1=$MIN
S2=$(( SMS / 2 / ALIGN * ALIGN )); [ "$S2" -gt "$S1" ] || S2=$SMS
run="$OUT/sms-sweep.h5"
rm -rf "$run" "$run.d"
budgeted 300 "$RTRACE" --sweep "sms=$S1,$S2" --ert none --verbose --timeout 200 -o "$run" -- \
  "$DEMO" triad --size 16777216 --iters 3 >"$LOG/sms-sweep.log" 2>&1
rc=$?
if [ ! -f "$run" ]; then
  row FAIL "sms sweep sms=$S1,$S2" "no run file (rtrace exit $rc)" "a run file"
else
  "$CHECK" points "$run" >"$OUT/sms-points.tsv" 2>>"$LOG/sms-sweep.log"
  "$CHECK" point-kernels "$run" rtd_triad_k >"$OUT/sms-kernels.tsv" 2>>"$LOG/sms-sweep.log"
  n_points=0
  while IFS=$'\t' read -r id label status exit_code req granted achieved method wall check; do
    n_points=$((n_points + 1))
    if [ "$status" = ok ] && [ "$achieved" = "$granted" ] && [ "${achieved:-0}" -gt 0 ] 2>/dev/null; then
      row PASS "sms point $id: SMs measured (%smid) = granted" "$achieved" "$granted ($method)"
    else
      row FAIL "sms point $id: SMs measured (%smid) = granted" "${achieved:-none}, status $status" "$granted ($method)"
    fi
    k="$(awk -F'\t' -v id="$id" '$1 == id' "$OUT/sms-kernels.tsv")"
    traced="$(printf '%s' "$k" | cut -f3)"; counted="$(printf '%s' "$k" | cut -f5)"; prov="$(printf '%s' "$k" | cut -f8)"
    if [ "$traced" = 3 ] && [ "$counted" = 3 ] && [ -n "$prov" ] && [ "$prov" != "-" ]; then
      row PASS "sms point $id: triad launches timed / counted, where counted" "$traced / $counted, $prov" \
        "3 / 3, in-partition or replayed outside"
    else
      row FAIL "sms point $id: triad launches timed / counted, where counted" "${traced:-0} / ${counted:-0}, ${prov:-none}" \
        "3 / 3, in-partition or replayed outside"
    fi
  done < <(grep -v '^#' "$OUT/sms-points.tsv")
  [ "$n_points" -eq 2 ] || row FAIL "sms sweep points" "$n_points" "2"
  # CUPTI under MPS: the point log says either way (issue 22's open question).
  if grep -q "CUPTI refused to profile inside the SM partition" "$LOG/sms-sweep.log"; then
    row PASS "CUPTI range profiler under MPS" "refused: $(grep -o 'inside the SM partition ([^)]*)' "$LOG/sms-sweep.log" | head -1)" "an answer"
  elif grep -q "kernel counts profiled inside the SM partition" "$LOG/sms-sweep.log"; then
    row PASS "CUPTI range profiler under MPS" "accepted (counts in-partition)" "an answer"
  else
    row FAIL "CUPTI range profiler under MPS" "no answer in the sweep's log" "an answer"
  fi
fi
MPS_AFTER="$(mps_processes)"
if [ "$MPS_AFTER" = "$MPS_BEFORE" ]; then row PASS "MPS daemons/servers after the sweep" "${MPS_AFTER:-none}" "as before: ${MPS_BEFORE:-none}"
else row FAIL "MPS daemons/servers after the sweep" "$MPS_AFTER" "as before: ${MPS_BEFORE:-none}"; fi

# ---- 5. a quick whole-device ERT against the published specs
budgeted 240 "$RTRACE" ert --sms "$SMS" --quick --quiet -o "$OUT/ert.h5" >"$LOG/ert.log" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && "$CHECK" ceilings "$OUT/ert.h5" >"$OUT/ert.md" 2>>"$LOG/ert.log"; then
  hbm="$(awk -F'|' '{gsub(/ /, "", $2)} $2 == "HBM" || $2 == "DRAM" {gsub(/ /, "", $3); print $3; exit}' "$OUT/ert.md")"
  spec="$(hbm_spec_gbs "$GPU_NAME")"
  if [ -z "$spec" ]; then
    row INFO "ERT HBM ceiling (GB/s)" "${hbm:-none}" "no published spec known for $GPU_NAME"
  else
    want="$(awk -v s="$spec" -v f="$HBM_MIN_FRACTION" 'BEGIN { printf "%.0f", s * f }')"
    if ge "$hbm" "$want"; then row PASS "ERT HBM ceiling (GB/s)" "$hbm" ">= $want ($HBM_MIN_FRACTION x $spec published)"
    else row FAIL "ERT HBM ceiling (GB/s)" "${hbm:-none}" ">= $want ($HBM_MIN_FRACTION x $spec published)"; fi
  fi
  tc="$(awk -F'|' '{n = $2; gsub(/^ +| +$/, "", n)} n == "TC FP16->FP32" {gsub(/ /, "", $3); print $3; exit}' "$OUT/ert.md")"
  spec="$(tc_fp16_spec_gflops "$GPU_NAME")"
  if [ -z "$spec" ]; then
    row INFO "ERT FP16 tensor ceiling (GFLOP/s)" "${tc:-none}" "no published spec known for $GPU_NAME"
  else
    want="$(awk -v s="$spec" -v f="$TC_MIN_FRACTION" 'BEGIN { printf "%.0f", s * f }')"
    if ge "$tc" "$want"; then row PASS "ERT FP16 tensor ceiling (GFLOP/s)" "$tc" ">= $want ($TC_MIN_FRACTION x $spec dense)"
    else row FAIL "ERT FP16 tensor ceiling (GFLOP/s)" "${tc:-none}" ">= $want ($TC_MIN_FRACTION x $spec dense)"; fi
  fi
else
  row FAIL "ERT, whole device, quick" "exit $rc (logs/ert.log)" "exit 0"
fi

ELAPSED=$(( $(date +%s) - START ))
{
  echo "# rtrace first run: $GPU_NAME"
  echo
  echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ), host $(hostname), ${ELAPSED} s of a ${BUDGET} s budget"
  echo "- device (rtrace ert --list-gpus): \`$GPU_LINE\`"
  echo "- rtrace: $started, from $BUNDLE"
  echo "- result: $([ "$FAILED" -eq 0 ] && echo "all checks passed" || echo "$FAILED check(s) FAILED")"
  echo
  echo "| # | check | measured | want | verdict |"
  echo "|---|---|---|---|---|"
  printf '%s\n' "${ROWS[@]}"
} >"$OUT/first-run.md"
echo "first-run.sh: $GPU_NAME: $([ "$FAILED" -eq 0 ] && echo "all $N checks passed" || echo "$FAILED of $N check(s) FAILED"), ${ELAPSED} s; report $OUT/first-run.md"
[ "$FAILED" -eq 0 ] || exit 1
exit 0
