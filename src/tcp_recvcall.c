/* tcp_recvcall.c - the recv family's whole call on a stream socket
 * (rs_tcp_recv_call): a new socket's first reads, which are the kernel's;
 * the reads of the engine's queue (tcp_recv.c rs_tcp_recv), looked at
 * again until the call has its answer; a blocking call's waits, in the
 * ring or in the kernel's own read; MSG_WAITALL and the rest from the
 * kernel of a call that has bytes in hand.
 *
 * The call takes and lets go of the socket's lock itself
 * (rs_esock_enter_served); the functions it calls say whether they run
 * with it held.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "engine_int.h"
#include "sys.h"
#include "tcp_int.h"

/* Blocking reads in a row that each had to wait before the socket's
 * reads go to the kernel (RS_DIRECT_WAITING; rs_tcp_direct_read says
 * when that ends). */
#define RS_WAITS_TO_DIRECT 4

/* Detached with nothing held: from now on the kernel serves it alone
 * (the core decides, with holds_nothing: tcp.c). */
static void maybe_passive(struct rs_tcp *t)
{
	rs_esock_maybe_passive(&t->e);
}

/* Its thread serves one socket per wake-up (ep.c count_wake), and this
 * is the only socket its ring serves; its reads and sends go to the
 * kernel already (RS_DIRECT_ALONE), and the engine holds nothing of it,
 * nor has anything of it in flight.  The engine has nothing to batch,
 * and its bookkeeping of each call costs more than the call (a
 * database's backend, one connection's request-response): the kernel
 * takes the socket back for good (alone_handovers), unless that would
 * renew an edge-triggered or one-shot epoll registration (an edge the
 * kernel path would not make).  (One socket of many, in a quiet spell
 * of a busy server, keeps the engine: reads through the kernel while
 * alone, the engine's receive again when the waits return more.)  The
 * same for a waiting reader (RS_DIRECT_WAITING: its blocking reads are
 * the kernel's) whose last RS_LONE_READS reads each came after exactly
 * one send, the only socket its ring serves (lone_read): a blocking
 * ping-pong peer or request-response client, which makes no epoll wait
 * to count.  t entered. */
#define RS_LONE_READS 64
static int lone(struct rs_tcp *t)
{
	struct rs_ring *r = t->e.owner;
	if (t->e.mode != RS_ES_ARMED || r != rs_ring_tls || r->owned != &t->e || t->e.next || !t->rx_direct)
		return 0;
	if (t->direct_why == RS_DIRECT_ALONE ? !RS_LOAD(r->alone)
					     : t->direct_why != RS_DIRECT_WAITING || t->lone_reads < RS_LONE_READS)
		return 0;
	return !t->e.recv_armed && !t->e.closing && t->e.ops->holds_nothing(&t->e) &&
	       !rs_ep_sock_detach_renews(&t->e);
}

static void hand_over(struct rs_sock *s, int fd)
{
	struct rs_tcp *t = rs_tcp_of(rs_esock_enter(s, fd, 0));
	if (!t)
		return;
	int go = lone(t); /* (again: the lock was let go) */
	if (go) {
		/* (an armed socket was counted as accelerated: the reason
		 * is this counter's, not a pass-through one) */
		rs_esock_detach_self(&t->e, RINGSOCK_PT_THREAD);
		rs_stat_add(RS_C_ALONE_HANDOVERS, 1);
	}
	rs_esock_unlock(&t->e);
	if (go && (t = rs_tcp_of(rs_esock_enter(s, fd, 0))) != NULL) {
		maybe_passive(t); /* (detached with nothing in flight: at once) */
		rs_esock_unlock(&t->e);
	}
}

/* Reads go to the kernel and the engine holds nothing of this socket's
 * input (nor an error a fork left shared), nor can a receive of ours
 * still bring some: a blocking read waits in the kernel at once. */
static int kernel_reader(struct rs_tcp *t)
{
	return t->e.mode == RS_ES_ARMED && (t->rx_direct || t->rx_starved) && t->e.owner == rs_ring_tls &&
	       !t->e.recv_armed &&
	       !rs_rxq_held(t) && !t->rx_err && !t->rx_eof && !t->shut_rd && rs_rxq_leftover_empty(t);
}

/* A blocking read got data: was there exactly one send since the last
 * one?  Then the program is a ping-pong client or server, and its next
 * send goes straight to the kernel (see rs_tcp_send). */
