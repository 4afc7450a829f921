/* poll, ppoll, select, pselect over a mix of descriptors: pipe, eventfd,
 * AF_UNIX socketpair, TCP, UDP; timeouts, signal masks, invalid fds.
 * ENGINE_MIN_ACCELERATED=3 */
#include "../scn.h"
#include <sys/eventfd.h>
#include <sys/select.h>

static void show_poll(const char *label, struct pollfd *p, int n)
{
	for (int i = 0; i < n; i++)
		say("%s[%d] revents%s%s%s%s%s", label, i, p[i].revents & POLLIN ? " IN" : "",
		    p[i].revents & POLLOUT ? " OUT" : "", p[i].revents & POLLHUP ? " HUP" : "",
		    p[i].revents & POLLERR ? " ERR" : "", p[i].revents & POLLNVAL ? " NVAL" : "");
}

int main(void)
{
	int pp[2], us[2], c, s, u1, u2;
	struct sockaddr_in ua;
	char buf[64];
	if (pipe(pp) || socketpair(AF_UNIX, SOCK_STREAM, 0, us))
		die("setup");
	int ev = eventfd(0, 0);
	tcp_pair(&c, &s);
	udp_pair(&u1, &u2, &ua, 1);

	struct pollfd p[6] = {
		{ pp[0], POLLIN, 0 }, { ev, POLLIN, 0 }, { us[0], POLLIN, 0 },
		{ s, POLLIN, 0 },     { u1, POLLIN, 0 }, { 12345, POLLIN, 0 },
	};
	R("poll idle (timeout 0)", poll(p, 6, 0));
	show_poll("idle", p, 6);
	R("poll idle (timeout 30ms)", poll(p, 5, 30));

	if (write(pp[1], "p", 1) != 1 || write(us[1], "u", 1) != 1)
		die("write");
	uint64_t one = 1;
	if (write(ev, &one, 8) != 8)
		die("eventfd");
	send(c, "t", 1, 0);
	send(u2, "d", 1, 0);
	msleep(30);
	R("poll all ready", poll(p, 6, 1000));
	show_poll("ready", p, 6);

	struct timespec ts = { 0, 20000000 };
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR2);
	R("ppoll all ready", ppoll(p, 5, &ts, &mask));
	show_poll("ppoll", p, 5);
	R("ppoll NULL timeout ready", ppoll(p, 5, NULL, NULL));

	fd_set r, w;
	FD_ZERO(&r);
	FD_ZERO(&w);
	int fds[5] = { pp[0], ev, us[0], s, u1 };
	int maxfd = 0;
	for (int i = 0; i < 5; i++) {
		FD_SET(fds[i], &r);
		if (fds[i] > maxfd)
			maxfd = fds[i];
	}
	FD_SET(c, &w);
	if (c > maxfd)
		maxfd = c;
	struct timeval tv = { 1, 0 };
	R("select", select(maxfd + 1, &r, &w, NULL, &tv));
	for (int i = 0; i < 5; i++)
		say("select read[%d] %d", i, FD_ISSET(fds[i], &r) ? 1 : 0);
	say("select write tcp %d", FD_ISSET(c, &w) ? 1 : 0);

	/* Drain everything, then select must time out. */
	read(pp[0], buf, 1);
	read(ev, &one, 8);
	read(us[0], buf, 1);
	recv(s, buf, 1, 0);
	recv(u1, buf, 1, 0);
	FD_ZERO(&r);
	for (int i = 0; i < 5; i++)
		FD_SET(fds[i], &r);
	tv.tv_sec = 0;
	tv.tv_usec = 20000;
	R("select drained (timeout)", select(maxfd + 1, &r, NULL, NULL, &tv));
	say("timeval left zero %d", tv.tv_sec == 0 && tv.tv_usec == 0);
	FD_ZERO(&r);
	for (int i = 0; i < 5; i++)
		FD_SET(fds[i], &r);
	ts.tv_sec = 0;
	ts.tv_nsec = 20000000;
	R("pselect drained (timeout)", pselect(maxfd + 1, &r, NULL, NULL, &ts, &mask));
	FD_ZERO(&r);
	FD_SET(c, &r);
	send(s, "z", 1, 0);
	msleep(20);
	R("pselect tcp ready", pselect(c + 1, &r, NULL, NULL, NULL, NULL));
	say("pselect read tcp %d", FD_ISSET(c, &r) ? 1 : 0);
	/* A closed descriptor inside the process's fd table.  (One beyond the
	 * table is ignored by the kernel, so its answer depends on how large
	 * the table has grown, which any high descriptor changes.) */
	int gone = dup(s);
	close(gone);
	FD_ZERO(&r);
	FD_SET(gone, &r);
	tv.tv_sec = 0;
	tv.tv_usec = 0;
	R("select closed fd", select(gone + 1, &r, NULL, NULL, &tv));
	R("select negative nfds", select(-1, NULL, NULL, NULL, &tv));

	/* HUP on pipe and socketpair */
	close(pp[1]);
	close(us[1]);
	close(c);
	msleep(20);
	R("poll after writers closed", poll(p, 4, 1000));
	show_poll("closed", p, 4);
	return 0;
}
