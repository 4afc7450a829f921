# `ringsock stat` against a live server under the launcher (the bench's
# request-response server, its four connections kept busy by the client
# on the kernel path):
#  - the process is listed, engine on, with its four connections served;
#  - --sockets: each connection with its engine state and the kernel's
#    view, the same connections ss reports for the port, each with a
#    kernel rtt (inet_diag through libnl) like ss's;
#  - --json parses, and its counters grow between two reads;
#  - another user sees nothing of it, and asking for its pid says so;
#  - a killed process's segment is removed by the next `stat`;
#  - RINGSOCK_PUBLISH=0 publishes nothing; an unknown pid exits 1;
#  - a UDP socket nobody reads, flooded: --sockets shows its kernel queue
#    and drops (sock_diag), the same as ss reports, beside the engine's
#    held bytes and udp_drops; the drops, the engine's and the kernel's
#    together, are there (2000 datagrams sent, a 32 KiB SO_RCVBUF).
. "$(dirname "$0")/lib.sh"
need ss
rr_load 4 120
victim=
quiet=
udp=
cleanup() { kill "$cli" "$srv" $victim $quiet $udp 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
# (the four connections are up once the server's copy says so)
up=0
for i in $(seq 300); do
	if "$RS_CLI" stat --json "$srv" >"$TMP/j" 2>/dev/null &&
		"$PY" -c 'import json,sys; p=json.load(open(sys.argv[1]))["processes"][0]; sys.exit(p["sockets_served"] < 4)' "$TMP/j"; then
		up=1
		break
	fi
	sleep 0.1
done
check "the server's copy shows its four connections served" test $up = 1

"$RS_CLI" stat >"$TMP/list"
cat "$TMP/list"
check "stat lists the server, engine on" grep -Eq "^$srv +rs-rr-server +on " "$TMP/list"
check "stat PID exits 0" "$RS_CLI" stat "$srv"

"$RS_CLI" stat --sockets "$srv" >"$TMP/socks"
cat "$TMP/socks"
# (a copy made while the server's thread held its ring shows them "busy":
# on a ring, their bytes unknown this time)
check "--sockets: four connections served (armed, or on a busy ring), ESTAB in the kernel" \
	test "$(grep -Ec " (armed|busy) .* ESTAB " "$TMP/socks")" = 4
check "--sockets: the listener is the kernel's (LISTEN)" grep -q " LISTEN" "$TMP/socks"
# The connections, as LOCAL PEER pairs: ours and ss's for the port.
grep -E " (armed|busy) " "$TMP/socks" | awk '{print $3, $4}' | sort >"$TMP/ours"
ss -tnH state established "( sport = :$port )" | awk '{print $3, $4}' | sort >"$TMP/ss"
check "--sockets: the same connections ss reports" diff "$TMP/ours" "$TMP/ss"
if grep -q "no inet_diag" "$TMP/socks"; then
	echo "skip: this build has no libnl inet_diag (rtt not shown)"
else
	# Every connection has the kernel's rtt; ss's for it is of the same
	# kind (both > 0 ms on a busy loopback connection).
	ok_rtt=1
	while read -r local peer; do
		ours=$(grep " $local *$peer " "$TMP/socks" | sed -n 's/.* rtt \([0-9.]*\)\/.*/\1/p')
		theirs=$(ss -tniH state established "( sport = :${local##*:} and dport = :${peer##*:} )" |
			sed -n 's/.* rtt:\([0-9.]*\)\/.*/\1/p' | head -1)
		echo "rtt $local -> $peer: ringsock stat ${ours:-none} ms, ss ${theirs:-none} ms"
		"$PY" -c 'import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); sys.exit(not (a>0 and b>0))' \
			"${ours:-0}" "${theirs:-0}" || ok_rtt=0
	done <"$TMP/ours"
	check "--sockets: a kernel rtt for every connection, as ss has one" test $ok_rtt = 1
fi

"$RS_CLI" stat --json --sockets "$srv" >"$TMP/j1"
sleep 1
"$RS_CLI" stat --json "$srv" >"$TMP/j2"
check "--json parses, the server with its sockets" "$PY" -c '
import json, sys
p = json.load(open(sys.argv[1]))["processes"][0]
assert p["pid"] == int(sys.argv[2]) and p["engine"] == "on", p
# (armed: "armed", or "armed (kernel reads)" once a socket'"'"'s reads go to
# the kernel, which a loaded machine can bring about; or busy)
s = [x for x in p["sockets"] if x["engine"].startswith("armed") or x["engine"] == "busy"]
assert len(s) == 4 and all(x["kernel"]["state"] == "ESTAB" for x in s), p["sockets"]
' "$TMP/j1" "$srv"
check "counters grow between two reads (bytes sent, calls)" "$PY" -c '
import json, sys
a = json.load(open(sys.argv[1]))["processes"][0]
b = json.load(open(sys.argv[2]))["processes"][0]
assert b["bytes_sent"] > a["bytes_sent"] and b["calls"] > a["calls"], (a["bytes_sent"], b["bytes_sent"])
' "$TMP/j1" "$TMP/j2"
"$RS_CLI" stat --watch=0.2 --count 3 "$srv" >"$TMP/w"
check "--watch --count 3: three refreshes, then exit 0" test "$?:$(grep -c rs-rr-server "$TMP/w")" = 0:3
"$RS_CLI" stat --json --watch=0.2 --count 2 "$srv" >"$TMP/wj"
check "--watch --json: one document per refresh, with rates over the interval" "$PY" -c '
import json, sys
docs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert len(docs) == 2 and docs[1]["processes"][0]["rates"]["calls_per_s"] > 0, docs
' "$TMP/wj"
"$RS_CLI" stat --watch "$srv" >"$TMP/wi" &
watcher=$!
wait_ready "$TMP/wi" rs-rr-server $watcher
kill -INT $watcher
wait $watcher
check "--watch ends on SIGINT with exit 0" test $? = 0

# Another user.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	cp "$RS_CLI" "$TMP/ringsock" && chmod 755 "$TMP" "$TMP/ringsock"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$TMP/ringsock" stat >"$TMP/other" 2>&1
	check "another user's stat does not list the process" sh -c "! grep -q '^$srv ' '$TMP/other'"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$TMP/ringsock" stat "$srv" >"$TMP/other" 2>&1
	rc=$?
	cat "$TMP/other"
	check "another user asking for its pid: exit 1, permission denied" \
		sh -c "[ $rc = 1 ] && grep -q 'permission denied' '$TMP/other'"
else
	echo "skip: the other-user checks need root and setpriv"
fi

# A killed process.
# (Its own file: named by its start time too, for a file of an earlier
# process with the same pid may be there, from a version whose layout
# stat cannot read.)
"$RS_CLI" -- sleep 60 &
victim=$!
vfile=
for i in $(seq 50); do
	vstart=$(sed 's/.*) //' "/proc/$victim/stat" 2>/dev/null | cut -d' ' -f20)
	vfile=/dev/shm/ringsock.$(id -u).$victim.$vstart
	[ -e "$vfile" ] && break
	sleep 0.1
done
check "a process under the launcher publishes its file" ls "$vfile"
kill -9 "$victim"
wait "$victim" 2>/dev/null
"$RS_CLI" stat >/dev/null
check "a killed process's file is removed by the next stat" sh -c "! ls '$vfile' 2>/dev/null"
victim=
# A file of another version's layout (another size; the same header, magic
# to starttime): removed when its process is gone, kept while it runs.
old_file() { # pid start: make ringsock.UID.PID.START, version 3's size
	python3 - "$1" "$2" <<'PY'
import os, struct, sys
pid, start = int(sys.argv[1]), int(sys.argv[2])
ns = int(os.readlink("/proc/self/ns/pid").split("[")[1].rstrip("]"))
path = "/dev/shm/ringsock.%d.%d.%d" % (os.getuid(), pid, start)
with open(path, "xb") as f:
    f.write(struct.pack("<IIIiQQ", 0x31545352, 3, 0, pid, ns, start) + bytes(4096))
PY
}
sleep 60 &
alive=$!
astart=$(sed 's/.*) //' "/proc/$alive/stat" | cut -d' ' -f20)
sh -c 'echo $$ >"$1"' sh "$TMP/gone"
gone=$(cat "$TMP/gone")
old_file "$alive" "$astart"
old_file "$gone" 12345
"$RS_CLI" stat >/dev/null
check "another version's file of a gone process is removed by the next stat" \
	sh -c "! ls /dev/shm/ringsock.$(id -u).$gone.12345 2>/dev/null"
check "another version's file of a running process is kept" ls "/dev/shm/ringsock.$(id -u).$alive.$astart"
kill "$alive"
wait "$alive" 2>/dev/null
rm -f "/dev/shm/ringsock.$(id -u).$alive.$astart"
"$RS_CLI" -- sh -c 'echo $$ >"$1"; sleep 0.3' sh "$TMP/pid"
check "a process that exits removes its file" sh -c "! ls /dev/shm/ringsock.*.$(cat "$TMP/pid").* 2>/dev/null"
# A file-size limit below the file's size: no file, and no SIGXFSZ.
check "a low RLIMIT_FSIZE: the program runs as without us" sh -c "ulimit -f 100; '$RS_CLI' -- /bin/true"
RINGSOCK_PUBLISH=0 "$RS_CLI" -- sleep 60 &
quiet=$!
for i in $(seq 50); do [ "$(readlink /proc/$quiet/exe)" = "$(readlink -f "$(command -v sleep)")" ] && break; sleep 0.1; done
check "RINGSOCK_PUBLISH=0: nothing published" sh -c "! ls /dev/shm/ringsock.*.$quiet.* 2>/dev/null"
kill "$quiet"
quiet=
# Hostile files in /dev/shm: a FIFO, another user's name on our file.
mkfifo "/dev/shm/ringsock.$(id -u).1.1" 2>/dev/null
timeout 10 "$RS_CLI" stat >/dev/null
check "a FIFO named like a file of ours does not hang stat" test $? != 124
rm -f "/dev/shm/ringsock.$(id -u).1.1"
# ---- UDP: the kernel's queues and drops (sock_diag) ----
"$RS_CLI" -- "$PY" -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32768)
s.bind(("127.0.0.1", 0))
s.setblocking(False)
try:
    s.recv(2048)  # (nothing yet: the engine may arm its receive)
