#!/bin/bash
# The libpfm4 installed encodes the recorded table of one CPU model exactly.
set -u
TOOL=$1 TABLE=$2 PMU=$3
out=$(LIBPFM_FORCE_PMU=$PMU "$TOOL") || { echo "FAIL: pmu_table for $PMU: $out"; exit 1; }
if ! diff <(echo "$out") "$TABLE"; then
  echo "FAIL: libpfm4 encodes $PMU differently from $TABLE (regenerate: LIBPFM_FORCE_PMU=$PMU $TOOL > $TABLE)"
  exit 1
fi
echo "tracer_pmu_table_$PMU: ok"
