/* Sends merged through polls (RINGSOCK_TX_MERGE, wait.c hold_sends): a
 * stream written 256 bytes at a time, each send followed by a select or
 * poll that asks for writability and is answered at once (as iperf3 -l 256
 * does).  The queued bytes may wait for more sends, never for good: after
 * each stream the sender waits for the peer's checksum of it in a way that
 * must send what is still queued:
 *   1. poll(POLLIN|POLLOUT, -1) in a loop, answered at once by POLLOUT
 *      each time, with no send in between;
 *   2. select for reading only;
 *   3. epoll_wait for EPOLLIN;
 *   4. poll(POLLOUT, 0) a thousand times, then poll(POLLIN, -1);
 *   5. select on a pipe only, which the peer writes once it has the
 *      stream (a select with no engine socket in its sets).
 * RLIMIT_NOFILE is lowered first, so that the library has no drain thread
 * and so no watchdog that would send the bytes later anyway: under the
 * library a wait that kept the bytes, or slept without sending them,
 * hangs (SIGALRM).
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>

#define PIECE 256
#define PIECES 400

static void peer(int s, int pipe_w)
{
	/* arm the other end: six one-byte round trips it reads */
	char b;
	for (int i = 0; i < 6; i++) {
		if (send(s, "x", 1, 0) != 1 || recv_all_nb(s, &b, 1) != 1)
			_exit(2);
	}
	static char buf[PIECE * PIECES];
	for (int round = 0; round < 5; round++) {
		if (recv_all_nb(s, buf, sizeof(buf)) != (long)sizeof(buf))
			_exit(3);
		uint32_t sum = scn_sum(buf, sizeof(buf));
		if (send_all_nb(s, &sum, sizeof(sum)) != (long)sizeof(sum))
			_exit(4);
		if (round == 4 && write(pipe_w, "p", 1) != 1)
			_exit(6);
	}
	_exit(0);
}

/* The stream: PIECES sends of PIECE bytes, each followed by a wait that
 * asks for writability (select, or poll when use_poll). */
static void stream(int c, const char *data, int use_poll)
{
	long sent = 0;
	for (int i = 0; i < PIECES; i++) {
		long r = send_all_nb(c, data + i * PIECE, PIECE);
		if (r > 0)
			sent += r;
		if (use_poll) {
			struct pollfd p = { c, POLLOUT, 0 };
			poll(&p, 1, 5000);
		} else {
			fd_set w;
			FD_ZERO(&w);
			FD_SET(c, &w);
			struct timeval tv = { 5, 0 };
			select(c + 1, NULL, &w, NULL, &tv);
		}
	}
	say("sent %ld bytes sum %08x", sent, scn_sum(data, (size_t)PIECE * PIECES));
}

static void answer(int c, const char *how)
{
	uint32_t sum = 0;
	long r = recv_all_nb(c, &sum, sizeof(sum));
	say("%s: answer %ld bytes, peer's sum %08x", how, r, sum);
}

int main(void)
{
	/* Both ends made after the fork: a socket open across a fork sends
	 * straight to the kernel (tcp_send.c send_to_kernel). */
	struct rlimit rl = { 100, 100 };
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		die("setrlimit");
	struct sockaddr_storage a;
	socklen_t al = sizeof(a);
	int l = tcp_listener(AF_INET, &a, &al);
	int pp[2];
	if (pipe(pp) < 0)
		die("pipe");
	pid_t p = fork();
	if (p < 0)
		die("fork");
	if (p == 0) {
		alarm(60);
		close(l);
		close(pp[0]);
		int s = socket(AF_INET, SOCK_STREAM, 0);
		if (s < 0 || connect(s, (struct sockaddr *)&a, al) < 0)
			_exit(5);
		set_nonblock(s);
		peer(s, pp[1]);
	}
	alarm(60);
	int c = accept(l, NULL, NULL);
	if (c < 0)
		die("accept");
	close(l);
	close(pp[1]);
	set_nonblock(c);
	char b;
	for (int i = 0; i < 6; i++)
		if (recv_all_nb(c, &b, 1) != 1 || send(c, "y", 1, 0) != 1)
			die("arming round trip");
	static char data[PIECE * PIECES];
	fill_pattern(data, sizeof(data), 7);

	/* 1: POLLIN|POLLOUT until POLLIN, no sends meanwhile */
	stream(c, data, 0);
	for (;;) {
		struct pollfd pf = { c, POLLIN | POLLOUT, 0 };
		if (poll(&pf, 1, -1) < 0 && errno != EINTR)
			die("poll");
		if (pf.revents & POLLIN)
			break;
	}
	answer(c, "poll(POLLIN|POLLOUT) loop");

	/* 2: select for reading only */
	stream(c, data, 1);
	fd_set rs;
	FD_ZERO(&rs);
	FD_SET(c, &rs);
	R("select for reading", select(c + 1, &rs, NULL, NULL, NULL));
	answer(c, "select");

	/* 3: epoll_wait */
	stream(c, data, 0);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = c }, out;
	epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
	R("epoll_wait", epoll_wait(ep, &out, 1, -1));
	answer(c, "epoll_wait");
	close(ep);

	/* 4: a thousand polls for POLLOUT with timeout 0, then POLLIN */
	stream(c, data, 1);
	int writable = 0;
	for (int i = 0; i < 1000; i++) {
		struct pollfd pf = { c, POLLOUT, 0 };
		writable += poll(&pf, 1, 0) == 1 && (pf.revents & POLLOUT);
	}
	say("polls answered writable: %d of 1000", writable);
	struct pollfd pf = { c, POLLIN, 0 };
	R("poll(POLLIN, -1)", poll(&pf, 1, -1));
	answer(c, "poll(POLLIN)");

	/* 5: select on the pipe only */
	stream(c, data, 1);
	fd_set ps;
	FD_ZERO(&ps);
	FD_SET(pp[0], &ps);
	R("select on a pipe", select(pp[0] + 1, &ps, NULL, NULL, NULL));
	answer(c, "select on a pipe");

	close(c);
	reap("peer", p);
	return 0;
}
