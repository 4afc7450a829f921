/* udp_recv.c - the receive of a datagram socket on the engine, and the
 * recv family answered from what it took (udp.c has the policy and the
 * socket's lifecycle; udpq.c the delivery, leftovers and errors).
 *
 * One multishot recvmsg on the owner's ring, into the ring's datagram
 * buffers (bufring.c); each completion is copied into the socket's queue
 * (take) and its buffer goes back at once.  The queue is bounded by the
 * socket's SO_RCVBUF (rx_limit): at the bound the receive is cancelled
 * (throttled) until the program reads down to half.  recv, recvfrom,
 * recvmsg, read and recvmmsg answer from the queue without a system call;
 * a blocking one sleeps in the ring; a reader that waits for every
 * datagram is handed to the kernel's own recvmsg (kwait), counted in
 * direct_on and direct_off.
 *
 * Every function here runs with the socket's lock held (rs_esock_enter)
 * unless it says otherwise.
 */
#define _GNU_SOURCE 1 /* (recvmmsg) */
#include <errno.h>
#include <limits.h>
#include <time.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "engine_int.h"
#include "sys.h"
#include "udp_int.h"

/* The bound on what the socket holds (see the top): the kernel's own
 * SO_RCVBUF (what it made of the program's value: doubled, capped by
 * rmem_max unless forced), read again when the program sets it. */
static uint32_t rx_limit(struct rs_udp *u)
{
	size_t lim = (size_t)rs_rt.cfg.v[RS_K_RCVBUF_LIMIT];
	if (lim)
		return lim > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)lim;
	int set = __atomic_load_n(&u->e.sock->rcvbuf, __ATOMIC_RELAXED);
	if (!u->limit || set != u->limit_for) {
		int v = 0;
		socklen_t l = sizeof(v);
		if (u->e.fd < 0 || rs_syscall(SYS_getsockopt, u->e.fd, SOL_SOCKET, SO_RCVBUF, &v, &l) < 0 || v <= 0)
			v = (int)rs_sysctl_field("/proc/sys/net/core/rmem_default", 0, 212992);
		u->limit = (uint32_t)v;
		u->limit_for = set;
	}
	return u->limit;
}

/* ---- the receive ---------------------------------------------------------------- */

