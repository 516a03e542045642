#!/bin/sh
# run_tests.sh — the specs under lua5.4 and again inside the graphmert binary (and under lua5.4
# with OpenBLAS's AVX2 kernels forced, on an AVX-512 CPU), then the skip count and one total line
# "N passed, N failed" (the last line of `make test`, which CI reads).
# Exits 1 on any failure.
LUA=${LUA:-lua5.4}
BUSTED=${BUSTED:-/usr/bin/busted}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
runs=0
# The float32 results must not depend on which of OpenBLAS's kernels runs them: on an AVX-512 CPU
# (where graphmert picks OpenBLAS's SkylakeX kernels) the lua5.4 host runs once more with the
# AVX2 (Haswell) kernels that Debian's OpenBLAS 0.3.21 falls back to on AMD's Zen 4 and 5.
# Elsewhere the first run already has them; an explicit OPENBLAS_CORETYPE is left alone.
for run in default embedded haswell; do
  host=$run forced=
  if [ $run = haswell ]; then
    [ -z "${OPENBLAS_CORETYPE:-}" ] && grep -qw avx512f /proc/cpuinfo 2>/dev/null || continue
    host=default forced=OPENBLAS_CORETYPE=Haswell
  fi
  echo "== specs: $host host${forced:+, $forced}"
  env $forced $LUA "$BUSTED" --run=$host -o scripts/test/summary_output.lua "$@" | tee -a "$log" || status=1
  runs=$((runs + 1))
done
summaries=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$log")
[ "$(echo "$summaries" | grep -c .)" -eq "$runs" ] || status=1
set -- $(echo "$summaries" | awk '{p += $1; f += $3; s += $5} END {print p + 0, f + 0, s + 0}')
passed=$1 failed=$2 skipped=$3
# tee hides busted's exit status, so the counts decide; a host that crashed or printed no
# summary counts as one failure
[ "$failed" -gt 0 ] && status=1
[ $status -ne 0 ] && [ "$failed" -eq 0 ] && failed=1
echo "== total ($runs runs, $skipped skipped)"
echo "$passed passed, $failed failed"
exit $status
