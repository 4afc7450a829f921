/* wait.c - poll/ppoll (and select/pselect, converted by the preload layer)
 * over any mix of engine sockets and kernel fds.
 *
 * Engine sockets get their readiness from engine state; the rest go to one
 * real ppoll() together with the thread's ring eventfd, which wakes the
 * wait when engine work arrives.  A call that will not sleep skips that
 * ppoll when it would ask about nothing, or when the ring vouches that
 * none of the rest is ready (kwatch.c).  Signal masks and timeouts are the real
 * call's, so EINTR behaves as the kernel's.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine_int.h"
#include "sys.h"

static unsigned to_poll(unsigned ev)
{
	/* EPOLL* and POLL* share their values for these bits. */
	return ev & (POLLIN | POLLOUT | POLLERR | POLLHUP | POLLRDNORM | POLLWRNORM | POLLWRBAND | POLLRDHUP);
}

/* What an entry is to us (K_ENGINE_WAKE: an engine socket whose POLLIN
 * the kernel is asked too, only to wake the call: see input_wakes). */
enum { K_KERNEL, K_ENGINE, K_LEFTOVER, K_ENGINE_WAKE };

/* The engine state of an entry's record (rec[i], looked up once per
 * round: see rs_wait_poll). */
static struct rs_esock *esock_of(struct rs_sock *s)
{
	return s ? atomic_load(&s->eng) : NULL;
}

static void look_up(const struct pollfd *fds, unsigned long n, struct rs_sock **rec)
{
	for (unsigned long i = 0; i < n; i++)
		rec[i] = rs_fd_peek(fds[i].fd);
}

/* Is any entry an engine socket?  (A known epoll set among them is watched
 * from outside from now on: its engine sockets go back to the kernel.)
 * Sockets owned by other threads go back to the kernel path first. */
static int engine_involved(struct pollfd *fds, unsigned long n, struct rs_sock **rec, struct rs_ring *r)
{
	int any = 0;
	for (unsigned long i = 0; i < n; i++) {
		struct rs_sock *s = rec[i];
		struct rs_esock *t = esock_of(s);
		if (t && !rs_esock_passive(t)) {
			if (rs_esock_owner(t) && rs_esock_owner(t) != r && rs_esock_mode(t) == RS_ES_ARMED)
				rs_sock_before_kernel(s, fds[i].fd, RINGSOCK_PT_THREAD);
			any = 1;
			continue;
		}
		if (!any && fds[i].fd >= 0 && rs_ep_known(fds[i].fd))
			rs_ep_demote_nested(fds[i].fd);
	}
	return any;
}

/* Before the call's first round (r locked): sockets asked for POLLOUT
 * that the engine finds writable (so the call returns at once) and whose
 * kind says their queued sends may wait for more (tx_hold: the program
 * sent since its last poll, fewer than RINGSOCK_TX_MERGE bytes) keep them
 * through this round; a socket not asked for POLLOUT, or a call that will
 * sleep (its next round), sends them. */
static void hold_sends(struct pollfd *fds, unsigned long n, struct rs_sock **rec, struct rs_ring *r)
{
	if (!RS_LOAD(r->txq))
		return;
	r->hold_seq++;
	for (unsigned long i = 0; i < n; i++) {
		if (!(fds[i].events & POLLOUT))
			continue;
		struct rs_esock *t = esock_of(rec[i]);
		if (t && t->on_txq && t->ops->tx_hold && rs_esock_armed_on(t, r) &&
		    (rs_esock_readiness(t) & EPOLLOUT) && t->ops->tx_hold(t)) {
			t->hold_seq = r->hold_seq;
			r->holding = 1;
		}
	}
}

/* What the kernel is asked of an engine socket armed on this thread's
 * ring, for the program's events: nothing (-1: the kernel ignores it),
 * or, for a bulk reader, its input.  With no receive of ours in flight
 * (the stream ended, reads go to the kernel), a reset reaches only the
 * kernel: it is asked for ERR/HUP, and RDHUP. */
