#!/bin/bash
# Issue 39's known answers for code without FLOPs, on a real run that holds
# on any machine: an integer hash-probe app (apps/probe_tables.c) swept over
# threads=1,2 with the counting pass (a fixed, small simulated hierarchy:
# the counts are the simulation's, the same everywhere) and sampling.
#   weak    each thread probes its own table PROBES times: the counted
#           instructions double with the threads, so the run is found to be
#           weak scaling and said so, never "work-changed".
#   strong  the probes split over the threads, each table outgrows its share
#           of the simulated L3 at 2 threads: the probing code has a place in
#           the report (bytes per instruction, no FLOPs), its DRAM bytes per
#           instruction rise, and every step's account adds up: its causes'
#           seconds are the seconds lost.
# What the timed run makes of it (how much the step loses, and to what)
# depends on the machine's caches, so no verdict is asserted here; the
# verdicts' rules have their known answers in counts_test.cpp.
#   flopless_test.sh RTRACE PROBE_APP DIR
set -u
RTRACE=$1 APP=$2 DIR=$3
rm -rf "$DIR" && mkdir -p "$DIR" && cd "$DIR" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
PY=/usr/bin/python3
export RTRACE_COUNTS_GEOMETRY="L1=8K,8,64;L2=64K,8,64;L3=1M,16,64"
TABLE_MIB=1   # 1 MiB per thread: the whole 1 MiB L3 at 1 thread; 2 MiB on it at 2

sweep() {  # sweep NAME MODE PROBES
  "$RTRACE" run --sweep threads=1,2 --ert none --counts sim --sample 500 --quiet -o "$1.h5" -- \
    "$APP" "$2" "$TABLE_MIB" "$3" 2> "$1-run.txt" || fail "rtrace run ($1): $(cat "$1-run.txt")"
  "$RTRACE" analyze "$1.h5" --json "$1.json" --csv "$1-csv" --html "$1.html" > "$1.txt" 2> "$1-analyze.txt" ||
    fail "rtrace analyze ($1): $(cat "$1-analyze.txt")"
}

sweep weak weak 1000000
grep -q "Weak scaling found: the counted instructions grow with threads" weak.txt ||
  fail "weak scaling not found from the counted instructions: $(cat weak.txt)"
grep -q "work-changed" weak.txt && fail "work-changed under weak scaling: $(cat weak.txt)"
$PY - weak.json <<'PYEOF' || fail "weak JSON: $(cat weak.txt)"
import json, sys
a = json.load(open(sys.argv[1]))
assert a["scaling"] == "weak", a["scaling"]
assert a["summary"][0]["weak_found"].startswith("the counted instructions grow with threads"), a["summary"][0]
PYEOF

sweep strong strong 2000000
grep -q "Weak scaling found" strong.txt && fail "strong scaling taken for weak: $(cat strong.txt)"
$PY - strong.json <<'PYEOF' || fail "strong JSON: $(cat strong.txt)"
import json, sys
a = json.load(open(sys.argv[1]))
assert a["scaling"] == "strong", a["scaling"]
fns = [k for k in a["kernels"] if k["kind"] == "function"]
# The probing code (main's OpenMP region, or the probe function where not inlined) has counts and no FLOPs.
probe = [k for k in fns if "OpenMP" in k["name"] or k["name"].startswith("probe")]
assert probe, [k["name"] for k in fns]
def dram_per_instruction(k, i):
    p = k["points"][i]
    return p["bytes_per_instruction"]["DRAM"]["value"]
k = probe[0]
rise = dram_per_instruction(k, 1) / dram_per_instruction(k, 0)
assert rise >= 1.25, ("DRAM bytes per instruction rise only", rise, k["points"])
# The account adds up: each step's causes are the seconds its functions (and the unsampled time) lost.
for acc in a["summary"][0]["accounts"]:
    named = sum(c["seconds"] for c in acc["causes"])
    assert abs(named - acc["gross_lost"]) <= 1e-9 + 1e-6 * abs(acc["gross_lost"]), acc
    assert all(c["seconds"] > 0 for c in acc["causes"]), acc
    assert abs(sum(c["share"] for c in acc["causes"]) - 1) < 1e-6 or not acc["causes"], acc
PYEOF
# The same account in the CSV as in the JSON and the text (one model, every printer).
[ "$(wc -l < strong-csv/accounts.csv)" -ge 2 ] || fail "no account rows in accounts.csv"
# The sentence is said where the step loses more than the ideal tolerance (machine-dependent).
if $PY -c 'import json,sys; a=json.load(open(sys.argv[1])); sys.exit(0 if any(x["lost"] > 0.1 * x["t2"] for x in a["summary"][0]["accounts"]) else 1)' strong.json; then
  grep -q "Lost time at threads 1->2" strong.txt || fail "no account sentence in the text: $(cat strong.txt)"
  grep -q "Lost time at threads 1-&gt;2" strong.html || fail "no account sentence in the HTML"
fi
echo "analysis_flopless: ok"
