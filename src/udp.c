/* udp.c - datagram sockets on the engine: the policy (arming, what
 * leaves the socket with the kernel), readiness, completions, the hooks
 * the core's detach, close, thread exit and fork call (sock.c makes the
 * changes of state), and the kind's operations table.  The
 * receive and the recv family are in udp_recv.c, what the socket holds
 * for the program in udpq.c, the send in udp_send.c.
 *
 * Receive.  A socket is armed at its first receive-type call (or when an
 * epoll set watches it): one multishot recvmsg on the thread's ring, into
 * the ring's datagram buffers (bufring.c, rs_ubuf_get: each big enough
 * for any datagram, so none is truncated).  Each completion is copied out
 * into the socket's own queue (struct rs_dgram: source address and
 * payload) and its buffer goes back at once, so one flooded socket cannot
 * starve the others.  recv, recvfrom, recvmsg, recvmmsg and read answer
 * from the queue without a system call, one datagram each, with the
 * kernel's MSG_PEEK, MSG_TRUNC and MSG_DONTWAIT; a blocking call sleeps in
 * the ring.
 *
 * Bounded like the kernel's queue: the memory a socket's datagrams take
 * (payload and record) stays within its SO_RCVBUF (as the kernel reports
 * it, twice what was set; RINGSOCK_RCVBUF_LIMIT overrides).  At the bound
 * the receive is cancelled and the kernel's own queue fills (and drops) as
 * without us; a datagram the receive took beyond it is dropped and counted
 * (udp_drops), as the kernel drops what overflows.
 *
 * Errors.  An ICMP error on a connected socket ends the receive with it;
 * the engine keeps it and reports it first, before the datagrams it holds
 * (the kernel's recvmsg checks the socket's error before its queue), to
 * the next receive, send or SO_ERROR, whichever comes first.
 *
 * Send: udp_send.c (queued by the thread that serves the socket, sent in
 * batches, UDP_SEGMENT where datagrams allow).
 *
 * Not done: UDP_GRO on the receive.  It would take a sender's
 * UDP_SEGMENT run (or a NIC's coalesced packets) in one receive, but the
 * engine cannot turn it off again exactly when the socket leaves it (a
 * thread takes it over, a fork, exec, a descriptor passed on): the kernel
 * gives a coalesced packet's segment size (the UDP_GRO control message)
 * only while the option is on, and with it on, new packets keep arriving
 * coalesced.  Packets that arrive between the last read with it on and
 * the option going off would reach the kernel's next reader as one
 * datagram, the run glued together (a two-reader test showed exactly
 * that).  So the kernel's queue always holds the program's datagrams.
 *
 * What the engine does not emulate leaves the socket with the kernel: any
 * option that adds control messages or changes what a receive returns
 * (preload/ctl.c rx_option: IP_PKTINFO, timestamps, IP_RECVERR, UDP_GRO,
 * multicast membership...), MSG_ERRQUEUE, shutdown, a dup, another thread
 * (detached: what it holds is read first), a fork (held datagrams move to
 * memory both processes share, read once; reads go to the kernel after).
 *
 * Every function here runs with the socket's lock held (rs_esock_enter)
 * unless it says otherwise.
 */
#define _GNU_SOURCE 1 /* (recvmmsg) */
#include <errno.h>
#include <limits.h>
#include <time.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <linux/sockios.h>

#include "engine_int.h"
#include "sys.h"
#include "udp_int.h"


/* ---- the calls the kernel answers ------------------------------------------------ */

static int fionread(struct rs_esock *e, int *out)
{
	struct rs_udp *u = udp_of(e);
	int k = rs_udpq_left_next_len(u);
	if (k < 0 && u->head)
		k = (int)u->head->len;
	if (k < 0) {
		long r = rs_syscall(SYS_ioctl, e->fd, SIOCINQ, &k);
		if (r < 0)
			return (int)r;
	}
	*out = k;
	return 0;
}

static int so_error(struct rs_esock *e)
{
	int err = rs_udp_take_error(udp_of(e));
	if (err)
		rs_ep_sock_changed(e);
	return err;
}

static size_t held_bytes(struct rs_esock *e)
{
	struct rs_udp *u = udp_of(e);
	size_t n = 0;
	for (struct rs_dgram *d = u->head; d; d = d->next)
		n += d->len;
	return n;
}

