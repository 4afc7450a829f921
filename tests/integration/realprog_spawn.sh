# Real programs that start children or bring their own io_uring, plain and
# under the library; each must behave exactly as it does without ringsock.
#
# 1. Python (/usr/bin/python3, realprog_spawn_server.py): a server with
#    engine-served TCP connections, each with a block of the peer's data
#    read ahead, starts children with subprocess.run(close_fds=False),
#    subprocess.run(close_fds=True), subprocess.run(pass_fds=[the socket])
#    (the child writes on it, after a note the parent sent before),
#    os.posix_spawn, os.system, subprocess.Popen(stdout=PIPE) and
#    asyncio.create_subprocess_exec under a SIGCHLD-driven child watcher.
#    Python's subprocess uses vfork: the child resets every signal handler
#    and closes every descriptor in the parent's memory before exec.  After
#    each spawn the SIGTERM, SIGUSR1 and SIGCHLD handlers must still run and
#    every connection must carry a checksummed exchange both ways.  Runs:
#    plain, library with default knobs, library with RINGSOCK_ARM_AFTER=0;
#    the full output must be identical, the counters must show the engine
#    served the connections, and at least one block must have been held by
#    the engine (read ahead) while a child ran.
#    Before the fix the vfork child's signal resets replaced the parent's
#    handlers (close_fds=False step: TERM, USR1 and CHLD handlers lost), and
#    its close() of an engine socket spun on the parent's registered ring
#    (io_uring_enter EINVAL) while the parent hung in vfork (close_fds=True
#    step).
#
# 2. Node.js (realprog_uv_echo.js): an echo server and three clients in one
#    libuv loop, many small messages of various sizes, every byte checked;
#    connection 0 also starts children now and then (spawnSync, execFile).
#    libuv 1.45 and later set up their own io_uring with
#    syscall(__NR_io_uring_setup) and add sockets to epoll through it
#    (IORING_OP_EPOLL_CTL), which the engine cannot see: the engine must
#    step aside (passthrough uring=N).  The node 20.20.2 (libuv 1.46.0) this
#    was written with calls io_uring_setup only with UV_USE_IO_URING=1
#    (strace -f -e trace=io_uring_setup); which settings use io_uring is
#    found out on each machine by counting io_uring descriptors in a plain
#    run (--uring-fds).  Runs: plain, then under the library with
#    UV_USE_IO_URING unset and =1, each with default knobs and
#    RINGSOCK_ARM_AFTER=0.  Before the fix, libuv's io_uring with
#    ARM_AFTER=0 hung at the first echo (the engine took the data libuv's
#    epoll was waiting for), and the counters had no passthrough uring.
#    Debian 12's own nodejs (18.20, linked with Debian's libuv1 1.44.2)
#    never uses io_uring: installed on a bare machine, it runs the
#    engine-served half only and says so.
#
# Every run is bounded by timeout; nothing here depends on how fast it runs.
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
: "${RS_LIB:=$HERE/../../build/libringsock.so}"
SRV=$HERE/realprog_spawn_server.py
JS=$HERE/realprog_uv_echo.js
T=40 # seconds for any one program (they take 1 to 3)
unset UV_USE_IO_URING
SUMMARY=()
note() { SUMMARY+=("$*"); }

ran_py=0 ran_node=0

