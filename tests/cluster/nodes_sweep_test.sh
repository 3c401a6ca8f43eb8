#!/usr/bin/env bash
# A `nodes` sweep across the simulated nodes, submitted with
# slurm/rtrace-rank-sweep.sbatch as a user would: nodes=1,2,4 with one rank
# per node, quick ERT of each partition measured on its own nodes (each node
# its slice), the MPI app traced on every node. The file must record 1, 2
# and 4 distinct hosts with their ranks, every node's ceilings and the
# slowest node's as the point's ceilings; `rtrace analyze` groups the ranks
# by host and names node3 (whose rank does 8x the work) as the slow node.
source "$(dirname "$0")/../slurm/lib.sh"

app="$BIN_DIR/cluster_mpi_app"
[[ -x "$app" ]] || { echo "SKIP: $app not built (needs MPI)" >&2; exit 77; }

run="$WORK_DIR/nodes.h5"
log "submitting rtrace-rank-sweep.sbatch -N 4 (nodes=1,2,4 x ranks-per-node=1, --ert quick)"
rc=0
jid="$(RTRACE_OUTPUT="$run" sbatch_wait --parsable -N 4 --ntasks-per-node=1 --time=5 \
  --output="$WORK_DIR/nodes-%j.out" "$SLURM_SCRIPTS/rtrace-rank-sweep.sbatch" \
  --sweep nodes=1,2,4 --sweep ranks-per-node=1 --ert quick --timeout 120 -- \
  "$app" --steps 8 --size 1000000 --slow-host node3 8)" || rc=$?
jid="${jid%%;*}"
cat "$WORK_DIR/nodes-$jid.out"
[[ "$rc" -eq 0 ]] || fail "nodes sweep job $jid exited $rc"

"$BIN_DIR/rtrace" validate "$run" || fail "rtrace validate rejects $run"
"${CHECK_RUN[@]}" "$run" --points 3 --complete 3 --ok 3 --ranks 0=1 --ranks 1=2 --ranks 2=4 \
  --hosts 0=1 --hosts 1=2 --hosts 2=4 --node-ceilings 1=2 --node-ceilings 2=4 \
  --slurm-job "$jid" --launcher srun || fail "$run contents"

"$BIN_DIR/rtrace" analyze "$run" --json "$WORK_DIR/analysis.json" >"$WORK_DIR/analysis.txt" ||
  fail "rtrace analyze failed"
sed -n '/^Nodes/,$p' "$WORK_DIR/analysis.txt"
# The report wraps its lines: read it as one.
# (a here-string, not a pipe: grep -q would SIGPIPE tr under pipefail)
grep -q "nodes=4 ranks-per-node=1: 4 hosts: node1 \[0\] [^;]*; node2 \[1\] [^;]*; node3 \[2\] .*slowest node3" <<<"$(tr -s ' \n' '  ' <"$WORK_DIR/analysis.txt")" ||
  fail "the report does not name node3 as the slowest of 4 hosts"
/usr/bin/python3 - "$WORK_DIR/analysis.json" <<'PY' || fail "analysis JSON: hosts and node ceilings"
import json, sys
doc = json.load(open(sys.argv[1]))
by_label = {c["label"]: c for c in doc["configurations"]}
for nodes in (1, 2, 4):
    c = by_label["nodes=%d ranks-per-node=1" % nodes]
    hosts = [h["host"] for h in c["hosts"]]
    assert hosts == ["node%d" % (i + 1) for i in range(nodes)], (nodes, hosts)
    assert [h["rank_list"] for h in c["hosts"]] == [str(i) for i in range(nodes)], c["hosts"]
    if nodes > 1:
        assert {x["host"] for x in c["node_ceilings"]} == set(hosts), c["node_ceilings"]
        assert all(x.get("host") in hosts for x in c["ceilings"]), c["ceilings"]
four = by_label["nodes=4 ranks-per-node=1"]
assert four["ranks_found"] == 4, four["ranks_found"]
assert four["slowest_node"] == "node3", four["slowest_node"]
assert four["node_balance"] < 0.8, four["node_balance"]
PY
writers() {  # the writer attribute of every rank group of point $2 in $1
  /usr/bin/python3 -c 'import sys, h5py
f = h5py.File(sys.argv[1], "r")
g = f["points/p%06d/ranks" % int(sys.argv[2])]
print(" ".join(sorted({str(g[r].attrs["writer"]) for r in g})))' "$1" "$2"
}
[[ "$(writers "$run" 2)" == gather ]] || fail "the 4-node point's ranks were not gathered to rank 0 (the default): $(writers "$run" 2)"

# The tracer's other collective write: parallel HDF5 (MPI-IO) of one ranks.h5
# by the ranks of 4 nodes on the shared file system.
log "nodes=4 again with RTRACE_TRACER_COLLECTIVE=parallel (MPI-IO across the nodes)"
rc=0
jid2="$(RTRACE_OUTPUT="$WORK_DIR/parallel.h5" sbatch_wait --parsable -N 4 --ntasks-per-node=1 --time=5 \
  --output="$WORK_DIR/nodes-%j.out" "$SLURM_SCRIPTS/rtrace-rank-sweep.sbatch" \
  --sweep nodes=4 --sweep ranks-per-node=1 --ert none --timeout 120 --env RTRACE_TRACER_COLLECTIVE=parallel -- \
  "$app" --steps 2 --size 1000)" || rc=$?
jid2="${jid2%%;*}"
cat "$WORK_DIR/nodes-$jid2.out"
[[ "$rc" -eq 0 ]] || fail "job $jid2 exited $rc"
"${CHECK_RUN[@]}" "$WORK_DIR/parallel.h5" --points 1 --ok 1 --ranks 0=4 --hosts 0=4 || fail "parallel.h5 contents"
[[ "$(writers "$WORK_DIR/parallel.h5" 0)" == mpi-io ]] ||
  fail "the ranks of 4 nodes were not written by MPI-IO: $(writers "$WORK_DIR/parallel.h5" 0)"
log "ok: 1, 2 and 4 hosts with their ranks and every node's ceilings; node3 named the slowest; ranks.h5 gathered and written by MPI-IO across 4 nodes (jobs $jid, $jid2)"
