/* udp_send.c - the send path of datagram sockets.
 *
 * A datagram sent by the thread whose ring serves an unconnected socket is
 * queued: copied, and the call returns its length at once, as the
 * kernel's would.  Queued datagrams reach the kernel in order, in one
 * sendmmsg system call per batch, in which consecutive datagrams of one
 * size (the last may be shorter) to one destination travel as one
 * UDP_SEGMENT (GSO) message where the route allows it (route.c: the
 * device offloads checksums, the segment fits the path MTU; asked once
 * per destination, when it becomes queueable): the kernel cuts it back
 * into the same datagrams, so every receiving socket sees what it would
 * have seen, in the same order.  They go
 *  - at the thread's next wait point (epoll_wait, poll, select, a receive
 *    that finds nothing or waits, a sleep: preload/sleep.c) and before any
 *    call it makes that the kernel answers (the ring's send list: ringlist.c,
 *    preload.h);
 *  - when TXQ_MAX are queued;
 *  - before anything else of the socket's reaches the kernel: a send that
 *    is not queued, an option, connect, shutdown, close, a fork or spawn,
 *    another thread's send (sync_tx, flush_direct);
 *  - by the drain thread's watchdog when the thread is blocked where the
 *    library cannot see (engine.c).
 * Only one socket of a thread has datagrams queued at a time (the ring's
 * udp_tx), so they reach the kernel in the program's order across sockets.
 *
 * Only what the kernel would have taken is queued: a datagram of at most
 * one Ethernet frame's payload, with no control message and no flag but
 * MSG_DONTWAIT and MSG_NOSIGNAL, on an unconnected socket (a connected
 * one's ICMP errors must reach the very next send), from the thread whose
 * ring serves the socket, to a destination the kernel took twice in a row
 * at least that large, since the last call of the program on the socket
 * that the kernel answered (connect, an option: they may change what a
 * send means), and not after a send with MSG_MORE (the kernel holds that
 * one for the next).  Anything else is the kernel's own send, after what
 * is queued.
 *
 * If the kernel still refuses a queued datagram (a route or a firewall
 * changed), it is not sent, as the kernel's own send would not have sent
 * it; it is counted (udp_send_errors) and its error becomes the socket's
 * pending error, reported by the next call (or SO_ERROR, or EPOLLERR), as
 * an asynchronous error is.  When the kernel's buffer is full, a blocking
 * socket's flush waits for room, as the program's blocking send would
 * have (the queue is short); a nonblocking socket's rest stays queued and
 * the ring polls for room; either way the socket's next
 * TX_KERNEL_AFTER_FULL sends are the kernel's, so a nonblocking program
 * sees EAGAIN where it would have.
 */
#define _GNU_SOURCE 1 /* (sendmmsg) */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "engine_int.h"
#include "route.h"
#include "sys.h"
#include "udp_int.h"

#ifndef SOL_UDP
#define SOL_UDP 17
#endif
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103 /* (Linux 4.18) */
#endif

#define TXQ_MAX 64                /* datagrams a socket queues */
#define TXQ_LEN4 1472             /* the largest queued: 1500 - IPv4 - UDP */
#define TXQ_LEN6 1452             /* 1500 - IPv6 - UDP */
#define GSO_SEGS 64               /* UDP_MAX_SEGMENTS of every kernel with GSO */
#define GSO_BYTES 65000           /* one message's payload (below 65507) */
#define MMSG 16                   /* messages per sendmmsg */
#define TX_KERNEL_AFTER_FULL 64   /* sends that are the kernel's after EAGAIN */
#define FLUSH_WAIT_MS 10000       /* a flush waits this long for room */

/* ---- destinations --------------------------------------------------------------- */

/* The name as the kernel reads it, in *out (unused bytes zero): its
 * length, 0 for none, or -1 when it is not one the engine queues for. */
static int norm_name(const void *name, socklen_t len, struct sockaddr_in6 *out)
{
	memset(out, 0, sizeof(*out));
	if (!name || !len)
		return 0;
	if (len > sizeof(struct sockaddr_storage))
		return -1; /* (the kernel's EINVAL) */
	if (len < sizeof(sa_family_t))
		return -1;
	sa_family_t fam;
	memcpy(&fam, name, sizeof(fam));
	if (fam == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = name;
		struct sockaddr_in *o = (struct sockaddr_in *)out;
		o->sin_family = AF_INET;
		o->sin_port = in->sin_port;
		o->sin_addr = in->sin_addr;
		return sizeof(struct sockaddr_in);
	}
	if (fam == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		memcpy(out, name, sizeof(*out));
		return sizeof(*out);
	}
	if (len > sizeof(*out))
		return -1;
	memcpy(out, name, len);
	return (int)len;
}

