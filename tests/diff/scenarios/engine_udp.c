/* engine_udp: UDP sockets served by the engine (a multishot recvmsg per
 * socket, datagrams held by the library) must answer every call as the
 * kernel does: recvfrom/recvmsg/recvmmsg/read with source addresses,
 * MSG_PEEK, MSG_TRUNC (the flag and the real length), zero-length
 * datagrams, FIONREAD (the next datagram's size), blocking reads and
 * SO_RCVTIMEO, poll and epoll (level and edge), ICMP errors on a
 * connected socket (reported once, first, by a receive, a send or
 * SO_ERROR), connect filtering with datagrams already queued, IPv6,
 * a fork with datagrams held (each read once), another thread reading,
 * close then bind of the same port, IP_MTU_DISCOVER and IPV6_MTU_DISCOVER
 * (the socket stays on the engine), shutdown (of a socket already read,
 * and of an unconnected one before its first read).
 *
 * Every datagram is sent on loopback before the read that expects it and
 * waited for with poll, so what each call finds is decided by the
 * program, not by timing.
 *
 * ENGINE_MIN_ACCELERATED=14 (every socket: the ones that set MTU_DISCOVER too) */
#include "../scn.h"
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>

static int udp_sock(int family)
{
	int s = socket(family, SOCK_DGRAM, 0);
	if (s < 0)
		die("socket");
	if (family == AF_INET) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		if (bind(s, (struct sockaddr *)&a, sizeof(a)))
			die("bind");
	} else {
		struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
		if (bind(s, (struct sockaddr *)&a, sizeof(a)))
			die("bind6");
	}
	return s;
}

static socklen_t addr_of(int s, struct sockaddr_storage *ss)
{
	socklen_t l = sizeof(*ss);
	if (getsockname(s, (struct sockaddr *)ss, &l))
		die("getsockname");
	return l;
}

static void to(int from, int dst, const char *msg, size_t n)
{
	struct sockaddr_storage ss;
	socklen_t l = addr_of(dst, &ss);
	if (sendto(from, msg, n, 0, (struct sockaddr *)&ss, l) != (ssize_t)n)
		die("sendto");
}

/* Which of the named sockets the address is (never the port itself). */
static const char *who(const struct sockaddr_storage *ss, socklen_t l, int *socks, const char **names, int n)
{
	for (int i = 0; i < n; i++) {
		struct sockaddr_storage s;
		socklen_t sl = addr_of(socks[i], &s);
		if (sl == l && !memcmp(&s, ss, l))
			return names[i];
	}
	return "unknown";
}

/* Nonblocking, and armed by a first read that finds nothing. */
static void armed_nb(int s, const char *label)
{
	char b[8];
	set_nonblock(s);
	R(label, recv(s, b, sizeof(b), 0));
}

static void readable(int s)
{
	if (!(wait_fd(s, POLLIN, 2000) & POLLIN))
		say("not readable");
}

struct late_send {
	int from, dst;
	const char *msg;
	int delay_ms;
};

/* Sends one datagram after a while (the reader is blocked by then, or
 * not: either way it gets it). */
static void *late_sender(void *arg)
{
	struct late_send *l = arg;
	msleep(l->delay_ms);
	to(l->from, l->dst, l->msg, strlen(l->msg));
	return NULL;
}

static void *thread_reader(void *arg)
{
	int s = *(int *)arg;
	char buf[32];
	for (int i = 0; i < 3; i++) {
		long n = R("thread recv", recv(s, buf, sizeof(buf), MSG_DONTWAIT));
		show("thread got", buf, n);
	}
	return NULL;
}

