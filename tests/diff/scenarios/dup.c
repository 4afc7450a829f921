/* dup, dup2, dup3, F_DUPFD, F_DUPFD_CLOEXEC: dup'ed sockets share state;
 * closing one copy leaves the other working; dup2 over a live socket;
 * fcntl flags and FD_CLOEXEC; ioctl FIONBIO.
 * ENGINE_MIN_ACCELERATED=2 */
#include "../scn.h"
#include <sys/ioctl.h>

int main(void)
{
	int c, s;
	char buf[64];
	tcp_pair(&c, &s);

	int d = RFD("dup", dup(s));
	send(c, "shared", 6, 0);
	long n = R("recv 3 via original", recv(s, buf, 3, 0));
	show("got", buf, n);
	n = R("recv rest via dup", recv(d, buf, sizeof(buf), 0));
	show("got", buf, n);

	R("set O_NONBLOCK on dup", fcntl(d, F_SETFL, O_NONBLOCK));
	say("original sees O_NONBLOCK %d", (fcntl(s, F_GETFL) & O_NONBLOCK) != 0);
	R("recv on original now EAGAIN", recv(s, buf, sizeof(buf), 0));
	int zero = 0;
	R("ioctl FIONBIO 0", ioctl(s, FIONBIO, &zero));
	say("dup sees O_NONBLOCK %d", (fcntl(d, F_GETFL) & O_NONBLOCK) != 0);

	R("close original", close(s));
	send(c, "after", 5, 0);
	n = R("recv via dup after original closed", recv(d, buf, sizeof(buf), 0));
	show("got", buf, n);
	R("recv via closed original", recv(s, buf, sizeof(buf), 0));

	int target = 50;
	R("dup2 to 50", dup2(d, target));
	send(c, "fifty", 5, 0);
	n = R("recv via 50", recv(target, buf, sizeof(buf), 0));
	show("got", buf, n);
	R("dup2 same fd", dup2(target, target));
	R("dup2 bad fd", dup2(777, 51));
	R("dup3 same fd", dup3(target, target, 0));
	R("dup3 to 52 O_CLOEXEC", dup3(target, 52, O_CLOEXEC));
	say("52 FD_CLOEXEC %d", fcntl(52, F_GETFD) & FD_CLOEXEC);
	/* glibc: EINVAL; musl ignores unknown flags and duplicates. */
	if (R("dup3 bad flags", dup3(target, 53, 12345)) >= 0)
		close(53);

	int h = RFD("F_DUPFD >= 60", fcntl(d, F_DUPFD, 60));
	say("F_DUPFD result >= 60: %d", h >= 60);
	int hc = RFD("F_DUPFD_CLOEXEC >= 70", fcntl(d, F_DUPFD_CLOEXEC, 70));
	say("cloexec %d", fcntl(hc, F_GETFD) & FD_CLOEXEC);
	send(c, "viahigh", 7, 0);
	n = R("recv via F_DUPFD copy", recv(h, buf, sizeof(buf), 0));
	show("got", buf, n);

	/* dup2 over a live socket closes it: its peer sees EOF. */
	int c2, s2;
	tcp_pair(&c2, &s2);
	R("dup2 over live socket", dup2(d, s2));
	R("peer of replaced socket sees EOF", recv(c2, buf, sizeof(buf), 0));
	send(c, "overwrite", 9, 0);
	n = R("recv via replaced number", recv(s2, buf, sizeof(buf), 0));
	show("got", buf, n);

	/* A pipe dup2'ed over a socket number is a pipe now. */
	int pp[2];
	if (pipe(pp))
		die("pipe");
	R("dup2 pipe over socket number", dup2(pp[0], s2));
	if (write(pp[1], "pipe", 4) != 4)
		die("write");
	n = R("read via number now a pipe", read(s2, buf, sizeof(buf)));
	show("got", buf, n);
	R("recv on pipe", recv(s2, buf, sizeof(buf), MSG_DONTWAIT));

	/* Close every copy: the peer sees EOF only then. */
	close(d);
	close(target);
	close(52);
	close(h);
	struct pollfd p = { c, POLLIN, 0 };
	R("peer poll while a copy is open", poll(&p, 1, 50));
	close(hc);
	R("peer poll after last copy closed", poll(&p, 1, 1000));
	R("peer recv", recv(c, buf, sizeof(buf), 0));
	R("close bad fd", close(-1));
	R("close unopened", close(900));
	return 0;
}
