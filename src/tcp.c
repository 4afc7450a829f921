/* tcp.c - stream sockets on the engine.
 *
 * Receive: one multishot receive per armed socket fills buffers from the
 * owner's buffer ring; completions append segments to the socket's
 * receive queue, and the recv family copies from it without a system
 * call.  Past rx_limit bytes of held buffers the receive is cancelled and
 * the data stays in the kernel (TCP flow control pushes back on the
 * peer) until the application has read half of it.
 *
 * Send: the send family copies into frag slices and queues them; queued
 * bytes go out in one sendmsg per socket (one in flight at a time) at the
 * next wait point, when SEND_BATCH sockets are waiting, or when the
 * socket is closed, shut down or handed over.  Sends never block
 * (MSG_DONTWAIT), so each completes in the io_uring_enter that submits it.
 * A remainder the kernel could not take (its buffer is full) goes to the
 * drain thread (drain.c), which sends it as the peer reads, whatever the
 * owner does meanwhile; the socket takes no new bytes until then.  Errors
 * of a send already accepted are reported on the next call, as the kernel
 * reports a pending socket error.
 *
 * Every function here runs with the socket's lock held (rs_tcp_enter):
 * the owner ring's lock while the socket is owned, its own mutex after.
 */
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <linux/sockios.h>

#include "engine.h"
#include "sys.h"
#include "tcp_int.h"

static pthread_mutex_t socks_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rs_tcp *socks; /* every engine socket, for fork (all_next) */

/* The lock that guards t right now; remembered for rs_tcp_unlock. */
static RS_TLS struct rs_ring *held_ring;

static size_t default_rcvbuf(void)
{
	static size_t cached;
	size_t v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
	if (v)
		return v;
	char buf[64] = { 0 };
	long fd = rs_syscall(SYS_openat, AT_FDCWD, "/proc/sys/net/ipv4/tcp_rmem", O_RDONLY | O_CLOEXEC);
	size_t def = 131072;
	if (fd >= 0) {
		long n = rs_syscall(SYS_read, fd, buf, sizeof(buf) - 1);
		rs_sys_close((int)fd);
		if (n > 0) {
			char *p = buf;
			strtoul(p, &p, 10);
			unsigned long d = strtoul(p, NULL, 10);
			if (d >= 4096)
				def = d;
		}
	}
	__atomic_store_n(&cached, def, __ATOMIC_RELAXED);
	return def;
}

static void count_passthrough(struct rs_sock *s, int reason)
{
	if (s->pt_counted || (reason == RINGSOCK_PT_BLOCKING && s->pt_counted_blocking))
		return;
	s->pt_counted = 1;
	s->pt_reason = reason;
	rs_stat_add(RS_C_PASSTHROUGH + reason, 1);
}

void rs_tcp_passthrough(struct rs_sock *s, int reason)
{
	if (!atomic_load(&s->eng))
		s->no_engine = 1;
	count_passthrough(s, reason);
}

static int tx_idle_cond(void *arg);
static ssize_t send_error(int e, int flags);
static int take_send_error(struct rs_tcp *t);

/* ---- locking ------------------------------------------------------------ */

static void lock_t(struct rs_tcp *t)
{
	for (;;) {
		struct rs_ring *o = __atomic_load_n(&t->owner, __ATOMIC_ACQUIRE);
		if (o) {
			rs_ring_lock(o);
			if (__atomic_load_n(&t->owner, __ATOMIC_ACQUIRE) == o) {
				held_ring = o;
				return;
			}
			rs_ring_unlock(o);
			continue;
		}
		rs_mutex_lock(&t->mu);
		if (!__atomic_load_n(&t->owner, __ATOMIC_ACQUIRE)) {
			held_ring = NULL;
			return;
		}
		rs_mutex_unlock(&t->mu);
	}
}

void rs_tcp_unlock(struct rs_tcp *t)
{
	if (held_ring)
		rs_ring_unlock(held_ring);
	else
		rs_mutex_unlock(&t->mu);
}

/* ---- arming --------------------------------------------------------------- */

static void owned_link(struct rs_ring *r, struct rs_tcp *t)
{
	t->prev = NULL;
	t->next = r->owned;
	if (r->owned)
		r->owned->prev = t;
	r->owned = t;
}

static void owned_unlink(struct rs_ring *r, struct rs_tcp *t)
{
	if (t->prev)
		t->prev->next = t->next;
	else if (r->owned == t)
		r->owned = t->next;
	if (t->next)
		t->next->prev = t->prev;
	t->prev = t->next = NULL;
}

/* Does the kernel take a byte cap on a multishot receive?  Assumed until
 * a capped receive fails with EINVAL (kernels before 6.17 reject the
 * field), then never tried again. */
static int recv_cap_ok = 1;

static void push_detach(struct rs_ring *r, struct rs_tcp *t);
static void cancel_recv(struct rs_ring *r, struct rs_tcp *t);

static void queue_rearm(struct rs_ring *r, struct rs_tcp *t)
{
	if (t->on_rearm)
		return;
	t->on_rearm = 1;
	t->rearm_next = r->rearm;
	r->rearm = t;
}

