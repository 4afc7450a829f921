/* tcp_flush.c - the send path of stream sockets, from the queue on:
 * submitting the queued bytes (one sendmsg per socket in flight, zero-copy
 * where the route pays: route.c), writing them out with system calls
 * (another thread's call, the watchdog), the drain hand-over when the
 * kernel's buffer is full, and the send completions.  The send family
 * and the queuing are tcp_send.c's.
 *
 * Every function here runs with the socket's lock held (rs_esock_enter).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/sock_diag.h>

#include "engine_int.h"
#include "route.h"
#include "sys.h"
#include "tcp_int.h"

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
		j = rs_drain_start(t->e.fd, buf, len, t->e.closing ? NULL : r);
	}
	if (!j) {
		/* No drain thread (it could not start, or every slot is taken):
		 * the rest goes as a send that waits for room in the kernel,
		 * from this ring, which moves it whenever its thread next waits
		 * for the engine.  A nonblocking call never waits for it. */
		free(buf);
		t->tx_wait = 1;
		rs_ring_txq_add(r, &t->e);
		return;
	}
	rs_txq_drop_all(t, r);
	t->e.drain = j;
	if (!t->e.closing)
		rs_ring_draining_add(r, &t->e);
}

/* t's drain job has ended: an error is reported like any send's. */
void rs_tcp_drain_end(struct rs_tcp *t)
{
	int e = rs_drain_error(t->e.drain);
	if (t->e.owner)
		rs_ring_draining_del(t->e.owner, &t->e);
	rs_drain_release(t->e.drain);
	t->e.drain = NULL;
	if (e)
		rs_tcp_set_tx_err(t, e);
	if (!t->e.closing)
		rs_ep_sock_changed(&t->e);
}

/* Should the first k queued segments (bytes) go zero-copy?  Batches of
 * at least RINGSOCK_ZEROCOPY_MIN, all in frag chunks (the socket's linear
 * buffer is written again as soon as it is consumed), never while a send
 * must wait for room; and only where the route pays (route.c), asked once
 * per socket, or everywhere with RINGSOCK_ZEROCOPY=always. */
static int zc_use(struct rs_ring *r, struct rs_tcp *t, uint32_t k, size_t bytes)
{
	long long mode = rs_rt.cfg.v[RS_K_ZEROCOPY];
	if (bytes < (size_t)rs_rt.cfg.v[RS_K_ZEROCOPY_MIN] || mode == RS_ZC_NEVER || t->tx_wait ||
	    t->zc == RS_TZC_OFF)
		return 0;
	for (uint32_t i = 0; i < k; i++)
		if (!rs_txq_at(t, i)->chunk)
			return 0;
	if (t->zc == RS_TZC_UNKNOWN) {
		t->zc = RS_TZC_OFF;
		if (rs_probe_send_zc(&r->ring) == RS_ZC_NONE)
			return 0;
		if (mode == RS_ZC_ALWAYS) {
			t->zc = RS_TZC_ON;
		} else {
			struct sockaddr_storage ss;
			socklen_t sl = sizeof(ss);
			struct rs_route rt;
			if (rs_syscall(SYS_getpeername, t->e.fd, &ss, &sl) == 0 &&
			    rs_route_lookup((struct sockaddr *)&ss, sl, &rt) == 0 && rt.zc)
				t->zc = RS_TZC_ON;
		}
	}
	return t->zc == RS_TZC_ON;
}

