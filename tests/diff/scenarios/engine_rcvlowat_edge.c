/* SO_RCVLOWAT and edge-triggered epoll: setting the mark wakes the
 * socket's waiters when it is readable at the new mark (tcp_set_rcvlowat
 * calls tcp_data_ready), which is an edge for an EPOLLET registration.
 * Under the library the bytes may be the engine's (read ahead), where the
 * kernel's queue is empty and its wake-up does not come: the library
 * makes the edge.  A mark above what is there makes none; data that
 * reaches the mark later does.  (Found in a soak: seed 10301313.)
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <sys/epoll.h>

static void show_wait(const char *label, int ep)
{
	struct epoll_event ev[4];
	int n = epoll_wait(ep, ev, 4, 0);
	say("%s: epoll_wait = %d%s", label, n, n > 0 && (ev[0].events & EPOLLIN) ? " IN" : "");
}

int main(void)
{
	int c, s;
	nb_pair(&c, &s);
	arm_by_reading(c, s);
	int ep = epoll_create1(0);
	struct epoll_event e = { .events = EPOLLIN | EPOLLET, .data.fd = s };
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, s, &e) < 0)
		die("epoll");
	char b[256];
	memset(b, 'a', sizeof(b));
	R("send 50", send(c, b, 50, 0));
	struct epoll_event ev;
	R("epoll_wait for them", epoll_wait(ep, &ev, 1, 5000));
	show_wait("nothing new", ep);
	int v = 20;
	R("SO_RCVLOWAT 20", setsockopt(s, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof(v)));
	show_wait("after a mark below what is there", ep);
	show_wait("nothing new", ep);
	v = 100;
	R("SO_RCVLOWAT 100", setsockopt(s, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof(v)));
	show_wait("after a mark above what is there", ep);
	R("send 60", send(c, b, 60, 0));
	struct pollfd p = { s, POLLIN, 0 };
	R("poll until readable at the mark", poll(&p, 1, 5000));
	show_wait("after data reaches the mark", ep);
	long n = R("recv", recv(s, b, sizeof(b), 0));
	say("got %ld", n);
	show_wait("after the read", ep);
	return 0;
}
