#!/bin/sh
# run_tests.sh — the specs under lua5.4 and again inside the graphmert binary, then one total
# line "N passed, N failed, N skipped" (the last line of `make test`). Exits 1 on any failure.
LUA=${LUA:-lua5.4}
BUSTED=${BUSTED:-/usr/bin/busted}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
for run in default embedded; do
  echo "== specs: $run host"
  $LUA "$BUSTED" --run=$run -o scripts/summary_output.lua "$@" | tee -a "$log" || status=1
done
total=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$log" |
  awk '{p += $1; f += $3; s += $5} END {printf "%d passed, %d failed, %d skipped", p, f, s}')
[ "$(grep -cE '^[0-9]+ passed, [0-9]+ failed' "$log")" -eq 2 ] || status=1
echo "== total (both hosts)"
if [ $status -ne 0 ] && echo "$total" | grep -q ' 0 failed'; then
  # a host crashed or printed no summary: count it as a failure
  total=$(echo "$total" | awk '{printf "%d passed, %d failed, %d skipped", $1, $3 + 1, $5}')
fi
echo "$total"
exit $status