void rs_tcp_submit_recv(struct rs_ring *r, struct rs_tcp *t)
{
	if (t->recv_armed || t->throttled || t->rx_eof || t->rx_err || t->closing || t->rx_stop ||
	    t->mode != RS_TM_ARMED || t->shut_rd || t->rx_direct)
		return;
	/* The bound on what the engine holds for the socket, as a byte cap
	 * on the receive itself where the kernel takes one (6.17+): it ends
	 * when the cap is reached, so within one io_uring_enter a flooded
	 * socket cannot take more than its share of the buffers. */
	uint32_t held = t->rx_bufs * r->buf.size, cap = 0;
	if (__atomic_load_n(&recv_cap_ok, __ATOMIC_RELAXED) &&
	    !(rs_rt.cfg.v[RS_K_FEATURES_DISABLE] & RS_FEAT_RECV_CAP)) {
		if (held >= t->rx_limit) {
			/* re-armed when the reader has caught up (maybe_unthrottle) */
			t->throttled = 1;
			rs_stat_add(RS_C_THROTTLED, 1);
			return;
		}
		cap = t->rx_limit - held;
	}
	struct io_uring_sqe *sqe = rs_ring_sqe(r);
	if (!sqe) {
		queue_rearm(r, t); /* no room in the SQ: at the next round */
		return;
	}
	io_uring_prep_recv_multishot(sqe, t->fd, NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = r->buf.bgid;
	sqe->file_index = cap; /* (the union's optlen: the byte cap) */
	t->rx_capped = cap != 0;
	io_uring_sqe_set_data64(sqe, RS_UD(t, RS_UD_RECV));
	if (t->rx_starved) {
		RS_STORE(t->rx_starved, 0);
		rs_ep_sock_rx_direct(t); /* the engine's input again */
	}
	t->recv_armed = 1;
	r->nrecv++;
	t->recv_cancel = 0;
	t->ops_inflight++;
	if (rs_fault(RS_FAULT_CANCEL))
		cancel_recv(r, t);
}

static void cancel_recv(struct rs_ring *r, struct rs_tcp *t)
{
	if (!t->recv_armed || t->recv_cancel)
		return;
	struct io_uring_sqe *sqe = rs_ring_sqe(r);
	if (!sqe) {
		/* no room in the SQ: the next round tries again (and a wait
		 * for the receive to end makes rounds) */
		push_detach(r, t);
		return;
	}
	io_uring_prep_cancel64(sqe, RS_UD(t, RS_UD_RECV), 0);
	io_uring_sqe_set_data64(sqe, RS_UD(t, RS_UD_CANCEL));
	t->recv_cancel = 1;
	t->ops_inflight++;
}

/* From now on the kernel reports the socket's input and reads go straight
 * to it; sends stay the engine's.  Data a receive already took is read
 * first. */
static void go_direct(struct rs_ring *r, struct rs_tcp *t)
{
	t->rx_probation = 0; /* for good */
	if (t->rx_direct)
		return;
	RS_STORE(t->rx_direct, 1);
	if (r == rs_ring_tls) {
		cancel_recv(r, t);
	} else {
		/* Another thread's ring (fork, spawn): only its owner touches its
		 * submission queue; it cancels the receive before it next enters
		 * the kernel, where the receive could run. */
		push_detach(r, t);
		uint64_t one = 1;
		rs_sys_write(r->evfd, &one, sizeof(one));
	}
	rs_ep_sock_rx_direct(t);
}

/* A new socket has read RINGSOCK_ARM_AFTER times with data: it lives long
 * enough for the multishot receive to pay off.  It is submitted with the
 * thread's next system call; the kernel stops reporting the input. */
static void end_probation(struct rs_ring *r, struct rs_tcp *t)
{
	t->rx_direct = 0;
	rs_ep_sock_rx_direct(t);
	rs_tcp_submit_recv(r, t);
}

/* What the kernel makes of SO_SNDBUF/SO_RCVBUF v: twice the value, and at
 * least its minimum (4608) when v is zero or negative. */
static uint32_t sockbuf_bytes(int v)
{
	return v > 0 ? (uint32_t)(v < INT_MAX / 2 ? v : INT_MAX / 2) * 2 : 4608;
}

/* Is this record's socket connected?  (No syscall when we saw it.) */
static int connected(struct rs_sock *s, int fd)
{
	if (s->conn_state == RS_CONN_UP)
		return 1;
	if (s->conn_state == RS_CONN_LISTEN)
		return 0;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	if (rs_syscall(SYS_getpeername, fd, &ss, &len) == 0) {
		s->conn_state = RS_CONN_UP;
		return 1;
	}
	return 0;
}

static struct rs_tcp *arm(struct rs_sock *s, int fd)
{
	int refuse = __atomic_load_n(&rs_engine_refuse, __ATOMIC_ACQUIRE);
	if (refuse) {
		rs_tcp_passthrough(s, refuse);
		return NULL;
	}
	if (s->type != SOCK_STREAM) {
		rs_tcp_passthrough(s, RINGSOCK_PT_UDP);
		return NULL;
	}
	if (s->conn_state == RS_CONN_LISTEN) {
		rs_tcp_passthrough(s, RINGSOCK_PT_LISTENER);
		return NULL;
	}
	if (!s->nonblock && rs_rt.cfg.v[RS_K_BLOCKING] == RS_BLOCKING_KERNEL) {
		/* RINGSOCK_BLOCKING=kernel; it may become nonblocking later */
		count_passthrough(s, RINGSOCK_PT_BLOCKING);
		s->pt_counted = 0;
		s->pt_counted_blocking = 1;
		return NULL;
	}
	if (atomic_load(&s->nfds) != 1 || !connected(s, fd))
		return NULL; /* maybe later */
	struct rs_ring *r = rs_ring_get();
	if (!r) {
		/* io_uring refused for this thread (kernel.io_uring_disabled,
		 * seccomp, limits): the kernel serves the socket, and says why */
		rs_tcp_passthrough(s, RINGSOCK_PT_NO_IO_URING);
		return NULL;
	}
	struct rs_tcp *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	pthread_mutex_init(&t->mu, NULL);
	t->fd = fd;
	t->sock = s;
	atomic_fetch_add(&s->refs, 1);
	RS_STORE(t->mode, RS_TM_ARMED);
	size_t lim = (size_t)rs_rt.cfg.v[RS_K_RCVBUF_LIMIT];
	if (!lim)
		lim = s->rcvbuf ? sockbuf_bytes(s->rcvbuf) : default_rcvbuf();
	size_t cap = (size_t)r->buf.count * r->buf.size / 4;
	if (lim > cap)
		lim = cap;
	if (lim < 2 * (size_t)r->buf.size)
		lim = 2 * (size_t)r->buf.size;
	t->rx_limit = lim;
	t->tx_limit = s->sndbuf ? sockbuf_bytes(s->sndbuf) : 262144;
	/* Open before a fork: the other process may read it, so no receive
	 * may take its data in advance; reads go to the kernel. */
	t->rx_direct = s->born_gen != __atomic_load_n(&rs_fork_gen, __ATOMIC_RELAXED);
	/* Shut down before now (through the kernel): after SHUT_RD the
	 * kernel's reads say when the input ends (see rs_tcp_shutdown). */
	t->shut_rd = s->shut_rd;
	t->shut_wr = s->shut_wr;
	if (t->shut_rd)
		t->rx_direct = 1;
	if (!t->rx_direct && s->nonblock && rs_rt.cfg.v[RS_K_ARM_AFTER]) {
		/* New: its first reads go to the kernel (one request and a close
		 * would pay for arming and cancelling a receive for nothing). */
		t->rx_direct = 1;
		t->rx_probation = (uint8_t)rs_rt.cfg.v[RS_K_ARM_AFTER];
	}
	rs_ring_lock(r);
	/* Owned before it is published: a racing thread that finds it locks
	 * this ring and waits for us. */
	__atomic_store_n(&t->owner, r, __ATOMIC_RELEASE);
	struct rs_tcp *expect = NULL;
	if ((refuse = __atomic_load_n(&rs_engine_refuse, __ATOMIC_ACQUIRE)) != 0 ||
	    !atomic_compare_exchange_strong(&s->eng, &expect, t)) {
		/* Lost a race with another thread arming it, or with
		 * rs_engine_refuse_all (which walks the rings under their locks). */
		if (refuse)
			rs_tcp_passthrough(s, refuse);
		rs_ring_unlock(r);
		atomic_fetch_sub(&s->refs, 1);
		pthread_mutex_destroy(&t->mu);
		free(t);
		return NULL;
	}
	owned_link(r, t);
	rs_mutex_lock(&socks_lock);
	t->all_next = socks;
	if (socks)
		socks->all_prev = t;
	socks = t;
	rs_mutex_unlock(&socks_lock);
	held_ring = r;
	s->pt_counted = 1;
	rs_stat_add(RS_C_SOCKETS_ACCELERATED, 1);
	rs_tcp_submit_recv(r, t);
	rs_ep_sock_armed(t);
	return t;
}

/* Off the ring's list of sockets with a drain job; the job goes on, with
 * nobody to tell when it ends. */
static void off_draining(struct rs_ring *r, struct rs_tcp *t)
{
	if (!t->on_draining)
		return;
	for (struct rs_tcp **pp = &r->draining; *pp; pp = &(*pp)->drain_next)
		if (*pp == t) {
			*pp = t->drain_next;
			break;
		}
	t->on_draining = 0;
	rs_drain_unnotify(t->drain);
}

/* Take t off the ring's work lists (before it is freed or leaves the ring). */
static void off_ring_lists(struct rs_ring *r, struct rs_tcp *t)
{
	if (t->on_txq) {
		for (struct rs_tcp **pp = &r->txq; *pp; pp = &(*pp)->txq_next)
			if (*pp == t) {
				*pp = t->txq_next;
				break;
			}
		t->on_txq = 0;
	}
	if (t->on_rearm) {
		for (struct rs_tcp **pp = &r->rearm; *pp; pp = &(*pp)->rearm_next)
			if (*pp == t) {
				*pp = t->rearm_next;
				break;
			}
		t->on_rearm = 0;
	}
	if (t->on_detach) {
		for (struct rs_tcp **pp = &r->detach; *pp; pp = &(*pp)->detach_next)
			if (*pp == t) {
				*pp = t->detach_next;
				break;
			}
		t->on_detach = 0;
	}
	off_draining(r, t);
}

static void free_t(struct rs_tcp *t)
{
	if (rs_unlikely(__atomic_load_n(&rs_dying, __ATOMIC_RELAXED)))
		return; /* no free() now (rs_engine_die_flush) */
	rs_mutex_lock(&socks_lock);
	if (t->all_prev)
		t->all_prev->all_next = t->all_next;
	else if (socks == t)
		socks = t->all_next;
	if (t->all_next)
		t->all_next->all_prev = t->all_prev;
	rs_mutex_unlock(&socks_lock);
	free(t->rx);
	free(t->tx);
	free(t->rxc);
	free(t->txs);
	if (t->drain)
		rs_drain_release(t->drain);
	if (t->leftover)
		munmap(t->leftover, t->leftover_map);
	rs_sock_put(t->sock);
	free(t);
}

/* ---- detaching -------------------------------------------------------------- */

/* Owner side: nothing of t is left on the ring; hand it to pass-through. */
static void finalize_detach(struct rs_ring *r, struct rs_tcp *t)
{
	rs_rxq_to_heap(t);
	rs_frag_cache_drop(&r->frag, t->txc);
	t->txc = NULL;
	off_ring_lists(r, t);
	rs_mutex_lock(&t->mu);
	owned_unlink(r, t);
	RS_STORE(t->mode, RS_TM_DETACHED);
	__atomic_store_n(&t->owner, NULL, __ATOMIC_RELEASE);
	rs_mutex_unlock(&t->mu);
	rs_ep_sock_detached(t);
}

static int detach_done(struct rs_tcp *t)
{
	return !t->recv_armed && !t->send_inflight && !t->tx_cnt && !t->drain;
}

static void maybe_finish(struct rs_ring *r, struct rs_tcp *t)
{
	if (t->mode == RS_TM_DETACHING && detach_done(t) && t->owner == r)
		finalize_detach(r, t);
	if (t->closing && !t->ops_inflight && t->owner == NULL) {
		free_t(t);
	} else if (t->closing && !t->ops_inflight && t->owner == r && !t->recv_armed) {
		rs_frag_cache_drop(&r->frag, t->txc);
		t->txc = NULL;
		off_ring_lists(r, t);
		owned_unlink(r, t);
		__atomic_store_n(&t->owner, NULL, __ATOMIC_RELEASE);
		free_t(t);
	}
}

void rs_tcp_process_detach(struct rs_ring *r, struct rs_tcp *t)
{
	cancel_recv(r, t);
	rs_tcp_submit_tx(r, t);
	maybe_finish(r, t);
}

static void push_detach(struct rs_ring *r, struct rs_tcp *t)
{
	if (!t->on_detach) {
		t->on_detach = 1;
		t->detach_next = r->detach;
		RS_STORE(r->detach, t); /* (the owner looks without the lock) */
	}
}

/* Another thread holds the owner's lock and wants the socket. */
static void detach_remote(struct rs_tcp *t)
{
	struct rs_ring *o = t->owner;
	rs_ring_reap(o);
	if (t->mode == RS_TM_ARMED) {
		RS_STORE(t->mode, RS_TM_DETACHING);
		count_passthrough(t->sock, RINGSOCK_PT_THREAD);
		rs_stat_add(RS_C_DETACHED, 1);
	}
	if (!t->send_inflight && t->tx_cnt)
		rs_tcp_flush_direct(t);
	push_detach(o, t);
	/* Wake the owner if it sleeps in an epoll set or poll with its ring. */
	uint64_t one = 1;
	rs_sys_write(o->evfd, &one, sizeof(one));
}

static int detached_cond(void *arg)
{
	struct rs_tcp *t = arg;
	return t->owner == NULL || t->mode == RS_TM_DETACHED;
}

void rs_tcp_detach_self(struct rs_tcp *t, int reason)
{
	if (t->mode == RS_TM_DETACHED)
		return;
	struct rs_ring *r = t->owner;
	if (t->mode == RS_TM_ARMED) {
		RS_STORE(t->mode, RS_TM_DETACHING);
		count_passthrough(t->sock, reason);
		rs_stat_add(RS_C_DETACHED, 1);
	}
	if (r != rs_ring_tls) {
		detach_remote(t);
		return;
	}
	rs_tcp_process_detach(r, t);
	rs_ring_wait(r, detached_cond, t, -1);
	/* Still hold r's lock; the caller's unlock releases it. */
}

/* Every socket armed on r leaves the engine (r's lock held): the program
 * has a way to reach them that the engine cannot see. */
void rs_tcp_leave_all(struct rs_ring *r, int reason)
{
	for (;;) {
		struct rs_tcp *t = r->owned;
		while (t && (t->mode != RS_TM_ARMED || t->closing))
			t = t->next;
		if (!t)
			return;
		/* (the owner waits here until t is off the ring, so the walk
		 * starts again from the head) */
		rs_tcp_detach_self(t, reason);
	}
}

/* ---- entering ---------------------------------------------------------------- */

struct rs_tcp *rs_tcp_enter(struct rs_sock *s, int fd, int do_arm)
{
	struct rs_tcp *t = atomic_load_explicit(&s->eng, memory_order_acquire);
	if (!t) {
		if (!do_arm || s->no_engine || !rs_engine_on)
			return NULL;
		return arm(s, fd);
	}
	lock_t(t);
	if (held_ring && held_ring != rs_ring_tls && t->mode == RS_TM_ARMED)
		detach_remote(t);
	/* A detached socket may be reached through a dup of the descriptor it
	 * was armed on, which may be closed (and its number reused): the
	 * engine's own calls for it go through the caller's descriptor. */
	if (fd >= 0 && t->fd != fd && t->mode != RS_TM_ARMED && !t->closing)
		t->fd = fd;
	return t;
}

/* Whether t can take a send now, as its readiness says (locks t). */
int rs_tcp_writable(struct rs_tcp *t)
{
	lock_t(t);
	int w = t->mode == RS_TM_ARMED && (rs_tcp_readiness(t) & EPOLLOUT);
	rs_tcp_unlock(t);
	return w;
}

int rs_tcp_passive(struct rs_tcp *t)
{
	return __atomic_load_n(&t->passive, __ATOMIC_ACQUIRE);
}

/* Detached with nothing held: from now on the kernel serves it alone. */
static void maybe_passive(struct rs_tcp *t)
{
	/* (an error a receive of ours took from the kernel is reported
	 * first: the kernel no longer has it) */
	if (t->mode == RS_TM_DETACHED && !rs_rxq_held(t) && !t->tx_cnt && !t->send_inflight && !t->drain &&
	    !t->rx_err && !t->tx_err)
		__atomic_store_n(&t->passive, 1, __ATOMIC_RELEASE);
}

/* The socket's engine state, locked and armed if it can be; NULL when the
 * kernel serves it alone (never armed, or detached and drained). */
static struct rs_tcp *enter_served(struct rs_sock *s, int fd)
{
	struct rs_tcp *t = rs_tcp_enter(s, fd, 1);
	if (t && rs_tcp_passive(t)) {
		rs_tcp_unlock(t);
		return NULL;
	}
	return t;
}

/* ---- blocking calls ------------------------------------------------------- */

/* Reads go to the kernel and the engine holds nothing of this socket's
 * input, nor can a receive of ours still bring some: a blocking read
 * waits in the kernel at once. */
static int kernel_reader(struct rs_tcp *t)
{
	return t->mode == RS_TM_ARMED && (t->rx_direct || t->rx_starved) && t->owner == rs_ring_tls &&
	       !t->recv_armed &&
	       !rs_rxq_held(t) && !t->rx_err && !t->rx_eof && !t->shut_rd;
}

/* The next byte to read is the urgent mark: the kernel ends a read there
 * once it has bytes, MSG_WAITALL or not. */
static int at_mark(int fd)
{
	int k = 0;
	return rs_syscall(SYS_ioctl, fd, SIOCATMARK, &k) == 0 && k;
}

/* A blocking read got data: was there exactly one send since the last
 * one?  Then the program is a ping-pong client or server, and its next
 * send goes straight to the kernel (see rs_tcp_send). */
static void note_recv(struct rs_sock *s)
{
	RS_STORE(s->pingpong, RS_LOAD(s->tx_run) == 1);
	RS_STORE(s->tx_run, 0);
}

ssize_t rs_tcp_recv_call(struct rs_sock *s, int fd, const struct iovec *iov, int n, int flags)
{
	if (flags & MSG_OOB) {
		rs_tcp_urgent(s, fd); /* the kernel's, from now on */
		return RS_PASS;
	}
	if (flags & MSG_ERRQUEUE)
		return RS_PASS; /* the error queue is the kernel's */
	int e = rs_kept_error(s);
	if (e)
		return -e;
	int block = !s->nonblock && !(flags & MSG_DONTWAIT);
	/* MSG_WAITALL on a blocking socket: until the buffer is full, the
	 * stream ends, an error, the timeout or a signal */
	int waitall = block && (flags & MSG_WAITALL) && !(flags & (MSG_PEEK | MSG_TRUNC));
	size_t want = rs_iov_total(iov, n), done = 0;
	struct iov_cur cur = { (struct iovec *)iov, n, NULL };
	int64_t deadline = block ? rs_call_deadline(s, fd, 1) : 0;
	int stop = 0; /* the wait ended the call: one more look, then this */
	ssize_t r;
	for (;;) {
		struct rs_tcp *t = enter_served(s, fd);
		if (!t) {
			r = RS_PASS;
			break;
		}
		if (block && !stop && !done && kernel_reader(t))
			r = -EAGAIN; /* the kernel has it all: it waits, below */
		else
			r = rs_tcp_recv(t, cur.v, cur.n, flags);
		if (r > 0 && block)
			note_recv(s);
		if (r != -EAGAIN || !block || stop) {
			maybe_passive(t);
			rs_tcp_unlock(t);
			if (r == -EAGAIN && stop)
				r = stop;
			if (r > 0 && waitall && done + (size_t)r < want && !(s->urgent && at_mark(fd))) {
				done += (size_t)r;
				if (rs_iov_cur_skip(&cur, iov, n, (size_t)r) < 0)
					break;
				continue;
			}
			break;
		}
		if (t->mode == RS_TM_ARMED && !t->rx_direct && t->owner == rs_ring_tls &&
		    !t->tx_cnt && !t->send_inflight && !t->drain) {
			/* A blocking read that must wait with nothing of ours to
			 * send: the ring has nothing to batch, and its wake-up path
			 * (task work, a completion, a copy out of a ring buffer)
			 * is slower than the kernel's own.  From now on reads go
			 * straight to the kernel, which waits; sends stay ours. */
			go_direct(t->owner, t);
			rs_tcp_unlock(t);
			continue;
		}
		if (t->mode == RS_TM_ARMED && !t->rx_direct) {
			stop = rs_block_in_ring(t, deadline, done != 0);
			continue;
		}
		if (t->mode == RS_TM_ARMED) {
			/* The kernel has the data (a bulk reader, a socket open in
			 * another process too): it waits, with its own timeout and
			 * signal rules, after our queued sends have gone. */
			if (rs_ring_has_work(t->owner)) {
				rs_ring_progress(t->owner);
				rs_tcp_unlock(t);
				continue;
			}
			rs_tcp_unlock(t);
			if (done) {
				/* MSG_WAITALL with bytes in hand: a new kernel read
				 * would start from nothing, and a signal with
				 * SA_RESTART would restart it rather than end it
				 * with those bytes, as the one call without us
				 * does.  Wait for input here instead. */
				stop = rs_block_on_fd(fd, POLLIN, deadline, 1);
				continue;
			}
			struct msghdr m = { .msg_iov = cur.v, .msg_iovlen = (size_t)cur.n };
			rs_sig_clear();
			r = rs_blocking_syscall(SYS_recvmsg, fd, (long)&m, flags, 0, 0, 0);
			if (r > 0)
				note_recv(s);
			if (r > 0 && waitall && done + (size_t)r < want && rs_short_by_ring(deadline) &&
			    !(s->urgent && at_mark(fd))) {
				done += (size_t)r;
				if (rs_iov_cur_skip(&cur, iov, n, (size_t)r) < 0)
					break;
				continue;
			}
			break;
		}
		/* in hand-over to another thread: look again soon */
		rs_tcp_unlock(t);
		stop = rs_block_on_fd(fd, POLLIN, deadline, done != 0);
	}
	while (r == RS_PASS && done) {
		/* The rest from the kernel (handed over meanwhile), waited for
		 * here: a blocking kernel read would be restarted by an
		 * SA_RESTART signal, where the one call without us returns
		 * the bytes it has. */
		struct msghdr m = { .msg_iov = cur.v, .msg_iovlen = (size_t)cur.n };
		r = rs_syscall(SYS_recvmsg, fd, &m, flags | MSG_DONTWAIT);
		if (r > 0 && done + (size_t)r < want && !(s->urgent && at_mark(fd))) {
			done += (size_t)r;
			if (rs_iov_cur_skip(&cur, iov, n, (size_t)r) < 0)
				break;
			r = RS_PASS;
			continue;
		}
		if (r == -EAGAIN) {
			int e = rs_block_on_fd(fd, POLLIN, deadline, 1);
			r = e ? e : RS_PASS;
		}
	}
	free(cur.heap);
	rs_keep_error(s, done, r);
	return rs_with_done(done, r);
}

ssize_t rs_tcp_send_call(struct rs_sock *s, int fd, const struct iovec *iov, int n, int flags)
{
	if (flags & ~(MSG_DONTWAIT | MSG_NOSIGNAL | MSG_MORE)) {
		/* (MSG_OOB...) the kernel's, after the queued bytes; but an
		 * error the engine took from the kernel is this send's */
		rs_tcp_before_kernel(s, fd, -1);
		struct rs_tcp *t = rs_tcp_enter(s, fd, 0);
		int e = 0;
		if (t) {
			rs_rxq_shared_err(t);
			if (!rs_tcp_passive(t) && (t->tx_err || t->rx_err))
				e = take_send_error(t);
			rs_tcp_unlock(t);
		}
		return e ? send_error(e, flags) : RS_PASS;
	}
	int e = rs_kept_error(s);
	if (e)
		return send_error(e, flags);
	/* A blocking send returns when all is accepted, or with what was
	 * when the timeout or a signal ends it. */
	int block = !s->nonblock && !(flags & MSG_DONTWAIT);
	size_t total = rs_iov_total(iov, n), done = 0;
	struct iov_cur cur = { (struct iovec *)iov, n, NULL };
	int64_t deadline = 0, have_deadline = 0;
	int stop = 0;
	ssize_t r;
	for (;;) {
		struct rs_tcp *t = enter_served(s, fd);
		if (!t) {
			r = RS_PASS;
			break;
		}
		rs_rxq_shared_err(t);
		if (t->mode == RS_TM_DETACHED && !t->tx_cnt && !t->drain && !t->rx_err && !t->tx_err) {
			/* A blocking send must not hold the socket's lock. */
			rs_tcp_unlock(t);
			r = RS_PASS;
			break;
		}
		/* after the first bytes, a later failure only ends the call */
		r = rs_tcp_send(t, cur.v, cur.n, done ? flags | MSG_NOSIGNAL : flags);
		if (r > 0 && block && done + (size_t)r < total) {
			rs_tcp_unlock(t);
			done += (size_t)r;
			if (rs_iov_cur_skip(&cur, iov, n, (size_t)r) < 0)
				break;
			continue;
		}
		if (r != -EAGAIN || !block || stop) {
			rs_tcp_unlock(t);
			if (r == -EAGAIN && stop)
				r = stop;
			break;
		}
		if (!have_deadline) {
			deadline = rs_call_deadline(s, fd, 0);
			have_deadline = 1;
		}
		if (t->mode == RS_TM_ARMED && !RS_LOAD(t->kfull)) {
			stop = rs_block_in_ring(t, deadline, done != 0); /* the drain job's end wakes it */
			continue;
		}
		if (t->mode == RS_TM_ARMED && !t->tx_cnt && !t->send_inflight && !t->drain) {
			/* the kernel's buffer is full and nothing of ours is queued:
			 * it waits for room, with its own timeout and signal rules */
			rs_tcp_unlock(t);
			struct msghdr m = { .msg_iov = cur.v, .msg_iovlen = (size_t)cur.n };
			rs_sig_clear();
			r = rs_blocking_syscall(SYS_sendmsg, fd, (long)&m, done ? flags | MSG_NOSIGNAL : flags, 0, 0, 0);
			if (r > 0 && done + (size_t)r < total && rs_short_by_ring(deadline)) {
				done += (size_t)r;
				if (rs_iov_cur_skip(&cur, iov, n, (size_t)r) < 0)
					break;
				continue;
			}
			break;
		}
		rs_tcp_unlock(t);
		stop = rs_block_on_fd(fd, POLLOUT, deadline, done != 0);
	}
	if (r == RS_PASS && done) {
		struct msghdr m = { .msg_iov = cur.v, .msg_iovlen = (size_t)cur.n };
		r = rs_blocking_syscall(SYS_sendmsg, fd, (long)&m, flags | MSG_NOSIGNAL, 0, 0, 0);
	}
	free(cur.heap);
	rs_keep_error(s, done, r);
	return rs_with_done(done, r);
}

void rs_tcp_urgent(struct rs_sock *s, int fd)
{
	s->urgent = 1;
	rs_tcp_before_kernel(s, fd, RINGSOCK_PT_URGENT);
	rs_tcp_passthrough(s, RINGSOCK_PT_URGENT);
}

void rs_tcp_before_kernel(struct rs_sock *s, int fd, int detach_reason)
{
	struct rs_tcp *t = rs_tcp_enter(s, fd, 0);
	if (!t)
		return;
	if (detach_reason >= 0 && t->mode == RS_TM_ARMED)
		rs_tcp_detach_self(t, detach_reason);
	else
		rs_tcp_sync_tx(t);
	rs_tcp_unlock(t);
}

/* ---- receive ---------------------------------------------------------------- */

static void maybe_unthrottle(struct rs_tcp *t)
{
	struct rs_ring *r = t->owner;
	if (!t->throttled || !r || t->mode != RS_TM_ARMED)
		return;
	if ((size_t)t->rx_bufs * r->buf.size > t->rx_limit / 2)
		return;
	t->throttled = 0;
	if (!t->recv_armed)
		queue_rearm(r, t);
}

static int take_error(struct rs_tcp *t)
{
	int e = t->rx_err;
	RS_STORE(t->rx_err, 0);
	t->rx_eof = 1;        /* after a reset the stream reads as ended */
	t->epipe_pending = 1; /* and writes fail with EPIPE */
	return e;
}

/* All the engine held went to a read with room left, and the kernel has
 * the socket's input now (detached, or reads through the kernel with no
 * receive of ours in flight): the read goes on into the kernel's queue,
 * without waiting, as one kernel read would have taken both (MSG_TRUNC:
 * discards the rest of what it asked to).  Returns the bytes added. */
static size_t kernel_rest(struct rs_tcp *t, const struct iovec *iov, int iovcnt, size_t skip, int flags)
{
	if (iovcnt > 8 || t->fd < 0)
		return 0;
	if (t->sock->urgent && at_mark(t->fd))
		return 0; /* one kernel read would have stopped at the mark */
	/* A pending error (a reset) stays the kernel's: one kernel read would
	 * have returned the bytes and left it for the next call, which may be
	 * another process's (a fork child shares the socket).  A read that
	 * copies bytes leaves it pending, so the kernel's queued bytes are
	 * still taken; with none, the read would take the error. */
	struct pollfd p = { t->fd, 0, 0 };
	int inq = 0;
	if (rs_syscall(SYS_poll, &p, 1, 0) == 1 && (p.revents & POLLERR) &&
	    (rs_syscall(SYS_ioctl, t->fd, SIOCINQ, &inq) < 0 || inq <= 0))
		return 0;
	if (!(t->mode == RS_TM_DETACHED ||
	      (t->mode == RS_TM_ARMED && (t->rx_direct || t->rx_starved) && !t->recv_armed)))
		return 0;
	struct iovec v[8];
	int n = 0;
	for (int i = 0; i < iovcnt; i++) {
		if (skip >= iov[i].iov_len) {
			skip -= iov[i].iov_len;
			continue;
		}
		v[n].iov_base = (char *)iov[i].iov_base + skip;
		v[n].iov_len = iov[i].iov_len - skip;
		skip = 0;
		n++;
	}
	struct msghdr m = { .msg_iov = v, .msg_iovlen = (size_t)n };
	long k = rs_syscall(SYS_recvmsg, t->fd, &m, (flags & (MSG_PEEK | MSG_TRUNC)) | MSG_DONTWAIT);
	if (k < 0 && k != -EAGAIN && k != -EINTR && !t->rx_err)
		RS_STORE(t->rx_err, (int)-k); /* the kernel gave it to this read: the next one reports it */
	return k > 0 ? (size_t)k : 0;
}

static int recv_ended_cond(void *arg)
{
	return !((struct rs_tcp *)arg)->recv_armed;
}

/* The socket reads through the kernel from now on, and the cancel of its
 * multishot receive is on the way: what that receive took comes before
 * the kernel's queue, so a read that wants more than the engine holds
 * waits for its last completion (this thread's ring: the cancel completes
 * within the next enter, whatever the peer does), then goes on into the
 * kernel's queue, as one kernel read would (kernel_rest).  Interrupted by
 * a signal, the read returns what there is. */
static void recv_end_wait(struct rs_tcp *t)
{
	cancel_recv(t->owner, t);
	rs_ring_wait(t->owner, recv_ended_cond, t, -1);
}

/* A read found nothing (r: EAGAIN, or 0 at the end): an error a send
 * completion of ours took from the kernel is this read's, after all the
 * input, as the kernel's read would have returned it (see set_tx_err). */
static ssize_t or_tx_error(struct rs_tcp *t, ssize_t r)
{
	if ((r != -EAGAIN && r != 0) || !t->tx_err || t->tx_err_eof)
		return r;
	int e = t->tx_err;
	RS_STORE(t->tx_err, 0);
	t->rx_eof = 1;
	t->epipe_pending = 1;
	return -e;
}

ssize_t rs_tcp_recv(struct rs_tcp *t, const struct iovec *iov, int iovcnt, int flags)
{
	size_t want = rs_iov_total(iov, iovcnt); /* with MSG_TRUNC: bytes to discard */
	int will_block = !t->sock->nonblock && !(flags & MSG_DONTWAIT);
	for (int round = 0;; round++) {
		size_t got = 0;
		if (want == 0 && rs_rxq_held(t))
			return 0; /* like tcp_recvmsg: 0 with data queued, else EAGAIN */
		if (t->owner && t->owner == rs_ring_tls && rs_rxq_held(t) < want) {
			if (t->recv_armed && t->rx_direct)
				recv_end_wait(t);
			else if ((flags & MSG_WAITALL || (will_block && rs_rxq_held(t))) && round == 0 &&
				 rs_ring_has_work(t->owner))
				/* MSG_WAITALL, or a blocking read that would return
				 * the engine's bytes: what is on its way (this
				 * thread's sends, receives the kernel has run) comes
				 * first, as the kernel's read would have found it.
				 * (With nothing held, the wait below sends and
				 * receives in one system call; event loops'
				 * nonblocking reads take what is held: their sends
				 * stay batched.) */
				rs_ring_progress(t->owner);
		}
		size_t held = rs_rxq_held(t);
		if (held)
			got = rs_rxq_copy(t, iov, iovcnt, want, flags);
		if (got && got == held && got < want)
			got += kernel_rest(t, iov, iovcnt, got, flags);
		if (got) {
			if (!(flags & MSG_PEEK))
				maybe_unthrottle(t);
			if (t->leftover && rs_rxq_leftover_empty(t) && !(flags & MSG_PEEK)) {
				munmap(t->leftover, t->leftover_map);
				RS_STORE(t->leftover, NULL);
			}
			rs_stat_add(RS_C_CALLS_NOSYS, 1);
			return (ssize_t)got;
		}
		rs_rxq_shared_err(t);
		if (t->mode != RS_TM_ARMED) {
			/* Pass-through after the leftover: the kernel has the rest.
			 * Never block with the lock held (rs_tcp_recv_call naps). */
			if (t->mode == RS_TM_DETACHED)
				return t->rx_err ? -take_error(t) : RS_PASS;
			int f = flags | MSG_DONTWAIT;
			struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt };
			return rs_syscall(SYS_recvmsg, t->fd, &m, f);
		}
		if (t->rx_err)
			return -take_error(t);
		if (t->rx_eof && !t->recv_armed) {
			/* Past the end the kernel answers again, as it does
			 * without us: after shutdown(SHUT_RD) a peer's new data
			 * is still read, and a reset after the FIN fails the
			 * next read.  (No receive of ours is in flight: the
			 * end ended it.) */
			struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt };
			return or_tx_error(t, rs_syscall(SYS_recvmsg, t->fd, &m, flags | MSG_DONTWAIT));
		}
		if (t->rx_eof)
			return or_tx_error(t, 0);
		struct rs_ring *r = t->owner;
		size_t direct = (size_t)rs_rt.cfg.v[RS_K_DIRECT_THRESHOLD];
		if (direct && want >= direct && r == rs_ring_tls) {
			/* A large read with nothing held: straight from the kernel
			 * into the caller's buffer.  Completed receives must come
			 * first: take what the CQ has (no system call).  Receives not
			 * yet run (DEFER_TASKRUN) have not touched the data. */
			if (round == 0 && io_uring_cq_ready(&r->ring) && rs_ring_reap(r))
				continue;
			/* A bulk reader: two copies and a completion per buffer
			 * cost more than they save. */
			go_direct(r, t);
			struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt };
			long n = rs_syscall(SYS_recvmsg, t->fd, &m, flags | MSG_DONTWAIT);
			if (n == 0 && !(flags & MSG_PEEK))
				t->rx_eof = 1;
			else if (n < 0 && n != -EAGAIN && n != -EINTR)
				t->epipe_pending = 1;
			if (n != -EAGAIN)
				rs_stat_add(RS_C_DIRECT, 1);
			return or_tx_error(t, n);
		}
		if (round < 2 && r == rs_ring_tls &&
		    (will_block ? rs_ring_has_input_work(r) : rs_ring_has_work(r))) {
			/* Completions, and receives to start, first.  A call that
			 * will block leaves queued sends alone to the wait, which
			 * submits them in the system call that waits; an event loop's
			 * EAGAIN sends them now (its responses do not wait for the
			 * rest of its batch). */
			rs_ring_progress(r);
			continue;
		}
		if (t->rx_direct || t->rx_starved) {
			/* small read on a bulk reader, or a new socket's, or one
			 * waiting for receive buffers: still the kernel's data */
			struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt };
			long n = rs_syscall(SYS_recvmsg, t->fd, &m, flags | MSG_DONTWAIT);
			if (n == 0 && want && !(flags & MSG_PEEK))
				t->rx_eof = 1;
			if (n > 0) {
				rs_stat_add(RS_C_DIRECT, 1);
				if (t->rx_probation && !(flags & MSG_PEEK) && --t->rx_probation == 0 &&
				    r == rs_ring_tls && !t->rx_eof && !t->shut_rd)
					end_probation(r, t);
			}
			return or_tx_error(t, n);
		}
		if (!t->recv_armed && !t->throttled)
			rs_tcp_submit_recv(r, t);
		rs_stat_add(RS_C_CALLS_NOSYS, 1);
		return or_tx_error(t, -EAGAIN);
	}
}

