# HAProxy with kernel splicing under the launcher, in front of a plain nginx
# (issue 32: responses truncated, splice spinning on EAGAIN, a soft stop that
# never finished, because the engine held read-ahead bytes splice could not
# get).
#
# nginx (plain, keep-alive) serves files of 1 KiB, 64 KiB and 1 MiB of random
# bytes.  haproxy has an HTTP-mode frontend (splice-auto, splice-request,
# splice-response, http-reuse always, so upstream connections are reused) and
# a TCP-mode frontend with the same splice options.  For nbthread 1 and 2,
# first plain (the reference: a failure there is a setup problem, not the
# library's), then under the launcher, then under it with
# RINGSOCK_ARM_AFTER=0:
#  - single process (-db), each frontend: on one kept-alive connection 6
#    small fetches (so the upstream connection's reads reach the engine
#    before its first splice, as on a long-lived keep-alive connection), then
#    1 KiB, 64 KiB, 1 MiB alternating 10 times; then 200 x 64 KiB and
#    50 x 1 MiB in parallel over 4 kept-alive connections; every body's
#    sha256 checked; wrk for 2 s with 16 connections, no error or non-2xx;
#    SIGUSR1 (soft stop): haproxy exits by itself with status 0;
#  - master-worker (-W): fetches, SIGUSR2 (reload): a new worker, the old
#    one exits by itself; fetches through the new worker intact; SIGUSR1 to
#    the master: everything exits, status 0.
# Under the library the counters must show sockets on the engine.  Once a
# run's traffic fails, its later traffic is skipped (reported as failures)
# so that a broken library costs a bounded time.
# Only timeouts that guard against hangs; loopback only.
. "$(dirname "$0")/lib.sh"
need haproxy
need nginx
need wrk
need curl
need ss
need sha256sum
RS="$RS_CLI"

# Our children not yet waited for (so their ids cannot have been reused):
# killed, with their children, if the test stops early.
LIVE=" "
reap() { # pid: wait for it; its status
	wait "$1"
	local rc=$?
	LIVE=${LIVE/ $1 / }
	return $rc
}
cleanup() {
	local p
	for p in $LIVE; do
		pkill -KILL -P "$p" 2>/dev/null
		kill -KILL "$p" 2>/dev/null
	done
	rm -rf "$TMP"
}
trap cleanup EXIT

# A process exists and is not a zombie.
alive() {
	local st
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
	[ -n "$st" ] && [ "$st" != Z ]
}
wait_gone() { # pid seconds: gone within that many seconds
	local i
	for i in $(seq $(($2 * 10))); do
		alive "$1" || return 0
		sleep 0.1
	done
	return 1
}

# ---- nginx, plain ----
nport=$(free_port)
mkdir -p "$TMP/www"
head -c 1024 /dev/urandom >"$TMP/www/1k.bin"
head -c 65536 /dev/urandom >"$TMP/www/64k.bin"
head -c 1048576 /dev/urandom >"$TMP/www/1m.bin"
sum1k=$(sha256sum <"$TMP/www/1k.bin" | cut -d' ' -f1)
sum64=$(sha256sum <"$TMP/www/64k.bin" | cut -d' ' -f1)
sum1m=$(sha256sum <"$TMP/www/1m.bin" | cut -d' ' -f1)
cat >"$TMP/nginx.conf" <<CONF
worker_processes 1;
daemon off;
master_process off;
pid $TMP/nginx.pid;
error_log $TMP/nginx.err warn;
events { worker_connections 1024; }
http {
    log_format conn '\$connection \$connection_requests \$status \$body_bytes_sent';
    access_log $TMP/access.log conn;
    keepalive_timeout 60s;
    keepalive_requests 100000;
    server {
        listen 127.0.0.1:$nport;
        root $TMP/www;
        location / { }
    }
    client_body_temp_path $TMP/body; proxy_temp_path $TMP/proxy;
    fastcgi_temp_path $TMP/fcgi; uwsgi_temp_path $TMP/uwsgi; scgi_temp_path $TMP/scgi;
}
CONF
nginx -c "$TMP/nginx.conf" -p "$TMP" 2>"$TMP/nginx.out" &
npid=$!
LIVE+="$npid "
wait_port "$nport" $npid || { bad "setup: nginx did not start"; cat "$TMP/nginx.out"; finish; exit 1; }

