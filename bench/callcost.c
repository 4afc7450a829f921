/* rs-callcost: the cost of one call, in nanoseconds, for the calls the
 * engine answers without a system call (issue 14: the library's own cost
 * per call).  Run it plain and under ringsock (bench/callcost.sh does
 * both, alternating); TCP connections over loopback, one thread:
 *
 *   recv_queued   recv() of 64 bytes with data waiting (the engine answers
 *                 from its receive queue; the kernel path makes a syscall)
 *   send_queued   send() of 64 bytes to a socket with room (the engine
 *                 queues it in a frag; the kernel path makes a syscall)
 *   epoll_ready   epoll_wait(timeout 0) on a set whose one socket is
 *                 readable (level-triggered): a nonblocking socket of a
 *                 second connection, read a few times first, as in an
 *                 event loop (the first connection's reads blocked and
 *                 waited, which sends its reads through the kernel)
 *   select_ready  select() with a timeout on that socket and the listener:
 *   poll_ready    poll() of the same (the socket readable, the listener
 *                 not: the kernel's to answer for)
 *   epoll_kernel  epoll_wait(timeout 0) on a set whose one socket the
 *                 kernel serves, readable: a ping-pong peer's (measured
 *                 last), handed to the kernel after the thread's blocking
 *                 waits returned one event at a time: the epoll layer's
 *                 cost over a set with nothing of the engine's in it
 *   recv_kernel   recv() of 1 byte with data waiting on that socket, and
 *   send_kernel   send() of 1 byte on it: the library's cost around a
 *                 call the kernel makes (what a ping-pong, one
 *                 connection's request-response or a connection per
 *                 request pays on every call)
 *
 * The ping-pong's peer is this thread too, its socket made and moved with
 * raw system calls (no C library call, so the library never sees it), as
 * another process's would be: the thread's ring serves only the server's
 * side.  (x86-64 and AArch64; elsewhere the last three are left out.)
 *
 * Each measure is ROUNDS rounds of BATCH calls; it prints the median of
 * the rounds' ns per call (the rounds drain and refill between them, not
 * timed).  Each round's calls are one function, batch_<measure>, so that
 * bench/callinstr.sh can count the instructions inside them alone
 * (callgrind's --toggle-collect).  Usage: rs-callcost [ROUNDS]. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../src/sys.h"

#define BATCH 512
#define MSG 64

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Move n bytes through fd, blocking: send them (out) or receive them. */
static void xfer(int fd, size_t n, int out)
{
	static char buf[BATCH * MSG];
	while (n) {
		size_t k = n < sizeof(buf) ? n : sizeof(buf);
		ssize_t r = out ? send(fd, buf, k, 0) : recv(fd, buf, k, 0);
		if (r <= 0)
			die(out ? "send" : "recv");
		n -= (size_t)r;
	}
}

/* The timed batches (not inlined: callinstr.sh counts inside them). */
#define BATCH_FN static __attribute__((noinline, noclone)) void

BATCH_FN batch_recv_queued(int s, char *msg)
{
	for (int i = 0; i < BATCH; i++)
		if (recv(s, msg, MSG, MSG_WAITALL) != MSG)
			die("recv_queued");
}

BATCH_FN batch_send_queued(int c, const char *msg)
{
	for (int i = 0; i < BATCH; i++)
		if (send(c, msg, MSG, 0) != MSG)
			die("send_queued");
}

BATCH_FN batch_epoll_ready(int ep, struct epoll_event *out)
{
	for (int i = 0; i < BATCH; i++)
		if (epoll_wait(ep, out, 8, 0) != 1)
			die("epoll_ready");
}

BATCH_FN batch_epoll_kernel(int ep, struct epoll_event *out)
{
	for (int i = 0; i < BATCH; i++)
		if (epoll_wait(ep, out, 8, 0) != 1)
			die("epoll_kernel");
}

BATCH_FN batch_recv_kernel(int s, char *msg)
{
	for (int i = 0; i < BATCH; i++)
		if (recv(s, msg, 1, 0) != 1)
			die("recv_kernel");
}

BATCH_FN batch_send_kernel(int s, const char *msg)
{
	for (int i = 0; i < BATCH; i++)
		if (send(s, msg, 1, 0) != 1)
			die("send_kernel");
}

