#!/usr/bin/env bash
# A `nodes` sweep across the simulated nodes, submitted with
# slurm/rtrace-rank-sweep.sbatch as a user would: nodes=1,2,4 with one rank
# per node, quick ERT of each partition measured on its own nodes (each node
# its slice), the MPI app traced on every node. The file must record 1, 2
# and 4 distinct hosts with their ranks, every node's ceilings and the
# slowest node's as the point's ceilings.
source "$(dirname "$0")/../slurm/lib.sh"

app="$BIN_DIR/cluster_mpi_app"
[[ -x "$app" ]] || { echo "SKIP: $app not built (needs MPI)" >&2; exit 77; }

run="$WORK_DIR/nodes.h5"
log "submitting rtrace-rank-sweep.sbatch -N 4 (nodes=1,2,4 x ranks-per-node=1, --ert quick)"
rc=0
jid="$(RTRACE_OUTPUT="$run" sbatch_wait --parsable -N 4 --ntasks-per-node=1 --time=5 \
  --output="$WORK_DIR/nodes-%j.out" "$SLURM_SCRIPTS/rtrace-rank-sweep.sbatch" \
  --sweep nodes=1,2,4 --sweep ranks-per-node=1 --ert quick --timeout 120 -- \
  "$app" --steps 4 --size 200000 --slow-host node3 4)" || rc=$?
jid="${jid%%;*}"
cat "$WORK_DIR/nodes-$jid.out"
[[ "$rc" -eq 0 ]] || fail "nodes sweep job $jid exited $rc"

"$BIN_DIR/rtrace" validate "$run" || fail "rtrace validate rejects $run"
"${CHECK_RUN[@]}" "$run" --points 3 --complete 3 --ok 3 --ranks 0=1 --ranks 1=2 --ranks 2=4 \
  --hosts 0=1 --hosts 1=2 --hosts 2=4 --node-ceilings 1=2 --node-ceilings 2=4 \
  --slurm-job "$jid" --launcher srun || fail "$run contents"
log "ok: 1, 2 and 4 hosts with their ranks and every node's ceilings (job $jid)"
