# UDP on the engine (udp.c helper, and a real UDP server):
#  - a socket nobody reads, fed in rounds: the kernel keeps what its queue
#    holds, the engine at most its bound (the socket's SO_RCVBUF, counted
#    in memory) on top, and what its receive took beyond it is dropped and
#    counted (udp_drops), deterministically;
#  - a reader that waits for every datagram reads through the kernel
#    after four waits in a row and comes back to the engine after four
#    nonblocking reads with data (counted, never timed), and the first
#    datagram it sends after each read goes to the kernel, not the queue;
#  - numbered datagrams from four sender threads to one socket read by one
#    thread (the engine's) and by two (the second reads the kernel):
#    every datagram exactly once, each sender's in order per reader;
#  - one unconnected socket streaming numbered datagrams to a socket of
#    the same thread: all arrive, in order, plain and under the library,
#    where they were queued and sent in batches, runs as UDP_SEGMENT
#    messages (counted: the same decisions every run);
#  - the same sender sleeping after each datagram (nanosleep, usleep,
#    clock_nanosleep, sched_yield): each leaves before the sleep, none
#    travels with another;
#  - a reader whose ring's IORING_SQ_TASKRUN flag is taken for stuck
#    (fault injection) still gets every datagram;
#  - dnsmasq answering dnsperf's queries under the launcher: no query lost,
#    the UDP socket served by the engine (passthrough udp=0); then dnsperf
#    under the launcher too (two threads sharing its sockets);
#  - unbound (libevent, IP_MTU_DISCOVER on its socket) the same way.
. "$(dirname "$0")/lib.sh"

# ---- the bound ----
plain=$("$RS_UDP" burst 32768 100 20 1000 | sed -n 's/^received //p')
lib=$(RINGSOCK_STATS="$TMP/burst.st" LD_PRELOAD="$RS_LIB" "$RS_UDP" burst 32768 100 20 1000 | sed -n 's/^received //p')
# SO_RCVBUF 32768 is 65536 as the kernel reports it: at most 61 datagrams
# of 1000 bytes (each costs 1000 + 64 in the engine's memory).
bound=$((65536 / 1064))
echo "burst: kernel path kept $plain, under the library $lib (engine bound $bound)"
check "burst: the kernel path dropped most of 2000" test "${plain:-2000}" -lt 2000
check "burst: the library kept at most its bound more than the kernel's queue" \
	test "${lib:-9999}" -le $((plain + bound)) -a "${lib:-0}" -ge "${plain:-1}"
check "burst: the engine served the socket" test "$(stat_sum "$TMP/burst.st" accelerated)" -ge 1
check "burst: datagrams beyond the bound were dropped and counted" test "$(stat_sum "$TMP/burst.st" udp_drops)" -ge 1
lib2=$(LD_PRELOAD="$RS_LIB" "$RS_UDP" burst 32768 100 20 1000 | sed -n 's/^received //p')
check "burst: the same count run after run ($lib, $lib2)" test "$lib" = "$lib2"

# ---- queued sends ----
for size in 64 1400; do
	check "stream $size: all in order, plain" test "$("$RS_UDP" stream 3000 $size)" = complete
	check "stream $size: all in order, under the library" \
		test "$(RINGSOCK_STATS="$TMP/stream$size.st" LD_PRELOAD="$RS_LIB" "$RS_UDP" stream 3000 $size)" = complete
	q=$(stat_sum "$TMP/stream$size.st" udp_queued)
	g=$(stat_sum "$TMP/stream$size.st" udp_gso_sends)
	echo "stream $size: udp_queued=$q udp_gso_sends=$g"
	# (and the first two the engine would queue: no drain thread runs yet,
	# so they are the kernel's, engine_int.h rs_ring_may_queue; the third of
	# the round starts it)
	check "stream $size: all but the two that proved the destination and the next two were queued" test "$q" = 2996
	check "stream $size: runs went as UDP_SEGMENT messages" test "$g" -ge 30
	check "stream $size: no send error" test "$(stat_sum "$TMP/stream$size.st" udp_send_errors)" = 0
done