static struct rs_udp_dst *dst_find(struct rs_udp *u, const struct sockaddr_in6 *name, int namelen)
{
	for (int i = 0; i < RS_UDP_DSTS; i++) {
		struct rs_udp_dst *d = &u->dst[i];
		if (d->ok && d->namelen == (uint32_t)namelen && !memcmp(&d->name, name, (size_t)namelen))
			return d;
	}
	return NULL;
}

void rs_udp_tx_forget(struct rs_udp *u)
{
	memset(u->dst, 0, sizeof(u->dst));
}

/* ---- the queue ------------------------------------------------------------------ */

static void pop(struct rs_udp *u)
{
	struct rs_dgram *d = u->tx_head;
	u->tx_head = d->next;
	if (!u->tx_head) {
		u->tx_tail = NULL;
		if (u->e.owner && u->e.owner->udp_tx == &u->e)
			u->e.owner->udp_tx = NULL;
	}
	u->tx_bytes -= d->len;
	RS_STORE(u->tx_cnt, u->tx_cnt - 1);
	if (!__atomic_load_n(&rs_dying, __ATOMIC_RELAXED))
		free(d); /* (a fatal signal's flush frees nothing: it may have
			  * come inside malloc) */
}

static int same_dst(const struct rs_dgram *a, const struct rs_dgram *b)
{
	return a->namelen == b->namelen && !memcmp(&a->name, &b->name, a->namelen);
}

/* Wait for room in the kernel's send buffer until deadline (no lock is
 * released: the queue is short and the kernel frees room on its own); 0
 * or -ETIME. */
static int wait_room(int fd, int64_t deadline)
{
	struct pollfd p = { fd, POLLOUT, 0 };
	for (;;) {
		int64_t left = deadline - rs_now_ns();
		if (left <= 0)
			return -ETIME;
		struct timespec ts = { (time_t)(left / 1000000000), (long)(left % 1000000000) };
		long r = rs_syscall(SYS_ppoll, &p, 1, &ts, NULL, _NSIG / 8);
		if (r > 0)
			return 0;
		if (r < 0 && r != -EINTR)
			return (int)r;
	}
}

/* The owner's ring tells it when the kernel's buffer has room (a one-shot
 * poll; complete() puts the socket back on the send list). */
static void poll_room(struct rs_udp *u)
{
	struct rs_ring *r = u->e.owner;
	if (u->tx_polling || !r || r != rs_ring_tls)
		return;
	struct io_uring_sqe *sqe = rs_ring_sqe(r);
	if (!sqe)
		return; /* (the next wait point tries again) */
	io_uring_prep_poll_add(sqe, u->e.fd, POLLOUT);
	io_uring_sqe_set_data64(sqe, RS_UD(u, RS_UD_SEND));
	u->tx_polling = 1;
	u->e.ops_inflight++;
}

void rs_udp_tx_unpoll(struct rs_ring *r, struct rs_udp *u)
{
	struct io_uring_sqe *sqe;
	if (!u->tx_polling || u->tx_unpolling || !(sqe = rs_ring_sqe(r)))
		return;
	io_uring_prep_poll_remove(sqe, RS_UD(u, RS_UD_SEND));
	io_uring_sqe_set_data64(sqe, RS_UD(u, RS_UD_CANCEL));
	u->tx_unpolling = 1;
	u->e.ops_inflight++;
}

/* The control message of a UDP_SEGMENT run (its segment size). */
union seg_ctl {
	struct cmsghdr h;
	char buf[CMSG_SPACE(sizeof(uint16_t))];
};

/* The next sendmmsg's messages from the head of u's queue (vec zeroed):
 * up to MMSG messages and TXQ_MAX datagrams, a run of datagrams of one
 * size to one destination in one message with UDP_SEGMENT (unless
 * gso_off).  segs[i]: the datagrams of message i.  Returns the messages. */