/* The peer's system calls, made without the C library (so without the
 * library's wrappers): the engine's own (src/sys.h, inline on x86-64 and
 * AArch64); the kernel's result, -errno on failure. */
#if defined(__x86_64__) || defined(__aarch64__)
#define RAW_PEER 1
#endif

#ifdef RAW_PEER
/* The peer sends n bytes, or takes what has arrived of n (the library
 * moves what it queued when the thread next enters it: a poll of
 * nothing, which returns at once). */
static void peer_send(int p, size_t n)
{
	static const char buf[BATCH];
	while (n) {
		long k = rs_syscall(SYS_sendto, p, buf, n < sizeof(buf) ? n : sizeof(buf), 0, NULL, 0);
		if (k <= 0)
			die("peer send");
		n -= (size_t)k;
	}
}

static void peer_take(int p, size_t n)
{
	static char buf[BATCH];
	while (n) {
		long k = rs_syscall(SYS_recvfrom, p, buf, n < sizeof(buf) ? n : sizeof(buf), MSG_DONTWAIT, NULL, NULL);
		if (k == -EAGAIN) {
			poll(NULL, 0, 1);
			continue;
		}
		if (k <= 0)
			die("peer recv");
		n -= (size_t)k;
	}
}

/* The ping-pong's measures (epoll_kernel, recv_kernel, send_kernel): the
 * server's socket s is the thread's only one; blocking waits that return
 * one event each, a request of one byte and its answer, until the library
 * hands s to the kernel (ringsock(7): alone) and the thread's ring serves
 * nothing; then the timed batches, each measure's median into med[]. */
#define WARM 200
static void pp_measures(int l, const struct sockaddr_in *a, int rounds, double *v, double med[3])
{
	char msg[MSG];
	int p = (int)rs_syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
	if (p < 0 || rs_syscall(SYS_connect, p, a, sizeof(*a)) < 0)
		die("peer connect");
	int s = accept4(l, NULL, NULL, SOCK_NONBLOCK), one = 1;
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = s }, out[8];
	if (s < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev) < 0)
		die("epoll");
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (int i = 0; i < WARM; i++) {
		peer_send(p, 1);
		if (epoll_wait(ep, out, 8, 5000) != 1 || recv(s, msg, MSG, 0) != 1 || send(s, msg, 1, 0) != 1)
			die("ping-pong warm-up");
		peer_take(p, 1);
	}
	/* epoll_wait with the socket readable (MSG - 1 bytes stay) */
	peer_send(p, MSG);
	if (epoll_wait(ep, out, 8, 5000) != 1 || recv(s, msg, 1, 0) != 1)
		die("epoll warm-up");
	for (int r = 0; r < rounds; r++) {
		int64_t t0 = now_ns();
		batch_epoll_kernel(ep, out);
		v[r] = (double)(now_ns() - t0) / BATCH;
	}
	med[0] = median(v, rounds);
	/* recv of a byte with data waiting */
	for (int r = 0; r < rounds; r++) {
		peer_send(p, BATCH);
		int q = 0;
		while (ioctl(s, FIONREAD, &q) == 0 && q < BATCH + MSG - 1)
			poll(NULL, 0, 1); /* (loopback may deliver later) */
		int64_t t0 = now_ns();
		batch_recv_kernel(s, msg);
		v[r] = (double)(now_ns() - t0) / BATCH;
	}
	med[1] = median(v, rounds);
	/* send of a byte */
	for (int r = 0; r < rounds; r++) {
		int64_t t0 = now_ns();
		batch_send_kernel(s, msg);
		v[r] = (double)(now_ns() - t0) / BATCH;
		peer_take(p, BATCH);
	}
	med[2] = median(v, rounds);
	close(s);
	close(ep);
	rs_syscall(SYS_close, p);
}
#endif

/* One select (or poll) on a and b, for reading, with a timeout. */
static int wait_ready(int use_poll, int a, int b)
{
	if (use_poll) {
		struct pollfd pf[2] = { { a, POLLIN, 0 }, { b, POLLIN, 0 } };
		return poll(pf, 2, 5000);
	}
	fd_set rs;
	FD_ZERO(&rs);
	FD_SET(a, &rs);
	FD_SET(b, &rs);
	struct timeval tv = { 5, 0 };
	return select((a > b ? a : b) + 1, &rs, NULL, NULL, &tv);
}