void rs_tcp_submit_tx(struct rs_ring *r, struct rs_tcp *t)
{
	if (t->send_inflight || !t->tx_cnt || t->e.fd < 0)
		return;
	t->tx_new = 0;
	t->tx_holds = 0;
	rs_ring_slot_take(r, &t->e, r == rs_ring_tls); /* (a connection that lives: its slot) */
	struct io_uring_sqe *sqe = rs_ring_sqe(r);
	if (!sqe) {
		rs_ring_txq_add(r, &t->e); /* no room in the SQ: at the next round */
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
	struct rs_frag_hold *h = NULL;
	if (zc_use(r, t, k, bytes)) {
		struct rs_chunk *cs[RS_TX_IOV];
		for (uint32_t i = 0; i < k; i++)
			cs[i] = rs_txq_at(t, i)->chunk;
		h = rs_frag_hold_new(&r->frag, cs, k);
	}
	if (k > 1) {
		memset(&t->txs->msg, 0, sizeof(t->txs->msg));
		t->txs->msg.msg_iov = t->txs->iov;
		t->txs->msg.msg_iovlen = k;
	}
	if (h) {
		/* Zero-copy: the kernel reads the chunks until its notification
		 * (ring.c), which the hold waits for. */
		unsigned zf = rs_probe_send_zc(&r->ring) == RS_ZC_USAGE ? IORING_SEND_ZC_REPORT_USAGE : 0;
		if (k == 1) {
			io_uring_prep_send_zc(sqe, t->e.fd, t->txs->iov[0].iov_base, bytes, MSG_NOSIGNAL | how, zf);
		} else {
			io_uring_prep_sendmsg_zc(sqe, t->e.fd, &t->txs->msg, MSG_NOSIGNAL | how);
			sqe->ioprio |= (uint16_t)zf;
		}
		h->e = &t->e;
		t->inflight_zc = 1;
		rs_frag_zc_add(r, h);
		io_uring_sqe_set_data64(sqe, RS_UD(h, RS_UD_ZC));
		rs_stat_add(RS_C_ZC_SENDS, 1);
	} else if (k == 1) {
		io_uring_prep_send(sqe, t->e.fd, t->txs->iov[0].iov_base, bytes, MSG_NOSIGNAL | how);
	} else {
		io_uring_prep_sendmsg(sqe, t->e.fd, &t->txs->msg, MSG_NOSIGNAL | how);
	}
	rs_ring_sqe_file(sqe, &t->e);
	t->inflight_segs = k;
	t->inflight_bytes = bytes;
	if (!h)
		io_uring_sqe_set_data64(sqe, RS_UD(t, RS_UD_SEND));
	if (!t->tx_wait)
		r->sq_sends++; /* completes in the enter that submits it */
	t->send_inflight = 1;
	t->e.ops_inflight++;
	rs_stat_add(RS_C_SENDS_SUBMITTED, 1);
}

/* Write the queue with system calls (another thread takes over, exit, fork
 * in another thread).  Nothing may be in flight.  Returns bytes left. */
size_t rs_tcp_flush_direct(struct rs_tcp *t)
{
	struct rs_ring *r = t->e.owner;
	while (t->tx_cnt && !t->send_inflight && r) {
		struct rs_txseg *g = rs_txq_at(t, 0);
		long n = rs_syscall(SYS_sendto, t->e.fd, g->data, g->len, MSG_NOSIGNAL, NULL, 0);
		if (n == -EAGAIN) {
			struct pollfd p = { t->e.fd, POLLOUT, 0 };
			rs_syscall(SYS_poll, &p, 1, 1000);
			continue;
		}
		if (n == -EINTR)
			continue;
		if (n < 0) {
			rs_tcp_set_tx_err(t, (int)-n);
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
void rs_tcp_flush_queued(struct rs_ring *r, struct rs_tcp *t)
{
	while (t->tx_cnt && !t->send_inflight && !t->e.drain && !t->tx_wait && t->e.fd >= 0) {
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
		long n = rs_syscall(SYS_sendmsg, t->e.fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n > 0)
			rs_txq_consume(t, (size_t)n, r);
		if (n == -EINTR)
			continue;
		if (n < 0 && n != -EAGAIN) {
			rs_tcp_set_tx_err(t, (int)-n);
			rs_txq_drop_all(t, r);
			break;
		}
		if (n < 0 || (size_t)n < bytes) {
			drain_handover(r, t); /* (or back on r's send list for its owner) */
			break;
		}
	}
	rs_ep_sock_changed(&t->e);
}

/* ---- completions ---------------------------------------------------------- */

void rs_tcp_send_done(struct rs_ring *r, struct rs_tcp *t, struct io_uring_cqe *c)
{
	t->send_inflight = 0;
	t->inflight_segs = 0;
	t->e.ops_inflight--;
	int res = c->res;
	int full = 0;
	int was_zc = t->inflight_zc;
	t->inflight_zc = 0;
	if (was_zc && (res == -EOPNOTSUPP || res == -EINVAL || res == -ENOMEM || res == -ENOBUFS)) {
		/* The kernel refused zero-copy for this socket (a TLS or sockmap
		 * socket has no zero-copy support; no memory for the
		 * notification): nothing was sent; the same bytes go again,
		 * copied, and this socket never tries zero-copy again. */
		t->zc = RS_TZC_OFF;
		rs_stat_add(RS_C_ZC_REFUSED, 1);
		if (t->tx_cnt && t->e.fd >= 0)
			rs_ring_txq_add(r, &t->e);
		return;
	}
	if (res > 0) {
		rs_txq_consume(t, (size_t)res, r);
		full = (size_t)res < t->inflight_bytes;
	} else if (res == -EAGAIN || res == 0) {
		full = 1;
	} else {
		rs_tcp_set_tx_err(t, -res);
		rs_txq_drop_all(t, r);
	}
	if (!t->tx_cnt)
		t->tx_wait = 0;
	if (full && t->tx_cnt && t->e.fd >= 0 && !t->tx_wait) {
		drain_handover(r, t);
		return;
	}
	if (t->tx_cnt && t->e.fd >= 0)
		rs_ring_txq_add(r, &t->e);
}

int rs_tcp_tx_idle(void *arg)
{
	struct rs_tcp *t = arg;
	return !t->tx_cnt && !t->send_inflight;
}

/* Queued bytes go to the kernel, or to the drain thread when the kernel's
 * buffer is full (this never waits for the peer). */
void rs_tcp_tx_submit_now(struct rs_tcp *t)
{
	if (t->e.mode == RS_ES_ARMED && t->e.owner == rs_ring_tls && (t->tx_cnt || t->send_inflight))
		rs_ring_wait(t->e.owner, rs_tcp_tx_idle, t, -1);
	else if (t->e.mode == RS_ES_DETACHING && !t->send_inflight)
		rs_tcp_flush_direct(t);
}

/* Before a call that must see every accepted byte in the kernel
 * (SIOCOUTQ, setsockopt TCP_CORK, a send the kernel makes...): this waits
 * for a drain in progress too. */
void rs_tcp_sync_tx(struct rs_tcp *t)
{
	/* (the call may change the socket's options or send: ask again) */
	t->tx_mss = 0; /* (tx_fits asks again) */
	rs_tcp_tx_submit_now(t);
	if (t->e.drain) {
		rs_drain_wait(t->e.drain, -1);
		rs_tcp_drain_end(t);
	}
}

