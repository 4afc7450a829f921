# The engine's own descriptor (the RINGSOCK_STATS file, opened at start)
# survives a program that closes, dup2s over and close_ranges every fd.
. "$(dirname "$0")/lib.sh"
out=$(RINGSOCK_STATS="$TMP/report" LD_PRELOAD="$RS_LIB" "$RS_FDSTORM")
check "fdstorm ran" sh -c 'echo "$0" | grep -q "new socket ok"' "$out"
check "report written after every fd was closed" grep -q "stats version=" "$TMP/report"
check "report counts the sockets" test "$(stat_sum "$TMP/report" tracked)" -ge 2
check "the program's closes on our fd were refused, not done" test "$(stat_sum "$TMP/report" close)" -ge 1
# Also in pass-through mode: the report file is still the library's.
rm -f "$TMP/report"
out2=$(RINGSOCK_DISABLE=1 RINGSOCK_STATS="$TMP/report" LD_PRELOAD="$RS_LIB" "$RS_FDSTORM")
check "RINGSOCK_DISABLE=1: report still written after every fd was closed" grep -q "stats version=" "$TMP/report"
# Plain run for comparison: same output.
plain=$("$RS_FDSTORM")
check "same output as without the library" test "$out" = "$plain"
check "same output as without the library (pass-through)" test "$out2" = "$plain"
finish