void rs_udp_submit_recv(struct rs_ring *r, struct rs_esock *e)
{
	struct rs_udp *u = udp_of(e);
	if (e->recv_armed || u->throttled || u->rx_stop || u->shared || u->kwait || e->closing ||
	    e->mode != RS_ES_ARMED)
		return;
	struct io_uring_sqe *sqe = rs_ring_sqe(r);
	if (!sqe) {
		rs_ring_rearm_add(r, e); /* no room in the SQ: at the next round */
		return;
	}
	u->rmsg.msg_namelen = sizeof(struct sockaddr_in6);
	u->rmsg.msg_controllen = 0;
	io_uring_prep_recvmsg_multishot(sqe, e->fd, &u->rmsg, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = r->ubuf.bgid;
	rs_esock_recv_started(r, e, sqe);
}

/* Queue the datagram in buffer buf (len bytes from the kernel); 1 if the
 * socket's readiness changed. */
static int take(struct rs_ring *r, struct rs_udp *u, void *buf, int len)
{
	struct io_uring_recvmsg_out *o = io_uring_recvmsg_validate(buf, len, &u->rmsg);
	if (!o) {
		rs_warn("udp fd %d: a receive completion too short to parse (%d bytes): dropped", u->e.fd, len);
		rs_stat_add(RS_C_UDP_DROPS, 1);
		return 0;
	}
	uint32_t plen = io_uring_recvmsg_payload_length(o, len, &u->rmsg);
	if (o->flags & MSG_TRUNC) /* (a buffer holds any datagram the kernel delivers) */
		rs_warn("udp fd %d: a datagram of %u bytes was cut to %u", u->e.fd, o->payloadlen, plen);
	uint32_t cost = DGRAM_COST(plen), lim = rx_limit(u);
	struct rs_dgram *d = NULL;
	if (!u->cnt || u->held + cost <= lim)
		d = rs_udpq_dgram_new(u, plen);
	if (!d) {
		/* Over the bound (or out of memory): dropped, as the kernel drops
		 * what overflows its queue; over the bound the receive stops
		 * until read down (with nothing held it goes on: no read would
		 * ever restart it). */
		rs_stat_add(RS_C_UDP_DROPS, 1);
		if (u->cnt && !u->throttled) {
			u->throttled = 1;
			rs_stat_add(RS_C_THROTTLED, 1);
			rs_udp_cancel_recv(r, u);
		}
		return 0;
	}
	d->next = NULL;
	d->len = plen;
	d->namelen = o->namelen;
	memset(&d->name, 0, sizeof(d->name));
	memcpy(&d->name, io_uring_recvmsg_name(o),
	       o->namelen < sizeof(d->name) ? o->namelen : sizeof(d->name));
	memcpy(d->data, io_uring_recvmsg_payload(o, &u->rmsg), plen);
	if (u->tail)
		u->tail->next = d;
	else
		u->head = d;
	u->tail = d;
	RS_STORE(u->cnt, u->cnt + 1);
	RS_STORE(u->held, u->held + cost);
	if (u->held >= lim && !u->throttled) {
		u->throttled = 1;
		rs_stat_add(RS_C_THROTTLED, 1);
		rs_udp_cancel_recv(r, u);
	}
	return 1;
}

int rs_udp_recv_done(struct rs_ring *r, struct rs_udp *u, struct io_uring_cqe *c)
{
	int edge = 0;
	int more = c->flags & IORING_CQE_F_MORE;
	if (!more) {
		u->e.recv_armed = 0;
		r->nrecv--;
		u->e.ops_inflight--;
	}
	if (c->flags & IORING_CQE_F_BUFFER) {
		unsigned bid = c->flags >> IORING_CQE_BUFFER_SHIFT;
		r->ubuf.held++;
		if (c->res > 0)
			edge = take(r, u, rs_buf_addr(&r->ubuf, bid), c->res);
		rs_bufring_put(r, &r->ubuf, bid);
		rs_bufring_flush(&r->ubuf);
	} else if (c->res == -ENOBUFS) {
		rs_stat_add(RS_C_ENOBUFS, 1);
		rs_bufring_grow(r, &r->ubuf); /* (each goes back at once: a full
					       * batch found none free) */
	} else if (c->res < 0 && c->res != -ECANCELED) {
		switch (-c->res) {
		case ECONNREFUSED: case EHOSTUNREACH: case ENETUNREACH: case EHOSTDOWN: case ENETDOWN:
		case EMSGSIZE: case EPROTO: case ETIMEDOUT: case ECONNRESET: case EACCES: case EPERM:
			/* The socket's error (an ICMP error on a connected socket):
			 * the next call reports it; a newer one replaces it, as in
			 * the kernel. */
			RS_STORE(u->rx_err, -c->res);
			edge = 1;
			break;
		default:
			/* Not the socket's (the kernel refused the receive itself):
			 * its reads are the kernel's from now on. */
			rs_warn("udp fd %d: the engine's receive failed (%s): the kernel serves it", u->e.fd,
				strerror(-c->res));
			RS_STORE(u->shared, 1);
			rs_ep_sock_rx_direct(&u->e);
		}
	}
	if (!more)
		rs_ring_rearm_add(r, &u->e); /* (rs_udp_submit_recv says whether: not
					      * throttled, closing, shared...) */
	return edge;
}

/* Read down to half the bound: the receive again. */
static void maybe_unthrottle(struct rs_udp *u)
{
	struct rs_ring *r = u->e.owner;
	if (!u->throttled || !r || u->e.mode != RS_ES_ARMED || u->held > rx_limit(u) / 2)
		return;
	u->throttled = 0;
	rs_ring_rearm_add(r, &u->e);
}

/* ---- reading what is held ------------------------------------------------------ */

/* The socket's next datagram into iov (f: its source and flags), after an
 * error that comes before it; a fork's leftovers come first.  Bytes,
 * -errno, or -EAGAIN when nothing is held. */
static ssize_t take_one(struct rs_udp *u, const struct iovec *iov, int n, int flags, struct rs_dgram_from *f)
{
	int e = rs_udp_take_error(u);
	if (e)
		return -e;
	if ((u->head || u->left) && !u->e.recv_armed && u->e.fd >= 0 &&
	    __atomic_load_n(&u->e.sock->conn_state, __ATOMIC_RELAXED) == RS_CONN_UP) {
		/* No receive of ours sees the socket's errors now (throttled,
		 * leaving, shared): an ICMP error the kernel holds comes before
		 * the datagrams held, as its recvmsg reports it first. */
		int k = 0;
		socklen_t kl = sizeof(k);
		if (rs_syscall(SYS_getsockopt, u->e.fd, SOL_SOCKET, SO_ERROR, &k, &kl) == 0 && k)
			return -k;
	}
	if (u->left) {
		ssize_t r = rs_udpq_left_take(u, iov, n, flags, f);
		if (r != -EAGAIN)
			return r;
	}
	struct rs_dgram *d = u->head;
	if (!d)
		return -EAGAIN;
	ssize_t r = rs_udpq_deliver(iov, n, flags, f, d->data, d->len, &d->name, d->namelen);
	if (!(flags & MSG_PEEK)) {
		u->head = d->next;
		if (!u->head)
			u->tail = NULL;
		RS_STORE(u->cnt, u->cnt - 1);
		RS_STORE(u->held, u->held - DGRAM_COST(d->len));
		rs_udpq_dgram_free(u, d);
		maybe_unthrottle(u);
	}
	return r;
}

/* Detached with nothing held: from now on the kernel serves it alone
 * (the core decides, with holds_nothing: udp.c). */
static void maybe_passive(struct rs_udp *u)
{
	rs_esock_maybe_passive(&u->e);
}

/* A reader that waits for every datagram (blocking reads, four in a row
 * that each had to wait: a ping-pong peer) is woken faster by the
 * kernel's own recvmsg than by the ring (task work, a completion, a copy):
 * its reads go to the kernel, which reports its input, until its reads say
 * otherwise, counted as for TCP (ringsock(7)): four nonblocking reads in a
 * row that find a datagram (it became an event loop's), or every 1024
 * blocking reads (it is given the engine again; four waits send it back).
 * Each time the waits send it back after such a retry, the next retry
 * comes after twice as many reads (up to 32 times: a sink that keeps up
 * with its sender spent a third of its datagrams on the engine's receive,
 * retried every 1024 reads); an end by nonblocking reads starts from 1024
 * again.  Counted in direct_on and direct_off; never decided by timing. */
#define UDP_WAITS_TO_KERNEL 4
#define UDP_KWAIT_BACK 4
#define UDP_KWAIT_RETRY 1024
#define UDP_KWAIT_SHIFT_MAX 5

static void kwait_start(struct rs_ring *r, struct rs_udp *u)
{
	RS_STORE(u->kwait, 1);
	if (u->kw_retried && u->kw_shift < UDP_KWAIT_SHIFT_MAX)
		u->kw_shift++;
	u->kw_retried = 0;
	u->kw_reads = 0;
	u->waits = 0;
	rs_stat_add(RS_C_DIRECT_ON, 1);
	rs_udp_cancel_recv(r, u);
	rs_ep_sock_rx_direct(&u->e);
}

static void kwait_end(struct rs_ring *r, struct rs_udp *u, int retry)
{
	RS_STORE(u->kwait, 0);
	u->kw_retried = (uint8_t)retry;
	if (!retry)
		u->kw_shift = 0;
	u->waits = 0;
	rs_stat_add(RS_C_DIRECT_OFF, 1);
	rs_ep_sock_rx_direct(&u->e);
	rs_ring_rearm_add(r, &u->e);
}

/* One read of the kernel's queue into iov, as recvmsg would return it
 * (f: the source address and msg_flags).  One buffer goes through
 * recvfrom, which has no message header for the kernel to copy in and
 * out: MSG_TRUNC makes it return the datagram's real length, which says
 * whether it was cut. */
static long kernel_read(int fd, const struct iovec *iov, int n, int flags, struct rs_dgram_from *f)
{
	int named = f && f->name && f->namelen;
	long k;
	int mflags = 0;
	if (n == 1) {
		socklen_t nl = named ? *f->namelen : 0;
		long a = named ? (long)f->name : 0, al = named ? (long)&nl : 0;
		k = rs_syscall(SYS_recvfrom, fd, iov->iov_base, iov->iov_len, flags | MSG_TRUNC, a, al);
		if (k >= 0 && (size_t)k > iov->iov_len) {
			mflags = MSG_TRUNC;
			if (!(flags & MSG_TRUNC))
				k = (long)iov->iov_len;
		}
		if (k >= 0 && named)
			*f->namelen = nl;
	} else {
		struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)n };
		if (named) {
			m.msg_name = f->name;
			m.msg_namelen = *f->namelen;
		}
		k = rs_syscall(SYS_recvmsg, fd, &m, flags);
		if (k >= 0 && named)
			*f->namelen = m.msg_namelen;
		mflags = m.msg_flags;
	}
	if (k >= 0 && f)
		f->flags = mflags;
	return k;
}

