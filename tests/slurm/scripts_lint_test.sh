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
[[ "$status" -eq 0 ]] && echo "slurm scripts: ok"
exit "$status"