# A stuck-taken IORING_SQ_TASKRUN (ring.c ring_flags; faults.c "stale"
# takes it for stuck every time it is set): the reader's poll and its
# nonblocking reads must still run the receive's task work (one enter
# before the sleep or the EAGAIN), or the datagrams stay in the kernel's
# queue for the ring and the stream stops.
out=$(RS_FAULT=stale:1 LD_PRELOAD="$RS_FAULTS:$RS_LIB" "$RS_UDP" stream 3000 64 2>"$TMP/stale.err")
check "stream 64 with the TASKRUN flag taken for stuck: $out" test "$out" = complete
check "stream 64: the fault was injected ($(cat "$TMP/stale.err"))" \
	grep -q "injected=[1-9]" "$TMP/stale.err"

check "paced: all in order, plain" test "$("$RS_UDP" paced 200)" = complete
check "paced: all in order, under the library" \
	test "$(RINGSOCK_STATS="$TMP/paced.st" LD_PRELOAD="$RS_LIB" "$RS_UDP" paced 200)" = complete
check "paced: queued (udp_queued 196: as for the stream)" test "$(stat_sum "$TMP/paced.st" udp_queued)" = 196
check "paced: each left before its sleep (udp_gso_sends 0)" test "$(stat_sum "$TMP/paced.st" udp_gso_sends)" = 0

# ---- a reader that waits for every datagram: the kernel's reads ----
plain=$("$RS_UDP" kwait)
lib=$(RINGSOCK_STATS="$TMP/kwait.st" LD_PRELOAD="$RS_LIB" "$RS_UDP" kwait)
check "kwait: the same reads under the library" test "$plain" = "$lib"
check "kwait: four waits in a row send the reads to the kernel (direct_on 1)" \
	test "$(stat_sum "$TMP/kwait.st" direct_on)" = 1
check "kwait: the fourth wait and the next twelve reads are the kernel's (direct 13)" \
	test "$(stat_sum "$TMP/kwait.st" direct)" = 13
check "kwait: four nonblocking reads with data give it back (direct_off 1)" \
	test "$(stat_sum "$TMP/kwait.st" direct_off)" = 1

# ---- ... and its replies: the first after each read is the kernel's ----
plain=$("$RS_UDP" kwaitsend)
lib=$(RINGSOCK_STATS="$TMP/kwaitsend.st" LD_PRELOAD="$RS_LIB" "$RS_UDP" kwaitsend)
check "kwaitsend: the same calls and the same datagrams, in order, under the library" test "$plain" = "$lib"
check "kwaitsend: the peer got every reply" test "$(echo "$lib" | grep -c '^peer got: r')" = 12
check "kwaitsend: its reads went to the kernel (direct_on 1)" test "$(stat_sum "$TMP/kwaitsend.st" direct_on)" = 1
# (the second replies are the engine's to queue, but no drain thread runs
# yet and no wait of the engine's ends the round, the reads being the
# kernel's: the first two are the kernel's, the third starts the thread and
# is queued, engine_int.h rs_ring_may_queue.  Without the rule for the
# first reply after a read, 10 of the 12 would be.)
check "kwaitsend: only a second reply of a round is queued (udp_queued 1, not 10)" \
	test "$(stat_sum "$TMP/kwaitsend.st" udp_queued)" = 1

plain=$("$RS_UDP" kwaitretry)
lib=$(RINGSOCK_STATS="$TMP/kwaitretry.st" LD_PRELOAD="$RS_LIB" "$RS_UDP" kwaitretry)
check "kwaitretry: every datagram read, the same under the library" test "$plain" = "$lib"
check "kwaitretry: every phase complete" test "$(echo "$lib" | grep -c ': \([0-9]*\) of \1$')" = 7
# (udp.c says which read makes each switch)
check "kwaitretry: four times the waits send its reads to the kernel (direct_on 4)" \
	test "$(stat_sum "$TMP/kwaitretry.st" direct_on)" = 4
check "kwaitretry: retried at 1024, then 2048 after waits, 1024 after nonblocking reads (direct_off 3)" \
	test "$(stat_sum "$TMP/kwaitretry.st" direct_off)" = 3