/* kwait_read's answer for a blocking read: the program's own call goes
 * to the kernel through the C library (RS_PASS from the recv family). */
#define KWAIT_KERNEL_CALL (RS_PASS - 1)

/* A read through the kernel for a waiting reader (lock held; returns
 * unlocked): a nonblocking one is made here.  A blocking one is the
 * program's own call, made by the C library once the lock is let go
 * (KWAIT_KERNEL_CALL): the kernel's call itself, with its own waits,
 * timeouts and restarts, and nothing of ours between the wake-up and the
 * program (a return through each of our frames after every sleep cost
 * the keeping-up sink 1.14x the kernel path's CPU per datagram).  RS_PASS
 * when the reader goes back to the engine. */
static ssize_t kwait_read(struct rs_udp *u, struct rs_ring *r, const struct iovec *iov, int n, int flags,
			  struct rs_dgram_from *f, int block)
{
	if (RS_LOAD(r->txq))
		rs_ring_progress(r); /* this thread's queued sends first: it may read its own */
	if (block) {
		u->waits = 0;
		if (++u->kw_reads < (UDP_KWAIT_RETRY << u->kw_shift)) {
			rs_esock_unlock(&u->e);
			rs_stat_add(RS_C_DIRECT, 1);
			return KWAIT_KERNEL_CALL;
		}
		kwait_end(r, u, 1);
		rs_esock_unlock(&u->e);
		return RS_PASS;
	}
	/* (waits counts nonblocking reads with data in a row here) */
	long k = kernel_read(u->e.fd, iov, n, flags | MSG_DONTWAIT, f);
	if (k < 0)
		u->waits = 0;
	else if (++u->waits >= UDP_KWAIT_BACK)
		kwait_end(r, u, 0);
	rs_esock_unlock(&u->e);
	if (k >= 0)
		rs_stat_add(RS_C_DIRECT, 1);
	return k;
}