/* ---- send ------------------------------------------------------------------- */

/* The kernel's buffer is full and bytes are still queued: the drain
 * thread sends them as the peer reads.  If it cannot (out of memory, no
 * thread), they are written here, waiting for the peer. */
static void drain_handover(struct rs_ring *r, struct rs_tcp *t)
{
	size_t len = t->tx_bytes, off = 0;
	char *buf = __atomic_load_n(&rs_dying, __ATOMIC_RELAXED) ? NULL : malloc(len);
	struct rs_drain_job *j = NULL;
	if (buf) {
		for (uint32_t i = 0; i < t->tx_cnt; i++) {
			struct rs_txseg *g = rs_txq_at(t, i);
			memcpy(buf + off, g->data, g->len);
			off += g->len;
		}
		j = rs_drain_start(t->fd, buf, len, t->closing ? NULL : r);
	}
	if (!j) {
		/* No drain thread (it could not start, or every slot is taken):
		 * the rest goes as a send that waits for room in the kernel,
		 * from this ring, which moves it whenever its thread next waits
		 * for the engine.  A nonblocking call never waits for it. */
		free(buf);
		t->tx_wait = 1;
		if (!t->on_txq) {
			t->on_txq = 1;
			t->txq_next = r->txq;
			r->txq = t;
		}
		return;
	}
	rs_txq_drop_all(t, r);
	t->drain = j;
	if (!t->closing) {
		t->on_draining = 1;
		t->drain_next = r->draining;
		r->draining = t;
	}
}

