/* tcp_recv.c - the receive path of stream sockets.
 *
 * One multishot receive per armed socket fills buffers from the owner's
 * buffer ring; completions (rs_tcp_recv_done) append segments to the
 * socket's receive queue (tcpq.c), and the recv family copies from it
 * without a system call.  Past rx_limit bytes of held buffers the receive
 * is cancelled and the data stays in the kernel (TCP flow control pushes
 * back on the peer) until the application has read half of it.  A bulk
 * reader, a new socket on probation (RINGSOCK_ARM_AFTER) and one starved
 * of buffers read through the kernel instead (rx_direct, rx_starved).
 * The whole call (rs_tcp_recv_call: waits, MSG_WAITALL) is
 * tcp_recvcall.c's.
 *
 * Every function here runs with the socket's lock held (rs_esock_enter),
 * except rs_tcp_at_mark and rs_tcp_error_next, which only ask the kernel.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "engine_int.h"
#include "sys.h"
#include "tcp_int.h"

/* Does the kernel take a byte cap on a multishot receive?  Assumed until
 * a capped receive fails with EINVAL (kernels before 6.17 reject the
 * field), then never tried again. */
static int recv_cap_ok = 1;

void rs_tcp_submit_recv(struct rs_ring *r, struct rs_tcp *t)
{
	if (t->e.recv_armed || t->throttled || t->rx_eof || t->rx_err || t->e.closing || t->rx_stop ||
	    t->e.mode != RS_ES_ARMED || t->shut_rd || t->rx_direct)
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
		rs_ring_rearm_add(r, &t->e); /* no room in the SQ: at the next round */
		return;
	}
	io_uring_prep_recv_multishot(sqe, t->e.fd, NULL, 0, 0);
	rs_ring_sqe_file(sqe, &t->e);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	if (r->buf.bundle)
		sqe->ioprio |= IORING_RECVSEND_BUNDLE; /* (several buffers per completion) */
	sqe->buf_group = r->buf.bgid;
	sqe->file_index = cap; /* (the union's optlen: the byte cap) */
	t->rx_capped = cap != 0;
	if (t->rx_starved) {
		RS_STORE(t->rx_starved, 0);
		rs_ep_sock_rx_direct(&t->e); /* the engine's input again */
	}
	rs_esock_recv_started(r, &t->e, sqe);
}

/* From now on the kernel reports the socket's input and reads go straight
 * to it; sends stay the engine's (but a lone socket's and a
 * request-response connection's, which go to the kernel too: tcp_send.c
 * send_to_kernel).  Data a receive already took is read first. */
static const char *const direct_name[] = { "none", "probation", "request-response", "alone", "waiting reader",
					      "bulk reader", "shared with another process", "shut down" };

#define RS_WAITER_SHIFT_MAX 5 /* (rs_tcp_direct_read) */

void rs_tcp_go_direct(struct rs_ring *r, struct rs_tcp *t, int why)
{
	t->rx_probation = 0;
	if (t->rx_direct && t->direct_why >= why) {
		if (t->direct_why == why)
			t->direct_reads = 0; /* (the reason again: count from here) */
		return; /* (a stronger reason stays) */
	}
	rs_debug("fd %d: reads go through the kernel: %s (was %s)", t->e.fd, direct_name[why],
		 direct_name[t->rx_direct ? t->direct_why : 0]);
	if (why == RS_DIRECT_WAITING || why == RS_DIRECT_BULK || why == RS_DIRECT_ALONE || why == RS_DIRECT_RR)
		rs_stat_add(RS_C_DIRECT_ON, 1);
	if (why == RS_DIRECT_WAITING && t->wt_retried && t->wt_shift < RS_WAITER_SHIFT_MAX)
		t->wt_shift++; /* (the retry did not pay: wait twice as long next time) */
	t->wt_retried = 0;
	t->direct_why = (uint8_t)why;
	t->direct_reads = 0;
	t->rx_waits = 0;
	t->rr_rounds = 0;
	t->lone_reads = 0;
	if (t->rx_direct)
		return;
	RS_STORE(t->rx_direct, 1);
	if (r == rs_ring_tls) {
		rs_tcp_cancel_recv(r, t);
	} else {
		/* Another thread's ring (fork, spawn): only its owner touches its
		 * submission queue; it cancels the receive before it next enters
		 * the kernel, where the receive could run. */
		rs_esock_detach_on(r, &t->e);
	}
	rs_ep_sock_rx_direct(&t->e);
}

