/* engine_uring_raw: the program's own io_uring, made the way liburing 2.2
 * and later make it (io_uring_setup, mmap and io_uring_enter with their own
 * syscall instructions, never through libc), reads and watches sockets the
 * engine would otherwise read ahead on:
 *   - IORING_OP_EPOLL_CTL adds a socket to an epoll set (as libuv does),
 *     and epoll_wait must report the bytes that arrive;
 *   - IORING_OP_RECV reads a socket that has been read through the
 *     kernel often enough to be armed;
 *   - a socket created after the ring and read with MSG_DONTWAIT polls.
 * The library must find the ring among the process's descriptors before
 * it arms a socket (foreign.c), and leave the sockets to the kernel.
 * Each ring wait has a linked timeout as a hang guard only: its expiry is
 * a failure (ECANCELED is printed), never a pass.
 * ENGINE_PASSTHROUGH=uring
 */
#include "../scn.h"
#include <linux/io_uring.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#ifndef IORING_OP_EPOLL_CTL
#define IORING_OP_EPOLL_CTL 29
#endif

#if defined(__x86_64__)
static long raw(long n, long a, long b, long c, long d, long e, long f)
{
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#else
static long raw(long n, long a, long b, long c, long d, long e, long f)
{
	long r = syscall(n, a, b, c, d, e, f); /* (libc's: seen by the library) */
	return r < 0 ? -errno : r;
}
#endif

static struct {
	int fd;
	unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
} ring;

static void ring_make(void)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	long fd = raw(__NR_io_uring_setup, 8, (long)&p, 0, 0, 0, 0);
	if (fd < 0) {
		errno = (int)-fd;
		die("io_uring_setup");
	}
	ring.fd = (int)fd;
	size_t sqsz = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t cqsz = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (cqsz > sqsz)
		sqsz = cqsz;
	long sq = raw(__NR_mmap, 0, (long)sqsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
		      IORING_OFF_SQ_RING);
	long sqes = raw(__NR_mmap, 0, (long)(p.sq_entries * sizeof(struct io_uring_sqe)), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
	if (sq < 0 && sq > -4096)
		die("mmap sq");
	if (sqes < 0 && sqes > -4096)
		die("mmap sqes");
	char *b = (char *)sq; /* (IORING_FEAT_SINGLE_MMAP: one map for both rings) */
	ring.sq_tail = (unsigned *)(b + p.sq_off.tail);
	ring.sq_mask = (unsigned *)(b + p.sq_off.ring_mask);
	ring.sq_array = (unsigned *)(b + p.sq_off.array);
	ring.cq_head = (unsigned *)(b + p.cq_off.head);
	ring.cq_tail = (unsigned *)(b + p.cq_off.tail);
	ring.cq_mask = (unsigned *)(b + p.cq_off.ring_mask);
	ring.cqes = (struct io_uring_cqe *)(b + p.cq_off.cqes);
	ring.sqes = (struct io_uring_sqe *)sqes;
}

static struct io_uring_sqe *sqe_get(void)
{
	unsigned t = *ring.sq_tail;
	unsigned i = t & *ring.sq_mask;
	struct io_uring_sqe *q = &ring.sqes[i];
	memset(q, 0, sizeof(*q));
	ring.sq_array[i] = i;
	__atomic_store_n(ring.sq_tail, t + 1, __ATOMIC_RELEASE);
	return q;
}

static struct __kernel_timespec guard = { .tv_sec = 10 };

/* Submit the request q (with a linked hang guard) and wait for its
 * completion; returns its result. */
static int ring_run(struct io_uring_sqe *q, unsigned long long tag)
{
	q->user_data = tag;
	q->flags |= IOSQE_IO_LINK;
	struct io_uring_sqe *t = sqe_get();
	t->opcode = IORING_OP_LINK_TIMEOUT;
	t->addr = (unsigned long)&guard;
	t->len = 1;
	t->user_data = 0;
	long r = raw(__NR_io_uring_enter, ring.fd, 2, 2, IORING_ENTER_GETEVENTS, 0, 0);
	if (r < 0) {
		errno = (int)-r;
		die("io_uring_enter");
	}
	int res = -1;
	unsigned h = *ring.cq_head;
	while (h != __atomic_load_n(ring.cq_tail, __ATOMIC_ACQUIRE)) {
		struct io_uring_cqe *c = &ring.cqes[h & *ring.cq_mask];
		if (c->user_data == tag)
			res = c->res;
		h++;
	}
	__atomic_store_n(ring.cq_head, h, __ATOMIC_RELEASE);
	return res;
}

static void say_res(const char *label, int res)
{
	if (res < 0)
		say("%s = -1 %s", label, scn_errname(-res));
	else
		say("%s = %d", label, res);
}

/* A few request-response rounds read through the kernel: enough reads for
 * the library to want to arm the socket (RINGSOCK_ARM_AFTER). */
static void rounds(int c, int s)
{
	char buf[64];
	for (int i = 0; i < 6; i++) {
		if (send(c, "ping", 4, 0) != 4)
			die("send");
		struct pollfd p = { .fd = s, .events = POLLIN };
		poll(&p, 1, -1);
		long n = recv(s, buf, sizeof(buf), MSG_DONTWAIT);
		if (n != 4)
			die("round recv");
	}
}

int main(void)
{
#ifdef STDIO_AROUND_ARM
	/* A file the C library opens and closes itself (fopen, fclose: the
	 * close is not a call the library sees), open while the first socket
	 * is armed: the ring made after it gets the file's number back
	 * (engine_uring_after_stdio.c). */
	FILE *f = fopen("/dev/null", "r");
	if (!f)
		die("fopen");
#endif
#if defined(RING_AFTER_ARM) || defined(STDIO_AROUND_ARM)
	/* A socket the engine serves first (read ahead: its receive armed),
	 * then the ring: every later arm must see it, not only a thread's
	 * first (engine_uring_after_arm.c). */
	int c0, s0;
	tcp_pair(&c0, &s0);
	fcntl(s0, F_SETFL, O_NONBLOCK);
	rounds(c0, s0);
	R("send early", send(c0, "early", 5, 0));
	char b0[16];
	struct pollfd p0 = { .fd = s0, .events = POLLIN };
	poll(&p0, 1, -1);
	long r0 = R("recv early", recv(s0, b0, sizeof(b0), 0));
	show("got early", b0, r0);
#endif
#ifdef STDIO_AROUND_ARM
	fclose(f);
#endif
	/* Made first, as an event loop makes its ring at start. */
	ring_make();
	int c, s;
	tcp_pair(&c, &s);
	fcntl(s, F_SETFL, O_NONBLOCK);
	rounds(c, s);

	/* libuv's way: the epoll set is the program's, the registration
	 * the ring's. */
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = s };
	struct io_uring_sqe *q = sqe_get();
	q->opcode = IORING_OP_EPOLL_CTL;
	q->fd = ep;
	q->len = EPOLL_CTL_ADD;
	q->off = (unsigned long)s;
	q->addr = (unsigned long)&ev;
	say_res("ring epoll_ctl ADD", ring_run(q, 1));
	R("send data", send(c, "data", 4, 0));
	struct epoll_event out[4];
	int n = R("epoll_wait", epoll_wait(ep, out, 4, 10000));
	for (int i = 0; i < n; i++)
		say("  event %s%s", out[i].data.fd == s ? "s" : "?", (out[i].events & EPOLLIN) ? " IN" : "");
	char buf[64];
	long r = R("recv", recv(s, buf, sizeof(buf), 0));
	show("got", buf, r);

	/* The ring reads the socket itself. */
	rounds(c, s);
	R("send more", send(c, "more", 4, 0));
	q = sqe_get();
	q->opcode = IORING_OP_RECV;
	q->fd = s;
	q->addr = (unsigned long)buf;
	q->len = sizeof(buf);
	int got = ring_run(q, 2);
	say_res("ring recv", got);
	show("ring got", buf, got);

	/* A socket made after the ring, read with MSG_DONTWAIT between polls;
	 * the ring polls it too. */
	int c2, s2;
	tcp_pair(&c2, &s2);
	rounds(c2, s2);
	R("send late", send(c2, "late", 4, 0));
	q = sqe_get();
	q->opcode = IORING_OP_POLL_ADD;
	q->fd = s2;
	q->poll32_events = POLLIN;
	say_res("ring poll s2", ring_run(q, 3));
	r = R("recv s2", recv(s2, buf, sizeof(buf), MSG_DONTWAIT));
	show("got s2", buf, r);

	/* The other way round: the peer's side reads through the ring while
	 * the program also reads it with recv. */
	R("send c", send(s2, "back", 4, 0));
	q = sqe_get();
	q->opcode = IORING_OP_RECV;
	q->fd = c2;
	q->addr = (unsigned long)buf;
	q->len = sizeof(buf);
	got = ring_run(q, 4);
	say_res("ring recv c2", got);
	show("ring got c2", buf, got);
	return 0;
}
