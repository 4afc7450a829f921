# When a socket's reads go straight to the kernel and when they come back
# to the engine's receive (ringsock(7), direct_on and direct_off): every
# switch is decided by counts of reads, never by timing, so the same calls
# give the same switches run after run (tests/integration/direct.c).
. "$(dirname "$0")/lib.sh"
line() { echo "$1" | grep "^$2:" | head -1; }
# expect NAME OUTPUT STEP COUNTERS: the step's line has these counters
# ("engine_reads" left out where a wait's EAGAIN answers are counted).
expect() {
	local l f ok=1
	l=$(line "$2" "$3")
	for f in $4; do
		case " ${l#*:} " in *" $f "*) ;; *) ok=0 ;; esac
	done
	check "$1 ($l)" test $ok = 1
}

steps="waits:1 feed:8 read:8 waits:3 waits:2 feed:9 read:9 feed:10 nbread:10 waits:4 feed:1030 read:1030
	waits:5 feed:1000 read:1000 feed:1060 read:1060 feed:64 big:1 feed:20 read:20 feed:64 read:3 bigheld:1 feed:1045 read:21 bigfull:1 fork:1 feed:12 nbread:12"
out=$(LD_PRELOAD="$RS_LIB" "$RS_DIRECT" $steps)
check "the peer ran" test "$(echo "$out" | tail -1)" = "peer ok"
# One read that had to wait (a server's first read before the client's
# first bytes: iperf3's cookie) leaves the socket on the engine.
expect "one waiting read: still the engine's" "$out" waits:1 "direct_on=0 direct_off=0 kernel_reads=0"
expect "reads after it: from the engine's queue" "$out" read:8 "direct_on=0 direct_off=0 kernel_reads=0 engine_reads=8"
# Four blocking reads in a row that each wait: a ping-pong reader, whose
# reads the kernel serves better.  (The reads with data in between
# started the count again: 3 waits are not enough.)
expect "three waits after data: still the engine's" "$out" waits:3 "direct_on=0 direct_off=0 kernel_reads=0"
# (A blocking read handed to the kernel is counted when it is made, data
# or not: here the fourth wait and the one after it, both ended by
# SO_RCVTIMEO.)
expect "the fourth wait in a row: the kernel's" "$out" waits:2 "direct_on=1 direct_off=0 kernel_reads=2"
expect "blocking reads then: from the kernel" "$out" read:9 "direct_on=0 direct_off=0 kernel_reads=9 engine_reads=0"
# The program turns to nonblocking reads that find data: four of them give
# the socket back to the engine, which serves the rest.
expect "nonblocking reads with data: back to the engine after 4" "$out" nbread:10 \
	"direct_on=0 direct_off=1 kernel_reads=4 engine_reads=6"
expect "four waits in a row again: the kernel's" "$out" waits:4 "direct_on=1 direct_off=0 kernel_reads=1"
# A waiting reader is given the engine again every 1024 blocking reads
# (the two after the switch, in waits:4, count).
expect "blocking reads: the engine again at the 1024th" "$out" read:1030 \
	"direct_on=0 direct_off=1 kernel_reads=1022 engine_reads=8"
# The retry did not pay (four waits send it back): the next one comes
# after twice as many blocking reads, 2048.
expect "four waits after the retry: the kernel's" "$out" waits:5 "direct_on=1 direct_off=0 kernel_reads=2"
expect "1000 blocking reads then: the kernel's" "$out" read:1000 "direct_on=0 direct_off=0 kernel_reads=1000 engine_reads=0"
expect "the next retry at the 2048th" "$out" read:1060 \
	"direct_on=0 direct_off=1 kernel_reads=1045 engine_reads=15"
