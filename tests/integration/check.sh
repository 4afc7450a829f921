# `ringsock check`, `ringsock knobs`, and the library's own handling of
# knobs: one warning per bad value, strict refusal, log levels, stats.
. "$(dirname "$0")/lib.sh"

"$RS_CLI" check >"$TMP/check" 2>&1; rc=$?
for k in "kernel:" "kernel.io_uring_disabled:" "io_uring:" "setup flags:" "multishot recv:" \
	"provided-buffer rings:" "memlock limit:" "network links:" "RINGSOCK_BUF_COUNT=512"; do
	check "check reports '$k'" grep -q -- "$k" "$TMP/check"
done
if grep -q "^io_uring: *available" "$TMP/check"; then
	check "check exits 0 where io_uring works" test $rc = 0
fi
out=$(RINGSOCK_BUF_COUNT=64 "$RS_CLI" check --knobs)
check "check --knobs shows an environment value, marked" sh -c 'echo "$0" | grep -q "\* RINGSOCK_BUF_COUNT=64"' "$out"
check "check --knobs lists every knob" test "$(echo "$out" | grep -c 'RINGSOCK_')" = "$("$RS_CLI" knobs | grep -c '^RINGSOCK_')"
out=$(RINGSOCK_FEATURES_DISABLE=recv_cap,buf_ring "$RS_CLI" check); rc=$?
check "features disabled by knob are shown as treated as missing" sh -c 'echo "$0" | grep -q "provided-buffer rings: *yes (treated as missing"' "$out"
check "buf_ring disabled: check exits 1" test $rc = 1
"$RS_NO_URING" "$RS_CLI" check >"$TMP/nouring" 2>&1; rc=$?
if [ $rc != 77 ]; then
	check "seccomp-blocked io_uring: check exits 1" test $rc = 1
	check "seccomp-blocked io_uring: says unavailable" grep -q "unavailable: io_uring_setup failed" "$TMP/nouring"
	check "seccomp-blocked io_uring: says why" grep -q "blocked (EPERM" "$TMP/nouring"
fi
"$RS_CLI" knobs --man >"$TMP/man"
check "knobs --man is roff with an ENVIRONMENT section" grep -q '^\.SH ENVIRONMENT' "$TMP/man"

# The library itself (LD_PRELOAD without the launcher).
out=$(RINGSOCK_BUF_COUNT=abc RINGSOCK_BUF_CONUT=1 LD_PRELOAD="$RS_LIB" sh -c 'echo ran' 2>&1)
check "library: program runs despite a bad knob" sh -c 'echo "$0" | grep -q "^ran$"' "$out"
check "library: one warning naming variable, value and range" \
	test "$(echo "$out" | grep -c "RINGSOCK_BUF_COUNT='abc' is invalid (not a number): expected an integer 16..32768 buffers; using the default 512")" = 1
check "library: unknown name reported with suggestion" sh -c 'echo "$0" | grep -q "unknown variable RINGSOCK_BUF_CONUT ignored (did you mean RINGSOCK_BUF_COUNT?)"' "$out"
out=$(RINGSOCK_STRICT=1 RINGSOCK_RCVBUF_LIMIT=-5 LD_PRELOAD="$RS_LIB" sh -c 'echo ran' 2>&1); rc=$?
check "library: RINGSOCK_STRICT=1 refuses to start (exit 2)" test $rc = 2
check "library: strict refusal happens before the program runs" sh -c '! echo "$0" | grep -q "^ran$"' "$out"
check "library: strict message" sh -c 'echo "$0" | grep -q "refusing to start: RINGSOCK_STRICT=1"' "$out"
out=$(RINGSOCK_LOG=error RINGSOCK_BUF_COUNT=abc LD_PRELOAD="$RS_LIB" sh -c 'echo ran' 2>&1)
check "library: RINGSOCK_LOG=error silences warnings" test "$out" = "ran"
out=$(RINGSOCK_LOG=info LD_PRELOAD="$RS_LIB" sh -c 'echo ran' 2>&1)
check "library: RINGSOCK_LOG=info says it is loaded" sh -c 'echo "$0" | grep -q "ringsock .* loaded"' "$out"
out=$(LD_PRELOAD="$RS_LIB" sh -c 'echo ran' 2>&1)
check "library: silent by default" test "$out" = "ran"

# Calls on non-socket fds are counted only when a report is asked for.
out=$(LD_PRELOAD="$RS_LIB" "$RS_API_CLIENT")
check "calls on other fds not counted without RINGSOCK_STATS" sh -c 'echo "$0" | grep -q "^other_rw 0$"' "$out"
out=$(RINGSOCK_STATS="$TMP/api.stats" LD_PRELOAD="$RS_LIB" "$RS_API_CLIENT")
check "calls on other fds counted with RINGSOCK_STATS" sh -c 'echo "$0" | grep -qE "^other_rw [1-9]"' "$out"

# Stats to a per-process file.
RINGSOCK_STATS="$TMP/stats.%p" LD_PRELOAD="$RS_LIB" "$PY" -c '
import socket, os
a = socket.socket(); a.bind(("127.0.0.1", 0)); a.listen()
c = socket.create_connection(a.getsockname()); s, _ = a.accept()
c.sendall(b"x" * 5000); n = 0
while n < 5000: n += len(s.recv(65536))
pid = os.fork()
if pid == 0:
    c.sendall(b"y" * 10); os._exit(0)
os.waitpid(pid, 0)
' 2>/dev/null
n=$(ls "$TMP"/stats.* 2>/dev/null | wc -l)
check "stats: one file per process with %p (parent and child)" test "$n" -ge 2
check "stats: tracked sockets counted" test "$(cat "$TMP"/stats.* | stat_sum /dev/stdin tracked)" -ge 3
check "stats: bytes counted" test "$(cat "$TMP"/stats.* | stat_sum /dev/stdin sent)" -ge 5010
finish