/* The engine's multishot receive takes the socket's input again: it is
 * submitted with the thread's next system call; the kernel stops
 * reporting the input. */
static void end_direct(struct rs_ring *r, struct rs_tcp *t)
{
	rs_debug("fd %d: reads from the engine's receive again (after %s)", t->e.fd, direct_name[t->direct_why]);
	if (t->direct_why != RS_DIRECT_PROBATION)
		rs_stat_add(RS_C_DIRECT_OFF, 1);
	t->rx_direct = 0;
	t->direct_why = RS_DIRECT_NONE;
	t->direct_reads = 0;
	t->rx_waits = 0;
	t->rr_rounds = 0;
	rs_ep_sock_rx_direct(&t->e);
	rs_tcp_submit_recv(r, t);
}

/* A request-response connection of an event loop: rounds of one read with
 * data, then one send (a request in, its response out), RS_RR_ROUNDS in a
 * row.  The engine has nothing of it to merge: each receive brings one
 * request, read at once, and each flush carries one response, so the
 * multishot receive and the queued send cost a copy and bookkeeping each
 * where the kernel's read and send cost a system call.  With
 * RINGSOCK_REQUEST_RESPONSE=kernel its reads and sends go to the kernel;
 * something to merge again gives it back to the engine's receive:
 * RS_RR_BACK rounds in a row of more than one read or send (a response
 * written in pieces, a request read in pieces), or RS_RR_RUN sends or
 * reads in a row without the other (a stream: pushed messages, an
 * upload).  Counts of calls, never timing: the same program makes the
 * same switches.  t entered; called for each nonblocking read with data
 * and each nonblocking send. */
#define RS_RR_ROUNDS 16
#define RS_RR_BACK 4
#define RS_RR_RUN 16

static int rr_direct(const struct rs_tcp *t)
{
	return t->rx_direct && t->direct_why == RS_DIRECT_RR;
}

static void rr_end(struct rs_tcp *t)
{
	struct rs_ring *r = t->e.owner;
	if (r == rs_ring_tls && !t->rx_eof && !t->shut_rd && t->e.mode == RS_ES_ARMED)
		end_direct(r, t);
}

void rs_tcp_rr_read(struct rs_tcp *t)
{
	if (t->rr_tx) { /* the round before ends: how many of each */
		int one = t->rr_rx == 1 && t->rr_tx == 1;
		if (rr_direct(t)) {
			if (one)
				t->rr_rounds = 0;
			else if (++t->rr_rounds >= RS_RR_BACK)
				rr_end(t);
		} else if (!one || t->rx_direct) {
			t->rr_rounds = 0;
		} else if (++t->rr_rounds >= RS_RR_ROUNDS && t->e.owner == rs_ring_tls && t->e.mode == RS_ES_ARMED &&
			   !rs_rt.rr_engine) {
			rs_tcp_go_direct(t->e.owner, t, RS_DIRECT_RR);
		}
		t->rr_rx = t->rr_tx = 0;
	}
	if (t->rr_rx < RS_RR_RUN && ++t->rr_rx == RS_RR_RUN && rr_direct(t))
		rr_end(t);
}

void rs_tcp_rr_sent(struct rs_tcp *t)
{
	if (t->rr_tx < RS_RR_RUN && ++t->rr_tx == RS_RR_RUN && rr_direct(t))
		rr_end(t);
}