static int kernel_asks(struct rs_esock *t, short events)
{
	int no_recv = !RS_LOAD(t->recv_armed);
	unsigned ev = (unsigned)events &
		      ((t->ops->kernel_input(t) ? (POLLIN | POLLRDNORM | POLLPRI | POLLRDHUP) : 0) |
		       (RS_LOAD(t->kfull) ? (POLLOUT | POLLWRNORM | POLLWRBAND) : 0) | (no_recv ? POLLRDHUP : 0));
	return !ev && !no_recv ? -1 : (int)ev;
}

/* The engine's answer for such a socket. */
static short engine_answer(struct rs_esock *t, short events)
{
	return (short)(to_poll(rs_esock_readiness(t)) & ((unsigned)events | POLLERR | POLLHUP));
}

/* The common round of a poll or select loop, answered in one pass (r
 * locked, after progress): every entry is a kernel fd, or an engine
 * socket armed on r, what the kernel would be asked of each (its events,
 * or kernel_asks') the ring vouches is not ready (kwatch.c), and some
 * engine socket is ready: what the full round (engine_answers,
 * kernel_skippable, merge_answers) would answer, without its arrays.
 * Returns the entries ready; 0: not such a round (the full round writes
 * every revents again). */
static int quick_answers(struct pollfd *fds, unsigned long n, struct rs_sock **rec, struct rs_ring *r)
{
	int ready = 0, vouched = -1;
	for (unsigned long i = 0; i < n; i++) {
		struct rs_esock *t = esock_of(rec[i]);
		int asks; /* (-1: the kernel is not asked) */
		fds[i].revents = 0;
		if (!t || (rs_esock_passive(t) && !rs_esock_held_events(t))) {
			asks = fds[i].fd < 0 ? -1 : (unsigned short)fds[i].events;
		} else {
			if (!rs_esock_armed_on(t, r))
				return 0;
			asks = kernel_asks(t, fds[i].events);
			fds[i].revents = engine_answer(t, fds[i].events);
			ready += fds[i].revents != 0;
		}
		if (asks < 0)
			continue;
		if (vouched < 0)
			vouched = rs_kw_vouches(r);
		if (!vouched || !rs_kw_covers(r, fds[i].fd, (unsigned)asks))
			return 0;
	}
	if (ready && vouched > 0)
		rs_kw_skipped(r);
	return ready;
}

/* One round's engine answers (r locked): k[] is what the kernel is asked,
 * kind[] what each entry is, ans[] the engine's answer (kept apart: the
 * kernel's call writes k's revents).  Returns the entries ready;
 * *transient: one is in hand-over, look again soon; *asked: some entry of
 * k[] is for the kernel (its fd not -1). */
static int engine_answers(struct pollfd *fds, unsigned long n, struct rs_sock **rec, struct rs_ring *r,
			  struct pollfd *k, unsigned char *kind, short *ans, int *transient, int *asked)
{
	int ready = 0;
	*asked = 0;
	for (unsigned long i = 0; i < n; i++) {
		k[i] = fds[i];
		k[i].revents = 0;
		ans[i] = 0;
		kind[i] = K_KERNEL;
		struct rs_esock *t = esock_of(rec[i]);
		if (!t || (rs_esock_passive(t) && !rs_esock_held_events(t))) {
			*asked |= k[i].fd >= 0;
			continue; /* the kernel's alone (an error a call kept is ours) */
		}
		if (r && rs_esock_armed_on(t, r)) {
			kind[i] = K_ENGINE;
			int asks = kernel_asks(t, fds[i].events);
			k[i].events = (short)(asks < 0 ? 0 : asks);
			if (asks < 0)
				k[i].fd = -1;
			*asked |= k[i].fd >= 0;
			ans[i] = engine_answer(t, fds[i].events);
			ready += ans[i] != 0;
		} else {
			/* Detached: data the engine still holds, then the kernel.
			 * While detaching, the owner may still move data: look
			 * again every few milliseconds. */
			kind[i] = K_LEFTOVER;
			*asked |= k[i].fd >= 0;
			*transient |= rs_esock_mode(t) == RS_ES_DETACHING;
			unsigned held = rs_esock_held_events(t);
			if ((held & EPOLLIN) && (fds[i].events & (POLLIN | POLLRDNORM))) {
				ans[i] = (short)(fds[i].events & (POLLIN | POLLRDNORM));
				ready++;
			}
			if (held & EPOLLERR) { /* taken from the kernel: ours to report */
				ans[i] |= POLLERR;
				ready += ans[i] == POLLERR;
			}
		}
	}
	return ready;
}

