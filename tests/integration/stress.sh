# Data-integrity stress: hundreds of connections with random sizes, split
# points and close timing, checksummed on both ends, with both processes
# under ringsock; with default knobs and with knobs that push the engine
# into its corners: a 16-buffer ring of 1 KiB buffers that may not grow
# (with and without the receive's byte cap), and one that may, with per-operation
# and with coalesced reclaim, 4 KiB frag chunks, one send per submit, a
# 4 KiB held-data bound, the per-socket caches, and a 1 KiB threshold for
# direct reads and writes (bulk-reader mode on most connections).
# Zero mismatches, no hang (every run is bounded).
. "$(dirname "$0")/lib.sh"
RS="$RS_CLI"
ST="$RS_STRESS"

run_case() { # label conns seed [env...]
	local label=$1 conns=$2 seed=$3
	shift 3
	local port
	port=$(free_port)
	env "$@" "$RS" --stats="$TMP/$label.srv" "$ST" server "$port" 2>"$TMP/$label.srv.err" &
	local spid=$!
	wait_port "$port" $spid
	timeout 120 env "$@" "$RS" --stats="$TMP/$label.cli" "$ST" client "$port" "$conns" "$seed" \
		>"$TMP/$label.out" 2>"$TMP/$label.err"
	local rc=$?
	kill -TERM $spid
	wait $spid
	local src=$?
	echo "  $label: $(cat "$TMP/$label.out")"
	check "$label: client verified every echo (exit $rc)" test $rc = 0
	check "$label: server stopped cleanly (exit $src)" test $src = 0
	check "$label: some connections verified" grep -q "verified=[1-9]" "$TMP/$label.out"
	case $label in
	fault-setup) # rings refused: those sockets go to the kernel, and say so
		check "$label: sockets passed through as no_io_uring" \
			test "$(stat_sum "$TMP/$label.srv" no_io_uring)" -ge 1 ;;
	*)
		check "$label: server sockets on the engine" test "$(stat_sum "$TMP/$label.srv" accelerated)" -ge $((conns / 2))
		check "$label: client sockets on the engine" test "$(stat_sum "$TMP/$label.cli" accelerated)" -ge $((conns / 2)) ;;
	esac
	check "$label: no warning from the library" sh -c '! grep -q "ringsock.*warning" "$0" "$1"' \
		"$TMP/$label.err" "$TMP/$label.srv.err"
	case $label in
	fault-*)
		check "$label: faults were injected" sh -c 'grep -h "faults: " "$0" "$1" | grep -q "injected=[1-9]"' \
			"$TMP/$label.err" "$TMP/$label.srv.err" ;;
	esac
}

run_case defaults 300 1
# (no byte cap on the receive: the ring must run dry, so that sockets
# wait for buffers reading through the kernel)
# (a ring that may not grow: RINGSOCK_BUF_COUNT_MAX at the same 16)
run_case corners 300 2 RINGSOCK_BUF_COUNT=16 RINGSOCK_BUF_COUNT_MAX=16 RINGSOCK_BUF_SIZE=1024 RINGSOCK_RECLAIM=per-op \
	RINGSOCK_HIGH_ORDER_ALLOC_DISABLE=1 RINGSOCK_SEND_BATCH=1 RINGSOCK_RCVBUF_LIMIT=4096 \
	RINGSOCK_FEATURES_DISABLE=recv_cap
# (in either process: with receive bundles, 6.10+, one pass takes every
# byte waiting, and the echo server's ring runs dry in some runs only;
# the client's, whose sockets all receive at once, in thousands of places
# every run)
check "corners: the buffer ring ran dry and recovered" \
	test "$(($(stat_sum "$TMP/corners.srv" enobufs) + $(stat_sum "$TMP/corners.cli" enobufs)))" -gt 0
check "corners: a ring held at its maximum never grew" test "$(stat_sum "$TMP/corners.srv" buf_grows)" = 0
check "corners: per-op reclaim gave send chunks back as they fell free" \
	test "$(($(stat_sum "$TMP/corners.srv" reclaim_returns) + $(stat_sum "$TMP/corners.cli" reclaim_returns)))" -gt 0
