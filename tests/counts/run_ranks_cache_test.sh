#!/bin/bash
# A ranks sweep of a pure-MPI app (no threads axis, no OMP_NUM_THREADS) with
# `rtrace run --counts sim`: at ranks=1 the only rank has the whole L3 (the
# counting run planned for cores / ranks threads and used to give the rank a
# per-thread slice: half the L3 of a 2-core machine, and a triad that fits the
# L3 read DRAM again at every repetition: a fake capacity gain at 2 ranks).
#   A triad of 3 x 60000 doubles (1.4 MB) on a simulated 2 MiB L3, 10 times:
#   - ranks=1: count_levels L3 is the whole 2 MiB, the threads per rank are
#     recorded as assumed, and triad_slice's DRAM bytes are those of
#     `rtrace counts --threads 1` on the same binary;
#   - ranks=2: each rank has half the L3 and half the data; the ranks' DRAM
#     bytes add up to the 1-rank run's (both fit: no capacity change).
#   run_ranks_cache_test.sh RTRACE MPI_SLICES_APP DIR
set -u
RTRACE=$1 MPI_APP=$2 DIR=$3
rm -rf "$DIR" && mkdir -p "$DIR" && cd "$DIR" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
export RTRACE_COUNTS_GEOMETRY="L1=4K,4,64;L2=32K,8,64;L3=2M,8,64"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset OMP_NUM_THREADS

"$RTRACE" run --sweep ranks=1,2 --ert none --counts sim --quiet -o run.h5 -- "$MPI_APP" 60000 10 \
  2> run.txt || fail "rtrace run --counts sim: $(cat run.txt)"
"$RTRACE" counts --quiet --threads 1 -o alone.h5 -- "$MPI_APP" 60000 10 2> alone.txt ||
  fail "rtrace counts --threads 1: $(cat alone.txt)"

/usr/bin/python3 - run.h5 alone.h5 <<'EOF' || fail "the ranks' L3 and DRAM bytes"
import glob, h5py, sys

def rank_counts(r):
    names = [n.decode() if isinstance(n, bytes) else n for n in r["names"][()]]
    dram = sum(float(row["bytes_dram_read"] + row["bytes_dram_write"]) for row in r["counts"][()]
               if names[row["function_id"]] == "triad_slice")
    l3 = {l["name"].decode(): l for l in r["count_levels"][()]}["L3"]
    return dram, l3, r["counts_info"][()][0]

per_point = {}
for path in sorted(glob.glob(sys.argv[1] + ".d/*.h5")):
    with h5py.File(path, "r") as f:
        for p in f["points"].values():
            per_point[len(p["ranks"])] = [rank_counts(r) for r in p["ranks"].values()]
with h5py.File(sys.argv[2], "r") as f:
    alone, alone_l3, _ = rank_counts(f["ranks"]["r000000"])
assert sorted(per_point) == [1, 2], per_point.keys()
(one, l3, info), = per_point[1]
print("ranks=1: triad_slice DRAM %.0f B, L3 %d of %d B (threads %d, assumed %d); alone: %.0f B" %
      (one, l3["size_bytes"], l3["full_size_bytes"], info["cache_threads"], info["cache_threads_assumed"], alone))
assert l3["size_bytes"] == l3["full_size_bytes"] == 2 << 20, l3
assert info["cache_threads_assumed"] == 1, info
assert alone_l3["size_bytes"] == 2 << 20, alone_l3
assert 0.98 * alone <= one <= 1.02 * alone, (one, alone)
assert one < 2 * 3 * 60000 * 8, one            # read once, not at every repetition
two = [c for c in per_point[2]]
for dram, l3, info in two:
    assert l3["size_bytes"] == 1 << 20, l3       # two ranks: half each
print("ranks=2: triad_slice DRAM %s B" % [round(d) for d, _, _ in two])
assert abs(sum(d for d, _, _ in two) / one - 1) < 0.1, ([d for d, _, _ in two], one)
EOF
echo "run_ranks_cache: ok"
