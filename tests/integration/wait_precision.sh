# The timeout a wait over an engine socket gives the kernel is the one the
# program gave, to the nanosecond: a select of 300 us must not become a
# ppoll of 1 ms.  (It did: the engine rounded up to whole milliseconds,
# and iperf3's UDP client, which paces with select timeouts under 1 ms,
# slept up to 1 ms too long, then caught up in bursts its receiver's
# buffer could not hold: 24% of the datagrams lost against 0.2% on the
# kernel path.)  What is asked of the kernel is read from strace, not
# timed: diff.engine_wait_timeouts's idle waits (select 300 us, ppoll
# 200 us, pselect 150 us) on an armed socket, all answered by the
# engine's own ppoll of the socket's fd and its ring's eventfd; and its
# epoll_pwait2 of 250 us from a thread with no ring, the kernel's
# epoll_pwait2 with what is left of the 250 us (less, never a rounded
# millisecond), and its epoll_wait of 3 ms the kernel's epoll_wait of
# 3 ms (epoll_pwait where the kernel has no epoll_wait: AArch64).  (The owner's own epoll wait sleeps in io_uring_enter,
# whose timespec strace does not show.)
. "$(dirname "$0")/lib.sh"
need strace
scn=$RS_BUILD/tests/scn_engine_wait_timeouts
[ -x "$scn" ] || { echo "skip: $scn not built"; exit 77; }

timeout 60 strace -f -E LD_PRELOAD="$RS_LIB" -o "$TMP/trace" -e trace=ppoll,pselect6,select,epoll_wait,epoll_pwait,epoll_pwait2 \
	"$scn" >"$TMP/out" 2>&1
check "the scenario ran under strace" grep -q "^recv = 4" "$TMP/out"
# The first three such ppolls of the socket and the ring's eventfd, in
# order: select (what is left of 300 us: its time counts from the call's
# start), ppoll, pselect.
set -- $(grep -o "ppoll(\[{fd=[0-9]*, events=POLLIN}, {fd=[0-9]*, events=POLLIN}\], 2, {tv_sec=0, tv_nsec=[0-9]*}" \
	"$TMP/trace" | sed 's/.*tv_nsec=//; s/}//' | head -3)
check "select of 300 us asks the kernel for what is left of 300000 ns (${1:-none})" \
	test "${1:-0}" -gt 0 -a "${1:-0}" -le 300000
check "ppoll of 200 us asks the kernel for 200000 ns (${2:-none})" test "${2:-0}" = 200000
check "pselect of 150 us asks the kernel for 150000 ns (${3:-none})" test "${3:-0}" = 150000
check "an epoll_pwait2 of 250 us asks the kernel's epoll_pwait2 for what is left of it" \
	grep -Eq "epoll_pwait2\([0-9]+, \[\], 2, \{tv_sec=0, tv_nsec=(2[0-4][0-9]{4}|250000|[1-9][0-9]{0,4})\}" "$TMP/trace"
# Its epoll_wait of 3 ms: the kernel's epoll_wait of the program's own
# 3 ms (the clock is read when a wait first sleeps, not before: it was
# an epoll_pwait2 of what was left, a few microseconds short of 3 ms).
check "an epoll_wait of 3 ms asks the kernel's epoll_wait for 3 ms" \
	grep -Eq "epoll_(wait\([0-9]+, \[\], 2, 3\)|pwait\([0-9]+, \[\], 2, 3, NULL, 8\))" "$TMP/trace"
check "no wait asked for a whole millisecond" sh -c '! grep -q "tv_sec=0, tv_nsec=1000000}" "$0"' "$TMP/trace"
finish
