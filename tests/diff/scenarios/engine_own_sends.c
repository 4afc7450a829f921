/* Also run with every send through the frag pool and each batch sent zero-copy (tcp_send.c):
 * RUN_ALSO=RINGSOCK_ZEROCOPY=always RINGSOCK_ZEROCOPY_MIN=1 RINGSOCK_LINEAR_FIRST=0 RINGSOCK_DIRECT_THRESHOLD=0 RINGSOCK_ARM_AFTER=0 */
/* One thread talks to itself over loopback with blocking sockets: a
 * blocking read must find what this thread's own sends delivered before
 * it, as the kernel's read does, even when the engine queued those sends
 * and already holds part of the input.  (Without the library each send
 * is in the peer's queue when it returns.)  Also MSG_WAITALL with the
 * rest on its way from this thread.  Then nonblocking reads (an event
 * loop that talks to itself): with TCP_NODELAY each send is in the peer's
 * queue when it returns, so a read after two sends finds both, each way.
 * ENGINE_MIN_ACCELERATED=2 */
#include "../scn.h"
#include <netinet/tcp.h>
#include <poll.h>

int main(void)
{
	int c, s;
	char big[1000], buf[4096];
	fill_pattern(big, sizeof(big), 7);
	tcp_pair(&c, &s);
	for (int round = 0; round < 3; round++) {
		R("send 10", send(c, "0123456789", 10, 0));
		/* the input is readable: (under the library, its receive has
		 * taken those 10 bytes) */
		struct pollfd p = { s, POLLIN, 0 };
		R("poll", poll(&p, 1, 2000));
		say("revents %#x", p.revents);
		R("send 1000", send(c, big, sizeof(big), 0));
		long n = R("blocking recv 4096", recv(s, buf, sizeof(buf), 0));
		show("got", buf, n);
		R("send 10", send(c, "abcdefghij", 10, 0));
		R("poll", poll(&p, 1, 2000));
		R("send 1000", send(c, big, sizeof(big), 0));
		n = R("recv MSG_WAITALL 1010", recv(s, buf, 1010, MSG_WAITALL | MSG_DONTWAIT));
		show("got", buf, n);
	}
	/* Nonblocking reads of what this thread sent, each way. */
	int one = 1;
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (int round = 0; round < 12; round++) {
		int from = round & 1 ? s : c, to = round & 1 ? c : s;
		R("send 2", send(from, "ab", 2, 0));
		struct pollfd q = { to, POLLIN, 0 };
		R("poll", poll(&q, 1, 2000));
		R("send 3", send(from, "cde", 3, 0));
		long k = R("nonblocking recv 64", recv(to, buf, 64, MSG_DONTWAIT));
		show("got", buf, k);
	}
	/* The reader shuts its input down: its reads go to the kernel from
	 * now on (Linux still returns what is queued), while the engine's
	 * receive, being cancelled, may still bring bytes that come first. */
	R("send 10", send(c, "ABCDEFGHIJ", 10, 0));
	struct pollfd p = { s, POLLIN, 0 };
	R("poll", poll(&p, 1, 2000));
	R("send 1000", send(c, big, sizeof(big), 0));
	R("shutdown SHUT_RD", shutdown(s, SHUT_RD));
	long n = R("recv 4096 after SHUT_RD", recv(s, buf, sizeof(buf), MSG_DONTWAIT));
	show("got", buf, n);
	close(c);
	close(s);
	return 0;
}