/* An asynchronous send failed: the kernel's pending error (a reset) went
 * to our completion, where without us the program's next call would have
 * taken it, a read included, unless the peer's FIN came first (a read
 * then returns 0 and leaves the error to the next send). */
static void set_tx_err(struct rs_tcp *t, int e)
{
	if (t->tx_err)
		return;
	RS_STORE(t->tx_err, e);
	t->tx_err_eof = t->rx_eof;
}

/* t's drain job has ended: an error is reported like any send's. */
static void drain_end(struct rs_tcp *t)
{
	int e = rs_drain_error(t->drain);
	if (t->owner)
		off_draining(t->owner, t);
	rs_drain_release(t->drain);
	t->drain = NULL;
	if (e)
		set_tx_err(t, e);
	if (!t->closing)
		rs_ep_sock_changed(t);
}

void rs_tcp_drains_ended(struct rs_ring *r)
{
	struct rs_tcp **pp = &r->draining;
	while (*pp) {
		struct rs_tcp *t = *pp;
		if (!rs_drain_done(t->drain)) {
			pp = &t->drain_next;
			continue;
		}
		*pp = t->drain_next;
		t->on_draining = 0;
		drain_end(t);
		maybe_finish(r, t);
	}
}

static int tx_push(struct rs_tcp *t, char *data, uint32_t len, struct rs_chunk *c)
{
	if (t->tx_cnt) {
		/* Extend the last segment when the slice is contiguous and the
		 * segment is not part of the send in flight. */
		struct rs_txseg *last = rs_txq_at(t, t->tx_cnt - 1);
		if (c && last->chunk == c && last->data + last->len == data &&
		    t->tx_cnt > t->inflight_segs) {
			last->len += len;
			c->refs--; /* one reference per segment */
			return 0;
		}
	}
	if (rs_txq_room(t) < 0)
		return -ENOMEM;
	struct rs_txseg *g = rs_txq_at(t, t->tx_cnt++);
	g->data = data;
	g->len = len;
	g->chunk = c;
	return 0;
}