/* Another thread's ring still has the socket's receive in flight (a
 * hand-over it has not finished): its owner cancels it the next time it
 * runs, before its receive can run again.  With the owner's lock held:
 *   1: wait for that (the owner sleeps in its ring, where the receive
 *      runs, and was woken to finish the hand-over);
 *   2: its last wait in the ring (rs_ring_sleep: the one enter made
 *      without the lock) completed datagrams nobody has reaped yet; they
 *      left the kernel's queue before anything still in it, so they are
 *      reaped now, into the socket's queue, to be read first;
 *   0: nothing of the owner's can take a datagram before the cancel, and
 *      nothing it took is outside the queue: the kernel's queue is next.
 * (Not waited for: completions of that wait that overflowed the CQ, which
 * only the owner's own next enter hands over; the owner may not enter its
 * ring again for as long as the program likes, and the CQ holds eight
 * times the ring's entries.) */
static int owner_may_take(struct rs_esock *e, struct rs_ring *o)
{
	if (!e->recv_armed || !o)
		return 0;
	/* (acquire: the owner's enter returned before it cleared the flag,
	 * so what that enter completed is visible to the reap) */
	if (__atomic_load_n(&o->sleeping, __ATOMIC_ACQUIRE))
		return 1;
	return rs_ring_reap(o) ? 2 : 0;
}

