# Real programs under the launcher: iperf3 (TCP, reverse, parallel, UDP),
# sockperf (ping-pong and throughput), socat with a checksummed transfer.
# Each must work as it does without ringsock, and ringsock's counters must
# show its sockets were tracked and, for TCP, that the io_uring engine
# carried the traffic (sockets accelerated, calls answered without a
# system call).
. "$(dirname "$0")/lib.sh"
need iperf3
need sockperf
need socat
need ss
RS="$RS_CLI"

json_num() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# ---- iperf3 ----
for mode in tcp reverse parallel udp; do
	port=$(free_port)
	rm -f "$TMP"/srv.* "$TMP"/cli.*
	"$RS" --stats="$TMP/srv.stats" iperf3 -s -1 -p "$port" -J >"$TMP/srv.json" 2>"$TMP/srv.err" &
	spid=$!
	wait_port tcp "$port" $spid || bad "iperf3 server did not start"
	case $mode in
	tcp) args="" ;;
	reverse) args="-R" ;;
	parallel) args="-P 4" ;;
	udp) args="-u -b 200M -l 1400" ;;
	esac
	timeout 60 "$RS" --stats="$TMP/cli.stats" iperf3 -c 127.0.0.1 -p "$port" -t 2 $args -J >"$TMP/cli.json" 2>"$TMP/cli.err"
	rc=$?
	wait $spid
	check "iperf3 $mode: client exit 0" test $rc = 0
	if [ $mode = udp ]; then
		bytes=$(json_num "$TMP/cli.json" 'd["end"]["sum"]["bytes"]' 2>/dev/null || echo 0)
	else
		bytes=$(json_num "$TMP/cli.json" 'd["end"]["sum_received"]["bytes"]' 2>/dev/null || echo 0)
	fi
	check "iperf3 $mode: data moved ($bytes bytes)" test "${bytes%.*}" -gt 1000000
	check "iperf3 $mode: no error in the report" sh -c '! grep -q "\"error\"" "$0"' "$TMP/cli.json"
	check "iperf3 $mode: client sockets tracked" test "$(stat_sum "$TMP/cli.stats" tracked)" -ge 2
	check "iperf3 $mode: server sockets tracked" test "$(stat_sum "$TMP/srv.stats" tracked)" -ge 2
	moved=$(( $(stat_sum "$TMP/cli.stats" sent) + $(stat_sum "$TMP/cli.stats" received) ))
	check "iperf3 $mode: client counters saw the traffic ($moved bytes)" test "$moved" -gt 1000000
	if [ $mode != udp ]; then
		want=1
		[ $mode = parallel ] && want=4
		check "iperf3 $mode: engine served the server's data sockets" \
			test "$(stat_sum "$TMP/srv.stats" accelerated)" -ge $want
		# Bulk reads of 128 KiB take the engine's direct path (straight
		# into the caller's buffer); the rest is answered from its queue.
		check "iperf3 $mode: engine handled the server's data calls (queue or direct path)" \
			test $(( $(stat_sum "$TMP/srv.stats" calls_nosys) + $(stat_sum "$TMP/srv.stats" direct) )) -gt 1000
	fi
done

# ---- sockperf ----
port=$(free_port)
"$RS" --stats="$TMP/sp-srv.stats" sockperf server --tcp -i 127.0.0.1 -p "$port" >"$TMP/sp-srv.out" 2>&1 &
spid=$!
wait_port tcp "$port" $spid || bad "sockperf server did not start"
timeout 60 "$RS" --stats="$TMP/sp-pp.stats" sockperf ping-pong --tcp -i 127.0.0.1 -p "$port" -t 2 -m 64 >"$TMP/pp.out" 2>&1
check "sockperf ping-pong: exit 0" test $? = 0
check "sockperf ping-pong: latency summary" grep -q "Summary: Latency is" "$TMP/pp.out"
check "sockperf ping-pong: sockets tracked" test "$(stat_sum "$TMP/sp-pp.stats" tracked)" -ge 1
check "sockperf ping-pong: the engine served its socket" test "$(stat_sum "$TMP/sp-pp.stats" accelerated)" -ge 1
# A blocking ping-pong client has nothing to batch: the engine sends its
# reads and its one send per round straight to the kernel, and after 64
# such rounds hands the socket to the kernel for good (alone_handovers),
# whatever the machine's load (a count of rounds, and a 2 s run makes
# thousands).
pp_calls=$(stat_sum "$TMP/sp-pp.stats" sendrecv)
pp_direct=$(stat_sum "$TMP/sp-pp.stats" direct)
check "sockperf ping-pong: reads and sends straight to the kernel before the hand-over ($pp_direct)" \
	test "$pp_direct" -ge 64
check "sockperf ping-pong: the socket handed to the kernel for good ($pp_calls calls)" \
	test "$(stat_sum "$TMP/sp-pp.stats" alone_handovers)" = 1