static void raise_sigpipe(void)
{
	rs_syscall(SYS_tgkill, rs_sys_getpid(), rs_syscall(SYS_gettid, 0), SIGPIPE);
}

/* Return a send error the way the kernel would. */
static ssize_t send_error(int e, int flags)
{
	if (e == EPIPE && !(flags & MSG_NOSIGNAL))
		raise_sigpipe();
	return -e;
}

static void queue_tx(struct rs_ring *r, struct rs_tcp *t)
{
	if (t->on_txq || t->send_inflight)
		return;
	t->on_txq = 1;
	t->txq_next = r->txq;
	r->txq = t;
	if (++r->nr_tx_sqes >= r->send_batch)
		rs_ring_progress(r);
}

/* The error a send reports first: one a send completion of ours took
 * from the kernel, else one a receive took (tx_err or rx_err set). */
static int take_send_error(struct rs_tcp *t)
{
	int e = t->tx_err;
	if (!e)
		return take_error(t);
	RS_STORE(t->tx_err, 0);
	if (e != EPIPE)
		t->epipe_pending = 1;
	return e;
}

ssize_t rs_tcp_send(struct rs_tcp *t, const struct iovec *iov, int iovcnt, int flags)
{
	if (t->drain && rs_drain_done(t->drain))
		drain_end(t);
	rs_rxq_shared_err(t);
	if (t->mode != RS_TM_ARMED) {
		if (t->tx_err || t->rx_err)
			return send_error(take_send_error(t), flags);
		if (t->tx_cnt || t->send_inflight || t->drain) {
			/* The owner still has earlier bytes: they go first. */
			if (t->mode == RS_TM_DETACHING && !t->send_inflight)
				rs_tcp_flush_direct(t);
			if (t->tx_cnt || t->send_inflight || t->drain)
				return -EAGAIN;
		}
		struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt };
		return rs_syscall(SYS_sendmsg, t->fd, &m, flags | MSG_DONTWAIT);
	}
	if (!t->sock->nonblock && t->owner == rs_ring_tls && rs_ring_has_input_work(t->owner)) {
		/* A blocking socket (a thread per connection, mostly) sees what
		 * has happened to it before the send is accepted, as the kernel
		 * would: its receive runs and meets a reset or the peer's end.
		 * Event loops keep batching. */
		rs_ring_progress(t->owner);
	}
	if (t->tx_err || t->rx_err)
		return send_error(take_send_error(t), flags);
	if (t->shut_wr || t->epipe_pending) {
		/* The send fails; the kernel says how: EPIPE, or a reset it
		 * holds (ECONNRESET after SHUT_WR). */
		struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt };
		long k = rs_syscall(SYS_sendmsg, t->fd, &m, flags | MSG_DONTWAIT | MSG_NOSIGNAL);
		return k >= 0 ? k : send_error((int)-k, flags);
	}
	size_t total = rs_iov_total(iov, iovcnt);
	if (total == 0)
		return 0;
	struct rs_ring *r = t->owner;
	if (t->drain || t->tx_bytes >= t->tx_limit) {
		if (rs_ring_has_work(r))
			rs_ring_progress(r);
		if (t->drain || t->tx_bytes >= t->tx_limit)
			return -EAGAIN;
	}
	size_t direct = (size_t)rs_rt.cfg.v[RS_K_DIRECT_THRESHOLD];
	/* A blocking ping-pong socket's one send per round (its reads go to
	 * the kernel): nothing to batch it with, so the kernel's send. */
	struct rs_sock *s = t->sock;
	int pp = !s->nonblock && t->rx_direct && RS_LOAD(s->pingpong) && !RS_LOAD(s->tx_run);
	/* Open before a fork or spawn: the other process may shut it down or
	 * draw its reset, which only a send to the kernel sees at once. */
	int shared = s->born_gen != __atomic_load_n(&rs_fork_gen, __ATOMIC_RELAXED);
	if (!s->nonblock && RS_LOAD(s->tx_run) < 2)
		RS_STORE(s->tx_run, RS_LOAD(s->tx_run) + 1);
	if (!t->tx_cnt && !t->send_inflight &&
	    ((direct && total >= direct) || RS_LOAD(t->kfull) || !t->sent || t->rx_eof || RS_LOAD(t->k_hup) ||
	     pp || shared)) {
		/* A large send with nothing queued: straight into the kernel's
		 * buffer, one copy.  The same while the kernel's buffer was last
		 * seen full: a partial count or EAGAIN, as the kernel says.  And
		 * the socket's first send: it may have been shut down or reset
		 * before the engine saw it, and the kernel says so at once; and
		 * so after the peer's end (FIN), or once the kernel reported
		 * ERR/HUP to a poll, when a reset that only the kernel has seen
		 * fails the send. */
		t->sent = 1;
		struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt };
		long k = rs_syscall(SYS_sendmsg, t->fd, &m, flags | MSG_DONTWAIT | MSG_NOSIGNAL);
		if (k == -EPIPE || k == -ECONNRESET) {
			t->epipe_pending = 1;
			return send_error((int)-k, flags);
		}
		int full = k == -EAGAIN || (k >= 0 && (size_t)k < total);
		RS_STORE(t->kfull, full);
		if (full)
			rs_ep_sock_kfull(t);
		if (k != -EAGAIN)
			rs_stat_add(RS_C_DIRECT, 1);
		return k;
	}
	if (!t->txs && !(t->txs = malloc(sizeof(*t->txs))))
		return -ENOMEM;
	size_t room = t->tx_limit - t->tx_bytes, n = total < room ? total : room;
	size_t done = 0;
	int vi = 0;
	size_t voff = 0;
	while (done < n) {
		size_t want = n - done;
		char *dst;
		struct rs_chunk *c = NULL;
		uint32_t k;
		if (!t->tx_cnt && !t->linear_used && want <= RS_LINEAR && rs_rt.cfg.v[RS_K_LINEAR_FIRST]) {
			dst = t->txs->linear;
			k = (uint32_t)want;
			t->linear_used = 1;
		} else if (rs_rt.cfg.v[RS_K_TX_CACHE] &&
			   (k = want < r->frag.chunk_size ? (uint32_t)want : r->frag.chunk_size,
			    (dst = rs_frag_alloc_cached(&r->frag, &t->txc, k, &c)) != NULL)) {
			/* from the socket's own chunk */
		} else {
			k = want < r->frag.chunk_size ? (uint32_t)want : r->frag.chunk_size;
			dst = rs_frag_alloc(&r->frag, k, &c);
			if (!dst)
				break;
		}
		/* gather k bytes from the iovec */
		size_t got = 0;
		while (got < k) {
			size_t avail = iov[vi].iov_len - voff;
			if (!avail) {
				vi++;
				voff = 0;
				continue;
			}
			size_t m = avail < k - got ? avail : k - got;
			memcpy(dst + got, (char *)iov[vi].iov_base + voff, m);
			got += m;
			voff += m;
		}
		if (tx_push(t, dst, k, c) < 0) {
			if (c)
				rs_frag_release(&r->frag, c);
			else
				t->linear_used = 0;
			break;
		}
		t->tx_bytes += k;
		done += k;
	}
	if (!done)
		return -ENOMEM;
	rs_stat_add(RS_C_CALLS_NOSYS, 1);
	queue_tx(r, t);
	return (ssize_t)done;
}

