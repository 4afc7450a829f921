/* Receive semantics on sockets the engine serves (nonblocking, connected,
 * in an epoll set): MSG_PEEK, MSG_TRUNC, MSG_WAITALL, FIONREAD, readv,
 * recvmsg, recvfrom's address, EAGAIN, a megabyte with a checksum,
 * half-close, reset, EPIPE, zero-length calls.
 * ENGINE_MIN_ACCELERATED=4 */
#include "../scn.h"
#include <sys/epoll.h>
#include <sys/ioctl.h>

static void arm(int ep, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	int ep = epoll_create1(0);
	int c, s;
	nb_pair(&c, &s);
	arm(ep, c);
	arm(ep, s);
	char buf[256];

	R("recv empty", recv(s, buf, sizeof(buf), 0));
	R("read empty", read(s, buf, sizeof(buf)));
	R("recv len 0", recv(s, buf, 0, 0));
	R("send", send(c, "hello world", 11, 0));
	say("poll revents %#x", wait_fd(s, POLLIN, 5000));
	int n = -1;
	R("FIONREAD", ioctl(s, FIONREAD, &n));
	say("FIONREAD %d", n);
	long r = R("recv PEEK 5", recv(s, buf, 5, MSG_PEEK));
	show("peeked", buf, r);
	r = R("recv PEEK all", recv(s, buf, sizeof(buf), MSG_PEEK));
	show("peeked", buf, r);
	r = R("recv 5", recv(s, buf, 5, 0));
	show("got", buf, r);
	char a[2], b[3];
	struct iovec v[2] = { { a, 2 }, { b, 3 } };
	r = R("readv 2+3", readv(s, v, 2));
	show("a", a, 2);
	show("b", b, 3);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	r = R("recvfrom with address", recvfrom(s, buf, sizeof(buf), 0, (struct sockaddr *)&ss, &sl));
	show("got", buf, r);
	say("address length %u", (unsigned)sl);
	R("recv empty again", recv(s, buf, sizeof(buf), 0));
	R("FIONREAD", ioctl(s, FIONREAD, &n));
	say("FIONREAD %d", n);

	R("send", send(c, "0123456789", 10, 0));
	wait_fd(s, POLLIN, 5000);
	R("recv MSG_TRUNC 4", recv(s, NULL, 4, MSG_TRUNC));
	struct msghdr m = { 0 };
	struct iovec mv = { buf, sizeof(buf) };
	char ctl[64];
	m.msg_iov = &mv;
	m.msg_iovlen = 1;
	m.msg_control = ctl;
	m.msg_controllen = sizeof(ctl);
	r = R("recvmsg", recvmsg(s, &m, 0));
	show("got", buf, r);
	say("msg_controllen %zu msg_flags %#x", (size_t)m.msg_controllen, m.msg_flags);
	R("recv MSG_WAITALL on nonblocking, empty", recv(s, buf, 8, MSG_WAITALL));
	R("send 3", send(c, "abc", 3, 0));
	wait_fd(s, POLLIN, 5000);
	r = R("recv MSG_WAITALL 8 with 3 queued", recv(s, buf, 8, MSG_WAITALL | MSG_DONTWAIT));
	show("got", buf, r);

	/* A megabyte each way, checksummed. */
	size_t big = 1 << 20;
	char *out = malloc(big), *in = malloc(big);
	fill_pattern(out, big, 7);
	pid_t p = fork();
	if (p == 0) {
		send_all_nb(c, out, big);
		_exit(0);
	}
	r = recv_all_nb(s, in, big);
	reap("sender", p);
	say("received %ld bytes, match %d", r, r == (long)big && !memcmp(in, out, big));
	p = fork();
	if (p == 0) {
		send_all_nb(s, out, big);
		_exit(0);
	}
	r = recv_all_nb(c, in, big);
	reap("sender", p);
	say("received %ld bytes, match %d", r, r == (long)big && !memcmp(in, out, big));

	/* Half-close: data, then end of stream, then readiness says so. */
	R("send", send(c, "bye", 3, 0));
	R("shutdown SHUT_WR", shutdown(c, SHUT_WR));
	r = recv_all_nb(s, buf, sizeof(buf));
	show("until EOF", buf, r);
	R("recv at EOF", recv(s, buf, sizeof(buf), 0));
	R("recv at EOF again", recv(s, buf, sizeof(buf), 0));
	say("poll revents %#x", wait_fd(s, POLLIN | POLLRDHUP, 5000));
	R("send after own SHUT_WR", send(c, "x", 1, MSG_NOSIGNAL));
	R("send on half-closed peer", send(s, "still", 5, 0));
	wait_fd(c, POLLIN, 5000);
	r = R("recv on the SHUT_WR side", recv(c, buf, sizeof(buf), 0));
	show("got", buf, r);
	close(c);
	close(s);

	/* Reset: the peer aborts with unread data. */
	int c2, s2;
	nb_pair(&c2, &s2);
	arm(ep, c2);
	arm(ep, s2);
	R("send to the peer that will abort", send(s2, "unread", 6, 0));
	wait_fd(c2, POLLIN, 5000);
	struct linger lg = { 1, 0 };
	setsockopt(c2, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(c2);
	say("poll revents %#x", wait_fd(s2, POLLIN, 5000));
	R("recv after reset", recv(s2, buf, sizeof(buf), 0));
	R("recv after reset again", recv(s2, buf, sizeof(buf), 0));
	int err = -1;
	socklen_t el = sizeof(err);
	R("SO_ERROR", getsockopt(s2, SOL_SOCKET, SO_ERROR, &err, &el));
	say("SO_ERROR %s", err ? scn_errname(err) : "0");
	R("send after reset", send(s2, "x", 1, MSG_NOSIGNAL));
	close(s2);

	/* Close with unread data sends a reset. */
	int c3, s3;
	nb_pair(&c3, &s3);
	arm(ep, c3);
	arm(ep, s3);
	R("send", send(c3, "never read", 10, 0));
	wait_fd(s3, POLLIN, 5000);
	close(s3);
	say("poll revents %#x", wait_fd(c3, POLLIN, 5000));
	R("recv after the peer closed with unread data", recv(c3, buf, sizeof(buf), 0));
	close(c3);
	return 0;
}