# ------------------------------------------------------------- Python --
# py_run NAME [VAR=VALUE...]: the server and its peer; NAME plain runs
# without the library.  Leaves $TMP/py-NAME/{server,peer}.{out,err,rc,stats}.
py_run() {
	local name=$1 d=$TMP/py-$1
	shift
	mkdir -p "$d"
	local pre_s=() pre_p=()
	if [ "$name" != plain ]; then
		pre_s=(LD_PRELOAD="$RS_LIB" RINGSOCK_STATS="$d/srvstats.%p")
		pre_p=(LD_PRELOAD="$RS_LIB" RINGSOCK_STATS="$d/peerstats.%p")
	fi
	env "${pre_s[@]}" "$@" timeout -k 3 $T "$PY" "$SRV" server "$d/port" >"$d/server.out" 2>"$d/server.err" &
	local spid=$!
	for _ in $(seq 200); do
		[ -s "$d/port" ] && break
		kill -0 $spid 2>/dev/null || break
		sleep 0.05
	done
	if [ -s "$d/port" ]; then
		env "${pre_p[@]}" "$@" timeout -k 3 $T "$PY" "$SRV" peer "$(cat "$d/port")" >"$d/peer.out" 2>"$d/peer.err"
		echo $? >"$d/peer.rc"
	else
		echo "server did not listen" >"$d/peer.out"
		echo 1 >"$d/peer.rc"
	fi
	# The server ends right after its peer; one that does not is stuck
	# (before the fix: in vfork, its child spinning in io_uring_enter).
	for _ in $(seq 100); do
		kill -0 $spid 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 $spid 2>/dev/null; then
		echo "    python $name: the server is still running 5 s after its peer ended; its processes:"
		ps -e -o pgid=,pid=,stat=,wchan:24=,args= | awk -v g=$spid '$1 == g' | cut -c1-160 | sed 's/^/      /'
		kill -KILL -- -$spid 2>/dev/null # timeout's own process group
	fi
	wait $spid 2>/dev/null
	echo $? >"$d/server.rc"
	cat "$d"/srvstats.* >"$d/server.stats" 2>/dev/null
	cat "$d"/peerstats.* >"$d/peer.stats" 2>/dev/null
}
same_output() { # REF RUN FILE: identical, else show the difference
	if cmp -s "$1/$3" "$2/$3"; then return 0; fi
	diff "$1/$3" "$2/$3" | head -20 | sed 's/^/    /'
	return 1
}
rc_of() { cat "$1" 2>/dev/null || echo missing; }

if [ -x "$PY" ]; then
	ran_py=1
	py_run plain
	P=$TMP/py-plain
	check "python plain: server exit 0 ($(rc_of $P/server.rc))" test "$(rc_of $P/server.rc)" = 0
	check "python plain: peer exit 0 ($(rc_of $P/peer.rc))" test "$(rc_of $P/peer.rc)" = 0
	check "python plain: every step passed" grep -q '^server: all steps ok$' $P/server.out
	for run in default arm0; do
		if [ $run = arm0 ]; then py_run $run RINGSOCK_ARM_AFTER=0; else py_run $run; fi
		D=$TMP/py-$run
		src=$(rc_of $D/server.rc) prc=$(rc_of $D/peer.rc)
		check "python $run: server exit 0 ($src; 124/137: killed)" test "$src" = 0
		check "python $run: peer exit 0 ($prc)" test "$prc" = 0
		check "python $run: server output identical to plain" same_output $P $D server.out
		check "python $run: peer output identical to plain" same_output $P $D peer.out
		if ! cmp -s $P/server.out $D/server.out; then
			echo "    (last server line: $(tail -n 1 $D/server.out))"
		fi
		sacc=$(stat_sum $D/server.stats accelerated)
		pacc=$(stat_sum $D/peer.stats accelerated)
		# 8 connections: "long" plus one fresh per step (7 steps).
		check "python $run: the engine served the server's 8 connections (accelerated=$sacc)" test "${sacc:-0}" -ge 8
		check "python $run: the engine served the peer's 8 connections (accelerated=$pacc)" test "${pacc:-0}" -ge 8
		held=$(grep -c 'readable=[1-9][0-9]* kernel=0$' $D/server.err)
		check "python $run: blocks held by the engine while a child ran: $held of 14" test "$held" -ge 1
		note "python $run: server rc=$src peer rc=$prc, accelerated server=$sacc peer=$pacc, read ahead $held/14"
	done
else
	echo "skip: python: /usr/bin/python3 is not installed"
	note "python: skipped (no /usr/bin/python3)"
fi

# ------------------------------------------------------------ Node.js --
if ! command -v node >/dev/null 2>&1 && ! command -v nodejs >/dev/null 2>&1; then
	# A bare CI machine: Debian's nodejs (see the top of this file).
	# Other tests may run apt at the same time (ctest -j2): wait for its lock.
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "node is not installed: installing Debian's nodejs"
		APT=(timeout 400 apt-get -y -q -o DPkg::Lock::Timeout=120)
		DEBIAN_FRONTEND=noninteractive "${APT[@]}" install --no-install-recommends nodejs >$TMP/apt.log 2>&1 ||
			{ "${APT[@]}" update >>$TMP/apt.log 2>&1 &&
				DEBIAN_FRONTEND=noninteractive "${APT[@]}" install --no-install-recommends nodejs >>$TMP/apt.log 2>&1; } ||
			tail -n 5 $TMP/apt.log
	else
		echo "node is not installed, and apt-get cannot install it (not root)"
	fi
