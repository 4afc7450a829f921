/* An edge-triggered registration added when nothing it watches is ready
 * has no edge left over.  A socket the engine read ahead for (its reads
 * then moved to the kernel by a fork: shared with another process) is
 * registered with EPOLLET alone (only ERR and HUP can come); the first
 * wait finds nothing.  The peer resets the connection: one ERR|HUP edge.
 * Then the program sets SO_RCVLOWAT, whose wake-up (EPOLLIN) means
 * nothing to this registration: the kernel reports nothing more.  (Seed
 * 26202643: the registration kept the edge of its EPOLL_CTL_ADD, spent on
 * the kernel path by the poll that found nothing, and the SO_RCVLOWAT's
 * look reported ERR|HUP a second time.)
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <sys/epoll.h>
#include <sys/wait.h>

int main(void)
{
	int c, s;
	nb_pair(&c, &s);
	arm_by_reading(c, s);
	R("peer writes 100", send(c, "0123456789012345678901234567890123456789012345678901234567890123456789"
				     "012345678901234567890123456789",
				  100, 0));
	say("input: %s", wait_fd(s, POLLIN, 5000) & POLLIN ? "yes" : "no");
	/* (the engine's receive, armed, reads them ahead) */
	msleep(50);
	pid_t p = fork();
	if (p == 0)
		_exit(0);
	reap("child", p);
	int ep = epoll_create1(0);
	struct epoll_event e = { .events = EPOLLET, .data.u64 = 0 };
	R("ADD with EPOLLET alone", epoll_ctl(ep, EPOLL_CTL_ADD, s, &e));
	show_epoll("nothing yet", ep, 0);
	struct linger lg = { 1, 0 };
	R("peer: SO_LINGER 0", setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
	R("peer resets", close(c));
	show_epoll("the reset", ep, 5000);
	int one = 1;
	R("SO_RCVLOWAT 1", setsockopt(s, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof(one)));
	show_epoll("nothing more", ep, 0);
	char b[200];
	show("read the held bytes", b, R("read", recv(s, b, sizeof(b), 0)));
	show_epoll("still nothing", ep, 0);
	close(ep);
	close(s);
	return 0;
}
