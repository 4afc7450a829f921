# The timeout a wait over an engine socket gives the kernel is the one the
# program gave, to the nanosecond: a select of 300 us must not become a
# ppoll of 1 ms.  (It did: the engine rounded up to whole milliseconds,
# and iperf3's UDP client, which paces with select timeouts under 1 ms,
# slept up to 1 ms too long, then caught up in bursts its receiver's
# buffer could not hold: 24% of the datagrams lost against 0.2% on the
# kernel path.)  What is asked of the kernel is read from strace, not
# timed: diff.engine_wait_timeouts's idle waits (select 300 us, ppoll
# 200 us, pselect 150 us) on an armed socket, all answered by the
# engine's own ppoll of the socket's fd and its ring's eventfd.
. "$(dirname "$0")/lib.sh"
need strace
scn=$RS_BUILD/tests/scn_engine_wait_timeouts
[ -x "$scn" ] || { echo "skip: $scn not built"; exit 77; }

LD_PRELOAD="$RS_LIB" timeout 60 strace -f -o "$TMP/trace" -e trace=ppoll,pselect6,select "$scn" >"$TMP/out" 2>&1
check "the scenario ran under strace" grep -q "^recv = 4" "$TMP/out"
for ns in 300000 200000 150000; do
	check "an idle wait of $ns ns asks the kernel for $ns ns" \
		grep -q "ppoll(\[{fd=[0-9]*, events=POLLIN}, {fd=[0-9]*, events=POLLIN}\], 2, {tv_sec=0, tv_nsec=$ns}" "$TMP/trace"
done
check "no wait asked for a whole millisecond" sh -c '! grep -q "tv_sec=0, tv_nsec=1000000}" "$0"' "$TMP/trace"
finish
