#!/usr/bin/env bash
# The array + merge flow of slurm/rtrace-array.sbatch: 4 array tasks (one
# point each), one of them fails; the dependent merge job (afterany) merges
# 3 ok + 1 failed; the failed task is resubmitted alone and merged later.
source "$(dirname "$0")/lib.sh"

# The app: fails while $WORK_DIR/fail-<N> exists (N from the sweep's env axis).
app="$WORK_DIR/flaky_app.sh"
cat >"$app" <<'APP'
#!/bin/sh
echo "flaky_app N=$N"
if [ -e "$1/fail-$N" ]; then echo "flaky_app: failing on purpose for N=$N" >&2; exit 3; fi
exit 0
APP
chmod +x "$app"
touch "$WORK_DIR/fail-3"

export RTRACE_PARTS_DIR="$WORK_DIR/parts"
export RTRACE_OUTPUT="$WORK_DIR/merged.h5"
sweep=(--sweep "env:N=1..4" --ert none --timeout 60 -- "$app" "$WORK_DIR")

log "submitting the array (4 tasks) and the dependent merge"
array_jid="$(sbatch --parsable --array=0-3 --time=5 --output="$WORK_DIR/array-%A_%a.out" \
  "$SLURM_SCRIPTS/rtrace-array.sbatch" "${sweep[@]}")"
array_jid="${array_jid%%;*}"
rc=0
merge_jid="$(sbatch_wait --parsable --dependency=afterany:"$array_jid" --time=5 \
  --output="$WORK_DIR/merge-%j.out" "$SLURM_SCRIPTS/rtrace-array.sbatch" --merge)" || rc=$?
merge_jid="${merge_jid%%;*}"
log "merge job $merge_jid (after array $array_jid) exited $rc"
cat "$WORK_DIR/merge-$merge_jid.out"
[[ "$rc" -eq 1 ]] || fail "merge with a failed point should exit 1, got $rc"
grep -q "merged 4 of 4 points" "$WORK_DIR/merge-$merge_jid.out" || fail "merge report"
grep -q "not ok: 2 (env:N=3) failed" "$WORK_DIR/merge-$merge_jid.out" || fail "merge report names the failed point"
"$BIN_DIR/rtrace" validate "$WORK_DIR/merged.h5" || fail "merged.h5 invalid"
"${CHECK_RUN[@]}" "$WORK_DIR/merged.h5" --points 4 --complete 4 --ok 3 || fail "merged.h5 contents (first merge)"
[[ "$(find "$WORK_DIR/parts" -name 'part-*.h5' | wc -l)" -eq 4 ]] || fail "expected 4 part files"

log "resubmitting the failed task 2 alone, then merging again"
rm -f "$WORK_DIR/fail-3"
retry_jid="$(sbatch --parsable --array=2 --time=5 --output="$WORK_DIR/array-%A_%a.out" \
  "$SLURM_SCRIPTS/rtrace-array.sbatch" "${sweep[@]}")"
retry_jid="${retry_jid%%;*}"
rc=0
merge2_jid="$(sbatch_wait --parsable --dependency=afterany:"$retry_jid" --time=5 \
  --output="$WORK_DIR/merge-%j.out" "$SLURM_SCRIPTS/rtrace-array.sbatch" --merge)" || rc=$?
merge2_jid="${merge2_jid%%;*}"
cat "$WORK_DIR/merge-$merge2_jid.out"
[[ "$rc" -eq 0 ]] || fail "second merge should succeed, got $rc"
grep -q "ok result from .*part-000002-${retry_jid}.h5 replaces the \`failed\` one" "$WORK_DIR/merge-$merge2_jid.out" ||
  fail "second merge report"
"$BIN_DIR/rtrace" validate "$WORK_DIR/merged.h5" || fail "merged.h5 invalid after the second merge"
"${CHECK_RUN[@]}" "$WORK_DIR/merged.h5" --points 4 --complete 4 --ok 4 --ranks 2=1 || fail "merged.h5 contents (second merge)"
log "ok: array $array_jid + merge $merge_jid, retry $retry_jid + merge $merge2_jid"
