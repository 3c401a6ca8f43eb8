#!/bin/bash
# End to end with counted operations (run-file schema 1.7 count tables): an
# unannotated OpenMP app's synthetic swept run -> `rtrace validate` accepts it,
# `rtrace analyze` prints the application's and its top functions' counted
# trajectories with AI per level, a named roofline diagnosis and the counts'
# source, in the table, the JSON, the HTML and the roofline SVGs.
set -u
RTRACE=$1 SYNTH=$2 DIR=$3
rm -rf "$DIR" && mkdir -p "$DIR" && cd "$DIR" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
"$SYNTH" counts-demo -o counts.h5 || fail "synth counts-demo"
"$RTRACE" validate counts.h5 > validate.txt || fail "validate rejects the count tables: $(cat validate.txt)"
grep -Eq "schema 1\.[0-9]+\.[0-9]+" validate.txt || fail "validate: $(cat validate.txt)"
"$RTRACE" analyze counts.h5 --json counts.json --svg svg --html counts.html > table.txt || fail "analyze"
grep -q "application (whole program, counted)" table.txt || fail "no application trajectory"
grep -q "counts: sim:rtrace-count 0.1.0 valgrind-3.19.0" table.txt || fail "no counts source in the table"
grep -q "AI L1d   AI L2   AI L3 AI DRAM" table.txt || fail "no AI per level"
grep -q "threads 2->4: cache-capacity at L3 (DRAM AI falls)" table.txt || fail "no cache-capacity at L3"
grep -q "function triad (OpenMP region) (counted)" table.txt || fail "no counted function"
grep -q "bandwidth-contention on DRAM" table.txt || fail "no bandwidth contention"
grep -q "Counted roofline (sim:" table.txt || fail "no counted-roofline sentence"
grep -q "whole-application diagnosis only" table.txt && fail "the no-counts message with counts present"
awk 'length > 100 { bad = 1 } END { exit bad }' table.txt || fail "table wider than 100 columns"
grep -q '"counts_source": "sim:rtrace-count' counts.json || fail "no counts_source in the JSON"
grep -q '"kind": "application"' counts.json || fail "no application kernel in the JSON"
grep -q '"schema_version": "1.7.0"' counts.json || fail "analysis schema version"
grep -q "sim:rtrace-count" counts.html || fail "no counts source in the HTML"
grep -q ">application<" svg/roofline-c000.svg || fail "the application is not on the roofline chart"
ls svg/trajectory-001-application.svg > /dev/null || fail "no application trajectory chart"
echo "analysis_cli_counts: ok"
