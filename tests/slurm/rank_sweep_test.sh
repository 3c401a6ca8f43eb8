#!/usr/bin/env bash
# A 2-rank MPI sweep through srun: slurm/rtrace-rank-sweep.sbatch as a user
# submits it, on the private cluster; checks the run file and its /run record.
source "$(dirname "$0")/lib.sh"

app="$BIN_DIR/rtrace-demo-mpi"
[[ -x "$app" ]] || { echo "SKIP: $app not built" >&2; exit 77; }

log "submitting rtrace-rank-sweep.sbatch (ranks=1,2) and waiting"
rc=0
jid_line="$(RTRACE_OUTPUT="$WORK_DIR/ranks.h5" sbatch_wait --parsable -N 1 -n 2 --ntasks-per-node=2 --time=5 \
  --output="$WORK_DIR/rank-sweep-%j.out" "$SLURM_SCRIPTS/rtrace-rank-sweep.sbatch" \
  --sweep ranks=1,2 --ert none --timeout 60 -- "$app" triad --size 200000 --iters 3)" || rc=$?
jid="${jid_line%%;*}"
log "job $jid ended with exit $rc"
[[ "$rc" -eq 0 ]] || fail "rank sweep job $jid exited $rc"
grep -q "rtrace-rank-sweep: job $jid" "$WORK_DIR/rank-sweep-$jid.out" || fail "job log lacks the script's header"

"$BIN_DIR/rtrace" validate "$WORK_DIR/ranks.h5" || fail "rtrace validate rejects ranks.h5"
"${CHECK_RUN[@]}" "$WORK_DIR/ranks.h5" --points 2 --complete 2 --ok 2 --ranks 0=1 --ranks 1=2 \
  --slurm-job "$jid" --launcher srun || fail "ranks.h5 contents"
log "ok: 2 points, 1 and 2 ranks through srun, job $jid recorded"
