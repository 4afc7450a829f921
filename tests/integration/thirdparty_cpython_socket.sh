# Third-party suite: CPython's own socket tests (`python3 -m test
# test_socket`: TCP, UDP and its recvmsg/sendmsg classes, IPv4 and IPv6,
# timeouts, nonblocking, threads, AF_UNIX, socketpair...), plain and under
# the library both ways (cpython_suite.bash); the counters must show the
# engine served sockets, UDP ones included.  VSOCK classes are left out:
# where the machine has a vsock device (a microVM) their client waits
# forever, plain too.  ~90 s.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cpython_suite.bash"
cpython_suite 100 test_socket -- -i '*VSOCK*'
if [ -f "$TMP/lib.st" ]; then
	check "the suite ran all of test_socket" test "$(wc -l <"$TMP/plain.res")" -ge 500
	for mode in lib arm0; do
		check "$mode: no socket passed through as udp" test "$(stat_sum "$TMP/$mode.st" udp)" = 0
	done
fi
finish
