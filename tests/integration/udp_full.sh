# UDP sends when the kernel's send buffer fills (udp_send.c): a veth pair
# between two network namespaces this test creates (198.18.7.0/30, from
# the range reserved for benchmarking; both ends in namespaces of their
# own, so another run of this test at the same time, from another build
# tree, cannot take the route: with the sending end in the host's
# namespace, two runs each added 198.18.7.0/30 there, the older one's
# route won, and the other run's datagrams went to the older run's
# namespace, lost, while neither sender saw an error), its sending side
# shaped by tbf so the sender's buffer (the smallest SO_SNDBUF) fills long
# before the qdisc's queue.  A nonblocking sender (poll for POLLOUT on
# EAGAIN, then the same datagram again) sends 3000 numbered datagrams of
# 200 and of 1200 bytes to a receiver in the other namespace: every one
# arrives exactly once (not necessarily in order: the veth pair may
# reorder what two CPUs sent), plain and under the library, where the
# sender's datagrams were queued, met the full buffer (the ring polls for
# room; the socket's next sends are the kernel's, so the program sees
# EAGAIN) and none was dropped.  When one is missing, the kernel's drop
# counters along the path are printed (the qdisc, the veth pair, the
# receiver's UDP counters, the CPUs' backlogs).
. "$(dirname "$0")/lib.sh"
need ip
need tc
[ "$(id -u)" = 0 ] || { echo "skip: needs root (network namespaces)"; exit 77; }
ns=rsfull$$   # the receiver's
tx=rsfulls$$  # the sender's
cleanup() { ip netns del "$ns" 2>/dev/null; ip netns del "$tx" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
ip netns add "$ns" && ip netns add "$tx" &&
	ip link add rsf$$a netns "$tx" type veth peer name rsf$$b netns "$ns" &&
	ip -n "$tx" addr add 198.18.7.1/30 dev rsf$$a && ip -n "$tx" link set rsf$$a up &&
	ip -n "$tx" link set lo up &&
	ip -n "$ns" addr add 198.18.7.2/30 dev rsf$$b && ip -n "$ns" link set rsf$$b up &&
	ip -n "$ns" link set lo up &&
	tc -n "$tx" qdisc add dev rsf$$a root tbf rate 20mbit burst 32kb limit 4mb ||
	{ echo "skip: cannot build the veth pair and namespaces"; exit 77; }
# What the kernel dropped on the way (printed when a datagram is missing).
drops() {
	echo "-- the sender's qdisc and veth end:"
	tc -n "$tx" -s qdisc show dev rsf$$a
	ip -n "$tx" -s link show rsf$$a
	echo "-- the receiver's veth end and UDP counters:"
	ip -n "$ns" -s link show rsf$$b
	ip netns exec "$ns" cat /proc/net/snmp | grep '^Udp:'
	echo "-- the CPUs' backlogs (second column: dropped, hex):"
	cat /proc/net/softnet_stat
}

for size in 200 1200; do
	for how in plain lib; do
		port=$(( 30000 + RANDOM % 20000 ))
		# (a file of this run's own: the shell empties a redirection's
		# file in the child it forks, so under load the wait below read
		# the previous run's "ready" from the same file before this sink
		# had even started; the sender began at once and its first
		# datagrams reached no socket, counted in the namespace's UDP
		# NoPorts: CI's "2870 of 3000 arrived", missing 0-129, the
		# library's sender's first four messages)
		sinkout="$TMP/sink.$size.$how"
		ip netns exec "$ns" "$RS_UDP" sinkseq $port 3000 >"$sinkout" &
		sink=$!
		# (the sink's socket is bound once it says ready)
		if ! wait_ready "$sinkout" ready $sink; then
			bad "$size bytes, $how: the sink started"
			kill $sink 2>/dev/null; wait $sink
			continue
		fi
		if [ $how = plain ]; then
			ip netns exec "$tx" "$RS_UDP" nbsend 198.18.7.2 $port 3000 $size >"$TMP/send" 2>"$TMP/send.err"
		else
			ip netns exec "$tx" env RINGSOCK_STATS="$TMP/full$size.st" LD_PRELOAD="$RS_LIB" \
				"$RS_UDP" nbsend 198.18.7.2 $port 3000 $size >"$TMP/send" 2>"$TMP/send.err"
		fi
		wait $sink
		echo "$size $how: $(cat "$TMP/send.err")"
		check "$size bytes, $how: the buffer filled (the program met EAGAIN)" \
			test "$(sed -n 's/^nbsend: \([0-9]*\) EAGAIN/\1/p' "$TMP/send.err")" -ge 1
		check "$size bytes, $how: the sender sent all" grep -q "sent 3000" "$TMP/send"
		check "$size bytes, $how: each arrived exactly once ($(tail -1 "$sinkout"))" grep -q complete "$sinkout"
		grep -q complete "$sinkout" || drops
	done
	st="$TMP/full$size.st"
	echo "$size: udp_queued=$(stat_sum "$st" udp_queued) udp_send_errors=$(stat_sum "$st" udp_send_errors)"
	check "$size bytes: datagrams were queued (until the buffer filled)" test "$(stat_sum "$st" udp_queued)" -ge 32
	check "$size bytes: none dropped (udp_send_errors 0)" test "$(stat_sum "$st" udp_send_errors)" = 0
done
finish
