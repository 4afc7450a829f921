/* tcp.c - stream sockets on the engine: the policy, and the kind's
 * operations table (arming, completions, readiness, shutdown, and the
 * hooks the core's close, detach, thread exit and fork call).  The
 * receive path is in tcp_recv.c, the send path in tcp_send.c and tcp_flush.c.
 *
 * A socket is armed (arm) once it is connected and reachable through one
 * descriptor; its receive and send completions come back here (complete)
 * and go to the two paths; it leaves the engine through process_detach
 * and the core's transitions (sock.c: rs_esock_maybe_finish, which asks
 * detach_done here), or is freed once closed with nothing in flight.
 * States: types.h, struct rs_esock.
 *
 * Every function here runs with the socket's lock held (rs_esock_enter):
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

#include "engine_int.h"
#include "sys.h"
#include "tcp_int.h"

/* The kernel's default receive buffer of a TCP socket (tcp_rmem's
 * second field), read once. */
static size_t default_rcvbuf(void)
{
	static size_t cached;
	size_t v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
	if (!v) {
		v = rs_sysctl_field("/proc/sys/net/ipv4/tcp_rmem", 1, 131072);
		__atomic_store_n(&cached, v, __ATOMIC_RELAXED);
	}
	return v;
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

static struct rs_esock *arm(struct rs_sock *s, int fd)
{
	if (s->conn_state == RS_CONN_LISTEN) {
		rs_sock_passthrough(s, RINGSOCK_PT_LISTENER);
		return NULL;
	}
	if (rs_sock_blocking_kernel(s))
		return NULL;
	if (atomic_load(&s->nfds) != 1 || !connected(s, fd))
		return NULL; /* maybe later */
	if (s->born_gen != __atomic_load_n(&rs_fork_gen, __ATOMIC_RELAXED)) {
		/* Open before a fork or spawn: the other process may read it,
		 * so no receive may take its data in advance, and may end or
		 * reset it, which only the kernel's sends see at once: its
		 * reads and sends would be the kernel's for good, and the
		 * engine's bookkeeping of each call is all it would add (a
		 * forking server's connection, served in the child). */
		rs_sock_passthrough(s, RINGSOCK_PT_FORK);
		return NULL;
	}
	struct rs_ring *r;
	struct rs_tcp *t = rs_esock_new(s, fd, &rs_tcp_ops, sizeof(*t), &r);
	if (!t)
		return NULL;
	size_t lim = (size_t)rs_rt.cfg.v[RS_K_RCVBUF_LIMIT];
	if (!lim)
		lim = s->rcvbuf ? rs_sockbuf_bytes(s->rcvbuf) : default_rcvbuf();
	size_t cap = (size_t)r->buf.count * r->buf.size / 4;
	if (lim > cap)
		lim = cap;
	if (lim < 2 * (size_t)r->buf.size)
		lim = 2 * (size_t)r->buf.size;
	t->rx_limit = lim;
	t->tx_limit = s->sndbuf ? rs_sockbuf_bytes(s->sndbuf) : 262144;
	/* Shut down before now (through the kernel): after SHUT_RD the
	 * kernel's reads say when the input ends (see shutdown_sock). */
	t->shut_rd = s->shut_rd;
	t->shut_wr = s->shut_wr;
	if (t->shut_rd)
		t->direct_why = RS_DIRECT_SHUT;
	if (!t->direct_why && s->nonblock && rs_rt.cfg.v[RS_K_ARM_AFTER]) {
		/* New: its first reads go to the kernel (one request and a close
		 * would pay for arming and cancelling a receive for nothing). */
		t->direct_why = RS_DIRECT_PROBATION;
		long left = rs_rt.cfg.v[RS_K_ARM_AFTER] - RS_LOAD(s->pre_reads); /* (those made before) */
		t->rx_probation = (uint8_t)(left > 0 ? left : 1);
	}
	/* (t->sent stays 0 though a send went to the kernel before: the
	 * engine's first send goes to the kernel too, which says whether the
	 * connection has ended since; the reads before may have seen it end.) */
	t->rx_direct = t->direct_why != RS_DIRECT_NONE;
	rs_ring_lock(r);
	if (rs_esock_install(r, &t->e) < 0) {
		free(t);
		return NULL;
	}
	rs_tcp_submit_recv(r, t);
	rs_ep_sock_armed(&t->e);
	return &t->e;
}

/* Nothing in flight the detach waits for: the receive, a send, queued
 * bytes, a drain job. */
static int detach_done(struct rs_esock *e)
{
	struct rs_tcp *t = rs_tcp_of(e);
	return !e->recv_armed && !t->send_inflight && !t->tx_cnt && !e->drain;
}

/* t leaves r: received bytes still in r's buffers move to the heap, and
 * the cached frag chunk goes back to r's pool. */
static void leave_ring(struct rs_ring *r, struct rs_esock *e)
{
	struct rs_tcp *t = rs_tcp_of(e);
	rs_rxq_to_heap(t);
	rs_frag_cache_drop(&r->frag, t->txc);
	t->txc = NULL;
}

/* Armed when an epoll set registers it (this thread will wait for it); a
 * new nonblocking socket, which reads through the kernel first anyway
 * (RINGSOCK_ARM_AFTER), at the last read of its probation or its second
 * send instead (before them its calls are the kernel's: before_engine in
 * tcp_recvcall.c, first_send in tcp_send.c), so an idle or one-request
 * connection costs no engine state. */
static int arm_when_watched(struct rs_sock *s)
{
	return !(s->nonblock && rs_rt.cfg.v[RS_K_ARM_AFTER]);
}

static void process_detach(struct rs_ring *r, struct rs_esock *e)
{
	struct rs_tcp *t = rs_tcp_of(e);
	rs_tcpq_check(t);
	rs_tcp_cancel_recv(r, t);
	rs_tcp_submit_tx(r, t);
	rs_esock_maybe_finish(r, &t->e);
}

static void drain_ended(struct rs_ring *r, struct rs_esock *e)
{
	struct rs_tcp *t = rs_tcp_of(e);
	rs_tcp_drain_end(t);
	rs_esock_maybe_finish(r, &t->e);
}

static void complete(struct rs_ring *r, struct rs_esock *e, int op, struct io_uring_cqe *c)
{
	struct rs_tcp *t = rs_tcp_of(e);
	/* Which completions are an edge for epoll: every receive (data, the
	 * end, an error: the kernel wakes its waiters for each) but the end of
	 * one we cancelled or that found no buffer (nothing happened to the
	 * socket), and a send
	 * only when it makes a full socket writable again or fails, as the
	 * kernel's write-space wake-ups come only after the buffer was
	 * full.  (An edge for every send would wake an edge-triggered loop
	 * once more per response.) */
	int edge = op == RS_UD_RECV && c->res != -ECANCELED && c->res != -ENOBUFS;
	/* Data: an input edge only (the kernel's sk_data_ready wakes with
	 * the input key: no edge for an OUT-only registration), unless the
	 * receive ended after a hang-up the kernel reported (readiness shows
	 * the kernel's ERR/HUP once no receive of ours runs): an edge for
	 * all. */
	int input = op == RS_UD_RECV && c->res > 0 && ((c->flags & IORING_CQE_F_MORE) || !RS_LOAD(t->e.k_hup));
	/* The stream's end: an edge for the registrations the kernel has not
	 * told of it already (rs_ep_sock_end). */
	int end = op == RS_UD_RECV && c->res == 0 && !t->shut_rd;
	switch (op) {
	case RS_UD_RECV:
		rs_tcp_recv_done(r, t, c);
		break;
	case RS_UD_SEND: {
		int was_full = t->tx_bytes >= t->tx_limit || t->e.drain || t->tx_wait;
		int had_err = t->tx_err;
		rs_tcp_send_done(r, t, c);
		edge = (was_full && !(t->tx_bytes >= t->tx_limit || t->e.drain || t->tx_wait)) ||
		       (t->tx_err && !had_err);
		break;
	}
	case RS_UD_CANCEL:
		t->e.ops_inflight--;
		break;
	}
	rs_tcpq_check(t);
	if (edge && !t->e.closing) {
		if (input)
			rs_ep_sock_received(&t->e);
		else if (end)
			rs_ep_sock_end(&t->e);
		else
			rs_ep_sock_changed(&t->e);
	}
	rs_esock_maybe_finish(r, &t->e);
}

/* ---- readiness, errors, ioctls --------------------------------------------- */

static unsigned readiness(struct rs_esock *e)
{
	struct rs_tcp *t = rs_tcp_of(e);
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
	if ((RS_LOAD(t->e.k_hup) || t->rx_eof) && !t->e.recv_armed && t->e.fd >= 0) {
		/* The kernel reported a reset or hang-up that no receive of
		 * ours will, or may have one we have not seen yet: after the
		 * peer's FIN no receive of ours looks again, and a reset
		 * (our send to a peer that closed) comes only through the
		 * kernel's set, maybe after this look (seed 28000257: a
		 * one-shot registration added after it reported IN|OUT
		 * without ERR|HUP).  Its ERR/HUP are the truth (ERR ends
		 * when the error is taken). */
		struct pollfd p = { t->e.fd, EPOLLRDHUP, 0 };
		if (rs_syscall(SYS_poll, &p, 1, 0) == 1) {
			ev |= (unsigned)p.revents & (EPOLLERR | EPOLLHUP | EPOLLRDHUP);
			if (p.revents & EPOLLRDHUP) /* a read does not block */
				ev |= EPOLLIN | EPOLLRDNORM;
		}
	}
	if (t->shut_wr || t->epipe_pending || t->tx_err || rx_err ||
	    (!t->e.drain && t->tx_bytes < t->tx_limit && !RS_LOAD(t->e.kfull)))
		ev |= EPOLLOUT | EPOLLWRNORM;
	return ev;
}

/* Input the engine holds (its receive queue, or the part of what it held
 * at a fork that neither process has read yet), and an error it took
 * from the kernel and has not reported: hints, read without the lock. */
static unsigned held_events(struct rs_esock *e)
{
	struct rs_tcp *t = rs_tcp_of(e);
	unsigned ev = 0;
	struct rs_shared_rx *l = RS_LOAD(t->leftover);
	size_t held = RS_LOAD(t->rx_bytes);
	if (l) {
		uint32_t off = __atomic_load_n(&l->off, __ATOMIC_RELAXED), len = __atomic_load_n(&l->len, __ATOMIC_RELAXED);
		held += off < len ? len - off : 0;
	}
	/* Below SO_RCVLOWAT the kernel says when it is readable: its mark is
	 * lowered by what the engine holds (rs_tcp_kernel_lowat). */
	int lowat = __atomic_load_n(&e->sock->rcvlowat, __ATOMIC_RELAXED);
	if (held && (lowat <= 1 || held >= (size_t)lowat))
		ev |= EPOLLIN;
	if (RS_LOAD(t->rx_err) || RS_LOAD(t->tx_err) || (l && __atomic_load_n(&l->err, __ATOMIC_RELAXED)))
		ev |= EPOLLERR;
	return ev;
}

/* Does the kernel hold this socket's input and report it (reads go to
 * the kernel): a bulk reader, a new socket still on probation, or one
 * whose receive is waiting for buffers?  A hint. */
static int kernel_input(struct rs_esock *e)
{
	struct rs_tcp *t = rs_tcp_of(e);
	return RS_LOAD(t->rx_direct) || RS_LOAD(t->rx_starved);
}

static size_t held_bytes(struct rs_esock *e)
{
	return rs_rxq_held(rs_tcp_of(e));
}

static int fionread(struct rs_esock *e, int *out)
{
	int k = 0;
	long r = rs_syscall(SYS_ioctl, e->fd, SIOCINQ, &k);
	if (r < 0)
		return (int)r;
	*out = k + (int)rs_rxq_held(rs_tcp_of(e));
	return 0;
}

static int so_error(struct rs_esock *es)
{
	struct rs_tcp *t = rs_tcp_of(es);
	rs_rxq_shared_err(t);
	int e = t->rx_err ? rs_tcp_take_error(t) : 0;
	if (!e && t->tx_err) {
		e = t->tx_err;
		RS_STORE(t->tx_err, 0);
		t->epipe_pending = 1;
	}
	return e;
}

static int shutdown_sock(struct rs_esock *es, int how)
{
	struct rs_tcp *t = rs_tcp_of(es);
	long e;
	rs_tcp_tx_submit_now(t);
	if (t->e.drain && rs_drain_done(t->e.drain))
		rs_tcp_drain_end(t);
	if (how != SHUT_RD && t->e.drain && rs_drain_shut_after(t->e.drain, SHUT_WR)) {
		/* The end of stream follows the bytes the drain still sends. */
		e = how == SHUT_RDWR ? rs_syscall(SYS_shutdown, t->e.fd, SHUT_RD) : 0;
	} else {
		if (how != SHUT_RD && t->e.drain) {
			rs_drain_wait(t->e.drain, -1); /* ended meanwhile */
			rs_tcp_drain_end(t);
		}
		e = rs_syscall(SYS_shutdown, t->e.fd, how);
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
		if (t->e.mode == RS_ES_ARMED && t->e.owner)
			rs_tcp_go_direct(t->e.owner, t, RS_DIRECT_SHUT);
	}
	rs_ep_sock_changed(&t->e);
	return 0;
}

/* ---- close ------------------------------------------------------------------ */

static int gone_cond(void *arg)
{
	struct rs_tcp *t = arg;
	return !t->e.recv_armed && !t->send_inflight && !t->tx_cnt;
}

/* The socket's last descriptor is closed by a thread other than its
 * owner, whose ring holds the file (its receive, a send in flight) until
 * that thread next runs engine code: maybe much later (idle in a
 * condition variable, as a thread pool's worker is), and the peer would
 * see nothing meanwhile.  The kernel's close would end the connection
 * now, so it ends now as tcp_close would end it: a reset when input was
 * never read (here or in the kernel's queue) or SO_LINGER is zero, else
 * the end of stream after what was sent (after the drain job's bytes).
 * The file itself goes when the owner runs.  Not when another process
 * may hold the socket (inherited, or this process forked or passed it in
 * SCM_RIGHTS since): its close ends nothing.  Not with a send in flight
 * on the owner's ring, which the end of stream must follow. */
static void end_now(struct rs_tcp *t, int fd, int unread)
{
	struct rs_sock *s = t->e.sock;
	if (s->born_pid != rs_rt.pid || s->passed ||
	    s->born_gen != __atomic_load_n(&rs_fork_gen, __ATOMIC_RELAXED))
		return;
	int inq = 0;
	struct linger lg = { 0, 0 };
	socklen_t ll = sizeof(lg);
	if (!unread && rs_syscall(SYS_ioctl, fd, SIOCINQ, &inq) == 0 && inq > 0)
		unread = 1;
	if (!unread && rs_syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_LINGER, &lg, &ll) == 0 && lg.l_onoff &&
	    !lg.l_linger)
		unread = 1;
	if (unread) {
		struct sockaddr sa = { .sa_family = AF_UNSPEC };
		rs_syscall(SYS_connect, fd, &sa, sizeof(sa)); /* tcp_disconnect: the reset */
	} else if (t->e.drain && rs_drain_shut_after(t->e.drain, SHUT_WR)) {
		/* (the end of stream follows the drain job's bytes) */
	} else if (!t->send_inflight) {
		rs_syscall(SYS_shutdown, fd, SHUT_RDWR);
	}
}