/* What one call of the recv family keeps across its looks (recv_one). */
struct recv_call {
	struct rs_sock *s;
	int fd;
	const struct iovec *iov;
	int n, flags;
	struct rs_dgram_from *f;
	int batch;        /* a recvmmsg's message (see rs_udp_recvmmsg) */
	int block;
	int64_t deadline; /* SO_RCVTIMEO counts from the first wait, as the
			   * kernel's does (looked up then: a call answered
			   * from the queue reads no clock): -1 until then,
			   * 0 none (CLOCK_MONOTONIC ns) */
	int entered;      /* this call made a system call */
	int waited;       /* ... and had to wait (counted once) */
	int round;        /* looks since the last wait, from 0 */
};

/* Nothing held, and the socket is detached or another thread's ring's.
 * es locked; returns with it unlocked: 1 when the call ends with *r, 0
 * to look again. */
static int other_ring(struct recv_call *c, struct rs_esock *es, ssize_t *r)
{
	struct rs_ring *o = es->owner;
	int may = es->mode == RS_ES_DETACHED ? 0 : owner_may_take(es, o);
	if (may == 2) {
		rs_esock_unlock(es);
		return 0; /* (what the owner's ring completed is queued now) */
	}
	if (es->mode == RS_ES_DETACHED || !may) {
		/* Nothing held, and no receive of ours can take the next
		 * datagram first: the kernel's queue is next. */
		maybe_passive(udp_of(es));
		rs_esock_unlock(es);
		*r = RS_PASS;
		return 1;
	}
	/* The owner is finishing the hand-over: look again soon. */
	rs_esock_unlock(es);
	if (c->deadline < 0)
		c->deadline = rs_call_deadline(c->s, c->fd, 1);
	if (c->deadline && rs_now_ns() >= c->deadline) {
		*r = -EAGAIN;
		return 1;
	}
	rs_sys_nap(50000);
	c->entered = 1;
	return 0;
}

/* Nothing held on this thread's ring, and the socket's reads are the
 * kernel's or about to be (a reader handed to the kernel, a socket
 * leaving the engine).  u locked; returns with it unlocked: 1 when the
 * call ends with *r, 0 to look again. */
static int kernel_reads(struct recv_call *c, struct rs_udp *u, struct rs_ring *o, ssize_t *r)
{
	struct rs_esock *es = &u->e;
	if (u->kwait && es->mode == RS_ES_ARMED && !u->shared && !es->recv_armed) {
		if (c->batch) {
			rs_esock_unlock(es);
			*r = RS_PASS;
			return 1;
		}
		*r = kwait_read(u, o, c->iov, c->n, c->flags, c->f, c->block); /* (returns unlocked) */
		if (*r == KWAIT_KERNEL_CALL)
			*r = RS_PASS;
		else if (*r == RS_PASS)
			return 0; /* back to the engine */
		return 1;
	}
	/* Leaving the engine (another thread, a fork): its receive
	 * ends first, whose last datagrams come before the kernel's. */
	if (!es->recv_armed) {
		rs_esock_unlock(es);
		*r = RS_PASS;
		return 1;
	}
	rs_udp_cancel_recv(o, u);
	rs_ring_wait(o, rs_udp_recv_gone, u, -1);
	rs_esock_unlock(es);
	c->entered = 1;
	return 0;
}