hap_cfg() { # file nbthread http_port tcp_port
	cat >"$1" <<CONF
global
    nbthread $2
    maxconn 2000
defaults
    mode http
    timeout connect 10s
    timeout client 60s
    timeout server 60s
    timeout http-keep-alive 30s
    option splice-auto
    option splice-request
    option splice-response
frontend fe_http
    bind 127.0.0.1:$3
    default_backend be_http
backend be_http
    http-reuse always
    server ngx 127.0.0.1:$nport
frontend fe_tcp
    mode tcp
    bind 127.0.0.1:$4
    default_backend be_tcp
backend be_tcp
    mode tcp
    server ngx 127.0.0.1:$nport
CONF
}

# Once a run's traffic has failed, its later traffic is skipped (each failing
# batch waits for its timeout): BROKEN names the first failure.
BROKEN=""
skipped() { # name: true (and a failure) when the run is already broken
	[ -z "$BROKEN" ] && return 1
	bad "$1: skipped after: $BROKEN"
}
# fetch NAME PORT N64 N1M: on one kept-alive connection 6 x 1 KiB, then
# 1 KiB, 64 KiB, 1 MiB alternating 10 times; then N64 x 64 KiB and N1M x 1 MiB
# in parallel (4 connections, kept alive); every body checked.  Timeouts only
# guard against hangs.
fetch() {
	local name=$1 port=$2 n64=$3 n1m=$4 d="$TMP/got" u="http://127.0.0.1:$2" f0=$FAILS
	skipped "$name" && return
	rm -rf "$d"
	mkdir -p "$d"
	timeout 60 curl -s --max-time 40 -w '%{http_code} %{num_connects}\n' \
		"$u/x[1-6]/../1k.bin" -o "$d/s#1" "$u/x[1-10]/../{1k,64k,1m}.bin" -o "$d/c#2_#1" \
		>"$d/codes2" 2>"$d/err"
	local good1k good64 good1m
	good1k=$(sha256sum "$d"/s* "$d"/c1k_* 2>/dev/null | grep -c "^$sum1k ")
	good64=$(sha256sum "$d"/c64k_* 2>/dev/null | grep -c "^$sum64 ")
	good1m=$(sha256sum "$d"/c1m_* 2>/dev/null | grep -c "^$sum1m ")
	check "$name: sequential: 16 bodies of 1 KiB, 10 of 64 KiB, 10 of 1 MiB intact (got $good1k, $good64, $good1m)" \
		test "$good1k/$good64/$good1m" = 16/10/10
	check "$name: sequential: every response 200 on one kept-alive connection" \
		test "$(awk '$1 == 200 {n++; c += $2} END {print n + 0, c + 0}' "$d/codes2")" = "36 1"
	if [ "$FAILS" = "$f0" ]; then
		timeout 120 curl -s --parallel --parallel-max 4 --max-time 60 -w '%{http_code}\n' \
			"$u/64k.bin?[1-$n64]" -o "$d/a#1" "$u/1m.bin?[1-$n1m]" -o "$d/b#1" >"$d/codes" 2>>"$d/err"
		good64=$(sha256sum "$d"/a* 2>/dev/null | grep -c "^$sum64 ")
		good1m=$(sha256sum "$d"/b* 2>/dev/null | grep -c "^$sum1m ")
		check "$name: parallel: $n64 bodies of 64 KiB and $n1m of 1 MiB intact (got $good64 and $good1m)" \
			test "$good64/$good1m" = "$n64/$n1m"
		check "$name: parallel: every response 200" test "$(grep -c '^200$' "$d/codes")" = $((n64 + n1m))
	fi
	[ "$FAILS" = "$f0" ] || BROKEN="$name"
	rm -rf "$d"
}

# wrkrun NAME PORT: 2 s, 16 connections, no socket error or non-2xx.
wrkrun() {
	local f0=$FAILS
	skipped "$1: wrk" && return
	timeout 60 wrk -t 1 -c 16 -d 2s --timeout 20s "http://127.0.0.1:$2/64k.bin" >"$TMP/wrk.out" 2>&1
	local rc=$?
	check "$1: wrk exit 0" test $rc = 0
	check "$1: wrk requests completed" grep -qE "[1-9][0-9]* requests in" "$TMP/wrk.out"
	if grep -E "Socket errors|Non-2xx" "$TMP/wrk.out"; then
		bad "$1: wrk no socket errors or non-2xx"
	else
		ok "$1: wrk no socket errors or non-2xx"
	fi
	[ "$FAILS" = "$f0" ] || BROKEN="$1: wrk"
}

