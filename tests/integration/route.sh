# Route-aware send policy (src/route.c): a veth pair into a network
# namespace this test creates (198.18.8.0/30, from the range reserved for
# benchmarking).  `ringsock check` lists the route and `check --route`
# says what the engine does on it: no zero-copy on a virtual device (nor
# on loopback), UDP GSO within the path MTU.  Then the engine itself:
#  - UDP: over a route whose MTU is 1280, 1400-byte datagrams are never
#    tried as one UDP_SEGMENT message (the kernel would refuse it, EINVAL,
#    and the socket would give GSO up), so the 1200-byte datagrams the
#    same socket sends next still travel as UDP_SEGMENT runs; every
#    datagram arrives once.
#  - TCP: the data-integrity stress client sends to a server in the
#    namespace: with RINGSOCK_ZEROCOPY=auto no send is zero-copy there;
#    with =always they are, and the kernel reports that it copied them
#    (the reason the policy gives).  Every echo verified.
. "$(dirname "$0")/lib.sh"
need ip
[ "$(id -u)" = 0 ] || { echo "skip: needs root (network namespaces)"; exit 77; }
ns=rsroute$$
a=rsr$$a
b=rsr$$b
spid=
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null
	ip netns del "$ns" 2>/dev/null
	ip link del "$a" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
ip netns add "$ns" && ip link add "$a" type veth peer name "$b" && ip link set "$b" netns "$ns" &&
	ip addr add 198.18.8.1/30 dev "$a" && ip link set "$a" up &&
	ip netns exec "$ns" ip addr add 198.18.8.2/30 dev "$b" && ip netns exec "$ns" ip link set "$b" up &&
	ip netns exec "$ns" ip link set lo up ||
	{ echo "skip: cannot build the veth pair and namespace"; exit 77; }

# ---- what check says ----
"$RS_CLI" check >"$TMP/check" 2>&1
check "check lists the veth route" grep -q "^  198.18.8.0/30 dev $a$" "$TMP/check"
"$RS_CLI" check --route 198.18.8.2 >"$TMP/veth" 2>&1
cat "$TMP/veth"
check "check --route: the device and its driver" grep -q "device $a (veth, virtual, mtu 1500, checksum offload)" "$TMP/veth"
check "check --route: no zero-copy on a virtual device" grep -q "zero-copy sends: no (a virtual device" "$TMP/veth"
check "check --route: UDP GSO up to a full frame" grep -q "UDP GSO: runs of datagrams up to 1472 bytes" "$TMP/veth"
"$RS_CLI" check --route 127.0.0.1 >"$TMP/lo" 2>&1
check "check --route: no zero-copy on loopback" grep -q "zero-copy sends: no (delivered on this host" "$TMP/lo"
"$RS_CLI" check --route ::1 >"$TMP/lo6" 2>&1
check "check --route: IPv6 loopback, UDP GSO up to 1452 bytes" grep -q "UDP GSO: runs of datagrams up to 1452 bytes" "$TMP/lo6"
out=$(RINGSOCK_ZEROCOPY=always "$RS_CLI" check --route 198.18.8.2)
check "check --route: RINGSOCK_ZEROCOPY=always is shown" sh -c 'echo "$0" | grep -q "zero-copy sends: yes, batches of 16384 bytes or more (RINGSOCK_ZEROCOPY=always)"' "$out"
out=$(RINGSOCK_ZEROCOPY=never "$RS_CLI" check --route 198.18.8.2)
check "check --route: RINGSOCK_ZEROCOPY=never is shown" sh -c 'echo "$0" | grep -q "zero-copy sends: no (RINGSOCK_ZEROCOPY=never)"' "$out"
"$RS_CLI" check --route not-an-address >/dev/null 2>"$TMP/bad"; rc=$?
check "check --route: a bad address is refused (exit 2)" test $rc = 2
check "check --route: ... with a message" grep -q "is not an IPv4 or IPv6 address" "$TMP/bad"

