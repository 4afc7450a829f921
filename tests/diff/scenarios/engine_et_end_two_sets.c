/* The peer's end of stream, edge-triggered, in two epoll sets.  A
 * nonblocking socket is registered IN|RDHUP|ET in two sets; the peer
 * writes 8 bytes and shuts down its side.  The kernel gives each set one
 * IN|RDHUP edge.  The program waits on the first set only, then reads the
 * bytes 2 at a time (with the default RINGSOCK_ARM_AFTER, the reads arm
 * the engine's receive, which meets the FIN), and only then waits on the
 * second set: it must still report IN|RDHUP once, and neither set more.
 * (The first set was told of the end by the kernel: the engine's receive
 * meeting the FIN later is no new edge for it, seed 26000473; but the
 * second set's edge, which the engine's change of the kernel's watch can
 * drop from the kernel's set, must come from the engine: a lost edge
 * leaves an edge-triggered loop waiting for good.)  The peer is kept off
 * the engine (a second descriptor).
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <netinet/tcp.h>
#include <sys/epoll.h>

/* Until the kernel has the peer's FIN (TCP_INFO's state: CLOSE_WAIT). */
static void fin_arrived(int s)
{
	for (int i = 0; i < 10000; i++) {
		struct tcp_info ti;
		socklen_t l = sizeof(ti);
		if (getsockopt(s, IPPROTO_TCP, TCP_INFO, &ti, &l) == 0 && ti.tcpi_state == TCP_CLOSE_WAIT)
			return;
		msleep(1);
	}
	die("the FIN never arrived");
}

int main(void)
{
	int c, s;
	tcp_pair(&c, &s);
	set_nonblock(s);
	int keep = dup(c);
	int ep1 = epoll_create1(0), ep2 = epoll_create1(0);
	struct epoll_event e = { .events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.u64 = 0 };
	R("ADD to set 1", epoll_ctl(ep1, EPOLL_CTL_ADD, s, &e));
	R("ADD to set 2", epoll_ctl(ep2, EPOLL_CTL_ADD, s, &e));
	R("peer writes", send(c, "abcdefgh", 8, 0));
	R("peer shuts down", shutdown(c, SHUT_WR));
	fin_arrived(s);
	show_epoll("set 1", ep1, 5000);
	char b[8];
	for (int i = 0; i < 4; i++)
		show("read 2", b, R("read", recv(s, b, 2, 0)));
	/* (the engine's receive, armed by now, meets the FIN) */
	msleep(50);
	show_epoll("set 2: the end, once", ep2, 5000);
	show_epoll("set 2: no more", ep2, 0);
	show_epoll("set 1: no more", ep1, 0);
	R("read: the end", recv(s, b, sizeof(b), 0));
	show_epoll("set 1: still none", ep1, 0);
	show_epoll("set 2: still none", ep2, 0);
	close(ep1);
	close(ep2);
	close(keep);
	close(c);
	close(s);
	return 0;
}
