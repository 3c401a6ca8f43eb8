#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite with ctest.
# Extra arguments go to ctest (e.g. scripts/test.sh -L unit).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
rtrace_setup
cd "$RTRACE_BUILD_DIR"
rtrace_log "running the test suite"
ctest --output-on-failure --timeout 900 -j "${RTRACE_TEST_JOBS:-2}" "$@"