/* When reads through the kernel end (each count is of reads in a row; the
 * same calls give the same switches, whatever their timing):
 *   probation: RINGSOCK_ARM_AFTER reads with data (a new socket that
 *     lives long enough for the multishot receive to pay off);
 *   alone: the first read once its thread's waits return more than one
 *     event again (ep.c count_wake);
 *   a waiting reader: RS_WAITER_BACK nonblocking reads with data (it
 *     became an event loop's), or RS_WAITER_RETRY blocking reads (it is
 *     given the engine again; RS_WAITS_TO_DIRECT blocking reads in a row
 *     that each wait send it back to the kernel if it still waits for
 *     every read: tcp_recvcall.c); each retry the waits sent back makes
 *     the next come after twice as many (up to 32 times, as for UDP:
 *     udp_recv.c), an end by nonblocking reads starts from 1024 again;
 *   a bulk reader: RS_BULK_BACK reads in a row below
 *     RINGSOCK_DIRECT_THRESHOLD (it reads small from now on; a large
 *     read starts the count again). */
#define RS_WAITER_BACK 4
#define RS_WAITER_RETRY 1024
#define RS_BULK_BACK 16

void rs_tcp_direct_read(struct rs_ring *r, struct rs_tcp *t, size_t want, int nonblocking, long n)
{
	unsigned need;
	switch (t->direct_why) {
	case RS_DIRECT_PROBATION:
		if (n <= 0 || !t->rx_probation || --t->rx_probation != 0)
			return;
		need = 0;
		break;
	case RS_DIRECT_RR:
		return; /* (rs_tcp_rr_read) */
	case RS_DIRECT_ALONE:
		if (!r || RS_LOAD(r->alone))
			return;
		need = 0;
		break;
	case RS_DIRECT_WAITING:
		if (nonblocking) { /* (rx_waits counts these while direct) */
			if (n <= 0 || ++t->rx_waits < RS_WAITER_BACK)
				return;
			need = 0;
		} else {
			need = RS_WAITER_RETRY << t->wt_shift;
		}
		break;
	case RS_DIRECT_BULK: /* (by the size asked for, data or not) */
		if (want >= (size_t)rs_rt.cfg.v[RS_K_DIRECT_THRESHOLD]) {
			t->direct_reads = 0;
			return;
		}
		need = RS_BULK_BACK;
		break;
	default:
		return; /* shared, shut down: for good */
	}
	if (need && ++t->direct_reads < need)
		return;
	if (r == rs_ring_tls && !t->rx_eof && !t->shut_rd && t->e.mode == RS_ES_ARMED) {
		if (t->direct_why == RS_DIRECT_WAITING) {
			t->wt_retried = !nonblocking; /* (a retry; else an event loop's now) */
			if (nonblocking)
				t->wt_shift = 0;
		}
		end_direct(r, t);
	}
}

/* The next byte to read is the urgent mark: the kernel ends a read there
 * once it has bytes, MSG_WAITALL or not. */
int rs_tcp_at_mark(int fd)
{
	int k = 0;
	return rs_syscall(SYS_ioctl, fd, SIOCATMARK, &k) == 0 && k;
}

/* A pending error (a reset) with no byte before it in the kernel's queue:
 * a call that has bytes to return already leaves it there.  One kernel
 * read would have returned those bytes and left the error pending, for
 * the next call (which may be another process's: a fork child shares the
 * socket) and for poll's POLLERR; a read with nothing to copy would take
 * it.  (A read that copies bytes leaves it pending, so the kernel's
 * queued bytes are still taken.) */
int rs_tcp_error_next(int fd)
{
	struct pollfd p = { fd, 0, 0 };
	int inq = 0;
	return rs_syscall(SYS_poll, &p, 1, 0) == 1 && (p.revents & POLLERR) &&
	       (rs_syscall(SYS_ioctl, fd, SIOCINQ, &inq) < 0 || inq <= 0);
}

static void maybe_unthrottle(struct rs_tcp *t)
{
	struct rs_ring *r = t->e.owner;
	if (!t->throttled || !r || t->e.mode != RS_ES_ARMED)
		return;
	if ((size_t)t->rx_bufs * r->buf.size > t->rx_limit / 2)
		return;
	t->throttled = 0;
	if (!t->e.recv_armed)
		rs_ring_rearm_add(r, &t->e);
}

/* All the engine held went to a read with room left, and the kernel has
 * the socket's input now (detached, or reads through the kernel with no
 * receive of ours in flight): the read goes on into the kernel's queue,
 * without waiting, as one kernel read would have taken both (MSG_TRUNC:
 * discards the rest of what it asked to).  Returns the bytes added. */