/* close, another descriptor still open (fd is e's): the number can be
 * let go unless a send still writes through it (in flight, or the drain
 * job's). */
static int close_fd_free(struct rs_esock *e)
{
	struct rs_tcp *t = rs_tcp_of(e);
	return !t->e.drain && !t->send_inflight;
}

/* close on the owner's thread (r locked): queued sends go to the kernel,
 * or to the drain thread, which holds the file until they are out; the
 * receive ends (never armed again); wait for both. */
static void close_own(struct rs_ring *r, struct rs_esock *e)
{
	struct rs_tcp *t = rs_tcp_of(e);
	rs_tcp_submit_tx(r, t);
	t->rx_stop = 1;
	rs_tcp_cancel_recv(r, t);
	rs_ring_wait(r, gone_cond, t, -1);
}

/* close, the last descriptor (fd), what the engine still holds unread
 * means to the peer (r: the owner's ring, or NULL). */
static void close_unread(struct rs_ring *r, struct rs_esock *e, int fd)
{
	struct rs_tcp *t = rs_tcp_of(e);
	int unread = rs_rxq_held(t) || t->rx_cnt;
	if (unread && t->e.sock->born_pid == rs_rt.pid) {
		/* Unread data: the kernel answers close with a reset.  (Not in
		 * a fork child closing what it inherited: the parent still holds
		 * the socket, and its own close decides.) */
		struct linger lg = { 1, 0 };
		rs_syscall(SYS_setsockopt, t->e.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	if (r && r != rs_ring_tls) {
		/* Another thread's ring: it cancels the receive next time it
		 * runs; the socket is released then, the connection now. */
		end_now(t, t->e.fd >= 0 ? t->e.fd : fd, unread);
	}
}

/* close: what the engine held for the program goes (detached: heap
 * copies, and ring buffers kept after a failed copy). */
static void drop_held(struct rs_esock *e)
{
	rs_rxq_drop_all(rs_tcp_of(e));
}

/* Detached with nothing held, nothing to send: the kernel's alone.  (An
 * error a receive of ours took from the kernel is reported first: the
 * kernel no longer has it; so is one a fork left shared with the bytes.) */
static int holds_nothing(struct rs_esock *e)
{
	struct rs_tcp *t = rs_tcp_of(e);
	return !rs_rxq_held(t) && !t->tx_cnt && !t->send_inflight && !t->e.drain && !t->rx_err && !t->tx_err &&
	       rs_rxq_leftover_empty(t);
}

/* ---- thread exit, fork ------------------------------------------------------- */

static int drained_cond(void *arg)
{
	struct rs_tcp *t = arg;
	return gone_cond(arg) && !t->e.drain;
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
	return g->r->owned != &g->t->e || drained_cond(g->t);
}

/* The owner thread exits: the receive ends, queued sends go, and what a
 * peer that does not read keeps from going (10 s) is dropped. */
static void ring_gone(struct rs_ring *r, struct rs_esock *es)
{
	struct rs_tcp *t = rs_tcp_of(es);
	rs_tcp_cancel_recv(r, t);
	rs_tcp_submit_tx(r, t);
	struct gone_arg g = { r, t };
	int e = rs_ring_wait(r, left_or_drained, &g, 10000);
	if (e == -ETIME && r->owned == es) {
		/* A drain goes on without this ring (the next send finds out
		 * when it ended). */
		rs_warn("thread exit: a send to a peer that is not reading did not finish in 10 s");
		rs_txq_drop_all(t, r);
	}
}

/* Before fork (all ring locks held): received data the engine holds moves
 * to shared memory, so the parent and the child read each byte once, and
 * the parent's receive stops taking data ahead of the reader. */
static void spawn_prepare(struct rs_esock *e)
{
	struct rs_tcp *t = rs_tcp_of(e);
	if (t->e.owner && t->e.mode == RS_ES_ARMED) {
		/* From now on the child may read it too: no receive may take its
		 * data in advance (reads go to the kernel, which reports input). */
		rs_tcp_go_direct(t->e.owner, t, RS_DIRECT_SHARED);
	}
}

static void fork_prepare(struct rs_esock *e)
{
	struct rs_tcp *t = rs_tcp_of(e);
	spawn_prepare(e);
	if (t->e.owner == rs_ring_tls && t->e.owner && (t->tx_cnt || t->send_inflight))
		rs_ring_wait(t->e.owner, rs_tcp_tx_idle, t, 10000);
	else if (t->e.owner && !t->send_inflight)
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

/* In the child: the ring is gone; the socket is served by the kernel after
 * its leftover.  Sends the parent still had in flight are the parent's. */
/* In the fork child (the core has reset the common state): no send is in
 * flight; ring buffers and frag chunks are not the child's. */
static void fork_child(struct rs_esock *e)
{
	struct rs_tcp *t = rs_tcp_of(e);
	t->send_inflight = 0;
	t->rx_cnt = 0;
	t->ovf_head = t->ovf_tail = 0;
	t->rx_bufs = 0;
	RS_STORE(t->rx_bytes, 0);
	t->tx_cnt = 0;
	t->tx_bytes = 0;
	t->linear_used = 0;
	t->txc = NULL; /* the parent's */
}

static size_t tx_held(struct rs_esock *e)
{
	return rs_tcp_of(e)->tx_bytes;
}

static int tx_pending(struct rs_esock *e)
{
	struct rs_tcp *t = rs_tcp_of(e);
	return t->tx_cnt || t->send_inflight;
}

/* Sends the program keeps making between polls (a stream written in
 * small pieces, each poll asking for POLLOUT and answered at once) go out
 * merged, up to RINGSOCK_TX_MERGE bytes or RS_TX_HOLDS polls; the next
 * wait that finds no new bytes, or that would sleep, sends them. */
static int tx_hold(struct rs_esock *e)
{
	struct rs_tcp *t = rs_tcp_of(e);
	int hold = t->tx_new && t->tx_cnt && !t->e.drain && t->tx_holds < RS_TX_HOLDS &&
		   t->tx_bytes < (size_t)rs_rt.cfg.v[RS_K_TX_MERGE];
	t->tx_new = 0;
	t->tx_holds += (uint8_t)hold;
	return hold;
}

static size_t flush_direct(struct rs_esock *e)
{
	return rs_tcp_flush_direct(rs_tcp_of(e));
}

static void flush_queued(struct rs_ring *r, struct rs_esock *e)
{
	rs_tcp_flush_queued(r, rs_tcp_of(e));
}

static void sync_tx(struct rs_esock *e)
{
	rs_tcp_sync_tx(rs_tcp_of(e));
}

static void submit_recv(struct rs_ring *r, struct rs_esock *e)
{
	rs_tcp_submit_recv(r, rs_tcp_of(e));
}

static void submit_tx(struct rs_ring *r, struct rs_esock *e)
{
	rs_tcp_submit_tx(r, rs_tcp_of(e));
}

static void destroy(struct rs_esock *e)
{
	struct rs_tcp *t = rs_tcp_of(e);
	free(t->rx);
	free(t->tx);
	free(t->rxc);
	free(t->txs);
	if (t->leftover)
		munmap(t->leftover, t->leftover_map);
}

/* ---- the program's calls ---------------------------------------------------- */

static ssize_t recv_call(struct rs_sock *s, int fd, const struct iovec *iov, int n, int flags,
			 struct rs_dgram_from *f)
{
	ssize_t r = rs_tcp_recv_call(s, fd, iov, n, flags);
	if (f && r >= 0) { /* (a stream reports no address and no flags) */
		if (f->name && f->namelen)
			*f->namelen = 0;
		f->flags = 0;
	}
	return r;
}

/* An address given to a send on a connected TCP socket is ignored by the
 * kernel (once it has checked its length), unless it is a fast-open
 * connect: such sends are served like any other (the engine arms only
 * connected sockets).  Ancillary data, more than IOV_MAX buffers, and
 * sendmmsg are the kernel's, after what is queued. */
static ssize_t send_call(struct rs_sock *s, int fd, const struct rs_send *m)
{
	if (m->n < 0 || m->control ||
	    (m->name && (m->namelen > (socklen_t)sizeof(struct sockaddr_storage) || (m->flags & MSG_FASTOPEN)))) {
		rs_sock_before_kernel(s, fd, -1);
		return RS_PASS;
	}
	return rs_tcp_send_call(s, fd, m->iov, m->n, m->flags);
}

static int kernel_lowat(struct rs_esock *e, int lowat)
{
	return rs_tcp_kernel_lowat(e->sock, lowat);
}

/* tcp_set_rcvlowat wakes the socket's waiters with EPOLLIN when it is
 * readable at the new mark or its input has ended (tcp_data_ready): an
 * edge for an edge-triggered registration.  Where the kernel's set
 * watches the socket's input (detached, or reads through the kernel), the
 * kernel's own wake-up makes it, but for bytes only the engine holds (the
 * kernel's queue empty, the kernel's mark lowered by them: see
 * kernel_lowat); where it does not (the engine reads ahead), none
 * reaches the set. */
static void lowat_set(struct rs_esock *e)
{
	struct rs_tcp *t = rs_tcp_of(e);
	int readable = (held_events(e) & EPOLLIN) != 0;
	if (e->mode == RS_ES_ARMED && !kernel_input(e)) {
		if (readable || t->rx_eof) /* (a reset sets no SOCK_DONE) */
			rs_ep_sock_input(e);
		return;
	}
	int inq = 0;
	if (readable && e->fd >= 0 && rs_syscall(SYS_ioctl, e->fd, SIOCINQ, &inq) == 0 && inq == 0)
		rs_ep_sock_input(e);
}

const struct rs_kind_ops rs_tcp_ops = {
	.name = "tcp",
	.rx_group = RS_BGID_TCP,
	.arm = arm,
	.arm_when_watched = arm_when_watched,
	.complete = complete,
	.submit_recv = submit_recv,
	.submit_tx = submit_tx,
	.process_detach = process_detach,
	.drain_ended = drain_ended,
	.flush_queued = flush_queued,
	.ring_gone = ring_gone,
	.detach_done = detach_done,
	.leave_ring = leave_ring,
	.spawn_prepare = spawn_prepare,
	.fork_prepare = fork_prepare,
	.fork_child = fork_child,
	.tx_pending = tx_pending,
	.tx_hold = tx_hold,
	.flush_direct = flush_direct,
	.sync_tx = sync_tx,
	.close_fd_free = close_fd_free,
	.close_own = close_own,
	.close_unread = close_unread,
	.drop_held = drop_held,
	.holds_nothing = holds_nothing,
	.destroy = destroy,
	.readiness = readiness,
	.held_events = held_events,
	.kernel_input = kernel_input,
	.fionread = fionread,
	.so_error = so_error,
	.held = held_bytes,
	.tx_held = tx_held,
	.shutdown = shutdown_sock,
	.kernel_lowat = kernel_lowat,
	.lowat_set = lowat_set,
	.recv_call = recv_call,
	.send_call = send_call,
};

