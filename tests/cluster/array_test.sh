#!/usr/bin/env bash
# slurm/rtrace-array.sbatch across nodes: 4 array tasks of 2 CPUs each, so
# Slurm places them on different nodes (a node has 2 CPUs here); each task
# writes its part on the shared file system, the dependent merge job (on
# whichever node it lands) merges them into one run. Then the GPU sweep
# script on more than one node: a 2-node job is refused with one line naming
# its nodes, and an array of it lands on two nodes, each refusing the sms
# axis for its own node (no GPU here).
source "$(dirname "$0")/../slurm/lib.sh"

app="$BIN_DIR/cluster_mpi_app"
[[ -x "$app" ]] || { echo "SKIP: $app not built (needs MPI)" >&2; exit 77; }

export RTRACE_PARTS_DIR="$WORK_DIR/parts"
export RTRACE_OUTPUT="$WORK_DIR/merged.h5"
log "submitting the array (4 tasks x 2 CPUs) and the dependent merge"
array_jid="$(sbatch --parsable --array=0-3 --cpus-per-task=2 --time=5 --output="$WORK_DIR/array-%A_%a.out" \
  "$SLURM_SCRIPTS/rtrace-array.sbatch" --sweep env:STEP=1..4 --ert none --timeout 60 -- \
  "$app" --steps 2 --size 1000)"
array_jid="${array_jid%%;*}"
rc=0
merge_jid="$(sbatch_wait --parsable --dependency=afterany:"$array_jid" --time=5 \
  --output="$WORK_DIR/merge-%j.out" "$SLURM_SCRIPTS/rtrace-array.sbatch" --merge)" || rc=$?
merge_jid="${merge_jid%%;*}"
cat "$WORK_DIR/merge-$merge_jid.out"
[[ "$rc" -eq 0 ]] || fail "merge job $merge_jid exited $rc"
grep -h "^rtrace-array: job" "$WORK_DIR"/array-"$array_jid"_*.out
"$BIN_DIR/rtrace" validate "$RTRACE_OUTPUT" || fail "merged.h5 invalid"
"${CHECK_RUN[@]}" "$RTRACE_OUTPUT" --points 4 --complete 4 --ok 4 --hosts 0=1 --hosts 1=1 --hosts 2=1 --hosts 3=1 ||
  fail "merged.h5 contents"
hosts="$(/usr/bin/python3 - "$RTRACE_OUTPUT" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    print(" ".join(sorted({h["host"].decode() for p in f["points"] for h in f["points"][p]["hosts"][...]})))
PY
)"
log "the 4 points ran on: $hosts"
[[ "$(wc -w <<<"$hosts")" -ge 2 ]] || fail "every array task ran on one node ($hosts): not spread"

log "rtrace-gpu-sweep.sbatch on 2 nodes: refused"
rc=0
jid="$(RTRACE_OUTPUT="$WORK_DIR/gpu.h5" sbatch_wait --parsable -N 2 -n 2 --gres=none --cpus-per-task=1 --time=5 \
  --output="$WORK_DIR/gpu-%j.out" "$SLURM_SCRIPTS/rtrace-gpu-sweep.sbatch" --sweep sms=8,16 --ert none -- /bin/true)" ||
  rc=$?
jid="${jid%%;*}"
cat "$WORK_DIR/gpu-$jid.out"
[[ "$rc" -eq 2 ]] || fail "a 2-node GPU sweep should exit 2, got $rc"
grep -q "has 2 nodes (node\[1-2\]); an SM sweep measures one node's GPU" "$WORK_DIR/gpu-$jid.out" ||
  fail "no line naming the job's nodes"

log "rtrace-gpu-sweep.sbatch as an array over 2 nodes: each node reports its own GPU"
gpu_jid="$(RTRACE_OUTPUT="$WORK_DIR/gpu-%a.h5" sbatch --parsable --array=0-1 --cpus-per-task=2 --gres=none --time=5 \
  --output="$WORK_DIR/gpu-%A_%a.out" "$SLURM_SCRIPTS/rtrace-gpu-sweep.sbatch" --sweep sms=8,16 --ert none -- /bin/true)"
gpu_jid="${gpu_jid%%;*}"
wait_gone "$gpu_jid" 120 || fail "GPU array $gpu_jid still queued"
nodes_seen=()
for task in 0 1; do
  out="$WORK_DIR/gpu-${gpu_jid}_$task.out"
  cat "$out"
  node="$(sed -n 's/^rtrace-gpu-sweep: no usable GPU on \([^:]*\):.*/\1/p' "$out")"
  [[ -n "$node" ]] || fail "task $task: no line about its node's missing GPU"
  nodes_seen+=("$node")
done
[[ "${nodes_seen[0]}" != "${nodes_seen[1]}" ]] || fail "both tasks ran on ${nodes_seen[0]}"
log "ok: array points on $hosts merged into one run; GPU script refused 2 nodes, its array checked ${nodes_seen[*]}"