static size_t kernel_rest(struct rs_tcp *t, const struct iovec *iov, int iovcnt, size_t skip, int flags)
{
	if (iovcnt > 8 || t->e.fd < 0)
		return 0;
	/* Only where the kernel's queue comes next: a receive of ours in
	 * flight would take what it has first. */
	if (!(t->e.mode == RS_ES_DETACHED ||
	      (t->e.mode == RS_ES_ARMED && (t->rx_direct || t->rx_starved) && !t->e.recv_armed)))
		return 0;
	if (t->e.sock->urgent && rs_tcp_at_mark(t->e.fd))
		return 0; /* one kernel read would have stopped at the mark */
	if (rs_tcp_error_next(t->e.fd))
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
	long k = rs_syscall(SYS_recvmsg, t->e.fd, &m, (flags & (MSG_PEEK | MSG_TRUNC)) | MSG_DONTWAIT);
	if (k < 0 && k != -EAGAIN && k != -EINTR && !t->rx_err)
		RS_STORE(t->rx_err, (int)-k); /* the kernel gave it to this read: the next one reports it */
	return k > 0 ? (size_t)k : 0;
}

/* ---- a connection the process has with itself ---------------------------
 * What this process sends to t's peer over loopback is in t's kernel queue
 * when the send returns, without the library.  With it, the send may be
 * queued in the ring, or sent with its receive completion not yet run:
 * so a read of such a socket that would return less than it asks runs
 * the ring first (submits, receives), as a blocking one does.  Only a
 * process that connected to one of its own listeners looks, and each
 * socket is asked once whether it may be such a connection. */
static int self_peer(struct rs_tcp *t)
{
	if (!RS_LOAD(rs_self_connect))
		return 0;
	if (!t->self_peer)
		t->self_peer = rs_sock_self_peer(t->e.fd) ? 1 : 2;
	return t->self_peer == 1;
}