int main(void)
{
	char buf[256];
	struct sockaddr_storage from;
	socklen_t fl;
	long n;

	/* ---- IPv4, unconnected ---- */
	int a = udp_sock(AF_INET), b = udp_sock(AF_INET);
	int socks[2] = { a, b };
	const char *names[2] = { "a", "b" };
	armed_nb(a, "recv before anything (arms it)");
	to(b, a, "first datagram", 14);
	to(b, a, "", 0);
	to(b, a, "third", 5);
	readable(a);
	int avail = -1;
	R("FIONREAD", ioctl(a, FIONREAD, &avail));
	say("FIONREAD says %d", avail);
	fl = sizeof(from);
	n = R("recvfrom MSG_PEEK", recvfrom(a, buf, sizeof(buf), MSG_PEEK, (struct sockaddr *)&from, &fl));
	show("peeked", buf, n);
	say("from %s, addrlen %u", who(&from, fl, socks, names, 2), (unsigned)fl);
	fl = 4; /* too small for the address: cut, and the real length back */
	memset(&from, 0, sizeof(from));
	n = R("recvfrom 5 of 14, addrlen 4", recvfrom(a, buf, 5, 0, (struct sockaddr *)&from, &fl));
	show("got", buf, n);
	say("addrlen %u, family %d", (unsigned)fl, from.ss_family);
	R("FIONREAD (the empty one next)", ioctl(a, FIONREAD, &avail));
	say("FIONREAD says %d", avail);
	R("recv empty datagram", recv(a, buf, sizeof(buf), 0));
	struct iovec v[2] = { { buf, 2 }, { buf + 2, 1 } };
	char ctl[64];
	struct msghdr mh = { .msg_iov = v, .msg_iovlen = 2, .msg_control = ctl, .msg_controllen = sizeof(ctl) };
	mh.msg_namelen = 77; /* no msg_name: left as it is */
	n = R("recvmsg 3 of 5 in two iovecs", recvmsg(a, &mh, 0));
	show("got", buf, n);
	say("msg_flags TRUNC %d, controllen %zu, namelen %u", !!(mh.msg_flags & MSG_TRUNC), (size_t)mh.msg_controllen,
	    (unsigned)mh.msg_namelen);
	R("recv nothing", recv(a, buf, sizeof(buf), 0));
	to(b, a, "truncate-me", 11);
	readable(a);
	R("recv MSG_TRUNC|MSG_PEEK: full length", recv(a, buf, 3, MSG_TRUNC | MSG_PEEK));
	R("recv MSG_TRUNC: full length", recv(a, buf, 3, MSG_TRUNC));
	to(b, a, "gone", 4);
	readable(a);
	R("read 0 bytes drops a datagram", read(a, buf, 0));
	R("then nothing", read(a, buf, sizeof(buf)));

	/* ---- recvmmsg ---- */
	for (int i = 0; i < 5; i++) {
		char m[8];
		snprintf(m, sizeof(m), "mm%d", i);
		to(b, a, m, strlen(m));
	}
	readable(a);
	struct mmsghdr in[4];
	char rb[4][16];
	struct iovec iv[4];
	struct sockaddr_storage names_in[4];
	memset(in, 0, sizeof(in));
	for (int i = 0; i < 4; i++) {
		iv[i] = (struct iovec){ rb[i], sizeof(rb[i]) };
		in[i].msg_hdr.msg_iov = &iv[i];
		in[i].msg_hdr.msg_iovlen = 1;
		in[i].msg_hdr.msg_name = &names_in[i];
		in[i].msg_hdr.msg_namelen = sizeof(names_in[i]);
	}
	n = R("recvmmsg 3 (WAITFORONE)", recvmmsg(a, in, 3, MSG_WAITFORONE, NULL));
	for (int i = 0; i < n; i++) {
		show("mmsg", rb[i], in[i].msg_len);
		say("  from %s", who(&names_in[i], in[i].msg_hdr.msg_namelen, socks, names, 2));
	}
	n = R("recvmmsg 4 (the last 2)", recvmmsg(a, in, 4, 0, NULL));
	for (int i = 0; i < n; i++)
		show("mmsg", rb[i], in[i].msg_len);
	struct timespec ts = { 0, 1000000 };
	R("recvmmsg nothing", recvmmsg(a, in, 4, 0, &ts));

	/* ---- poll and epoll ---- */
	struct pollfd p = { a, POLLIN | POLLOUT | POLLWRBAND, 0 };
	R("poll idle", poll(&p, 1, 0));
	say("revents %#x", p.revents);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u32 = 1 }, out[4];
	R("epoll_ctl ET", epoll_ctl(ep, EPOLL_CTL_ADD, a, &ev));
	R("epoll_wait idle", epoll_wait(ep, out, 4, 0));
	to(b, a, "e1", 2);
	to(b, a, "e2", 2);
	n = R("epoll_wait two datagrams: one edge", epoll_wait(ep, out, 4, 2000));
	if (n > 0)
		say("events %#x", out[0].events);
	R("recv one", recv(a, buf, sizeof(buf), 0));
	R("epoll_wait: no new edge", epoll_wait(ep, out, 4, 0));
	to(b, a, "e3", 2);
	R("epoll_wait: a new datagram is an edge", epoll_wait(ep, out, 4, 2000));
	R("recv", recv(a, buf, sizeof(buf), 0));
	R("recv", recv(a, buf, sizeof(buf), 0));
	ev.events = EPOLLIN;
	R("epoll_ctl MOD level", epoll_ctl(ep, EPOLL_CTL_MOD, a, &ev));
	R("epoll_wait empty", epoll_wait(ep, out, 4, 0));
	to(b, a, "l1", 2);
	R("epoll_wait level", epoll_wait(ep, out, 4, 2000));
	R("epoll_wait level again", epoll_wait(ep, out, 4, 0));
	R("recv", recv(a, buf, sizeof(buf), 0));
	R("epoll_wait after", epoll_wait(ep, out, 4, 0));
	close(ep);

	/* ---- blocking reads (a thread sends: a fork would leave the socket
	 * open in two processes, which the engine leaves to the kernel) ---- */
	int c = udp_sock(AF_INET);
	struct late_send ls = { b, c, "late", 20 };
	pthread_t sender;
	pthread_create(&sender, NULL, late_sender, &ls);
	n = R("blocking recv waits for the datagram", recv(c, buf, sizeof(buf), 0));
	show("got", buf, n);
	pthread_join(sender, NULL);
	struct timeval tv = { 0, 30000 };
	R("SO_RCVTIMEO", setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	R("blocking recv times out", recv(c, buf, sizeof(buf), 0));
	tv.tv_usec = 0;
	tv.tv_sec = 5;
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ls = (struct late_send){ b, c, "one", 0 };
	pthread_create(&sender, NULL, late_sender, &ls);
	n = R("blocking recvmmsg WAITFORONE", recvmmsg(c, in, 4, MSG_WAITFORONE, NULL));
	if (n > 0)
		show("mmsg", rb[0], in[0].msg_len);
	pthread_join(sender, NULL);
	pid_t kid;

	/* ---- connected, ICMP errors ---- */
	int d = udp_sock(AF_INET), gone = udp_sock(AF_INET);
	struct sockaddr_storage gs;
	socklen_t gl = addr_of(gone, &gs);
	close(gone);
	R("connect to a closed port", connect(d, (struct sockaddr *)&gs, gl));
	armed_nb(d, "recv (arms it)");
	R("send", send(d, "x", 1, 0));
	p = (struct pollfd){ d, POLLIN | POLLOUT, 0 };
	R("poll: the error", poll(&p, 1, 2000));
	say("revents %#x", p.revents);
	R("recv gets ECONNREFUSED", recv(d, buf, sizeof(buf), 0));
	R("recv again", recv(d, buf, sizeof(buf), 0));
	R("send", send(d, "x", 1, 0));
	p.revents = 0;
	R("poll: the error again", poll(&p, 1, 2000));
	R("send gets ECONNREFUSED", send(d, "y", 1, 0));
	R("send again", send(d, "y", 1, 0));
	wait_fd(d, POLLIN, 2000);
	int soerr = -1;
	socklen_t sl = sizeof(soerr);
	R("SO_ERROR", getsockopt(d, SOL_SOCKET, SO_ERROR, &soerr, &sl));
	say("SO_ERROR %s", soerr ? scn_errname(soerr) : "0");
	R("SO_ERROR again", getsockopt(d, SOL_SOCKET, SO_ERROR, &soerr, &sl));
	say("SO_ERROR %s", soerr ? scn_errname(soerr) : "0");
	close(d);

	/* ---- connect with datagrams queued: they stay; later ones filter ---- */
	int x = udp_sock(AF_INET), y = udp_sock(AF_INET), e = udp_sock(AF_INET);
	int socks3[2] = { x, y };
	const char *names3[2] = { "x", "y" };
	armed_nb(e, "recv (arms it)");
	to(y, e, "from y before", 13);
	to(x, e, "from x before", 13);
	readable(e);
	struct sockaddr_storage xs;
	socklen_t xl = addr_of(x, &xs);
	R("connect to x", connect(e, (struct sockaddr *)&xs, xl));
	to(y, e, "from y after", 12);
	to(x, e, "from x after", 12);
	for (int i = 0; i < 4; i++) {
		wait_fd(e, POLLIN, 200);
		fl = sizeof(from);
		n = R("recvfrom", recvfrom(e, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl));
		if (n >= 0) {
			show("got", buf, n);
			say("  from %s", who(&from, fl, socks3, names3, 2));
		}
	}

	/* ---- IPv6 ---- */
	int s6 = udp_sock(AF_INET6), t6 = udp_sock(AF_INET6);
	int socks6[2] = { s6, t6 };
	const char *names6[2] = { "s6", "t6" };
	armed_nb(s6, "recv6 (arms it)");
	to(t6, s6, "six", 3);
	readable(s6);
	fl = sizeof(from);
	n = R("recvfrom6", recvfrom(s6, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl));
	show("got", buf, n);
	say("from %s, addrlen %u, family %s", who(&from, fl, socks6, names6, 2), (unsigned)fl,
	    from.ss_family == AF_INET6 ? "inet6" : "other");

	/* ---- a fork with datagrams held: each read once ---- */
	to(b, a, "f1", 2);
	to(b, a, "f2", 2);
	to(b, a, "f3", 2);
	readable(a);
	n = R("parent reads the first", recv(a, buf, sizeof(buf), 0));
	show("got", buf, n);
	kid = fork();
	if (kid == 0) {
		n = R("child reads", recv(a, buf, sizeof(buf), 0));
		show("child got", buf, n);
		_exit(0);
	}
	reap("child", kid);
	n = R("parent reads", recv(a, buf, sizeof(buf), 0));
	show("got", buf, n);
	R("parent: nothing left", recv(a, buf, sizeof(buf), 0));
	to(b, a, "after fork", 10);
	readable(a);
	n = R("parent reads a new one (the kernel's)", recv(a, buf, sizeof(buf), 0));
	show("got", buf, n);

	/* ---- another thread reads what this one's ring holds ---- */
	int g = udp_sock(AF_INET);
	armed_nb(g, "recv (arms it)");
	to(b, g, "t1", 2);
	to(b, g, "t2", 2);
	readable(g);
	pthread_t th;
	pthread_create(&th, NULL, thread_reader, &g);
	pthread_join(th, NULL);

	/* ---- close with datagrams held, then the same port again ---- */
	struct sockaddr_storage cs;
	socklen_t cl = addr_of(c, &cs);
	to(b, c, "unread", 6);
	readable(c);
	R("close with a datagram held", close(c));
	int c2 = socket(AF_INET, SOCK_DGRAM, 0);
	R("bind the same port at once", bind(c2, (struct sockaddr *)&cs, cl));
	close(c2);

	/* ---- options only a send or a bind reads (path MTU discovery, as
	 * DNS and QUIC servers set it): the socket stays on the engine ---- */
	for (int fam = 0; fam < 2; fam++) {
		int m = udp_sock(fam ? AF_INET6 : AF_INET), peer = udp_sock(fam ? AF_INET6 : AF_INET);
		int v = fam ? IPV6_PMTUDISC_DO : IP_PMTUDISC_OMIT, got = -1;
		socklen_t gl = sizeof(got);
		if (fam)
			R("IPV6_MTU_DISCOVER", setsockopt(m, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &v, sizeof(v)));
		else
			R("IP_MTU_DISCOVER", setsockopt(m, IPPROTO_IP, IP_MTU_DISCOVER, &v, sizeof(v)));
		R("getsockopt MTU_DISCOVER", getsockopt(m, fam ? IPPROTO_IPV6 : IPPROTO_IP,
							fam ? IPV6_MTU_DISCOVER : IP_MTU_DISCOVER, &got, &gl));
		say("MTU_DISCOVER is %d", got);
		armed_nb(m, "recv (arms it)");
		to(peer, m, "mtu1", 4);
		to(peer, m, "mtu2", 4);
		readable(m);
		n = R("recv", recv(m, buf, sizeof(buf), 0));
		show("got", buf, n);
		n = R("recv", recv(m, buf, sizeof(buf), 0));
		show("got", buf, n);
		to(m, peer, "back", 4);
		readable(peer);
		n = R("peer recv", recv(peer, buf, sizeof(buf), 0));
		show("got", buf, n);
		close(m);
		close(peer);
	}

	/* ---- shutdown ---- */
	to(b, g, "before shutdown", 15);
	readable(g);
	R("shutdown SHUT_RD", shutdown(g, SHUT_RD));
	n = R("recv after shutdown (queued)", recv(g, buf, sizeof(buf), 0));
	show("got", buf, n);
	R("recv after shutdown (empty)", recv(g, buf, sizeof(buf), 0));

	/* An unconnected socket shut down before its first read: ENOTCONN,
	 * but the kernel marks it all the same; a blocking read returns 0 at
	 * once, a datagram that comes after is still delivered, and a
	 * nonblocking read of the empty queue is EAGAIN.  Each way round. */
	for (int how = SHUT_RD; how <= SHUT_RDWR; how += SHUT_RDWR - SHUT_RD) {
		int u = udp_sock(AF_INET);
		alarm(5);
		R(how == SHUT_RD ? "unread: shutdown SHUT_RD" : "unread: shutdown SHUT_RDWR", shutdown(u, how));
		R("unread: recvfrom after shutdown", recvfrom(u, buf, sizeof(buf), 0, NULL, NULL));
		to(b, u, "late", 4);
		readable(u);
		n = R("unread: recvfrom of a later datagram", recvfrom(u, buf, sizeof(buf), 0, NULL, NULL));
		show("got", buf, n);
		R("unread: MSG_DONTWAIT on the empty queue", recv(u, buf, sizeof(buf), MSG_DONTWAIT));
		R("unread: recv after shutdown again", recv(u, buf, sizeof(buf), 0));
		alarm(0);
		close(u);
	}
	return 0;
}
