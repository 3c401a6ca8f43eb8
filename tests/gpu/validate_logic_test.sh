#!/usr/bin/env bash
# validate_logic_test.sh VALIDATE WORK: validate.sh's judging logic on a CPU
# machine, against a fake bundle whose rtrace and rtrace-demo-check print what
# a GPU run would (the GPU itself is the only thing faked). A healthy fake run
# passes; each failure the issues list makes it exit 1 with a FAIL row:
# a demo's result check, FLOPs off by > 1% (scalar and packed FP16, wgmma
# included), triad DRAM bytes off by > 10%, measured SMs != granted, HBM < 0.9 x
# spec, the FP16 tensor ceiling < 0.85 x spec, time not falling with SMs, an
# MPS daemon left running (issue 13); and (issue 22) per sweep point: launches
# != iterations, time 0, no kernel data at all, FLOPs not counted or off, a
# partition's ERT on other SMs than granted, a ceiling falling with more SMs,
# no roofline trajectory. This does not validate a GPU; it proves validate.sh
# can fail on each of those (it cannot pass vacuously).
set -uo pipefail
VALIDATE=$1 WORK=$2
rm -rf "$WORK"
mkdir -p "$WORK/bundle/bin" "$WORK/bundle/lib"
B="$WORK/bundle"
: >"$B/lib/librtrace_tracer.so"
printf '#!/bin/sh\nexit 0\n' >"$B/bin/rtrace-demo-cuda"

cat >"$B/bin/rtrace" <<'EOF'
#!/usr/bin/env bash
# Fake rtrace: a 132-SM GPU with 3352 GB/s spec bandwidth.
out=""; sweep=""; expect=""; kernel=""; variant=""
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[$i]}" in
    -o) out="${args[$((i + 1))]}" ;;
    --sweep) sweep="${args[$((i + 1))]}" ;;
    --expect) expect="${args[$((i + 1))]}" ;;
    --variant) variant="${args[$((i + 1))]}" ;;
    --) kernel="${args[$((i + 2))]}" ;;
  esac
done
case "$1" in
  --version) echo "rtrace 0.1.0"; exit 0 ;;
  validate) exit 0 ;;
  analyze)
    json=""; for ((i = 0; i < ${#args[@]}; i++)); do [ "${args[$i]}" = --json ] && json="${args[$((i + 1))]}"; done
    k=rtd_triad_k; [ -n "${FAKE_NO_TRAJECTORY:-}" ] && k=other_k
    printf '{\n "axis": "sms",\n "trajectories": [\n  {\n   "axis": "sms",\n   "kernel": "%s(double*)"\n  }\n ],\n "warnings": []\n}\n' "$k" >"$json"
    exit 0 ;;
  ert)
    if [ "$2" = "--list-gpus" ]; then
      echo "gpu=0 name=\"${FAKE_GPU_NAME:-Fake H100}\" sms=132 cc=9.0 sm_clock_mhz=1980 memory_clock_mhz=2619 memory_bus_bits=5120 memory_gib=79.2 l2_mib=50.0 spec_bandwidth_gbs=${FAKE_SPEC_BW:-3352.3} sm_partition_min=8 sm_partition_align=8 driver_cuda=13.0"
      exit 0
    fi
    echo ert >"$out"; exit 0 ;;
esac
if [ -n "$sweep" ]; then echo "$sweep" >"$out"; exit 0; fi
echo "metrics $kernel" >"$out"
sym="rtd_${kernel}_k"; prec=fp64
case "$variant" in
  fp32) sym=rtd_fma_fp32_k; prec=fp32 ;;
  half2) sym=rtd_fma_half2_k; prec=fp16 ;;
  half) sym=rtd_fma_half_k; prec=fp16 ;;
  wmma-fp16) sym=rtd_fma_wmma_fp16_k; prec=tensor ;;
  dmma-fp64) sym=rtd_fma_dmma_fp64_k; prec=tensor ;;
  wgmma-fp16) sym=rtd_fma_wgmma_fp16_k; prec=tensor ;;
esac
printf '%s\t%s\t1\t1000\t1\t24000\t%s\n' "$sym" "$kernel" "$prec" >"$expect"
if [ -n "${FAKE_LEAVE_MPS:-}" ] && [ "$kernel" = triad ]; then
  # A daemon left behind, named as the real one (comm "nvidia-cuda-mps").
  cp /bin/sleep "$FAKE_LEAVE_MPS/nvidia-cuda-mps-control"
  setsid "$FAKE_LEAVE_MPS/nvidia-cuda-mps-control" 60 </dev/null >/dev/null 2>&1 &
  echo $! >"$FAKE_LEAVE_MPS/pid"