static void note_recv(struct rs_sock *s)
{
	RS_STORE(s->pingpong, RS_LOAD(s->tx_run) == 1);
	RS_STORE(s->tx_run, 0);
}

/* A new nonblocking socket's first reads are the kernel's (probation,
 * tcp.c arm), and so is its first send: until the last read of its
 * probation or its second send, it has no engine state.  A connection per
 * request (a request, one response, the close) never enters the engine:
 * no arm, no look for a foreign ring, no epoll registration renewed, as
 * on the kernel path. */
static int before_engine(struct rs_sock *s)
{
	unsigned after = (unsigned)rs_rt.cfg.v[RS_K_ARM_AFTER];
	return s->nonblock && RS_LOAD(s->pre_reads) + 1u < after &&
	       !atomic_load_explicit(&s->eng, memory_order_acquire);
}

/* One read of the call (t entered): from the engine's queue, or, for a
 * blocking call with nothing in hand (kernel_first) when the kernel has
 * all the input, the kernel's read without waiting (-EAGAIN: it waits,
 * in rs_tcp_recv_call). */
static ssize_t read_once(struct rs_tcp *t, struct iov_cur *cur, size_t want, int flags, int kernel_first)
{
	ssize_t r;
	if (kernel_first && kernel_reader(t)) {
		r = -EAGAIN; /* the kernel has it all: it waits, below */
		if (!(flags & MSG_PEEK)) {
			rs_tcp_direct_read(t->e.owner, t, want, 0, 0);
			if (!t->rx_direct) /* (back to the engine's receive) */
				r = rs_tcp_recv(t, cur->v, cur->n, flags);
		}
	} else {
		r = rs_tcp_recv(t, cur->v, cur->n, flags);
		if (r > 0 && !t->rx_direct && rs_ring_tls && t->e.owner == rs_ring_tls &&
		    RS_LOAD(rs_ring_tls->alone) && t->e.mode == RS_ES_ARMED && !(flags & MSG_PEEK))
			/* Its thread serves one socket per wake-up: nothing
			 * for the ring to batch; the kernel's reads and sends
			 * cost less (ep.c count_wake says when this ends). */
			rs_tcp_go_direct(rs_ring_tls, t, RS_DIRECT_ALONE);
	}
	return r;
}

/* What the call keeps across its rounds (rs_tcp_recv_call). */
struct recv_call {
	struct rs_sock *s;
	int fd;
	const struct iovec *iov; /* the caller's */
	int n, flags, waitall;
	size_t want;             /* bytes asked for (all of iov) */
	int64_t deadline;
	struct iov_cur cur;      /* where the next read goes */
	size_t done;             /* bytes in hand (MSG_WAITALL) */
	int stop;                /* the wait ended the call: one more look, then this */
	int waited;              /* this call has had to wait */
	int slept;               /* ... and has waited (in the ring, or on the fd) */
	int counted;             /* ... and was counted in rx_waits */
	int lone;                /* a read found the socket lone: hand it over */
};

/* A waiting reader's read goes to the kernel (kernel_waits, t entered,
 * note_recv made): one more in a row after exactly one send, while its
 * ring serves it alone, or the count starts again; RS_LONE_READS of them
 * hand it to the kernel for good, at the end of this call (lone). */
static void lone_read(struct recv_call *c, struct rs_tcp *t)
{
	struct rs_ring *r = t->e.owner;
	if (t->direct_why == RS_DIRECT_WAITING && RS_LOAD(c->s->pingpong) && r->owned == &t->e && !t->e.next) {
		if (t->lone_reads < RS_LONE_READS)
			t->lone_reads++;
	} else {
		t->lone_reads = 0;
	}
	c->lone = t->lone_reads >= RS_LONE_READS && lone(t);
}

/* The call waits and the kernel has the data (a bulk reader, a socket
 * open in another process too): it waits, with its own timeout and signal
 * rules, after our queued sends have gone.  t entered; returns with it
 * unlocked: 1 when the call ends with *r, 0 to look again (c->done,
 * c->stop and c->cur as the loop keeps them). */
