/* engine_udp_pingpong: a UDP ping-pong between two processes on
 * unconnected sockets, both ends on the engine, each blocking in recvfrom
 * for every datagram.  After four reads that waited, a socket's reads go
 * to the kernel (kwait, udp_recv.c) and the first send after each read is
 * the kernel's own, made at once (udp_send.c queueable); a second and a
 * third reply in the same round are queued again, behind it.  Every
 * request and reply must arrive whole and in order, with every call's
 * result the kernel's; a reply left queued behind a blocking read would
 * hang the round (the alarm).
 * ENGINE_MIN_ACCELERATED=2 */
#include "../scn.h"

#define ROUNDS 400

static int replies(int i)
{
	return i % 7 == 3 ? 3 : 1;
}

int main(void)
{
	int port[2];
	if (pipe(port))
		die("pipe");
	pid_t p = fork();
	if (p < 0)
		die("fork");
	if (p == 0) {
		/* the echo side: made after the fork, so each socket is one
		 * process's (a shared one is the kernel's) */
		alarm(60);
		int b = udp_bound();
		struct sockaddr_in ba;
		socklen_t l = sizeof(ba);
		if (getsockname(b, (struct sockaddr *)&ba, &l) || write(port[1], &ba, sizeof(ba)) != sizeof(ba))
			_exit(4);
		for (int i = 0; i < ROUNDS; i++) {
			char buf[64] = { 0 };
			struct sockaddr_in from;
			socklen_t fl = sizeof(from);
			long r = recvfrom(b, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
			if (r != 4 || buf[0] != (char)i)
				_exit(2);
			for (int k = 0; k < replies(i); k++) {
				buf[1] = (char)k;
				if (sendto(b, buf, 4 + (size_t)k, 0, (struct sockaddr *)&from, fl) != 4 + k)
					_exit(3);
			}
		}
		_exit(0);
	}
	alarm(60);
	int a = udp_bound();
	struct sockaddr_in to;
	if (read_full(port[0], &to, sizeof(to)))
		die("port");
	long bad = 0, got = 0;
	uint32_t sum = 0;
	for (int i = 0; i < ROUNDS; i++) {
		char req[4] = { (char)i, 0, 'q', '!' };
		if (sendto(a, req, sizeof(req), 0, (struct sockaddr *)&to, sizeof(to)) != 4) {
			say("round %d: sendto failed: %s", i, scn_errname(errno));
			break;
		}
		for (int k = 0; k < replies(i); k++) {
			char buf[64];
			struct sockaddr_in from;
			socklen_t fl = sizeof(from);
			long r = recvfrom(a, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
			if (r != 4 + k || buf[0] != (char)i || buf[1] != (char)k || from.sin_port != to.sin_port) {
				if (bad++ < 5)
					say("round %d reply %d: %ld bytes, round %d reply %d", i, k, r, buf[0], buf[1]);
				continue;
			}
			got++;
			sum = sum * 31 + scn_sum(buf, (size_t)r);
		}
	}
	say("replies in order = %ld, out of place = %ld, sum %08x", got, bad, sum);
	reap("echo side", p);
	return 0;
}
