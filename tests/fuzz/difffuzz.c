/* difffuzz.c - seeded differential fuzzer of TCP socket call sequences.
 *
 *   difffuzz [-n STEPS] [-k KEEP] [-u] [-K] [-F] [-x LETTERS] SEED
 *
 * From a PRNG seeded with SEED it drives STEPS steps (default 200) over a
 * few loopback TCP connections: send/recv/read/write/readv/writev/sendmsg/
 * recvmsg/recvfrom/sendto of 1 B .. 256 KiB with random flags (MSG_PEEK,
 * MSG_WAITALL where it cannot block forever, MSG_DONTWAIT, MSG_TRUNC,
 * MSG_OOB, MSG_NOSIGNAL), FIONREAD, SIOCATMARK, SO_ERROR, shutdown, close
 * of either end, dup + close of the original, O_NONBLOCK changes,
 * SO_RCVBUF/SO_SNDBUF/SO_RCVLOWAT/SO_OOBINLINE, poll/select/epoll waits
 * with zero or bounded timeouts, fork (a child reads or writes a bounded
 * amount and exits; big transfers with the child on the other end), vfork,
 * posix_spawn, signals raised with handlers installed (SA_RESTART or not),
 * blocking calls interrupted by a timer signal, new connections.
 *
 * It prints a transcript (stdout) of what the kernel decides: results,
 * errno names, checksums of bytes read.  The transcript must be the same
 * plain and under libringsock.so (tests/integration/difffuzz.sh compares
 * them), and the same for two plain runs of one seed.
 *
 * Determinism.  Every step that reads or waits is preceded by a "sync":
 * the fuzzer keeps a model of each direction (bytes sent, bytes consumed,
 * the urgent byte, FIN) and waits (poll, and the kernel's own count of
 * bytes received from getsockopt(TCP_INFO), which the library passes
 * through; FIONREAD stops at an urgent mark) until the receiver's kernel
 * has everything that was sent (and a FIN's ACK has come back: its state
 * change wakes edge-triggered waits), so a nonblocking read never races
 * the loopback.  A blocking call is made only when its data is
 * there (the model says it cannot block), except the steps that block on
 * purpose and are ended by a timer signal or SO_RCVTIMEO.  Each send keeps
 * what is unread in its direction under a cap (16 KiB, less with a small
 * SO_RCVBUF) so it is taken whole at once; bigger transfers (up to 256 KiB)
 * run with the other end read concurrently (in this process, or by a fork
 * child) and print totals only.  Cross-process order is enforced with
 * pipes and waitpid, never with sleeps.  A sync that does not complete
 * within 2 s prints "SYNC TIMEOUT" and ends the run (exit 3).
 *
 * Each step draws from its own PRNG (seeded with SEED and the step
 * number), so -k (a list of steps to keep, e.g. "3,17,40-45") skips the
 * others while keeping each kept step's draws: the minimiser in
 * difffuzz.sh works on that.  -u lets an urgent byte be sent to a socket
 * whose program has not asked about urgent data first (a documented limit
 * of the library, see ringsock(7)); -K adds a fork child killed by SIGKILL
 * right after it sent (what the kernel had accepted arrives; a user-space
 * send queue cannot survive it); -F adds a fork child that opens its own
 * connection to a listener of the parent, sends and ends (exit, _exit or
 * SIGTERM's default action), the parent then reading it all.  None is on
 * by default; -x leaves features out (e: EPOLLET, r: SHUT_RD, w: a
 * WAITALL for more than is queued ended by a signal), to look past a
 * difference that is found everywhere.  Changing what a step draws
 * changes what every seed does: the seeds in corpus.txt are tied to this
 * generator (new draws go behind an option, as -F's do).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define NCONN 3
#define CAP0 (16 * 1024)
#define BIG (256 * 1024)
#define SYNC_MS 2000

/* ------------------------------------------------------------ output */

static int g_step;

static void P(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void P(const char *fmt, ...)
{
	char line[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	printf("%03d %s\n", g_step, line);
	fflush(stdout);
}

static const char *en_(int e)
{
	switch (e) {
#define E(x) case x: return #x;
	E(EAGAIN) E(EINTR) E(EPIPE) E(ECONNRESET) E(ECONNREFUSED) E(EINPROGRESS) E(EBADF)
	E(EINVAL) E(ENOTCONN) E(EISCONN) E(ENOTSOCK) E(EALREADY) E(EADDRINUSE) E(EMSGSIZE)
	E(ETIMEDOUT) E(EFAULT) E(ENOENT) E(EACCES) E(EPERM) E(EDESTADDRREQ) E(EOPNOTSUPP)
	E(ENOSYS) E(ECHILD) E(ESPIPE) E(ENOTTY) E(EEXIST) E(ENOPROTOOPT) E(ENOMEM) E(ENOBUFS)
	E(EMFILE) E(ENFILE) E(ESRCH) E(EIO)
#undef E
	default: {
		static char b[16];
		snprintf(b, sizeof(b), "E%d", e);
		return b;
	}
	}
}

/* "r" or "-1 ENAME" */
static const char *res(long r, int e)
{
	static char b[4][64];
	static int i;
	i = (i + 1) & 3;
	if (r < 0)
		snprintf(b[i], sizeof(b[i]), "%ld %s", r, en_(e));
	else
		snprintf(b[i], sizeof(b[i]), "%ld", r);
	return b[i];
}

static uint32_t fnv(uint32_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}
#define FNV0 2166136261u

static const char *msgflags(int f)
{
	static char b[4][96];
	static int i;
	i = (i + 1) & 3;
	b[i][0] = 0;
#define F(x) if (f & x) { if (b[i][0]) strcat(b[i], "|"); strcat(b[i], #x + 4); f &= ~x; }
	F(MSG_OOB) F(MSG_PEEK) F(MSG_WAITALL) F(MSG_DONTWAIT) F(MSG_TRUNC) F(MSG_NOSIGNAL) F(MSG_CTRUNC) F(MSG_EOR)
#undef F
	if (f)
		sprintf(b[i] + strlen(b[i]), "%s0x%x", b[i][0] ? "|" : "", f);
	if (!b[i][0])
		strcpy(b[i], "0");
	return b[i];
}

static const char *pollev(int f)
{
	static char b[4][96];
	static int i;
	i = (i + 1) & 3;
	b[i][0] = 0;
#define F(x, n) if (f & x) { strcat(b[i], b[i][0] ? "|" n : n); }
	F(POLLIN, "IN") F(POLLPRI, "PRI") F(POLLOUT, "OUT") F(POLLRDHUP, "RDHUP") F(POLLERR, "ERR") F(POLLHUP, "HUP") F(POLLNVAL, "NVAL")
#undef F
	if (!b[i][0])
		strcpy(b[i], "-");
	return b[i];
}

static const char *epev(uint32_t f)
{
	static char b[4][96];
	static int i;
	i = (i + 1) & 3;
	b[i][0] = 0;
#define F(x, n) if (f & x) { strcat(b[i], b[i][0] ? "|" n : n); }
	F(EPOLLIN, "IN") F(EPOLLPRI, "PRI") F(EPOLLOUT, "OUT") F(EPOLLRDHUP, "RDHUP") F(EPOLLERR, "ERR") F(EPOLLHUP, "HUP")
	F(EPOLLET, "ET") F(EPOLLONESHOT, "ONESHOT")
#undef F
	if (!b[i][0])
		strcpy(b[i], "-");
	return b[i];
}

static void fatal(const char *what)
{
	printf("%03d FUZZER SETUP FAILED: %s: %s\n", g_step, what, en_(errno));
	fflush(stdout);
	exit(99);
}

/* ------------------------------------------------------------ PRNG */

static uint64_t g_seed;
static uint64_t rs;

static uint64_t mix(uint64_t z)
{
	z += 0x9E3779B97F4A7C15ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}
static uint64_t rnd(void)
{
	rs += 0x9E3779B97F4A7C15ull;
	return mix(rs);
}
static uint32_t below(uint32_t n)
{
	return n ? (uint32_t)(rnd() % n) : 0;
}
static int chance(int pct)
{
	return (int)below(100) < pct;
}
/* 1 .. 256 KiB, log-uniform */
static size_t rsize(void)
{
	unsigned k = below(19);
	return 1 + below(1u << k);
}

/* ------------------------------------------------------------ model */

struct end {
	int fd;       /* -1: closed */
	int nb;       /* O_NONBLOCK */
	int shut_rd, shut_wr;
	int hup;      /* POLLERR or POLLHUP seen: reads never block, sends fail */
	int urgi;     /* the program asked about urgent data on it */
	int oobinline;
	int rcvbuf, sndbuf; /* values set, 0: default */
	int lowat;    /* SO_RCVLOWAT set, 0: default (1) */
	int gen;      /* bumped by dup: epoll data */
	int reg;      /* current fd registered in the epoll set */
	int synced;   /* conn epoch at the last sync of its input */
};
struct dir {          /* bytes from e[s] to e[!s] */
	uint64_t sent, rd; /* stream offsets: sent by the writer, passed by the reader */
	int64_t urg;       /* offset of the current urgent byte, -1 none */
	int fin;           /* the writer shut down its side or closed */
};
struct conn {
	int live;
	int gen;
	int epoch;
	struct end e[2];
	struct dir d[2];
};
static struct conn C[NCONN];
static int conn_gen;
static int opt_u, opt_K, opt_F;
static const char *opt_x = ""; /* -x: features left out, see usage() */
#define EXCL(c) (strchr(opt_x, (c)) != NULL)

#define END(id) (&C[(id) / 2].e[(id) % 2])
#define OUTD(id) (&C[(id) / 2].d[(id) % 2])
#define IND(id) (&C[(id) / 2].d[1 - (id) % 2])
#define PEER(id) ((id) ^ 1)

static const char *en(int id)
{
	static char b[8][16];
	static int i;
	i = (i + 1) & 7;
	snprintf(b[i], sizeof(b[i]), "c%d%c", id / 2, 'a' + id % 2);
	return b[i];
}

static char *wbuf, *rbuf, *rbuf2;

static uint32_t dkey(int id)
{
	return (uint32_t)mix((uint64_t)C[id / 2].gen * 1000003u + (uint64_t)id * 7919u);
}
static void fill(char *b, uint32_t key, uint64_t off, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t x = (off + i) * 0x9E3779B97F4A7C15ull ^ key;
		x ^= x >> 29;
		b[i] = (char)(x ^ (x >> 11));
	}
}

static int urg_out(const struct dir *d)
{
	return d->urg >= 0 && d->urg >= (int64_t)d->rd;
}

/* Bytes a read on id can return before it would block, the skipped
 * urgent byte left out. */
static long avail(int id)
{
	struct dir *d = IND(id);
	long p = (long)(d->sent - d->rd);
	if (urg_out(d) && !END(id)->oobinline)
		p--;
	return p < 0 ? 0 : p;
}

/* A read on id returns at once whatever is queued (end of stream, reset,
 * its own shutdown). */
static int no_wait(int id)
{
	struct end *r = END(id);
	return r->hup || r->shut_rd || IND(id)->fin;
}

static int would_block(int id, size_t n, int flags)
{
	struct end *r = END(id);
	struct dir *d = IND(id);
	if (flags & MSG_OOB)
		return 0;
	if (no_wait(id))
		return 0;
	long L = r->lowat > 1 ? r->lowat : 1;
	long target = (flags & MSG_WAITALL) ? (long)n : ((long)n < L ? (long)n : L);
	if (urg_out(d)) {
		if ((int64_t)d->rd < d->urg)
			return 0; /* stops at the mark with data */
		long rest = (long)(d->sent - d->rd) - (r->oobinline ? 0 : 1);
		return rest < target;
	}
	return (long)(d->sent - d->rd) < target;
}

/* A consuming read on id returned r: advance the model as the kernel
 * does (a read that starts at the urgent mark skips the urgent byte). */
static void consumed(int id, long r)
{
	struct dir *d = IND(id);
	if (urg_out(d) && !END(id)->oobinline && (int64_t)d->rd == d->urg && d->sent > d->rd)
		d->rd++;
	if (r > 0)
		d->rd += (uint64_t)r;
}

/* What may be unread in the direction out of id before a send must be
 * taken whole at once. */
static long cap(int id)
{
	long c = CAP0;
	struct end *r = END(PEER(id)), *w = END(id);
	if (r->rcvbuf && r->rcvbuf / 4 < c)
		c = r->rcvbuf / 4;
	if (w->sndbuf && w->sndbuf / 4 < c)
		c = w->sndbuf / 4;
	return c;
}

static void bump(int id)
{
	C[id / 2].epoch++;
}

/* ------------------------------------------------------------ signals */

static volatile sig_atomic_t n_pipe, n_usr1, n_usr2, n_alrm;
static volatile int alrm_fd = -1;
static char *alrm_buf;
static size_t alrm_len;
static volatile long alrm_sent = -2;
static volatile int alrm_errno;

static void on_pipe(int s) { (void)s; n_pipe++; }
static void on_usr1(int s) { (void)s; n_usr1++; }
static void on_usr2(int s) { (void)s; n_usr2++; }
static void on_alrm(int s)
{
	(void)s;
	n_alrm++;
	int fd = alrm_fd;
	if (fd >= 0) {
		int e = errno;
		alrm_fd = -1;
		alrm_sent = send(fd, alrm_buf, alrm_len, MSG_NOSIGNAL);
		alrm_errno = errno;
		errno = e;
	}
}

static void set_handler(int sig, void (*h)(int), int flags)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL))
		fatal("sigaction");
}

