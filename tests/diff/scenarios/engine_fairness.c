/* One flooded socket must not starve the other sockets of its thread.
 * Socket A is flooded by its peer and read slowly (1 KiB a round); on
 * the same thread socket B does request-response with select(), and 64
 * more sockets each do request-response with poll() and epoll.  Every
 * exchange completes, FIONREAD and recv agree, and A's 4 MiB arrive
 * intact at the end.  (Run also with RINGSOCK_FEATURES_DISABLE=recv_cap
 * by run_diff.sh's knob list below: then A takes every receive buffer of
 * the ring and the others must be served through the kernel.)
 * ENGINE_MIN_ACCELERATED=3
 * RUN_ALSO=RINGSOCK_FEATURES_DISABLE=recv_cap RINGSOCK_ARM_AFTER=0 */
#include "../scn.h"
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>

#define FLOOD (3 << 20)
#define ROUNDS 200
#define OTHERS 64

static int a_peer, b_peer, o_peer[OTHERS];
static char flood[FLOOD];

static void *flooder(void *arg)
{
	(void)arg;
	/* blocking: the kernel's flow control paces it */
	size_t off = 0;
	while (off < FLOOD) {
		ssize_t n = send(a_peer, flood + off, FLOOD - off, 0);
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	return NULL;
}

/* Echo each message back until the stream ends (blocking). */
static void *echo(void *arg)
{
	int fd = (int)(long)arg;
	char buf[256];
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n <= 0)
			break;
		if (send(fd, buf, (size_t)n, 0) != n)
			break;
	}
	return NULL;
}

static void *echo_many(void *arg)
{
	(void)arg;
	char buf[64];
	for (int i = 0; i < OTHERS; i++) {
		ssize_t n = recv(o_peer[i], buf, sizeof(buf), 0);
		if (n > 0)
			send(o_peer[i], buf, (size_t)n, 0);
	}
	return NULL;
}

static int select_read(int fd, char *buf, size_t len)
{
	fd_set rs;
	FD_ZERO(&rs);
	FD_SET(fd, &rs);
	struct timeval tv = { 20, 0 };
	if (select(fd + 1, &rs, NULL, NULL, &tv) != 1)
		return -2; /* never reported: the hang this test is about */
	int inq = -1;
	ioctl(fd, FIONREAD, &inq);
	ssize_t n = recv(fd, buf, len, 0);
	if (n <= 0 || inq < (int)n)
		return -3; /* recv and FIONREAD disagree */
	return (int)n;
}

int main(void)
{
	int a, b, o[OTHERS];
	fill_pattern(flood, FLOOD, 7);
	tcp_pair(&a_peer, &a);
	/* room for the whole flood in the kernel's two buffers, so the
	 * flooder finishes before B starts: A's receive then finds all of
	 * it at once, far more than the ring's 2 MiB of receive buffers */
	int big = 4 << 20;
	setsockopt(a, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	setsockopt(a_peer, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	tcp_pair(&b_peer, &b);
	set_nonblock(a);
	set_nonblock(b);
	for (int i = 0; i < OTHERS; i++) {
		tcp_pair(&o_peer[i], &o[i]);
		set_nonblock(o[i]);
	}
	/* A is armed on this thread's ring first (a few small reads) */
	char buf[1024];
	arm_by_reading(a_peer, a);
	pthread_t tf, tb, to;
	pthread_create(&tf, NULL, flooder, NULL);
	pthread_join(tf, NULL);
	/* A's receive runs in this thread's ring now and takes what it may */
	wait_fd(a, POLLIN, 5000);
	pthread_create(&tb, NULL, echo, (void *)(long)b_peer);
	long a_got = 0;
	uint32_t a_sum = 2166136261u;
	int b_ok = 0, b_first_bad = -1;
	for (int r = 0; r < ROUNDS; r++) {
		char msg[16];
		int len = snprintf(msg, sizeof(msg), "ping%04d", r);
		send(b, msg, (size_t)len, 0);
		int n = select_read(b, buf, sizeof(buf));
		if (n == len && !memcmp(buf, msg, (size_t)len))
			b_ok++;
		else if (b_first_bad < 0)
			b_first_bad = r;
		if (n == -2)
			break;
		/* A, slowly */
		ssize_t k = recv(a, buf, sizeof(buf), 0);
		if (k > 0) {
			for (ssize_t i = 0; i < k; i++)
				a_sum = (a_sum ^ (unsigned char)buf[i]) * 16777619u;
			a_got += k;
		}
	}
	say("B request-response rounds ok: %d of %d (first bad: %d)", b_ok, ROUNDS, b_first_bad);
	/* the others, with A still flooded and unread */
	pthread_create(&to, NULL, echo_many, NULL);
	int ep = epoll_create1(0);
	int o_ok = 0;
	for (int i = 0; i < OTHERS; i++) {
		send(o[i], "hello", 5, 0);
		int n;
		if (i % 2) {
			n = wait_fd(o[i], POLLIN, 20000) & POLLIN ? (int)recv(o[i], buf, sizeof(buf), 0) : -2;
		} else {
			struct epoll_event ev = { .events = EPOLLIN, .data.fd = o[i] }, out;
			epoll_ctl(ep, EPOLL_CTL_ADD, o[i], &ev);
			n = epoll_wait(ep, &out, 1, 20000) == 1 ? (int)recv(o[i], buf, sizeof(buf), 0) : -2;
		}
		o_ok += n == 5 && !memcmp(buf, "hello", 5);
	}
	say("other sockets served: %d of %d", o_ok, OTHERS);
	pthread_join(to, NULL);
	/* now read A to the end */
	while (a_got < FLOOD) {
		if (!(wait_fd(a, POLLIN, 20000) & POLLIN))
			break;
		ssize_t k = recv(a, buf, sizeof(buf), 0);
		if (k <= 0)
			break;
		for (ssize_t i = 0; i < k; i++)
			a_sum = (a_sum ^ (unsigned char)buf[i]) * 16777619u;
		a_got += k;
	}
	say("A received %ld bytes, intact %d", a_got, a_got == FLOOD && a_sum == scn_sum(flood, FLOOD));
	shutdown(b_peer, SHUT_WR);
	close(b);
	pthread_join(tb, NULL);
	return 0;
}
