/* Also run with every send through the frag pool and each batch sent zero-copy (tcp_send.c):
 * RUN_ALSO=RINGSOCK_ZEROCOPY=always RINGSOCK_ZEROCOPY_MIN=1 RINGSOCK_LINEAR_FIRST=0 RINGSOCK_DIRECT_THRESHOLD=0 RINGSOCK_ARM_AFTER=0 */
/* No data lost across the lifecycle of engine sockets: data written and
 * then close, shutdown, exit, _exit or exec at once; fork with received
 * data already held by the engine, read in the child, and in the child of
 * daemon() (a fork made inside libc); dup of an engine socket; descriptor
 * reuse after close with a receive in flight.
 * ENGINE_MIN_ACCELERATED=6 */
#include "../scn.h"
#include <sys/epoll.h>

#define BIG (600 * 1024)

static int ep;

static void arm(int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

/* A child writes BIG bytes on an engine socket and ends with how;
 * the parent reads everything until EOF. */
static void write_then(const char *how, char *const *argv)
{
	int c, s;
	nb_pair(&c, &s);
	static char out[BIG], in[BIG + 1];
	fill_pattern(out, BIG, 42);
	pid_t p = fork();
	if (p == 0) {
		close(s);
		arm(c);
		long n = send_all_nb(c, out, BIG);
		if (n != BIG)
			_exit(3);
		if (!strcmp(how, "close")) {
			close(c);
			exit(0);
		}
		if (!strcmp(how, "shutdown")) {
			shutdown(c, SHUT_WR);
			_exit(0);
		}
		if (!strcmp(how, "exit"))
			exit(0);
		if (!strcmp(how, "_exit"))
			_exit(0);
		if (!strcmp(how, "exec")) {
			execv(argv[0], argv);
			_exit(4);
		}
		_exit(5);
	}
	close(c);
	long r = recv_all_nb(s, in, sizeof(in));
	say("%s: received %ld, intact %d", how, r, r == BIG && !memcmp(in, out, BIG));
	reap(how, p);
	close(s);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "exec-child"))
		return 0;
	signal(SIGPIPE, SIG_IGN);
	ep = epoll_create1(0);
	char *exec_argv[] = { argv[0], "exec-child", NULL };
	write_then("close", exec_argv);
	write_then("shutdown", exec_argv);
	write_then("exit", exec_argv);
	write_then("_exit", exec_argv);
	write_then("exec", exec_argv);

	/* Fork with received data held by the engine: the child reads it, the
	 * parent then finds nothing; each byte is read once. */
	int c, s;
	nb_pair(&c, &s);
	arm(s);
	send(c, "held-before-fork", 16, 0);
	struct epoll_event ev;
	R("epoll_wait for the data", epoll_wait(ep, &ev, 1, 5000));
	pid_t p = fork();
	if (p == 0) {
		char b[64];
		long r = recv(s, b, sizeof(b), 0);
		show("child read", b, r);
		_exit(0);
	}
	reap("reader child", p);
	char b[64];
	R("parent reads after the child", recv(s, b, sizeof(b), 0));
	send(c, "after", 5, 0);
	wait_fd(s, POLLIN, 5000);
	long r = R("parent reads new data", recv(s, b, sizeof(b), 0));
	show("parent got", b, r);
	/* and the parent can still write to it */
	R("parent sends", send(s, "pong", 4, 0));
	wait_fd(c, POLLIN, 5000);
	r = R("peer receives", recv(c, b, sizeof(b), 0));
	show("peer got", b, r);

	/* daemon(): a fork made inside libc.  A helper process arms a socket,
	 * lets the engine take data, then daemonizes; the daemon reads it. */
	{
		int c4, s4, rp[2];
		nb_pair(&c4, &s4);
		if (pipe(rp))
			die("pipe");
		pid_t h = fork();
		if (h == 0) {
			int ep4 = epoll_create1(0);
			struct epoll_event e4 = { .events = EPOLLIN, .data.fd = s4 };
			epoll_ctl(ep4, EPOLL_CTL_ADD, s4, &e4);
			send(c4, "via-daemon", 10, 0);
			epoll_wait(ep4, &e4, 1, 5000);
			if (daemon(1, 1))
				_exit(1);
			char db[32];
			long dr = recv(s4, db, sizeof(db), 0);
			if (write(rp[1], db, dr > 0 ? (size_t)dr : 0) < 0)
				_exit(2);
			_exit(0);
		}
		close(rp[1]);
		reap("daemonizing helper", h);
		char db[32];
		long dr = read(rp[0], db, sizeof(db));
		show("the daemon read", db, dr);
		close(rp[0]);
		close(c4);
		close(s4);
	}

	/* dup of an engine socket: both descriptors keep working, in order. */
	send(c, "one", 3, 0);
	wait_fd(s, POLLIN, 5000);
	int d = RFD("dup", dup(s));
	r = R("read through the dup", recv(d, b, sizeof(b), 0));
	show("got", b, r);
	send(c, "two", 3, 0);
	wait_fd(s, POLLIN, 5000);
	r = R("read through the original", recv(s, b, sizeof(b), 0));
	show("got", b, r);
	R("close original", close(s));
	R("send through the dup", send(d, "three", 5, 0));
	wait_fd(c, POLLIN, 5000);
	r = R("peer receives", recv(c, b, sizeof(b), 0));
	show("peer got", b, r);
	close(d);
	wait_fd(c, POLLIN, 5000);
	R("peer sees EOF", recv(c, b, sizeof(b), 0));
	close(c);

	/* Reuse of a descriptor number while the old socket had a receive in
	 * flight: the new socket sees only its own data. */
	int c1, s1;
	nb_pair(&c1, &s1);
	arm(s1);
	int old = s1;
	close(s1);
	int c2, s2;
	nb_pair(&c2, &s2);
	say("descriptor reused %d", s2 == old || c2 == old);
	arm(s2);
	send(c1, "old", 3, MSG_NOSIGNAL);
	send(c2, "new", 3, 0);
	wait_fd(s2, POLLIN, 5000);
	r = R("recv on the new socket", recv(s2, b, sizeof(b), 0));
	show("got", b, r);
	close(c1);
	close(c2);
	close(s2);
	return 0;
}
