#!/usr/bin/env bash
# rtrace dies (SIGKILL) while a point runs on all four nodes: the app's
# processes must go on every node, not only on rtrace's own. rtrace's keeper
# sees only node1's processes (each node is its own PID namespace here, as
# separate machines are), so the ranks on node2..node4 can only be stopped
# by Slurm: srun dies with rtrace, and each node's step daemon ends its tasks
# when srun is gone. Nothing else may do it: the batch script outlives rtrace
# (so the job does not end with it), and the ranks hold without talking to
# each other (--hold-alone), so none dies because another did. Then
# slurm/rtrace-rank-sweep.sbatch, submitted with the same file, resumes the
# sweep (--resume) and completes it.
source "$(dirname "$0")/../slurm/lib.sh"

app="$BIN_DIR/cluster_mpi_app"
[[ -x "$app" ]] || { echo "SKIP: $app not built (needs MPI)" >&2; exit 77; }

run="$WORK_DIR/keeper.h5"
hold="$WORK_DIR/hold"
# shellcheck disable=SC2054  # commas inside one argument
args=(--sweep nodes=2,4 --sweep ranks-per-node=1 --ert none --timeout 90 --
      "$app" --steps 2 --size 1000 --hold-file "$hold-{point}" --hold-seconds 60 --hold-alone)
# A batch script that goes on after rtrace: a job script of the user's.
cat >"$WORK_DIR/job.sh" <<'JOB'
#!/bin/bash
"$@"
echo "job.sh: rtrace ended with $?; the job goes on"
sleep 120
JOB
submit() {
  sbatch --parsable -N 4 --ntasks-per-node=1 --time=5 --output="$WORK_DIR/keeper-%j.out" \
    "$WORK_DIR/job.sh" "$BIN_DIR/rtrace" run -o "$run" "${args[@]}"
}
# PIDs (as this root namespace sees them) of the processes whose command line
# holds $1: the app's ranks on every node, or rtrace itself.
pids_with() {  # text, executable
  local p
  for p in $(grep -lasF -- "$1" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3); do
    [[ "$(readlink "/proc/$p/exe" 2>/dev/null)" == "$2" ]] && echo "$p"
  done
  return 0
}
hosts_of() {  # the hostname (UTS namespace) of each pid
  local p
  for p in "$@"; do nsenter --target "$p" --uts hostname 2>/dev/null || true; done | sort -u | tr '\n' ' '
}

jid="$(submit)"
jid="${jid%%;*}"
log "job $jid: point 0 (2 nodes), then point 1 (4 nodes)"
for ((i = 0; i < 300; i++)); do [[ -e "$hold-0.running" ]] && break; sleep 0.2; done
touch "$hold-0"
for ((i = 0; i < 300; i++)); do [[ -e "$hold-1.running" ]] && break; sleep 0.2; done
[[ -e "$hold-1.running" ]] || fail "point 1 did not start"
# shellcheck disable=SC2207  # pids are digits
ranks=($(pids_with "$hold-1" "$app"))
log "point 1 runs: app processes on $(hosts_of "${ranks[@]}")"
[[ "$(hosts_of "${ranks[@]}")" == "node1 node2 node3 node4 " ]] || fail "the app does not run on all 4 nodes"
rtrace_pid=""  # not its keeper (a fork of rtrace named rtrace-keeper)
for p in $(pids_with "$run" "$BIN_DIR/rtrace"); do
  [[ "$(cat "/proc/$p/comm" 2>/dev/null)" != rtrace-keeper ]] && rtrace_pid="$p"
done
[[ -n "$rtrace_pid" ]] || fail "cannot find rtrace's process"
log "SIGKILL to rtrace (pid $rtrace_pid here, on $(hosts_of "$rtrace_pid"))"
kill -KILL "$rtrace_pid"
left=()
for ((i = 0; i < 150; i++)); do
  # shellcheck disable=SC2207
  left=($(pids_with "$hold-1" "$app"))
  [[ ${#left[@]} -eq 0 ]] && break
  sleep 0.2
done
[[ ${#left[@]} -eq 0 ]] || fail "30 s after rtrace died, app processes remain on $(hosts_of "${left[@]}")"
log "every app process is gone, on all 4 nodes, after $((i / 5))-$(((i + 4) / 5)) s"
grep -q "rtrace ended with 137; the job goes on" "$WORK_DIR/keeper-$jid.out" || fail "the job did not outlive rtrace"
[[ -n "$(squeue -h -j "$jid")" ]] || fail "job $jid ended with rtrace: the test would not tell who stopped the ranks"
scancel "$jid"
wait_gone "$jid" 60 || fail "job $jid still queued"
"$BIN_DIR/rtrace" validate "$run" || fail "$run invalid after rtrace was killed"
"${CHECK_RUN[@]}" "$run" --points 2 --complete 1 --ok 1 || fail "$run: point 0 committed, point 1 pending"

log "resubmitting: the script resumes the file"
touch "$hold-1"
rc=0
jid2="$(RTRACE_OUTPUT="$run" sbatch_wait --parsable -N 4 --ntasks-per-node=1 --time=5 \
  --output="$WORK_DIR/keeper-%j.out" "$SLURM_SCRIPTS/rtrace-rank-sweep.sbatch" "${args[@]}")" || rc=$?
jid2="${jid2%%;*}"
cat "$WORK_DIR/keeper-$jid2.out"
[[ "$rc" -eq 0 ]] || fail "resumed job $jid2 exited $rc"
grep -q "resuming .*1 of 2 points left" "$WORK_DIR/keeper-$jid2.out" || fail "job $jid2 did not resume"
"$BIN_DIR/rtrace" validate "$run" || fail "$run invalid after --resume"
"${CHECK_RUN[@]}" "$run" --points 2 --complete 2 --ok 2 --hosts 0=2 --hosts 1=4 || fail "$run after --resume"
log "ok: rtrace killed, no app process left on any node, --resume completed the sweep"