# ---- a reader that takes datagrams in batches: the kernel's recvmmsg ----
plain=$("$RS_UDP" mmsg 3000)
check "mmsg, kernel path: $plain" test "$plain" = "complete 3000"
lib=$(RINGSOCK_STATS="$TMP/mmsg.st" LD_PRELOAD="$RS_LIB" "$RS_UDP" mmsg 3000)
check "mmsg, under the library: $lib" test "$lib" = "complete 3000"
check "mmsg: the first recvmmsg with nothing held sends the reads to the kernel (direct_on 1)" \
	test "$(stat_sum "$TMP/mmsg.st" direct_on)" = 1
check "mmsg: the engine served the socket" test "$(stat_sum "$TMP/mmsg.st" accelerated)" -ge 1

# ---- order and loss ----
for readers in 1 2; do
	out=$("$RS_UDP" seq 4 $readers 5000)
	check "seq, $readers reader(s), kernel path: $out" test "$out" = complete
	out=$(RINGSOCK_STATS="$TMP/seq$readers.st" LD_PRELOAD="$RS_LIB" "$RS_UDP" seq 4 $readers 5000)
	check "seq, $readers reader(s), under the library: $out" test "$out" = complete
	check "seq, $readers reader(s): the engine served the socket" \
		test "$(stat_sum "$TMP/seq$readers.st" accelerated)" -ge 1
	check "seq, $readers reader(s): no UDP socket passed through as udp" \
		test "$(stat_sum "$TMP/seq$readers.st" udp)" = 0
done
# (Whether the second reader hands the socket over, reads the kernel while
# the owner waits there, or finds the owner busy and reads the kernel
# without either depends on where the first reader is at that moment: not
# checked here.  engine_udp_threads covers each hand-over case with a
# fixed order.)

# ---- real UDP servers, and dnsperf ----
# dns_server START...: start a DNS server on a free port, in the
# background: START... PORT execs it.  Sets port, and srv (its pid; its
# stderr goes to $TMP/servers.err).  A server that exits before it listens
# (another test bound the port after free_port found it free: dnsmasq
# says "Address already in use") is started again on another port, up to
# five times; a server that never listens fails the check.
dns_server() {
	local try
	for try in 1 2 3 4 5; do
		port=$(free_port)
		"$@" "$port" 2>>"$TMP/servers.err" &
		srv=$!
		for _ in $(seq 400); do
			ss -Hlun "sport = :$port" | grep -q . && return 0
			kill -0 "$srv" 2>/dev/null || break
			sleep 0.05
		done
		kill -TERM "$srv" 2>/dev/null
		wait_bounded "$srv" 40
		echo "info: the DNS server did not listen on $port (try $try): $(tail -n 1 "$TMP/servers.err")"
	done
	bad "a DNS server listens: $*"
	return 1
}
# dns_load PORT ROUNDS [LAUNCHER...]: dnsperf sends the 64 queries ROUNDS
# times (4 sockets, 100 outstanding), then the server in $srv is stopped;
# sets done_q, lost and noerr (NOERROR answers).
dns_load() {
	local port=$1 rounds=$2
	shift 2
	local out
	"$@" dnsperf -s 127.0.0.1 -p "$port" -d "$TMP/queries" -n "$rounds" -c 4 -q 100 >"$TMP/dnsperf.out" 2>&1 &
	wait_bounded $! 600 || stacks "$srv"
	out=$(cat "$TMP/dnsperf.out")
	kill -TERM "$srv"
	wait_bounded "$srv" 120 || bad "the DNS server did not stop on SIGTERM"
	done_q=$(echo "$out" | sed -n 's/.*Queries completed: *\([0-9]*\).*/\1/p')
	lost=$(echo "$out" | sed -n 's/.*Queries lost: *\([0-9]*\).*/\1/p')
	noerr=$(echo "$out" | sed -n 's/.*NOERROR \([0-9]*\).*/\1/p')
}
# dns_checks NAME STATS PT: after dns_load of 200 rounds, every query
# answered NOERROR and none lost, the server's UDP socket on the engine,
# no socket passed through for reason PT, its reads answered without
# system calls.
dns_checks() {
	echo "$1: $done_q queries answered ($noerr NOERROR), $lost lost"
	check "$1 under ringsock: every query answered, NOERROR" \
		test "${done_q:-0}" = 12800 -a "${lost:-1}" = 0 -a "${noerr:-0}" = 12800
	check "$1: its UDP socket was served by the engine" test "$(stat_sum "$2" accelerated)" -ge 1
	check "$1: no socket passed through as $3" test "$(stat_sum "$2" "$3")" = 0
	check "$1: its reads were answered without system calls" test "$(stat_sum "$2" calls_nosys)" -ge 12800
}
dnsmasq_on() { # PIDFILE LAUNCHER... PORT: exec dnsmasq
	local pidfile=$1 port=${*: -1}
	set -- "${@:2:$#-2}"
	exec "$@" dnsmasq -k --conf-file=/dev/null --no-resolv --no-hosts --port "$port" --listen-address 127.0.0.1 \
		--bind-interfaces --address=/test.invalid/198.18.0.9 -u root --cache-size=0 \
		--log-facility=/dev/null --pid-file="$pidfile"
}
for i in $(seq 0 63); do echo "host$i.test.invalid A"; done >"$TMP/queries"

