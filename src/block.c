/* block.c - the blocking-call machinery of engine sockets.
 *
 * A blocking call served by the engine (a read with nothing held, a send
 * to a full socket) waits in the owner's ring (rs_block_in_ring) or,
 * while the socket is handed over, on its fd in short slices
 * (rs_block_on_fd), until its deadline (SO_RCVTIMEO/SO_SNDTIMEO,
 * rs_call_deadline) or a signal ends it, as the kernel's call would:
 * which handlers ran and whether they restart calls comes from sig.c
 * (rs_wait_result).  A call that moved bytes before an error or a signal
 * returns the bytes (rs_with_done) and keeps an asynchronous error for the
 * next call (rs_keep_error, sockcall.c).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "engine_int.h"
#include "sys.h"

static int64_t timeo_get(int fd, int name)
{
	struct timeval tv = { 0, 0 };
	socklen_t len = sizeof(tv);
	if (rs_syscall(SYS_getsockopt, fd, SOL_SOCKET, name, &tv, &len) != 0)
		return 0;
	return (int64_t)tv.tv_sec * 1000000000 + (int64_t)tv.tv_usec * 1000;
}

/* The deadline of a blocking call from the socket's SO_RCVTIMEO (rx) or
 * SO_SNDTIMEO; 0 when it has none (it waits without limit). */
int64_t rs_call_deadline(struct rs_sock *s, int fd, int rx)
{
	if (!s->timeo_known) {
		s->rcvtimeo_ns = timeo_get(fd, SO_RCVTIMEO);
		s->sndtimeo_ns = timeo_get(fd, SO_SNDTIMEO);
		s->timeo_known = 1;
	}
	int64_t t = rx ? s->rcvtimeo_ns : s->sndtimeo_ns;
	return t ? rs_now_ns() + t : 0;
}

/* After a wait: 0 to look again, or how the call ends (-EAGAIN: its
 * timeout passed; -EINTR: a signal the kernel would not restart it for). */
int rs_wait_result(int e, int64_t deadline, int partial)
{
	unsigned hits = rs_sig_take();
	/* A call that has moved bytes already returns them after any signal
	 * (the kernel's tcp_recvmsg/tcp_sendmsg do), SA_RESTART or not. */
	if (rs_sig_interrupted(hits, e == -EINTR, deadline != 0 || partial))
		return -EINTR;
	if (deadline && rs_now_ns() >= deadline)
		return -EAGAIN;
	return 0;
}

/* Nanoseconds left until deadline (-1: none), or -2 when it has passed. */
static int64_t ns_left(int64_t deadline)
{
	if (!deadline)
		return -1;
	int64_t left = deadline - rs_now_ns();
	return left <= 0 ? -2 : left;
}

/* A blocking call on a socket this thread's ring serves found nothing to
 * do: sleep in the ring until its next completion (data, a drain job's
 * end, another thread writing the ring's eventfd), the deadline or a
 * signal.  The sleep submits what is queued (a request-response client
 * pays one system call per round) and does not hold the lock; which
 * signal handlers ran comes from sig.c.  Called locked, returns unlocked. */
int rs_block_in_ring(struct rs_esock *e, int64_t deadline, int partial)
{
	struct rs_ring *r = e->owner;
	rs_ring_wake_arm(r);
	if (rs_ring_has_completions(r)) {
		rs_ring_catch_up(r);
		rs_esock_unlock(e);
		return 0; /* something happened: look again */
	}
	int64_t ns = ns_left(deadline);
	if (ns == -2) {
		rs_esock_unlock(e);
		return -EAGAIN;
	}
	rs_sig_clear();
	return rs_wait_result(rs_ring_sleep(r, ns, NULL), deadline, partial);
}

/* A socket in hand-over to another thread (or with sends of ours still
 * to finish): wait a little for fd, then look again.  No lock held. */
int rs_block_on_fd(int fd, short ev, int64_t deadline, int partial)
{
	int64_t ns = ns_left(deadline);
	if (ns == -2)
		return -EAGAIN;
	if (ns < 0 || ns > RS_WAIT_SLICE_NS)
		ns = RS_WAIT_SLICE_NS;
	struct pollfd p = { fd, ev, 0 };
	struct timespec ts = rs_ns_timespec(ns);
	rs_sig_clear();
	rs_ring_round_end(rs_ring_tls);
	return rs_wait_result((int)rs_blocking_syscall(SYS_ppoll, (long)&p, 1, (long)&ts, 0, 0, 0), deadline,
			      partial);
}

/* A blocking kernel call on a thread that owns a ring returned a short
 * count with no signal handler run and time left: the kernel cut it for
 * the ring's own task work, which the program must not see.  The caller
 * goes on waiting for the rest, as the call would have without the ring
 * (the stream's end or an error stops the next round). */
int rs_short_by_ring(int64_t deadline)
{
	return !rs_sig_take() && (!deadline || rs_now_ns() < deadline);
}

size_t rs_iov_total(const struct iovec *iov, int n)
{
	size_t total = 0;
	for (int i = 0; i < n; i++)
		total += iov[i].iov_len;
	return total;
}

int rs_iov_cur_skip(struct iov_cur *c, const struct iovec *iov, int n, size_t k)
{
	if (!c->heap) {
		c->heap = malloc((size_t)n * sizeof(*iov));
		if (!c->heap)
			return -ENOMEM;
		memcpy(c->heap, iov, (size_t)n * sizeof(*iov));
		c->v = c->heap;
		c->n = n;
	}
	while (k && c->n) {
		if (k < c->v->iov_len) {
			c->v->iov_base = (char *)c->v->iov_base + k;
			c->v->iov_len -= k;
			return 0;
		}
		k -= c->v->iov_len;
		c->v++;
		c->n--;
	}
	return 0;
}

/* A blocking call's result: bytes done before an error or the end count. */
ssize_t rs_with_done(size_t done, ssize_t r)
{
	if (!done)
		return r;
	return r > 0 ? (ssize_t)done + r : (ssize_t)done;
}