static void timer_on(int ms)
{
	struct itimerval it = { { 0, ms * 1000 }, { 0, ms * 1000 } };
	setitimer(ITIMER_REAL, &it, NULL);
}
static void timer_off(void)
{
	struct itimerval it = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &it, NULL);
}

/* ------------------------------------------------------------ sync */

/* The kernel's struct tcp_info up to tcpi_bytes_received (linux/tcp.h
 * cannot be included beside netinet/tcp.h).  getsockopt(TCP_INFO) goes
 * to the kernel unchanged under the library. */
struct ktcp_info {
	uint8_t state, ca_state, retransmits, probes, backoff, options, wscale, flags;
	uint32_t rto, ato, snd_mss, rcv_mss;
	uint32_t unacked, sacked, lost, retrans, fackets;
	uint32_t last_data_sent, last_ack_sent, last_data_recv, last_ack_recv;
	uint32_t pmtu, rcv_ssthresh, rtt, rttvar, snd_ssthresh, snd_cwnd, advmss, reordering;
	uint32_t rcv_rtt, rcv_space, total_retrans;
	uint64_t pacing_rate, max_pacing_rate, bytes_acked, bytes_received;
};

/* Sequence space the kernel has received on fd: data bytes, +1 for a FIN. */
static long kreceived(int fd)
{
	struct ktcp_info ti;
	socklen_t l = sizeof(ti);
	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &l) || l < sizeof(ti))
		return -1;
	return (long)ti.bytes_received;
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void sync_fail(const char *what, int id, long have, long want)
{
	P("SYNC TIMEOUT %s %s: have %ld want %ld", what, en(id), have, want);
	exit(3);
}

/* A reset seen by poll: the kernel sets the error, then closes the socket
 * (tcp_reset, then tcp_done), and a poll between the two sees ERR without
 * HUP.  Wait for the closed state, so the line printed does not depend on
 * when the poll ran. */
static short settled(int fd, short revents)
{
	long t0 = now_ms();
	while ((revents & POLLERR) && !(revents & POLLHUP) && now_ms() - t0 <= SYNC_MS) {
		struct pollfd p = { fd, POLLIN | POLLRDHUP, 0 };
		if (poll(&p, 1, 1) > 0)
			revents = p.revents;
	}
	return revents;
}

/* Wait until everything sent towards id has reached its kernel (and the
 * FIN, when the writer is done), or a reset/hang-up is reported.  (Not
 * FIONREAD: it stops at an urgent mark.) */
static void sync_in(int id)
{
	struct end *r = END(id);
	struct dir *d = IND(id);
	struct conn *c = &C[id / 2];
	if (r->fd < 0 || r->hup || r->synced == c->epoch)
		return;
	long want = (long)d->sent + (d->fin ? 1 : 0), have = -1;
	long t0 = now_ms();
	for (;;) {
		struct pollfd p = { r->fd, POLLIN | POLLRDHUP, 0 };
		int n = poll(&p, 1, 0);
		if (n > 0 && (p.revents & (POLLERR | POLLHUP))) {
			r->hup = 1;
			P("(sync: %s polls %s)", en(id), pollev(settled(r->fd, p.revents)));
			break;
		}
		have = kreceived(r->fd);
		if (have >= want)
			break;
		if (now_ms() - t0 > SYNC_MS)
			sync_fail("input", id, have, want);
		p.revents = 0;
		poll(&p, 1, 10);
	}
	r->synced = c->epoch;
}

/* Wait for a reset or hang-up to be reported on id. */
static void sync_hup(int id)
{
	struct end *w = END(id);
	if (w->fd < 0 || w->hup)
		return;
	long t0 = now_ms();
	for (;;) {
		struct pollfd p = { w->fd, POLLIN | POLLRDHUP, 0 };
		int n = poll(&p, 1, 10);
		if (n > 0 && (p.revents & (POLLERR | POLLHUP))) {
			w->hup = 1;
			P("(sync: %s polls %s)", en(id), pollev(settled(w->fd, p.revents)));
			return;
		}
		if (now_ms() - t0 > SYNC_MS)
			sync_fail("reset", id, 0, 1);
	}
}

/* After id sent bytes: wait until they are in the peer's queue, or, when
 * the peer cannot take them (closed, or shut down both ways: the kernel
 * answers with a reset), until id sees the reset. */
static void sync_after_send(int id)
{
	struct end *r = END(PEER(id));
	bump(id);
	if (r->fd >= 0 && !(r->shut_rd && r->shut_wr) && !r->hup)
		sync_in(PEER(id));
	else
		sync_hup(id);
}

static int kstate(int fd)
{
	struct ktcp_info ti;
	socklen_t l = sizeof(ti);
	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &l))
		return -1;
	return ti.state;
}

/* After id closed or shut down its writing side: wait for the peer to see
 * the FIN or the reset, and, while id is open, for its FIN to be
 * acknowledged (FIN_WAIT1, CLOSING, LAST_ACK: the state change that ends
 * them wakes edge-triggered waits, whenever the peer's ACK comes). */
static void sync_fin(int id)
{
	bump(id);
	sync_in(PEER(id));
	struct end *w = END(id);
	if (w->fd < 0)
		return;
	long t0 = now_ms();
	for (;;) {
		int st = kstate(w->fd);
		if (st != 4 && st != 9 && st != 11)
			return;
		if (now_ms() - t0 > SYNC_MS)
			sync_fail("fin ack", id, st, 0);
		struct pollfd p = { w->fd, 0, 0 };
		poll(&p, 1, 10);
	}
}

static void sync_all(void)
{
	for (int id = 0; id < 2 * NCONN; id++)
		if (C[id / 2].live)
			sync_in(id);
}

/* ------------------------------------------------------------ helpers */

static int pick_open(void)
{
	int ids[2 * NCONN], n = 0;
	for (int id = 0; id < 2 * NCONN; id++)
		if (C[id / 2].live && END(id)->fd >= 0)
			ids[n++] = id;
	return n ? ids[below(n)] : -1;
}

static long cap(int id);
/* An end to read from: mostly one with something to read. */
static int pick_reader(void)
{
	int ids[2 * NCONN], n = 0;
	if (chance(70)) {
		for (int id = 0; id < 2 * NCONN; id++)
			if (C[id / 2].live && END(id)->fd >= 0 && (avail(id) > 0 || (IND(id)->fin && !END(id)->hup)))
				ids[n++] = id;
		if (n)
			return ids[below((uint32_t)n)];
	}
	return pick_open();
}