except BlockingIOError:
    pass
print(s.getsockname()[1], flush=True)
time.sleep(600)
' >"$TMP/uport" &
udp=$!
wait_ready "$TMP/uport" "[0-9]" $udp
uport=$(cat "$TMP/uport")
"$PY" -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(2000):
    s.sendto(b"x" * 1000, ("127.0.0.1", int(sys.argv[1])))
' "$uport"
# The engine's and the kernel's drops, added (0 when the line is not there).
udp_drops() {
	local d
	d=$(sed -n "s/.*UDP drops: the engine's \([0-9]*\) .*the kernel's \([0-9]*\) .*/\1 \2/p" "$1")
	set -- $d 0 0
	echo $(($1 + $2))
}
# (the engine's copy is rewritten every 100 ms: its drops show up soon)
for i in $(seq 100); do
	"$RS_CLI" stat --sockets "$udp" >"$TMP/usocks"
	[ "$(udp_drops "$TMP/usocks")" -gt 0 ] && break
	sleep 0.1
done
cat "$TMP/usocks"
line=$(grep -E " udp4 +127\.0\.0\.1:$uport " "$TMP/usocks")
check "--sockets: the UDP socket, with the kernel's queues and drops (sock_diag)" \
	sh -c "echo '$line' | grep -Eq ' UNCONN send-q [0-9]+ recv-q [0-9]+ drops [0-9]+ skmem r[0-9]+ rb[0-9]+\$'"
