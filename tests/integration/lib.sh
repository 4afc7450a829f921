# Sourced by the integration tests.  CTest passes RS_LIB, RS_CLI, RS_BUILD,
# RS_SRC and helper paths in the environment.
set -u
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILS=0
PASSES=0

ok() { PASSES=$((PASSES + 1)); echo "ok: $*"; }
bad() { FAILS=$((FAILS + 1)); echo "FAIL: $*"; }
# check DESCRIPTION COMMAND...: passes when COMMAND succeeds
check() { local d=$1; shift; if "$@"; then ok "$d"; else bad "$d"; fi; }
need() { command -v "$1" >/dev/null 2>&1 || { echo "skip: $1 not installed"; exit 77; }; }
finish() {
	echo "$PASSES passed, $FAILS failed"
	[ "$FAILS" = 0 ]
}
# A port on loopback free for TCP and for UDP (a DNS server binds both),
# below the kernel's ephemeral range: a port the kernel handed out for a
# bind to 0 is free again once closed, and the next connect of any test
# running beside this one (curl, wrk, a client under test) may take it as
# its local port before our server binds it.  A random one, so that tests
# side by side rarely pick the same; another process may still take it
# first (a server that fails to start is started again elsewhere, see
# udp.sh).
free_port() {
	"$PY" -c '
import random, socket
try:
    lo, hi = map(int, open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[:2])
except (OSError, ValueError):
    lo, hi = 32768, 60999
pick = (lambda: random.randint(10000, lo - 1)) if lo > 11024 else \
       (lambda: random.randint(hi + 1, 65535)) if hi < 64511 else (lambda: 0)
while True:
    try:
        t = socket.socket(); t.bind(("127.0.0.1", pick())); p = t.getsockname()[1]
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", p))
    except OSError:
        continue
    print(p)
    break' 2>/dev/null || echo $((10000 + RANDOM % 20000))
}

# Sum a counter over every report in a RINGSOCK_STATS file: stat FILE KEY
stat_sum() { grep -o "[ ]$2=[0-9]*" "$1" 2>/dev/null | awk -F= '{s+=$2} END {printf "%.0f\n", s}'; }
# rr_load CONNS SECS: rs-rr-server under the launcher on a free port, and
# rs-rr-client (plain) with CONNS connections for at most SECS seconds, in
# the background; sets port, srv, cli, server and client.  Skips the test
# (77) without the bench programs or a writable /dev/shm (stat's segments).
rr_load() {
	server=$RS_BUILD/bench/rs-rr-server
	client=$RS_BUILD/bench/rs-rr-client
	[ -x "$server" ] && [ -x "$client" ] || { echo "skip: bench programs not built"; exit 77; }
	[ -w /dev/shm ] || { echo "skip: /dev/shm not writable"; exit 77; }
	port=$(free_port)
	"$RS_CLI" -- "$server" "$port" 1024 127.0.0.1 >/dev/null 2>&1 &
	srv=$!
	for _ in $(seq 50); do ss -ltn | grep -q ":$port " && break; sleep 0.1; done
	"$client" 127.0.0.1 "$port" "$1" "$2" >/dev/null 2>&1 &
	cli=$!
}
# stacks PID...: every thread's stack of each process and its children,
# printed into the test's log when a test finds a program stuck.
stacks() {
	local p
	for p in "$@"; do
		echo "== stacks of $p: $(tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null)"
		if command -v gdb >/dev/null; then
			gdb -p "$p" -batch -ex "thread apply all bt" 2>&1 | grep -E '^(Thread|#)'
		else
			cat /proc/"$p"/task/*/stack 2>/dev/null
		fi
		# shellcheck disable=SC2046 # (the pids)
		[ -z "$(pgrep -P "$p")" ] || stacks $(pgrep -P "$p")
	done
}
# wait_bounded PID TRIES: wait for PID, a child of this shell, polling
# every 0.5 s at most TRIES times (a bound on a hang, far above any
# run's length: never a measure of speed).  A process still running then
# is stuck: its stacks are printed, it is killed, and the status is 124.
wait_bounded() {
	local i
	for ((i = 0; i < $2; i++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.5
	done
	if kill -0 "$1" 2>/dev/null; then
		echo "stuck after $(($2 / 2)) s: $(tr '\0' ' ' </proc/"$1"/cmdline 2>/dev/null)"
		stacks "$1"
		pkill -KILL -P "$1"
		kill -KILL "$1"
		wait "$1"
		return 124
	fi
	wait "$1"
}
# wait_ready FILE TEXT PID: wait until FILE holds TEXT (a server's "ready"
# line, written once it can take what the test sends), for as long as PID
# lives, polling every 0.1 s for at most 600 s (a bound on a hang, never a
# measure of speed: on a loaded machine a start can take seconds, and a
# test that went on after a shorter wait sent to a socket not yet there).
# Fails, saying why, when PID ended first or the bound passed.  FILE must
# be new to PID (a name no earlier process wrote): the shell empties a
# redirection's file in the child it forks, perhaps after this looks.
wait_ready() {
	local i
	for ((i = 0; i < 6000; i++)); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || { echo "not ready: pid $3 ended: $(cat "$1" 2>/dev/null)"; return 1; }
		sleep 0.1
	done
	echo "not ready after 600 s: $(tr '\0' ' ' </proc/"$3"/cmdline 2>/dev/null)"
	return 1
}
# wait_port [tcp|udp] PORT [PID]: wait until a TCP socket listens on PORT
# (udp: a UDP socket is bound to it), polling every 0.05 s, for as long as
# PID (when given) lives, at most 120 s: a bound on a hang, never a
# measure of speed (a server's start beside other work can take seconds).
# 1 when it did not.
wait_port() {
	local proto=tcp i
	case $1 in tcp | udp) proto=$1; shift ;; esac
	for ((i = 0; i < 2400; i++)); do
		if [ $proto = tcp ]; then ss -Hltn "sport = :$1" | grep -q . && return 0
		else ss -Hlun "sport = :$1" | grep -q . && return 0; fi
		[ -n "${2:-}" ] && ! kill -0 "$2" 2>/dev/null && return 1
		sleep 0.05
	done
	return 1
}
# The distribution python (not a version-manager shim that forks shells).
PY=$(command -v /usr/bin/python3 || command -v python3)
# Remove RINGSOCK_* and LD_PRELOAD from this shell's environment.
for v in $(env | sed -n 's/^\(RINGSOCK_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
unset LD_PRELOAD