static int recv_ended_cond(void *arg)
{
	return !((struct rs_tcp *)arg)->e.recv_armed;
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
	rs_tcp_cancel_recv(t->e.owner, t);
	rs_ring_wait(t->e.owner, recv_ended_cond, t, -1);
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

/* A large read with nothing held, straight from the kernel into the
 * caller's buffer (the socket reads through the kernel from now on). */
static ssize_t read_large(struct rs_tcp *t, const struct iovec *iov, int iovcnt, int flags)
{
	long n = rs_sys_recvv(t->e.fd, iov, iovcnt, flags | MSG_DONTWAIT);
	if (n == 0 && !(flags & MSG_PEEK))
		t->rx_eof = 1;
	else if (n < 0 && n != -EAGAIN && n != -EINTR)
		t->epipe_pending = 1;
	if (n != -EAGAIN)
		rs_stat_add(RS_C_DIRECT, 1);
	return or_tx_error(t, n);
}

/* A small read on a bulk reader, a new socket's (on probation), or one
 * waiting for receive buffers: still the kernel's data. */
static ssize_t read_kernel(struct rs_tcp *t, struct rs_ring *r, const struct iovec *iov, int iovcnt, size_t want,
			   int flags)
{
	long n = rs_sys_recvv(t->e.fd, iov, iovcnt, flags | MSG_DONTWAIT);
	if (n == 0 && want && !(flags & MSG_PEEK))
		t->rx_eof = 1;
	if (n > 0)
		rs_stat_add(RS_C_DIRECT, 1);
	if (!(flags & MSG_PEEK))
		rs_tcp_direct_read(r, t, want, t->e.sock->nonblock || (flags & MSG_DONTWAIT), n);
	return or_tx_error(t, n);
}

/* A read on the owner's thread that wants more than the engine holds:
 * what is on its way comes first (round: the call's look, from 0). */
static void catch_up(struct rs_tcp *t, int flags, int will_block, int round)
{
	if (t->e.recv_armed && t->rx_direct)
		recv_end_wait(t);
	else if (round == 0 && rs_ring_has_work(t->e.owner) &&
		 (flags & MSG_WAITALL || (will_block && rs_rxq_held(t)) || self_peer(t)))
		/* MSG_WAITALL, or a blocking read that would return
		 * the engine's bytes: what is on its way (this
		 * thread's sends, receives the kernel has run) comes
		 * first, as the kernel's read would have found it.
		 * (With nothing held, the call's wait, rs_tcp_recv_call,
		 * sends and receives in one system call; event loops'
		 * nonblocking reads take what is held: their sends
		 * stay batched, unless this very process may be
		 * the peer.) */
		rs_ring_progress(t->e.owner);
}

/* The kernel's SO_RCVLOWAT for a program's mark lowat while the engine
 * holds held bytes of the socket's input: readable when both together
 * reach the mark. */
static int lowat_less(int lowat, size_t held)
{
	if (lowat <= 1 || !held)
		return lowat;
	return held >= (size_t)lowat ? 1 : lowat - (int)held;
}

/* Has the socket's input ended for good in the kernel: the peer's FIN
 * came (the states after it) or the connection is closed (a reset)?
 * Then no byte can arrive any more, and the kernel's SO_RCVLOWAT changes
 * nothing a program sees: readiness is EPOLLIN at the input's end
 * whatever the mark, and a read returns what there is. */
static int input_over(struct rs_tcp *t)
{
	if (t->rx_eof)
		return 1;
	uint8_t st = 0; /* (tcpi_state, struct tcp_info's first byte) */
	socklen_t l = sizeof(st);
	if (rs_syscall(SYS_getsockopt, t->e.fd, IPPROTO_TCP, TCP_INFO, &st, &l) != 0 || l < 1)
		return 0;
	return st == TCP_CLOSE_WAIT || st == TCP_LAST_ACK || st == TCP_CLOSING || st == TCP_TIME_WAIT ||
	       st == TCP_CLOSE;
}

/* A read of a detached socket took held bytes: the kernel's mark rises
 * by them.  Setting it runs tcp_data_ready, which wakes the socket's
 * waiters (an edge for an edge-triggered registration) whenever the
 * kernel's queue is readable at the new mark, and always once the peer's
 * FIN came (SOCK_DONE); the read left the socket as readable as before,
 * where the kernel path makes no edge.  So a mark the kernel has already
 * is not set again, nor any once the input is over (the mark can change
 * nothing then: seed 25303373, IN|ERR|HUP reported again after the last
 * held bytes were read), and a raised one that wakes is counted with the
 * renewals' extra edges (ep_rearms). */
static void raise_kernel_lowat(struct rs_tcp *t, int lowat)
{
	struct rs_sock *s = t->e.sock;
	int k = lowat_less(lowat, rs_rxq_held(t)), inq = 0;
	if (k == __atomic_load_n(&s->kernel_lowat, __ATOMIC_RELAXED) || input_over(t))
		return;
	if (rs_syscall(SYS_ioctl, t->e.fd, SIOCINQ, &inq) == 0 && inq >= k)
		rs_stat_add(RS_C_EP_REARMS, 1);
	if (rs_syscall(SYS_setsockopt, t->e.fd, SOL_SOCKET, SO_RCVLOWAT, &k, sizeof(k)) == 0)
		__atomic_store_n(&s->kernel_lowat, k, __ATOMIC_RELAXED);
}

/* The read took got of the want bytes it asked for, from the held bytes
 * the engine had (and maybe the kernel's queue after them): what a read
 * with data changes.  Returns got. */
static ssize_t took(struct rs_tcp *t, size_t held, size_t got, size_t want, int flags)
{
	size_t direct = (size_t)rs_rt.cfg.v[RS_K_DIRECT_THRESHOLD];
	if (direct && want >= direct && !(flags & MSG_PEEK) && !t->rx_direct &&
	    t->e.mode == RS_ES_ARMED && t->e.owner && t->e.owner == rs_ring_tls)
		/* A bulk reader that always finds something held (the
		 * receive keeps ahead of it, as with several streams; as
		 * much as it asks for, or less) would be served from the
		 * buffers with a copy each: its next reads go to the
		 * kernel. */
		rs_tcp_go_direct(t->e.owner, t, RS_DIRECT_BULK);
	int lowat = __atomic_load_n(&t->e.sock->rcvlowat, __ATOMIC_RELAXED);
	if (held && lowat > 1 && !(flags & MSG_PEEK) && t->e.mode == RS_ES_DETACHED)
		raise_kernel_lowat(t, lowat);
	if (!(flags & MSG_PEEK))
		maybe_unthrottle(t);
	if (t->leftover && rs_rxq_leftover_empty(t) && !(flags & MSG_PEEK)) {
		munmap(t->leftover, t->leftover_map);
		RS_STORE(t->leftover, NULL);
	}
	rs_stat_add(RS_C_CALLS_NOSYS, 1);
	return (ssize_t)got;
}

/* Nothing held, and the engine's receive no longer brings the socket's
 * input: it left the engine, or its input ended (an error, the end of
 * the stream).  What the read returns. */
static ssize_t read_ended(struct rs_tcp *t, const struct iovec *iov, int iovcnt, int flags)
{
	if (t->e.mode != RS_ES_ARMED) {
		/* Pass-through after the leftover: the kernel has the rest.
		 * Never block with the lock held (rs_tcp_recv_call naps). */
		if (t->e.mode == RS_ES_DETACHED)
			return t->rx_err ? -rs_tcp_take_error(t) : RS_PASS;
		int f = flags | MSG_DONTWAIT;
		struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt };
		return rs_syscall(SYS_recvmsg, t->e.fd, &m, f);
	}
	if (t->rx_err)
		return -rs_tcp_take_error(t);
	if (t->rx_eof && !t->e.recv_armed) {
		/* Past the end the kernel answers again, as it does
		 * without us: after shutdown(SHUT_RD) a peer's new data
		 * is still read, and a reset after the FIN fails the
		 * next read.  (No receive of ours is in flight: the
		 * end ended it.) */
		return or_tx_error(t, rs_sys_recvv(t->e.fd, iov, iovcnt, flags | MSG_DONTWAIT));
	}
	return or_tx_error(t, 0);
}

