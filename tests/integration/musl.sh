# The library and command built with musl-gcc (liburing linked statically,
# libnl left out), and musl-linked scenario programs run under the
# musl-built library through the differential harness.
. "$(dirname "$0")/lib.sh"
need musl-gcc
B="$TMP/musl-build"
if ! CC=musl-gcc cmake -S "$RS_SRC" -B "$B" -DRINGSOCK_BUILD_TESTS=OFF >"$TMP/cfg.log" 2>&1; then
	cat "$TMP/cfg.log"; bad "musl configure"; finish; exit 1
fi
check "configure says libnl is left out of the musl build" grep -q "libnl features left out of the musl build" "$TMP/cfg.log"
if ! cmake --build "$B" -j2 >"$TMP/build.log" 2>&1; then
	tail -40 "$TMP/build.log"; bad "musl build"; finish; exit 1
fi
ok "musl build"
check "library links against musl" sh -c 'readelf -d "$0/libringsock.so" | grep -q "libc.so\]" && ! readelf -d "$0/libringsock.so" | grep -q "libc.so.6"' "$B"
check "musl command is static and runs" sh -c '"$0/ringsock" --version | grep -q ringsock' "$B"
"$B/ringsock" check >"$TMP/check.out" 2>&1
check "musl ringsock check probes io_uring" grep -q "multishot recv:" "$TMP/check.out"
check "musl ringsock check says libnl is not built in" grep -q "this build has no libnl" "$TMP/check.out"
for s in tcp_basic nonblock halfclose_reset epoll pollselect dup udp peek_waitall timeouts_signals engine_wait_timeouts engine_raw_waits; do
	musl-gcc -O1 -isystem "$B/musl-include" -o "$TMP/scn_$s" "$RS_SRC/tests/diff/scenarios/$s.c" -lpthread 2>"$TMP/cc.log" ||
		{ cat "$TMP/cc.log"; bad "musl compile $s"; continue; }
	if "$RS_SRC/tests/diff/run_diff.sh" "$TMP/scn_$s" "$B/libringsock.so" >"$TMP/diff.log" 2>&1; then
		ok "musl scenario $s identical plain and under the musl library"
	else
		cat "$TMP/diff.log"; bad "musl scenario $s"
	fi
done
finish