/* Nothing held on this thread's ring, the engine's receive the socket's:
 * the ring's work first, then -EAGAIN or a wait in the ring.  u locked;
 * returns with it unlocked: 1 when the call ends with *r, 0 to look
 * again. */
static int own_ring(struct recv_call *c, struct rs_udp *u, struct rs_ring *o, ssize_t *r)
{
	struct rs_esock *es = &u->e;
	if (c->batch && !u->kwait) {
		/* A reader that takes datagrams in batches gets the
		 * kernel's own: one recvmmsg moves up to its whole vector
		 * for one system call, which the engine's receive (a
		 * completion and a copy per datagram) cannot beat. */
		kwait_start(o, u);
		rs_esock_unlock(es);
		return 0;
	}
	/* (a read that will not wait also sends what this thread queued:
	 * a peer of this thread may be what it reads) */
	if (c->round < 2 &&
	    (c->block ? rs_ring_has_input_work(o) : rs_ring_has_work(o) || rs_ring_stale_look(o))) {
		rs_ring_progress(o); /* completions, and the receive to start */
		rs_esock_unlock(es);
		c->entered = 1;
		return 0;
	}
	if (!c->block) {
		if (!c->entered)
			rs_stat_add(RS_C_CALLS_NOSYS, 1);
		rs_esock_unlock(es);
		*r = -EAGAIN;
		return 1;
	}
	if (!c->waited && !(c->flags & MSG_PEEK)) {
		c->waited = 1;
		if (++u->waits >= UDP_WAITS_TO_KERNEL) {
			kwait_start(o, u);
			rs_esock_unlock(es);
			return 0;
		}
	}
	if (c->deadline < 0)
		c->deadline = rs_call_deadline(c->s, c->fd, 1);
	int st = rs_block_in_ring(es, c->deadline, 0); /* (returns unlocked) */
	if (st) {
		*r = st;
		return 1;
	}
	c->entered = 1;
	c->round = -1;
	return 0;
}

/* batch: a recvmmsg's message (see rs_udp_recvmmsg): with nothing held,
 * the kernel's reads for good, RS_PASS for the kernel's own recvmmsg. */
static ssize_t recv_one(struct rs_sock *s, int fd, const struct iovec *iov, int n, int flags,
			struct rs_dgram_from *f, int batch)
{
	if (flags & (MSG_ERRQUEUE | MSG_OOB))
		return RS_PASS; /* the error queue is the kernel's (MSG_OOB: its EOPNOTSUPP) */
	int e = rs_kept_error(s);
	if (e)
		return -e;
	int block = !s->nonblock && !(flags & MSG_DONTWAIT);
	struct recv_call c = { .s = s, .fd = fd, .iov = iov, .n = n, .flags = flags, .f = f, .batch = batch,
			       .block = block, .deadline = block ? -1 : 0 };
	for (c.round = 0;; c.round++) {
		struct rs_esock *es = rs_esock_enter_served(s, fd);
		if (!es)
			return RS_PASS;
		struct rs_udp *u = udp_of(es);
		u->tx_since_read = 0; /* (udp_send.c queueable) */
		ssize_t r = take_one(u, iov, n, flags, f);
		if (r != -EAGAIN) {
			if (r >= 0 && block && !c.waited && !(flags & MSG_PEEK))
				u->waits = 0; /* it did not wait for this one */
			if (!c.entered)
				rs_stat_add(RS_C_CALLS_NOSYS, 1);
			maybe_passive(u);
			rs_esock_unlock(es);
			return r;
		}
		struct rs_ring *o = es->owner;
		int done;
		if (es->mode == RS_ES_DETACHED || o != rs_ring_tls)
			done = other_ring(&c, es, &r);
		else if (es->mode != RS_ES_ARMED || u->shared || u->kwait)
			done = kernel_reads(&c, u, o, &r);
		else
			done = own_ring(&c, u, o, &r);
		if (done)
			return r;
	}
}

ssize_t rs_udp_recv_call(struct rs_sock *s, int fd, const struct iovec *iov, int n, int flags,
			 struct rs_dgram_from *f)
{
	return recv_one(s, fd, iov, n, flags, f, 0);
}

