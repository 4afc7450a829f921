/* The first edge of an edge-triggered registration added after the peer
 * wrote: the kernel's first epoll_wait reports EPOLLIN for the bytes
 * already in its queue with EPOLLOUT, in one event.  A socket the engine
 * arms when the set registers it (a blocking one) has a receive that has
 * not run yet: the engine must not report the registration's edge from
 * its own state alone (OUT without IN: the edge for the bytes lost, an
 * edge-triggered loop waits for good).  (Fuzz seed 9600176.)
 * Once with the socket alone in the set, once with a second socket whose
 * level-triggered input is ready (the wait returns without sleeping).
 * The peers are kept off the engine (a second descriptor): their sends
 * reach the kernel at once, as without the library.  (A send the engine
 * queued goes out with the wait's sleep; a wait that does not sleep
 * returns first: a difference of its own, not this scenario's.)
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <sys/epoll.h>
#include <sys/ioctl.h>

static void show_wait(const char *label, int ep, int ms)
{
	struct epoll_event ev[4];
	int n = (int)R(label, epoll_wait(ep, ev, 4, ms));
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (ev[j].data.u64 < ev[i].data.u64) {
				struct epoll_event t = ev[i];
				ev[i] = ev[j];
				ev[j] = t;
			}
	for (int i = 0; i < n; i++)
		say("  %c events %s%s%s%s", (char)('A' + (int)ev[i].data.u64), ev[i].events & EPOLLIN ? "IN " : "",
		    ev[i].events & EPOLLOUT ? "OUT " : "", ev[i].events & EPOLLERR ? "ERR " : "",
		    ev[i].events & EPOLLHUP ? "HUP" : "");
}

/* Until the kernel's queue of s holds n bytes (FIONREAD does not arm). */
static void queued(int s, int n)
{
	for (int i = 0; i < 10000; i++) {
		int k = 0;
		if (ioctl(s, FIONREAD, &k) == 0 && k >= n)
			return;
		msleep(1);
	}
	die("bytes never arrived");
}

static void run(const char *name, int other)
{
	say("-- %s", name);
	int c, s, c2 = -1, s2 = -1;
	tcp_pair(&c, &s); /* blocking: armed when a set registers it */
	int keep = dup(c), keep2 = -1;
	int ep = epoll_create1(0);
	if (other) {
		tcp_pair(&c2, &s2);
		keep2 = dup(c2);
		struct epoll_event e2 = { .events = EPOLLIN, .data.u64 = 1 };
		if (epoll_ctl(ep, EPOLL_CTL_ADD, s2, &e2))
			die("epoll_ctl");
		send(c2, "y", 1, 0);
		queued(s2, 1);
	}
	R("peer writes", send(c, "x", 1, 0));
	queued(s, 1);
	struct epoll_event e = { .events = EPOLLIN | EPOLLOUT | EPOLLET, .data.u64 = 0 };
	R("ADD IN|OUT|ET", epoll_ctl(ep, EPOLL_CTL_ADD, s, &e));
	show_wait("first wait", ep, 5000);
	show_wait("no new edge", ep, 0);
	char b[8];
	R("read", recv(s, b, sizeof(b), MSG_DONTWAIT));
	R("peer writes", send(c, "zz", 2, 0));
	show_wait("new data", ep, 5000);
	R("read", recv(s, b, sizeof(b), MSG_DONTWAIT));
	close(ep);
	close(keep);
	close(c);
	close(s);
	if (other) {
		close(keep2);
		close(c2);
		close(s2);
	}
}

int main(void)
{
	run("alone", 0);
	run("beside a ready socket", 1);
	return 0;
}
