#!/bin/sh
# run.sh — runs fuzz targets (fuzz_lua's Lua targets, or build/fuzz/fuzz_<target> for a target with a
# harness of its own) from their committed seed corpora (scripts/fuzz/corpus/<target>),
# keeping new finds in build/fuzz/corpus/<target>; prints executions per target and fails on the
# first crash (libFuzzer leaves the input as build/fuzz/crash-*).
#   scripts/fuzz/run.sh SECONDS target...
# FUZZ_RUNS=N stops each target after N executions instead (SECONDS still caps it); FUZZ_TIMEOUT
# (seconds, default 20) is the longest one input may take before it counts as a hang.
seconds=$1
shift
status=0
for t in "$@"; do
  mkdir -p build/fuzz/corpus/$t
  log=build/fuzz/$t.log
  fuzzer=./build/fuzz/fuzz_lua # the Lua-level targets; a target with its own harness has fuzz_<target>
  [ -x ./build/fuzz/fuzz_$t ] && fuzzer=./build/fuzz/fuzz_$t
  max_len=4096
  [ "$t" = from_pretrained ] && max_len=16384 # a folder's config.json and weights
  GM_FUZZ_TARGET=$t ASAN_OPTIONS=detect_leaks=0 $fuzzer -max_total_time="$seconds" -runs="${FUZZ_RUNS:--1}" \
    -max_len=$max_len -print_final_stats=1 -artifact_prefix=build/fuzz/ -timeout="${FUZZ_TIMEOUT:-20}" \
    build/fuzz/corpus/$t scripts/fuzz/corpus/$t >"$log" 2>&1
  rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  if [ $rc -ne 0 ]; then
    echo "fuzz $t: FAILED after ${runs:-?} executions (rc $rc):"
    grep -E 'ERROR|SUMMARY|==[0-9]+==' "$log" | head -20
    status=1
  else
    echo "fuzz $t: ${runs} executions, 0 crashes, 0 inputs over ${FUZZ_TIMEOUT:-20} s"
  fi
done
exit $status
