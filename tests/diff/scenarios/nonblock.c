/* Also run with every send through the frag pool and each batch sent zero-copy (tcp_send.c):
 * RUN_ALSO=RINGSOCK_ZEROCOPY=always RINGSOCK_ZEROCOPY_MIN=1 RINGSOCK_LINEAR_FIRST=0 RINGSOCK_DIRECT_THRESHOLD=0 RINGSOCK_ARM_AFTER=0
 * ENGINE_MIN_ACCELERATED=5 */
/* Nonblocking sockets: EAGAIN, nonblocking accept and connect, MSG_DONTWAIT,
 * refused connects blocking and nonblocking. */
#include "../scn.h"

int main(void)
{
	struct sockaddr_storage a;
	socklen_t al;
	char buf[64];
	int l = tcp_listener(AF_INET, &a, &al);

	R("fcntl O_NONBLOCK on listener", fcntl(l, F_SETFL, fcntl(l, F_GETFL) | O_NONBLOCK));
	R("accept (none pending)", accept(l, NULL, NULL));
	R("accept4 (none pending)", accept4(l, NULL, NULL, SOCK_CLOEXEC));

	int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	long r = R("nonblocking connect", connect(c, (struct sockaddr *)&a, al));
	if (r < 0 && errno == EINPROGRESS) {
		struct pollfd p = { c, POLLOUT, 0 };
		R("poll for connect", poll(&p, 1, 5000));
		say("revents %#x", p.revents);
	}
	int err = -1;
	socklen_t el = sizeof(err);
	R("getsockopt SO_ERROR", getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &el));
	say("SO_ERROR %s", err ? scn_errname(err) : "0");
	R("connect again", connect(c, (struct sockaddr *)&a, al));

	struct pollfd lp = { l, POLLIN, 0 };
	R("poll listener", poll(&lp, 1, 5000));
	int s = RFD("accept4 nonblock", accept4(l, NULL, NULL, SOCK_NONBLOCK));
	say("accepted O_NONBLOCK %d", (fcntl(s, F_GETFL) & O_NONBLOCK) != 0);

	R("recv empty", recv(s, buf, sizeof(buf), 0));
	R("read empty", read(s, buf, sizeof(buf)));
	R("readv empty", ({ struct iovec v = { buf, 8 }; readv(s, &v, 1); }));
	R("recvmsg empty", ({ struct iovec v = { buf, 8 }; struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 }; recvmsg(s, &m, 0); }));

	int b = socket(AF_INET, SOCK_STREAM, 0);
	int b2 = socket(AF_INET, SOCK_STREAM, 0);
	tcp_pair(&b, &b2);
	R("recv MSG_DONTWAIT on blocking socket", recv(b, buf, sizeof(buf), MSG_DONTWAIT));
	R("send", send(b2, "q", 1, 0));
	struct pollfd bp = { b, POLLIN, 0 };
	poll(&bp, 1, 5000);
	r = R("recv MSG_DONTWAIT with data", recv(b, buf, sizeof(buf), MSG_DONTWAIT));
	show("got", buf, r);

	/* Fill the send buffer: a nonblocking send must stop with EAGAIN.  A
	 * fresh pair whose receiver has not read yet (a receiver that has read
	 * may be read ahead by the engine, up to its held-data bound, which
	 * lets the sender go further: see ringsock(7)). */
	close(c);
	close(s);
	nb_pair(&c, &s);
	int one = 4096;
	setsockopt(c, SOL_SOCKET, SO_SNDBUF, &one, sizeof(one));
	static char big[65536];
	long total = 0, last = 0;
	int rounds = 0;
	for (; rounds < 100000; rounds++) {
		last = send(c, big, sizeof(big), 0);
		if (last < 0)
			break;
		total += last;
	}
	say("send until full: stopped with %s", last < 0 ? scn_errname(errno) : "no error");
	struct pollfd wp = { c, POLLOUT, 0 };
	R("poll POLLOUT when full", poll(&wp, 1, 0));
	/* Drain everything and count it. */
	long drained = 0;
	while (drained < total) {
		struct pollfd rp = { s, POLLIN, 0 };
		poll(&rp, 1, 5000);
		long n = recv(s, big, sizeof(big), 0);
		if (n <= 0)
			break;
		drained += n;
	}
	say("drained all that was accepted: %d", drained == total);

	/* Refused connects. */
	close(l);
	int rc = socket(AF_INET, SOCK_STREAM, 0);
	R("blocking connect to closed port", connect(rc, (struct sockaddr *)&a, al));
	int nc = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	r = R("nonblocking connect to closed port", connect(nc, (struct sockaddr *)&a, al));
	struct pollfd np = { nc, POLLOUT, 0 };
	R("poll", poll(&np, 1, 5000));
	say("revents has POLLERR %d POLLHUP %d", !!(np.revents & POLLERR), !!(np.revents & POLLHUP));
	el = sizeof(err);
	getsockopt(nc, SOL_SOCKET, SO_ERROR, &err, &el);
	say("SO_ERROR %s", err ? scn_errname(err) : "0");
	el = sizeof(err);
	getsockopt(nc, SOL_SOCKET, SO_ERROR, &err, &el);
	say("SO_ERROR second read %s", err ? scn_errname(err) : "0");
	R("send on unconnected", send(rc, "x", 1, MSG_NOSIGNAL));
	return 0;
}
