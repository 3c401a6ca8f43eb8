#!/bin/bash
# End to end: rtrace-synth demo runs -> rtrace analyze table/JSON/CSV/SVG/HTML/--write/--pp; bad inputs exit 2.
set -u
RTRACE=$1 SYNTH=$2 DIR=$3
rm -rf "$DIR" && mkdir -p "$DIR" && cd "$DIR" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
"$SYNTH" cpu-demo -o cpu.h5 || fail "synth cpu-demo"
"$SYNTH" gpu-demo -o gpu.h5 || fail "synth gpu-demo"
"$RTRACE" analyze cpu.h5 --json cpu.json --csv csv --svg svg --html cpu.html --write > table.txt || fail "analyze cpu"
grep -q "cache:L3" table.txt || fail "no cache-capacity at L3 (DRAM AI falls) in the table"
grep -q "bw:DRAM" table.txt || fail "no bandwidth contention in the table"
awk 'length > 100 { bad = 1 } END { exit bad }' table.txt || fail "table wider than 100 columns"
for f in cpu.json csv/points.csv csv/steps.csv csv/summary.csv cpu.html; do [ -s "$f" ] || fail "missing $f"; done
ls svg/roofline-c000.svg svg/scaling-1.svg svg/trajectory-*.svg > /dev/null || fail "missing SVGs"
grep -q "<svg" cpu.html || fail "HTML without inline SVG"
grep -Eq 'src="http|href="http' cpu.html && fail "HTML references external resources"
"$RTRACE" analyze gpu.h5 --json gpu.json --svg gsvg -q || fail "analyze gpu"
ls gsvg/instruction-c000.svg > /dev/null || fail "no instruction roofline"
grep -q '"tail-effect"\|"launch-overhead"' gpu.json || fail "gpu causes missing"
"$RTRACE" analyze --pp cpu.h5 cpu.h5 --json pp.json > pp.txt || fail "--pp"
grep -q "Phi" pp.txt || fail "no Phi table"
# Bad inputs: exit 2 and one line.
check_bad() {
  "$RTRACE" analyze "$@" > out.txt 2> err.txt
  rc=$?
  [ $rc -eq 2 ] || fail "analyze $* exited $rc, expected 2"
  [ "$(wc -l < err.txt)" -eq 1 ] || fail "analyze $*: expected one error line, got: $(cat err.txt)"
}
check_bad missing.h5
echo "not hdf5" > text.h5
check_bad text.h5
check_bad cpu.h5 --axis bogus
check_bad cpu.h5 --ai-drop 7
check_bad --pp cpu.h5
check_bad --pp cpu.h5 gpu.h5   # no kernel in common: one line, exit 2
# Two runs side by side per configuration.
"$RTRACE" analyze cpu.h5 cpu.h5 --json cmp.json > cmp.txt || fail "compare two runs"
grep -q "side by side" cmp.txt || fail "no comparison table"
grep -q '"kind": "comparison"' cmp.json || fail "comparison JSON kind"
grep -q '"load_balance"' cpu.json || fail "no POP keys in the JSON"
[ -s csv/pop.csv ] && [ -s csv/mpi_calls.csv ] || fail "pop.csv / mpi_calls.csv missing"
ls svg/efficiency-1.svg > /dev/null || fail "no efficiency chart"
check_bad
# Issue 25: no output option may replace the input, any HDF5 file or a run's
# points directory: one line, exit 2, the file untouched.
cp cpu.h5 other.h5
cksum cpu.h5 other.h5 > sums.before
ln -f cpu.h5 hardlink.h5
printf '\x89HDF\r\n\x1a\n' > renamed.html   # an HDF5 signature under any name
ls cpu.h5.d/p000000.h5 > /dev/null || fail "synth wrote no points directory"
for args in "--html cpu.h5" "--html other.h5" "--json cpu.h5" "--json other.h5" "--html hardlink.h5" \
            "--html renamed.html" "--json cpu.h5.d/p000000.h5" "--svg cpu.h5.d" "--csv cpu.h5.d" \
            "--folded cpu.h5.d" "--svg cpu.h5" "--csv other.h5"; do
  check_bad cpu.h5 $args
  grep -q -- "${args%% *}" err.txt || fail "analyze cpu.h5 $args: the error does not name the option: $(cat err.txt)"
done
check_bad cpu.h5 cpu.h5 --json other.h5      # side by side
check_bad --pp cpu.h5 cpu.h5 --json cpu.h5   # portability
cksum cpu.h5 other.h5 | cmp -s - sums.before || fail "an output option changed a run file"
ls cpu.h5.d | grep -qv '^p[0-9]*\.h5$' && fail "an output option wrote into the points directory"
[ "$(head -c 4 renamed.html | od -An -c | tr -d ' ')" = '211HDF' ] || fail "renamed.html was overwritten"
"$RTRACE" validate cpu.h5 > /dev/null || fail "cpu.h5 no longer validates"
echo "analysis_cli_demo: ok"
