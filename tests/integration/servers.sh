# Event-loop servers under the launcher, on the io_uring engine:
#  - nginx + wrk: every response checked, plus a byte-for-byte fetch of a
#    1 KiB and a 3 MiB file through a client that is itself under ringsock;
#  - redis-server with redis-benchmark and redis-cli, values read back
#    (small and 1 MiB), both ends under ringsock.
# The counters must show the engine carried the connections.
. "$(dirname "$0")/lib.sh"
need nginx
need wrk
need redis-server
need redis-benchmark
need redis-cli
need ss
RS="$RS_CLI"


# ---- nginx ----
port=$(free_port)
mkdir -p "$TMP/www"
"$PY" -c "import sys; open(sys.argv[1],'wb').write(bytes((i*7)%251 for i in range(1024)))" "$TMP/www/1k.bin"
head -c $((3 << 20)) /dev/urandom >"$TMP/www/3m.bin"
cat >"$TMP/nginx.conf" <<CONF
worker_processes 1;
daemon off;
master_process off;
pid $TMP/nginx.pid;
error_log $TMP/nginx.err warn;
events { worker_connections 1024; }
http {
    access_log off;
    server {
        listen 127.0.0.1:$port;
        root $TMP/www;
        location / { }
    }
    client_body_temp_path $TMP/body; proxy_temp_path $TMP/proxy;
    fastcgi_temp_path $TMP/fcgi; uwsgi_temp_path $TMP/uwsgi; scgi_temp_path $TMP/scgi;
}
CONF
"$RS" --stats="$TMP/nginx.stats" nginx -c "$TMP/nginx.conf" -p "$TMP" &
npid=$!
wait_port "$port" $npid || bad "nginx did not start"
timeout 60 "$RS" wrk -t 1 -c 64 -d 2s "http://127.0.0.1:$port/1k.bin" >"$TMP/wrk.out" 2>&1
check "wrk: exit 0" test $? = 0
check "wrk: requests completed" grep -qE "[0-9]+ requests in" "$TMP/wrk.out"
check "wrk: no socket errors or non-2xx" sh -c '! grep -qE "Socket errors|Non-2xx" "$0"' "$TMP/wrk.out"
fetch() { # path -> sha256 of the body fetched under ringsock with a nonblocking client
	"$RS" "$PY" - "$port" "$1" <<'PYEOF'
import asyncio, hashlib, sys
async def main(port, path):
    r, w = await asyncio.open_connection("127.0.0.1", int(port))
    for _ in range(3):   # keep-alive: three requests on one connection
        w.write(f"GET /{path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        await w.drain()
        head = await r.readuntil(b"\r\n\r\n")
        n = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0].split(b":")[1])
        body = await r.readexactly(n)
    w.close()
    print(hashlib.sha256(body).hexdigest())
asyncio.run(main(*sys.argv[1:]))
PYEOF
}
for f in 1k.bin 3m.bin; do
	got=$(fetch $f)
	want=$(sha256sum <"$TMP/www/$f" | cut -d' ' -f1)
	check "nginx: $f byte for byte through an asyncio client under ringsock" test "$got" = "$want"
done
kill -QUIT $npid
wait $npid
check "nginx: engine served its connections" test "$(stat_sum "$TMP/nginx.stats" accelerated)" -ge 64
check "nginx: calls answered without syscalls" test "$(stat_sum "$TMP/nginx.stats" calls_nosys)" -gt 1000
# nginx opens the file it serves for each request, so a socket armed at a
# send finds a descriptor the library never saw; the look for a program's
# own io_uring finds it by number, not by listing /proc/self/fd at every
# arm (which held up nginx_c256's new connections for tens of ms).
check "nginx: /proc/self/fd listed at most twice for 64 arms" test "$(stat_sum "$TMP/nginx.stats" fd_listings)" -le 2
check "nginx: no error logged" sh -c '! grep -q "\[error\]\|\[crit\]\|\[alert\]" "$0"' "$TMP/nginx.err"

# ---- redis ----
port=$(free_port)
"$RS" --stats="$TMP/redis.stats" redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
	>"$TMP/redis.log" 2>&1 &
rpid=$!
wait_port "$port" $rpid || bad "redis did not start"
timeout 60 "$RS" --stats="$TMP/rb.stats" redis-benchmark -p "$port" -t set,get,lpush,lpop -n 20000 -c 50 -q \
	>"$TMP/rb.out" 2>&1
check "redis-benchmark: exit 0" test $? = 0
check "redis-benchmark: GET and SET ran" sh -c 'grep -q "GET: [0-9.]* requests per second" "$0" && grep -q "SET: [0-9.]* requests per second" "$0"' "$TMP/rb.out"
"$RS" redis-cli -p "$port" set small "value-$$" >/dev/null
check "redis-cli: small value read back" test "$("$RS" redis-cli -p "$port" get small)" = "value-$$"
big=$(head -c 786432 /dev/urandom | base64 -w0)   # 1 MiB of text
"$RS" redis-cli -p "$port" -x set big <<<"$big" >/dev/null
check "redis-cli: 1 MiB value read back" test "$("$RS" redis-cli -p "$port" get big)" = "$big"
check "redis-cli: pipelined INCRs all counted" sh -c \
	'for i in $(seq 1000); do echo "INCR ctr"; done | "$0" redis-cli -p "$1" --pipe >/dev/null && test "$("$0" redis-cli -p "$1" get ctr)" = 1000' "$RS" "$port"
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1
wait $rpid
check "redis-server: engine served its connections" test "$(stat_sum "$TMP/redis.stats" accelerated)" -ge 50
check "redis-benchmark: engine served its connections" test "$(stat_sum "$TMP/rb.stats" accelerated)" -ge 50
check "redis-server: calls answered without syscalls" test "$(stat_sum "$TMP/redis.stats" calls_nosys)" -gt 1000
finish
