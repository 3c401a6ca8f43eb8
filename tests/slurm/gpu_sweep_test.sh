#!/usr/bin/env bash
# slurm/rtrace-gpu-sweep.sbatch on a node without a GPU: the job runs the
# script, and rtrace refuses the sms axis with one clear line and exit 2
# before running anything. (--gres=none: this cluster has no GPU GRES; a
# site's GPU partition satisfies the script's --gres=gpu:1.)
source "$(dirname "$0")/lib.sh"

rc=0
jid="$(RTRACE_OUTPUT="$WORK_DIR/gpu.h5" sbatch_wait --parsable --gres=none --cpus-per-task=2 --time=5 \
  --output="$WORK_DIR/gpu-%j.out" "$SLURM_SCRIPTS/rtrace-gpu-sweep.sbatch" \
  --sweep sms=8,16 --ert none -- /bin/true)" || rc=$?
jid="${jid%%;*}"
cat "$WORK_DIR/gpu-$jid.out"
[[ "$rc" -eq 2 ]] || fail "gpu sweep without a GPU should exit 2, got $rc"
grep -q "rtrace-gpu-sweep: job $jid" "$WORK_DIR/gpu-$jid.out" || fail "job log lacks the script's header"
grep -qi "gpu" <(grep '^rtrace' "$WORK_DIR/gpu-$jid.out" | tail -n 1) || fail "no message about the missing GPU"
log "ok: job $jid refused the sms axis without a GPU"
