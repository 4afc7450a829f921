/* A socket the kernel will not send zero-copy from: one in a BPF sockmap
 * (a service mesh's redirection puts sockets there; kTLS does the same to
 * zero-copy).  Its sends, queued and sent in batches, must all arrive and
 * none may fail: in the run with every batch sent zero-copy, the kernel
 * refuses the first (EOPNOTSUPP) and the engine sends the same bytes
 * again, copied (zc_refused), as it would anywhere else.  Without the
 * privilege to make a sockmap the same transfer runs without one.
 * RUN_ALSO=RINGSOCK_ZEROCOPY=always RINGSOCK_ZEROCOPY_MIN=1 RINGSOCK_LINEAR_FIRST=0 RINGSOCK_DIRECT_THRESHOLD=0 RINGSOCK_ARM_AFTER=0
 * ENGINE_MIN_ACCELERATED=2 */
#include "../scn.h"
#include <linux/bpf.h>
#include <poll.h>
#include <sys/syscall.h>

static int sockmap_add(int fd)
{
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_SOCKMAP;
	a.key_size = 4;
	a.value_size = 4;
	a.max_entries = 1;
	int m = (int)syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof(a));
	if (m < 0)
		return -1;
	uint32_t key = 0, val = (uint32_t)fd;
	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)m;
	a.key = (uint64_t)(uintptr_t)&key;
	a.value = (uint64_t)(uintptr_t)&val;
	if (syscall(SYS_bpf, BPF_MAP_UPDATE_ELEM, &a, sizeof(a)) < 0)
		return -1;
	return m; /* (kept open: the socket stays in the map) */
}

int main(void)
{
	int c, s;
	static char chunk[40000], got[20 * 40000 + 1];
	fill_pattern(chunk, sizeof(chunk), 11);
	nb_pair(&c, &s);
	/* (what the transcript shows must not depend on the privilege) */
	sockmap_add(c);
	long sent = 0;
	for (int i = 0; i < 20; i++) {
		long k = send_all_nb(c, chunk, sizeof(chunk));
		if (k != (long)sizeof(chunk)) {
			say("send %d: %ld (%s)", i, k, scn_errname(errno));
			break;
		}
		sent += k;
		/* a wait point: what is queued goes out */
		struct pollfd p = { c, POLLOUT, 0 };
		poll(&p, 1, 1000);
		long r = recv_all_nb(s, got + (i * sizeof(chunk)), sizeof(chunk));
		if (r != (long)sizeof(chunk)) {
			say("recv %d: %ld", i, r);
			break;
		}
	}
	say("sent %ld", sent);
	R("send 1 more", send(c, "y", 1, 0));
	R("recv it", recv_all_nb(s, got + sent, 1));
	uint32_t want = 0;
	for (int i = 0; i < 20; i++)
		want = want * 31 + scn_sum(chunk, sizeof(chunk));
	uint32_t have = 0;
	for (int i = 0; i < 20; i++)
		have = have * 31 + scn_sum(got + i * sizeof(chunk), sizeof(chunk));
	say("the bytes %s", have == want ? "match" : "differ");
	R("shutdown", shutdown(c, SHUT_WR));
	char b;
	R("peer sees the end", recv_all_nb(s, &b, 1));
	return 0;
}