void rs_tcp_submit_tx(struct rs_ring *r, struct rs_tcp *t)
{
	if (t->send_inflight || !t->tx_cnt || t->fd < 0)
		return;
	struct io_uring_sqe *sqe = rs_ring_sqe(r);
	if (!sqe) {
		if (!t->on_txq) { /* no room in the SQ: at the next round */
			t->on_txq = 1;
			t->txq_next = r->txq;
			r->txq = t;
		}
		return;
	}
	uint32_t k = t->tx_cnt < RS_TX_IOV ? t->tx_cnt : RS_TX_IOV;
	size_t bytes = 0;
	for (uint32_t i = 0; i < k; i++) {
		struct rs_txseg *g = rs_txq_at(t, i);
		t->txs->iov[i].iov_base = g->data;
		t->txs->iov[i].iov_len = g->len;
		bytes += g->len;
	}
	if (rs_fault(RS_FAULT_SHORT_SEND)) {
		k = 1; /* the first few bytes only: the kernel took less */
		if (t->txs->iov[0].iov_len > 7)
			t->txs->iov[0].iov_len = 7;
		bytes = t->txs->iov[0].iov_len;
	}
	/* MSG_DONTWAIT: it completes at submission, with what the kernel's
	 * buffer took (never polled, never queued to io-wq).  One segment is
	 * a plain send (no message header for the kernel to copy). */
	int how = t->tx_wait ? MSG_WAITALL : MSG_DONTWAIT; /* (tx_wait: see drain_handover) */
	if (k == 1) {
		io_uring_prep_send(sqe, t->fd, t->txs->iov[0].iov_base, bytes, MSG_NOSIGNAL | how);
	} else {
		memset(&t->txs->msg, 0, sizeof(t->txs->msg));
		t->txs->msg.msg_iov = t->txs->iov;
		t->txs->msg.msg_iovlen = k;
		io_uring_prep_sendmsg(sqe, t->fd, &t->txs->msg, MSG_NOSIGNAL | how);
	}
	t->inflight_segs = k;
	t->inflight_bytes = bytes;
	io_uring_sqe_set_data64(sqe, RS_UD(t, RS_UD_SEND));
	if (!t->tx_wait)
		r->sq_sends++; /* completes in the enter that submits it */
	t->send_inflight = 1;
	t->ops_inflight++;
	rs_stat_add(RS_C_SENDS_SUBMITTED, 1);
}

/* Write the queue with system calls (another thread takes over, exit, fork
 * in another thread).  Nothing may be in flight.  Returns bytes left. */
size_t rs_tcp_flush_direct(struct rs_tcp *t)
{
	struct rs_ring *r = t->owner;
	while (t->tx_cnt && !t->send_inflight && r) {
		struct rs_txseg *g = rs_txq_at(t, 0);
		long n = rs_syscall(SYS_sendto, t->fd, g->data, g->len, MSG_NOSIGNAL, NULL, 0);
		if (n == -EAGAIN) {
			struct pollfd p = { t->fd, POLLOUT, 0 };
			rs_syscall(SYS_poll, &p, 1, 1000);
			continue;
		}
		if (n == -EINTR)
			continue;
		if (n < 0) {
			set_tx_err(t, (int)-n);
			rs_txq_drop_all(t, r);
			break;
		}
		rs_txq_consume(t, (size_t)n, r);
	}
	return t->tx_bytes;
}

/* The watchdog (another thread, r's lock held): r's owner is blocked
 * outside the engine with sends queued.  Write them now without blocking;
 * what the kernel cannot take goes to the drain thread. */