static int kernel_waits(struct recv_call *c, struct rs_tcp *t, ssize_t *r)
{
	if (rs_ring_has_work(t->e.owner)) {
		rs_ring_progress(t->e.owner);
		rs_esock_unlock(&t->e);
		return 0;
	}
	if (!c->done && !c->slept) {
		/* Nothing in hand and no wait of ours yet: the program's own
		 * call is the kernel's, made by the C library (RS_PASS), with
		 * the kernel's waits, MSG_WAITALL, timeout and restarts, and
		 * nothing of ours between its wake-up and the program (a
		 * return through each of our frames after every sleep is
		 * what a ping-pong reader paid).  Counted as if it gets
		 * data (a timeout or a signal counts as one too). */
		note_recv(c->s);
		lone_read(c, t);
		rs_esock_unlock(&t->e);
		rs_stat_add(RS_C_DIRECT, 1);
		*r = RS_PASS;
		return 1;
	}
	rs_esock_unlock(&t->e);
	if (c->done) {
		/* MSG_WAITALL with bytes in hand: a new kernel read
		 * would start from nothing, and a signal with
		 * SA_RESTART would restart it rather than end it
		 * with those bytes, as the one call without us
		 * does.  Wait for input here instead. */
		c->stop = rs_block_on_fd(c->fd, POLLIN, c->deadline, 1);
		c->slept = 1;
		return 0;
	}
	struct msghdr m = { .msg_iov = c->cur.v, .msg_iovlen = (size_t)c->cur.n };
	rs_sig_clear();
	*r = rs_blocking_syscall(SYS_recvmsg, c->fd, (long)&m, c->flags, 0, 0, 0);
	if (*r > 0) {
		note_recv(c->s);
		rs_stat_add(RS_C_DIRECT, 1);
	}
	if (*r > 0 && c->waitall && c->done + (size_t)*r < c->want && rs_short_by_ring(c->deadline) &&
	    !(c->s->urgent && rs_tcp_at_mark(c->fd))) {
		c->done += (size_t)*r;
		if (rs_iov_cur_skip(&c->cur, c->iov, c->n, (size_t)*r) < 0)
			return 1;
		return 0;
	}
	return 1;
}

/* Bytes in hand and the socket handed to the kernel meanwhile: the rest
 * from the kernel, waited for here (c->cur and c->done as the call keeps
 * them).  Returns the call's last result. */
static ssize_t rest_from_kernel(struct recv_call *c)
{
	ssize_t r = RS_PASS;
	while (r == RS_PASS && c->done) {
		/* The rest from the kernel (handed over meanwhile), waited for
		 * here: a blocking kernel read would be restarted by an
		 * SA_RESTART signal, where the one call without us returns
		 * the bytes it has. */
		if (rs_tcp_error_next(c->fd))
			break; /* (the bytes now; the error stays the socket's) */
		struct msghdr m = { .msg_iov = c->cur.v, .msg_iovlen = (size_t)c->cur.n };
		r = rs_syscall(SYS_recvmsg, c->fd, &m, c->flags | MSG_DONTWAIT);
		if (r > 0 && c->done + (size_t)r < c->want && !(c->s->urgent && rs_tcp_at_mark(c->fd))) {
			c->done += (size_t)r;
			if (rs_iov_cur_skip(&c->cur, c->iov, c->n, (size_t)r) < 0)
				break;
			r = RS_PASS;
			continue;
		}
		if (r == -EAGAIN) {
			int e = rs_block_on_fd(c->fd, POLLIN, c->deadline, 1);
			r = e ? e : RS_PASS;
		}
	}
	return r;
}

/* A blocking call found nothing to read: it waits (counted once per call
 * in rx_waits), in the ring, in the kernel, or on the fd while the socket
 * is handed over.  t entered; returns with it unlocked: 1 when the call
 * ends with *r, 0 to look again. */
