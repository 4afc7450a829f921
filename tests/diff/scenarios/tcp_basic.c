/* Also run with every send through the frag pool and each batch sent zero-copy (tcp_send.c):
 * RUN_ALSO=RINGSOCK_ZEROCOPY=always RINGSOCK_ZEROCOPY_MIN=1 RINGSOCK_LINEAR_FIRST=0 RINGSOCK_DIRECT_THRESHOLD=0 RINGSOCK_ARM_AFTER=0 */
/* Blocking TCP: every read/write/send/recv entry point, partial reads,
 * iovecs, addresses, and a 4 MiB transfer with a checksum.  The engine
 * serves the blocking sockets.
 * ENGINE_MIN_ACCELERATED=2 */
#include "../scn.h"

int main(void)
{
	int c, s;
	char buf[256];
	tcp_pair(&c, &s);

	R("write", write(c, "hello", 5));
	R("read 3 (partial)", read(s, buf, 3));
	show("got", buf, 3);
	R("read rest", read(s, buf, sizeof(buf)));
	show("got", buf, 2);

	R("send", send(c, "abcdef", 6, 0));
	long n = R("recv", recv(s, buf, sizeof(buf), 0));
	show("got", buf, n);

	struct sockaddr_in peer;
	socklen_t pl = sizeof(peer);
	R("sendto (connected, no addr)", sendto(s, "xyz", 3, 0, NULL, 0));
	n = R("recvfrom", recvfrom(c, buf, sizeof(buf), 0, (struct sockaddr *)&peer, &pl));
	show("got", buf, n);
	say("recvfrom addrlen %u", (unsigned)pl);

	struct iovec iov[3] = { { "one ", 4 }, { "two ", 4 }, { "three", 5 } };
	R("writev", writev(c, iov, 3));
	char a[5], b[8];
	struct iovec riov[2] = { { a, sizeof(a) }, { b, sizeof(b) } };
	n = R("readv", readv(s, riov, 2));
	show("iov0", a, 5);
	show("iov1", b, n - 5);

	struct msghdr mh = { 0 };
	mh.msg_iov = iov;
	mh.msg_iovlen = 2;
	R("sendmsg", sendmsg(s, &mh, 0));
	struct msghdr rh = { 0 };
	struct iovec r1 = { buf, sizeof(buf) };
	rh.msg_iov = &r1;
	rh.msg_iovlen = 1;
	n = R("recvmsg", recvmsg(c, &rh, 0));
	show("got", buf, n);
	say("recvmsg flags %d namelen %u", rh.msg_flags, (unsigned)rh.msg_namelen);

	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	R("getsockname", getsockname(c, (struct sockaddr *)&ss, &sl));
	say("family %d len %u", ss.ss_family, (unsigned)sl);
	sl = sizeof(ss);
	R("getpeername", getpeername(s, (struct sockaddr *)&ss, &sl));
	say("family %d len %u", ss.ss_family, (unsigned)sl);

	/* 4 MiB through a writer child, read back in odd-sized pieces. */
	enum { TOTAL = 4 << 20 };
	pid_t pid = fork();
	if (pid == 0) {
		close(s);
		unsigned char *data = malloc(TOTAL);
		for (size_t i = 0; i < TOTAL; i++)
			data[i] = (unsigned char)(i * 2654435761u >> 13);
		size_t off = 0;
		while (off < TOTAL) {
			size_t chunk = 1 + (off * 7919) % 65521;
			if (chunk > TOTAL - off)
				chunk = TOTAL - off;
			ssize_t w = write(c, data + off, chunk);
			if (w <= 0)
				_exit(1);
			off += (size_t)w;
		}
		_exit(0);
	}
	close(c);
	unsigned char *got = malloc(TOTAL);
	size_t off = 0;
	while (off < TOTAL) {
		size_t want = 1 + (off * 104729) % 30011;
		ssize_t r = recv(s, got + off, want > TOTAL - off ? TOTAL - off : want, 0);
		if (r <= 0)
			break;
		off += (size_t)r;
	}
	say("bulk received %zu bytes sum %08x", off, scn_sum(got, off));
	R("recv at EOF", recv(s, buf, sizeof(buf), 0));
	reap("writer", pid);
	R("close", close(s));
	R("close again", close(s));
	return 0;
}
