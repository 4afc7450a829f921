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

/* A new nonblocking socket's first send, before the engine serves it:
 * the engine would send it straight to the kernel too (send_to_kernel:
 * !t->sent), so it makes no engine state for it (see before_engine in
 * tcp_recvcall.c).  The caller makes the kernel's call. */
static int first_send(struct rs_sock *s)
{
	if (!s->nonblock || RS_LOAD(s->sent_kernel) || !rs_rt.cfg.v[RS_K_ARM_AFTER] ||
	    atomic_load_explicit(&s->eng, memory_order_acquire))
		return 0;
	RS_STORE(s->sent_kernel, 1); /* (threads racing here both send to the kernel) */
	return 1;
}

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
	if (rs_sock_kernel_alone(s))
		return RS_PASS; /* (nothing of ours queued: the kernel's send) */
	if (first_send(s))
		return RS_PASS; /* (the caller flushes what the thread queued first) */
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
		if (r > 0 && s->nonblock)
			rs_tcp_rr_sent(t);
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
	/* Its thread serves one socket per wake-up, or it is a
	 * request-response connection: no other send to merge. */
	int alone = t->rx_direct && (t->direct_why == RS_DIRECT_ALONE || t->direct_why == RS_DIRECT_RR);
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
	/* And the rest of a large send the kernel took only part of, or a
	 * smaller send right after a large one (a bulk writer's): nothing to
	 * merge it with.  And a signal handler's: the call it interrupted
	 * may be the kernel's own blocking one, which SA_RESTART resumes
	 * without coming back to the library, and queued bytes would then
	 * wait for the watchdog (seed 29000040: a handler's send to the peer
	 * the interrupted recv waited on).  And any send when the drain
	 * thread cannot run: its watchdog is what sends the queue of a thread
	 * that blocks where the library cannot see (pthread_join on a thread
	 * that waits for these bytes); until it runs, such a send is the
	 * kernel's, but for the one that starts it (engine_int.h
	 * rs_ring_may_queue: last in the test, so only for a send that would
	 * be queued). */
	return !t->tx_cnt && !t->send_inflight &&
	       ((direct && total >= direct) || RS_LOAD(t->e.kfull) || !t->sent || t->rx_eof ||
		RS_LOAD(t->e.k_hup) || pp || alone || shared || t->tx_bulk || rs_in_handler ||
		!rs_ring_may_queue(t->e.owner));
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
	/* (a 32-bit division where it fits: this runs on every send) */
	uint64_t segs = n <= UINT32_MAX ? (uint32_t)n / t->tx_mss : n / t->tx_mss;
	return n + (uint64_t)RS_SKB_HEAD * (segs + 1);
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
	if (t->tx_mss && tx_cost(t, t->tx_acc + n) <= t->tx_room)
		return 1;
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
	size_t direct = (size_t)rs_rt.cfg.v[RS_K_DIRECT_THRESHOLD];
	t->tx_bulk = full || (direct && total >= direct);
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
	if (rs_in_handler && (t->tx_cnt || t->send_inflight))
		rs_tcp_tx_submit_now(t); /* (a handler's send: see send_to_kernel) */
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
	t->tx_new = 1;
	queue_tx(r, t);
	return (ssize_t)done;
}