# The same demand with room to grow: 16 buffers double to at most 256.
run_case grows 300 2 RINGSOCK_BUF_COUNT=16 RINGSOCK_BUF_COUNT_MAX=256 RINGSOCK_BUF_SIZE=1024 \
	RINGSOCK_RCVBUF_LIMIT=4096 RINGSOCK_FEATURES_DISABLE=recv_cap
check "grows: the receive buffers grew with demand" \
	test "$(($(stat_sum "$TMP/grows.srv" buf_grows) + $(stat_sum "$TMP/grows.cli" buf_grows)))" -ge 1
check "grows: at most four doublings (16 to 256) per ring" test "$(stat_sum "$TMP/grows.srv" buf_grows)" -le \
	"$((4 * $(stat_sum "$TMP/grows.srv" rings)))"
run_case capped 300 3 RINGSOCK_BUF_COUNT=16 RINGSOCK_BUF_COUNT_MAX=16 RINGSOCK_BUF_SIZE=1024 RINGSOCK_RCVBUF_LIMIT=4096 \
	RINGSOCK_SEND_BATCH=1
run_case caches 300 4 RINGSOCK_BUF_COUNT=16 RINGSOCK_BUF_COUNT_MAX=16 RINGSOCK_BUF_SIZE=1024 RINGSOCK_RCVBUF_LIMIT=4096 \
	RINGSOCK_SEND_BATCH=1 RINGSOCK_RX_CACHE=1 RINGSOCK_TX_CACHE=1
run_case direct 200 5 RINGSOCK_DIRECT_THRESHOLD=1024 RINGSOCK_LINEAR_FIRST=0 \
	RINGSOCK_RECLAIM_THRESHOLD=0 RINGSOCK_RECLAIM_CHUNK=4096
check "direct: large calls went straight to the kernel" test "$(stat_sum "$TMP/direct.srv" direct)" -gt 0
# Zero-copy sends (tcp_send.c, ring.c): every batch of queued bytes, of any
# size, on loopback (where the route would never choose it); the chunks
# stay held until the kernel's notification.
run_case zerocopy 300 7 RINGSOCK_ZEROCOPY=always RINGSOCK_ZEROCOPY_MIN=1 RINGSOCK_LINEAR_FIRST=0 \
	RINGSOCK_DIRECT_THRESHOLD=0 RINGSOCK_HIGH_ORDER_ALLOC_DISABLE=1
check "zerocopy: batches were sent zero-copy" \
	test "$(($(stat_sum "$TMP/zerocopy.srv" zc_sends) + $(stat_sum "$TMP/zerocopy.cli" zc_sends)))" -gt 100
# Fault injection (faults.c, preloaded in front of the library): each
# failure the engine handles, at both ends, with no byte lost and no hang.
# setup: every ring refused (the kernel serves every socket); enter: every 7th io_uring_enter
# refused (EEXIST); short_send: every 3rd send takes 7 bytes; cancel: every
# second receive cancelled as soon as armed (ECANCELED); buf_hold: every
# second return of buffers held back (ENOBUFS storms); no_sqe: every 5th
# SQE refused (a full submission queue); rx_nomem: every second growth of a
# socket's receive queue fails (out of memory: the ring's overflow slots
# take the data); stale: IORING_SQ_TASKRUN taken for stuck whenever set;
# stuck: IORING_SQ_TASKRUN read as set always, as the kernel has been seen
# to leave it (an epoll wait that armed its poll of a readable set each
# round, its completion taken for work, spun at 80% of a core).
for f in setup:1 enter:7 short_send:3 cancel:2 buf_hold:2 no_sqe:5 rx_nomem:2 stale:1 stuck:1; do
	run_case "fault-${f%%:*}" 150 6 LD_PRELOAD="$RS_FAULTS" RS_FAULT="$f" \
		RINGSOCK_BUF_COUNT=64 RINGSOCK_ARM_AFTER=0