/* shutdown: the kernel's; its reads then say when the input ends. */
static int shutdown_sock(struct rs_esock *e, int how)
{
	(void)how;
	rs_udp_tx_flush(udp_of(e), RS_UDP_FLUSH_WAIT);
	if (e->mode == RS_ES_ARMED)
		rs_esock_detach_self(e, RINGSOCK_PT_OPTION);
	return (int)RS_PASS;
}

/* ---- readiness ------------------------------------------------------------------------ */

static unsigned readiness(struct rs_esock *e)
{
	struct rs_udp *u = udp_of(e);
	unsigned ev = 0;
	/* As the kernel's udp_poll: a pending error is EPOLLERR alone;
	 * datagrams are input; room is OUT, WRNORM and WRBAND. */
	int err = u->rx_err || rs_udp_left_error(u);
	if (u->cnt || rs_udpq_left_records(u))
		ev |= EPOLLIN | EPOLLRDNORM;
	if (err)
		ev |= EPOLLERR;
	if (!RS_LOAD(e->kfull))
		ev |= EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND;
	return ev;
}

static unsigned held_events(struct rs_esock *e)
{
	struct rs_udp *u = udp_of(e);
	unsigned ev = 0;
	if (RS_LOAD(u->cnt) || rs_udpq_left_records(u))
		ev |= EPOLLIN;
	if (RS_LOAD(u->rx_err) || rs_udp_left_error(u))
		ev |= EPOLLERR;
	return ev;
}

static int kernel_input(struct rs_esock *e)
{
	return RS_LOAD(udp_of(e)->shared) || RS_LOAD(udp_of(e)->kwait);
}

/* ---- arming, completions, detaching ---------------------------------------------- */

static struct rs_esock *arm(struct rs_sock *s, int fd)
{
	if (!rs_rt.cfg.v[RS_K_UDP] || (s->domain != AF_INET && s->domain != AF_INET6)) {
		rs_sock_passthrough(s, RINGSOCK_PT_UDP);
		return NULL;
	}
	if (rs_sock_blocking_kernel(s))
		return NULL;
	if (s->born_gen != __atomic_load_n(&rs_fork_gen, __ATOMIC_RELAXED)) {
		/* open in another process too: no read-ahead, ever */
		rs_sock_passthrough(s, RINGSOCK_PT_FORK);
		return NULL;
	}
	if (s->shut_rd) {
		rs_sock_passthrough(s, RINGSOCK_PT_OPTION);
		return NULL;
	}
	if (atomic_load(&s->nfds) != 1)
		return NULL; /* maybe later */
	struct rs_ring *r;
	struct rs_udp *u = rs_esock_new(s, fd, &rs_udp_ops, sizeof(*u), &r);
	if (!u)
		return NULL;
	rs_ring_lock(r);
	if (rs_ubuf_get(r) < 0) {
		/* (the ring's datagram buffers could not be registered) */
		rs_ring_unlock(r);
		rs_esock_uninit(&u->e);
		free(u);
		rs_sock_passthrough(s, RINGSOCK_PT_NO_IO_URING);
		return NULL;
	}
	if (rs_esock_install(r, &u->e) < 0) {
		free(u);
		return NULL;
	}
	rs_udp_submit_recv(r, &u->e);
	rs_ep_sock_armed(&u->e);
	return &u->e;
}

/* Armed at its first read, not when an epoll set watches it: the thread
 * that registers it need not be the one that reads it (a thread that
 * then waits elsewhere could not run its receive). */
static int arm_when_watched(struct rs_sock *s)
{
	(void)s;
	return 0;
}

/* Nothing in flight the detach waits for: the receive. */
static int detach_done(struct rs_esock *e)
{
	return !e->recv_armed;
}

static void complete(struct rs_ring *r, struct rs_esock *e, int op, struct io_uring_cqe *c)
{
	struct rs_udp *u = udp_of(e);
	int edge = 0;
	int input = 0; /* a datagram: an input edge only (tcp.c) */
	if (op == RS_UD_RECV) {
		edge = rs_udp_recv_done(r, u, c);
		input = c->res > 0;
	} else if (op == RS_UD_CANCEL) {
		u->e.ops_inflight--;
	} else if (op == RS_UD_SEND) {
		/* the kernel's buffer has room (or the poll was removed) */
		u->e.ops_inflight--;
		u->tx_polling = u->tx_unpolling = 0;
		if (u->tx_cnt && e->mode == RS_ES_ARMED && !e->closing)
			rs_ring_txq_add(r, e);
	}
	if (edge && !e->closing) {
		if (input)
			rs_ep_sock_input(e);
		else
			rs_ep_sock_changed(e);
	}
	rs_esock_maybe_finish(r, &u->e);
}

