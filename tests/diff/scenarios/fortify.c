/* Built with -O2 -D_FORTIFY_SOURCE=2: glibc routes read, recv, recvfrom,
 * poll and ppoll through __read_chk, __recv_chk, __recvfrom_chk,
 * __poll_chk and __ppoll_chk (the build checks the references exist).
 * ENGINE_MIN_ACCELERATED=2 */
#include "../scn.h"

int main(void)
{
	int c, s;
	char buf[32];
	struct pollfd p[1];
	/* Lengths the compiler cannot prove safe, so glibc calls the _chk
	 * entry points at run time. */
	volatile size_t len = sizeof(buf);
	volatile nfds_t np = 1;
	tcp_pair(&c, &s);
	send(c, "fortified-read", 14, 0);
	p[0].fd = s;
	p[0].events = POLLIN;
	R("poll (__poll_chk)", poll(p, np, 1000));
	long n = R("read (__read_chk)", read(s, buf, len));
	show("got", buf, n);
	send(c, "fortified-recv", 14, 0);
	struct timespec ts = { 1, 0 };
	R("ppoll (__ppoll_chk)", ppoll(p, np, &ts, NULL));
	n = R("recv (__recv_chk)", recv(s, buf, len, 0));
	show("got", buf, n);
	send(c, "fortified-recvfrom", 18, 0);
	struct sockaddr_in from;
	socklen_t fl = sizeof(from);
	n = R("recvfrom (__recvfrom_chk)", recvfrom(s, buf, len, 0, (struct sockaddr *)&from, &fl));
	show("got", buf, n);
	R("read nonblocking empty", ({ fcntl(s, F_SETFL, O_NONBLOCK); read(s, buf, len); }));
	return 0;
}
