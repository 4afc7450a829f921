/* An edge of room alone carries the socket's unread input.  A socket
 * registered IN|OUT|ET reads part of what its peer sent (the engine reads
 * the rest ahead), then a fork moves its reads to the kernel (shared with
 * another process) with those bytes still held by the engine.  The
 * program sets SO_SNDBUF, whose wake-up of the socket's writers is an edge
 * of room with no send.  The kernel reports the socket's whole state on
 * that edge: IN|OUT, for the bytes still unread.  (Seed 26204252: the
 * library reported OUT alone, the held bytes missing from the edge; an
 * edge-triggered loop that reads only on IN would never read them.)
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <sys/epoll.h>
#include <sys/wait.h>

int main(void)
{
	int c, s;
	tcp_pair(&c, &s);
	set_nonblock(c);
	arm_by_reading(c, s);
	static char in[1000];
	fill_pattern(in, sizeof(in), 7);
	R("peer writes 1000", send(c, in, sizeof(in), 0));
	say("input: %s", wait_fd(s, POLLIN, 5000) & POLLIN ? "yes" : "no");
	int ep = epoll_create1(0);
	struct epoll_event e = { .events = EPOLLIN | EPOLLOUT | EPOLLET, .data.u64 = 0 };
	R("ADD", epoll_ctl(ep, EPOLL_CTL_ADD, s, &e));
	show_epoll("the first edge", ep, 5000);
	char b[100];
	show("read 100", b, R("read", recv(s, b, sizeof(b), 0)));
	/* (the engine's receive, armed, reads the other 900 ahead) */
	msleep(50);
	pid_t p = fork();
	if (p == 0)
		_exit(0);
	reap("child", p);
	/* SO_SNDBUF wakes the socket's writers when it is writable
	 * (sk_write_space): an edge of room, with no send */
	int sz = 262144;
	R("SO_SNDBUF", setsockopt(s, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz)));
	show_epoll("room: the edge carries the unread input", ep, 5000);
	char rest[2000];
	show("read the rest", rest, R("read", recv(s, rest, sizeof(rest), 0)));
	close(ep);
	close(c);
	close(s);
	return 0;
}
