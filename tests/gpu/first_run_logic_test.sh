#!/usr/bin/env bash
# first_run_logic_test.sh FIRST_RUN WORK: tests/gpu/first-run.sh's judging on
# a CPU machine, against a fake bundle whose rtrace and rtrace-demo-check print
# what a GPU run would (the GPU is the only thing faked; its process table and
# driver parameters are files of the test). A healthy fake run passes every
# row; each kind of bad data makes its own row FAIL and the script exit 1: the
# compute mode, an MPS server already running, counters denied, FLOPs off (a
# demo's ratio, a tensor row), triad's DRAM bytes, more kernel records than
# launches under kernel replay, a launch past 4096 without
# counts, SMs measured != granted, a sweep point without counts, no answer on
# CUPTI under MPS, a daemon left behind, HBM or the FP16 tensor ceiling under
# spec, and no time left (nothing passes vacuously). No GPU is validated here.
set -uo pipefail
FIRST_RUN=$1 WORK=$2
rm -rf "$WORK"
mkdir -p "$WORK/bundle/bin" "$WORK/bundle/lib"
B="$WORK/bundle"
: >"$B/lib/librtrace_tracer.so"
printf '#!/bin/sh\nexit 0\n' >"$B/bin/rtrace-demo-cuda"

cat >"$B/bin/rtrace" <<'EOF'
#!/usr/bin/env bash
# Fake rtrace: a 132-SM "Fake H100".
out=""; sweep=""; expect=""; kernel=""; variant=""; iters=1
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[$i]}" in
    -o) out="${args[$((i + 1))]}" ;;
    --sweep) sweep="${args[$((i + 1))]}" ;;
    --expect) expect="${args[$((i + 1))]}" ;;
    --variant) variant="${args[$((i + 1))]}" ;;
    --iters) iters="${args[$((i + 1))]}" ;;
    --) kernel="${args[$((i + 2))]}" ;;
  esac
done
case "$1" in
  --version) echo "rtrace 0.1.0"; exit 0 ;;
  ert)
    if [ "$2" = "--list-gpus" ]; then
      echo "gpu=0 name=\"Fake H100\" sms=132 cc=9.0 sm_clock_mhz=1980 memory_clock_mhz=2619 memory_bus_bits=5120 memory_gib=79.2 l2_mib=50.0 spec_bandwidth_gbs=3352.3 sm_partition_min=8 sm_partition_align=8 driver_cuda=13.0 compute_mode=${FAKE_MODE:-DEFAULT}"
      exit 0
    fi
    echo ert >"$out"; exit 0 ;;
esac
if [ -n "$sweep" ]; then
  echo "$sweep" >"$out"
  [ -n "${FAKE_NO_CUPTI_ANSWER:-}" ] ||
    echo "rtrace: point 0: info: CUPTI refused to profile inside the SM partition (cuptiRangeProfilerEnable: CUPTI_ERROR_NOT_SUPPORTED): kernel counts replayed outside the partition, on the whole device"
  if [ -n "${FAKE_LEAVE_MPS:-}" ]; then  # a daemon left behind, in the test's process table
    mkdir -p "$FIRST_RUN_PROC_ROOT/777"
    echo nvidia-cuda-mps >"$FIRST_RUN_PROC_ROOT/777/comm"
    printf 'nvidia-cuda-mps-control\0-d\0' >"$FIRST_RUN_PROC_ROOT/777/cmdline"
  fi
  exit 0
fi
echo "metrics $kernel ${variant:--} $iters" >"$out"
if [ -n "${FAKE_DENIED:-}" ]; then
  echo "rtrace: point 0 failed: error: GPU performance counters not permitted (cuptiProfilerInitialize: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)" >&2
  exit 1
fi
sym="rtd_${kernel}_k"; prec=fp64
case "$variant" in
  half2) sym=rtd_fma_half2_k; prec=fp16 ;;
  half) sym=rtd_fma_half_k; prec=fp16 ;;
  wmma-fp16) sym=rtd_fma_wmma_fp16_k; prec=tensor-fp16 ;;
  dmma-fp64) sym=rtd_fma_dmma_fp64_k; prec=tensor-fp64 ;;
  wgmma-fp16) sym=rtd_fma_wgmma_fp16_k; prec=tensor-fp16 ;;
esac
printf '%s\t%s\t%s\t1000\t1\t24000\t%s\n' "$sym" "$kernel" "$iters" "$prec" >"$expect"
exit 0
EOF