# A read of RINGSOCK_DIRECT_THRESHOLD bytes or more with nothing held: a
# bulk reader, straight from the kernel; 16 smaller reads in a row bring
# it back.
expect "a large read: the kernel's" "$out" big:1 "direct_on=1 direct_off=0 kernel_reads=1 engine_reads=0"
expect "small reads after it: back at the 16th" "$out" read:20 "direct_on=0 direct_off=1 kernel_reads=15 engine_reads=5"
# A large read that finds less held than it wants (the engine's receive
# keeps ahead of a bulk reader, as with several streams): answered from
# what is held, and the reads after it are the kernel's.
expect "small reads with the engine: held" "$out" read:3 "direct_on=0 direct_off=0 kernel_reads=0 engine_reads=3"
expect "a large read finding less held: the kernel's next" "$out" bigheld:1 \
	"direct_on=1 direct_off=0 kernel_reads=0 engine_reads=1"
# One that finds as much held as it asks for (64 KiB, after 16 small reads
# gave the socket back to the engine): answered from what is held, and
# the reads after it are the kernel's too.
expect "small reads after the first large one: back at the 16th" "$out" read:21 \
	"direct_on=0 direct_off=1 kernel_reads=15 engine_reads=6"
expect "a large read finding all it asks held: the kernel's next" "$out" bigfull:1 \
	"direct_on=1 direct_off=0 kernel_reads=0 engine_reads=1"

# Open in another process too (a fork): no read-ahead ever again, whatever
# the reads look like (nonblocking with data, 1024 blocking ones).
expect "a fork: the kernel's for good" "$out" fork:1 "direct_on=0 direct_off=0"
expect "nonblocking reads with data after the fork: still the kernel's" "$out" nbread:12 \
	"direct_on=0 direct_off=0 kernel_reads=12 engine_reads=0"

# Run after run, the same switches (the steps that are not waits: a
# wait's EAGAIN answers are counted as the engine's, once or more).
same() { echo "$1" | grep -v "^waits:"; }
for i in 1 2 3; do
	again=$(LD_PRELOAD="$RS_LIB" "$RS_DIRECT" $steps)
	check "run $i gives the same counts" test "$(same "$again")" = "$(same "$out")"
done

# An event loop whose thread serves one socket per wake-up (one
# connection, one request at a time): nothing for the ring to batch, so at
# the 64th epoll_wait in a row that returns one event the socket's reads
# and sends go to the kernel, and at its next read, with nothing of it
# held or in flight, the engine hands it to the kernel for good
# (alone_handovers): from then on its calls and its epoll registration are
# the kernel's, and wake-ups with two events change nothing.
# (engine_reads counts the epoll waits the engine answered too: two per
# round.)
asteps="ewait:63 ewait:1 ewait:6 ebusy:1 ebusy:3 ewait:64 ewait:2"
out=$(LD_PRELOAD="$RS_LIB" "$RS_DIRECT" $asteps)
check "alone: the peer ran" test "$(echo "$out" | tail -1)" = "peer ok"
expect "alone: 63 lone wake-ups: still the engine's" "$out" ewait:63 \
	"direct_on=0 direct_off=0 kernel_reads=0 engine_reads=126 handovers=0"
expect "alone: the 64th: the kernel's after its read" "$out" ewait:1 "direct_on=1 direct_off=0 kernel_reads=0 handovers=0"
expect "alone: the next read: the kernel's, then the socket" "$out" ewait:6 \
	"direct_on=0 direct_off=0 kernel_reads=1 engine_reads=0 handovers=1"
expect "alone: wake-ups with two events: still the kernel's" "$out" ebusy:1 \
	"direct_on=0 direct_off=0 kernel_reads=0 engine_reads=0 handovers=0"
expect "alone: reads then: the kernel's" "$out" ebusy:3 "direct_on=0 direct_off=0 kernel_reads=0 engine_reads=0"
expect "alone: lone again: nothing changes" "$out" ewait:64 "direct_on=0 direct_off=0 engine_reads=0 handovers=0"

for i in 1 2; do
	again=$(LD_PRELOAD="$RS_LIB" "$RS_DIRECT" $asteps)
	check "alone: run $i gives the same counts" test "$again" = "$out"
done

