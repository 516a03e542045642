#!/bin/sh
# run_tests.sh — the specs under lua5.4 and again inside the graphmert binary, then the skip
# count and one total line "N passed, N failed" (the last line of `make test`, which CI reads).
# Exits 1 on any failure.
LUA=${LUA:-lua5.4}
BUSTED=${BUSTED:-/usr/bin/busted}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
for run in default embedded; do
  echo "== specs: $run host"
  $LUA "$BUSTED" --run=$run -o scripts/summary_output.lua "$@" | tee -a "$log" || status=1
done
summaries=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$log")
[ "$(echo "$summaries" | grep -c .)" -eq 2 ] || status=1
set -- $(echo "$summaries" | awk '{p += $1; f += $3; s += $5} END {print p + 0, f + 0, s + 0}')
passed=$1 failed=$2 skipped=$3
# tee hides busted's exit status, so the counts decide; a host that crashed or printed no
# summary counts as one failure
[ "$failed" -gt 0 ] && status=1
[ $status -ne 0 ] && [ "$failed" -eq 0 ] && failed=1
echo "== total (both hosts, $skipped skipped)"
echo "$passed passed, $failed failed"
exit $status
