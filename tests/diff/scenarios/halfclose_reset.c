/* Also run with every send through the frag pool and each batch sent zero-copy (tcp_send.c):
 * RUN_ALSO=RINGSOCK_ZEROCOPY=always RINGSOCK_ZEROCOPY_MIN=1 RINGSOCK_LINEAR_FIRST=0 RINGSOCK_DIRECT_THRESHOLD=0 RINGSOCK_ARM_AFTER=0 */
/* shutdown, EOF, RST, EPIPE/SIGPIPE, MSG_NOSIGNAL, ECONNRESET, POLLRDHUP,
 * on blocking sockets the engine serves.
 * ENGINE_MIN_ACCELERATED=4 */
#include "../scn.h"

static volatile sig_atomic_t pipes;
static void on_pipe(int sig)
{
	(void)sig;
	pipes++;
}

int main(void)
{
	int c, s;
	char buf[64];
	tcp_pair(&c, &s);
	signal(SIGPIPE, on_pipe);

	R("shutdown SHUT_WR", shutdown(c, SHUT_WR));
	R("recv EOF", recv(s, buf, sizeof(buf), 0));
	R("read EOF again", read(s, buf, sizeof(buf)));
	struct pollfd p = { s, POLLIN | POLLRDHUP, 0 };
	R("poll after peer SHUT_WR", poll(&p, 1, 1000));
	say("revents POLLIN %d POLLRDHUP %d POLLHUP %d", !!(p.revents & POLLIN),
	    !!(p.revents & POLLRDHUP), !!(p.revents & POLLHUP));
	R("send back on half-closed", send(s, "back", 4, 0));
	long n = R("recv on shut-down writer", recv(c, buf, sizeof(buf), 0));
	show("got", buf, n);
	R("send after own SHUT_WR", send(c, "x", 1, 0));
	say("SIGPIPE count %d", pipes);
	R("send MSG_NOSIGNAL after own SHUT_WR", send(c, "x", 1, MSG_NOSIGNAL));
	say("SIGPIPE count %d", pipes);
	R("shutdown SHUT_RD", shutdown(s, SHUT_RD));
	R("recv after own SHUT_RD", recv(s, buf, sizeof(buf), 0));
	R("shutdown bad how", shutdown(s, 7));
	R("shutdown non-socket", shutdown(0, SHUT_RDWR));

	/* Reset: SO_LINGER 0 then close sends RST. */
	int c2, s2;
	tcp_pair(&c2, &s2);
	send(c2, "unread", 6, 0);
	struct linger lg = { 1, 0 };
	R("setsockopt SO_LINGER 0", setsockopt(c2, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
	R("close (RST)", close(c2));
	msleep(50);
	struct pollfd p2 = { s2, POLLIN, 0 };
	R("poll after RST", poll(&p2, 1, 1000));
	say("revents POLLIN %d POLLERR %d POLLHUP %d", !!(p2.revents & POLLIN),
	    !!(p2.revents & POLLERR), !!(p2.revents & POLLHUP));
	R("recv after RST", recv(s2, buf, sizeof(buf), 0));
	R("recv again", recv(s2, buf, sizeof(buf), 0));
	pipes = 0;
	R("send after RST", send(s2, "x", 1, 0));
	say("SIGPIPE count %d", pipes);

	/* Peer closed normally with our data unread: writing eventually EPIPE. */
	int c3, s3;
	tcp_pair(&c3, &s3);
	close(s3);
	msleep(20);
	pipes = 0;
	R("send to closed peer (first)", send(c3, "1", 1, 0));
	msleep(50);
	R("send to closed peer (after RST)", send(c3, "2", 1, 0));
	R("send again", send(c3, "3", 1, 0));
	say("SIGPIPE count %d", pipes);
	int err = 0;
	socklen_t el = sizeof(err);
	getsockopt(c3, SOL_SOCKET, SO_ERROR, &err, &el);
	say("SO_ERROR %s", err ? scn_errname(err) : "0");

	/* Ignored SIGPIPE: EPIPE and no signal. */
	signal(SIGPIPE, SIG_IGN);
	R("write with SIGPIPE ignored", write(c3, "4", 1));
	return 0;
}