/* A call that will sleep (r locked), on engine sockets asked for input
 * whose receive of ours is in flight: that receive takes the socket's
 * input only when this thread next enters the ring (DEFER_TASKRUN), and
 * the ring's eventfd says that it has work late (the kernel defers that
 * signal: 16 ms per wake-up seen, a poll-driven ping-pong at 60 round
 * trips a second).  So the kernel is asked for the socket's POLLIN too,
 * which it reports as soon as the bytes arrive: the call wakes, and its
 * next round runs the receive (the kernel's POLLIN is no answer: the
 * engine's is). */
static void input_wakes(const struct pollfd *fds, unsigned long n, struct rs_sock **rec, struct pollfd *k,
		       unsigned char *kind)
{
	for (unsigned long i = 0; i < n; i++) {
		if (kind[i] != K_ENGINE || !(fds[i].events & (POLLIN | POLLRDNORM)) || (k[i].events & POLLIN))
			continue;
		struct rs_esock *t = esock_of(rec[i]);
		if (!t || !RS_LOAD(t->recv_armed) || t->recv_cancel)
			continue;
		k[i].fd = fds[i].fd;
		k[i].events |= POLLIN;
		kind[i] = K_ENGINE_WAKE;
	}
}

/* After the kernel's ppoll: the entries input_wakes added are answers
 * no longer (their POLLIN taken out, the descriptor ignored again when
 * nothing else was asked of it).  1: one of them woke the call. */
static int input_woke(struct pollfd *k, unsigned char *kind, unsigned long n, long kr)
{
	int woke = 0;
	for (unsigned long i = 0; i < n; i++) {
		if (kind[i] != K_ENGINE_WAKE)
			continue;
		kind[i] = K_ENGINE;
		if (kr > 0 && (k[i].revents & POLLIN))
			woke = 1;
		k[i].revents &= (short)~(POLLIN | POLLRDNORM);
		k[i].events &= (short)~POLLIN;
		if (!k[i].events)
			k[i].fd = -1;
	}
	return woke;
}

/* The answers: the engine's (ans) with the kernel's (k, kr: its result;
 * negative also when it was not asked).  What the kernel says of an
 * engine socket updates its hints.  Returns the entries ready. */
static int merge_answers(struct pollfd *fds, unsigned long n, struct rs_sock **rec, const struct pollfd *k,
			 const unsigned char *kind, const short *ans, long kr)
{
	int total = 0;
	for (unsigned long i = 0; i < n; i++) {
		if (kind[i] == K_ENGINE && kr >= 0 && (k[i].revents & (POLLOUT | POLLERR | POLLHUP))) {
			struct rs_esock *t = esock_of(rec[i]);
			if (t && (k[i].revents & POLLOUT))
				RS_STORE(t->kfull, 0); /* the kernel's buffer has room again */
			if (t && (k[i].revents & (POLLERR | POLLHUP)))
				rs_esock_kernel_hup(t, (unsigned)k[i].revents);
		}
		short rev = kind[i] != K_KERNEL ? (short)(ans[i] | (kr >= 0 ? k[i].revents : 0))
			    : (kr >= 0 ? k[i].revents : 0);
		fds[i].revents = rev;
		total += rev != 0;
	}
	return total;
}

/* The kernel has answered: if none of its entries is ready, the ring may
 * vouch for them next time. */
static void learn(struct rs_ring *r, const struct pollfd *k, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		if (k[i].fd >= 0 && k[i].revents)
			return;
	rs_ring_lock(r);
	rs_kw_learn(r, k, n);
	rs_ring_unlock(r);
}