static int batch_build(struct rs_udp *u, struct mmsghdr *vec, struct iovec *iov, union seg_ctl *ctl, uint8_t *segs)
{
	int m = 0, ni = 0;
	struct rs_dgram *d = u->tx_head;
	while (d && m < MMSG && ni < TXQ_MAX) {
		struct msghdr *h = &vec[m].msg_hdr;
		h->msg_name = d->namelen ? &d->name : NULL;
		h->msg_namelen = d->namelen;
		h->msg_iov = &iov[ni];
		struct rs_dgram *x = d, *prev;
		uint32_t bytes = 0;
		int k = 0;
		do {
			iov[ni++] = (struct iovec){ x->data, x->len };
			bytes += x->len;
			k++;
			prev = x;
			x = x->next;
		} while (x && !u->gso_off && d->len && d->len <= d->gso_max && x->len && prev->len == d->len && x->len <= d->len &&
			 k < GSO_SEGS && ni < TXQ_MAX && bytes + x->len <= GSO_BYTES && same_dst(x, d));
		h->msg_iovlen = (size_t)k;
		if (k > 1) {
			memset(&ctl[m], 0, sizeof(ctl[m]));
			h->msg_control = ctl[m].buf;
			h->msg_controllen = sizeof(ctl[m].buf);
			struct cmsghdr *c = CMSG_FIRSTHDR(h);
			c->cmsg_level = SOL_UDP;
			c->cmsg_type = UDP_SEGMENT;
			c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
			uint16_t gso = (uint16_t)d->len;
			memcpy(CMSG_DATA(c), &gso, sizeof(gso));
		}
		segs[m++] = (uint8_t)k;
		d = x;
	}
	return m;
}

/* Send the m messages (MSG_DONTWAIT): the messages the kernel took, or
 * -errno. */
static long batch_send(int fd, struct mmsghdr *vec, int m, const uint8_t *segs)
{
	/* (one message: the call with the least for the kernel to copy
	 * in; a ping-pong server's reply is the usual one) */
	long r;
	if (m > 1) {
		r = rs_syscall(SYS_sendmmsg, fd, vec, m, MSG_DONTWAIT | MSG_NOSIGNAL);
	} else {
		struct msghdr *h = &vec[0].msg_hdr;
		if (segs[0] == 1)
			r = rs_syscall(SYS_sendto, fd, h->msg_iov[0].iov_base, h->msg_iov[0].iov_len,
				       MSG_DONTWAIT | MSG_NOSIGNAL, h->msg_name, h->msg_namelen);
		else
			r = rs_syscall(SYS_sendmsg, fd, h, MSG_DONTWAIT | MSG_NOSIGNAL);
		r = r >= 0 ? 1 : r;
	}
	return r;
}

int rs_udp_tx_flush(struct rs_udp *u, int how)
{
	int fd = u->e.fd;
	int64_t deadline = 0;
	while (u->tx_head) {
		if (fd < 0) {
			/* (closed under the engine: nothing can send them) */
			while (u->tx_head)
				pop(u);
			break;
		}
		struct mmsghdr vec[MMSG];
		struct iovec iov[TXQ_MAX];
		union seg_ctl ctl[MMSG];
		uint8_t segs[MMSG];
		memset(vec, 0, sizeof(vec));
		int m = batch_build(u, vec, iov, ctl, segs);
		long r = batch_send(fd, vec, m, segs);
		for (long i = 0; i < r; i++) {
			for (int j = 0; j < segs[i]; j++)
				pop(u);
			if (segs[i] > 1)
				rs_stat_add(RS_C_UDP_GSO_SENDS, 1);
		}
		if (r > 0)
			continue; /* (a short count: the next call reports why) */
		int err = (int)-r;
		if (err == EINTR)
			continue;
		if (err == EAGAIN) {
			/* The kernel's buffer is full: its next sends are the
			 * kernel's, and a nonblocking program sees EAGAIN. */
			u->tx_kernel = TX_KERNEL_AFTER_FULL;
			if (!RS_LOAD(u->e.kfull)) {
				RS_STORE(u->e.kfull, 1); /* writability is the kernel's until it has room */
				rs_ep_sock_kfull(&u->e);
			}
			if (how == RS_UDP_FLUSH_POLL)
				poll_room(u);
			if (how != RS_UDP_FLUSH_WAIT)
				return -EAGAIN;
			if (!deadline)
				deadline = rs_now_ns() + (int64_t)FLUSH_WAIT_MS * 1000000;
			if (wait_room(fd, deadline) == 0)
				continue;
			rs_warn("udp fd %d: %u queued datagrams found no room in the kernel's buffer for %d s: dropped",
				fd, u->tx_cnt, FLUSH_WAIT_MS / 1000);
			rs_stat_add(RS_C_UDP_SEND_ERRORS, u->tx_cnt);
			while (u->tx_head)
				pop(u);
			break;
		}
		if (segs[0] > 1) {
			/* A message of several datagrams refused (the device, the
			 * route or an option does not allow UDP_SEGMENT, or a rule
			 * that sees the whole message): one by one from now on,
			 * so an error is the one datagram's it is. */
			u->gso_off = 1;
			continue;
		}
		/* The first datagram's own error: not sent, as the kernel's send
		 * would not have sent it; the next call reports it, and sends to
		 * that destination are the kernel's again. */
		struct rs_udp_dst *x = dst_find(u, &u->tx_head->name, (int)u->tx_head->namelen);
		if (x)
			x->ok = 0;
		pop(u);
		rs_stat_add(RS_C_UDP_SEND_ERRORS, 1);
		rs_udp_keep_error(u, err);
	}
	return 0;
}

