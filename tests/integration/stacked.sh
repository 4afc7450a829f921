# Stacked preloads keep working in both orders, and calls made from another
# library's constructor (before ringsock is initialised) work.
. "$(dirname "$0")/lib.sh"
cat >"$TMP/counter.c" <<'EOC'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
static int sends;
ssize_t send(int fd, const void *b, size_t n, int f)
{
	static ssize_t (*next)(int, const void *, size_t, int);
	if (!next)
		next = (ssize_t (*)(int, const void *, size_t, int))dlsym(RTLD_NEXT, "send");
	sends++;
	return next(fd, b, n, f);
}
__attribute__((constructor)) static void early(void)
{
	/* Runs before or after ringsock's constructor depending on order. */
	int s = socket(AF_INET, SOCK_STREAM, 0);
	int r = write(2, "", 0);
	close(s);
	(void)r;
}
__attribute__((destructor)) static void report(void)
{
	char m[64];
	int n = snprintf(m, sizeof(m), "counter saw %d sends\n", sends);
	if (write(1, m, (size_t)n) < 0)
		return;
}
EOC
cc -shared -fPIC -o "$TMP/libcounter.so" "$TMP/counter.c" -ldl
check "helper preload built" test -f "$TMP/libcounter.so"
prog='import socket
a=socket.socket(); a.bind(("127.0.0.1",0)); a.listen()
c=socket.create_connection(a.getsockname()); s,_=a.accept()
for i in range(5): c.send(b"abc")
import time; time.sleep(0.05); print("got", len(s.recv(100)))'
for order in "$TMP/libcounter.so:$RS_LIB" "$RS_LIB:$TMP/libcounter.so"; do
	out=$(RINGSOCK_STATS="$TMP/st" LD_PRELOAD="$order" "$PY" -c "$prog" 2>&1)
	check "order $order: program works" sh -c 'echo "$0" | grep -q "got 15"' "$out"
	check "order $order: ringsock saw the sends" test "$(stat_sum "$TMP/st" sendrecv)" -ge 5
	rm -f "$TMP/st"
done
# In front of ringsock, the other preload sees every send.  Behind it, it
# sees the ones ringsock passes on: none when the engine sends them
# itself, all of them when the engine is off.
out=$(LD_PRELOAD="$TMP/libcounter.so:$RS_LIB" "$PY" -c "$prog" 2>&1)
check "counter in front sees every send" sh -c 'echo "$0" | grep -q "counter saw 5 sends"' "$out"
out=$(RINGSOCK_STATS="$TMP/st" LD_PRELOAD="$RS_LIB:$TMP/libcounter.so" "$PY" -c "$prog" 2>&1)
check "counter behind the engine sees none (the engine carried them)" sh -c 'echo "$0" | grep -q "counter saw 0 sends"' "$out"
check "...and the engine did" grep -q "accelerated=[1-9]" "$TMP/st"
out=$(RINGSOCK_DISABLE=1 LD_PRELOAD="$RS_LIB:$TMP/libcounter.so" "$PY" -c "$prog" 2>&1)
check "counter behind a disabled ringsock sees every send" sh -c 'echo "$0" | grep -q "counter saw 5 sends"' "$out"

finish