# The same with a second connection, idle, in the set: the thread's ring
# serves two sockets, so being alone only sends the socket's reads and
# sends to the kernel, and the first wake-up with two events gives the
# next read back to the engine.
out=$(LD_PRELOAD="$RS_LIB" "$RS_DIRECT" other:1 $asteps)
check "alone of two: the peer ran" test "$(echo "$out" | tail -1)" = "peer ok"
expect "alone of two: the 64th: the kernel's after its read" "$out" ewait:1 "direct_on=1 direct_off=0 kernel_reads=0"
expect "alone of two: reads then: the kernel's" "$out" ewait:6 \
	"direct_on=0 direct_off=0 kernel_reads=6 engine_reads=0 handovers=0"
expect "alone of two: a wake-up with two events: the engine's again" "$out" ebusy:1 "direct_on=0 direct_off=1"
expect "alone of two: reads then: the engine's" "$out" ebusy:3 "direct_on=0 direct_off=0 kernel_reads=0"
expect "alone of two: 64 lone wake-ups again: the kernel's" "$out" ewait:64 \
	"direct_on=1 direct_off=0 kernel_reads=0 handovers=0"

# A blocking ping-pong (a request read by a blocking read that goes to
# the kernel, a waiting reader; one answer sent): when the socket is the
# only one its thread's ring serves, the read after 64 rounds in a row of
# one read and one send hands it to the kernel for good (alone_handovers):
# from then on its calls are the kernel's (no direct read counted).  The
# first round's read has no send before it; two sends in a round start the
# count again; with a second connection on the ring, never.  (kernel_reads
# counts the answers too: sent through the kernel.)
bsteps="waits:4 bpp:64 bpp:1 bpp:3 bpptwo:1 bpp:70"
out=$(LD_PRELOAD="$RS_LIB" "$RS_DIRECT" $bsteps)
check "blocking ping-pong: the peer ran" test "$(echo "$out" | tail -1)" = "peer ok"
expect "blocking ping-pong: a waiting reader" "$out" waits:4 "direct_on=1 handovers=0"
expect "blocking ping-pong: 64 rounds: reads and sends through the kernel" "$out" bpp:64 \
	"direct_on=0 direct_off=0 kernel_reads=128 handovers=0"
expect "blocking ping-pong: the next read: the kernel's, then the socket" "$out" bpp:1 \
	"direct_on=0 direct_off=0 kernel_reads=1 handovers=1"
expect "blocking ping-pong: then its calls are the kernel's alone" "$out" bpp:3 \
	"direct_on=0 direct_off=0 kernel_reads=0 engine_reads=0 handovers=0"
expect "blocking ping-pong: two sends in a round: still the kernel's" "$out" bpptwo:1 \
	"direct_on=0 direct_off=0 kernel_reads=0 engine_reads=0 handovers=0"
for i in 1 2; do
	again=$(LD_PRELOAD="$RS_LIB" "$RS_DIRECT" $bsteps)
	check "blocking ping-pong: run $i gives the same counts" test "$(same "$again")" = "$(same "$out")"
done
out=$(LD_PRELOAD="$RS_LIB" "$RS_DIRECT" waits:4 bpptwo:70 bpp:64 bpp:1)
expect "blocking ping-pong: 70 rounds of two sends: not handed over" "$out" bpptwo:70 "handovers=0"
expect "blocking ping-pong: 64 rounds of one send after them: not yet" "$out" bpp:64 "handovers=0"
expect "blocking ping-pong: the next: handed over" "$out" bpp:1 "handovers=1"
out=$(LD_PRELOAD="$RS_LIB" "$RS_DIRECT" other:1 waits:4 bpp:70)
expect "blocking ping-pong beside another connection: not handed over" "$out" bpp:70 \
	"direct_on=0 direct_off=0 kernel_reads=140 handovers=0"

