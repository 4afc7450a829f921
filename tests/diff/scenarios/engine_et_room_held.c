/* An edge of room alone carries the socket's unread input.  A socket
 * registered IN|OUT|ET reads part of what its peer sent (the engine reads
 * the rest ahead), then a fork makes it the kernel's (shared with another
 * process) with those bytes still held by the engine.  It fills its send
 * buffer; the peer drains it, and the room that frees is the next edge.
 * The kernel reports the socket's whole state on that edge: IN|OUT, for
 * the bytes still unread.  (Seed 26204252: the library reported OUT
 * alone, the held bytes missing from the edge; an edge-triggered loop
 * that reads only on IN would never read them.)  The peer is kept off the
 * engine by reading through a second descriptor.
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <sys/epoll.h>
#include <pthread.h>
#include <sys/wait.h>

static void show_wait(const char *label, int ep, int ms)
{
	struct epoll_event ev[4];
	int n = (int)R(label, epoll_wait(ep, ev, 4, ms));
	for (int i = 0; i < n; i++)
		say("  events %s%s%s%s", ev[i].events & EPOLLIN ? "IN " : "", ev[i].events & EPOLLOUT ? "OUT " : "",
		    ev[i].events & EPOLLERR ? "ERR " : "", ev[i].events & EPOLLHUP ? "HUP" : "");
}

static int keep;
static char out[8 << 20];
static long got;

static void *drain(void *arg)
{
	(void)arg;
	static char sink[1 << 20];
	while (got < (long)sizeof(out)) {
		long n = recv(keep, sink, sizeof(sink), 0);
		if (n > 0)
			got += n;
		else if (n < 0 && errno == EAGAIN)
			wait_fd(keep, POLLIN, 5000);
		else
			die("peer's read");
	}
	return NULL;
}

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
	show_wait("the first edge", ep, 5000);
	char b[100];
	show("read 100", b, R("read", recv(s, b, sizeof(b), 0)));
	/* (the engine's receive, armed, reads the other 900 ahead) */
	msleep(50);
	pid_t p = fork();
	if (p == 0)
		_exit(0);
	reap("child", p);
	/* a blocking send of more than the buffers hold, while a thread
	 * drains the peer through a descriptor the engine never saw */
	keep = dup(c);
	close(c);
	pthread_t th;
	pthread_create(&th, NULL, drain, NULL);
	long sent = R("blocking send of 8 MiB", send(s, out, sizeof(out), MSG_NOSIGNAL));
	pthread_join(th, NULL);
	say("peer read all it was sent: %s", got == sent && sent == (long)sizeof(out) ? "yes" : "no");
	/* (a program's poll for room meanwhile, as an event loop's) */
	say("poll for room: %s", wait_fd(s, POLLOUT, 5000) & POLLOUT ? "OUT" : "none");
	show_wait("room: the edge carries the unread input", ep, 5000);
	char rest[2000];
	show("read the rest", rest, R("read", recv(s, rest, sizeof(rest), 0)));
	close(ep);
	close(keep);
	close(s);
	return 0;
}