/* An end to write on: mostly one whose direction has room. */
static int pick_writer(void)
{
	int ids[2 * NCONN], n = 0;
	if (chance(70)) {
		for (int id = 0; id < 2 * NCONN; id++)
			if (C[id / 2].live && END(id)->fd >= 0 && !END(id)->shut_wr && !END(id)->hup &&
			    cap(id) > (long)(OUTD(id)->sent - OUTD(id)->rd))
				ids[n++] = id;
		if (n)
			return ids[below((uint32_t)n)];
	}
	return pick_open();
}

static void declare_urgent(int id)
{
	struct end *r = END(id);
	if (r->fd < 0 || r->urgi)
		return;
	errno = 0;
	int m = sockatmark(r->fd);
	P("sockatmark(%s) = %s", en(id), res(m, errno));
	r->urgi = 1;
}

static void set_nb(int id, int on, const char *why)
{
	struct end *e = END(id);
	int r, how = below(2);
	errno = 0;
	if (how == 0) {
		int fl = fcntl(e->fd, F_GETFL);
		r = fcntl(e->fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
	} else {
		int v = on;
		r = ioctl(e->fd, FIONBIO, &v);
	}
	P("%s %s %s on %s = %s", why, how ? "ioctl FIONBIO" : "fcntl O_NONBLOCK", on ? "on" : "off", en(id), res(r, errno));
	if (r == 0)
		e->nb = on;
}

static void show_status(const char *what, int st)
{
	if (WIFEXITED(st))
		P("%s exited %d", what, WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		P("%s killed by signal %d", what, WTERMSIG(st));
	else
		P("%s status 0x%x", what, st);
}

static int reap(pid_t pid)
{
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return st;
}

/* ------------------------------------------------------------ connections */

static void close_listener(int l)
{
	close(l);
}

static void new_conn(int ci)
{
	struct conn *c = &C[ci];
	memset(c, 0, sizeof(*c));
	c->live = 1;
	c->gen = ++conn_gen;
	c->epoch = 1;
	for (int s = 0; s < 2; s++) {
		c->d[s].urg = -1;
		c->e[s].fd = -1;
		c->e[s].synced = 0;
	}
	int fam = chance(25) ? AF_INET6 : AF_INET;
	struct sockaddr_storage a;
	socklen_t al;
	memset(&a, 0, sizeof(a));
	int l = socket(fam, SOCK_STREAM, 0);
	if (l < 0)
		fatal("socket");
	int one = 1;
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fam == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&a;
		s4->sin_family = AF_INET;
		s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		al = sizeof(*s4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&a;
		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_loopback;
		al = sizeof(*s6);
	}
	if (bind(l, (struct sockaddr *)&a, al) || listen(l, 4) || getsockname(l, (struct sockaddr *)&a, &al))
		fatal("listen");
	int nbc = chance(40);
	int cfd = socket(fam, SOCK_STREAM | (nbc ? SOCK_NONBLOCK : 0), 0);
	if (cfd < 0)
		fatal("socket");
	char line[512];
	int o = snprintf(line, sizeof(line), "conn %d new %s%s:", ci, fam == AF_INET ? "inet" : "inet6",
			 nbc ? " nonblocking connect" : "");
	errno = 0;
	int r = connect(cfd, (struct sockaddr *)&a, al);
	o += snprintf(line + o, sizeof(line) - o, " connect=%s", res(r, errno));
	if (nbc) {
		struct pollfd p = { cfd, POLLOUT, 0 };
		int n = poll(&p, 1, SYNC_MS);
		int err = -1;
		socklen_t el = sizeof(err);
		getsockopt(cfd, SOL_SOCKET, SO_ERROR, &err, &el);
		o += snprintf(line + o, sizeof(line) - o, " poll=%d %s so_error=%s", n, pollev(p.revents), err ? en_(err) : "0");
		int fl = fcntl(cfd, F_GETFL);
		fcntl(cfd, F_SETFL, fl & ~O_NONBLOCK);
	}
	int acc4 = chance(50);
	int sfd = acc4 ? accept4(l, NULL, NULL, SOCK_CLOEXEC) : accept(l, NULL, NULL);
	if (sfd < 0)
		fatal("accept");
	o += snprintf(line + o, sizeof(line) - o, " %s=fd", acc4 ? "accept4" : "accept");
	close_listener(l);
	c->e[0].fd = cfd;
	c->e[1].fd = sfd;
	for (int s = 0; s < 2; s++) {
		struct end *e = &c->e[s];
		if (chance(50)) {
			int v = 1;
			r = setsockopt(e->fd, IPPROTO_TCP, TCP_NODELAY, &v, sizeof(v));
			o += snprintf(line + o, sizeof(line) - o, " %c:nodelay=%d", 'a' + s, r);
		}
		if (chance(50)) {
			fcntl(e->fd, F_SETFL, fcntl(e->fd, F_GETFL) | O_NONBLOCK);
			e->nb = 1;
			o += snprintf(line + o, sizeof(line) - o, " %c:nonblock", 'a' + s);
		}
	}
	P("%s", line);
}

/* ------------------------------------------------------------ I/O calls */

static const char *call_name[] = { "send", "write", "writev", "sendmsg", "sendto" };
static const char *rcall_name[] = { "recv", "read", "readv", "recvmsg", "recvfrom" };

static int split_iov(struct iovec *iov, char *base, size_t n, int max)
{
	int k = 1 + (int)below((uint32_t)max);
	if ((size_t)k > n)
		k = (int)n;
	if (k < 1)
		k = 1;
	size_t off = 0;
	for (int i = 0; i < k; i++) {
		size_t len = (i == k - 1) ? n - off : below((uint32_t)(n - off + 1));
		iov[i].iov_base = base + off;
		iov[i].iov_len = len;
		off += len;
	}
	return k;
}

/* One send-family call of n bytes of the stream out of id. */
static long do_send(int id, int call, int flags, size_t n, int *err)
{
	struct end *w = END(id);
	struct dir *d = OUTD(id);
	fill(wbuf, dkey(id), d->sent, n);
	struct iovec iov[8];
	struct msghdr m;
	long r = -1;
	errno = 0;
	switch (call) {
	case 0: r = send(w->fd, wbuf, n, flags); break;
	case 1: r = write(w->fd, wbuf, n); break;
	case 2: r = writev(w->fd, iov, split_iov(iov, wbuf, n, 8)); break;
	case 3:
		memset(&m, 0, sizeof(m));
		m.msg_iov = iov;
		m.msg_iovlen = (size_t)split_iov(iov, wbuf, n, 8);
		r = sendmsg(w->fd, &m, flags);
		break;
	case 4: r = sendto(w->fd, wbuf, n, flags, NULL, 0); break;
	}
	*err = errno;
	return r;
}

struct rres {
	long r;
	int err;
	uint32_t sum;
	int mflags;
	int alen;
};

/* One receive-family call on id into rbuf; MSG_TRUNC leaves rbuf as it
 * was (0xEE), which the checksum shows. */
static struct rres do_recv(int id, int call, int flags, size_t n)
{
	struct end *e = END(id);
	struct rres o = { -1, 0, 0, -1, -1 };
	struct iovec iov[8];
	struct msghdr m;
	struct sockaddr_storage sa;
	socklen_t sl = sizeof(sa);
	if (flags & MSG_TRUNC)
		memset(rbuf, 0xEE, n);
	errno = 0;
	switch (call) {
	case 0: o.r = recv(e->fd, rbuf, n, flags); break;
	case 1: o.r = read(e->fd, rbuf, n); break;
	case 2: o.r = readv(e->fd, iov, split_iov(iov, rbuf, n, 8)); break;
	case 3:
		memset(&m, 0, sizeof(m));
		m.msg_iov = iov;
		m.msg_iovlen = (size_t)split_iov(iov, rbuf, n, 8);
		m.msg_name = &sa;
		m.msg_namelen = sizeof(sa);
		o.r = recvmsg(e->fd, &m, flags);
		o.mflags = m.msg_flags;
		o.alen = (int)m.msg_namelen;
		break;
	case 4:
		o.r = recvfrom(e->fd, rbuf, n, flags, (struct sockaddr *)&sa, &sl);
		o.alen = (int)sl;
		break;
	}
	o.err = errno;
	if (o.r > 0)
		o.sum = fnv(FNV0, rbuf, (size_t)o.r);
	return o;
}

static const char *rres_str(const struct rres *o, int flags)
{
	static char b[2][160];
	static int i;
	i ^= 1;
	int k = snprintf(b[i], sizeof(b[i]), "%s", res(o->r, o->err));
	if (o->r > 0) {
		if ((flags & MSG_OOB) && o->r == 1 && !(flags & MSG_TRUNC))
			k += snprintf(b[i] + k, sizeof(b[i]) - k, " byte %02x", (unsigned char)rbuf[0]);
		else
			k += snprintf(b[i] + k, sizeof(b[i]) - k, " sum %08x", o->sum);
	}
	if (o->mflags >= 0 && o->r >= 0)
		k += snprintf(b[i] + k, sizeof(b[i]) - k, " msg_flags=%s", msgflags(o->mflags));
	if (o->alen >= 0 && o->r >= 0)
		k += snprintf(b[i] + k, sizeof(b[i]) - k, " namelen=%d", o->alen);
	return b[i];
}

static int pipe_n;

/* ------------------------------------------------------------ steps */

static void st_send(void)
{
	int id = pick_writer();
	if (id < 0) {
		P("send: no open end");
		return;
	}
	struct end *w = END(id), *r = END(PEER(id));
	struct dir *d = OUTD(id);
	int call = (int)below(5);
	int flags = 0;
	if (call == 0 || call == 3 || call == 4) {
		if (chance(50)) flags |= MSG_NOSIGNAL;
		if (chance(25)) flags |= MSG_DONTWAIT;
		if (chance(10)) flags |= MSG_OOB;
	}
	int fails = w->shut_wr || w->hup;
	size_t n = rsize();
	if (!fails) {
		long budget = cap(id) - (long)(d->sent - d->rd);
		if (budget <= 0) {
			P("send %s: %ld unread in its direction, no send", en(id), (long)(d->sent - d->rd));
			return;
		}
		if ((long)n > budget)
			n = (size_t)budget;
	}
	if (flags & MSG_OOB) {
		if (urg_out(d) || r->oobinline)
			flags &= ~MSG_OOB;
		else if (!opt_u && !fails)
			declare_urgent(PEER(id));
	}
	int pipes0 = n_pipe, err;
	long rr = do_send(id, call, flags, n, &err);
	P("%s(%s, %zu, %s) = %s%s", call_name[call], en(id), n, msgflags(flags), res(rr, err),
	  n_pipe != pipes0 ? " [SIGPIPE]" : "");
	if (rr > 0) {
		d->sent += (uint64_t)rr;
		if (flags & MSG_OOB)
			d->urg = (int64_t)d->sent - 1;
		sync_after_send(id);
	}
}

static void st_recv(void)
{
	int id = pick_reader();
	if (id < 0) {
		P("recv: no open end");
		return;
	}
	struct end *r = END(id);
	sync_in(id);
	int call = (int)below(5);
	int flags = 0;
	if (call == 0 || call == 3 || call == 4) {
		if (chance(20)) flags |= MSG_PEEK;
		if (chance(20)) flags |= MSG_WAITALL;
		if (chance(25)) flags |= MSG_DONTWAIT;
		if (chance(10)) flags |= MSG_TRUNC;
		if (chance(7) && (r->urgi || opt_u)) flags |= MSG_OOB;
	}
	long A = avail(id);
	size_t n = chance(50) ? rsize() : 1 + below((uint32_t)A + 16);
	if (n > BIG)
		n = BIG;
	int blocking = !r->nb && !(flags & MSG_DONTWAIT);
	if (blocking && would_block(id, n, flags)) {
		flags &= ~MSG_WAITALL;
		if (A > 0 && chance(60))
			n = 1 + below((uint32_t)A);
		if (would_block(id, n, flags)) {
			flags |= MSG_DONTWAIT;
			if (call == 1)
				call = 0;
			else if (call == 2)
				call = 3;
		}
	}
	struct rres o = do_recv(id, call, flags, n);
	P("%s(%s, %zu, %s) = %s", rcall_name[call], en(id), n, msgflags(flags), rres_str(&o, flags));
	if (flags & MSG_OOB)
		r->urgi = 1;
	else if (!(flags & MSG_PEEK))
		consumed(id, o.r);
}

static void st_query(void)
{
	int id = pick_open();
	if (id < 0) {
		P("query: no open end");
		return;
	}
	struct end *e = END(id);
	sync_in(id);
	int k = (int)below(6), v = -1, r;
	socklen_t l = sizeof(v);
	errno = 0;
	switch (k) {
	case 0:
	case 1:
		r = ioctl(e->fd, FIONREAD, &v);
		P("ioctl(%s, FIONREAD) = %s value %d", en(id), res(r, errno), r == 0 ? v : -1);
		break;
	case 2:
		r = ioctl(e->fd, SIOCATMARK, &v);
		e->urgi = 1;
		P("ioctl(%s, SIOCATMARK) = %s value %d", en(id), res(r, errno), r == 0 ? v : -1);
		break;
	case 3:
		r = getsockopt(e->fd, SOL_SOCKET, SO_ERROR, &v, &l);
		P("getsockopt(%s, SO_ERROR) = %s value %s", en(id), res(r, errno), r == 0 ? (v ? en_(v) : "0") : "-");
		break;
	case 4: {
		struct sockaddr_storage sa;
		socklen_t sl = sizeof(sa);
		r = getpeername(e->fd, (struct sockaddr *)&sa, &sl);
		P("getpeername(%s) = %s family %d", en(id), res(r, errno), r == 0 ? sa.ss_family : -1);
		break;
	}
	case 5:
		r = getsockopt(e->fd, SOL_SOCKET, SO_RCVLOWAT, &v, &l);
		P("getsockopt(%s, SO_RCVLOWAT) = %s value %d", en(id), res(r, errno), v);
		break;
	}
}

static void st_shutdown(void)
{
	int id = pick_open();
	if (id < 0) {
		P("shutdown: no open end");
		return;
	}
	struct end *e = END(id);
	int how = (int)below(3);
	if (EXCL('r'))
		how = SHUT_WR;
	static const char *hn[] = { "SHUT_RD", "SHUT_WR", "SHUT_RDWR" };
	errno = 0;
	int r = shutdown(e->fd, how);
	P("shutdown(%s, %s) = %s", en(id), hn[how], res(r, errno));
	if (r == 0) {
		if (how != SHUT_WR)
			e->shut_rd = 1;
		if (how != SHUT_RD) {
			e->shut_wr = 1;
			OUTD(id)->fin = 1;
			sync_fin(id);
		}
		bump(id);
	}
}

static void ep_forget(int id);

static void st_close(void)
{
	int id = pick_open();
	if (id < 0) {
		P("close: no open end");
		return;
	}
	struct end *e = END(id);
	sync_in(id);
	sync_in(PEER(id));
	errno = 0;
	int r = close(e->fd);
	P("close(%s) = %s", en(id), res(r, errno));
	e->fd = -1;
	ep_forget(id);
	OUTD(id)->fin = 1;
	sync_fin(id);
}

static void st_newconn(void)
{
	for (int ci = 0; ci < NCONN; ci++) {
		if (C[ci].live && (C[ci].e[0].fd >= 0 || C[ci].e[1].fd >= 0))
			continue;
		new_conn(ci);
		return;
	}
	/* all in use: close one connection's remaining ends, sometimes */
	if (chance(70)) {
		P("newconn: none free");
		return;
	}
	int ci = (int)below(NCONN);
	for (int s = 0; s < 2; s++) {
		int id = ci * 2 + s;
		if (END(id)->fd >= 0) {
			sync_in(id);
			errno = 0;
			int r = close(END(id)->fd);
			P("close(%s) = %s (for a new connection)", en(id), res(r, errno));
			END(id)->fd = -1;
			ep_forget(id);
			OUTD(id)->fin = 1;
			sync_fin(id);
		}
	}
	new_conn(ci);
}

static void st_dup(void)
{
	int id = pick_open();
	if (id < 0) {
		P("dup: no open end");
		return;
	}
	struct end *e = END(id);
	int how = (int)below(3), nfd;
	errno = 0;
	if (how == 0)
		nfd = dup(e->fd);
	else if (how == 1)
		nfd = fcntl(e->fd, F_DUPFD_CLOEXEC, 0);
	else
		nfd = dup3(e->fd, 200 + id * 10 + (e->gen % 10), O_CLOEXEC);
	int de = errno;
	if (nfd < 0) {
		P("dup(%s) = %s", en(id), res(nfd, de));
		return;
	}
	if (nfd == e->fd)
		fatal("dup3 target in use");
	errno = 0;
	int r = close(e->fd);
	P("%s(%s) = fd, close(original) = %s", how == 0 ? "dup" : how == 1 ? "F_DUPFD_CLOEXEC" : "dup3", en(id),
	  res(r, errno));
	e->fd = nfd;
	e->gen++;
	e->reg = 0; /* the registration stays with the old fd number */
}

static void st_nonblock(void)
{
	int id = pick_open();
	if (id < 0) {
		P("nonblock: no open end");
		return;
	}
	set_nb(id, !END(id)->nb, "set");
}

static void st_sockopt(void)
{
	int id = pick_open();
	if (id < 0) {
		P("sockopt: no open end");
		return;
	}
	struct end *e = END(id);
	int k = (int)below(4), v, r, g = -1;
	socklen_t l = sizeof(g);
	errno = 0;
	if (k == 0) { /* SO_RCVBUF: keep what is unread towards it under its new cap */
		static const int vals[] = { 65536, 131072, 262144, 1048576 };
		v = vals[below(4)];
		if ((long)(IND(id)->sent - IND(id)->rd) > v / 4) {
			P("SO_RCVBUF %s: too much unread, no change", en(id));
			return;
		}
		r = setsockopt(e->fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
		int se = errno;
		getsockopt(e->fd, SOL_SOCKET, SO_RCVBUF, &g, &l);
		P("setsockopt(%s, SO_RCVBUF, %d) = %s; get = %d", en(id), v, res(r, se), g);
		if (r == 0)
			e->rcvbuf = v;
	} else if (k == 1) {
		static const int vals[] = { 262144, 524288, 1048576 };
		v = vals[below(3)];
		r = setsockopt(e->fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
		int se = errno;
		getsockopt(e->fd, SOL_SOCKET, SO_SNDBUF, &g, &l);
		P("setsockopt(%s, SO_SNDBUF, %d) = %s; get = %d", en(id), v, res(r, se), g);
		if (r == 0)
			e->sndbuf = v;
	} else if (k == 2) {
		static const int vals[] = { 1, 2, 7, 100, 4096 };
		v = vals[below(5)];
		r = setsockopt(e->fd, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof(v));
		P("setsockopt(%s, SO_RCVLOWAT, %d) = %s", en(id), v, res(r, errno));
		if (r == 0)
			e->lowat = v;
	} else {
		if (urg_out(IND(id))) {
			P("SO_OOBINLINE %s: urgent byte outstanding, no change", en(id));
			return;
		}
		v = !e->oobinline;
		r = setsockopt(e->fd, SOL_SOCKET, SO_OOBINLINE, &v, sizeof(v));
		P("setsockopt(%s, SO_OOBINLINE, %d) = %s", en(id), v, res(r, errno));
		if (r == 0)
			e->oobinline = v;
		e->urgi = 1;
	}
}

static void note_revents(int id, int rev)
{
	if (rev & (POLLERR | POLLHUP))
		END(id)->hup = 1;
}

static void st_poll(void)
{
	struct pollfd p[4];
	int ids[4], k = 0, want = 1 + (int)below(4);
	for (int t = 0; t < 8 && k < want; t++) {
		int id = pick_open(), dupl = 0;
		if (id < 0)
			break;
		for (int i = 0; i < k; i++)
			dupl |= ids[i] == id;
		if (dupl)
			continue;
		ids[k] = id;
		short ev = 0;
		if (chance(70)) ev |= POLLIN;
		if (chance(50)) ev |= POLLOUT;
		if (chance(30)) ev |= POLLRDHUP;
		if (chance(8)) ev |= POLLPRI;
		p[k].fd = END(id)->fd;
		p[k].events = ev;
		p[k].revents = 0;
		k++;
	}
	if (!k) {
		P("poll: no open end");
		return;
	}
	for (int i = 0; i < k; i++) {
		sync_in(ids[i]);
		if (p[i].events & POLLPRI)
			END(ids[i])->urgi = 1;
	}
	int tmo = chance(70) ? 0 : 5 + (int)below(25);
	int pp = chance(30);
	errno = 0;
	int r;
	if (pp) {
		struct timespec ts = { 0, tmo * 1000000L };
		r = ppoll(p, (nfds_t)k, &ts, NULL);
	} else
		r = poll(p, (nfds_t)k, tmo);
	char line[1024];
	int o = snprintf(line, sizeof(line), "%s(", pp ? "ppoll" : "poll");
	for (int i = 0; i < k; i++)
		o += snprintf(line + o, sizeof(line) - o, "%s%s %s", i ? ", " : "", en(ids[i]), pollev(p[i].events));
	o += snprintf(line + o, sizeof(line) - o, "; %d) = %s:", tmo, res(r, errno));
	for (int i = 0; i < k; i++) {
		o += snprintf(line + o, sizeof(line) - o, " %s", pollev(p[i].revents));
		note_revents(ids[i], p[i].revents);
	}
	P("%s", line);
}

static void st_select(void)
{
	fd_set rs, ws, xs;
	FD_ZERO(&rs);
	FD_ZERO(&ws);
	FD_ZERO(&xs);
	int ids[2 * NCONN], k = 0, nfds = 0;
	int in[2 * NCONN][3];
	for (int id = 0; id < 2 * NCONN; id++) {
		if (!C[id / 2].live || END(id)->fd < 0 || !chance(50))
			continue;
		int fd = END(id)->fd;
		in[k][0] = chance(70);
		in[k][1] = chance(50);
		in[k][2] = chance(8);
		if (in[k][0]) FD_SET(fd, &rs);
		if (in[k][1]) FD_SET(fd, &ws);
		if (in[k][2]) {
			FD_SET(fd, &xs);
			END(id)->urgi = 1;
		}
		if (fd >= nfds)
			nfds = fd + 1;
		ids[k++] = id;
	}
	if (!k) {
		P("select: nothing chosen");
		return;
	}
	for (int i = 0; i < k; i++)
		sync_in(ids[i]);
	int tmo = chance(70) ? 0 : 5 + (int)below(25);
	int ps = chance(30);
	errno = 0;
	int r;
	if (ps) {
		struct timespec ts = { 0, tmo * 1000000L };
		r = pselect(nfds, &rs, &ws, &xs, &ts, NULL);
	} else {
		struct timeval tv = { 0, tmo * 1000 };
		r = select(nfds, &rs, &ws, &xs, &tv);
	}
	char line[1024];
	int o = snprintf(line, sizeof(line), "%s(", ps ? "pselect" : "select");
	for (int i = 0; i < k; i++)
		o += snprintf(line + o, sizeof(line) - o, "%s%s %s%s%s", i ? ", " : "", en(ids[i]), in[i][0] ? "r" : "",
			      in[i][1] ? "w" : "", in[i][2] ? "x" : "");
	o += snprintf(line + o, sizeof(line) - o, "; %d) = %s:", tmo, res(r, errno));
	for (int i = 0; i < k; i++) {
		int fd = END(ids[i])->fd;
		o += snprintf(line + o, sizeof(line) - o, " %s%s%s%s", r > 0 && FD_ISSET(fd, &rs) ? "r" : "",
			      r > 0 && FD_ISSET(fd, &ws) ? "w" : "", r > 0 && FD_ISSET(fd, &xs) ? "x" : "",
			      r > 0 && (FD_ISSET(fd, &rs) || FD_ISSET(fd, &ws) || FD_ISSET(fd, &xs)) ? "" : "-");
	}
	P("%s", line);
}

/* ---- epoll: one set for the run */
static int g_ep = -1;

static void ep_forget(int id)
{
	END(id)->reg = 0;
}

static void st_epoll_ctl(void)
{
	if (g_ep < 0) {
		errno = 0;
		g_ep = chance(50) ? epoll_create1(EPOLL_CLOEXEC) : epoll_create(8);
		P("epoll_create = %s", g_ep < 0 ? res(g_ep, errno) : "fd");
		if (g_ep < 0)
			fatal("epoll_create");
	}
	int id = pick_open();
	if (id < 0) {
		P("epoll_ctl: no open end");
		return;
	}
	struct end *e = END(id);
	struct epoll_event ev;
	memset(&ev, 0, sizeof(ev));
	if (chance(70)) ev.events |= EPOLLIN;
	if (chance(50)) ev.events |= EPOLLOUT;
	if (chance(30)) ev.events |= EPOLLRDHUP;
	if (chance(8)) {
		ev.events |= EPOLLPRI;
		e->urgi = 1;
	}
	if (chance(30) && !EXCL('e')) ev.events |= EPOLLET;
	if (chance(15)) ev.events |= EPOLLONESHOT;
	ev.data.u64 = ((uint64_t)id << 8) | (uint64_t)(e->gen & 0xff);
	int op = !e->reg ? (chance(90) ? EPOLL_CTL_ADD : EPOLL_CTL_MOD) : chance(60) ? EPOLL_CTL_MOD : chance(70) ? EPOLL_CTL_DEL : EPOLL_CTL_ADD;
	errno = 0;
	int r = epoll_ctl(g_ep, op, e->fd, &ev);
	P("epoll_ctl(%s, %s, %s) = %s", op == EPOLL_CTL_ADD ? "ADD" : op == EPOLL_CTL_MOD ? "MOD" : "DEL", en(id),
	  op == EPOLL_CTL_DEL ? "-" : epev(ev.events), res(r, errno));
	if (r == 0)
		e->reg = op != EPOLL_CTL_DEL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void st_epoll_wait(void)
{
	if (g_ep < 0) {
		st_epoll_ctl();
		return;
	}
	sync_all();
	struct epoll_event ev[32];
	int tmo = chance(70) ? 0 : 5 + (int)below(25);
	int pw = chance(30);
	errno = 0;
	int r = pw ? epoll_pwait(g_ep, ev, 32, tmo, NULL) : epoll_wait(g_ep, ev, 32, tmo);
	int e = errno;
	/* sorted: the ready list's order is not what is compared */
	uint64_t keys[32];
	for (int i = 0; i < r; i++)
		keys[i] = (ev[i].data.u64 << 32) | ev[i].events;
	if (r > 0)
		qsort(keys, (size_t)r, sizeof(keys[0]), cmp_u64);
	char line[2048];
	int o = snprintf(line, sizeof(line), "%s(%d) = %s:", pw ? "epoll_pwait" : "epoll_wait", tmo, res(r, e));
	for (int i = 0; i < r; i++) {
		uint64_t data = keys[i] >> 32;
		int id = (int)(data >> 8);
		o += snprintf(line + o, sizeof(line) - o, " %s#%d %s", en(id), (int)(data & 0xff), epev((uint32_t)keys[i]));
		if (id < 2 * NCONN && (int)(data & 0xff) == (END(id)->gen & 0xff) && END(id)->fd >= 0 &&
		    ((uint32_t)keys[i] & (EPOLLERR | EPOLLHUP)))
			END(id)->hup = 1;
	}
	P("%s", line);
}

/* ---- signals */

static void st_signal(void)
{
	int sig = chance(50) ? SIGUSR1 : SIGUSR2;
	void (*h)(int) = sig == SIGUSR1 ? on_usr1 : on_usr2;
	int how = (int)below(4), flags = 0;
	if (how == 0) {
		flags = chance(50) ? SA_RESTART : 0;
		set_handler(sig, h, flags);
	} else if (how == 1) {
		signal(sig, h);
	} else if (how == 2) {
		flags = SA_RESTART | SA_NODEFER;
		set_handler(sig, h, flags);
	}
	/* how 3: keep what is installed (the initial handler) */
	int before = sig == SIGUSR1 ? n_usr1 : n_usr2;
	int raiseby = (int)below(3);
	if (raiseby == 0)
		raise(sig);
	else if (raiseby == 1)
		kill(getpid(), sig);
	else {
		union sigval v = { 0 };
		sigqueue(getpid(), sig, v);
	}
	int after = sig == SIGUSR1 ? n_usr1 : n_usr2;
	struct sigaction q;
	sigaction(sig, NULL, &q);
	P("signal %s installed by %s, %s: handler ran %d; sigaction says handler=%s SA_RESTART=%d",
	  sig == SIGUSR1 ? "USR1" : "USR2", how == 0 ? "sigaction" : how == 1 ? "signal" : how == 2 ? "sigaction(NODEFER)" : "(kept)",
	  raiseby == 0 ? "raise" : raiseby == 1 ? "kill" : "sigqueue", after - before,
	  q.sa_handler == h ? "ours" : "other", !!(q.sa_flags & SA_RESTART));
}

/* A blocking call that must wait, ended by SO_RCVTIMEO or by a timer
 * signal (whose handler may send the data that ends it).
 *   0  recv, SO_RCVTIMEO 10-30 ms, nothing comes: EAGAIN
 *   1  recv, timer (5 ms ticks), handler without SA_RESTART: EINTR
 *   2  recv, timer, SA_RESTART handler that sends from the peer: the data
 *   3  recv, timer, SA_RESTART handler, SO_RCVTIMEO 3 s: EINTR
 *   4  recv MSG_WAITALL for more than is there: returns what is there
 *   5  poll/ppoll/select/epoll_wait with nothing ready, 3 s: EINTR */
static void st_intr(void)
{
	int cand[2 * NCONN], k = 0;
	for (int id = 0; id < 2 * NCONN; id++)
		if (C[id / 2].live && END(id)->fd >= 0 && !no_wait(id))
			cand[k++] = id;
	if (!k) {
		P("intr: no end that can wait");
		return;
	}
	int id = cand[below((uint32_t)k)];
	struct end *r = END(id), *w = END(PEER(id));
	struct dir *d = IND(id);
	sync_in(id);
	if (r->hup || no_wait(id) || urg_out(d)) {
		P("intr %s: cannot wait here", en(id));
		return;
	}
	long A = avail(id);
	long L = r->lowat > 1 ? r->lowat : 1;
	int variant;
	if (A == 0) {
		static const int v0[] = { 0, 1, 2, 3, 5 };
		variant = v0[below(5)];
	}
	else if (A < L)
		variant = chance(50) ? 4 : 5;
	else
		variant = 4;
	if (variant == 4 && EXCL('w')) {
		P("intr %s: data there, WAITALL for more left out", en(id));
		return;
	}
	struct dir *od = OUTD(PEER(id));
	long budget = cap(PEER(id)) - (long)(od->sent - od->rd);
	size_t n = 1 + below(4096);
	size_t need = (long)n < L ? n : (size_t)L;
	if (variant == 2 && (w->fd < 0 || w->shut_wr || w->hup || budget < (long)need))
		variant = 1;
	int restart = chance(50) ? SA_RESTART : 0;
	if (variant == 2 || variant == 3)
		restart = SA_RESTART;
	if (variant == 1)
		restart = 0;
	static const char *rn[] = { "without SA_RESTART", "SA_RESTART" };
	const char *rs_ = rn[restart ? 1 : 0];

	int was_nb = r->nb;
	if (was_nb && variant != 5)
		set_nb(id, 0, "intr: for the wait:");
	set_handler(SIGALRM, on_alrm, restart);

	if (variant == 5) {
		int wk = (int)below(4);
		static const char *wn[] = { "poll", "select", "epoll_wait", "ppoll" };
		int rr;
		errno = 0;
		timer_on(5);
		if (wk == 0 || wk == 3) {
			struct pollfd p = { r->fd, POLLIN, 0 };
			if (wk == 0)
				rr = poll(&p, 1, 3000);
			else {
				struct timespec ts = { 3, 0 };
				rr = ppoll(&p, 1, &ts, NULL);
			}
		} else if (wk == 1) {
			fd_set rset;
			FD_ZERO(&rset);
			FD_SET(r->fd, &rset);
			struct timeval tv = { 3, 0 };
			rr = select(r->fd + 1, &rset, NULL, NULL, &tv);
		} else {
			int ep = epoll_create1(EPOLL_CLOEXEC);
			struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 1 }, out;
			epoll_ctl(ep, EPOLL_CTL_ADD, r->fd, &ev);
			rr = epoll_wait(ep, &out, 1, 3000);
			int e2 = errno;
			close(ep);
			errno = e2;
		}
		int e = errno;
		timer_off();
		P("intr %s(%s IN; 3 s) timer, handler %s = %s", wn[wk], en(id), rs_, res(rr, e));
		return;
	}

	int call = (int)below(3); /* recv, read, recvmsg */
	static const char *cn[] = { "recv", "read", "recvmsg" };
	int dcall = call == 2 ? 3 : call;
	int flags = 0;
	long sent = 0;
	char what[160];
	struct rres o;
	if (variant == 0) {
		struct timeval tv = { 0, (10 + below(20)) * 1000 };
		setsockopt(r->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		o = do_recv(id, dcall, 0, n);
		struct timeval z = { 0, 0 };
		setsockopt(r->fd, SOL_SOCKET, SO_RCVTIMEO, &z, sizeof(z));
		snprintf(what, sizeof(what), "SO_RCVTIMEO");
	} else if (variant == 1 || variant == 3) {
		if (variant == 3) {
			struct timeval tv = { 3, 0 };
			setsockopt(r->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		}
		timer_on(5);
		o = do_recv(id, dcall, 0, n);
		timer_off();
		if (variant == 3) {
			struct timeval z = { 0, 0 };
			setsockopt(r->fd, SOL_SOCKET, SO_RCVTIMEO, &z, sizeof(z));
		}
		snprintf(what, sizeof(what), "timer, handler %s%s", rs_, variant == 3 ? ", SO_RCVTIMEO 3 s" : "");
	} else if (variant == 2) {
		size_t kk = need + below((uint32_t)(budget - (long)need + 1));
		if (kk > 4096)
			kk = need > 4096 ? need : 4096;
		fill(rbuf2, dkey(PEER(id)), od->sent, kk);
		alrm_buf = rbuf2;
		alrm_len = kk;
		alrm_sent = -2;
		alrm_errno = 0;
		alrm_fd = w->fd;
		timer_on(5);
		o = do_recv(id, dcall, 0, n);
		timer_off();
		alrm_fd = -1;
		sent = alrm_sent;
		snprintf(what, sizeof(what), "timer, SA_RESTART handler sends %zu from %s = %s", kk, en(PEER(id)),
			 res(sent, alrm_errno));
	} else {
		flags = MSG_WAITALL;
		if (call == 1) {
			call = 0;
			dcall = 0;
		}
		n = (size_t)A + 1 + below(4096);
		timer_on(5);
		o = do_recv(id, dcall, flags, n);
		timer_off();
		snprintf(what, sizeof(what), "for more than is there, timer, handler %s", rs_);
	}
	if (sent > 0)
		od->sent += (uint64_t)sent;
	P("intr %s(%s, %zu%s) %s = %s", cn[call], en(id), n, flags ? ", WAITALL" : "", what, rres_str(&o, flags));
	consumed(id, o.r);
	if (sent > 0)
		sync_after_send(PEER(id));
	if (was_nb != r->nb)
		set_nb(id, was_nb, "intr: back:");
}

/* ---- transfers bigger than the cap, read concurrently */

static int can_stream(int wid)
{
	struct end *w = END(wid), *r = END(PEER(wid));
	struct dir *d = OUTD(wid);
	return w->fd >= 0 && r->fd >= 0 && !w->shut_wr && !w->hup && !r->shut_rd && !r->hup && !urg_out(d) && !d->fin &&
	       !(r->shut_wr && r->shut_rd);
}

static int pick_stream(void)
{
	int ids[2 * NCONN], n = 0;
	for (int id = 0; id < 2 * NCONN; id++)
		if (C[id / 2].live && can_stream(id))
			ids[n++] = id;
	return n ? ids[below((uint32_t)n)] : -1;
}

/* Send n stream bytes out of wid, all of them (blocking call, or a
 * nonblocking loop), returns what was sent. */
static long send_all(int wid, size_t n, int how, int *err)
{
	struct end *w = END(wid);
	struct dir *d = OUTD(wid);
	fill(wbuf, dkey(wid), d->sent, n);
	*err = 0;
	if (!w->nb && how != 2) {
		long r;
		errno = 0;
		if (how == 0)
			r = send(w->fd, wbuf, n, MSG_NOSIGNAL);
		else {
			struct iovec iov[8];
			r = writev(w->fd, iov, split_iov(iov, wbuf, n, 8));
		}
		*err = errno;
		return r;
	}
	size_t done = 0;
	long t0 = now_ms();
	while (done < n) {
		errno = 0;
		long r = send(w->fd, wbuf + done, n - done, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (r > 0) {
			done += (size_t)r;
			continue;
		}
		if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
			struct pollfd p = { w->fd, POLLOUT, 0 };
			poll(&p, 1, 50);
			if (now_ms() - t0 > 10000) {
				*err = ETIMEDOUT;
				break;
			}
			continue;
		}
		*err = errno;
		break;
	}
	return (long)done;
}

/* Read total bytes on rid (blocking WAITALL or a nonblocking loop);
 * returns the count, the checksum in *sum. */
static long recv_all(int rid, size_t total, int how, uint32_t *sum, int *err)
{
	struct end *r = END(rid);
	*sum = FNV0;
	*err = 0;
	size_t got = 0;
	long t0 = now_ms();
	if (!r->nb && how == 0 && total > 0) {
		char *big = total <= (size_t)BIG + CAP0 + 64 ? rbuf : NULL;
		if (big) {
			errno = 0;
			long rr = recv(r->fd, big, total, MSG_WAITALL);
			if (rr < 0) {
				*err = errno;
				return rr;
			}
			*sum = fnv(*sum, big, (size_t)rr);
			return rr;
		}
	}
	while (got < total) {
		size_t m = total - got;
		if (m > 65536)
			m = 65536;
		errno = 0;
		long rr = recv(r->fd, rbuf, m, MSG_DONTWAIT);
		if (rr > 0) {
			*sum = fnv(*sum, rbuf, (size_t)rr);
			got += (size_t)rr;
			continue;
		}
		if (rr == 0) {
			*err = -1; /* end of stream */
			break;
		}
		if (errno == EAGAIN || errno == EINTR) {
			struct pollfd p = { r->fd, POLLIN, 0 };
			poll(&p, 1, 50);
			if (now_ms() - t0 > 10000) {
				*err = ETIMEDOUT;
				break;
			}
			continue;
		}
		*err = errno;
		break;
	}
	return (long)got;
}

static void st_pump(void)
{
	int wid = pick_stream();
	if (wid < 0) {
		P("pump: no connection for it");
		return;
	}
	int rid = PEER(wid);
	struct end *w = END(wid), *r = END(rid);
	struct dir *d = OUTD(wid);
	sync_in(rid);
	size_t n = CAP0 + below(BIG - CAP0) + 1;
	size_t pend = (size_t)(d->sent - d->rd), total = pend + n;
	fill(wbuf, dkey(wid), d->sent, n);
	size_t sent = 0, got = 0;
	uint32_t sum = FNV0;
	long t0 = now_ms();
	int serr = 0, rerr = 0;
	size_t chunk = 1024 + below(65536 - 1024);
	while ((sent < n || got < total) && !serr && !rerr) {
		int progress = 0;
		if (sent < n) {
			size_t m = n - sent < chunk ? n - sent : chunk;
			errno = 0;
			long x = send(w->fd, wbuf + sent, m, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (x > 0) {
				sent += (size_t)x;
				progress = 1;
			} else if (errno != EAGAIN)
				serr = errno ? errno : -1;
		}
		if (got < total) {
			size_t m = total - got < chunk ? total - got : chunk;
			errno = 0;
			long x = recv(r->fd, rbuf, m, MSG_DONTWAIT);
			if (x > 0) {
				sum = fnv(sum, rbuf, (size_t)x);
				got += (size_t)x;
				progress = 1;
			} else if (x == 0)
				rerr = -1;
			else if (errno != EAGAIN)
				rerr = errno;
		}
		if (!progress) {
			struct pollfd p[2] = { { w->fd, sent < n ? POLLOUT : 0, 0 }, { r->fd, POLLIN, 0 } };
			poll(p, 2, 50);
			if (now_ms() - t0 > 10000) {
				rerr = ETIMEDOUT;
				break;
			}
		}
	}
	P("pump %s->%s %zu (+%zu unread): sent %zu received %zu sum %08x%s%s%s%s", en(wid), en(rid), n, pend, sent, got, sum,
	  serr ? " send error " : "", serr ? en_(serr) : "", rerr ? " recv error " : "", rerr ? (rerr < 0 ? "EOF" : en_(rerr)) : "");
	d->sent += sent;
	d->rd += got;
	bump(wid);
	if (serr || rerr)
		sync_after_send(wid);
}

/* ---- fork, vfork, posix_spawn */

struct crep {
	long r;
	int err;
	uint32_t sum;
	long r2;
	int err2;
};

static void child_exit(int how)
{
	if (how == 0)
		exit(0);
	if (how == 1)
		_exit(0);
	signal(SIGTERM, SIG_DFL);
	raise(SIGTERM);
	_exit(9);
}

/* The fork child's report from the pipe, then its end status. */
static int child_report(int rfd, pid_t pid, struct crep *rep)
{
	if (read(rfd, rep, sizeof(*rep)) != sizeof(*rep))
		rep->r = -999;
	close(rfd);
	return reap(pid);
}

static void st_fork(void)
{
	int variant = (int)below(opt_K ? 8 : 7);
	if (opt_F && chance(30))
		variant = 8; /* (draws only with -F: seeds without it are unchanged) */
	int pfd[2];
	if (pipe(pfd))
		fatal("pipe");
	pipe_n++;
	fflush(stdout);
	struct crep rep;
	memset(&rep, 0, sizeof(rep));
	int how = (int)below(3); /* exit, _exit, SIGTERM */
	static const char *hn[] = { "exit", "_exit", "SIGTERM" };
	switch (variant) {
	case 0: { /* child reads once */
		int id = pick_open();
		if (id < 0)
			goto none;
		struct end *r = END(id);
		sync_in(id);
		int call = (int)below(5), flags = 0;
		if (call == 0 || call == 3 || call == 4) {
			if (chance(20)) flags |= MSG_PEEK;
			if (chance(20)) flags |= MSG_WAITALL;
			if (chance(25)) flags |= MSG_DONTWAIT;
		}
		long A = avail(id);
		size_t n = chance(50) ? rsize() : 1 + below((uint32_t)A + 16);
		if (!r->nb && !(flags & MSG_DONTWAIT) && would_block(id, n, flags)) {
			flags &= ~MSG_WAITALL;
			if (A > 0)
				n = 1 + below((uint32_t)A);
			if (would_block(id, n, flags)) {
				flags |= MSG_DONTWAIT;
				if (call == 1) call = 0;
				if (call == 2) call = 3;
			}
		}
		pid_t pid = fork();
		if (pid < 0)
			fatal("fork");
		if (pid == 0) {
			close(pfd[0]);
			struct rres o = do_recv(id, call, flags, n);
			rep.r = o.r;
			rep.err = o.err;
			rep.sum = o.sum;
			if (write(pfd[1], &rep, sizeof(rep)) != sizeof(rep))
				_exit(98);
			child_exit(how);
		}
		close(pfd[1]);
		int st = child_report(pfd[0], pid, &rep);
		P("fork: child %s(%s, %zu, %s) = %s%s%08x", rcall_name[call], en(id), n, msgflags(flags), res(rep.r, rep.err),
		  rep.r > 0 ? " sum " : " ", rep.r > 0 ? rep.sum : 0);
		show_status("fork: child", st);
		if (!(flags & MSG_PEEK))
			consumed(id, rep.r);
		return;
	}
	case 1:
	case 7: { /* child writes once, then exits (7: killed by SIGKILL) */
		int id = pick_open();
		if (id < 0)
			goto none;
		struct end *w = END(id);
		struct dir *d = OUTD(id);
		int fails = w->shut_wr || w->hup;
		size_t n = rsize();
		if (!fails) {
			long budget = cap(id) - (long)(d->sent - d->rd);
			if (budget <= 0)
				goto none;
			if ((long)n > budget)
				n = (size_t)budget;
		}
		int call = (int)below(5), flags = MSG_NOSIGNAL;
		pid_t pid = fork();
		if (pid < 0)
			fatal("fork");
		if (pid == 0) {
			close(pfd[0]);
			signal(SIGPIPE, SIG_IGN);
			int e;
			rep.r = do_send(id, call, flags, n, &e);
			rep.err = e;
			if (write(pfd[1], &rep, sizeof(rep)) != sizeof(rep))
				_exit(98);
			if (variant == 7)
				raise(SIGKILL);
			child_exit(how);
		}
		close(pfd[1]);
		int st = child_report(pfd[0], pid, &rep);
		P("fork: child %s(%s, %zu) = %s", call_name[call], en(id), n, res(rep.r, rep.err));
		show_status(variant == 7 ? "fork: child (SIGKILL)" : "fork: child", st);
		if (rep.r > 0) {
			d->sent += (uint64_t)rep.r;
			sync_after_send(id);
		}
		return;
	}
	case 2: { /* parent sends big, child reads it all */
		int wid = pick_stream();
		if (wid < 0)
			goto none;
		int rid = PEER(wid);
		struct dir *d = OUTD(wid);
		sync_in(rid);
		size_t n = CAP0 + below(BIG - CAP0) + 1;
		size_t pend = (size_t)(d->sent - d->rd), total = pend + n;
		int rhow = (int)below(2), shw = (int)below(3);
		pid_t pid = fork();
		if (pid < 0)
			fatal("fork");
		if (pid == 0) {
			close(pfd[0]);
			int e;
			rep.r = recv_all(rid, total, rhow, &rep.sum, &e);
			rep.err = e;
			if (write(pfd[1], &rep, sizeof(rep)) != sizeof(rep))
				_exit(98);
			child_exit(how);
		}
		close(pfd[1]);
		int se;
		long s = send_all(wid, n, shw, &se);
		int st = child_report(pfd[0], pid, &rep);
		P("fork: parent sends %zu on %s = %s; child reads %zu (+%zu unread) on %s = %ld sum %08x%s%s", n, en(wid),
		  res(s, se), n, pend, en(rid), rep.r, rep.sum, rep.err ? " error " : "",
		  rep.err ? (rep.err < 0 ? "EOF" : en_(rep.err)) : "");
		show_status("fork: child", st);
		if (s > 0)
			d->sent += (uint64_t)s;
		if (rep.r > 0)
			d->rd += (uint64_t)rep.r;
		bump(wid);
		if (s != (long)n || rep.r != (long)total)
			sync_after_send(wid);
		return;
	}
	case 3: { /* child sends big, parent reads it all */
		int wid = pick_stream();
		if (wid < 0)
			goto none;
		int rid = PEER(wid);
		struct dir *d = OUTD(wid);
		sync_in(rid);
		size_t n = CAP0 + below(BIG - CAP0) + 1;
		size_t pend = (size_t)(d->sent - d->rd), total = pend + n;
		int rhow = (int)below(2), shw = (int)below(3);
		pid_t pid = fork();
		if (pid < 0)
			fatal("fork");
		if (pid == 0) {
			close(pfd[0]);
			int e;
			rep.r = send_all(wid, n, shw, &e);
			rep.err = e;
			if (write(pfd[1], &rep, sizeof(rep)) != sizeof(rep))
				_exit(98);
			child_exit(how);
		}
		close(pfd[1]);
		uint32_t sum;
		int re;
		long g = recv_all(rid, total, rhow, &sum, &re);
		int st = child_report(pfd[0], pid, &rep);
		P("fork: child sends %zu on %s = %s; parent reads %zu (+%zu unread) on %s = %ld sum %08x%s%s", n, en(wid),
		  res(rep.r, rep.err), n, pend, en(rid), g, sum, re ? " error " : "", re ? (re < 0 ? "EOF" : en_(re)) : "");
		show_status("fork: child", st);
		if (rep.r > 0)
			d->sent += (uint64_t)rep.r;
		if (g > 0)
			d->rd += (uint64_t)g;
		bump(wid);
		if (rep.r != (long)n || g != (long)total)
			sync_after_send(wid);
		return;
	}
	case 4: { /* child does something to the shared sockets, or nothing */
		int what = (int)below(3), id = pick_open();
		int hw = (int)below(3);
		if (EXCL('r'))
			hw = SHUT_WR;
		pid_t pid = fork();
		if (pid < 0)
			fatal("fork");
		if (pid == 0) {
			close(pfd[0]);
			if (what == 1)
				for (int i = 0; i < 2 * NCONN; i++)
					if (C[i / 2].live && END(i)->fd >= 0)
						close(END(i)->fd);
			if (what == 2 && id >= 0)
				rep.r = shutdown(END(id)->fd, hw);
			rep.err = errno;
			if (write(pfd[1], &rep, sizeof(rep)) != sizeof(rep))
				_exit(98);
			child_exit(how);
		}
		close(pfd[1]);
		int st = child_report(pfd[0], pid, &rep);
		if (what == 2 && id >= 0) {
			static const char *sn[] = { "SHUT_RD", "SHUT_WR", "SHUT_RDWR" };
			P("fork: child shutdown(%s, %s) = %s, %s", en(id), sn[hw], res(rep.r, rep.err), hn[how]);
			if (rep.r == 0) {
				struct end *e = END(id);
				if (hw != SHUT_WR)
					e->shut_rd = 1;
				if (hw != SHUT_RD) {
					e->shut_wr = 1;
					OUTD(id)->fin = 1;
					sync_fin(id);
				}
				bump(id);
			}
		} else
			P("fork: child %s, %s", what == 1 ? "closes every socket" : "does nothing", hn[how]);
		show_status("fork: child", st);
		return;
	}
	case 5: { /* vfork + _exit */
		close(pfd[0]);
		close(pfd[1]);
		int code = (int)below(5);
		pid_t pid = vfork();
		if (pid < 0)
			fatal("vfork");
		if (pid == 0)
			_exit(code);
		show_status("vfork: child", reap(pid));
		return;
	}
	case 8: { /* the child opens its own connection to a listener of ours,
		   * sends, and ends (exit, _exit, or SIGTERM's default action):
		   * every byte its sends accepted must arrive, then the FIN */
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t al = sizeof(a);
		int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (l < 0 || bind(l, (struct sockaddr *)&a, al) || listen(l, 1) || getsockname(l, (struct sockaddr *)&a, &al))
			fatal("listen");
		int nsend = 1 + (int)below(4), cnb = chance(50);
		size_t sz[4];
		for (int i = 0; i < nsend; i++)
			sz[i] = 1 + below(4096);
		pid_t pid = fork();
		if (pid < 0)
			fatal("fork");
		if (pid == 0) {
			close(pfd[0]);
			int c = socket(AF_INET, SOCK_STREAM, 0);
			if (c < 0 || connect(c, (struct sockaddr *)&a, al))
				_exit(97);
			if (cnb)
				fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK);
			/* The report goes first: a call on another descriptor
			 * after the sends would flush them for the library. */
			uint64_t off = 0;
			rep.sum = FNV0;
			for (int i = 0; i < nsend; i++) {
				fill(wbuf, 0x5eed, off, sz[i]);
				rep.sum = fnv(rep.sum, wbuf, sz[i]);
				off += sz[i];
			}
			rep.r = (long)off;
			if (write(pfd[1], &rep, sizeof(rep)) != sizeof(rep))
				_exit(98);
			off = 0;
			for (int i = 0; i < nsend; i++) {
				fill(wbuf, 0x5eed, off, sz[i]);
				long r = send(c, wbuf, sz[i], MSG_NOSIGNAL);
				if (r != (long)sz[i])
					_exit(96); /* a fresh connection takes 16 KiB at once */
				off += sz[i];
			}
			child_exit(how);
		}
		close(pfd[1]);
		int st = child_report(pfd[0], pid, &rep);
		int s2 = accept(l, NULL, NULL);
		close(l);
		long got = 0;
		uint32_t sum = FNV0;
		const char *end = "timeout";
		if (s2 >= 0) {
			long t0 = now_ms();
			for (;;) {
				long r = recv(s2, rbuf, 65536, MSG_DONTWAIT);
				if (r > 0) {
					sum = fnv(sum, rbuf, (size_t)r);
					got += r;
					continue;
				}
				if (r == 0) {
					end = "EOF";
					break;
				}
				if (errno != EAGAIN && errno != EINTR) {
					end = en_(errno);
					break;
				}
				if (now_ms() - t0 > SYNC_MS)
					break;
				struct pollfd p = { s2, POLLIN, 0 };
				poll(&p, 1, 10);
			}
			close(s2);
		}
		P("fork: child connects, %d %s sends, %s: sends %ld sum %08x; parent accepts%s, reads %ld sum %08x, %s", nsend,
		  cnb ? "nonblocking" : "blocking", hn[how], rep.r, rep.sum, s2 < 0 ? " (failed)" : "", got, sum, end);
		show_status("fork: child", st);
		return;
	}
	case 6: { /* posix_spawn of a program */
		close(pfd[0]);
		close(pfd[1]);
		pid_t pid;
		char *argv[] = { "/bin/true", NULL };
		int r = posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ);
		P("posix_spawn(/bin/true) = %d", r);
		if (r == 0)
			show_status("posix_spawn: child", reap(pid));
		return;
	}
	}
none:
	close(pfd[0]);
	close(pfd[1]);
	P("fork: nothing suitable");
}

/* ------------------------------------------------------------ main */

static int parse_keep(const char *s, unsigned char *keep, int steps)
{
	memset(keep, 0, (size_t)steps + 1);
	while (*s) {
		char *e;
		long a = strtol(s, &e, 10), b = a;
		if (e == s)
			return -1;
		if (*e == '-') {
			s = e + 1;
			b = strtol(s, &e, 10);
			if (e == s)
				return -1;
		}
		for (long i = a; i <= b; i++)
			if (i >= 1 && i <= steps)
				keep[i] = 1;
		s = e;
		if (*s == ',')
			s++;
		else if (*s)
			return -1;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: difffuzz [-n STEPS] [-k KEEP] [-u] [-K] [-F] [-x LETTERS] SEED\n"
			"  -n  steps (200)\n"
			"  -k  only these steps, e.g. 3,17,40-45 (each keeps its own draws)\n"
			"  -u  send urgent data to a socket whose program has not asked about it\n"
			"  -K  a fork child may be killed by SIGKILL right after it sent\n"
			"  -F  a fork child may open its own connection to us, send, and end (exit, _exit, SIGTERM)\n"
			"  -x  leave out: e EPOLLET, r shutdown SHUT_RD/RDWR, w a WAITALL for more than is there\n"
			"      ended by a signal\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int steps = 200, opt;
	const char *keeps = NULL;
	while ((opt = getopt(argc, argv, "n:k:uKFx:")) != -1) {
		switch (opt) {
		case 'n': steps = atoi(optarg); break;
		case 'k': keeps = optarg; break;
		case 'u': opt_u = 1; break;
		case 'K': opt_K = 1; break;
		case 'x': opt_x = optarg; break;
		case 'F': opt_F = 1; break;
		default: usage();
		}
	}
	if (optind != argc - 1 || steps < 0 || steps > 100000)
		usage();
	g_seed = strtoull(argv[optind], NULL, 0);
	unsigned char *keep = malloc((size_t)steps + 2);
	if (!keep)
		fatal("malloc");
	if (keeps) {
		if (parse_keep(keeps, keep, steps))
			usage();
	} else
		memset(keep, 1, (size_t)steps + 2);

	size_t bsz = (size_t)BIG + CAP0 + 65536;
	wbuf = malloc(bsz);
	rbuf = malloc(bsz);
	rbuf2 = malloc(bsz);
	if (!wbuf || !rbuf || !rbuf2)
		fatal("malloc");

	/* setup: step 0 */
	g_step = 0;
	rs = mix(g_seed * 0x100000001B3ull);
	printf("difffuzz seed %llu steps %d%s%s%s%s%s%s%s\n", (unsigned long long)g_seed, steps, keeps ? " keep " : "",
	       keeps ? keeps : "", opt_u ? " -u" : "", opt_K ? " -K" : "", opt_F ? " -F" : "", *opt_x ? " -x " : "", opt_x);
	int pipe_how = (int)below(3);
	if (pipe_how == 0)
		signal(SIGPIPE, SIG_IGN);
	else
		set_handler(SIGPIPE, on_pipe, pipe_how == 1 ? SA_RESTART : 0);
	set_handler(SIGUSR1, on_usr1, SA_RESTART);
	set_handler(SIGUSR2, on_usr2, 0);
	set_handler(SIGALRM, on_alrm, 0);
	P("SIGPIPE %s", pipe_how == 0 ? "ignored" : pipe_how == 1 ? "handler SA_RESTART" : "handler");
	int nconn = 1 + (int)below(NCONN);
	for (int ci = 0; ci < nconn; ci++)
		new_conn(ci);

	static const struct {
		void (*fn)(void);
		int w;
	} kinds[] = {
		{ st_send, 22 }, { st_recv, 24 }, { st_query, 5 }, { st_shutdown, 2 }, { st_close, 2 },
		{ st_newconn, 3 }, { st_dup, 2 }, { st_nonblock, 4 }, { st_sockopt, 3 }, { st_poll, 6 },
		{ st_select, 3 }, { st_epoll_ctl, 4 }, { st_epoll_wait, 5 }, { st_signal, 2 }, { st_intr, 4 },
		{ st_pump, 3 }, { st_fork, 5 },
	};
	int wsum = 0;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		wsum += kinds[i].w;
	for (g_step = 1; g_step <= steps; g_step++) {
		if (!keep[g_step])
			continue;
		rs = mix(g_seed ^ mix((uint64_t)g_step * 0x9E3779B97F4A7C15ull));
		int x = (int)below((uint32_t)wsum);
		size_t k = 0;
		while (x >= kinds[k].w) {
			x -= kinds[k].w;
			k++;
		}
		kinds[k].fn();
	}
	/* the end: what each direction carried, by the model */
	g_step = steps + 1;
	sync_all();
	for (int ci = 0; ci < NCONN; ci++) {
		if (!C[ci].live)
			continue;
		for (int s = 0; s < 2; s++) {
			int id = ci * 2 + s;
			struct dir *d = OUTD(id);
			int q = -1;
			if (END(PEER(id))->fd >= 0)
				ioctl(END(PEER(id))->fd, FIONREAD, &q);
			P("end %s->%s sent %llu consumed %llu fionread %d", en(id), en(PEER(id)), (unsigned long long)d->sent,
			  (unsigned long long)d->rd, q);
		}
	}
	P("signals: SIGPIPE %d USR1 %d USR2 %d", (int)n_pipe, (int)n_usr1, (int)n_usr2);
	int ex = (int)below(3);
	if (ex == 0)
		return 0;
	if (ex == 1)
		exit(0);
	_exit(0);
}