fi
exit 0
EOF

cat >"$B/bin/rtrace-demo-check" <<'EOF'
#!/usr/bin/env bash
cmd=$1 file=$2
case "$cmd" in
  ceilings)
    echo "ERT $file (SMs requested 132, achieved ${FAKE_ERT_SMS:-132})"
    echo "| ceiling | value | unit | min | max | repeats |"
    echo "|---|---|---|---|---|---|"
    echo "| L2 | 9000 | GB/s | 8900 | 9100 | 3 |"
    echo "| HBM | ${FAKE_HBM:-3100} | GB/s | 3000 | 3150 | 3 |"
    echo "| TC FP16->FP32 | ${FAKE_TC:-9.1e+05} | GFLOP/s | 6e+05 | 9.2e+05 | 3 |"
    echo "| TC FP16->FP32 mma.sync | 6.1e+05 | GFLOP/s | 6e+05 | 6.2e+05 | 3 |" ;;
  points)
    echo "# point_id	label	status	exit_code	sms_requested	sms_granted	sms_achieved	partition_method	wall_s	check"
    if grep -q '^sms=' "$file"; then
      i=0
      for s in $(sed 's/^sms=//; s/,/ /g' "$file"); do
        a=$s; [ -n "${FAKE_BAD_SMS:-}" ] && [ "$s" -ne 132 ] && a=$((s + 2))
        printf '%d\tsms=%d\tok\t0\t%d\t%d\t%d\tmps\t1.5\tok\n' "$i" "$s" "$s" "$s" "$a"
        i=$((i + 1))
      done
    else
      c=ok; grep -q "metrics ${FAKE_CHECK_FAILED:-none}\$" "$file" && c=FAILED
      printf '0\t-\tok\t0\t-1\t-1\t-1\t-\t1.0\t%s\n' "$c"
    fi ;;
  kernels)
    expect=$4; rc=0
    echo "| kernel | region | launches (metrics/expected) | counter | FLOPs analytic | measured | ratio | FLOP check | DRAM bytes compulsory | measured | ratio | DRAM check |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
    while IFS=$'\t' read -r sym region launches flops exact dram prec; do
      r=1.002; v=pass; d=1.03; dv=info
      [ "$sym" = "${FAKE_BAD_FLOPS:-none}" ] && { r=0.5; v=FAIL; rc=1; }
      if [ "$sym" = rtd_triad_k ]; then dv=pass; [ -n "${FAKE_BAD_DRAM:-}" ] && { d=1.3; dv=FAIL; rc=1; }; fi
      echo "| \`$sym\` | $region | 1/1 | $prec | 1000 | 1000 | $r | $v | 2.4e+04 | 2.4e+04 | $d | $dv |"
    done <"$expect"
    exit $rc ;;
  point-kernels)
    # triad as validate.sh --quick sweeps it: 3 launches of 33554432 elements per point.
    echo "# point_id	sms_granted	traced_launches	seconds	metric_launches	flops	dram_bytes	provenance"
    [ -n "${FAKE_EMPTY_KERNELS:-}" ] && exit 0
    i=0
    for s in $(sed 's/^sms=//; s/,/ /g' "$file"); do
      awk -v s="$s" -v i="$i" -v short="${FAKE_SHORT_LAUNCHES:-}" -v zero="${FAKE_ZERO_TIME:-}" \
          -v nocount="${FAKE_NO_COUNTS:-}" -v badflops="${FAKE_BAD_POINT_FLOPS:-}" -v flat="${FAKE_FLAT:-}" 'BEGIN {
        b = 24 * 33554432 * 3; bw = s * 50e9; if (bw > 3e12) bw = 3e12; if (flat != "") bw = 1e12
        t = b / bw; launches = 3; counted = 3; flops = 2 * 33554432 * 3
        if (i == 0 && short != "") launches = 2
        if (i == 0 && zero != "") t = 0
        if (i == 1 && nocount != "") { counted = 0; flops = 0 }
        if (i == 1 && badflops != "") flops *= 1.5
        printf "%d\t%d\t%d\t%.9f\t%d\t%.6g\t%.6g\t%s\n", i, s, launches, t, counted, flops, b, counted ? "in-partition" : "-" }'
      i=$((i + 1))
    done ;;
  ert-sms)
    echo "# point_id	sms_granted	ert_sms_achieved	ceilings_source"
    i=0
    for s in $(sed 's/^sms=//; s/,/ /g' "$file"); do
      a=$s; [ -n "${FAKE_ERT_GRANT_OFF:-}" ] && [ "$i" -eq 1 ] && a=$((s + 2))
      printf '%d\t%d\t%d\t/cache/ert/node-sm%dmps-0.1.0-quick.h5\n' "$i" "$s" "$a" "$s"
      i=$((i + 1))
    done ;;
  ceiling-values)
    echo "# point_id	sms_granted	name	value	min	max	unreliable"
    i=0
    for s in $(sed 's/^sms=//; s/,/ /g' "$file"); do
      awk -v s="$s" -v i="$i" -v falls="${FAKE_CEILING_FALLS:-}" 'BEGIN {
        hbm = s * 45; if (hbm > 3100) hbm = 3100; if (falls != "" && s == 132) hbm = 1500
        printf "%d\t%d\tHBM\t%g\t%g\t%g\t0\n", i, s, hbm, 0.98 * hbm, 1.02 * hbm
        printf "%d\t%d\tFP64 FMA\t%g\t%g\t%g\t0\n", i, s, 500 * s, 495 * s, 505 * s }'
      i=$((i + 1))
    done ;;
  kernel-time)
    # triad as validate.sh --quick runs it: 24 x 33554432 x 3 bytes; 50 GB/s per SM up to 3000 GB/s.
    echo "# point_id	seconds	launches"
    [ -n "${FAKE_EMPTY_KERNELS:-}" ] && exit 0
    i=0
    for s in $(sed 's/^sms=//; s/,/ /g' "$file"); do
      awk -v s="$s" -v i="$i" -v flat="${FAKE_FLAT:-}" 'BEGIN {
        b = 24 * 33554432 * 3; bw = s * 50e9; if (bw > 3e12) bw = 3e12; if (flat != "") bw = 1e12
        printf "%d\t%.9f\t5\n", i, b / bw }'
      i=$((i + 1))
    done ;;
