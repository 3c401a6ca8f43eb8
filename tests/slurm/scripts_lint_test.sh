#!/usr/bin/env bash
# Static checks of the slurm/ scripts users copy: bash syntax, #SBATCH lines
# before the first command (sbatch stops reading them there), no hard-coded
# partition/account/qos, no eval, shellcheck when installed.
set -euo pipefail
dir="$1/slurm"
status=0
for f in "$dir"/*.sbatch "$dir"/*.sh; do
  [[ -e "$f" ]] || continue
  bash -n "$f" || { echo "FAIL: $f: bash syntax"; status=1; }
  if grep -nE '^[^#]*\beval\b' "$f"; then echo "FAIL: $f uses eval"; status=1; fi
  if grep -nE '^#SBATCH[[:space:]]+(-p|-A|-q|--partition|--account|--qos)\b' "$f"; then
    echo "FAIL: $f hard-codes a partition/account/qos"; status=1
  fi
  if [[ "$f" == *.sbatch ]]; then
    # Every #SBATCH line must come before the first non-comment, non-blank line.
    first_cmd="$(grep -nvE '^[[:space:]]*(#|$)' "$f" | head -n 1 | cut -d: -f1)"
    last_sbatch="$(grep -n '^#SBATCH' "$f" | tail -n 1 | cut -d: -f1)"
    if [[ -z "$last_sbatch" || ( -n "$first_cmd" && "$last_sbatch" -gt "$first_cmd" ) ]]; then
      echo "FAIL: $f: #SBATCH lines must precede the first command (line $first_cmd)"; status=1
    fi
  fi
  if command -v shellcheck >/dev/null 2>&1; then shellcheck -S warning "$f" || status=1; fi
done

# Usage errors of the scripts themselves, outside any allocation: exit 2 and
# one line saying what is missing, before rtrace is even looked for.
expect_usage_error() {  # expected text, then the command
  local want="$1" out rc=0
  shift
  out="$(env -u SLURM_JOB_ID -u SLURM_ARRAY_TASK_ID -u SLURM_ARRAY_JOB_ID -u RTRACE_SMS -u RTRACE_POINT \
    RTRACE=/nonexistent/rtrace "$@" 2>&1)" || rc=$?
  if [[ "$rc" -ne 2 || "$out" != *"$want"* ]]; then
    echo "FAIL: $* -> exit $rc, output: $out (expected exit 2 and \`$want\`)"
    status=1
  fi
}
expect_usage_error "usage: sbatch rtrace-gpu-sweep.sbatch" bash "$dir/rtrace-gpu-sweep.sbatch"
expect_usage_error "RTRACE_SMS is not set" bash "$dir/rtrace-gpu-sweep.sbatch" -- /bin/true
expect_usage_error "has 2 nodes (n[1-2]); an SM sweep measures one node's GPU" \
  env SLURM_JOB_NUM_NODES=2 SLURM_JOB_NODELIST='n[1-2]' bash "$dir/rtrace-gpu-sweep.sbatch" -- /bin/true
expect_usage_error "usage: sbatch -N NODES" bash "$dir/rtrace-rank-sweep.sbatch"
expect_usage_error "not an array task" bash "$dir/rtrace-array.sbatch" --sweep threads=1,2 -- /bin/true
expect_usage_error "--merge takes no other arguments" bash "$dir/rtrace-array.sbatch" --merge extra
expect_usage_error "is not a non-negative integer" env RTRACE_POINT=x bash "$dir/rtrace-array.sbatch" -- /bin/true
expect_usage_error "do not pass -o" env RTRACE_POINT=1 bash "$dir/rtrace-array.sbatch" -o x.h5 -- /bin/true

[[ "$status" -eq 0 ]] && echo "slurm scripts: ok"
exit "$status"