cat >"$B/bin/rtrace-demo-check" <<'EOF'
#!/usr/bin/env bash
cmd=$1 file=$2
case "$cmd" in
  ceilings)
    echo "ERT $file (SMs requested 132, achieved 132)"
    echo "| ceiling | value | unit | min | max | repeats |"
    echo "|---|---|---|---|---|---|"
    echo "| HBM | ${FAKE_HBM:-3100} | GB/s | 3000 | 3150 | 3 |"
    echo "| TC FP16->FP32 | ${FAKE_TC:-9.1e+05} | GFLOP/s | 6e+05 | 9.2e+05 | 3 |" ;;
  points)
    echo "# point_id	label	status	exit_code	sms_requested	sms_granted	sms_achieved	partition_method	wall_s	check"
    i=0
    for s in $(sed 's/^sms=//; s/,/ /g' "$file"); do
      a=$s; [ -n "${FAKE_BAD_SMS:-}" ] && [ "$i" -eq 1 ] && a=$((s + 2))
      printf '%d\tsms=%d\tok\t0\t%d\t%d\t%d\tmps\t1.5\tok\n' "$i" "$s" "$s" "$s" "$a"
      i=$((i + 1))
    done ;;
  point-kernels)
    echo "# point_id	sms_granted	traced_launches	seconds	metric_launches	flops	dram_bytes	provenance"
    if grep -q '^metrics ' "$file"; then  # a whole-device metrics run: one point
      n=$(awk '{print $4}' "$file"); t=$n; [ -n "${FAKE_REPLAY_RECORDS:-}" ] && t=$((2 * n))
      printf '0	-1	%d	0.01	%d	1e8	1.2e9	whole device
' "$t" "$n"
      exit 0
    fi
    i=0
    for s in $(sed 's/^sms=//; s/,/ /g' "$file"); do
      c=3; p="in-partition"; [ -n "${FAKE_NO_COUNTS:-}" ] && [ "$i" -eq 0 ] && { c=0; p=-; }
      printf '%d\t%d\t3\t0.01\t%d\t1e8\t1.2e9\t%s\n' "$i" "$s" "$c" "$p"
      i=$((i + 1))
    done ;;
  kernels)
    expect=$4; rc=0
    echo "| kernel | region | launches (metrics/expected) | counter | FLOPs analytic | measured | ratio | FLOP check | DRAM bytes compulsory | measured | ratio | DRAM check |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
    while IFS=$'\t' read -r sym region launches flops exact dram prec; do
      r=1.002; v=pass; d=1.03; dv=info; got=$launches
      [ "$sym" = "${FAKE_BAD_FLOPS:-none}" ] && { r=0.5; v=FAIL; rc=1; }
      [ "$launches" = 4200 ] && [ -n "${FAKE_SHORT_4200:-}" ] && { got=4096; r=0.975; v=FAIL; rc=1; }
      if [ "$sym" = rtd_triad_k ]; then dv=pass; [ -n "${FAKE_BAD_DRAM:-}" ] && { d=1.3; dv=FAIL; rc=1; }; fi
      echo "| \`$sym\` | $region | $got/$launches | $prec | 1000 | 1000 | $r | $v | 2.4e+04 | 2.4e+04 | $d | $dv |"
    done <"$expect"
    exit $rc ;;
esac
EOF
chmod +x "$B/bin/"*

status=0
# expect_run NAME WANT_RC ENV... -- PATTERN...: one first-run.sh, its exit
# status, and a report line matching every pattern.
expect_run() {
  local name=$1 want=$2
  shift 2
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local out="$WORK/out-$name" proc="$WORK/proc-$name"
  mkdir -p "$proc"
  printf 'RmProfilingAdminOnly: 1\n' >"$WORK/params"
  if [ "$name" = foreign_mps ]; then
    mkdir -p "$proc/4242"
    echo nvidia-cuda-mps >"$proc/4242/comm"
    printf '/usr/bin/nvidia-cuda-mps-server\0' >"$proc/4242/cmdline"
  fi
  env FIRST_RUN_PROC_ROOT="$proc" FIRST_RUN_NV_PARAMS="$WORK/params" "${envs[@]}" \
    "$FIRST_RUN" --bundle "$B" "$out" >"$WORK/$name.log" 2>&1
  local rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL: $name: first-run.sh exited $rc, expected $want"; tail -30 "$WORK/$name.log"; status=1; return
  fi
  local pattern
  for pattern in "$@"; do
    if grep -Eq "$pattern" "$WORK/$name.log"; then echo "ok: $name: /$pattern/"
    else echo "FAIL: $name: no line matching /$pattern/"; cat "$WORK/$name.log"; status=1; fi
  done
}

expect_run healthy 0 -- \
  '^\[ 1\] PASS  device \(rtrace ert --list-gpus\): Fake H100, 132 SMs, cc 9.0' \
  '^\[ 2\] PASS  compute mode: DEFAULT' \
  '^\[ 3\] PASS  MPS daemons/servers already running: none' \
  'PASS  counter permission: RmProfilingAdminOnly=1, uid [0-9]+: counters read' \
  'PASS  fma-half: fp16 FLOPs / analytic: 1.002, 2/2 launches counted' \
  'PASS  fma-half2: fp16 FLOPs' 'PASS  fma-dmma-fp64: tensor-fp64 FLOPs' 'PASS  fma-wgmma-fp16: tensor-fp16 FLOPs' \
  'PASS  triad: DRAM bytes / \(24 x elements\): 1.03' \
  'PASS  kernel replay: kernel records of 2 triad launches: 2 records, 2 with counts' \
  'PASS  triad-4200-launches: fp64 FLOPs / analytic: 1.002, 4200/4200 launches counted' \
  'PASS  sms point 0: SMs measured \(%smid\) = granted: 32 \(want 32' \
  'PASS  sms point 1: SMs measured \(%smid\) = granted: 64 \(want 64' \
  'PASS  sms point 1: triad launches timed / counted, where counted: 3 / 3, in-partition' \
  'PASS  CUPTI range profiler under MPS: refused: inside the SM partition \(cuptiRangeProfilerEnable: CUPTI_ERROR_NOT_SUPPORTED\)' \
  'PASS  MPS daemons/servers after the sweep: none' \
  'PASS  ERT HBM ceiling \(GB/s\): 3100 \(want >= 3015 \(0.9 x 3350 published\)\)' \
  'PASS  ERT FP16 tensor ceiling \(GFLOP/s\): 9.1e\+05' \
  'all [0-9]+ checks passed'
