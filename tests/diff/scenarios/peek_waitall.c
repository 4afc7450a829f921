/* MSG_PEEK, MSG_WAITALL with data arriving in pieces, FIONREAD/SIOCINQ,
 * SO_RCVLOWAT, MSG_TRUNC on TCP.  The engine serves the blocking sockets
 * (SO_RCVLOWAT above 1 sends one to the kernel path).
 * ENGINE_MIN_ACCELERATED=3 */
#include "../scn.h"
#include <sys/ioctl.h>
#include <linux/sockios.h>

int main(void)
{
	int c, s, sync[2];
	char buf[64];
	tcp_pair(&c, &s);
	if (pipe(sync))
		die("pipe");

	R("send", send(c, "peekaboo", 8, 0));
	msleep(20);
	int avail = -1;
	R("ioctl FIONREAD", ioctl(s, FIONREAD, &avail));
	say("FIONREAD %d", avail);
	long n = R("recv MSG_PEEK 4", recv(s, buf, 4, MSG_PEEK));
	show("peeked", buf, n);
	n = R("recv MSG_PEEK all", recv(s, buf, sizeof(buf), MSG_PEEK));
	show("peeked", buf, n);
	R("ioctl SIOCINQ", ioctl(s, SIOCINQ, &avail));
	say("SIOCINQ %d", avail);
	n = R("recv 5", recv(s, buf, 5, 0));
	show("got", buf, n);
	n = R("recv MSG_TRUNC 2 (TCP discards)", recv(s, NULL, 2, MSG_TRUNC));
	n = R("recv rest", recv(s, buf, sizeof(buf), 0));
	show("got", buf, n);

	/* WAITALL: the writer sends 3 pieces with pauses. */
	pid_t pid = fork();
	if (pid == 0) {
		wait_go(sync[0]);
		send(c, "aaaa", 4, 0);
		msleep(30);
		send(c, "bbbb", 4, 0);
		msleep(30);
		send(c, "cccc", 4, 0);
		wait_go(sync[0]);
		send(c, "dd", 2, 0);
		shutdown(c, SHUT_WR);
		_exit(0);
	}
	go(sync[1]);
	n = R("recv MSG_WAITALL 12", recv(s, buf, 12, MSG_WAITALL));
	show("got", buf, n);
	go(sync[1]);
	n = R("recv MSG_WAITALL 10 cut by EOF", recv(s, buf, 10, MSG_WAITALL));
	show("got", buf, n);
	R("recv after EOF", recv(s, buf, 10, MSG_WAITALL));
	reap("writer", pid);

	/* SO_RCVLOWAT: poll reports readable only at the mark. */
	int c2, s2;
	tcp_pair(&c2, &s2);
	int low = 6;
	R("setsockopt SO_RCVLOWAT", setsockopt(s2, SOL_SOCKET, SO_RCVLOWAT, &low, sizeof(low)));
	send(c2, "abc", 3, 0);
	msleep(20);
	struct pollfd p = { s2, POLLIN, 0 };
	R("poll below lowat", poll(&p, 1, 50));
	send(c2, "def", 3, 0);
	R("poll at lowat", poll(&p, 1, 5000));
	n = R("recv", recv(s2, buf, sizeof(buf), 0));
	show("got", buf, n);
	return 0;
}
