#!/usr/bin/env bash
# The counting pass (--counts sim) across nodes: a 2-node point's ranks run
# under the Valgrind tool on node1 and node2, each with its own /tmp, and
# write their raw counts into the point's scratch next to the output (the
# shared file system), so both ranks are counted: counts_info "ok" on both.
source "$(dirname "$0")/../slurm/lib.sh"

app="$BIN_DIR/cluster_mpi_app"
[[ -x "$app" ]] || { echo "SKIP: $app not built (needs MPI)" >&2; exit 77; }
"$BIN_DIR/rtrace" counts --check >/dev/null 2>&1 || { echo "SKIP: the counting tool cannot run here" >&2; exit 77; }

run="$WORK_DIR/counts.h5"
log "submitting rtrace-rank-sweep.sbatch -N 2 (nodes=2 x ranks-per-node=1, --counts sim)"
rc=0
jid="$(RTRACE_OUTPUT="$run" sbatch_wait --parsable -N 2 --ntasks-per-node=1 --time=5 \
  --output="$WORK_DIR/counts-%j.out" "$SLURM_SCRIPTS/rtrace-rank-sweep.sbatch" \
  --sweep nodes=2 --sweep ranks-per-node=1 --ert none --counts sim --timeout 120 -- \
  "$app" --steps 2 --size 20000)" || rc=$?
jid="${jid%%;*}"
cat "$WORK_DIR/counts-$jid.out"
[[ "$rc" -eq 0 ]] || fail "counts job $jid exited $rc"
"$BIN_DIR/rtrace" validate "$run" || fail "rtrace validate rejects $run"
/usr/bin/python3 - "$run" <<'PY' || fail "counts of both ranks"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
ranks = f["points/p000000/ranks"]
seen = {}
for r in ranks:
    info = ranks[r]["counts_info"][0]
    status = info["status"].decode().rstrip("\0")
    note = info["note"].decode().rstrip("\0")
    seen[r] = status
    assert status == "ok", (r, status, note)
    assert len(ranks[r]["counts"]) > 0, r
assert len(seen) == 2, seen
print("counts of", sorted(seen), "ok")
PY
log "ok: both nodes' ranks counted"