/* ---- the calls ------------------------------------------------------------------- */

/* A connected socket's sends stay the kernel's: an ICMP error from its
 * peer (port unreachable) becomes the socket's error at once on loopback,
 * and the very next send must report it, which a queued one cannot.
 * (Unconnected sockets never get such errors, unless IP_RECVERR is set,
 * which leaves the engine.) */
static int connected(struct rs_sock *s)
{
	return __atomic_load_n(&s->conn_state, __ATOMIC_RELAXED) != RS_CONN_UNKNOWN;
}

/* Is the send the kind the engine queues (see the top)?  The name's
 * normal form in *name, its length in *namelen. */
static int queueable(struct rs_udp *u, const struct iovec *iov, int n, int flags, const void *name,
		     socklen_t namelen, struct sockaddr_in6 *nn, int *nl, size_t *len, unsigned *gso_max)
{
	/* (a signal handler's send is the kernel's, after what is queued:
	 * the call the handler interrupted may be the kernel's own, which
	 * SA_RESTART resumes without coming back to flush; see tcp_send.c) */
	if (!rs_rt.cfg.v[RS_K_UDP_SEND_BATCH] || (flags & ~(MSG_DONTWAIT | MSG_NOSIGNAL)) || u->tx_kernel ||
	    rs_in_handler || u->corked || RS_LOAD(u->e.kfull) ||
	    u->e.mode != RS_ES_ARMED || u->e.owner != rs_ring_tls || u->e.closing || u->shared || n < 0 ||
	    n > IOV_MAX || connected(u->e.sock))
		return 0;
	*len = rs_iov_total(iov, n);
	if (*len > (u->e.sock->domain == AF_INET6 ? TXQ_LEN6 : TXQ_LEN4))
		return 0;
	*nl = norm_name(name, namelen, nn);
	if (*nl < 0)
		return 0;
	struct rs_udp_dst *d = dst_find(u, nn, *nl);
	if (!d || d->ok < 2 || d->maxlen < *len)
		return 0;
	/* A reader that waits for every datagram (its reads are the
	 * kernel's: kwait) answers each with one send, which a flush at its
	 * next read would carry alone: nothing to merge, so the first send
	 * after each read is the kernel's, made at once (a ping-pong peer's
	 * reply); a second one before the next read is queued again. */
	if (RS_LOAD(u->kwait) && !u->tx_since_read) {
		RS_STORE(u->tx_pp, 1);
		return 0;
	}
	/* (a queued send needs the drain thread: rs_ring_may_queue) */
	if (!rs_ring_may_queue(u->e.owner))
		return 0;
	*gso_max = d->gso_max;
	return 1;
}