static void process_detach(struct rs_ring *r, struct rs_esock *e)
{
	struct rs_udp *u = udp_of(e);
	rs_udp_tx_flush(u, RS_UDP_FLUSH_WAIT); /* (its queue before the kernel's sends) */
	rs_udp_tx_unpoll(r, u);
	rs_udp_cancel_recv(r, u);
	rs_esock_maybe_finish(r, &u->e);
}


/* ---- close, thread exit, fork ------------------------------------------------------ */


/* close: what was sent before close goes, as the kernel's would. */
static void close_flush(struct rs_esock *e)
{
	rs_udp_tx_flush(udp_of(e), RS_UDP_FLUSH_WAIT);
}

/* close, another descriptor still open: the number can always be let go. */
static int close_fd_free(struct rs_esock *e)
{
	(void)e;
	return 1;
}

/* close on the owner's thread (r locked): the receive holds the file (and
 * its port) until it ends. */
static void close_own(struct rs_ring *r, struct rs_esock *e)
{
	struct rs_udp *u = udp_of(e);
	u->rx_stop = 1;
	rs_udp_tx_unpoll(r, u);
	rs_udp_cancel_recv(r, u);
	rs_ring_wait(r, rs_udp_recv_gone, u, -1);
}

/* close: the datagrams held go (the kernel discards a closed socket's
 * queue too). */
static void drop_held(struct rs_esock *e)
{
	rs_udpq_drop_all(udp_of(e));
}

/* Detached with nothing held: no datagram, no error, no leftover of a fork. */
static int holds_nothing(struct rs_esock *e)
{
	struct rs_udp *u = udp_of(e);
	return !u->cnt && !u->rx_err && rs_udpq_left_empty(u);
}

struct gone_arg {
	struct rs_ring *r;
	struct rs_udp *u;
};

static int left_or_ended(void *arg)
{
	struct gone_arg *g = arg;
	return g->r->owned != &g->u->e || !g->u->e.recv_armed;
}

/* The owner thread exits: queued datagrams go, the receive ends (10 s). */
static void ring_gone(struct rs_ring *r, struct rs_esock *e)
{
	struct rs_udp *u = udp_of(e);
	rs_udp_tx_flush(u, RS_UDP_FLUSH_WAIT);
	rs_udp_tx_unpoll(r, u);
	rs_udp_cancel_recv(r, u);
	struct gone_arg g = { r, u };
	rs_ring_wait(r, left_or_ended, &g, 10000);
}

/* Another process may read it from now on (vfork, posix_spawn, fork): no
 * more read-ahead; the kernel reports its input. */
static void spawn_prepare(struct rs_esock *e)
{
	struct rs_udp *u = udp_of(e);
	rs_udp_tx_flush(u, RS_UDP_FLUSH_WAIT); /* (the other process's sends come after) */
	if (u->shared)
		return;
	RS_STORE(u->shared, 1);
	if (e->owner && e->mode == RS_ES_ARMED) {
		if (e->owner == rs_ring_tls)
			rs_udp_cancel_recv(e->owner, u);
		else
			rs_esock_detach_on(e->owner, e);
	}
	rs_ep_sock_rx_direct(e);
}

/* Before fork (all ring locks held): the datagrams held move to shared
 * memory, so the parent and the child read each once. */
static void fork_prepare(struct rs_esock *e)
{
	struct rs_udp *u = udp_of(e);
	spawn_prepare(e);
	int err = u->rx_err;
	if (!u->head && !err)
		return;
	size_t need = 0;
	for (struct rs_dgram *d = u->head; d; d = d->next)
		need += (sizeof(struct rs_uleft_rec) + d->len + 7) & ~(size_t)7;
	size_t map = sizeof(struct rs_uleft) + need;
	struct rs_uleft_ref *x = malloc(sizeof(*x));
	struct rs_uleft *l = x ? mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
	if (l == MAP_FAILED) {
		free(x);
		rs_warn("udp fd %d: no memory to share %u datagrams held at a fork: both processes may read them",
			e->fd, u->cnt);
		return;
	}
	uint32_t off = 0;
	for (struct rs_dgram *d = u->head; d; d = d->next) {
		struct rs_uleft_rec *h = (struct rs_uleft_rec *)(l->data + off);
		h->len = d->len;
		h->namelen = d->namelen;
		h->name = d->name;
		memcpy(h + 1, d->data, d->len);
		off += (uint32_t)((sizeof(*h) + d->len + 7) & ~(size_t)7);
	}
	l->off = 0;
	l->end = off;
	l->err = err;
	rs_udpq_drop_all(u);
	RS_STORE(u->rx_err, 0);
	*x = (struct rs_uleft_ref){ l, map, NULL };
	struct rs_uleft_ref **tail = &u->left;
	while (*tail)
		tail = &(*tail)->next;
	__atomic_store_n(tail, x, __ATOMIC_RELEASE);
}

