/* Urgent data (MSG_OOB) on sockets the engine served, for a program that
 * asks about it in each way there is: poll with POLLPRI, epoll with
 * EPOLLPRI, select with exceptfds, SO_OOBINLINE, and SIOCATMARK.  A read
 * stops at the mark, recv(MSG_OOB) returns the byte, sockatmark says
 * where the mark is, and the rest follows - as on the kernel path.  (The
 * program asks before the urgent byte arrives: urgent data that arrives
 * before any such call is read past, see ringsock(7).)
 * ENGINE_MIN_ACCELERATED=5 */
#include "../scn.h"
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>

/* A pair whose receiving side s has been read on the engine. */
static void armed(int *c, int *s)
{
	nb_pair(c, s);
	arm_by_reading(*c, *s);
	send(*c, "early", 5, 0); /* held by the engine before any interest */
	wait_fd(*s, POLLIN, 5000);
}

static void send_urgent(int c)
{
	send(c, "abc", 3, 0);
	send(c, "X", 1, MSG_OOB);
	send(c, "def", 3, 0);
}

static void read_around_mark(const char *label, int s, int inline_oob)
{
	char buf[64];
	say("%s", label);
	show("  recv", buf, recv(s, buf, sizeof(buf), 0)); /* stops at the mark */
	say("  sockatmark = %d", sockatmark(s));
	if (!inline_oob) {
		show("  recv MSG_OOB", buf, recv(s, buf, 1, MSG_OOB));
		R("  recv MSG_OOB again", recv(s, buf, 1, MSG_OOB));
	}
	show("  recv", buf, recv(s, buf, sizeof(buf), 0));
	say("  sockatmark = %d", sockatmark(s));
	R("  recv drained", recv(s, buf, sizeof(buf), 0));
}

int main(void)
{
	int c, s;

	armed(&c, &s);
	struct pollfd p = { s, POLLPRI, 0 };
	R("poll POLLPRI before", poll(&p, 1, 0));
	send_urgent(c);
	p.revents = 0;
	R("poll POLLPRI", poll(&p, 1, 5000));
	say("revents POLLPRI %d", !!(p.revents & POLLPRI));
	read_around_mark("poll:", s, 0);
	close(c);
	close(s);

	armed(&c, &s);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLPRI, .data.fd = s }, out;
	epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
	send_urgent(c);
	int n;
	do
		n = epoll_wait(ep, &out, 1, 5000);
	while (n == 1 && !(out.events & EPOLLPRI) && (msleep(5), 1));
	say("epoll EPOLLPRI %d", n == 1 && (out.events & EPOLLPRI));
	read_around_mark("epoll:", s, 0);
	close(ep);
	close(c);
	close(s);

	armed(&c, &s);
	fd_set ex;
	FD_ZERO(&ex);
	FD_SET(s, &ex);
	struct timeval tv = { 0, 0 };
	R("select exceptfds before", select(s + 1, NULL, NULL, &ex, &tv));
	send_urgent(c);
	FD_SET(s, &ex);
	tv.tv_sec = 5;
	R("select exceptfds", select(s + 1, NULL, NULL, &ex, &tv));
	say("exceptional %d", FD_ISSET(s, &ex) != 0);
	read_around_mark("select:", s, 0);
	close(c);
	close(s);

	armed(&c, &s);
	int one = 1;
	R("SO_OOBINLINE", setsockopt(s, SOL_SOCKET, SO_OOBINLINE, &one, sizeof(one)));
	send_urgent(c);
	p.fd = s;
	p.events = POLLIN;
	while (poll(&p, 1, 5000) == 1) { /* until the last bytes are in */
		int inq = 0;
		ioctl(s, FIONREAD, &inq);
		if (inq >= 12)
			break;
		msleep(5);
	}
	read_around_mark("SO_OOBINLINE:", s, 1);
	close(c);
	close(s);

	armed(&c, &s);
	int at = -1;
	R("SIOCATMARK with data held", ioctl(s, SIOCATMARK, &at));
	say("at mark %d", at);
	char buf[16];
	show("recv", buf, recv(s, buf, sizeof(buf), 0));
	send_urgent(c);
	msleep(50);
	read_around_mark("after SIOCATMARK:", s, 0);
	close(c);
	close(s);
	return 0;
}