# One run: label nbthread runner...  (the runner is empty for plain)
run() {
	local label=$1 nbt=$2
	shift 2
	local name="$label nbthread=$nbt" dir="$TMP/run" fails0=$FAILS
	BROKEN=""
	rm -rf "$dir"
	mkdir -p "$dir"
	local hp tp
	hp=$(free_port)
	tp=$(free_port)
	while [ "$tp" = "$hp" ]; do tp=$(free_port); done
	hap_cfg "$dir/h.cfg" "$nbt" "$hp" "$tp"
	: >"$TMP/access.log"

	# -- single process: fetches, wrk, soft stop --
	"$@" haproxy -f "$dir/h.cfg" -db >"$dir/db.log" 2>&1 &
	local hpid=$!
	LIVE+="$hpid "
	if wait_port "$hp" $hpid && wait_port "$tp" $hpid; then
		fetch "$name http" "$hp" 200 50
		fetch "$name tcp" "$tp" 200 50
		wrkrun "$name http" "$hp"
		wrkrun "$name tcp" "$tp"
		[ -n "$BROKEN" ] || check "$name: nginx served several requests on one upstream connection" \
			sh -c 'awk "\$2 > 1" "$0" | grep -q .' "$TMP/access.log"
	else
		bad "$name: haproxy did not listen"
	fi
	kill -USR1 $hpid 2>/dev/null
	if wait_gone $hpid 20; then
		ok "$name: soft stop (SIGUSR1): haproxy exits by itself within 20 s"
		reap $hpid
		local rc=$?
		check "$name: soft stop: exit status 0 (got $rc)" test $rc = 0
	else
		bad "$name: soft stop (SIGUSR1): haproxy exits by itself within 20 s"
		kill -KILL $hpid
		reap $hpid
	fi

	# -- master-worker: reload, old worker leaves, new one serves --
	"$@" haproxy -W -f "$dir/h.cfg" -db >"$dir/mw.log" 2>&1 &
	local mpid=$! w1 w2="" i
	LIVE+="$mpid "
	if wait_port "$hp" $mpid && wait_port "$tp" $mpid; then
		for i in $(seq 200); do
			w1=$(pgrep -P $mpid | head -1)
			[ -n "$w1" ] && break
			sleep 0.1
		done
		check "$name -W: a worker (got ${w1:-none})" test -n "$w1"
		fetch "$name -W http" "$hp" 50 10
		fetch "$name -W tcp" "$tp" 50 10
		kill -USR2 $mpid
		for i in $(seq 200); do
			w2=$(pgrep -P $mpid | grep -vx "${w1:-0}" | head -1)
			[ -n "$w2" ] && break
			sleep 0.1
		done
		check "$name -W: reload (SIGUSR2) started a new worker" test -n "$w2"
		check "$name -W: the old worker exits by itself within 20 s" wait_gone "${w1:-0}" 20
		wait_port "$hp" $mpid && wait_port "$tp" $mpid
		fetch "$name -W reloaded http" "$hp" 50 10
		fetch "$name -W reloaded tcp" "$tp" 50 10
	else
		bad "$name -W: haproxy did not listen"
	fi
	kill -USR1 $mpid 2>/dev/null
	if wait_gone $mpid 20; then
		ok "$name -W: soft stop (SIGUSR1): master and workers exit within 20 s"
		reap $mpid
		local rc=$?
		check "$name -W: soft stop: exit status 0 (got $rc)" test $rc = 0
	else
		bad "$name -W: soft stop (SIGUSR1): master and workers exit within 20 s"
		pkill -KILL -P $mpid
		kill -KILL $mpid
		reap $mpid
	fi

	if [ "$label" != plain ]; then
		cat "$dir"/stats.* >"$dir/stats" 2>/dev/null
		check "$name: sockets accelerated, per the counters written at exit (got $(stat_sum "$dir/stats" accelerated))" \
			test "$(stat_sum "$dir/stats" accelerated)" -gt 0
		echo "info: $name: passthrough option=$(stat_sum "$dir/stats" option)" \
			"detached=$(stat_sum "$dir/stats" detached) direct=$(stat_sum "$dir/stats" direct)"
	fi
	if [ "$FAILS" != "$fails0" ]; then
		echo "--- $name: haproxy output"
		tail -n 20 "$dir/db.log" "$dir/mw.log"
	fi
}

for nbt in 1 2; do
	run plain "$nbt"
done
if [ "$FAILS" != 0 ]; then
	echo "setup problem: plain haproxy fails these checks too; the library runs would tell nothing"
	finish
	exit 1
fi
for nbt in 1 2; do
	run ringsock "$nbt" "$RS" --stats="$TMP/run/stats.%p" --
	run "ringsock ARM_AFTER=0" "$nbt" "$RS" --stats="$TMP/run/stats.%p" -s ARM_AFTER=0 --
done
kill -QUIT $npid
wait_gone $npid 20 && reap $npid
check "nginx: no error logged" sh -c '! grep -q "\[error\]\|\[crit\]\|\[alert\]" "$0"' "$TMP/nginx.err"
finish