/* In the child: the ring is gone; what was held is in the shared memory. */

static void destroy(struct rs_esock *e)
{
	struct rs_udp *u = udp_of(e);
	rs_udpq_drop_all(u);
	rs_udpq_spares_free(u);
	while (u->tx_head) { /* (flushed before: a fork child's copy) */
		struct rs_dgram *d = u->tx_head;
		u->tx_head = d->next;
		free(d);
	}
	while (u->left) {
		struct rs_uleft_ref *x = u->left;
		u->left = x->next;
		munmap(x->l, x->map);
		free(x);
	}
}

/* ---- the send queue's operations (udp_send.c) ------------------------------------- */

/* The owner, at a wait point (r locked): what is queued goes out. */
static void submit_tx(struct rs_ring *r, struct rs_esock *e)
{
	(void)r;
	rs_udp_tx_flush(udp_of(e), rs_udp_flush_how(udp_of(e)));
}

/* The watchdog (r locked; its owner is blocked where the library cannot
 * see): what the kernel takes now goes; the rest waits on the list. */
static void flush_queued(struct rs_ring *r, struct rs_esock *e)
{
	if (rs_udp_tx_flush(udp_of(e), RS_UDP_FLUSH_TRY) < 0)
		rs_ring_txq_add(r, e);
}

static int tx_pending(struct rs_esock *e)
{
	return udp_of(e)->tx_cnt != 0;
}

static size_t tx_held(struct rs_esock *e)
{
	return udp_of(e)->tx_bytes;
}

static size_t flush_direct(struct rs_esock *e)
{
	struct rs_udp *u = udp_of(e);
	size_t n = u->tx_bytes;
	rs_udp_tx_flush(u, RS_UDP_FLUSH_WAIT);
	return n - u->tx_bytes;
}

/* Before a call the kernel answers (connect, an option...): the queue
 * first, and what a send means may change. */
static void sync_tx(struct rs_esock *e)
{
	struct rs_udp *u = udp_of(e);
	rs_udp_tx_flush(u, RS_UDP_FLUSH_WAIT);
	rs_udp_tx_forget(u);
}

static void no_drain(struct rs_ring *r, struct rs_esock *e)
{
	(void)r;
	(void)e;
}

/* A send's message: ancillary data, or more than IOV_MAX buffers, is the
 * kernel's (n -1), after what is queued. */
static ssize_t send_call(struct rs_sock *s, int fd, const struct rs_send *m)
{
	return rs_udp_send_call(s, fd, m->iov, m->control ? -1 : m->n, m->flags, m->name, m->namelen);
}

const struct rs_kind_ops rs_udp_ops = {
	.name = "udp",
	.rx_group = RS_BGID_UDP,
	.arm = arm,
	.arm_when_watched = arm_when_watched,
	.complete = complete,
	.submit_recv = rs_udp_submit_recv,
	.submit_tx = submit_tx,
	.process_detach = process_detach,
	.drain_ended = no_drain,
	.flush_queued = flush_queued,
	.ring_gone = ring_gone,
	.detach_done = detach_done,
	.spawn_prepare = spawn_prepare,
	.fork_prepare = fork_prepare,
	.tx_pending = tx_pending,
	.flush_direct = flush_direct,
	.sync_tx = sync_tx,
	.close_waits_owner = 1,
	.close_flush = close_flush,
	.close_fd_free = close_fd_free,
	.close_own = close_own,
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
	.recv_call = rs_udp_recv_call,
	.send_call = send_call,
	.recvmmsg_call = rs_udp_recvmmsg,
	.after_send = rs_udp_after_send,
	.before_connect = rs_udp_before_connect,
};