static int wait_input(struct recv_call *c, struct rs_tcp *t, ssize_t *r)
{
	c->waited = 1;
	if (t->e.mode == RS_ES_ARMED && !t->rx_direct && t->e.owner == rs_ring_tls && !c->counted++ &&
	    ++t->rx_waits >= RS_WAITS_TO_DIRECT) {
		/* Blocking reads that each had to wait, RS_WAITS_TO_DIRECT
		 * calls in a row (a ping-pong reader): the ring's wake-up
		 * path (task work, a completion, a copy out of a ring
		 * buffer) is slower than the kernel's own.  Reads go
		 * straight to the kernel, which waits once our queued
		 * sends are out (kernel_waits); sends stay ours
		 * (rs_tcp_direct_read says when this ends). */
		rs_tcp_go_direct(t->e.owner, t, RS_DIRECT_WAITING);
		rs_esock_unlock(&t->e);
		return 0;
	}
	if (t->e.mode == RS_ES_ARMED && !t->rx_direct) {
		c->stop = rs_block_in_ring(&t->e, c->deadline, c->done != 0);
		c->slept = 1;
		return 0;
	}
	if (t->e.mode == RS_ES_ARMED)
		return kernel_waits(c, t, r);
	/* in hand-over to another thread: look again soon */
	rs_esock_unlock(&t->e);
	c->stop = rs_block_on_fd(c->fd, POLLIN, c->deadline, c->done != 0);
	c->slept = 1;
	return 0;
}

ssize_t rs_tcp_recv_call(struct rs_sock *s, int fd, const struct iovec *iov, int n, int flags)
{
	if (flags & MSG_OOB) {
		rs_sock_urgent(s, fd); /* the kernel's, from now on */
		return RS_PASS;
	}
	if (flags & MSG_ERRQUEUE)
		return RS_PASS; /* the error queue is the kernel's */
	int e = rs_kept_error(s);
	if (e)
		return -e;
	if (rs_sock_kernel_alone(s))
		return RS_PASS; /* (nothing of ours to wait for, or to count) */
	if (before_engine(s)) {
		/* What the thread queued goes first, as before any read of
		 * the kernel's. */
		rs_ring_flush_own_tx();
		long k = rs_sys_recvv(fd, iov, n, flags);
		if (k > 0 && !(flags & MSG_PEEK))
			__atomic_fetch_add(&s->pre_reads, 1, __ATOMIC_RELAXED);
		return k;
	}
	int block = !s->nonblock && !(flags & MSG_DONTWAIT);
	/* MSG_WAITALL on a blocking socket: until the buffer is full, the
	 * stream ends, an error, the timeout or a signal */
	int waitall = block && (flags & MSG_WAITALL) && !(flags & (MSG_PEEK | MSG_TRUNC));
	/* (field by field: an initializer zeroes the whole struct first,
	 * a `rep stos` that cost a third of this function's samples) */
	struct recv_call c;
	c.s = s;
	c.fd = fd;
	c.iov = iov;
	c.n = n;
	c.flags = flags;
	c.waitall = waitall;
	c.want = rs_iov_total(iov, n);
	c.deadline = block ? rs_call_deadline(s, fd, 1) : 0;
	c.cur.v = (struct iovec *)iov;
	c.cur.n = n;
	c.cur.heap = NULL;
	c.done = 0;
	c.stop = c.waited = c.slept = c.counted = c.lone = 0;
	ssize_t r;
	for (;;) {
		struct rs_tcp *t = rs_tcp_of(rs_esock_enter_served(s, fd));
		if (!t) {
			r = RS_PASS;
			break;
		}
		r = read_once(t, &c.cur, c.want, flags, block && !c.stop && !c.done);
		if (r > 0 && !(flags & MSG_PEEK) && t->direct_why == RS_DIRECT_ALONE)
			c.lone = lone(t);
		if (r > 0 && block && !c.waited)
			t->rx_waits = 0; /* it did not wait for this one */
		if (r > 0 && block)
			note_recv(s);
		else if (r > 0 && s->nonblock && !(flags & MSG_PEEK))
			rs_tcp_rr_read(t);
		if (r != -EAGAIN || !block || c.stop) {
			maybe_passive(t);
			rs_esock_unlock(&t->e);
			if (r == -EAGAIN && c.stop)
				r = c.stop;
			if (r > 0 && waitall && c.done + (size_t)r < c.want && !(s->urgent && rs_tcp_at_mark(fd))) {
				c.done += (size_t)r;
				if (rs_iov_cur_skip(&c.cur, iov, n, (size_t)r) < 0)
					break;
				continue;
			}
			break;
		}
		if (wait_input(&c, t, &r))
			break;
	}
	if (r == RS_PASS && c.done)
		r = rest_from_kernel(&c);
	free(c.cur.heap);
	rs_keep_error(s, c.done, r);
	if (c.lone)
		hand_over(s, fd);
	return rs_with_done(c.done, r);
}