if command -v dnsmasq >/dev/null && command -v dnsperf >/dev/null; then
	if dns_server dnsmasq_on "$TMP/dm.pid" env RINGSOCK_STATS="$TMP/dnsmasq.st" "$RS_CLI" --; then
		dns_load "$port" 200
		dns_checks dnsmasq "$TMP/dnsmasq.st" udp
	fi
	# dnsperf under the library too: its sending thread and its
	# receiving thread share the sockets (hand-overs between them, the
	# receiver polling), and every answer must reach it.
	if dns_server dnsmasq_on "$TMP/dm2.pid" "$RS_CLI" --; then
		dns_load "$port" 2000 env RINGSOCK_STATS="$TMP/dnsperf.st" "$RS_CLI" --
		echo "dnsperf under ringsock: $done_q queries answered, $lost lost"
		check "dnsperf and dnsmasq both under ringsock: every query answered" \
			test "${done_q:-0}" = 128000 -a "${lost:-1}" = 0
		check "dnsperf: its sockets were served by the engine" \
			test "$(stat_sum "$TMP/dnsperf.st" accelerated)" -ge 4
	fi
else
	bad "dnsmasq and dnsperf are not installed (apt-get install dnsmasq-base dnsperf)"
fi

# unbound answering from local-data: libevent's epoll, up to 100
# recvfrom per wakeup, IP_MTU_DISCOVER set on its UDP socket (an option
# only sends read: the socket stays on the engine).
unbound_on() { # PORT: exec unbound under the launcher
	local port=$1
	{
		echo "server:"
		echo "  interface: 127.0.0.1"
		echo "  port: $port"
		echo "  do-daemonize: no"
		echo "  use-syslog: no"
		echo '  logfile: ""'
		echo '  chroot: ""'
		echo '  username: ""'
		echo "  directory: \"$TMP\""
		echo "  pidfile: \"$TMP/unbound.pid\""
		echo "  num-threads: 1"
		echo "  do-ip6: no"
		echo "  access-control: 127.0.0.0/8 allow"
		echo '  module-config: "iterator"'
		echo '  local-zone: "test.invalid." static'
		for i in $(seq 0 63); do echo "  local-data: \"host$i.test.invalid. A 198.18.0.9\""; done
		echo "remote-control:"
		echo "  control-enable: no"
	} >"$TMP/unbound.conf"
	exec env RINGSOCK_STATS="$TMP/unbound.st" "$RS_CLI" -- unbound -d -c "$TMP/unbound.conf"
}
if command -v unbound >/dev/null && command -v dnsperf >/dev/null; then
	if dns_server unbound_on; then
		dns_load "$port" 200
		dns_checks unbound "$TMP/unbound.st" option
	fi
else
	bad "unbound and dnsperf are not installed (apt-get install unbound dnsperf)"
fi
finish