void rs_tcp_flush_queued(struct rs_ring *r)
{
	/* (a socket drain_handover cannot hand over goes back on r->txq for
	 * its owner: walk the list as it was) */
	struct rs_tcp *list = r->txq;
	RS_STORE(r->txq, NULL); /* (the owner looks without the lock) */
	while (list) {
		struct rs_tcp *t = list;
		list = t->txq_next;
		t->on_txq = 0;
		while (t->tx_cnt && !t->send_inflight && !t->drain && !t->tx_wait && t->fd >= 0) {
			struct iovec v[RS_TX_IOV];
			uint32_t k = t->tx_cnt < RS_TX_IOV ? t->tx_cnt : RS_TX_IOV;
			size_t bytes = 0;
			for (uint32_t i = 0; i < k; i++) {
				struct rs_txseg *g = rs_txq_at(t, i);
				v[i].iov_base = g->data;
				v[i].iov_len = g->len;
				bytes += g->len;
			}
			struct msghdr m = { .msg_iov = v, .msg_iovlen = k };
			long n = rs_syscall(SYS_sendmsg, t->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n > 0)
				rs_txq_consume(t, (size_t)n, r);
			if (n == -EINTR)
				continue;
			if (n < 0 && n != -EAGAIN) {
				set_tx_err(t, (int)-n);
				rs_txq_drop_all(t, r);
				break;
			}
			if (n < 0 || (size_t)n < bytes) {
				drain_handover(r, t);
				break;
			}
		}
		rs_ep_sock_changed(t);
	}
	r->nr_tx_sqes = 0;
}

/* ---- completions ---------------------------------------------------------- */

static void recv_done(struct rs_ring *r, struct rs_tcp *t, struct io_uring_cqe *c)
{
	int more = c->flags & IORING_CQE_F_MORE;
	if (c->res > 0) {
		unsigned bid = c->flags >> IORING_CQE_BUFFER_SHIFT;
		r->buf.held++;
		if (rs_rt.cfg.v[RS_K_RX_CACHE] && !t->closing && !t->rxc_used && !rs_dying &&
		    !t->ovf_head && rs_rxq_room(t) == 0 &&
		    (t->rxc || (t->rxc = malloc(r->buf.size)) != NULL)) {
			/* RX_CACHE: copy into the socket's own buffer and give the
			 * ring's buffer back at once. */
			memcpy(t->rxc, rs_buf_addr(&r->buf, bid), (size_t)c->res);
			rs_buf_release(r, bid);
			if (rs_rxq_push(t, r, t->rxc, (uint32_t)c->res, -2) == 0)
				t->rxc_used = 1;
		} else if (t->closing ||
			   rs_rxq_push(t, r, rs_buf_addr(&r->buf, bid), (uint32_t)c->res, (int32_t)bid) < 0)
			rs_buf_release(r, bid);
		else if ((size_t)t->rx_bufs * r->buf.size >= t->rx_limit && !t->throttled) {
			t->throttled = 1;
			rs_stat_add(RS_C_THROTTLED, 1);
			if (more)
				cancel_recv(r, t);
		}
	} else if (c->res == 0) {
		t->rx_eof = 1;
	} else if (c->res == -ENOBUFS) {
		rs_stat_add(RS_C_ENOBUFS, 1);
		/* Other sockets hold every buffer: until this one is armed again
		 * its input stays in the kernel, which answers its reads and
		 * reports it (a reader must never be left with neither). */
		if (!t->rx_starved) {
			RS_STORE(t->rx_starved, 1);
			rs_ep_sock_rx_direct(t);
		}
	} else if (c->res == -EINVAL && t->rx_capped) {
		__atomic_store_n(&recv_cap_ok, 0, __ATOMIC_RELAXED); /* re-armed without */
	} else if (c->res != -ECANCELED) {
		RS_STORE(t->rx_err, -c->res);
	}
	if (!more) {
		/* The multishot receive ended: out of buffers, cancelled (for the
		 * bound, which the application may have drained meanwhile),
		 * or for no stated reason.  Unless the stream is over or the
		 * socket stays over its bound, it is armed again. */
		t->recv_armed = 0;
		r->nrecv--;
		t->ops_inflight--;
		if (t->mode == RS_TM_ARMED && !t->closing && !t->throttled && !t->rx_stop && !t->rx_eof &&
		    !t->rx_err && !t->rx_direct && !t->shut_rd)
			queue_rearm(r, t);
	}
}

static void send_done(struct rs_ring *r, struct rs_tcp *t, struct io_uring_cqe *c)
{
	t->send_inflight = 0;
	t->inflight_segs = 0;
	t->ops_inflight--;
	int res = c->res;
	int full = 0;
	if (res > 0) {
		rs_txq_consume(t, (size_t)res, r);
		full = (size_t)res < t->inflight_bytes;
	} else if (res == -EAGAIN || res == 0) {
		full = 1;
	} else {
		set_tx_err(t, -res);
		rs_txq_drop_all(t, r);
	}
	if (!t->tx_cnt)
		t->tx_wait = 0;
	if (full && t->tx_cnt && t->fd >= 0 && !t->tx_wait) {
		drain_handover(r, t);
		return;
	}
	if (t->tx_cnt && !t->on_txq && t->fd >= 0) {
		t->on_txq = 1;
		t->txq_next = r->txq;
		r->txq = t;
	}
}

void rs_tcp_complete(struct rs_ring *r, struct rs_tcp *t, int op, struct io_uring_cqe *c)
{
	/* Which completions are an edge for epoll: every receive (data, the
	 * end, an error: the kernel wakes its waiters for each), and a send
	 * only when it makes a full socket writable again or fails, as the
	 * kernel's write-space wake-ups come only after the buffer was
	 * full.  (An edge for every send would wake an edge-triggered loop
	 * once more per response.) */
	int edge = op == RS_UD_RECV;
	switch (op) {
	case RS_UD_RECV:
		recv_done(r, t, c);
		break;
	case RS_UD_SEND: {
		int was_full = t->tx_bytes >= t->tx_limit || t->drain || t->tx_wait;
		int had_err = t->tx_err;
		send_done(r, t, c);
		edge = (was_full && !(t->tx_bytes >= t->tx_limit || t->drain || t->tx_wait)) ||
		       (t->tx_err && !had_err);
		break;
	}
	case RS_UD_CANCEL:
		t->ops_inflight--;
		break;
	}
	if (edge && !t->closing)
		rs_ep_sock_changed(t);
	maybe_finish(r, t);
}

/* ---- readiness, errors, ioctls --------------------------------------------- */

unsigned rs_tcp_readiness(struct rs_tcp *t)
{
	unsigned ev = 0;
	int held = rs_rxq_held(t) > 0;
	/* (or the error a fork left shared, which neither process took yet) */
	int rx_err = t->rx_err ? t->rx_err : t->leftover ? __atomic_load_n(&t->leftover->err, __ATOMIC_RELAXED) : 0;
	if (held || t->rx_eof || rx_err || t->shut_rd)
		ev |= EPOLLIN | EPOLLRDNORM; /* (rx_direct: the kernel adds its own) */
	if (t->rx_eof || t->shut_rd)
		ev |= EPOLLRDHUP;
	if (rx_err || t->tx_err)
		ev |= EPOLLERR;
	if (((t->rx_eof || t->shut_rd) && t->shut_wr) || rx_err == ECONNRESET)
		ev |= EPOLLHUP;
	if (RS_LOAD(t->k_hup) && !t->recv_armed && t->fd >= 0) {
		/* The kernel reported a reset or hang-up that no receive of
		 * ours will: its ERR/HUP are the truth (ERR ends when the error
		 * is taken). */
		struct pollfd p = { t->fd, EPOLLRDHUP, 0 };
		if (rs_syscall(SYS_poll, &p, 1, 0) == 1) {
			ev |= (unsigned)p.revents & (EPOLLERR | EPOLLHUP | EPOLLRDHUP);
			if (p.revents & EPOLLRDHUP) /* a read does not block */
				ev |= EPOLLIN | EPOLLRDNORM;
		}
	}
	if (t->shut_wr || t->epipe_pending || t->tx_err || rx_err ||
	    (!t->drain && t->tx_bytes < t->tx_limit && !RS_LOAD(t->kfull)))
		ev |= EPOLLOUT | EPOLLWRNORM;
	return ev;
}

size_t rs_tcp_held(struct rs_tcp *t)
{
	return rs_rxq_held(t);
}

int rs_tcp_fionread(struct rs_tcp *t, int *out)
{
	int k = 0;
	long e = rs_syscall(SYS_ioctl, t->fd, SIOCINQ, &k);
	if (e < 0)
		return (int)e;
	*out = k + (int)rs_rxq_held(t);
	return 0;
}

int rs_tcp_so_error(struct rs_tcp *t)
{
	rs_rxq_shared_err(t);
	int e = t->rx_err ? take_error(t) : 0;
	if (!e && t->tx_err) {
		e = t->tx_err;
		RS_STORE(t->tx_err, 0);
		t->epipe_pending = 1;
	}
	return e;
}

static int tx_idle_cond(void *arg)
{
	struct rs_tcp *t = arg;
	return !t->tx_cnt && !t->send_inflight;
}

/* Queued bytes go to the kernel, or to the drain thread when the kernel's
 * buffer is full (this never waits for the peer). */
static void tx_submit_now(struct rs_tcp *t)
{
	if (t->mode == RS_TM_ARMED && t->owner == rs_ring_tls && (t->tx_cnt || t->send_inflight))
		rs_ring_wait(t->owner, tx_idle_cond, t, -1);
	else if (t->mode == RS_TM_DETACHING && !t->send_inflight)
		rs_tcp_flush_direct(t);
}

