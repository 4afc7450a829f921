/* Also run with every send through the frag pool and each batch sent zero-copy (tcp_send.c):
 * RUN_ALSO=RINGSOCK_ZEROCOPY=always RINGSOCK_ZEROCOPY_MIN=1 RINGSOCK_LINEAR_FIRST=0 RINGSOCK_DIRECT_THRESHOLD=0 RINGSOCK_ARM_AFTER=0 */
/* epoll over engine sockets: level- and edge-triggered, one-shot and
 * re-arming with MOD, EPOLLOUT, EPOLLRDHUP, one socket in two sets, a set
 * mixing engine sockets with a pipe, maxevents, DEL, close removing the
 * socket from the set, timeouts, a bulk reader's level-triggered IN|OUT
 * over repeated fills of its send buffer.
 * ENGINE_MIN_ACCELERATED=4 */
#include "../scn.h"
#include <sys/epoll.h>

static int fds_by_data[64];

/* Print what epoll_wait returned, sorted by fd so the order is stable. */
static void show_events(const char *label, int ep, int max, int timeout)
{
	struct epoll_event ev[16];
	int n = (int)R(label, epoll_wait(ep, ev, max, timeout));
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (ev[j].data.u64 < ev[i].data.u64) {
				struct epoll_event t = ev[i];
				ev[i] = ev[j];
				ev[j] = t;
			}
	for (int i = 0; i < n; i++)
		say("  %s events %#x", ev[i].data.u64 < 64 ? (char[]){ (char)('A' + (int)ev[i].data.u64), 0 } : "?",
		    ev[i].events);
	(void)fds_by_data;
}

