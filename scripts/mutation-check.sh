#!/usr/bin/env bash
# Mutation check: applies each realistic bug of tests/mutations/*.mut to a
# scratch copy, rebuilds what it touches, runs the tests that must catch it and
# reports killed/survived. Exit 0 only when every mutation is killed.
#   scripts/mutation-check.sh [--rotate K] [--list] [NAME...]
# Details: scripts/mutation_check.py (--help), docs/reliability.md.
set -euo pipefail
exec python3 "$(dirname "${BASH_SOURCE[0]}")/mutation_check.py" "$@"
