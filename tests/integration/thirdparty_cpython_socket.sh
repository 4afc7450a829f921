# Third-party suite: CPython's own socket tests (Debian's
# libpython3.11-testsuite, `python3 -m test test_socket`: TCP, UDP and its
# recvmsg/sendmsg classes, IPv4 and IPv6, timeouts, nonblocking, threads,
# AF_UNIX, socketpair...), run plain, under the library with default
# knobs, and under it with RINGSOCK_ARM_AFTER=0 (every receive armed at
# once).  Every test's outcome (ok, skipped, FAIL, ERROR) must be the
# same each way, and the counters must show the engine served sockets,
# UDP ones included.  VSOCK classes are left out: where the machine has
# a vsock device (a microVM) their client waits forever, plain too.
# A test whose outcome differs is run again both ways, once, alone: a
# difference that repeats fails the test.  ~90 s.
. "$(dirname "$0")/lib.sh"
if ! "$PY" -c 'import test.test_socket' 2>/dev/null; then
	bad "CPython's test suite is not installed (apt-get install libpython3.11-testsuite)"
	finish
	exit
fi
cd "$TMP" || exit 1

run() { # label, env...
	local label=$1
	shift
	timeout -k 5 400 env "$@" "$PY" -m test test_socket -v -i '*VSOCK*' >"$TMP/$label.out" 2>&1
	echo "$label: $(tail -1 "$TMP/$label.out")"
	# "testName (test.test_socket.Class.testName) ... ok" -> "Class.testName ok"
	sed -n 's/^\([A-Za-z0-9_]*\) (test\.test_socket\.\([A-Za-z0-9_.]*\)) \.\.\. \([A-Za-z]*\).*/\2 \3/p' \
		"$TMP/$label.out" | sort >"$TMP/$label.res"
}

run plain
run lib LD_PRELOAD="$RS_LIB" RINGSOCK_STATS="$TMP/lib.st"
run arm0 LD_PRELOAD="$RS_LIB" RINGSOCK_ARM_AFTER=0 RINGSOCK_STATS="$TMP/arm0.st"
n=$(wc -l <"$TMP/plain.res")
check "the suite ran ($n test outcomes)" test "$n" -ge 500
for mode in lib arm0; do
	knobs=""
	[ $mode = arm0 ] && knobs="RINGSOCK_ARM_AFTER=0"
	echo "$mode: $(grep -c ' ok$' "$TMP/$mode.res") ok ($(grep -c ' ok$' "$TMP/plain.res") plain)"
	diffs=$(comm -3 "$TMP/plain.res" "$TMP/$mode.res" | awk '{print $1}' | sort -u)
	still=""
	for t in $diffs; do
		# once more each way, alone (a timing-sensitive test may flip)
		cls=${t%.*}
		name=${t##*.}
		a=$(timeout 120 "$PY" -m test test_socket -v -m "$name" 2>&1 | grep -c "(test.test_socket.$cls.$name) ... ok")
		b=$(timeout 120 env LD_PRELOAD="$RS_LIB" $knobs "$PY" -m test test_socket -v -m "$name" 2>&1 |
			grep -c "(test.test_socket.$cls.$name) ... ok")
		echo "$mode differed: $t; again alone: plain ok=$a, library ok=$b"
		[ "$a" = "$b" ] || still="$still $t"
	done
	check "$mode: every test has the same outcome as plain${still:+ (not:$still)}" test -z "$still"
	check "$mode: the engine served sockets" test "$(stat_sum "$TMP/$mode.st" accelerated)" -ge 100
	check "$mode: no socket passed through as udp" test "$(stat_sum "$TMP/$mode.st" udp)" = 0
done
finish