/* Before a call that must see every accepted byte in the kernel
 * (SIOCOUTQ, setsockopt TCP_CORK, a send the kernel makes...): this waits
 * for a drain in progress too. */
void rs_tcp_sync_tx(struct rs_tcp *t)
{
	tx_submit_now(t);
	if (t->drain) {
		rs_drain_wait(t->drain, -1);
		drain_end(t);
	}
}

int rs_tcp_shutdown(struct rs_tcp *t, int how)
{
	long e;
	tx_submit_now(t);
	if (t->drain && rs_drain_done(t->drain))
		drain_end(t);
	if (how != SHUT_RD && t->drain && rs_drain_shut_after(t->drain, SHUT_WR)) {
		/* The end of stream follows the bytes the drain still sends. */
		e = how == SHUT_RDWR ? rs_syscall(SYS_shutdown, t->fd, SHUT_RD) : 0;
	} else {
		if (how != SHUT_RD && t->drain) {
			rs_drain_wait(t->drain, -1); /* ended meanwhile */
			drain_end(t);
		}
		e = rs_syscall(SYS_shutdown, t->fd, how);
	}
	if (e < 0)
		return (int)e;
	if (how == SHUT_WR || how == SHUT_RDWR)
		t->shut_wr = 1;
	if (how == SHUT_RD || how == SHUT_RDWR) {
		t->shut_rd = 1;
		/* Linux discards nothing on SHUT_RD: reads return what is queued
		 * (the engine's, then the kernel's), then 0.  So reads go to the
		 * kernel from now on, which says when that is. */
		if (t->mode == RS_TM_ARMED && t->owner)
			go_direct(t->owner, t);
	}
	rs_ep_sock_changed(t);
	return 0;
}

/* ---- close ------------------------------------------------------------------ */

static int gone_cond(void *arg)
{
	struct rs_tcp *t = arg;
	return !t->recv_armed && !t->send_inflight && !t->tx_cnt;
}

int rs_tcp_close(struct rs_sock *s, int fd)
{
	struct rs_tcp *t = rs_tcp_enter(s, fd, 0);
	if (!t)
		return 0;
	if (atomic_load(&s->nfds) > 1) {
		/* Another descriptor keeps the socket open; this number is
		 * about to be the application's again (rs_tcp_enter takes the
		 * next caller's). */
		if (t->fd == fd && t->mode == RS_TM_DETACHED && !t->drain && !t->send_inflight)
			t->fd = -1;
		rs_tcp_unlock(t);
		return 0;
	}
	atomic_store(&s->eng, NULL);
	struct rs_ring *r = t->owner;
	rs_ep_sock_gone(t);
	if (r && r == rs_ring_tls) {
		/* Queued sends go to the kernel, or to the drain thread, which
		 * holds the file until they are out. */
		rs_tcp_submit_tx(r, t);
		t->rx_stop = 1;
		cancel_recv(r, t);
		rs_ring_wait(r, gone_cond, t, -1);
	} else if (r) {
		/* Another thread's ring: it cancels the receive next time it
		 * runs; the socket is released then. */
		push_detach(r, t);
		uint64_t one = 1;
		rs_sys_write(r->evfd, &one, sizeof(one));
	}
	if ((rs_rxq_held(t) || t->rx_cnt) && t->sock->born_pid == rs_rt.pid) {
		/* Unread data: the kernel answers close with a reset.  (Not in
		 * a fork child closing what it inherited: the parent still holds
		 * the socket, and its own close decides.) */
		struct linger lg = { 1, 0 };
		rs_syscall(SYS_setsockopt, t->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	rs_rxq_drop_all(t); /* (detached: heap copies, and ring buffers kept after a failed copy) */
	t->closing = 1;
	t->fd = -1; /* the number is the application's again */
	if (t->drain) {
		/* the job finishes by itself */
		if (r)
			off_draining(r, t);
		rs_drain_release(t->drain);
		t->drain = NULL;
	}
	struct rs_ring *held = held_ring;
	if (!r) {
		rs_mutex_unlock(&t->mu);
		free_t(t);
		return 0;
	}
	maybe_finish(r, t); /* may free t */
	rs_ring_unlock(held);
	return 0;
}

/* ---- thread exit, fork ------------------------------------------------------- */

static int drained_cond(void *arg)
{
	struct rs_tcp *t = arg;
	return gone_cond(arg) && !t->drain;
}

struct gone_arg {
	struct rs_ring *r;
	struct rs_tcp *t;
};

/* t is done with, or already left r (a completion during the wait may
 * finish a detach or free a closed socket: then t must not be touched). */
static int left_or_drained(void *arg)
{
	struct gone_arg *g = arg;
	return g->r->owned != g->t || drained_cond(g->t);
}

void rs_tcp_ring_gone(struct rs_ring *r, struct rs_tcp *t)
{
	if (t->mode == RS_TM_ARMED && !t->closing) {
		RS_STORE(t->mode, RS_TM_DETACHING);
		count_passthrough(t->sock, RINGSOCK_PT_THREAD);
	}
	cancel_recv(r, t);
	rs_tcp_submit_tx(r, t);
	struct gone_arg g = { r, t };
	int e = rs_ring_wait(r, left_or_drained, &g, 10000);
	if (r->owned != t)
		return; /* (r->owned is t here: thread exit takes them in order) */
	if (e == -ETIME) {
		/* A drain goes on without this ring (the next send finds out
		 * when it ended). */
		rs_warn("thread exit: a send to a peer that is not reading did not finish in 10 s");
		rs_txq_drop_all(t, r);
	}
	if (t->closing) {
		rs_frag_cache_drop(&r->frag, t->txc);
		t->txc = NULL;
		off_ring_lists(r, t);
		owned_unlink(r, t);
		__atomic_store_n(&t->owner, NULL, __ATOMIC_RELEASE);
		free_t(t);
		return;
	}
	finalize_detach(r, t);
}

/* Before fork (all ring locks held): received data the engine holds moves
 * to shared memory, so the parent and the child read each byte once, and
 * the parent's receive stops taking data ahead of the reader. */
void rs_tcp_spawn_prepare(struct rs_tcp *t)
{
	if (t->owner && t->mode == RS_TM_ARMED) {
		/* From now on the child may read it too: no receive may take its
		 * data in advance (reads go to the kernel, which reports input). */
		go_direct(t->owner, t);
	}
}

void rs_tcp_fork_prepare(struct rs_tcp *t)
{
	rs_tcp_spawn_prepare(t);
	if (t->owner == rs_ring_tls && t->owner && (t->tx_cnt || t->send_inflight))
		rs_ring_wait(t->owner, tx_idle_cond, t, 10000);
	else if (t->owner && !t->send_inflight)
		rs_tcp_flush_direct(t);
	size_t held = rs_rxq_held(t);
	rs_rxq_shared_err(t);
	int err = t->rx_err ? t->rx_err : t->tx_err;
	if (!held && !err)
		return;
	size_t len = sizeof(struct rs_shared_rx) + held;
	struct rs_shared_rx *l = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (l == MAP_FAILED)
		return;
	struct iovec v = { l->data, held };
	size_t got = rs_rxq_copy(t, &v, 1, held, 0);
	if (t->leftover)
		munmap(t->leftover, t->leftover_map);
	l->len = (uint32_t)got;
	l->off = 0;
	l->err = err; /* after the bytes, for either process */
	RS_STORE(t->rx_err, 0);
	RS_STORE(t->tx_err, 0);
	RS_STORE(t->leftover, l);
	t->leftover_map = len;
}

void rs_engine_fork_prepare_detached(void)
{
	rs_mutex_lock(&socks_lock);
	for (struct rs_tcp *t = socks; t; t = t->all_next)
		if (!t->owner) {
			rs_mutex_lock(&t->mu);
			rs_tcp_fork_prepare(t);
			rs_mutex_unlock(&t->mu);
		}
	/* socks_lock stays held across fork */
}

void rs_engine_fork_release_detached(int child)
{
	if (child)
		pthread_mutex_init(&socks_lock, NULL);
	else
		rs_mutex_unlock(&socks_lock);
}

/* In the child: the ring is gone; the socket is served by the kernel after
 * its leftover.  Sends the parent still had in flight are the parent's. */
void rs_tcp_fork_child(struct rs_tcp *t)
{
	struct rs_ring *r = t->owner;
	if (r) {
		owned_unlink(r, t);
		if (t->recv_armed)
			r->nrecv--;
	}
	t->owner = NULL;
	pthread_mutex_init(&t->mu, NULL);
	RS_STORE(t->mode, RS_TM_DETACHED);
	t->recv_armed = t->recv_cancel = t->send_inflight = 0;
	t->on_txq = t->on_rearm = t->on_detach = t->on_draining = 0;
	t->drain = NULL; /* the parent's drain thread sends it */
	t->ops_inflight = 0;
	/* ring buffers and frag chunks are not the child's */
	t->rx_cnt = 0;
	t->ovf_head = t->ovf_tail = 0;
	t->rx_bufs = 0;
	RS_STORE(t->rx_bytes, 0);
	t->tx_cnt = 0;
	t->tx_bytes = 0;
	t->linear_used = 0;
	t->txc = NULL; /* the parent's */
	count_passthrough(t->sock, RINGSOCK_PT_FORK);
}

/* close() (and dup2 over, close_range) of fd, before the real call. */
void rs_engine_before_close(struct rs_sock *s, int fd)
{
	if (rs_ep_known(fd))
		rs_ep_close(fd);
	if (!s)
		return;
	if (atomic_load(&s->eng))
		rs_tcp_close(s, fd);
	else if (s->regs && atomic_load(&s->nfds) <= 1)
		rs_ep_forget_sock(s);
}