esac
EOF
chmod +x "$B/bin/"*

status=0
# expect_run NAME WANT_RC ENV... -- PATTERN...: run validate.sh once, check its
# exit status and that the report has a line matching every pattern.
expect_run() {
  local name=$1 want=$2
  shift 2
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local out="$WORK/out-$name"
  env "${envs[@]}" "$VALIDATE" --quick --bundle "$B" "$out" >"$WORK/$name.log" 2>&1
  local rc=$?
  local report
  report="$(grep -l '^# rtrace GPU validation' "$out"/*.md 2>/dev/null | head -1)"  # named after the GPU
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL: $name: validate.sh exited $rc, expected $want"; tail -20 "$WORK/$name.log"; status=1; return
  fi
  local pattern
  for pattern in "$@"; do
    if ! grep -Eq "$pattern" "$report" 2>/dev/null; then
      echo "FAIL: $name: the report has no line matching /$pattern/"; head -60 "$report" 2>/dev/null; status=1
    else
      echo "ok: $name: /$pattern/"
    fi
  done
}

expect_run healthy 0 -- '^- result: all checks passed' '^\| triad time 32 -> 64 SMs .* pass' \
  '^\| triad time 64 -> 132 SMs \(HBM saturated\) .* pass' \
  '^\| sms sweep point 3: triad launches traced, time \| 3, .* pass' \
  '^\| sms sweep point 2: triad FLOPs counted / analytic \(in-partition\) \| 1.0000 .* pass' \
  '^\| sms sweep point 1: its ERT.s SMs \(%smid\) = granted \| 32 \| 32 \| pass' \
  '^\| ceilings of every partition, non-decreasing with SMs .* pass' \
  '^\| rtrace analyze: roofline trajectory of rtd_triad_k over sms \| present .* pass' \
  '^\| FP16 tensor ceiling, wgmma \(GFLOP/s\) \| 9.1e\+05 \| >= 840650 .* pass' \
  '^\| fma-half: fp16 FLOPs of rtd_fma_half_k \(ratio\) .* pass' \
  '^\| fma-wgmma-fp16: tensor FLOPs of rtd_fma_wgmma_fp16_k \(ratio\) .* pass'
mkdir -p "$WORK/mps"
expect_run faults_a 1 FAKE_CHECK_FAILED=stencil7 FAKE_BAD_FLOPS=rtd_fma_half2_k FAKE_BAD_DRAM=1 FAKE_BAD_SMS=1 \
  FAKE_HBM=2000 FAKE_LEAVE_MPS="$WORK/mps" -- \
  '^\| stencil7: result check \(from the run file\) \| status ok, check FAILED .*FAIL' \
  '^\| fma-half2: fp16 FLOPs of rtd_fma_half2_k \(ratio\) \| 0.5 .*FAIL' \
  '^\| triad: DRAM bytes / \(24 x elements\) \| 1.3 .*FAIL' \
  'SMs measured \(%smid\) = granted \| 18 \| 16 .*FAIL' \
  '^\| HBM ceiling, whole device \(GB/s\) \| 2000 \| >= 3015 \(0.9 x 3350 published\) .*FAIL' \
  '^\| MPS daemons/servers after the run \| [0-9]+:nvidia-cuda-mps-control .*FAIL' \
  '^- result: [0-9]+ check\(s\) FAILED'