/* A call that will not sleep asks the kernel only about what it has to:
 * nothing (asked: 0, engine_answers'), or kernel fds the ring does not
 * vouch for (kwatch.c).  1: the kernel need not be asked (r locked, if
 * any). */
static int kernel_skippable(struct rs_ring *r, struct pollfd *k, unsigned long n, int asked)
{
	return !asked || (r && rs_kw_quiet(r, k, n));
}

/* This round's timeout for the kernel's ppoll (NULL: none): t_ns (0 when
 * the engine answered already), from the deadline once the call first
 * sleeps (*deadline, read from the clock then); sliced to 10 ms while
 * the ring may hide work (transient, or a stuck IORING_SQ_TASKRUN):
 * *sliced says so. */
static struct timespec *poll_timeout(struct rs_ring *r, int64_t t_ns, int64_t timeout_ns, int64_t *deadline,
				      int transient, int *sliced, struct timespec *ts)
{
	t_ns = rs_wait_left(t_ns, timeout_ns, deadline);
	if (r && RS_LOAD(r->tr_stale))
		transient = 1; /* work the ring may hide: look again soon */
	*sliced = transient && (t_ns < 0 || t_ns > RS_WAIT_SLICE_NS);
	if (*sliced)
		t_ns = RS_WAIT_SLICE_NS;
	if (t_ns < 0)
		return NULL;
	*ts = rs_ns_timespec(t_ns);
	return ts;
}

/* A call that will sleep watches the ring's eventfd too (k[*nk], one
 * more fd), unmuted; 1: the ring has work meanwhile (r unlocked then:
 * the call looks again), else 0 (r still locked). */
static int wake_watched(struct rs_ring *r, struct pollfd *k, unsigned long *nk)
{
	k[*nk].fd = r->evfd;
	k[*nk].events = POLLIN;
	k[*nk].revents = 0;
	(*nk)++;
	rs_ring_evfd_quiet(r, 0);
	if (rs_ring_has_work(r) || rs_ring_stale_look(r)) {
		rs_ring_evfd_quiet(r, 1);
		rs_ring_unlock(r);
		return 1;
	}
	return 0;
}

/* The kernel's ppoll of the round's nk fds (k[0..n) the program's kernel
 * fds, then the ring's eventfd); what it answered teaches kwatch.c (r
 * unlocked).  Its result. */
static long kernel_poll(struct rs_ring *r, struct pollfd *k, unsigned char *kind, unsigned long n, unsigned long nk,
			struct timespec *tsp, const sigset_t *ss, int *woke)
{
	long kr = rs_syscall(SYS_ppoll, k, nk, tsp, ss, 8);
	*woke = input_woke(k, kind, n, kr);
	if (r && kr >= 0)
		learn(r, k, n);
	return kr;
}