timeout 60 "$RS" --stats="$TMP/sp-tp.stats" sockperf throughput --tcp -i 127.0.0.1 -p "$port" -t 2 -m 1024 >"$TMP/tp.out" 2>&1
check "sockperf throughput: exit 0" test $? = 0
check "sockperf throughput: summary" grep -q "Summary: BandWidth is" "$TMP/tp.out"
check "sockperf throughput: sends queued without syscalls" test "$(stat_sum "$TMP/sp-tp.stats" calls_nosys)" -gt 1000
kill -INT $spid 2>/dev/null
wait $spid 2>/dev/null
check "sockperf server: sockets tracked" test "$(stat_sum "$TMP/sp-srv.stats" tracked)" -ge 2
# sockperf's client uses a blocking socket: the engine serves it (the
# server multiplexes with select or epoll).
check "sockperf server: the engine served its connections" test "$(stat_sum "$TMP/sp-srv.stats" accelerated)" -ge 2

# ---- socat: 32 MiB, checksummed on both ends ----
head -c $((32 << 20)) /dev/urandom >"$TMP/in.bin"
port=$(free_port)
"$RS" --stats="$TMP/socat-rx.stats" socat -u "TCP-LISTEN:$port,reuseaddr,bind=127.0.0.1" "OPEN:$TMP/out.bin,creat,trunc" 2>"$TMP/socat-rx.err" &
rpid=$!
wait_port tcp "$port" $rpid || bad "socat receiver did not start"
timeout 60 "$RS" --stats="$TMP/socat-tx.stats" socat -u "OPEN:$TMP/in.bin" "TCP:127.0.0.1:$port" 2>"$TMP/socat-tx.err"
check "socat sender: exit 0" test $? = 0
wait $rpid
check "socat receiver: exit 0" test $? = 0
a=$(sha256sum <"$TMP/in.bin")
b=$(sha256sum <"$TMP/out.bin")
check "socat: checksums match" test "$a" = "$b"
check "socat: receiver counted every byte" test "$(stat_sum "$TMP/socat-rx.stats" received)" = $((32 << 20))
check "socat: sender counted every byte" test "$(stat_sum "$TMP/socat-tx.stats" sent)" = $((32 << 20))
check "socat: the engine served both ends" test "$(( $(stat_sum "$TMP/socat-rx.stats" accelerated) + $(stat_sum "$TMP/socat-tx.stats" accelerated) ))" -ge 2
# RINGSOCK_BLOCKING=kernel: the same transfer with blocking sockets left
# on the kernel path, and the counters say why.
port=$(free_port)
rm -f "$TMP/out.bin"
"$RS" --set BLOCKING=kernel --stats="$TMP/socat-rxk.stats" socat -u "TCP-LISTEN:$port,reuseaddr,bind=127.0.0.1" "OPEN:$TMP/out.bin,creat,trunc" 2>"$TMP/socat-rx.err" &
rpid=$!
wait_port tcp "$port" $rpid || bad "socat receiver did not start"
timeout 60 "$RS" --set BLOCKING=kernel --stats="$TMP/socat-txk.stats" socat -u "OPEN:$TMP/in.bin" "TCP:127.0.0.1:$port" 2>"$TMP/socat-tx.err"
check "socat, BLOCKING=kernel: sender exit 0" test $? = 0
wait $rpid
check "socat, BLOCKING=kernel: checksums match" test "$a" = "$(sha256sum <"$TMP/out.bin")"
check "socat, BLOCKING=kernel: no socket on the engine" test "$(( $(stat_sum "$TMP/socat-rxk.stats" accelerated) + $(stat_sum "$TMP/socat-txk.stats" accelerated) ))" = 0
check "socat, BLOCKING=kernel: blocking sockets counted as passed through" test "$(( $(stat_sum "$TMP/socat-rxk.stats" blocking) + $(stat_sum "$TMP/socat-txk.stats" blocking) ))" -ge 2
# UDP through socat: datagrams arrive intact.
port=$(free_port)
"$RS" socat -u "UDP-RECV:$port,bind=127.0.0.1" "OPEN:$TMP/udp.out,creat,trunc" &
rpid=$!
wait_port udp "$port" $rpid || bad "socat UDP receiver did not start"
printf 'datagram-through-socat' | "$RS" socat -u - "UDP-SENDTO:127.0.0.1:$port"
# (until the receiver wrote it, at most 60 s: not a fixed 0.3 s, which a
# loaded machine can miss)
for _ in $(seq 1200); do grep -q datagram-through-socat "$TMP/udp.out" 2>/dev/null && break; sleep 0.05; done
kill $rpid 2>/dev/null
wait $rpid 2>/dev/null
check "socat UDP: datagram arrived" test "$(cat "$TMP/udp.out")" = "datagram-through-socat"
finish
