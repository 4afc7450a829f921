/* tcp_send.c - the send path of stream sockets.
 *
 * The send family copies into frag slices and queues them; queued bytes
 * go out in one sendmsg per socket (one in flight at a time) at the next
 * wait point, when SEND_BATCH sockets are waiting, or when the socket is
 * closed, shut down or handed over.  Sends never block (MSG_DONTWAIT), so
 * each completes in the io_uring_enter that submits it.  A remainder the
 * kernel could not take (its buffer is full) goes to the drain thread
 * (drain.c), which sends it as the peer reads, whatever the owner does
 * meanwhile; the socket takes no new bytes until then.  Errors of a send
 * already accepted are reported on the next call, as the kernel reports a
 * pending socket error.
 *
 * Every function here runs with the socket's lock held (rs_esock_enter),
 * except the whole call (rs_tcp_send_call), which takes it.
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

static ssize_t send_error(int e, int flags);
static int take_send_error(struct rs_tcp *t);

ssize_t rs_tcp_send_call(struct rs_sock *s, int fd, const struct iovec *iov, int n, int flags)
{
	if (flags & ~(MSG_DONTWAIT | MSG_NOSIGNAL | MSG_MORE)) {
		/* (MSG_OOB...) the kernel's, after the queued bytes; but an
		 * error the engine took from the kernel is this send's */
		rs_sock_before_kernel(s, fd, -1);
		struct rs_tcp *t = rs_tcp_of(rs_esock_enter(s, fd, 0));
		int e = 0;
		if (t) {
			rs_rxq_shared_err(t);
			if (!rs_esock_passive(&t->e) && (t->tx_err || t->rx_err))
				e = take_send_error(t);
			rs_esock_unlock(&t->e);
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
		struct rs_tcp *t = rs_tcp_of(rs_esock_enter_served(s, fd));
		if (!t) {
			r = RS_PASS;
			break;
		}
		rs_rxq_shared_err(t);
		if (t->e.mode == RS_ES_DETACHED && !t->tx_cnt && !t->e.drain && !t->rx_err && !t->tx_err) {
			/* A blocking send must not hold the socket's lock. */
			rs_esock_unlock(&t->e);
			r = RS_PASS;
			break;
		}
		/* after the first bytes, a later failure only ends the call */
		r = rs_tcp_send(t, cur.v, cur.n, done ? flags | MSG_NOSIGNAL : flags);
		if (r > 0 && block && done + (size_t)r < total) {
			rs_esock_unlock(&t->e);
			done += (size_t)r;
			if (rs_iov_cur_skip(&cur, iov, n, (size_t)r) < 0)
				break;
			continue;
		}
		if (r != -EAGAIN || !block || stop) {
			rs_esock_unlock(&t->e);
			if (r == -EAGAIN && stop)
				r = stop;
			break;
		}
		if (!have_deadline) {
			deadline = rs_call_deadline(s, fd, 0);
			have_deadline = 1;
		}
		if (t->e.mode == RS_ES_ARMED && !RS_LOAD(t->e.kfull)) {
			stop = rs_block_in_ring(&t->e, deadline, done != 0); /* the drain job's end wakes it */
			continue;
		}
		if (t->e.mode == RS_ES_ARMED && !t->tx_cnt && !t->send_inflight && !t->e.drain) {
			/* the kernel's buffer is full and nothing of ours is queued:
			 * it waits for room, with its own timeout and signal rules */
			rs_esock_unlock(&t->e);
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
		rs_esock_unlock(&t->e);
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
	if (t->e.on_txq || t->send_inflight)
		return;
	rs_ring_txq_add(r, &t->e);
	if (++r->nr_tx_sqes >= r->send_batch)
		rs_ring_progress(r);
}

/* The error a send reports first: one a send completion of ours took
 * from the kernel, else one a receive took (tx_err or rx_err set). */
static int take_send_error(struct rs_tcp *t)
{
	int e = t->tx_err;
	if (!e)
		return rs_tcp_take_error(t);
	RS_STORE(t->tx_err, 0);
	if (e != EPIPE)
		t->epipe_pending = 1;
	return e;
}

/* A send on a socket leaving the engine: after what the owner still has,
 * the kernel's. */
/* A send that goes to the kernel now: what the thread queued before it
 * on its other sockets reaches the kernel first, in the order the program
 * made them (a peer may watch several connections). */
static void others_first(struct rs_tcp *t)
{
	struct rs_ring *r = t->e.owner;
	if (r && r == rs_ring_tls && RS_LOAD(r->txq))
		rs_ring_progress(r);
}

static ssize_t send_leaving(struct rs_tcp *t, const struct iovec *iov, int iovcnt, int flags)
{
	if (t->tx_err || t->rx_err)
		return send_error(take_send_error(t), flags);
	if (t->tx_cnt || t->send_inflight || t->e.drain) {
		/* The owner still has earlier bytes: they go first. */
		if (t->e.mode == RS_ES_DETACHING && !t->send_inflight)
			rs_tcp_flush_direct(t);
		if (t->tx_cnt || t->send_inflight || t->e.drain)
			return -EAGAIN;
	}
	others_first(t);
	return rs_sys_sendv(t->e.fd, iov, iovcnt, flags | MSG_DONTWAIT);
}

/* Does this send go straight to the kernel (nothing of ours queued)? */
static int send_to_kernel(struct rs_tcp *t, size_t total)
{
	size_t direct = (size_t)rs_rt.cfg.v[RS_K_DIRECT_THRESHOLD];
	/* A blocking ping-pong socket's one send per round (its reads go to
	 * the kernel): nothing to batch it with, so the kernel's send. */
	struct rs_sock *s = t->e.sock;
	int pp = !s->nonblock && t->rx_direct && RS_LOAD(s->pingpong) && !RS_LOAD(s->tx_run);
	/* Its thread serves one socket per wake-up: no other send to merge. */
	int alone = t->rx_direct && t->direct_why == RS_DIRECT_ALONE;
	/* Open before a fork or spawn: the other process may shut it down or
	 * draw its reset, which only a send to the kernel sees at once. */
	int shared = s->born_gen != __atomic_load_n(&rs_fork_gen, __ATOMIC_RELAXED);
	if (!s->nonblock && RS_LOAD(s->tx_run) < 2)
		RS_STORE(s->tx_run, RS_LOAD(s->tx_run) + 1);
	/* A large send: straight into the kernel's buffer, one copy.  The
	 * same while the kernel's buffer was last seen full: a partial count
	 * or EAGAIN, as the kernel says.  And the socket's first send: it may
	 * have been shut down or reset before the engine saw it, and the
	 * kernel says so at once; and so after the peer's end (FIN), or once
	 * the kernel reported ERR/HUP to a poll, when a reset that only the
	 * kernel has seen fails the send. */
	return !t->tx_cnt && !t->send_inflight &&
	       ((direct && total >= direct) || RS_LOAD(t->e.kfull) || !t->sent || t->rx_eof ||
		RS_LOAD(t->e.k_hup) || pp || alone || shared);
}

/* ---- room in the kernel's send buffer ----------------------------------
 * tcp_sendmsg takes more bytes while the memory the socket's send queue
 * charges (sk_wmem_queued: the payload, plus each skb's head) is below
 * sk_sndbuf; SO_MEMINFO says both.  tx_room is that room when it was
 * asked; tx_acc counts the bytes the engine has accepted since (queued or
 * sent straight), starting from what was queued and not yet the kernel's.
 * They cost their bytes plus an skb head per MSS or part of them, taken
 * together (the kernel appends small sends to the last skb; each skb
 * holds at least an MSS).  Only the peer's acknowledgements give room
 * back (or a larger buffer), so the estimate never claims more room than
 * there is.  A send beyond it asks again: one system call per room's
 * worth of sends. */
#define RS_SKB_HEAD 2048 /* an skb head's truesize: 832 bytes on 6.x x86-64 */

static uint64_t tx_cost(const struct rs_tcp *t, uint64_t n)
{
	return n + (uint64_t)RS_SKB_HEAD * (n / t->tx_mss + 1);
}

/* net.ipv4.tcp_notsent_lowat; UINT32_MAX (the default) when unreadable. */
static uint32_t notsent_lowat_sysctl(void)
{
	static int64_t v = -1;
	int64_t got = __atomic_load_n(&v, __ATOMIC_RELAXED);
	if (got >= 0)
		return (uint32_t)got;
	got = UINT32_MAX;
	int fd = (int)rs_syscall(SYS_openat, AT_FDCWD, "/proc/sys/net/ipv4/tcp_notsent_lowat", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		char b[24];
		long n = rs_syscall(SYS_read, fd, b, sizeof(b) - 1);
		rs_sys_close(fd);
		if (n > 0) {
			b[n] = 0;
			got = (int64_t)strtoull(b, NULL, 10);
		}
	}
	__atomic_store_n(&v, got, __ATOMIC_RELAXED);
	return (uint32_t)got;
}

static void tx_refresh(struct rs_tcp *t)
{
	t->tx_room = 0;
	t->tx_acc = t->tx_bytes;
	socklen_t il = sizeof(int);
	if (!t->tx_mss) {
		/* TCP_NOTSENT_LOWAT (the socket's, else the sysctl's) also
		 * stops tcp_sendmsg, at unsent bytes the engine cannot count */
		int lowat = 0, mss = 0;
		if (rs_syscall(SYS_getsockopt, t->e.fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, &il) < 0 ||
		    lowat || notsent_lowat_sysctl() != UINT32_MAX) {
			t->tx_unsure = 1;
			return;
		}
		il = sizeof(int);
		if (rs_syscall(SYS_getsockopt, t->e.fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &il) < 0)
			mss = 0;
		t->tx_mss = mss < 32 ? 32 : (uint32_t)mss;
	}
	uint32_t m[SK_MEMINFO_VARS];
	socklen_t l = sizeof(m);
	if (rs_syscall(SYS_getsockopt, t->e.fd, SOL_SOCKET, SO_MEMINFO, m, &l) < 0 ||
	    l < sizeof(uint32_t) * (SK_MEMINFO_WMEM_QUEUED + 1)) {
		t->tx_unsure = 1;
		return;
	}
	int64_t room = (int64_t)m[SK_MEMINFO_SNDBUF] - m[SK_MEMINFO_WMEM_QUEUED];
	t->tx_room = room <= 0 ? 0 : (uint32_t)room;
}

/* Will the kernel's buffer take n more bytes after what is queued? */
static int tx_fits(struct rs_tcp *t, size_t n)
{
	if (t->tx_unsure)
		return 0;
	if (!t->tx_mss || tx_cost(t, t->tx_acc + n) > t->tx_room)
		tx_refresh(t);
	return !t->tx_unsure && tx_cost(t, t->tx_acc + n) <= t->tx_room;
}

static void tx_charge(struct rs_tcp *t, size_t n)
{
	t->tx_acc += n;
}

static ssize_t send_direct(struct rs_tcp *t, const struct iovec *iov, int iovcnt, size_t total, int flags)
{
	t->sent = 1;
	others_first(t);
	long k = rs_sys_sendv(t->e.fd, iov, iovcnt, flags | MSG_DONTWAIT | MSG_NOSIGNAL);
	if (k == -EPIPE || k == -ECONNRESET) {
		t->epipe_pending = 1;
		return send_error((int)-k, flags);
	}
	if (k > 0)
		tx_charge(t, (size_t)k);
	int full = k == -EAGAIN || (k >= 0 && (size_t)k < total);
	RS_STORE(t->e.kfull, full);
	if (full)
		rs_ep_sock_kfull(&t->e);
	if (k != -EAGAIN)
		rs_stat_add(RS_C_DIRECT, 1);
	return k;
}

/* Copy up to n bytes of the iovec into send memory and queue them: the
 * LINEAR_FIRST buffer, the socket's TX_CACHE chunk, or the thread's frag
 * pool.  Returns the bytes queued (short when memory runs out). */
static size_t queue_copy(struct rs_ring *r, struct rs_tcp *t, const struct iovec *iov, size_t n)
{
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
			if (!dst && k > RS_FRAG_PAGE) /* no large chunk: a page's worth */
				dst = rs_frag_alloc(&r->frag, k = RS_FRAG_PAGE, &c);
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
	return done;
}

ssize_t rs_tcp_send(struct rs_tcp *t, const struct iovec *iov, int iovcnt, int flags)
{
	rs_tcpq_check(t);
	if (t->e.drain && rs_drain_done(t->e.drain))
		rs_tcp_drain_end(t);
	rs_rxq_shared_err(t);
	if (t->e.mode != RS_ES_ARMED)
		return send_leaving(t, iov, iovcnt, flags);
	if (!t->e.sock->nonblock && t->e.owner == rs_ring_tls && rs_ring_has_input_work(t->e.owner)) {
		/* A blocking socket (a thread per connection, mostly) sees what
		 * has happened to it before the send is accepted, as the kernel
		 * would: its receive runs and meets a reset or the peer's end.
		 * Event loops keep batching. */
		rs_ring_progress(t->e.owner);
	}
	if (t->tx_err || t->rx_err)
		return send_error(take_send_error(t), flags);
	if (t->shut_wr || t->epipe_pending) {
		/* The send fails; the kernel says how: EPIPE, or a reset it
		 * holds (ECONNRESET after SHUT_WR). */
		others_first(t);
		long k = rs_sys_sendv(t->e.fd, iov, iovcnt, flags | MSG_DONTWAIT | MSG_NOSIGNAL);
		return k >= 0 ? k : send_error((int)-k, flags);
	}
	size_t total = rs_iov_total(iov, iovcnt);
	if (total == 0)
		return 0;
	struct rs_ring *r = t->e.owner;
	if (t->e.drain || t->tx_bytes >= t->tx_limit) {
		if (rs_ring_has_work(r))
			rs_ring_progress(r);
		if (t->e.drain || t->tx_bytes >= t->tx_limit)
			return -EAGAIN;
	}
	if (send_to_kernel(t, total))
		return send_direct(t, iov, iovcnt, total, flags);
	size_t room = t->tx_limit - t->tx_bytes;
	size_t want = total < room ? total : room;
	if (!tx_fits(t, want)) {
		/* The kernel decides, after what is queued (which fits: its
		 * cost was taken). */
		if (t->tx_cnt || t->send_inflight)
			rs_tcp_tx_submit_now(t);
		if (t->tx_cnt || t->send_inflight || t->e.drain)
			return -EAGAIN;
		return send_direct(t, iov, iovcnt, total, flags);
	}
	if (!t->txs && !(t->txs = malloc(sizeof(*t->txs))))
		return -ENOMEM;
	size_t done = queue_copy(r, t, iov, want);
	if (!done)
		return -ENOMEM;
	tx_charge(t, done);
	rs_stat_add(RS_C_CALLS_NOSYS, 1);
	queue_tx(r, t);
	return (ssize_t)done;
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

