/* direct: when do a socket's reads go straight to the kernel, and when do
 * they come back to the engine's receive?  One connection to a forked
 * peer that sends only when told (a pipe), so every read below either
 * finds data or must wait, whatever the timing.  Counters from
 * ringsock_stats_snapshot (this process only) are printed after each step;
 * direct.sh compares them with what ringsock(7) promises:
 *
 *   waits N      N blocking reads in a row that must wait (SO_RCVTIMEO
 *                ends each: EAGAIN) -- the kernel's reads after 4
 *   feed N       the peer sends N 64-byte messages (all in this socket's
 *                buffer before the next step)
 *   read N       N blocking 64-byte reads, each finding data
 *   nbread N     N 64-byte reads with MSG_DONTWAIT, each finding data
 *   big N        N 256 KiB blocking reads of what is there (MSG_DONTWAIT)
 *   bigheld N    the same, named apart: after a read that left the
 *                engine holding the rest of a feed
 *   bigfull N    N reads of 64 KiB (RINGSOCK_DIRECT_THRESHOLD) with
 *                MSG_DONTWAIT, each finding that much or more
 *   fork N       N forks of a child that exits at once (the socket is
 *                open in another process: its reads are the kernel's
 *                for good)
 *   ewait N      N rounds of an event loop with this one socket: the peer
 *                sends one message, epoll_wait (up to 8 events, a pipe in
 *                the set too) returns the socket alone, a nonblocking read
 *                takes the message -- the 64th such wake-up in a row sends
 *                the socket's reads and sends to the kernel (alone)
 *   ebusy N      the same with a byte written to the pipe first: each
 *                wake-up returns two events -- the socket's next read is
 *                the engine's again
 *   nonblock N   the socket turns nonblocking (O_NONBLOCK; N ignored)
 *   rr N         N rounds of a request-response server: the peer sends one
 *                message, poll says the socket is readable, one read
 *                takes it, one 64-byte send answers (the peer never
 *                reads: the answers fit in the buffers) -- at the read
 *                after the 16th such round in a row the socket's reads
 *                and sends go to the kernel (RINGSOCK_REQUEST_RESPONSE)
 *   rrb N, rrc N the same, named apart (direct.sh finds a step's first
 *                line)
 *   rrtwo N      the same with two sends per round -- four such rounds
 *                in a row give it back to the engine
 *   push N       N 64-byte sends with no read between (a stream) -- the
 *                16th in a row gives a request-response connection back
 *                to the engine
 *   bpp N        N rounds of a blocking ping-pong: the peer sends one
 *                message, a blocking read takes it, one 64-byte send
 *                answers (the peer never reads) -- a waiting reader whose
 *                ring serves it alone is handed to the kernel for good
 *                at the read after 64 rounds (alone_handovers)
 *   bpptwo N     the same with two sends per round: never handed over
 *   other N      N more connections, accepted here (blocking) and added
 *                to the event loop's set, where they stay idle: the
 *                thread's ring serves more than this socket, so being
 *                alone never hands it to the kernel for good
 *
 * Each step prints "STEP: direct_on=A direct_off=B kernel_reads=C
 * engine_reads=D" (deltas of the direct and calls_nosys counters for
 * that step). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "counters.h"

static int sock, cmd_w, ack_r, ep = -1, pp[2], lsn;
static struct sockaddr_in lsn_addr;
static char big[256 * 1024];

static struct ringsock_stats now(void)
{
	return now_at_least(13);
}

/* The peer: for each count n read from the command pipe, send n 64-byte
 * messages, then acknowledge (they are all in our socket's buffer). */
static void peer(int c, int cmd, int ack)
{
	char msg[64];
	memset(msg, 'x', sizeof(msg));
	int n;
	while (read(cmd, &n, sizeof(n)) == sizeof(n)) {
		for (int i = 0; i < n; i++)
			if (write(c, msg, sizeof(msg)) != sizeof(msg))
				_exit(1);
		if (write(ack, &n, sizeof(n)) != sizeof(n))
			_exit(1);
	}
	_exit(0);
}

static void feed(int n)
{
	int a;
	if (write(cmd_w, &n, sizeof(n)) != sizeof(n) || read(ack_r, &a, sizeof(a)) != sizeof(a))
		die("feed");
}

static void loop_set(void)
{
	if (ep < 0) {
		if ((ep = epoll_create1(0)) < 0 || pipe(pp) < 0)
			die("epoll_create1");
		struct epoll_event e = { .events = EPOLLIN, .data.fd = sock };
		struct epoll_event e2 = { .events = EPOLLIN, .data.fd = pp[0] };
		if (epoll_ctl(ep, EPOLL_CTL_ADD, sock, &e) < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, pp[0], &e2) < 0)
			die("epoll_ctl");
	}
}

/* One round of the event loop: want events from one wait, then the
 * socket's message (and the pipe's byte). */
static void loop_round(int want)
{
	loop_set();
	if (want == 2 && write(pp[1], "p", 1) != 1)
		die("pipe");
	feed(1);
	struct epoll_event ev[8];
	int n = epoll_wait(ep, ev, 8, 10000);
	if (n != want)
		die("ewait: not the events expected");
	char buf[64];
	if (recv(sock, buf, sizeof(buf), MSG_DONTWAIT) != sizeof(buf))
		die("ewait: read");
	if (want == 2 && read(pp[0], buf, 1) != 1)
		die("ewait: pipe");
}

/* One round of a request-response server (nonblocking socket): a
 * request in, sends answers out. */