BATCH_FN batch_select_ready(int a, int b)
{
	for (int i = 0; i < BATCH; i++)
		if (wait_ready(0, a, b) != 1)
			die("select_ready");
}

BATCH_FN batch_poll_ready(int a, int b)
{
	for (int i = 0; i < BATCH; i++)
		if (wait_ready(1, a, b) != 1)
			die("poll_ready");
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 200;
	if (rounds < 1 || rounds > 100000)
		rounds = 200;
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 1) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &alen) < 0)
		die("listen");
	int c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("connect");
	int s = accept(l, NULL, NULL);
	if (s < 0)
		die("accept");
	int one = 1;
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	double *v = malloc(sizeof(double) * (size_t)rounds);
	char msg[MSG];
	memset(msg, 'x', sizeof(msg));

	/* recv answered with data waiting */
	for (int r = 0; r < rounds; r++) {
		xfer(c, BATCH * MSG, 1);
		if (recv(s, msg, 1, MSG_PEEK) != 1) /* (everything has arrived) */
			die("peek");
		int64_t t0 = now_ns();
		batch_recv_queued(s, msg);
		v[r] = (double)(now_ns() - t0) / BATCH;
	}
	printf("recv_queued_ns=%.1f ", median(v, rounds));

	/* send to a socket with room */
	for (int r = 0; r < rounds; r++) {
		int64_t t0 = now_ns();
		batch_send_queued(c, msg);
		v[r] = (double)(now_ns() - t0) / BATCH;
		xfer(s, BATCH * MSG, 0);
	}
	printf("send_queued_ns=%.1f ", median(v, rounds));

	/* epoll_wait with an event ready, on an event loop's socket */
	int c2 = socket(AF_INET, SOCK_STREAM, 0);
	if (c2 < 0 || connect(c2, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("connect");
	int s2 = accept4(l, NULL, NULL, SOCK_NONBLOCK);
	if (s2 < 0)
		die("accept");
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = s2 };
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, s2, &ev) < 0)
		die("epoll");
	struct epoll_event out[8];
	for (int i = 0; i < 8; i++) { /* read as a loop does: wait, then read */
		xfer(c2, 1, 1);
		if (epoll_wait(ep, out, 8, 5000) != 1 || recv(s2, msg, MSG, 0) != 1)
			die("epoll warm-up");
	}
	xfer(c2, MSG, 1);
	if (epoll_wait(ep, out, 8, 5000) != 1 || recv(s2, msg, 1, 0) != 1)
		die("epoll warm-up"); /* (it has arrived; MSG - 1 bytes stay readable) */
	for (int r = 0; r < rounds; r++) {
		int64_t t0 = now_ns();
		batch_epoll_ready(ep, out);
		v[r] = (double)(now_ns() - t0) / BATCH;
	}
	printf("epoll_ready_ns=%.1f ", median(v, rounds));

	/* select and poll with the same socket readable and the listener (a
	 * descriptor the kernel answers for) beside it, a timeout set, as an
	 * event loop built on them asks (iperf3's) */
	for (int use_poll = 0; use_poll < 2; use_poll++) {
		for (int r = 0; r < rounds; r++) {
			int64_t t0 = now_ns();
			if (use_poll)
				batch_poll_ready(l, s2);
			else
				batch_select_ready(l, s2);
			v[r] = (double)(now_ns() - t0) / BATCH;
		}
		if (!use_poll)
			printf("select_ready_ns=%.1f ", median(v, rounds));
	}
	printf("poll_ready_ns=%.1f", median(v, rounds));
#ifdef RAW_PEER
	/* Last (its waits change how this thread's reads go): the
	 * ping-pong's, the other connections closed first so that this
	 * thread's ring serves nothing else */
	close(c);
	close(s);
	close(c2);
	close(s2);
	close(ep);
	double med[3];
	pp_measures(l, &a, rounds, v, med);
	printf(" epoll_kernel_ns=%.1f recv_kernel_ns=%.1f send_kernel_ns=%.1f", med[0], med[1], med[2]);
#endif
	printf("\n");
	return 0;
}