int rs_wait_poll(struct pollfd *fds, unsigned long n, struct rs_sock **recs, int timeout_ms,
		 const struct timespec *tmo, const sigset_t *ss, int *handled, int64_t *left_ns)
{
	struct rs_ring *r = rs_ring_tls;
	rs_ring_round_end(r); /* (a wait call: rs_ring_may_queue) */
	*handled = 0;
	if (left_ns)
		*left_ns = -1;
	if (n > INT_MAX)
		return 0; /* more than RLIMIT_NOFILE can be: the kernel says EINVAL */
	/* Each entry's record, looked up once per round: the caller's
	 * (select's) for the first. */
	struct rs_sock *rec_stack[64], **rec = recs;
	if (!rec) {
		rec = n <= 64 ? rec_stack : malloc(n * sizeof(*rec));
		if (!rec) {
			*handled = 1;
			return -ENOMEM;
		}
		look_up(fds, n, rec);
	}
	if (!engine_involved(fds, n, rec, r)) {
		if (rec != recs && rec != rec_stack)
			free(rec);
		if (r && rs_ring_has_work(r)) {
			rs_ring_lock(r);
			rs_ring_progress(r);
			rs_ring_unlock(r);
		}
		return 0;
	}
	*handled = 1;
	int64_t timeout_ns = tmo ? rs_timeout_ns(tmo) : rs_ms_ns(timeout_ms);
	struct pollfd k_stack[65];
	unsigned char kind_stack[65];
	short ans_stack[64];
	struct pollfd *k = n < 65 ? k_stack : malloc((n + 1) * sizeof(*k));
	unsigned char *kind = n < 65 ? kind_stack : malloc(n + 1);
	short *ans = n <= 64 ? ans_stack : malloc(n * sizeof(short));
	if (timeout_ns == RS_TMO_INVALID || n > 65536 || !k || !kind || !ans) {
		if (k != k_stack)
			free(k);
		if (kind != kind_stack)
			free(kind);
		if (ans != ans_stack)
			free(ans);
		if (rec != recs && rec != rec_stack)
			free(rec);
		return timeout_ns == RS_TMO_INVALID || n > 65536 ? -EINVAL : -ENOMEM;
	}
	/* The deadline is read from the clock when the call first sleeps. */
	int64_t deadline = -1;
	int result, first = 1;
	for (;;) {
		int transient = 0;
		if (!first)
			look_up(fds, n, rec); /* (after a wait: fds may have changed) */
		if (r) {
			rs_ring_lock(r);
			if (first && rs_rt.cfg.v[RS_K_TX_MERGE])
				hold_sends(fds, n, rec, r);
			rs_ring_progress(r);
			r->holding = 0;
			int quick = quick_answers(fds, n, rec, r);
			if (quick) {
				rs_ring_unlock(r);
				rs_stat_add(RS_C_CALLS_NOSYS, 1);
				result = quick;
				break;
			}
		}
		first = 0;
		int asked;
		int ready = engine_answers(fds, n, rec, r, k, kind, ans, &transient, &asked);
		unsigned long nk = n;
		int blocking = !ready && timeout_ns != 0;
		if (r && blocking)
			input_wakes(fds, n, rec, k, kind);
		if (r && blocking && wake_watched(r, k, &nk))
			continue;
		int skip = !blocking && kernel_skippable(r, k, n, asked);
		if (r)
			rs_ring_unlock(r);
		int wake = 0, sliced = 0; /* (a call not asking the kernel does not sleep) */
		long kr = 0;
		if (skip) {
			rs_stat_add(RS_C_CALLS_NOSYS, 1);
		} else {
			struct timespec ts;
			struct timespec *tsp =
				poll_timeout(r, ready ? 0 : timeout_ns, timeout_ns, &deadline, transient, &sliced, &ts);
			kr = kernel_poll(r, k, kind, n, nk, tsp, ss, &wake);
		}
		if (nk > n)
			rs_ring_evfd_quiet(r, 1); /* (wake_watched unmuted it) */
		if (nk > n && k[n].revents) {
			uint64_t v;
			rs_syscall(SYS_read, r->evfd, &v, sizeof(v));
			wake = 1;
		}
		if (kr < 0 && !ready) {
			result = (int)kr;
			break;
		}
		int total = merge_answers(fds, n, rec, k, kind, ans, skip ? -1 : kr);
		if (total || (!wake && !sliced) || timeout_ns == 0 || (deadline >= 0 && rs_now_ns() >= deadline)) {
			result = total;
			break;
		}
	}
	if (k != k_stack)
		free(k);
	if (kind != kind_stack)
		free(kind);
	if (ans != ans_stack)
		free(ans);
	if (rec != recs && rec != rec_stack)
		free(rec);
	if (left_ns && timeout_ns >= 0) {
		/* A call that slept: what is left of its deadline.  One that did
		 * not: RS_LEFT_UNSLEPT (see api.h). */
		*left_ns = deadline >= 0 ? deadline - rs_now_ns() : timeout_ns ? RS_LEFT_UNSLEPT : 0;
		if (*left_ns < 0 && *left_ns != RS_LEFT_UNSLEPT)
			*left_ns = 0;
	}
	return result;
}