ssize_t rs_tcp_recv(struct rs_tcp *t, const struct iovec *iov, int iovcnt, int flags)
{
	rs_tcpq_check(t);
	size_t want = rs_iov_total(iov, iovcnt); /* with MSG_TRUNC: bytes to discard */
	int will_block = !t->e.sock->nonblock && !(flags & MSG_DONTWAIT);
	for (int round = 0;; round++) {
		size_t got = 0;
		if (want == 0 && rs_rxq_held(t))
			return 0; /* like tcp_recvmsg: 0 with data queued, else EAGAIN */
		if (t->e.owner && t->e.owner == rs_ring_tls && rs_rxq_held(t) < want)
			catch_up(t, flags, will_block, round);
		size_t held = rs_rxq_held(t);
		if (held)
			got = rs_rxq_copy(t, iov, iovcnt, want, flags);
		if (got && got == held && got < want)
			got += kernel_rest(t, iov, iovcnt, got, flags);
		if (got)
			return took(t, held, got, want, flags);
		rs_rxq_shared_err(t);
		if (t->e.mode != RS_ES_ARMED || t->rx_err || t->rx_eof)
			return read_ended(t, iov, iovcnt, flags);
		struct rs_ring *r = t->e.owner;
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
			rs_tcp_go_direct(r, t, RS_DIRECT_BULK);
			return read_large(t, iov, iovcnt, flags);
		}
		if (round < 2 && r == rs_ring_tls &&
		    (will_block ? rs_ring_has_input_work(r) : rs_ring_has_work(r) || rs_ring_stale_look(r))) {
			/* Completions, and receives to start, first.  A call that
			 * will block leaves queued sends alone to the wait, which
			 * submits them in the system call that waits; an event loop's
			 * EAGAIN sends them now (its responses do not wait for the
			 * rest of its batch). */
			rs_ring_progress(r);
			continue;
		}
		if (t->rx_direct || t->rx_starved)
			return read_kernel(t, r, iov, iovcnt, want, flags);
		if (!t->e.recv_armed && !t->throttled)
			rs_tcp_submit_recv(r, t);
		rs_stat_add(RS_C_CALLS_NOSYS, 1);
		return or_tx_error(t, -EAGAIN);
	}
}