ours=$(echo "$line" | sed -n 's/.* recv-q \([0-9]*\) drops \([0-9]*\) .*/\1 \2/p')
theirs=$(ss -uamnH "( sport = :$uport )" | tr -d '\n' | sed -n 's/^UNCONN *\([0-9]*\) .*skmem:(.*,d\([0-9]*\)).*/\1 \2/p')
echo "recv-q and drops: ringsock stat '$ours', ss '$theirs'"
check "--sockets: the UDP socket's recv-q and drops are ss's" test -n "$ours" -a "$ours" = "$theirs"
total=$(udp_drops "$TMP/usocks")
check "--sockets: drops counted, the engine's and the kernel's ($total of 2000 sent)" test "${total:-0}" -gt 0
"$RS_CLI" stat --json --sockets "$udp" >"$TMP/uj"
check "--json --sockets: the UDP socket's kernel drops and the engine's udp_drops" "$PY" -c '
import json, sys
p = json.load(open(sys.argv[1]))["processes"][0]
u = [x for x in p["sockets"] if x.get("local") == "127.0.0.1:" + sys.argv[2]]
assert len(u) == 1 and u[0]["kind"] == "udp4" and "drops" in u[0]["kernel"], p["sockets"]
assert u[0]["kernel"]["drops"] + p["engine_counters"]["udp_drops"] > 0, u
' "$TMP/uj" "$uport"
kill $udp
wait $udp 2>/dev/null
"$RS_CLI" stat 2147483646 2>"$TMP/err"
check "an unknown pid: exit 1 with a message" sh -c "[ $? = 1 ] && grep -q 'no such process' '$TMP/err'"
finish
