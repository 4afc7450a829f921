# `ringsock stat --openmetrics` and `--serve` with the real tools, against
# a live server under the launcher (the bench's request-response server,
# its four connections kept busy by the client on the kernel path):
#  - promtool check metrics accepts a scrape (and its lint is silent);
#    every family has # HELP and # TYPE; the server's series carry its pid
#    and command, pass-through a reason label, sockets a state label (its
#    four connections armed, or on a ring busy when the copy was made);
#  - a process that exits is gone from the next scrape;
#  - --serve: GET /metrics answers the same text (200, the 0.0.4 content
#    type), another path 404, another method 405; a silent client does not
#    keep it from answering the next one;
#  - a real Prometheus server, started here on loopback (own storage, a 1 s
#    scrape interval) with a scrape config aimed at --serve, scrapes it:
#    its query API returns ringsock_ series of the server whose counters
#    grew between two scrapes, and the target is up;
#  - a process with more sockets than the published table holds (8192):
#    the count left out, in stat --sockets and as
#    ringsock_sockets_unpublished, is its open sockets less 8192;
#  - bad input: a port in use, an address that does not parse, --serve
#    with a PID: exit status 2 and a message.
. "$(dirname "$0")/lib.sh"
need ss
need curl
need promtool
need prometheus
rr_load 4 600
serve= prom= victim= silent=
cleanup() {
	kill $cli $srv $serve $prom $victim 2>/dev/null
	[ -n "$silent" ] && exec 3>&-
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
# (the four connections are up, and requests answered, once the server's
# copy says so: the copies the process makes as the engine takes each
# socket come before its first request)
served() {
	grep -q "^ringsock_sockets_served_total{pid=\"$srv\",command=\"rs-rr-server\"} [4-9]" "$1" &&
		grep -Eq "^ringsock_uring_enters_total\{pid=\"$srv\",command=\"rs-rr-server\"\} [1-9]" "$1"
}
up=0
for i in $(seq 300); do
	"$RS_CLI" stat --openmetrics "$srv" >"$TMP/m1" 2>/dev/null && served "$TMP/m1" && { up=1; break; }
	sleep 0.1
done
check "--openmetrics PID: the server with its four connections served" test $up = 1

# ---- one scrape, checked by promtool and by the format's rules ----
"$RS_CLI" stat --openmetrics >"$TMP/all"
check "--openmetrics exits 0" test $? = 0
promtool check metrics <"$TMP/all" >"$TMP/lint" 2>&1
rc=$?
cat "$TMP/lint"
check "promtool check metrics accepts the scrape, its lint silent" sh -c "[ $rc = 0 ] && ! [ -s '$TMP/lint' ]"
check "every family has # HELP and # TYPE, its samples together, labels pid and command first" "$PY" -c '
import re, sys
helped, typed, seen, done, cur = set(), {}, set(), set(), None
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.startswith("# HELP "):
        helped.add(line.split()[2])
        continue
    if line.startswith("# TYPE "):
        _, _, name, t = line.split()
        typed[name] = t
        continue
    m = re.match(r"([a-z_]+)\{pid=\"[0-9]+\",command=\"(?:[^\"\\]|\\.)*\"(,(reason|state)=\"[a-z_]+\")?\} [0-9.]+$", line)
    assert m, line
    name = m.group(1)
    assert name in helped and name in typed, name
    assert name.startswith("ringsock_"), name
    assert (typed[name] == "counter") == name.endswith("_total"), name
    if name != cur:
        assert name not in done, "samples of %s apart" % name
        if cur: done.add(cur)
        cur = name
    seen.add(name)
assert seen == set(typed) == helped, (set(typed) - seen)
print(len(seen), "families")
' "$TMP/all"
l='pid="'$srv'",command="rs-rr-server"'
check "the server's bytes and calls" grep -Eq "^ringsock_sent_bytes_total\{$l\} [1-9]" "$TMP/all"
check "pass-through by reason (a reason label per reason)" \
	test "$(grep -c "^ringsock_sockets_passed_through_total{$l,reason=" "$TMP/all")" = 14
n4=$(grep -E "^ringsock_sockets\{$l,state=\"(armed|armed_kernel_reads|busy)\"\}" "$TMP/all" | awk '{s+=$2} END {print s+0}')
check "sockets by state: its four connections armed (its reads the engine's or the kernel's) or on a busy ring ($n4)" \
	test "$n4" = 4
check "sockets by state: its listener tracked" grep -q "^ringsock_sockets{$l,state=\"tracked\"} 1$" "$TMP/all"
check "no socket left out of the published table" grep -q "^ringsock_sockets_unpublished{$l} 0$" "$TMP/all"
check "the engine's counters (uring_enters grows with the requests)" \
	grep -Eq "^ringsock_uring_enters_total\{$l\} [1-9]" "$TMP/all"

# ---- a process that exits disappears ----
"$RS_CLI" -- sleep 600 &
victim=$!
for i in $(seq 100); do "$RS_CLI" stat --openmetrics | grep -q "pid=\"$victim\"" && break; sleep 0.1; done
check "a second process is in the scrape" sh -c "'$RS_CLI' stat --openmetrics | grep -q 'pid=\"$victim\"'"
kill "$victim"
wait "$victim" 2>/dev/null
gone=$victim
victim=
check "once it exits, it is gone from the next scrape" sh -c "! '$RS_CLI' stat --openmetrics | grep -q 'pid=\"$gone\"'"

# ---- --serve ----
"$RS_CLI" stat --serve 127.0.0.1:0 2>"$TMP/serve.err" &
serve=$!
wait_ready "$TMP/serve.err" serving $serve
cat "$TMP/serve.err"
sport=$(sed -n 's|.*serving http://127\.0\.0\.1:\([0-9]*\)/metrics|\1|p' "$TMP/serve.err")
check "--serve 127.0.0.1:0 says where it listens" test -n "$sport"
url=http://127.0.0.1:$sport
code=$(curl -s -o "$TMP/got" -D "$TMP/hdr" -w '%{http_code}' -H 'Accept-Encoding: gzip' \
	-H 'Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1' "$url/metrics")
check "GET /metrics: 200 (gzip accepted, identity sent)" \
	sh -c "[ '$code' = 200 ] && ! grep -qi '^content-encoding' '$TMP/hdr'"
check "GET /metrics: Content-Type text/plain; version=0.0.4" grep -qi '^content-type: text/plain; version=0.0.4' "$TMP/hdr"
check "GET /metrics: promtool accepts it" promtool check metrics <"$TMP/got"
check "GET /metrics: the server's series" grep -q "^ringsock_sent_bytes_total{$l} " "$TMP/got"
check "another path: 404" test "$(curl -s -o /dev/null -w '%{http_code}' "$url/")" = 404
check "another path: 404 (/metricsx)" test "$(curl -s -o /dev/null -w '%{http_code}' "$url/metricsx")" = 404
check "another method: 405" test "$(curl -s -o /dev/null -w '%{http_code}' -X POST -d x "$url/metrics")" = 405
# A client that connects and says nothing: the server answers the next
# one after its read timeout, never hangs on it.
exec 3<>"/dev/tcp/127.0.0.1/$sport" && silent=1
check "a silent client does not hang the server" \
	test "$(curl -s -m 120 -o /dev/null -w '%{http_code}' "$url/metrics")" = 200
exec 3>&-
silent=

# ---- a real Prometheus ----
pport=$(free_port)
mkdir -p "$TMP/tsdb"
cat >"$TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: ringsock
    static_configs:
      - targets: ['127.0.0.1:$sport']
EOF
check "promtool check config accepts the test's scrape config" promtool check config "$TMP/prometheus.yml"
prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/tsdb" \
	--web.listen-address="127.0.0.1:$pport" >"$TMP/prom.log" 2>&1 &
prom=$!
api=http://127.0.0.1:$pport/api/v1
# The PromQL query: the server's bytes sent over the last minute, every
# sample scraped; done when two of them differ (growing).
query="ringsock_sent_bytes_total{job=\"ringsock\",pid=\"$srv\",command=\"rs-rr-server\"}[1m]"
grew=0
for i in $(seq 600); do
	if curl -s -G "$api/query" --data-urlencode "query=$query" >"$TMP/q" 2>/dev/null &&
		"$PY" -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "success"
vals = [float(v) for s in r["data"]["result"] for _, v in s["values"]]
print(vals)
sys.exit(not (len(vals) >= 2 and vals[-1] > vals[0]))
' "$TMP/q" >"$TMP/vals"; then
		grew=1
		break
	fi
	kill -0 $prom 2>/dev/null || break
	sleep 0.2
done
echo "query $query: $(cat "$TMP/vals" 2>/dev/null)"
[ $grew = 1 ] || tail -20 "$TMP/prom.log"
check "Prometheus scraped --serve: the server's bytes sent grew between two scrapes" test $grew = 1
curl -s -G "$api/query" --data-urlencode 'query=up{job="ringsock"}' >"$TMP/up"
check "Prometheus: the target is up" "$PY" -c '
import json, sys
r = json.load(open(sys.argv[1]))["data"]["result"]
assert len(r) == 1 and r[0]["value"][1] == "1", r
' "$TMP/up"
curl -s -G "$api/query" --data-urlencode "query={__name__=~\"ringsock_.+\",pid=\"$srv\"}" >"$TMP/names"
check "Prometheus: the server's ringsock_ series, counters and gauges" "$PY" -c '
import json, sys
names = {s["metric"]["__name__"] for s in json.load(open(sys.argv[1]))["data"]["result"]}
need = {"ringsock_socket_calls_total", "ringsock_sockets", "ringsock_sockets_passed_through_total",
        "ringsock_engine_running", "ringsock_uring_enters_total"}
assert need <= names, need - names
' "$TMP/names"
kill $prom
wait $prom 2>/dev/null
prom=

# ---- more sockets than the published table holds ----
if (ulimit -n 8600) 2>/dev/null; then
	(ulimit -n 8600; exec "$RS_CLI" -- "$PY" -c '
import socket, sys, time
socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for i in range(8300)]
time.sleep(0.3)  # (a process without a ring publishes at a socket
socks.append(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))  # creation, at most every 100 ms)
print("ready", flush=True)
time.sleep(600)
' >"$TMP/many") &
	victim=$!
	wait_ready "$TMP/many" ready $victim
	open=$(ls -l /proc/$victim/fd 2>/dev/null | grep -c 'socket:')
	"$RS_CLI" stat --sockets "$victim" >"$TMP/manys"
	left=$(sed -n 's/^  (\([0-9]*\) more sockets not listed: a process publishes at most 8192)$/\1/p' "$TMP/manys")
	"$RS_CLI" stat --openmetrics "$victim" >"$TMP/manym"
	gauge=$(sed -n "s/^ringsock_sockets_unpublished{pid=\"$victim\",command=\"[^\"]*\"} \([0-9]*\)$/\1/p" "$TMP/manym")
	echo "$open sockets open: stat says ${left:-none} not listed, ringsock_sockets_unpublished ${gauge:-none}"
	check "more than 8192 sockets: stat --sockets lists 8192 and counts the rest" \
		test "$(grep -c ' udp4 ' "$TMP/manys"):${left:-x}" = "8192:$((open - 8192))"
	check "more than 8192 sockets: ringsock_sockets_unpublished counts the rest" test "${gauge:-x}" = $((open - 8192))
	kill $victim
	wait $victim 2>/dev/null
	victim=
else
	echo "skip: the more-than-8192-sockets check needs ulimit -n 8600"
fi

# ---- bad input ----
"$RS_CLI" stat --serve "127.0.0.1:$sport" 2>"$TMP/err"
rc=$?
cat "$TMP/err"
check "--serve on a port in use: exit 2, says so" sh -c "[ $rc = 2 ] && grep -q 'in use' '$TMP/err'"
for bad in 300.1.2.3:80 localhost:9100 127.0.0.1:http 127.0.0.1:70000 '[::1:80' 127.0.0.1:-1 ''; do
	"$RS_CLI" stat --serve "$bad" 2>"$TMP/err"
	rc=$?
	check "--serve '$bad': exit 2 with a message" sh -c "[ $rc = 2 ] && grep -q 'ringsock stat: --serve' '$TMP/err'"
done
"$RS_CLI" stat --serve 127.0.0.1:0 "$srv" 2>"$TMP/err"
check "--serve with a PID: exit 2" test $? = 2
"$RS_CLI" stat --openmetrics --json 2>"$TMP/err"
check "--openmetrics --json: exit 2" test $? = 2
"$RS_CLI" stat --openmetrics 2147483646 >/dev/null 2>"$TMP/err"
check "--openmetrics with an unknown pid: exit 1 with a message" \
	sh -c "[ $? = 1 ] && grep -q 'no such process' '$TMP/err'"
kill $serve
wait $serve
check "--serve ends on SIGTERM with exit 0" test $? = 0
serve=
finish