static void enqueue(struct rs_udp *u, struct rs_dgram *d)
{
	struct rs_ring *r = u->e.owner;
	if (r->udp_tx && r->udp_tx != &u->e) {
		/* Another socket's datagrams were sent first: they go first
		 * (only one socket of a thread has any queued, so datagrams
		 * reach the kernel in the program's order, whichever socket a
		 * receiver reads them from). */
		rs_udp_tx_flush(udp_of(r->udp_tx), RS_UDP_FLUSH_WAIT);
	}
	r->udp_tx = &u->e;
	if (u->tx_tail)
		u->tx_tail->next = d;
	else
		u->tx_head = d;
	u->tx_tail = d;
	u->tx_bytes += d->len;
	RS_STORE(u->tx_cnt, u->tx_cnt + 1);
	rs_stat_add(RS_C_UDP_QUEUED, 1);
	if (!u->e.on_txq)
		rs_ring_txq_add(u->e.owner, &u->e);
}

/* A queued datagram: a copy of the program's len bytes (iov, n) and its
 * destination (nn, nl bytes; 0: the connected peer); NULL: no memory. */
static struct rs_dgram *dgram_new(const struct iovec *iov, int n, size_t len, const struct sockaddr_in6 *nn, int nl,
				  unsigned gso_max)
{
	struct rs_dgram *d = malloc(sizeof(*d) + (len ? len : 1));
	if (d) {
		d->next = NULL;
		d->len = (uint32_t)len;
		d->namelen = (uint32_t)nl;
		d->name = *nn;
		d->gso_max = gso_max;
		size_t off = 0;
		for (int i = 0; i < n; i++) {
			if (iov[i].iov_len)
				memcpy(d->data + off, iov[i].iov_base, iov[i].iov_len);
			off += iov[i].iov_len;
		}
	}
	return d;
}

ssize_t rs_udp_send_call(struct rs_sock *s, int fd, const struct iovec *iov, int n, int flags, const void *name,
			 socklen_t namelen)
{
	struct rs_esock *h = atomic_load_explicit(&s->eng, memory_order_acquire);
	if (!h) {
		/* Not armed yet: a sender's socket is armed at its first send
		 * (unconnected, one descriptor: arm() says), so its later
		 * datagrams can be queued; the kernel sends this one. */
		if (n >= 0 && !connected(s) && !s->no_engine && rs_rt.cfg.v[RS_K_UDP_SEND_BATCH]) {
			struct rs_esock *a = rs_esock_enter(s, fd, 1);
			if (a)
				rs_esock_unlock(a);
		}
		return RS_PASS;
	}
	struct rs_udp *hu = udp_of(h);
	/* Another thread's send, with nothing queued and no error held (hints
	 * read without the lock: what arrives meanwhile may as well come
	 * after this send): the kernel's, and the socket stays where it is
	 * (a thread that replies on a socket another reads does not take it
	 * from the engine). */
	struct rs_ring *mine = rs_ring_tls;
	if ((!mine || RS_LOAD(h->owner) != mine) && !RS_LOAD(hu->tx_cnt) && !rs_udp_error_held(hu) &&
	    !(flags & MSG_MORE))
		return RS_PASS;
	struct rs_esock *e = rs_esock_enter(s, fd, 0);
	if (!e)
		return RS_PASS;
	struct rs_udp *u = udp_of(e);
	if (rs_esock_passive(e)) {
		rs_esock_unlock(e);
		return RS_PASS;
	}
	int err = rs_udp_take_error(u);
	if (err) {
		rs_ep_sock_changed(e);
		rs_esock_unlock(e);
		return -err;
	}
	struct sockaddr_in6 nn;
	int nl;
	size_t len;
	unsigned gso_max = 0;
	int how = rs_udp_flush_how(u);
	RS_STORE(u->tx_pp, 0);
	int q = queueable(u, iov, n, flags, name, namelen, &nn, &nl, &len, &gso_max);
	if (u->tx_since_read < 2)
		u->tx_since_read++;
	if (q) {
		if (u->tx_cnt >= TXQ_MAX && rs_udp_tx_flush(u, how) < 0) {
			/* (nonblocking, and the kernel's buffer is full) */
			rs_esock_unlock(e);
			return -EAGAIN;
		}
		struct rs_dgram *d = dgram_new(iov, n, len, &nn, nl, gso_max);
		if (d) {
			enqueue(u, d);
			if (u->tx_cnt >= TXQ_MAX)
				rs_udp_tx_flush(u, how);
			else
				rs_stat_add(RS_C_CALLS_NOSYS, 1);
			rs_esock_unlock(e);
			return (ssize_t)len;
		}
	}
	/* The kernel's send, after what is queued (this socket's, or
	 * another's of this thread).  A send with MSG_MORE leaves data in the
	 * kernel (corked) that the next datagrams would join: none is queued
	 * until a send without it. */
	struct rs_ring *o = e->owner;
	if (o && o == mine && o->udp_tx && o->udp_tx != e)
		rs_udp_tx_flush(udp_of(o->udp_tx), RS_UDP_FLUSH_WAIT);
	if (rs_udp_tx_flush(u, how) < 0) {
		/* (nonblocking, the kernel's buffer full: this send must not
		 * overtake what is queued, and the kernel would say EAGAIN) */
		rs_esock_unlock(e);
		return -EAGAIN;
	}
	u->corked = (flags & MSG_MORE) != 0;
	if (u->tx_pp)
		rs_stat_add(RS_C_DIRECT, 1);
	err = rs_udp_take_error(u);
	if (err)
		rs_ep_sock_changed(e);
	rs_esock_unlock(e);
	return err ? -err : RS_PASS;
}

