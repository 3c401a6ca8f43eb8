#!/bin/sh
# usage: ranks_test.sh RTRACE
# `rtrace ert --ranks 2` under `mpirun --bind-to none` (how `rtrace run` starts
# a rank partition's ERT): the two ranks run on different CPUs, not both on CPU 0.
set -u
rtrace=$1
dir=$(mktemp -d)
# The machine's reference (issue 32) lives in the rtrace cache: this test's own.
export RTRACE_CACHE_DIR="$dir/cache"
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
command -v h5dump >/dev/null || { echo "SKIP: no h5dump"; exit 77; }
[ "$(nproc)" -ge 2 ] || { echo "SKIP: one CPU"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun -np 2 --bind-to none "$rtrace" ert --ranks 2 --threads 1 --quick --precision fp64 -o "$dir/r2.h5" --quiet ||
  fail "2-rank quick run exited $?"
cpus=$(h5dump -a /ert/rank_cpus "$dir/r2.h5" | sed -n 's/.*(0): "\(.*\)".*/\1/p')
echo "rank_cpus: $cpus"
first=${cpus%%,*}
second=${cpus#*,}
[ -n "$first" ] && [ -n "$second" ] && [ "$first" != "$cpus" ] || fail "rank_cpus not recorded: '$cpus'"
[ "$first" != "$second" ] || fail "both ranks ran on CPU $first"

# --per-node: each node measures its own ranks; here both ranks share one
# node, so one node's rows (named by its host) and the ceilings equal them.
mpirun -np 2 --bind-to none "$rtrace" ert --ranks 2 --threads 1 --quick --precision fp64 --per-node \
  -o "$dir/r2n.h5" --quiet || fail "2-rank --per-node run exited $?"
host=$(hostname -s 2>/dev/null || hostname)
h5dump -d /ert/node_ceilings "$dir/r2n.h5" | grep -q "\"$host\"" || fail "/ert/node_ceilings lacks host $host"
nodes=$(h5dump -a /ert/nodes "$dir/r2n.h5" | sed -n 's/.*(0): \([0-9.]*\).*/\1/p')
[ "$nodes" = "1" ] || fail "/ert nodes attribute is '$nodes', expected 1"
echo PASS
