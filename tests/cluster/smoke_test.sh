#!/usr/bin/env bash
# The simulated cluster itself: srun reaches all four nodes by name, each node
# sees only its own processes (its own PID namespace), and an Open MPI job
# started by `srun --mpi=pmix` spans the four nodes over TCP.
source "$(dirname "$0")/../slurm/lib.sh"

app="$BIN_DIR/cluster_mpi_app"
[[ -x "$app" ]] || { echo "SKIP: $app not built (needs MPI)" >&2; exit 77; }

log "srun hostname on 4 nodes"
hosts="$(srun -N 4 -n 4 --time=1 hostname | sort | tr '\n' ' ')"
[[ "$hosts" == "node1 node2 node3 node4 " ]] || fail "srun -N 4 hostname gave \`$hosts\`"

log "each node sees only its own processes"
here="$(find /proc -maxdepth 1 -name '[0-9]*' | wc -l)"
there="$(srun -N 1 -n 1 -w node2 --time=1 find /proc -maxdepth 1 -name '[0-9]*' | wc -l)"
log "processes visible: $here here, $there on node2"
[[ "$there" -lt 20 && "$there" -lt "$here" ]] || fail "node2 sees $there processes (the root namespace sees $here): no PID namespace?"

log "MPI hello across 4 nodes (srun --mpi=pmix)"
out="$(srun -N 4 -n 4 --mpi=pmix --time=1 "$app" --steps 2 --size 1000)" || fail "MPI job failed: $out"
echo "$out"
grep -qx "hosts: node1 node2 node3 node4" <<<"$out" || fail "the ranks did not run on node1..node4"
grep -q "^check 56.0 (expected 56.0)$" <<<"$out" || fail "wrong Allreduce result"

log "8 ranks on 4 nodes (2 per node: shared memory inside a node, TCP between)"
out="$(srun -N 4 -n 8 --ntasks-per-node=2 --mpi=pmix --time=1 "$app" --steps 2 --size 1000)" || fail "MPI job failed: $out"
grep -qx "hosts: node1 node2 node3 node4" <<<"$out" || fail "8 ranks: not on node1..node4"
[[ "$(grep -c ' on node' <<<"$out")" -eq 8 ]] || fail "8 ranks: expected 8 rank lines"
log "ok: 4 simulated nodes, srun and Open MPI across them"