# ---- UDP: segments within the path MTU ----
ip route add 198.18.8.2/32 dev "$a" mtu 1280 || { echo "skip: cannot add a route with an MTU"; exit 77; }
"$RS_CLI" check --route 198.18.8.2 >"$TMP/mtu" 2>&1
check "check --route: the route's MTU limits the segments (1280 - 28)" \
	grep -q "UDP GSO: runs of datagrams up to 1252 bytes (checksum offload; segments limited by the path MTU)" "$TMP/mtu"
for how in plain lib; do
	port=$(( 30000 + RANDOM % 20000 ))
	sinkout="$TMP/sink.$how" # (a file of its own: see udp_full.sh)
	ip netns exec "$ns" "$RS_UDP" sinkseq $port 1000 >"$sinkout" &
	sink=$!
	wait_ready "$sinkout" ready $sink || bad "udp mtu 1280, $how: the sink started"
	if [ $how = plain ]; then
		"$RS_UDP" mixsend 198.18.8.2 $port 1000 1400 1200 >"$TMP/send" 2>&1
	else
		RINGSOCK_STATS="$TMP/mix.st" LD_PRELOAD="$RS_LIB" "$RS_UDP" mixsend 198.18.8.2 $port 1000 1400 1200 >"$TMP/send" 2>&1
	fi
	wait $sink
	check "udp mtu 1280, $how: all sent" grep -q "sent 1000" "$TMP/send"
	check "udp mtu 1280, $how: each arrived exactly once ($(tail -1 "$sinkout"))" grep -q complete "$sinkout"
done
echo "udp: udp_queued=$(stat_sum "$TMP/mix.st" udp_queued) udp_gso_sends=$(stat_sum "$TMP/mix.st" udp_gso_sends)"
check "udp mtu 1280: datagrams were queued" test "$(stat_sum "$TMP/mix.st" udp_queued)" -ge 900
check "udp mtu 1280: the 1200-byte runs went as UDP_SEGMENT (GSO not given up)" test "$(stat_sum "$TMP/mix.st" udp_gso_sends)" -ge 1
check "udp mtu 1280: no send error" test "$(stat_sum "$TMP/mix.st" udp_send_errors)" = 0
ip route del 198.18.8.2/32 dev "$a"

# ---- TCP: zero-copy where the policy says, and why ----
port=$(( 30000 + RANDOM % 20000 ))
STRESS_ADDR=198.18.8.2 ip netns exec "$ns" "$RS_STRESS" server $port 2>"$TMP/srv.err" &
spid=$!
for _ in $(seq 100); do ip netns exec "$ns" ss -Hltn "sport = :$port" | grep -q . && break; sleep 0.05; done
for zc in auto always; do
	STRESS_ADDR=198.18.8.2 timeout 120 "$RS_CLI" --stats="$TMP/zc-$zc.st" --set RINGSOCK_ZEROCOPY=$zc \
		--set RINGSOCK_LINEAR_FIRST=0 --set RINGSOCK_DIRECT_THRESHOLD=0 "$RS_STRESS" client $port 100 11 \
		>"$TMP/zc-$zc.out" 2>&1
	rc=$?
	echo "tcp zerocopy=$zc: $(cat "$TMP/zc-$zc.out"); zc_sends=$(stat_sum "$TMP/zc-$zc.st" zc_sends) zc_copied=$(stat_sum "$TMP/zc-$zc.st" zc_copied)"
	check "tcp zerocopy=$zc: every echo verified (exit $rc)" test $rc = 0
done
check "tcp zerocopy=auto: no zero-copy send over veth" test "$(stat_sum "$TMP/zc-auto.st" zc_sends)" = 0
check "tcp zerocopy=always: zero-copy sends over veth" test "$(stat_sum "$TMP/zc-always.st" zc_sends)" -ge 10
if grep -q "send_zc: .*reports copies" <("$RS_CLI" check); then
	check "tcp zerocopy=always: the kernel reported it copied (the policy's reason)" \
		test "$(stat_sum "$TMP/zc-always.st" zc_copied)" -ge 1
fi
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
spid=
finish