static void rr_round(int sends)
{
	feed(1);
	struct pollfd p = { sock, POLLIN, 0 };
	if (poll(&p, 1, 10000) != 1)
		die("rr: poll");
	char buf[64];
	if (recv(sock, buf, sizeof(buf), 0) != sizeof(buf))
		die("rr: read");
	for (int i = 0; i < sends; i++)
		if (send(sock, buf, sizeof(buf), 0) != sizeof(buf))
			die("rr: send");
}

static void report(const char *step, struct ringsock_stats *b)
{
	struct ringsock_stats a = now();
	printf("%s: direct_on=%llu direct_off=%llu kernel_reads=%llu engine_reads=%llu handovers=%llu\n", step,
	       (unsigned long long)(a.direct_on - b->direct_on), (unsigned long long)(a.direct_off - b->direct_off),
	       (unsigned long long)(a.direct - b->direct), (unsigned long long)(a.calls_nosys - b->calls_nosys),
	       (unsigned long long)(a.alone_handovers - b->alone_handovers));
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (!counters_init()) {
		printf("ringsock not loaded\n");
		return 1;
	}
	struct sockaddr_in a;
	int l = loopback_listener(&a);
	lsn = l;
	lsn_addr = a;
	int cmd[2], ack[2];
	if (pipe(cmd) < 0 || pipe(ack) < 0)
		die("pipe");
	pid_t child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		close(l);
		close(cmd[1]);
		close(ack[0]);
		int c = socket(AF_INET, SOCK_STREAM, 0);
		if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)) < 0)
			_exit(1);
		peer(c, cmd[0], ack[1]);
	}
	close(cmd[0]);
	close(ack[1]);
	cmd_w = cmd[1];
	ack_r = ack[0];
	sock = accept(l, NULL, NULL);
	if (sock < 0)
		die("accept");
	struct timeval tv = { 0, 20000 };
	if (setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
		die("SO_RCVTIMEO");
	char buf[64];
	for (int i = 1; i < argc; i++) {
		char step[64];
		int n = 0;
		if (sscanf(argv[i], "%31[a-z]:%d", step, &n) != 2)
			die("step");
		struct ringsock_stats b = now();
		if (!strcmp(step, "waits")) {
			for (int k = 0; k < n; k++)
				if (recv(sock, buf, sizeof(buf), 0) != -1 || errno != EAGAIN)
					die("waits: a read that should time out");
		} else if (!strcmp(step, "feed")) {
			feed(n);
		} else if (!strcmp(step, "read") || !strcmp(step, "nbread")) {
			int fl = step[0] == 'n' ? MSG_DONTWAIT : 0;
			for (int k = 0; k < n; k++)
				if (recv(sock, buf, sizeof(buf), fl) != sizeof(buf))
					die("read");
		} else if (!strcmp(step, "fork")) {
			for (int k = 0; k < n; k++) {
				pid_t p = fork();
				if (p < 0)
					die("fork");
				if (p == 0)
					_exit(0);
				int st;
				waitpid(p, &st, 0);
			}
		} else if (!strcmp(step, "ewait") || !strcmp(step, "ebusy")) {
			for (int k = 0; k < n; k++)
				loop_round(step[1] == 'b' ? 2 : 1);
		} else if (!strcmp(step, "nonblock")) {
			if (fcntl(sock, F_SETFL, fcntl(sock, F_GETFL) | O_NONBLOCK) < 0)
				die("O_NONBLOCK");
		} else if (!strcmp(step, "rr") || !strcmp(step, "rrb") || !strcmp(step, "rrc") || !strcmp(step, "rrtwo")) {
			for (int k = 0; k < n; k++)
				rr_round(!strcmp(step, "rrtwo") ? 2 : 1);
		} else if (!strcmp(step, "bpp") || !strcmp(step, "bpptwo")) {
			for (int k = 0; k < n; k++) {
				feed(1);
				if (recv(sock, buf, sizeof(buf), 0) != sizeof(buf))
					die("bpp: read");
				for (int j = 0; j < (step[3] ? 2 : 1); j++)
					if (send(sock, buf, sizeof(buf), 0) != sizeof(buf))
						die("bpp: send");
			}
		} else if (!strcmp(step, "push")) {
			for (int k = 0; k < n; k++)
				if (send(sock, big, 64, 0) != 64)
					die("push: send");
		} else if (!strcmp(step, "other")) {
			loop_set();
			for (int k = 0; k < n; k++) {
				int c = socket(AF_INET, SOCK_STREAM, 0);
				if (c < 0 || connect(c, (struct sockaddr *)&lsn_addr, sizeof(lsn_addr)) < 0)
					die("other: connect");
				int o = accept(lsn, NULL, NULL);
				struct epoll_event e = { .events = EPOLLIN, .data.fd = o };
				if (o < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, o, &e) < 0)
					die("other: accept");
			}
		} else if (!strcmp(step, "big") || !strcmp(step, "bigheld")) {
			for (int k = 0; k < n; k++)
				if (recv(sock, big, sizeof(big), MSG_DONTWAIT) <= 0)
					die("big");
		} else if (!strcmp(step, "bigfull")) {
			for (int k = 0; k < n; k++)
				if (recv(sock, big, 65536, MSG_DONTWAIT) != 65536)
					die("bigfull");
		} else {
			die("unknown step");
		}
		report(argv[i], &b);
	}
	close(cmd_w);
	close(sock);
	int st;
	waitpid(child, &st, 0);
	printf("peer %s\n", WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "ok" : "failed");
	return 0;
}
