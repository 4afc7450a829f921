/* Also run with every send through the frag pool and each batch sent zero-copy (tcp_send.c):
 * RUN_ALSO=RINGSOCK_ZEROCOPY=always RINGSOCK_ZEROCOPY_MIN=1 RINGSOCK_LINEAR_FIRST=0 RINGSOCK_DIRECT_THRESHOLD=0 RINGSOCK_ARM_AFTER=0 */
/* Lost wake-ups: 20,000 one-byte round trips on one connection, both ends
 * on the engine, every wait with no timeout (epoll_wait(-1) on one side,
 * poll(-1) on the other).  A wake-up that never comes hangs a wait for
 * good; the watchdog turns that into a failure.
 * ENGINE_MIN_ACCELERATED=2 */
#include "../scn.h"
#include <sys/epoll.h>

#define ROUNDS 20000

int main(void)
{
	int c, s;
	pid_t p = fork_nb_pair(&c, &s); /* (made after the fork: the engine's) */
	if (p == 0) {
		/* echo side: poll(-1) */
		alarm(60);
		close(c);
		char b;
		for (;;) {
			struct pollfd pf = { s, POLLIN, 0 };
			if (poll(&pf, 1, -1) < 0 && errno != EINTR)
				_exit(2);
			long r = recv(s, &b, 1, 0);
			if (r == 0)
				_exit(0);
			if (r == 1 && send(s, &b, 1, 0) != 1)
				_exit(3);
		}
	}
	close(s);
	alarm(60);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = c };
	epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
	int ok = 0;
	for (int i = 0; i < ROUNDS; i++) {
		char b = (char)i, got;
		if (send(c, &b, 1, 0) != 1)
			break;
		long r;
		while ((r = recv(c, &got, 1, 0)) < 0 && errno == EAGAIN) {
			struct epoll_event out;
			epoll_wait(ep, &out, 1, -1);
		}
		if (r != 1 || got != b)
			break;
		ok++;
	}
	say("round trips completed: %d of %d", ok, ROUNDS);
	close(c);
	reap("echo side", p);
	return 0;
}