# A request-response connection of an event loop (nonblocking: one
# request read, one answer sent, round after round): nothing for the
# engine to merge, so after 16 such rounds in a row its reads and sends go
# to the kernel (RINGSOCK_REQUEST_RESPONSE=kernel; the default, auto,
# chooses it where system calls are cheap, below); four
# rounds in a row with two sends each give it back to the engine, and so
# do 16 sends in a row with no read (a stream: each would be a system
# call where the engine merges them).  A
# round is counted at the read that ends it, from the socket's third
# read (its second send made its engine state: RINGSOCK_ARM_AFTER), so
# the switch is at the 19th read.
rsteps="nonblock:1 rr:18 rr:1 rr:8 rrtwo:4 rrtwo:1 rrtwo:1 rrb:16 rrb:1 rrb:2 push:14 push:1 rrc:16 rrc:1"
out=$(RINGSOCK_REQUEST_RESPONSE=kernel LD_PRELOAD="$RS_LIB" "$RS_DIRECT" $rsteps)
check "rr: the peer ran" test "$(echo "$out" | tail -1)" = "peer ok"
expect "rr: 15 rounds counted: still the engine's" "$out" rr:18 "direct_on=0 direct_off=0"
expect "rr: the 16th: the kernel's" "$out" rr:1 "direct_on=1 direct_off=0"
expect "rr: then reads and sends: the kernel's" "$out" rr:8 "direct_on=0 kernel_reads=16 engine_reads=0"
expect "rr: three rounds of two sends: still the kernel's" "$out" rrtwo:4 \
	"direct_on=0 direct_off=0 kernel_reads=12 engine_reads=0"
expect "rr: the fourth: the engine's again" "$out" rrtwo:1 "direct_on=0 direct_off=1"
expect "rr: 15 rounds again: still the engine's" "$out" rrb:16 "direct_on=0 direct_off=0 kernel_reads=0"
expect "rr: the 16th again: the kernel's" "$out" rrb:1 "direct_on=1 direct_off=0"
expect "rr: then reads and sends: the kernel's again" "$out" rrb:2 "direct_on=0 kernel_reads=4 engine_reads=0"
# (the last round's send and 14 more: 15 in a row; the 16th switches)
expect "rr: 15 sends in a row: still the kernel's" "$out" push:14 "direct_on=0 direct_off=0 kernel_reads=14"
expect "rr: the 16th send in a row: the engine's again" "$out" push:1 "direct_on=0 direct_off=1"
expect "rr: 15 rounds after the stream: still the engine's" "$out" rrc:16 "direct_on=0 direct_off=0 kernel_reads=0"
expect "rr: the 16th: the kernel's" "$out" rrc:1 "direct_on=1 direct_off=0"
for i in 1 2; do
	again=$(RINGSOCK_REQUEST_RESPONSE=kernel LD_PRELOAD="$RS_LIB" "$RS_DIRECT" $rsteps)
	check "rr: run $i gives the same counts" test "$again" = "$out"
done
# RINGSOCK_REQUEST_RESPONSE=engine: the same rounds stay the engine's.
# (kernel_reads counts the kernel's sends too: until the drain thread runs,
# a send the engine would queue is the kernel's unless it is the third of
# its round or the second of the second round with two, engine_int.h
# rs_ring_may_queue; in rrtwo:4 the first round's two sends and the second
# round's first are (kernel_reads=3), its second starts the thread, and from
# then on none is.)
kout=$out
out=$(RINGSOCK_REQUEST_RESPONSE=engine LD_PRELOAD="$RS_LIB" "$RS_DIRECT" $rsteps)
check "rr engine: no switch" test "$(echo "$out" | grep -c 'direct_on=0 direct_off=0 ')" = 14
check "rr engine: the reads are the engine's, and after the first round of two sends every send too" \
	test "$(echo "$out" | grep -c 'direct_on=0 direct_off=0 kernel_reads=0 ')" = 10
eout=$out
# The default (auto) is one of the two, as `ringsock check` says for this
# machine (the kernel's mitigations on every system call: the same answer
# on every run).
aout=$(env -u RINGSOCK_REQUEST_RESPONSE LD_PRELOAD="$RS_LIB" "$RS_DIRECT" $rsteps)
if "$RS_CLI" check | grep -q '^request-response: *batched by the engine (RINGSOCK_REQUEST_RESPONSE=auto'; then
	check "rr auto: the engine's here (costly system calls)" test "$aout" = "$eout"
elif "$RS_CLI" check | grep -q "^request-response: *the kernel's calls after 16 rounds (RINGSOCK_REQUEST_RESPONSE=auto)"; then
	check "rr auto: the kernel's calls here" test "$aout" = "$kout"
else
	check "rr auto: ringsock check names the choice" false
fi
finish
