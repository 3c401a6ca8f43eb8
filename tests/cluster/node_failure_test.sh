#!/usr/bin/env bash
# A node fails in the middle of a point: node3 (its slurmd, its step daemon
# and its rank: everything in its PID namespace) is killed while the 4-node
# point runs. That point must be `failed` with node3 named (hosts table and
# log), the points before it stay committed, the sweep goes on with the
# remaining nodes (--no-kill in rtrace-rank-sweep.sbatch), and the file is
# valid. Slurm needs SlurmdTimeout (10 s here) to declare the node down, so
# this test takes about 30 s. Then node3 is started again and the same script,
# resubmitted with `--resume --retry-failed` (issue 24), reruns only the
# failed point on the 4 nodes: every point ok, points 0 and 2 untouched, the
# file valid (about 5 s more).
source "$(dirname "$0")/../slurm/lib.sh"

app="$BIN_DIR/cluster_mpi_app"
[[ -x "$app" ]] || { echo "SKIP: $app not built (needs MPI)" >&2; exit 77; }

# Whatever happens, node3 comes back for the tests after this one.
restore_node3() {
  local rc=$?
  if [[ "$(sinfo -h -N -n node3 -o '%T' 2>/dev/null)" != idle ]]; then
    bash "$CLUSTER_SH" start-node "$CLUSTER_DIR" node3 >&2 || true
  fi
  cleanup_rc=$rc cleanup
}
trap restore_node3 EXIT

run="$WORK_DIR/failure.h5"
hold="$WORK_DIR/hold"  # point P holds until $hold-P exists (the {point} placeholder)
log "submitting nodes=1,4,2 (ranks-per-node=1); each point's app holds until it is released"
jid="$(RTRACE_OUTPUT="$run" sbatch --parsable -N 4 --ntasks-per-node=1 --time=5 \
  --output="$WORK_DIR/failure-%j.out" "$SLURM_SCRIPTS/rtrace-rank-sweep.sbatch" \
  --sweep nodes=1,4,2 --sweep ranks-per-node=1 --ert none --timeout 90 -- \
  "$app" --steps 2 --size 1000 --hold-file "$hold-{point}" --hold-seconds 60)"
jid="${jid%%;*}"

wait_running() {  # point
  local i
  for ((i = 0; i < 300; i++)); do [[ -e "$hold-$1.running" ]] && return 0; sleep 0.2; done
  fail "point $1 of job $jid did not start within 60 s"
}
wait_running 0
touch "$hold-0"
wait_running 1
log "point 1 (4 nodes) is running: killing node3"
bash "$CLUSTER_SH" kill-node "$CLUSTER_DIR" node3
touch "$hold-1" "$hold-2"
wait_gone "$jid" 120 || fail "job $jid still queued 120 s after node3 was killed"
cat "$WORK_DIR/failure-$jid.out"

grep -q "nodes=4 ranks-per-node=1: failed (node node3 failed)" "$WORK_DIR/failure-$jid.out" ||
  fail "the progress line does not name node3"
"$BIN_DIR/rtrace" validate "$run" || fail "rtrace validate rejects $run"
"${CHECK_RUN[@]}" "$run" --points 3 --complete 3 --ok 2 --failed-host 1=node3 --hosts 0=1 --hosts 2=2 ||
  fail "$run contents"
/usr/bin/python3 - "$run" <<'PY' || fail "point 1's status and log"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    rows = {int(r["point_id"]): r for r in f["sweep/points"][...]}
    assert rows[0]["status"] == b"ok" and rows[2]["status"] == b"ok", rows
    assert rows[1]["status"] == b"failed", rows[1]
    log = [l.decode() if isinstance(l, bytes) else l for l in f["points/p000001"].attrs["log"]]
    assert any(l.startswith("error: node node3 failed during the point") for l in log), log
    hosts = {h["host"].decode(): h["state"].decode() for h in f["points/p000001/hosts"][...]}
    assert hosts["node3"] == "failed", hosts
    assert list(hosts) == ["node1", "node2", "node3", "node4"], hosts
PY
log "ok: node3 failed during point 1, named there; points 0 and 2 ok (job $jid)"

# Point rows before the retry: the ok points must not be rerun.
rows_of() {
  /usr/bin/python3 -c 'import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    for r in f["sweep/points"][...]:
        print(int(r["point_id"]), r["status"].decode(), repr(float(r["start_time"])), repr(float(r["end_time"])))' "$1"
}
before="$(rows_of "$run")"
log "node3 back; the same script with --resume --retry-failed reruns the failed 4-node point"
bash "$CLUSTER_SH" start-node "$CLUSTER_DIR" node3 || fail "node3 did not come back"
rc=0
jid2="$(RTRACE_OUTPUT="$run" sbatch_wait --parsable -N 4 --ntasks-per-node=1 --time=5 \
  --output="$WORK_DIR/failure-%j.out" "$SLURM_SCRIPTS/rtrace-rank-sweep.sbatch" \
  --resume --retry-failed --sweep nodes=1,4,2 --sweep ranks-per-node=1 --ert none --timeout 90 -- \
  "$app" --steps 2 --size 1000 --hold-file "$hold-{point}" --hold-seconds 60)" || rc=$?
jid2="${jid2%%;*}"
cat "$WORK_DIR/failure-$jid2.out"
[[ "$rc" -eq 0 ]] || fail "retry job $jid2 exited $rc"
grep -q "resuming .*1 of 3 points left" "$WORK_DIR/failure-$jid2.out" || fail "job $jid2 did not retry only point 1"
grep -q "nodes=4 ranks-per-node=1: ok" "$WORK_DIR/failure-$jid2.out" || fail "job $jid2: point 1 not ok"
"$BIN_DIR/rtrace" validate "$run" || fail "rtrace validate rejects $run after the retry"
"${CHECK_RUN[@]}" "$run" --points 3 --complete 3 --ok 3 --hosts 0=1 --hosts 1=4 --hosts 2=2 ||
  fail "$run contents after the retry"
after="$(rows_of "$run")"
[[ "$(grep -v '^1 ' <<<"$before")" == "$(grep -v '^1 ' <<<"$after")" ]] ||
  fail "the retry touched the ok points: before:\n$before\nafter:\n$after"
[[ "$(grep '^1 ' <<<"$after" | cut -d' ' -f2)" == ok ]] || fail "point 1 after the retry: $(grep '^1 ' <<<"$after")"
log "ok: node3 restarted, --resume --retry-failed reran point 1 on 4 nodes; every point ok (job $jid2)"
