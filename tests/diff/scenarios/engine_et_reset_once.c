/* An edge-triggered registration reports a reset once.  The socket is
 * shut down both ways (its reads go to the kernel from then on), then
 * registered with EPOLLIN|EPOLLET; the peer's send draws a reset: the
 * kernel reports IN|ERR|HUP once, a read takes ECONNRESET, and the next
 * epoll_wait reports nothing.  Under the library the read arms the socket
 * (a new nonblocking one, armed at its first read) while the kernel goes
 * on reporting its input: arming is no event of the socket's, and the
 * registration's own edge (from EPOLL_CTL_ADD, which the kernel's report
 * stood for) is not kept for later either: both reported IN|HUP a second
 * time.  (Fuzz seed 9600037.)
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <sys/epoll.h>

static void run(const char *name, int wait_first)
{
	say("-- %s", name);
	int c, s;
	nb_pair(&c, &s);
	int keep = dup(c); /* the peer stays the kernel's: its send goes at once */
	int ep = epoll_create1(0);
	R("shutdown RDWR", shutdown(s, SHUT_RDWR));
	struct epoll_event e = { .events = EPOLLIN | EPOLLET, .data.u64 = 0 };
	R("ADD IN|ET", epoll_ctl(ep, EPOLL_CTL_ADD, s, &e));
	if (wait_first)
		show_epoll("before the peer sends", ep, 0);
	R("peer sends", send(c, "abcdefgh", 8, MSG_NOSIGNAL));
	say("peer: reset %s", wait_fd(c, POLLIN, 5000) & POLLERR ? "seen" : "not seen");
	show_epoll("after the reset", ep, 0);
	char b[8];
	R("recv WAITALL", recv(s, b, 7, MSG_WAITALL));
	show_epoll("after the read", ep, 0);
	show_epoll("again", ep, 0);
	close(ep);
	close(keep);
	close(c);
	close(s);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	run("registered, then the reset", 0);
	run("a wait before the reset", 1);
	return 0;
}