done
# An epoll wait in the ring with a readable pipe in its set, the flag read
# as set always (tests/diff/scenarios/engine_epoll_pipe.c): the transcript
# of the kernel path, where a spin once kept the wait from returning.
scn=$RS_SCN_DIR/scn_engine_epoll_pipe
timeout 60 "$scn" >"$TMP/pipe.plain" 2>&1
RS_FAULT=stuck:1 LD_PRELOAD="$RS_FAULTS:$RS_LIB" RINGSOCK_ARM_AFTER=0 timeout 60 "$scn" >"$TMP/pipe.stuck" 2>"$TMP/pipe.stuck.err"
check "fault-stuck: an epoll wait with a readable pipe returns, as plain ($(tail -1 "$TMP/pipe.stuck"))" \
	cmp -s "$TMP/pipe.plain" "$TMP/pipe.stuck"
check "fault-stuck: the fault was injected ($(tail -1 "$TMP/pipe.stuck.err"))" grep -q "injected=[1-9]" "$TMP/pipe.stuck.err"
# A timer's handler that sends, run while the thread makes its first ring
# (tests/diff/scenarios/engine_setup_signal.c; faults.c setup_signal
# raises SIGALRM inside the making): the handler's call passes straight to
# the C library; it once waited for the making to end, on the thread that
# was making it (a hang).
scn=$RS_SCN_DIR/scn_engine_setup_signal
timeout -k 5 60 "$scn" >"$TMP/setup_signal.plain" 2>&1
RS_FAULT=setup_signal:1 LD_PRELOAD="$RS_FAULTS:$RS_LIB" RINGSOCK_ARM_AFTER=0 timeout -k 5 60 "$scn" \
	>"$TMP/setup_signal.fault" 2>"$TMP/setup_signal.err"
check "fault-setup_signal: a handler's send during a ring's making, as plain ($(tail -1 "$TMP/setup_signal.fault"))" \
	cmp -s "$TMP/setup_signal.plain" "$TMP/setup_signal.fault"
check "fault-setup_signal: the signal was raised there ($(tail -1 "$TMP/setup_signal.err"))" \
	grep -q "injected=[1-9]" "$TMP/setup_signal.err"
# Queued sends and a thread that blocks where the library cannot see.
# no_drain: the drain thread cannot start, so nothing may be queued, and a
# thread that sends and then waits in pthread_join for a thread that waits
# for those bytes (engine_blocked_join, and _udp for a datagram) must not
# hang.  watchdog: the drain thread's watchdog sends nothing, so only the
# sends' own rules keep bytes from waiting for ever: a signal handler's send, made during the kernel's
# own blocking recv that SA_RESTART resumes, leaves at once (TCP and UDP).
for c in engine_blocked_join:no_drain:1 engine_blocked_join_udp:no_drain:1 engine_handler_send:watchdog:1 engine_handler_sendto:watchdog:1; do
	name=${c%%:*} f=${c#*:}
	scn=$RS_SCN_DIR/scn_$name
	timeout -k 5 60 "$scn" >"$TMP/$name.plain" 2>&1
	RS_FAULT=$f LD_PRELOAD="$RS_FAULTS:$RS_LIB" timeout -k 5 60 "$scn" >"$TMP/$name.fault" 2>"$TMP/$name.err"
	check "fault-${f%%:*}: $name, as plain ($(tail -1 "$TMP/$name.fault"))" cmp -s "$TMP/$name.plain" "$TMP/$name.fault"
done
check "fault-no_drain: the drain thread was refused ($(tail -1 "$TMP/engine_blocked_join.err"))" \
	grep -q "injected=[1-9]" "$TMP/engine_blocked_join.err"
check "fault-rx_nomem: received data went through the overflow slots" \
	test "$(($(stat_sum "$TMP/fault-rx_nomem.srv" rx_overflows) + $(stat_sum "$TMP/fault-rx_nomem.cli" rx_overflows)))" -gt 0
finish