int rs_tcp_kernel_lowat(struct rs_sock *s, int lowat)
{
	struct rs_esock *e = s->type == SOCK_STREAM ? atomic_load(&s->eng) : NULL;
	return lowat_less(lowat, e && !rs_esock_passive(e) ? rs_rxq_held(rs_tcp_of(e)) : 0);
}

/* ---- the receive's completions ------------------------------------------- */

void rs_tcp_recv_done(struct rs_ring *r, struct rs_tcp *t, struct io_uring_cqe *c)
{
	int more = c->flags & IORING_CQE_F_MORE;
	if (c->res > 0) {
		unsigned bid = c->flags >> IORING_CQE_BUFFER_SHIFT;
		/* (a bundle: every buffer full but the last, bufring.c) */
		uint32_t size = r->buf.size, left = (uint32_t)c->res, n = (left + size - 1) / size;
		r->buf.held += n;
		if (n > 1) {
			for (uint32_t k = 0; k < n; k++) {
				unsigned b = k ? rs_buf_bundled(&r->buf, bid, k) : bid;
				uint32_t len = left < size ? left : size;
				left -= len;
				if (t->e.closing || rs_rxq_push(t, r, rs_buf_addr(&r->buf, b), len, (int32_t)b) < 0)
					rs_buf_release(r, b);
			}
		} else if (rs_rt.cfg.v[RS_K_RX_CACHE] && !t->e.closing && !t->rxc_used && !rs_dying &&
		    !t->ovf_head && rs_rxq_room(t) == 0 &&
		    (t->rxc || (t->rxc = malloc(r->buf.size)) != NULL)) {
			/* RX_CACHE: copy into the socket's own buffer and give the
			 * ring's buffer back at once. */
			memcpy(t->rxc, rs_buf_addr(&r->buf, bid), (size_t)c->res);
			rs_buf_release(r, bid);
			if (rs_rxq_push(t, r, t->rxc, (uint32_t)c->res, -2) == 0)
				t->rxc_used = 1;
		} else if (t->e.closing ||
			   rs_rxq_push(t, r, rs_buf_addr(&r->buf, bid), (uint32_t)c->res, (int32_t)bid) < 0)
			rs_buf_release(r, bid);
		if ((size_t)t->rx_bufs * r->buf.size >= t->rx_limit && !t->throttled && !t->e.closing) {
			t->throttled = 1;
			rs_stat_add(RS_C_THROTTLED, 1);
			if (more)
				rs_tcp_cancel_recv(r, t);
		}
	} else if (c->res == 0) {
		t->rx_eof = 1;
	} else if (c->res == -ENOBUFS) {
		rs_stat_add(RS_C_ENOBUFS, 1);
		rs_buf_grow(r); /* the pool follows demand, up to its bound */
		/* Other sockets hold every buffer: until this one is armed again
		 * its input stays in the kernel, which answers its reads and
		 * reports it (a reader must never be left with neither). */
		if (!t->rx_starved) {
			RS_STORE(t->rx_starved, 1);
			rs_ep_sock_rx_direct(&t->e);
		}
	} else if (c->res == -EINVAL && t->rx_capped) {
		__atomic_store_n(&recv_cap_ok, 0, __ATOMIC_RELAXED); /* re-armed without */
	} else if (c->res == -EINVAL && r->buf.bundle) {
		r->buf.bundle = 0; /* (refused: this ring's receives take one buffer) */
	} else if (c->res != -ECANCELED) {
		RS_STORE(t->rx_err, -c->res);
	}
	if (!more) {
		/* The multishot receive ended: out of buffers, cancelled (for the
		 * bound, which the application may have drained meanwhile),
		 * or for no stated reason.  Unless the stream is over or the
		 * socket stays over its bound, it is armed again. */
		t->e.recv_armed = 0;
		r->nrecv--;
		t->e.ops_inflight--;
		if (t->e.mode == RS_ES_ARMED && !t->e.closing && !t->throttled && !t->rx_stop && !t->rx_eof &&
		    !t->rx_err && !t->rx_direct && !t->shut_rd)
			rs_ring_rearm_add(r, &t->e);
	}
}

