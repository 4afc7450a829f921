# When the engine takes a new nonblocking socket on (RINGSOCK_ARM_AFTER):
# not at EPOLL_CTL_ADD (an idle connection holds no engine state); its
# first ARM_AFTER reads go to the kernel, the ones after are answered from
# the engine's queue; with ARM_AFTER=0, every read is the engine's.  Until
# the last of those reads or its second send (the server answers each
# request), the socket has no engine state: its calls are the kernel's.
. "$(dirname "$0")/lib.sh"
run() { env "$@" LD_PRELOAD="$RS_LIB" "$RS_ARMING" ${ROUNDS:-8} ${ROUNDS:+toggle}; }
line() { echo "$1" | grep "^$2" | head -1; }

out=$(run)
check "default: client served" test "$(line "$out" client)" = "client ok"
check "default: not served by the engine after epoll_ctl alone" test "$(line "$out" registered)" = "registered: accelerated 0"
for i in 1 2; do
	check "default: read $i the kernel's, no engine state yet" test "$(line "$out" "read $i:")" = "read $i: passthrough, accelerated 0"
done
for i in 3 4; do
	check "default: read $i from the kernel, served since the second send" test "$(line "$out" "read $i:")" = "read $i: kernel, accelerated 1"
done
for i in 5 6 7 8; do
	check "default: read $i from the engine's queue" test "$(line "$out" "read $i:")" = "read $i: engine, accelerated 1"
done

out=$(run RINGSOCK_ARM_AFTER=2)
check "ARM_AFTER=2: read 1 the kernel's, no engine state yet" test "$(line "$out" "read 1:")" = "read 1: passthrough, accelerated 0"
check "ARM_AFTER=2: read 2 from the kernel, served from it on" test "$(line "$out" "read 2:")" = "read 2: kernel, accelerated 1"
check "ARM_AFTER=2: read 3 from the engine's queue" test "$(line "$out" "read 3:")" = "read 3: engine, accelerated 1"

out=$(run RINGSOCK_ARM_AFTER=0)
check "ARM_AFTER=0: client served" test "$(line "$out" client)" = "client ok"
check "ARM_AFTER=0: served by the engine from epoll_ctl on" test "$(line "$out" registered)" = "registered: accelerated 1"
for i in 1 8; do
	check "ARM_AFTER=0: read $i from the engine's queue" test "$(line "$out" "read $i:")" = "read $i: engine, accelerated 1"
done
# A program that clears O_NONBLOCK for a blocking read and sets it again
# keeps the engine: reads 7-12 are blocking, each between two F_SETFLs.
out=$(ROUNDS=12 run)
check "toggle: client served" test "$(line "$out" client)" = "client ok"
check "toggle: read 6 from the engine's queue" test "$(line "$out" "read 6:")" = "read 6: engine, accelerated 1"
for i in 7 12; do
	check "toggle: blocking read $i from the engine's queue" \
		test "$(line "$out" "read $i:")" = "read $i: engine, accelerated 1, blocking"
done
# With RINGSOCK_BLOCKING=kernel a blocking socket is the kernel's: the
# first toggle hands it over for good: that read takes what the engine
# held, and the reads after are the kernel's.
out=$(ROUNDS=12 run RINGSOCK_BLOCKING=kernel)
check "toggle, BLOCKING=kernel: client served" test "$(line "$out" client)" = "client ok"
check "toggle, BLOCKING=kernel: read 6 from the engine's queue" test "$(line "$out" "read 6:")" = "read 6: engine, accelerated 1"
check "toggle, BLOCKING=kernel: blocking read 7 from what the engine held" \
	test "$(line "$out" "read 7:")" = "read 7: engine, accelerated 1, blocking"
for i in 8 12; do
	check "toggle, BLOCKING=kernel: blocking read $i passed through" \
		test "$(line "$out" "read $i:")" = "read $i: passthrough, accelerated 1, blocking"
done
finish