[ -f "$WORK/mps/pid" ] && kill "$(cat "$WORK/mps/pid")" 2>/dev/null
expect_run faults_b 1 FAKE_FLAT=1 FAKE_ERT_SMS=128 FAKE_BAD_FLOPS=rtd_fma_wmma_fp16_k -- \
  '^\| triad time 16 -> 32 SMs .*falls .*FAIL' \
  '^\| ERT whole device: SMs measured \(%smid\) \| 128 \| 132 \| FAIL' \
  'rtd_fma_wmma_fp16_k \(ratio\) \| 0.5 .*FAIL'
expect_run faults_c 1 FAKE_SHORT_LAUNCHES=1 FAKE_ZERO_TIME=1 FAKE_NO_COUNTS=1 FAKE_ERT_GRANT_OFF=1 \
  FAKE_CEILING_FALLS=1 FAKE_NO_TRAJECTORY=1 FAKE_TC=6.1e+05 FAKE_BAD_FLOPS=rtd_fma_half_k -- \
  '^\| sms sweep point 0: triad launches traced, time \| 2, 0.000000000 s .*FAIL' \
  '^\| sms sweep point 1: triad FLOPs counted / analytic \(no counts\) \| none \(0 launches\) .*FAIL' \
  '^\| sms sweep point 1: its ERT.s SMs \(%smid\) = granted \| 34 \| 32 \| FAIL' \
  '^\| ceiling falls with more SMs \| HBM 64 -> 132 SMs: 2880 -> 1500 .*FAIL' \
  '^\| rtrace analyze: roofline trajectory of rtd_triad_k over sms \| absent .*FAIL' \
  '^\| triad time vs SMs \| kernel times at 3 of 4 points .*FAIL' \
  '^\| FP16 tensor ceiling, wgmma \(GFLOP/s\) \| 6.1e\+05 \| >= 840650 .*FAIL' \
  '^\| fma-half: fp16 FLOPs of rtd_fma_half_k \(ratio\) \| 0.5 .*FAIL'
# Empty kernel data: every per-point kernel row and the time rows fail, none passes vacuously.
expect_run faults_empty 1 FAKE_EMPTY_KERNELS=1 FAKE_BAD_POINT_FLOPS=1 -- \
  '^\| sms sweep point 0: triad launches traced, time \| none, none s .*FAIL' \
  '^\| sms sweep point 3: triad FLOPs counted / analytic \(no counts\) \| none \(0 launches\) .*FAIL' \
  '^\| triad time vs SMs \| kernel times at 0 of 4 points .*FAIL'
if grep -Eq '^\| (triad time [0-9]+ -> |sms sweep point [0-9]+: triad).*\| pass \|$' "$WORK/out-faults_empty/fake-h100.md"; then
  echo "FAIL: faults_empty: a kernel row passed on empty kernel data"; status=1
else
  echo "ok: faults_empty: no kernel row passes on empty kernel data"
fi
# Issue 31: an H200's HBM is judged against its published 4.8 TB/s, not the
# driver's 2 x clock x bus (4.42 TB/s), which let an ERT 8% short pass; a GPU
# rtrace knows no spec for falls back to clock x bus.
expect_run h200_published_hbm 1 FAKE_GPU_NAME="NVIDIA H200" FAKE_SPEC_BW=4416.0 FAKE_HBM=4100 -- \
  '^\| HBM ceiling, whole device \(GB/s\) \| 4100 \| >= 4320 \(0.9 x 4800 published\) .*FAIL'
expect_run unknown_gpu_spec 0 FAKE_GPU_NAME="Fake GPU" FAKE_SPEC_BW=3352.3 -- \
  '^\| HBM ceiling, whole device \(GB/s\) \| 3100 \| >= 3017 \(0.9 x 3352.3 = 2 x clock x bus\) .*pass'
# Counted FLOPs off at one point.
expect_run faults_flops 1 FAKE_BAD_POINT_FLOPS=1 -- \
  '^\| sms sweep point 1: triad FLOPs counted / analytic \(in-partition\) \| 1.5000 .*FAIL'
[ "$status" -eq 0 ] && echo PASS
exit $status
