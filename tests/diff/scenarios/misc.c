/* bind/listen/accept details, socket options, sendfile/sendfile64, splice,
 * ioctl, close_range and closefrom, socket() errors.
 * ENGINE_MIN_ACCELERATED=2 */
#define _GNU_SOURCE
#define _LARGEFILE64_SOURCE
#include "../scn.h"
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>

int main(void)
{
	char buf[256];
	R("socket bad domain", socket(12345, SOCK_STREAM, 0));
	R("socket bad type", socket(AF_INET, 999, 0));
	R("socket bad protocol", socket(AF_INET, SOCK_STREAM, IPPROTO_UDP));
	int raw = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
	say("raw socket ok %d", raw >= 0);
	if (raw >= 0)
		close(raw);

	struct sockaddr_storage a;
	socklen_t al;
	int l = tcp_listener(AF_INET, &a, &al);
	int l2 = socket(AF_INET, SOCK_STREAM, 0);
	R("bind in use", bind(l2, (struct sockaddr *)&a, al));
	R("bind short len", bind(l2, (struct sockaddr *)&a, 4));
	R("listen unbound (autobind)", listen(l2, 5));
	R("bind after listen", bind(l2, (struct sockaddr *)&a, al));
	R("bind non-socket", bind(0, (struct sockaddr *)&a, al));
	R("listen on UDP", ({ int u = socket(AF_INET, SOCK_DGRAM, 0); long r = listen(u, 1); int e = errno; close(u); errno = e; r; }));
	int v = 0;
	socklen_t vl = sizeof(v);
	R("SO_ACCEPTCONN", getsockopt(l, SOL_SOCKET, SO_ACCEPTCONN, &v, &vl));
	say("acceptconn %d", v);

	int c = socket(AF_INET, SOCK_STREAM, 0);
	R("connect", connect(c, (struct sockaddr *)&a, al));
	R("connect again (EISCONN)", connect(c, (struct sockaddr *)&a, al));
	struct sockaddr_in peer;
	socklen_t pl = sizeof(peer);
	int s = RFD("accept with address", accept(l, (struct sockaddr *)&peer, &pl));
	say("peer family %d addrlen %u loopback %d", peer.sin_family, (unsigned)pl,
	    peer.sin_addr.s_addr == htonl(INADDR_LOOPBACK));
	pl = 2;
	int c2 = socket(AF_INET, SOCK_STREAM, 0);
	connect(c2, (struct sockaddr *)&a, al);
	int s2 = RFD("accept with short addrlen", accept(l, (struct sockaddr *)&peer, &pl));
	say("addrlen reported %u", (unsigned)pl);
	R("accept on non-listening", accept(c, NULL, NULL));
	R("accept bad fd", accept(-5, NULL, NULL));

	static const struct { int level, name; const char *label; } opts[] = {
		{ SOL_SOCKET, SO_TYPE, "SO_TYPE" }, { SOL_SOCKET, SO_DOMAIN, "SO_DOMAIN" },
		{ SOL_SOCKET, SO_PROTOCOL, "SO_PROTOCOL" }, { SOL_SOCKET, SO_ERROR, "SO_ERROR" },
		{ IPPROTO_TCP, TCP_NODELAY, "TCP_NODELAY" }, { SOL_SOCKET, SO_KEEPALIVE, "SO_KEEPALIVE" },
	};
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		vl = sizeof(v);
		v = -1;
		R(opts[i].label, getsockopt(s, opts[i].level, opts[i].name, &v, &vl));
		say("%s = %d (len %u)", opts[i].label, v, (unsigned)vl);
	}
	v = 1;
	R("set TCP_NODELAY", setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &v, sizeof(v)));
	vl = sizeof(v);
	getsockopt(s, IPPROTO_TCP, TCP_NODELAY, &v, &vl);
	say("TCP_NODELAY now %d", v);
	R("setsockopt bad level", setsockopt(s, 9999, 1, &v, sizeof(v)));
	R("setsockopt short optlen", setsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, 1));
	R("getsockopt non-socket", getsockopt(0, SOL_SOCKET, SO_TYPE, &v, &vl));
	int rb = 65536;
	setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rb, sizeof(rb));
	vl = sizeof(rb);
	getsockopt(s, SOL_SOCKET, SO_RCVBUF, &rb, &vl);
	say("SO_RCVBUF doubled %d", rb == 131072);

	/* sendfile from a file, with and without offset. */
	char tmpl[] = "/tmp/scn-misc-XXXXXX";
	int f = mkstemp(tmpl);
	unlink(tmpl);
	for (int i = 0; i < 100; i++)
		if (write(f, "file-data-", 10) != 10)
			die("write");
	off_t off = 10;
	R("sendfile 20 at offset 10", sendfile(c, f, &off, 20));
	say("offset now %ld", (long)off);
	lseek(f, 0, SEEK_SET);
	R("sendfile 5 from file position", sendfile(c, f, NULL, 5));
	off64_t off64 = 990;
	R("sendfile64 past end", sendfile64(c, f, &off64, 50));
	long n = R("recv sendfile data", recv(s, buf, 35, MSG_WAITALL));
	show("got", buf, n);
	R("sendfile to bad fd", sendfile(-1, f, NULL, 5));

	/* splice: socket -> pipe -> socket */
	int pp[2];
	if (pipe(pp))
		die("pipe");
	send(c, "spliced!", 8, 0);
	msleep(10);
	R("splice socket to pipe", splice(s, NULL, pp[1], NULL, 8, 0));
	R("splice pipe to socket", splice(pp[0], NULL, s2, NULL, 8, 0));
	n = R("recv spliced", recv(c2, buf, 8, MSG_WAITALL));
	show("got", buf, n);
	R("splice bad", splice(s, NULL, s2, NULL, 8, 0));

	/* ioctls */
	send(c, "12345", 5, 0);
	msleep(10);
	int q = -1;
	R("SIOCINQ", ioctl(s, SIOCINQ, &q));
	say("inq %d", q);
	R("SIOCOUTQ", ioctl(c, SIOCOUTQ, &q));
	say("outq %d", q);
	R("ioctl unknown", ioctl(s, 0x7fff, &q));
#ifdef __GLIBC__
	R("fcntl64 F_GETFL", fcntl64(s, F_GETFL) & O_ACCMODE);
#endif

	/* close_range and closefrom leave the caller's other fds alone. */
	int hi[4];
	for (int i = 0; i < 4; i++)
		hi[i] = fcntl(c, F_DUPFD, 200 + i * 10);
	R("close_range 205..225", close_range(205, 225, 0));
	for (int i = 0; i < 4; i++)
		say("fd %d open %d", hi[i], fcntl(hi[i], F_GETFD) >= 0);
	R("close_range CLOEXEC", close_range(200, 200, CLOSE_RANGE_CLOEXEC));
	say("fd 200 cloexec %d", fcntl(200, F_GETFD) & FD_CLOEXEC);
	R("close_range bad", close_range(10, 5, 0));
	closefrom(200);
	say("after closefrom: fd 200 open %d, fd %d open %d", fcntl(200, F_GETFD) >= 0, s,
	    fcntl(s, F_GETFD) >= 0);
	send(c, "alive", 5, 0);
	n = R("recv still works", recv(s, buf, 5, MSG_WAITALL));
	show("got", buf, n);
	return 0;
}