static void add(int ep, int fd, uint32_t events, int tag)
{
	struct epoll_event ev = { .events = events, .data.u64 = (uint64_t)tag };
	R("epoll_ctl ADD", epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	char buf[4096];
	int ep = epoll_create1(EPOLL_CLOEXEC);
	int c, s;
	nb_pair(&c, &s);
	add(ep, s, EPOLLIN, 0);               /* A: level-triggered */
	R("ADD again", ({ struct epoll_event e = { EPOLLIN, { 0 } }; epoll_ctl(ep, EPOLL_CTL_ADD, s, &e); }));
	R("MOD unknown fd", ({ struct epoll_event e = { EPOLLIN, { 0 } }; epoll_ctl(ep, EPOLL_CTL_MOD, c, &e); }));
	R("DEL unknown fd", epoll_ctl(ep, EPOLL_CTL_DEL, c, NULL));
	show_events("wait, nothing yet (timeout 0)", ep, 16, 0);
	show_events("wait, nothing yet (timeout 50)", ep, 16, 50);
	send(c, "12345678", 8, 0);
	show_events("wait LT after data", ep, 16, 5000);
	show_events("wait LT again (unread)", ep, 16, 5000);
	R("read 4", recv(s, buf, 4, 0));
	show_events("wait LT, 4 left", ep, 16, 5000);
	R("read rest", recv(s, buf, sizeof(buf), 0));
	show_events("wait LT drained", ep, 16, 0);

	/* Edge-triggered */
	struct epoll_event e = { .events = EPOLLIN | EPOLLET, .data.u64 = 1 }; /* B */
	R("MOD to ET", epoll_ctl(ep, EPOLL_CTL_MOD, s, &e));
	send(c, "abcdef", 6, 0);
	show_events("wait ET after data", ep, 16, 5000);
	R("read 2", recv(s, buf, 2, 0));
	show_events("wait ET, no new data", ep, 16, 0);
	send(c, "gh", 2, 0);
	show_events("wait ET after more data", ep, 16, 5000);
	long r = R("read all", recv(s, buf, sizeof(buf), 0));
	show("got", buf, r);

	/* One-shot, then re-armed with MOD */
	e.events = EPOLLIN | EPOLLONESHOT;
	e.data.u64 = 2; /* C */
	R("MOD to ONESHOT", epoll_ctl(ep, EPOLL_CTL_MOD, s, &e));
	send(c, "x", 1, 0);
	show_events("wait ONESHOT", ep, 16, 5000);
	show_events("wait ONESHOT again (disabled)", ep, 16, 0);
	send(c, "y", 1, 0);
	show_events("wait ONESHOT, more data, still disabled", ep, 16, 50);
	R("MOD re-arm", epoll_ctl(ep, EPOLL_CTL_MOD, s, &e));
	show_events("wait re-armed", ep, 16, 5000);
	recv(s, buf, sizeof(buf), 0);

	/* EPOLLOUT on the client, with another set watching the server too */
	add(ep, c, EPOLLOUT, 3);               /* D */
	int ep2 = epoll_create1(0);
	add(ep2, s, EPOLLIN | EPOLLRDHUP, 4);  /* E in set 2 */
	e.events = EPOLLIN | EPOLLRDHUP;
	e.data.u64 = 5; /* F */
	R("MOD s", epoll_ctl(ep, EPOLL_CTL_MOD, s, &e));
	show_events("wait: writable client", ep, 16, 5000);
	send(c, "z", 1, 0);
	show_events("set 2 sees the data", ep2, 16, 5000);
	show_events("set 1 sees it too", ep, 16, 5000);
	{
		struct epoll_event one[1];
		R("maxevents 1 (two ready)", epoll_wait(ep, one, 1, 5000));
	}
	recv(s, buf, sizeof(buf), 0);

	/* A pipe in the same set as engine sockets */
	int pp[2];
	if (pipe(pp))
		die("pipe");
	add(ep, pp[0], EPOLLIN, 6);            /* G */
	R("DEL client", epoll_ctl(ep, EPOLL_CTL_DEL, c, NULL));
	R("write pipe", write(pp[1], "p", 1));
	show_events("pipe readable, socket quiet", ep, 16, 5000);
	send(c, "w", 1, 0);
	show_events("pipe and socket", ep, 16, 5000);
	read(pp[0], buf, 1);
	recv(s, buf, sizeof(buf), 0);

	/* Peer half-close: EPOLLIN|EPOLLRDHUP in both sets */
	shutdown(c, SHUT_WR);
	show_events("after peer SHUT_WR, set 1", ep, 16, 5000);
	show_events("after peer SHUT_WR, set 2", ep2, 16, 5000);

	/* Closing the socket removes it from both sets */
	close(s);
	show_events("after close, set 1", ep, 16, 50);
	show_events("after close, set 2", ep2, 16, 50);
	close(c);

	/* Many sockets in one set, each with data: all reported */
	int cs[8], ss[8];
	int ep3 = epoll_create1(0);
	for (int i = 0; i < 8; i++) {
		nb_pair(&cs[i], &ss[i]);
		add(ep3, ss[i], EPOLLIN, 8 + i);
	}
	for (int i = 0; i < 8; i++)
		send(cs[i], "m", 1, 0);
	int seen = 0;
	for (int tries = 0; tries < 50 && seen < 8; tries++) {
		struct epoll_event ev[16];
		int n = epoll_wait(ep3, ev, 16, 1000);
		for (int i = 0; i < n; i++) {
			int k = (int)ev[i].data.u64 - 8;
			if (recv(ss[k], buf, sizeof(buf), 0) == 1)
				seen++;
		}
	}
	say("8 sockets: %d delivered", seen);
	for (int i = 0; i < 8; i++) {
		close(cs[i]);
		close(ss[i]);
	}

	/* A bulk reader (64 KiB reads: its input stays in the kernel) with a
	 * level-triggered IN|OUT registration, as libuv keeps one while a
	 * write is pending: each time its send buffer fills, OUT must come
	 * once the peer has read (libuv's tcp_writealot waited forever for the
	 * second). */
	int bc, bs, small = 4096;
	nb_pair(&bc, &bs);
	setsockopt(bc, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	static char big[65536];
	for (int i = 0; i < 6; i++) { /* (arms it, then one large read) */
		send(bs, "r", 1, 0);
		wait_fd(bc, POLLIN, 2000);
		R("recv", recv(bc, big, i < 5 ? 1 : sizeof(big), 0));
	}
	int ep4 = epoll_create1(0);
	add(ep4, bc, EPOLLIN | EPOLLOUT, 20);
	show_events("bulk reader: writable", ep4, 16, 5000);
	for (int round = 1; round <= 3; round++) {
		long k, total = 0;
		while ((k = send(bc, big, sizeof(big), MSG_DONTWAIT)) == (long)sizeof(big))
			total += k;
		say("round %d: the send buffer filled (%s)", round, k < 0 ? scn_errname(errno) : "a partial send");
		while (recv(bs, big, sizeof(big), 0) > 0 || (errno == EAGAIN && wait_fd(bs, POLLIN, 200)))
			; /* (everything sent) */
		show_events("  after the peer read it all: OUT", ep4, 16, 5000);
	}
	close(bc);
	close(bs);
	close(ep4);
	return 0;
}
