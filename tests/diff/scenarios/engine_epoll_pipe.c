/* One epoll set with an engine socket (its multishot receive armed, so
 * the thread's waits sleep in its ring) and a pipe, made readable in
 * turns: each wait reports the one that is ready.  The wait arms a poll
 * of the set in the ring each round, which completes at once while the
 * pipe is readable.  integration.stress also runs it with
 * IORING_SQ_TASKRUN read as set always (faults.c stuck), as the kernel
 * has been seen to leave it: that poll's completion, taken for the
 * flag's work, kept the stuck flag from being seen for what it is, and
 * the wait spun for good (an epoll server at 80% of a core, its requests
 * unread).
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <sys/epoll.h>

int main(void)
{
	int c, s, p[2];
	nb_pair(&c, &s);
	if (pipe(p))
		die("pipe");
	int ep = epoll_create1(0);
	struct epoll_event e1 = { .events = EPOLLIN, .data.fd = s }, e2 = { .events = EPOLLIN, .data.fd = p[0] };
	if (epoll_ctl(ep, EPOLL_CTL_ADD, s, &e1) || epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &e2))
		die("epoll_ctl");
	int ok = 0;
	for (int i = 0; i < 200; i++) {
		char b[8];
		if (write(p[1], "x", 1) != 1)
			die("write");
		struct epoll_event out[4];
		int n = epoll_wait(ep, out, 4, 5000);
		if (n != 1 || out[0].data.fd != p[0]) {
			say("round %d: the pipe: %d events", i, n);
			break;
		}
		if (read(p[0], b, 1) != 1)
			die("read");
		if (send(c, "y", 1, 0) != 1)
			die("send");
		n = epoll_wait(ep, out, 4, 5000);
		if (n != 1 || out[0].data.fd != s) {
			say("round %d: the socket: %d events", i, n);
			break;
		}
		if (recv(s, b, sizeof(b), 0) != 1)
			die("recv");
		ok++;
	}
	say("%d rounds, each wait reporting the one ready", ok);
	return 0;
}