fi
NODE=$(command -v node || command -v nodejs)
if [ -n "$NODE" ]; then
	ran_node=1
	uv=$(timeout 20 "$NODE" -p process.versions.uv 2>/dev/null)
	echo "node $("$NODE" --version 2>/dev/null) ($NODE), libuv $uv"
	# Which settings make this node's libuv use io_uring: count its rings
	# in plain runs.
	declare -A URING
	for u in unset 1; do
		if [ $u = unset ]; then n=$(timeout -k 3 20 "$NODE" "$JS" --uring-fds 2>/dev/null)
		else n=$(UV_USE_IO_URING=$u timeout -k 3 20 "$NODE" "$JS" --uring-fds 2>/dev/null); fi
		URING[$u]=${n:-0}
		echo "node, UV_USE_IO_URING $u: libuv's io_uring instances: ${n:-?}"
	done
	note "node $("$NODE" --version) libuv $uv: io_uring with UV_USE_IO_URING unset: ${URING[unset]}, =1: ${URING[1]}"

	# node_run NAME LIB|- [VAR=VALUE...]
	node_run() {
		local name=$1 lib=$2 d=$TMP/node-$1
		shift 2
		mkdir -p "$d"
		local pre=()
		[ "$lib" != - ] && pre=(LD_PRELOAD="$lib" RINGSOCK_STATS="$d/stats.%p")
		env "${pre[@]}" "$@" timeout -k 3 $T "$NODE" "$JS" >"$d/out" 2>"$d/err"
		echo $? >"$d/rc"
		cat "$d"/stats.* >"$d/stats" 2>/dev/null
	}
	node_run plain -
	P=$TMP/node-plain
	if [ "$(rc_of $P/rc)" != 0 ] || ! grep -q '^echo: all ok$' $P/out; then
		# Without the library: this node itself does not work here.
		echo "node plain run failed (exit $(rc_of $P/rc)):"
		tail -n 5 $P/out $P/err | sed 's/^/    /'
		NODE=""
	fi
fi
if [ -n "$NODE" ]; then
	ok "node plain: exit 0, every byte echoed"
	node_run plain-uring - UV_USE_IO_URING=1
	check "node plain, UV_USE_IO_URING=1: output identical" same_output $P $TMP/node-plain-uring out
	for u in unset 1; do
		for arm in default 0; do
			name=uv$u-arm$arm
			envs=()
			[ $u != unset ] && envs+=(UV_USE_IO_URING=$u)
			[ $arm != default ] && envs+=(RINGSOCK_ARM_AFTER=$arm)
			node_run $name "$RS_LIB" "${envs[@]}"
			D=$TMP/node-$name
			rc=$(rc_of $D/rc)
			desc="node UV_USE_IO_URING=$u ARM_AFTER=$arm"
			check "$desc: exit 0 ($rc; 2: watchdog, 124/137: timed out)" test "$rc" = 0
			check "$desc: output identical to plain" same_output $P $D out
			grep -q TIMEOUT $D/out && echo "    $(grep TIMEOUT $D/out)"
			acc=$(stat_sum $D/stats accelerated)
			ur=$(stat_sum $D/stats uring)
			if [ "${URING[$u]}" -gt 0 ]; then
				# libuv's own ring: every connected socket (3 clients, 3
				# accepted) goes back to the kernel, none is served.
				check "$desc: libuv uses io_uring, the engine stepped aside (passthrough uring=$ur)" test "${ur:-0}" -ge 6
				check "$desc: no socket served beside libuv's ring (accelerated=$acc)" test "${acc:-0}" = 0
			else
				check "$desc: no io_uring in libuv, the engine served the 6 connected sockets (accelerated=$acc)" test "${acc:-0}" -ge 6
				check "$desc: nothing passed through for io_uring (uring=$ur)" test "${ur:-0}" = 0
			fi
			note "$desc: rc=$rc accelerated=$acc uring=$ur (libuv rings: ${URING[$u]})"
		done
	done
	if [ "${URING[unset]}" = 0 ] && [ "${URING[1]}" = 0 ]; then
		echo "note: this node's libuv ($uv) never uses io_uring: the passthrough-uring case was not exercised"
		note "node: libuv $uv never uses io_uring; passthrough uring not exercised"
	fi
else
	ran_node=0
	echo "skip: node: not installed, Debian's nodejs could not be installed, or it does not run"
	note "node: skipped (no working node)"
fi

if [ $ran_py = 0 ] && [ $ran_node = 0 ]; then
	echo "skip: neither /usr/bin/python3 nor node is available"
	exit 77
fi
echo "---- summary (library: $RS_LIB)"
for l in "${SUMMARY[@]}"; do echo "  $l"; done
finish
