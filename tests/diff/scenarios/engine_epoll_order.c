/* engine_epoll_order: one epoll_wait that answers for several sockets
 * reports them in the order they became ready, as the kernel's ready list
 * does, when some are the engine's and some the kernel's.  Socket a reads
 * with 64 KiB buffers (a bulk reader: its input is the kernel's to
 * report), socket b with small reads (the engine's receive).  A proxy's
 * order (Node.js's test-http-writable-true-after-close): the client's end
 * reaches a first, then the upstream's bytes reach b; the wait must say a
 * before b, and b before a when the order is the other way round.  A wait
 * that sleeps first (nothing ready) lets the ring watch the kernel's set.
 * NOT_WAIT_EPOLL=with RINGSOCK_WAIT=epoll the ring does not watch the
 * kernel's set, so when it became readable is not known: the engine's
 * events come first (ringsock(7), Waiting).
 * ENGINE_MIN_ACCELERATED=2 */
#include "../scn.h"
#include <netinet/tcp.h>
#include <sys/epoll.h>

static int a, pa, b, pb, ep;
static char big[65536];

static void setup(void)
{
	nb_pair(&pa, &a);
	nb_pair(&pb, &b);
	int one = 1;
	setsockopt(pa, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(pb, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (int i = 0; i < 6; i++) { /* a: a bulk reader; b: armed by reading */
		send(pa, "x", 1, 0);
		wait_fd(a, POLLIN, 5000);
		recv(a, big, sizeof(big), 0);
	}
	arm_by_reading(pb, b);
	ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 'a' };
	epoll_ctl(ep, EPOLL_CTL_ADD, a, &ev);
	ev.data.u64 = 'b';
	epoll_ctl(ep, EPOLL_CTL_ADD, b, &ev);
	struct epoll_event out[4];
	R("a wait that sleeps (nothing ready)", epoll_wait(ep, out, 4, 50));
}

static void show_wait(const char *label)
{
	struct epoll_event ev[4];
	int n = (int)R(label, epoll_wait(ep, ev, 4, 5000));
	for (int i = 0; i < n; i++)
		say("  %c %s", (char)ev[i].data.u64, ev[i].events & EPOLLIN ? "IN" : "?");
}

static void teardown(void)
{
	close(ep);
	close(a);
	close(b);
	if (pa >= 0)
		close(pa);
	close(pb);
}

int main(void)
{
	alarm(30);
	setup();
	R("the client closes (a's end)", close(pa));
	pa = -1;
	R("the upstream sends (b's bytes)", send(pb, "data", 4, 0));
	show_wait("end, then bytes");
	teardown();

	setup();
	R("the upstream sends (b's bytes)", send(pb, "data", 4, 0));
	R("the client closes (a's end)", close(pa));
	pa = -1;
	show_wait("bytes, then end");
	teardown();
	return 0;
}
