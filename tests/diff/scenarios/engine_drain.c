/* Also run with every send through the frag pool and each batch sent zero-copy (tcp_send.c):
 * RUN_ALSO=RINGSOCK_ZEROCOPY=always RINGSOCK_ZEROCOPY_MIN=1 RINGSOCK_LINEAR_FIRST=0 RINGSOCK_DIRECT_THRESHOLD=0 RINGSOCK_ARM_AFTER=0 */
/* Bytes a nonblocking send accepted reach the peer even when the writing
 * thread never comes back to a wait the engine serves.  Each case fills a
 * socket with small kernel buffers until send() says EAGAIN (how much it
 * took before that may differ; only whether it all arrived is printed),
 * then the same thread, or another one, blocks reading the other end
 * (a blocking socket, on the kernel path):
 *   - after close() of the writer;
 *   - after shutdown(SHUT_WR) of the writer;
 *   - with the writer left open, reading exactly what was accepted; then
 *     the writer must report EPOLLOUT again (edge-triggered) and take more;
 *   - the same with 128 KiB sends, which go straight to the kernel until
 *     its buffer is full: its EPOLLOUT edge then tells the writer, in a set
 *     registered before the fill and in one registered after it;
 *   - the writing thread blocks on a condition variable (not a socket call)
 *     while another thread reads everything;
 *   - the same with one small send (queued by the engine, not yet
 *     submitted when the thread blocks).
 * A watchdog turns a hang into a failure.
 * ENGINE_MIN_ACCELERATED=5 */
#include "../scn.h"
#include <pthread.h>
#include <sys/epoll.h>

#define CAP (8 << 20)

static char out[CAP], in[CAP];

/* A pair with small buffers: the writer c is nonblocking (the engine's),
 * the reader s blocking (the kernel's). */
static void small_pair(int *c, int *s)
{
	tcp_pair(c, s);
	int v = 4096;
	setsockopt(*c, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
	setsockopt(*s, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	set_nonblock(*c);
}

/* Write 1000-byte pieces until EAGAIN; returns the bytes accepted. */
static size_t fill(int c, unsigned seed)
{
	fill_pattern(out, CAP, seed);
	size_t n = 0;
	while (n + 1000 <= CAP) {
		ssize_t r = send(c, out + n, 1000, MSG_NOSIGNAL);
		if (r < 0) {
			if (errno != EAGAIN)
				die("send");
			break;
		}
		n += (size_t)r;
	}
	return n;
}

static size_t read_exact(int s, size_t want, int until_eof)
{
	size_t got = 0;
	for (;;) {
		ssize_t r = read(s, in + got, until_eof ? CAP - got : want - got);
		if (r <= 0)
			break;
		got += (size_t)r;
		if (!until_eof && got == want)
			break;
	}
	return got;
}

static void after_close(void)
{
	int c, s;
	small_pair(&c, &s);
	size_t n = fill(c, 1);
	close(c);
	size_t got = read_exact(s, 0, 1);
	say("close: all arrived %d, intact %d", got == n, !memcmp(in, out, n));
	close(s);
}

static void after_shutdown(void)
{
	int c, s;
	small_pair(&c, &s);
	size_t n = fill(c, 2);
	R("shutdown(SHUT_WR)", shutdown(c, SHUT_WR));
	size_t got = read_exact(s, 0, 1);
	say("shutdown: all arrived %d, intact %d", got == n, !memcmp(in, out, n));
	close(c);
	close(s);
}

static void left_open(void)
{
	int c, s;
	small_pair(&c, &s);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLOUT | EPOLLET, .data.fd = c };
	epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
	size_t n = fill(c, 3);
	size_t got = read_exact(s, n, 0);
	say("open: all arrived %d, intact %d", got == n, !memcmp(in, out, n));
	/* Everything was read: the writer has room again. */
	int k = (int)R("epoll_wait EPOLLOUT", epoll_wait(ep, &ev, 1, 10000));
	say("events %s", k == 1 && (ev.events & EPOLLOUT) ? "EPOLLOUT" : "none");
	R("send after", send(c, "more", 4, MSG_NOSIGNAL));
	got = read_exact(s, 4, 0);
	say("more arrived %d", got == 4 && !memcmp(in, "more", 4));
	close(ep);
	close(c);
	close(s);
}

static void left_open_bulk(void)
{
	int c, s;
	small_pair(&c, &s);
	int ep = epoll_create1(0), ep2 = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLOUT | EPOLLET, .data.fd = c };
	epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
	/* The first edge (the socket is writable) is taken now. */
	say("before: events %d", (int)R("epoll_wait", epoll_wait(ep, &ev, 1, 1000)));
	fill_pattern(out, CAP, 6);
	size_t n = 0;
	while (n + (128 << 10) <= CAP) {
		ssize_t r = send(c, out + n, 128 << 10, MSG_NOSIGNAL);
		if (r < 0) {
			if (errno != EAGAIN)
				die("send");
			break;
		}
		n += (size_t)r;
	}
	say("full: events %d", (int)R("epoll_wait", epoll_wait(ep, &ev, 1, 0)));
	ev.events = EPOLLOUT | EPOLLET;
	epoll_ctl(ep2, EPOLL_CTL_ADD, c, &ev);
	size_t got = read_exact(s, n, 0);
	say("bulk open: all arrived %d, intact %d", got == n, !memcmp(in, out, n));
	int k = (int)R("epoll_wait EPOLLOUT", epoll_wait(ep, &ev, 1, 10000));
	say("set 1: %s", k == 1 && (ev.events & EPOLLOUT) ? "EPOLLOUT" : "none");
	k = (int)R("epoll_wait EPOLLOUT", epoll_wait(ep2, &ev, 1, 10000));
	say("set 2: %s", k == 1 && (ev.events & EPOLLOUT) ? "EPOLLOUT" : "none");
	R("send after", send(c, "more", 4, MSG_NOSIGNAL));
	got = read_exact(s, 4, 0);
	say("more arrived %d", got == 4 && !memcmp(in, "more", 4));
	close(ep);
	close(ep2);
	close(c);
	close(s);
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int filled, done;
static size_t accepted;
static int wc;

static int small_only;

static void *writer(void *arg)
{
	(void)arg;
	size_t n;
	if (small_only) {
		fill_pattern(out, 64, 5);
		n = send(wc, out, 64, MSG_NOSIGNAL) == 64 ? 64 : 0;
	} else {
		n = fill(wc, 4);
	}
	pthread_mutex_lock(&mu);
	accepted = n;
	filled = 1;
	pthread_cond_broadcast(&cv);
	while (!done) /* blocked outside any socket call */
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	return NULL;
}

static void writer_on_condvar(int small)
{
	int s;
	small_only = small;
	filled = done = 0;
	small_pair(&wc, &s);
	pthread_t th;
	pthread_create(&th, NULL, writer, NULL);
	pthread_mutex_lock(&mu);
	while (!filled)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	size_t got = read_exact(s, accepted, 0);
	say("condvar%s: all arrived %d, intact %d", small ? " (one small send)" : "", got == accepted,
	    !memcmp(in, out, accepted));
	pthread_mutex_lock(&mu);
	done = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(th, NULL);
	close(wc);
	close(s);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	alarm(60); /* a hang fails the run */
	after_close();
	after_shutdown();
	left_open();
	left_open_bulk();
	writer_on_condvar(0);
	writer_on_condvar(1);
	return 0;
}