/* An error a recvmmsg met after its first datagram: the kernel keeps it
 * as the socket's error (sk_err) for the next call, SO_ERROR or poll. */
static void keep_mmsg_error(struct rs_sock *s, int fd, int err)
{
	struct rs_esock *e = rs_esock_enter(s, fd, 0);
	if (e && !rs_esock_passive(e)) {
		RS_STORE(udp_of(e)->rx_err, err);
		rs_ep_sock_changed(e);
	} else {
		rs_keep_error(s, 1, -err); /* (the kernel's socket: the next read) */
	}
	if (e)
		rs_esock_unlock(e);
}

/* recvmmsg: one datagram per message, as the kernel's loop does: the
 * first waits as a recvmsg would, the rest too unless MSG_WAITFORONE
 * (then they do not wait); the timeout is looked at after each datagram.
 * An error after the first datagram ends the call with the count and is
 * kept as the socket's error.  Once the engine holds nothing more for the
 * socket, the kernel's own recvmmsg fills the rest.  RS_PASS: the
 * kernel's call. */
int rs_udp_recvmmsg(struct rs_sock *s, int fd, struct mmsghdr *vec, unsigned vlen, int flags, struct timespec *tmo)
{
	int64_t end = 0, t_ns = rs_timeout_ns(tmo);
	if (t_ns == RS_TMO_INVALID)
		return RS_PASS; /* (the kernel's EINVAL) */
	if (t_ns < 0)
		tmo = NULL; /* (none, or past 146 years: as good as none) */
	else
		end = rs_now_ns() + t_ns;
	unsigned i;
	for (i = 0; i < vlen; i++) {
		struct msghdr *m = &vec[i].msg_hdr;
		struct rs_dgram_from f = { m->msg_name, &m->msg_namelen, 0 };
		if (m->msg_iovlen > IOV_MAX)
			return i ? (int)i : RS_PASS;
		int fl = flags & ~MSG_WAITFORONE;
		if (i && (flags & MSG_WAITFORONE))
			fl |= MSG_DONTWAIT;
		ssize_t r = recv_one(s, fd, m->msg_iov, (int)m->msg_iovlen, fl, m->msg_name ? &f : NULL, vlen > 1);
		if (r == RS_PASS) {
			if (!i)
				return RS_PASS;
			/* the rest from the kernel, with what is left of the time */
			struct timespec left, *lp = NULL;
			if (tmo) {
				int64_t ns = end - rs_now_ns();
				if (ns <= 0)
					break;
				left = rs_ns_timespec(ns);
				lp = &left;
			}
			rs_ring_flush_own_tx(); /* (this thread's queued sends first) */
			long k = rs_blocking_syscall(SYS_recvmmsg, fd, (long)(vec + i), vlen - i, fl, (long)lp, 0);
			if (lp)
				*tmo = left;
			if (k > 0)
				i += (unsigned)k;
			else if (k < 0 && k != -EAGAIN && k != -EINTR)
				rs_keep_error(s, 1, k);
			break;
		}
		if (r < 0) {
			if (!i)
				return (int)r;
			if (r == -EINTR && !s->rcvtimeo_ns)
				r = -512; /* (the kernel keeps ERESTARTSYS itself when a
					   * wait without timeout is interrupted) */
			if (r != -EAGAIN)
				keep_mmsg_error(s, fd, (int)-r);
			break;
		}
		m->msg_controllen = 0;
		m->msg_flags = f.flags;
		vec[i].msg_len = (unsigned)r;
		if (tmo) {
			int64_t left = end - rs_now_ns();
			if (left <= 0) {
				i++;
				tmo->tv_sec = 0;
				tmo->tv_nsec = 0;
				break;
			}
			*tmo = rs_ns_timespec(left);
		}
	}
	return (int)i;
}


int rs_udp_recv_gone(void *arg)
{
	return !((struct rs_esock *)arg)->recv_armed;
}
