/* SO_RCVLOWAT set on a socket the engine has read ahead on (the socket
 * goes to the kernel, the engine keeps what it holds): poll, select and
 * epoll say readable only once the bytes held and the kernel's reach the
 * mark, as the kernel does, a blocking poll wakes when they do, and
 * getsockopt returns the mark set; a nonblocking read returns what there
 * is.  ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>

static void look(const char *label, int s, int ep)
{
	struct pollfd p = { s, POLLIN, 0 };
	int n = poll(&p, 1, 0);
	fd_set r;
	FD_ZERO(&r);
	FD_SET(s, &r);
	struct timeval tv = { 0, 0 };
	int k = select(s + 1, &r, NULL, NULL, &tv);
	struct epoll_event ev;
	int m = epoll_wait(ep, &ev, 1, 0);
	say("%s: poll %d revents %#x, select %d, epoll %d", label, n, p.revents, k, m);
}

/* Until s has n bytes to read (FIONREAD), not a fixed sleep. */
static void until_inq(int s, int n)
{
	int q = -1;
	for (int i = 0; i < 5000 && q != n; i++) {
		if (ioctl(s, FIONREAD, &q) < 0)
			die("FIONREAD");
		if (q != n)
			msleep(1);
	}
	say("queued %d", q);
}

static int peer;
static void *late_send(void *arg)
{
	(void)arg;
	msleep(50);
	char b[64];
	memset(b, 'w', sizeof(b));
	send(peer, b, 40, 0);
	return NULL;
}

int main(void)
{
	int c, s;
	nb_pair(&c, &s);
	arm_by_reading(c, s);
	int ep = epoll_create1(0);
	struct epoll_event e = { .events = EPOLLIN, .data.fd = s };
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, s, &e) < 0)
		die("epoll");
	char b[256];
	memset(b, 'z', sizeof(b));
	send(c, b, 10, 0);
	wait_fd(s, POLLIN, 5000);
	int lowat = 100, got = 0;
	socklen_t gl = sizeof(got);
	R("setsockopt SO_RCVLOWAT 100", setsockopt(s, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat)));
	R("getsockopt SO_RCVLOWAT", getsockopt(s, SOL_SOCKET, SO_RCVLOWAT, &got, &gl));
	say("SO_RCVLOWAT reads %d", got);
	look("10 bytes", s, ep);
	send(c, b, 50, 0);
	until_inq(s, 60);
	look("60 bytes", s, ep);
	send(c, b, 45, 0);
	until_inq(s, 105);
	look("105 bytes", s, ep);
	R("nonblocking read", recv(s, b, sizeof(b), 0));
	look("read", s, ep);
	/* a blocking poll with 60 bytes there wakes when 40 more come */
	send(c, b, 60, 0);
	until_inq(s, 60);
	peer = c;
	pthread_t t;
	pthread_create(&t, NULL, late_send, NULL);
	struct pollfd p = { s, POLLIN, 0 };
	R("blocking poll", poll(&p, 1, 5000));
	say("revents %#x", p.revents);
	pthread_join(t, NULL);
	R("nonblocking read", recv(s, b, sizeof(b), 0));
	send(c, b, 5, 0);
	until_inq(s, 5);
	look("5 bytes", s, ep);
	R("nonblocking read below the mark", recv(s, b, sizeof(b), 0));
	close(ep);
	close(c);
	close(s);
	return 0;
}
