/* A reset after the peer's FIN, seen by a registration added after it.
 * The peer closes; the socket, never read, sends 8 bytes (the engine
 * serves the send, and its receive meets the FIN); the closed peer
 * answers with a reset.  Once poll shows the error, a one-shot
 * registration is added: the kernel's one report carries IN|OUT|ERR|HUP.
 * (Seed 28000257: the engine's state after the FIN knew of no reset,
 * none of its receives would look again, and the kernel's event for it
 * came after the one-shot report, IN|OUT: the reset was never reported.)
 * With an edge-triggered registration the same.
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <sys/epoll.h>

static void run(const char *name, uint32_t events)
{
	say("-- %s", name);
	int c, s;
	nb_pair(&c, &s);
	R("peer closes", close(c));
	R("send 8", send(s, "01234567", 8, MSG_NOSIGNAL));
	int ok = 0;
	for (int i = 0; i < 5000 && !ok; i++) {
		ok = (wait_fd(s, POLLIN, 0) & POLLERR) != 0;
		if (!ok)
			msleep(1);
	}
	say("the reset: %s", ok ? "yes" : "no");
	int fl = fcntl(s, F_GETFL);
	R("blocking", fcntl(s, F_SETFL, fl & ~O_NONBLOCK));
	int ep = epoll_create1(0);
	struct epoll_event e = { .events = events, .data.u64 = 0 };
	R("ADD", epoll_ctl(ep, EPOLL_CTL_ADD, s, &e));
	show_epoll("the state, once", ep, 0);
	show_epoll("nothing more", ep, 0);
	char b[8];
	R("read", recv(s, b, sizeof(b), 0));
	R("read", recv(s, b, sizeof(b), 0));
	close(ep);
	close(s);
}

int main(void)
{
	run("one-shot", EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLONESHOT);
	run("edge-triggered", EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
	return 0;
}