if grep -q 'FAIL' "$WORK/healthy.log"; then echo "FAIL: healthy: a FAIL row"; status=1; fi
expect_run mode 1 FAKE_MODE=PROHIBITED -- 'FAIL  compute mode: PROHIBITED'
expect_run foreign_mps 1 -- \
  'FAIL  MPS daemons/servers already running: 4242:nvidia-cuda-mps-server' \
  'PASS  MPS daemons/servers after the sweep: 4242:nvidia-cuda-mps-server'
expect_run denied 1 FAKE_DENIED=1 -- \
  'FAIL  counter permission: RmProfilingAdminOnly=1, uid [0-9]+: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES' \
  'FAIL  fma-half: FLOPs: no run file or no expectations'
expect_run flops 1 FAKE_BAD_FLOPS=rtd_fma_half2_k -- 'FAIL  fma-half2: fp16 FLOPs / analytic: 0.5'
expect_run tensor 1 FAKE_BAD_FLOPS=rtd_fma_dmma_fp64_k -- 'FAIL  fma-dmma-fp64: tensor-fp64 FLOPs / analytic: 0.5'
expect_run dram 1 FAKE_BAD_DRAM=1 -- 'FAIL  triad: DRAM bytes / \(24 x elements\): 1.3'
expect_run replay 1 FAKE_REPLAY_RECORDS=1 -- 'FAIL  kernel replay: kernel records of 2 triad launches: 4 records, 2 with counts'
expect_run launches 1 FAKE_SHORT_4200=1 -- \
  'FAIL  triad-4200-launches: fp64 FLOPs / analytic: 0.975, 4096/4200 launches counted'
expect_run sms 1 FAKE_BAD_SMS=1 -- 'FAIL  sms point 1: SMs measured \(%smid\) = granted: 66, status ok \(want 64'
expect_run counts 1 FAKE_NO_COUNTS=1 -- 'FAIL  sms point 0: triad launches timed / counted, where counted: 3 / 0, -'
expect_run cupti 1 FAKE_NO_CUPTI_ANSWER=1 -- 'FAIL  CUPTI range profiler under MPS: no answer'
expect_run left 1 FAKE_LEAVE_MPS=1 -- 'FAIL  MPS daemons/servers after the sweep: 777:nvidia-cuda-mps-control'
expect_run hbm 1 FAKE_HBM=2900 -- 'FAIL  ERT HBM ceiling \(GB/s\): 2900 \(want >= 3015'
expect_run tc 1 FAKE_TC=6.1e+05 -- 'FAIL  ERT FP16 tensor ceiling \(GFLOP/s\): 6.1e\+05'
expect_run budget 1 FIRST_RUN_BUDGET=0 -- \
  'FAIL  fma-half: FLOPs: not run to its end' 'FAIL  ERT, whole device, quick: exit 124'
if grep -Eq 'PASS  (fma|triad|sms point|CUPTI|ERT)' "$WORK/budget.log"; then
  echo "FAIL: budget: a measured row passed with no time to measure"; status=1
else
  echo "ok: budget: no measured row passes without a run"
fi
# Without a GPU: exit 77, "no GPU", nothing written.
printf '#!/bin/sh\n[ "$1" = --version ] && { echo rtrace 0.1.0; exit 0; }\necho "no GPU found (libcuda.so.1 not loadable)" >&2; exit 2\n' \
  >"$WORK/nogpu-rtrace"
mkdir -p "$WORK/nogpu/bin" "$WORK/nogpu/lib"
cp "$B/bin/rtrace-demo-cuda" "$B/bin/rtrace-demo-check" "$WORK/nogpu/bin/"
cp "$WORK/nogpu-rtrace" "$WORK/nogpu/bin/rtrace"
chmod +x "$WORK/nogpu/bin/rtrace"
: >"$WORK/nogpu/lib/librtrace_tracer.so"
"$FIRST_RUN" --bundle "$WORK/nogpu" "$WORK/out-nogpu" >"$WORK/nogpu.log" 2>&1
rc=$?
if [ "$rc" -eq 77 ] && grep -q "no GPU" "$WORK/nogpu.log" && [ ! -e "$WORK/out-nogpu" ]; then echo "ok: no GPU: exit 77"
else echo "FAIL: no GPU: exit $rc"; cat "$WORK/nogpu.log"; status=1; fi
[ "$status" -eq 0 ] && echo PASS
exit $status