void rs_udp_after_send(struct rs_sock *s, int fd, ssize_t r, int err, const void *name, socklen_t namelen)
{
	struct rs_esock *h = atomic_load_explicit(&s->eng, memory_order_acquire);
	struct rs_ring *mine = rs_ring_tls;
	if (!h)
		return;
	int own = mine && RS_LOAD(h->owner) == mine;
	/* (another thread's send: only a full buffer concerns the socket;
	 * entering it would take it from its owner) */
	if (!(r < 0 && err == EAGAIN) && (!own || (r >= 0 && connected(s))))
		return;
	if (r >= 0 && ((size_t)r > (s->domain == AF_INET6 ? TXQ_LEN6 : TXQ_LEN4) || !rs_rt.cfg.v[RS_K_UDP_SEND_BATCH]))
		return; /* (too large to be queued: nothing to learn) */
	if (r >= 0 && RS_LOAD(udp_of(h)->tx_pp))
		return; /* (a destination the kernel took: nothing to learn) */
	struct rs_esock *e = rs_esock_enter(s, fd, 0);
	if (!e)
		return;
	struct rs_udp *u = udp_of(e);
	if (r < 0 && err == EAGAIN) {
		u->tx_kernel = TX_KERNEL_AFTER_FULL;
		if (!RS_LOAD(e->kfull)) {
			RS_STORE(e->kfull, 1); /* writability is the kernel's until it has room */
			rs_ep_sock_kfull(e);
		}
	}
	struct sockaddr_in6 nn;
	int nl = norm_name(name, namelen, &nn);
	if (nl >= 0 && mine && e->owner == mine && !rs_esock_passive(e)) {
		struct rs_udp_dst *d = dst_find(u, &nn, nl);
		if (r < 0) {
			if (d)
				d->ok = 0; /* twice in a row, or it proves nothing */
		} else {
			if (u->tx_kernel)
				u->tx_kernel--;
			if (!d) {
				d = &u->dst[u->dst_next++ % RS_UDP_DSTS];
				*d = (struct rs_udp_dst){ .namelen = (uint32_t)nl, .name = nn };
			}
			if (d->ok < 2 && ++d->ok == 2) {
				/* Queueable from now on: may its runs travel as one
				 * UDP_SEGMENT message on this route, and how large? */
				struct rs_route rt;
				if (rs_route_lookup((const struct sockaddr *)&nn, (socklen_t)nl, &rt) == 0)
					d->gso_max = rt.gso_max;
				else /* (no answer, netlink not allowed: try, and give it up if refused) */
					d->gso_max = (uint16_t)(u->e.sock->domain == AF_INET6 ? TXQ_LEN6 : TXQ_LEN4);
			}
			if ((size_t)r > d->maxlen)
				d->maxlen = (uint16_t)r;
		}
	}
	rs_esock_unlock(e);
}

void rs_udp_before_connect(struct rs_sock *s, int fd)
{
	struct rs_esock *h = atomic_load_explicit(&s->eng, memory_order_acquire);
	struct rs_ring *mine = rs_ring_tls;
	/* (another thread's socket with nothing queued: its destinations
	 * prove nothing once it is connected anyway, and entering it would
	 * take it from its owner) */
	if (h && ((mine && RS_LOAD(h->owner) == mine) || RS_LOAD(udp_of(h)->tx_cnt)))
		rs_sock_before_kernel(s, fd, -1); /* queued datagrams go to the old peer first */
}
