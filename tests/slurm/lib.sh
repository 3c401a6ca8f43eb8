# Shared helpers of the slurm and cluster tests (sourced). Expects CLUSTER_DIR, BIN_DIR,
# SOURCE_DIR and WORK_DIR in the environment (set by CMakeLists.txt).
set -euo pipefail

fail() { echo "FAIL: $*" >&2; exit 1; }
log() { echo "[$(date +%T)] $*"; }

# The cluster fixture did not start (skipped or failed): skip, do not fail twice.
if [[ ! -f "$CLUSTER_DIR/env.sh" || ! -f "$CLUSTER_DIR/pids" ]]; then
  echo "SKIP: no test cluster in $CLUSTER_DIR (slurm_cluster_start skipped or failed)" >&2
  exit 77
fi
# shellcheck source=/dev/null
source "$CLUSTER_DIR/env.sh"

# The scripts under test find rtrace on PATH exactly as at a site.
export PATH="$BIN_DIR:$PATH"
export RTRACE_CACHE_DIR="$WORK_DIR/cache"
export OMPI_MCA_rmaps_base_oversubscribe=1
SLURM_SCRIPTS="$SOURCE_DIR/slurm"
CHECK_RUN=(/usr/bin/python3 "$SOURCE_DIR/tests/slurm/check_run.py")

rm -rf "$WORK_DIR"
mkdir -p "$WORK_DIR"
cd "$WORK_DIR"

# The help is read whole before grep: `grep -q` quits at the first match, and
# under pipefail the SIGPIPE that rtrace then gets read as "no launcher" (skip).
rtrace_has_sweep() { local help; help=$("$BIN_DIR/rtrace" run --help 2>/dev/null) && grep -q -- '--sweep' <<< "$help"; }
if ! rtrace_has_sweep; then
  echo "SKIP: $BIN_DIR/rtrace has no launcher (rtrace run --help shows no --sweep)" >&2
  exit 77
fi

# Waits until job $1 has left the queue (any end state), at most $2 seconds.
wait_gone() {
  local i
  for ((i = 0; i < $2 * 5; i++)); do
    [[ -z "$(squeue -h -j "$1" 2>/dev/null)" ]] && return 0
    sleep 0.2
  done
  return 1
}

show_logs() {
  local f
  for f in "$WORK_DIR"/*.out; do
    [[ -e "$f" ]] || continue
    echo "---- $f" >&2
    tail -n 30 "$f" >&2
  done
}
# On the way out: logs when failing, and no job of this test left behind on
# the private cluster (a job that pends forever would block the next test).
cleanup() {
  local rc=${cleanup_rc:-$?} jobs
  if [[ $rc -ne 0 && $rc -ne 77 ]]; then
    show_logs
    squeue >&2 || true
  fi
  jobs="$(squeue -h -o %A 2>/dev/null | sort -u | tr '\n' ' ')"
  if [[ -n "${jobs// /}" ]]; then
    echo "cancelling leftover jobs: $jobs" >&2
    # shellcheck disable=SC2086  # job ids are digits
    scancel $jobs || true
  fi
}
trap cleanup EXIT

# sbatch --wait with a deadline (a job that can never start must fail the
# test, not hang it). Prints sbatch's output (the job id with --parsable).
sbatch_wait() {
  timeout --signal=TERM 150 sbatch --wait "$@"
}
