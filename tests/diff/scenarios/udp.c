/* UDP: sendto/recvfrom, connected send/recv, sendmmsg/recvmmsg, MSG_TRUNC,
 * MSG_PEEK, empty datagrams, ECONNREFUSED from ICMP on a connected socket,
 * FIONREAD on datagrams, nonblocking EAGAIN.
 * ENGINE_MIN_ACCELERATED=3 */
#include "../scn.h"
#include <sys/ioctl.h>

int main(void)
{
	int a, b;
	struct sockaddr_in aa;
	char buf[64];
	udp_pair(&a, &b, &aa, 0);

	R("sendto", sendto(b, "datagram", 8, 0, (struct sockaddr *)&aa, sizeof(aa)));
	R("sendto empty", sendto(b, "", 0, 0, (struct sockaddr *)&aa, sizeof(aa)));
	msleep(10);
	int avail = -1;
	R("FIONREAD (first datagram size)", ioctl(a, FIONREAD, &avail));
	say("FIONREAD %d", avail);
	struct sockaddr_in from;
	socklen_t fl = sizeof(from);
	long n = R("recvfrom MSG_PEEK", recvfrom(a, buf, sizeof(buf), MSG_PEEK, (struct sockaddr *)&from, &fl));
	show("peeked", buf, n);
	say("from family %d addrlen %u", from.sin_family, (unsigned)fl);
	n = R("recv 4 of 8 (truncated)", recv(a, buf, 4, 0));
	show("got", buf, n);
	R("recv empty datagram", recv(a, buf, sizeof(buf), 0));
	R("recv nothing (DONTWAIT)", recv(a, buf, sizeof(buf), MSG_DONTWAIT));

	sendto(b, "truncate-me", 11, 0, (struct sockaddr *)&aa, sizeof(aa));
	msleep(10);
	R("recv MSG_TRUNC reports full size", recv(a, buf, 3, MSG_TRUNC));
	sendto(b, "flags", 5, 0, (struct sockaddr *)&aa, sizeof(aa));
	msleep(10);
	struct iovec v = { buf, 2 };
	struct msghdr mh = { .msg_iov = &v, .msg_iovlen = 1 };
	R("recvmsg small buffer", recvmsg(a, &mh, 0));
	say("msg_flags MSG_TRUNC %d", !!(mh.msg_flags & MSG_TRUNC));

	/* sendmmsg / recvmmsg */
	struct mmsghdr out[3], in[4];
	struct iovec ov[3] = { { "m1", 2 }, { "mm2", 3 }, { "mmm3", 4 } };
	char rb[4][16];
	struct iovec iv[4];
	memset(out, 0, sizeof(out));
	memset(in, 0, sizeof(in));
	for (int i = 0; i < 3; i++) {
		out[i].msg_hdr.msg_iov = &ov[i];
		out[i].msg_hdr.msg_iovlen = 1;
		out[i].msg_hdr.msg_name = &aa;
		out[i].msg_hdr.msg_namelen = sizeof(aa);
	}
	for (int i = 0; i < 4; i++) {
		iv[i].iov_base = rb[i];
		iv[i].iov_len = sizeof(rb[i]);
		in[i].msg_hdr.msg_iov = &iv[i];
		in[i].msg_hdr.msg_iovlen = 1;
	}
	R("sendmmsg 3", sendmmsg(b, out, 3, 0));
	for (int i = 0; i < 3; i++)
		say("sent[%d] %u", i, out[i].msg_len);
	msleep(10);
	n = R("recvmmsg up to 4 (DONTWAIT)", recvmmsg(a, in, 4, MSG_DONTWAIT, NULL));
	for (int i = 0; i < n; i++)
		show("mmsg", rb[i], in[i].msg_len);
	struct timespec ts = { 0, 10000000 };
	R("recvmmsg nothing (DONTWAIT)", recvmmsg(a, in, 4, MSG_DONTWAIT, &ts));

	/* connected UDP */
	R("connect b to a", connect(b, (struct sockaddr *)&aa, sizeof(aa)));
	R("send connected", send(b, "conn", 4, 0));
	msleep(10);
	n = R("read datagram", read(a, buf, sizeof(buf)));
	show("got", buf, n);
	R("write connected", write(b, "w", 1));
	msleep(10);
	n = R("readv datagram", readv(a, &v, 1));

	/* ICMP port unreachable: close a, send from connected b. */
	close(a);
	R("send to closed port", send(b, "x", 1, 0));
	msleep(50);
	R("recv gets ECONNREFUSED", recv(b, buf, sizeof(buf), MSG_DONTWAIT));
	R("recv again", recv(b, buf, sizeof(buf), MSG_DONTWAIT));
	R("send unconnected no addr", ({ int u = socket(AF_INET, SOCK_DGRAM, 0); long r = send(u, "x", 1, 0); int e = errno; close(u); errno = e; r; }));
	R("sendto too big", ({ static char huge[70000]; sendto(b, huge, sizeof(huge), 0, NULL, 0); }));
	return 0;
}
