/* poll.c - poll, ppoll, select, pselect. */
#include "preload.h"

#include <string.h>

/* Count a wait call: on sockets if any watched fd is a tracked socket.
 * (Inlined: poll's fds is write-only to the compiler, glibc's access
 * attribute, and a call reading it warns.) */
static inline __attribute__((always_inline)) void count_pollfds(const struct pollfd *fds, nfds_t n)
{
	if (!rs_enter())
		return;
	int ours = 0;
	for (nfds_t i = 0; i < n && !ours; i++)
		ours = rs_fd_peek(fds[i].fd) != NULL;
	rs_count_call(ours, RINGSOCK_FAM_POLL);
}

static void count_fdsets(int nfds, const fd_set *r, const fd_set *w, const fd_set *e)
{
	if (!rs_enter())
		return;
	int ours = 0;
	for (int fd = 0; fd < nfds && fd < FD_SETSIZE && !ours; fd++)
		if ((r && FD_ISSET(fd, r)) || (w && FD_ISSET(fd, w)) || (e && FD_ISSET(fd, e)))
			ours = rs_fd_peek(fd) != NULL;
	rs_count_call(ours, RINGSOCK_FAM_POLL);
}

static int engine_on(void)
{
	return rs_engine_on && rs_ready() && !rs_rt.passthrough;
}

/* Asking for POLLPRI is asking about urgent data: those sockets leave
 * the engine first (rs_sock_urgent). */
static void urgent_interest(const struct pollfd *fds, nfds_t n)
{
	for (nfds_t i = 0; i < n; i++)
		if (rs_unlikely(fds[i].events & POLLPRI)) {
			struct rs_sock *s = rs_engine_sock(rs_fd_peek(fds[i].fd));
			if (s)
				rs_sock_urgent(s, fds[i].fd);
		}
}

RS_EXPORT int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	count_pollfds(fds, nfds);
	if (engine_on()) {
		urgent_interest(fds, nfds);
		int handled;
		int r = rs_wait_poll(fds, nfds, NULL, timeout, NULL, NULL, &handled, NULL);
		if (handled)
			return (int)rs_ret(r);
	}
	return REAL(poll)(fds, nfds, timeout);
}

RS_EXPORT int ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *tmo, const sigset_t *ss)
{
	count_pollfds(fds, nfds);
	if (engine_on()) {
		urgent_interest(fds, nfds);
		int handled;
		int r = rs_wait_poll(fds, nfds, NULL, -1, tmo, ss, &handled, NULL);
		if (handled)
			return (int)rs_ret(r);
	}
	return REAL(ppoll)(fds, nfds, tmo, ss);
}

/* A set's words (fd_set is an array of longs, NFDBITS bits each, in glibc
 * and musl). */
static inline __attribute__((always_inline)) unsigned long set_word(const fd_set *set, int i)
{
	return set ? ((const unsigned long *)(const void *)set)[i] : 0;
}

/* Word i of the union of the sets, bits at or past nfds cleared. */
static inline __attribute__((always_inline)) unsigned long set_mask(const fd_set *r, const fd_set *w, const fd_set *e,
								     int i, int words, int nfds)
{
	unsigned long m = set_word(r, i) | set_word(w, i) | set_word(e, i);
	if (i == words - 1 && nfds % NFDBITS)
		m &= (1UL << (nfds % NFDBITS)) - 1;
	return m;
}

/* select over engine sockets: as a poll, then back to the sets; counts
 * the call (on sockets if any watched fd is a tracked one).  Returns
 * RS_PASS when no engine socket is involved; *left_ns: rs_wait_poll's. */
static int select_engine(int nfds, fd_set *r, fd_set *w, fd_set *e, const struct timespec *tmo, const sigset_t *ss,
			 int64_t *left_ns)
{
	if (!engine_on() || nfds < 0 || nfds > FD_SETSIZE) {
		count_fdsets(nfds, r, w, e);
		rs_ring_flush_own_tx(); /* (the kernel's select may sleep) */
		return (int)RS_PASS;
	}
	/* (sets of a word or less are sized by nfds: no counting pass) */
	int words = (nfds + (int)NFDBITS - 1) / (int)NFDBITS, nset = nfds <= (int)NFDBITS ? nfds : 0;
	for (int i = 0; i < words && nfds > (int)NFDBITS; i++)
		nset += __builtin_popcountl(set_mask(r, w, e, i, words, nfds));
	/* (sized to the set: a thread with a small stack may select) */
	struct pollfd pf[nset ? nset : 1];
	struct rs_sock *recs[nset ? nset : 1];
	int n = 0, engine = 0, ours = 0;
	/* (n < nset: a set another thread changes meanwhile never takes more
	 * entries than were counted) */
	for (int i = 0; i < words && n < nset; i++) {
		unsigned long rw = set_word(r, i), ww = set_word(w, i), ew = set_word(e, i);
		for (unsigned long m = set_mask(r, w, e, i, words, nfds); m && n < nset; m &= m - 1) {
			int b = __builtin_ctzl(m), fd = i * (int)NFDBITS + b;
			short ev = (short)((((rw >> b) & 1) * POLLIN) | (((ww >> b) & 1) * POLLOUT) |
					   (((ew >> b) & 1) * POLLPRI));
			struct rs_sock *s = rs_fd_peek(fd);
			if (s) {
				ours = 1;
				if (rs_unlikely(ev & POLLPRI))
					urgent_interest(&(struct pollfd){ .fd = fd, .events = POLLPRI }, 1);
				engine |= rs_sock_on_engine(s);
			}
			pf[n] = (struct pollfd){ .fd = fd, .events = ev };
			recs[n++] = s;
		}
	}
	rs_count_call(ours, RINGSOCK_FAM_POLL);
	if (!engine) {
		rs_ring_flush_own_tx(); /* (the kernel's select may sleep) */
		return (int)RS_PASS;
	}
	int handled;
	int k = rs_wait_poll(pf, (unsigned long)n, recs, -1, tmo, ss, &handled, left_ns);
	if (!handled)
		return (int)RS_PASS;
	if (k < 0)
		return k;
	for (int i = 0; i < n && k; i++) /* (k: the entries with an answer) */
		if (pf[i].revents & POLLNVAL)
			return -EBADF;
	/* Clear only the words the kernel would write (nfds bits, rounded up
	 * to whole words): a program may pass sets sized for its highest
	 * descriptor, smaller than an fd_set (libevent does). */
	unsigned long *rs = (unsigned long *)(void *)r, *ws = (unsigned long *)(void *)w, *es = (unsigned long *)(void *)e;
	for (int i = 0; i < words; i++) {
		if (rs)
			rs[i] = 0;
		if (ws)
			ws[i] = 0;
		if (es)
			es[i] = 0;
	}
	int count = 0;
	for (int i = 0; i < n && k; i++) {
		short rev = pf[i].revents, ev = pf[i].events;
		if (!rev)
			continue;
		int word = pf[i].fd / (int)NFDBITS;
		unsigned long bit = 1UL << (pf[i].fd % (int)NFDBITS);
		if ((ev & POLLIN) && (rev & (POLLIN | POLLHUP | POLLERR))) {
			rs[word] |= bit;
			count++;
		}
		if ((ev & POLLOUT) && (rev & (POLLOUT | POLLERR))) {
			ws[word] |= bit;
			count++;
		}
		if ((ev & POLLPRI) && (rev & POLLPRI)) {
			es[word] |= bit;
			count++;
		}
	}
	return count;
}

RS_EXPORT int select(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *tmo)
{
	/* The C library's reading of a timeval (glibc's tv_usec as an int):
	 * a negative field EINVAL (left to its call), whole seconds carried
	 * out of tv_usec, a sum past 146 years no timeout at all.  (No
	 * division unless tv_usec is a second or more: this is every call
	 * of a select loop.) */
	struct timespec ts, *tsp = NULL;
	time_t sec = 0;
	long us = 0;
	if (tmo) {
		sec = tmo->tv_sec;
		us = tmo->tv_usec;
#ifdef __GLIBC__
		us = (int32_t)us;
#endif
		if (sec < 0 || us < 0) {
			count_fdsets(nfds, r, w, e);
			return REAL(select)(nfds, r, w, e, tmo);
		}
		if (us >= 1000000) {
			sec = us / 1000000 < RS_TMO_MAX_SEC - sec ? sec + us / 1000000 : RS_TMO_MAX_SEC;
			us %= 1000000;
		}
		if (sec < RS_TMO_MAX_SEC) {
			ts = (struct timespec){ sec, us * 1000 };
			tsp = &ts;
		}
	}
	int64_t left = -1;
	int k = select_engine(nfds, r, w, e, tsp, NULL, &left);
	if (k == (int)RS_PASS)
		return REAL(select)(nfds, r, w, e, tmo);
#ifdef __GLIBC__
	/* glibc's select writes back what the kernel's pselect6 left of the
	 * time (musl's passes a copy): in microseconds, truncated. */
	if (left == RS_LEFT_UNSLEPT) { /* the timeout less a microsecond */
		if (us) {
			us--;
		} else if (sec) {
			sec--;
			us = 999999;
		}
		tmo->tv_sec = sec;
		tmo->tv_usec = (suseconds_t)us;
	} else if (left >= 0) {
		tmo->tv_sec = (time_t)(left / 1000000000);
		tmo->tv_usec = (suseconds_t)(left % 1000000000 / 1000);
	}
#endif
	return (int)rs_ret(k);
}

RS_EXPORT int pselect(int nfds, fd_set *r, fd_set *w, fd_set *e, const struct timespec *tmo,
		      const sigset_t *ss)
{
	int k = select_engine(nfds, r, w, e, tmo, ss, NULL);
	if (k != (int)RS_PASS)
		return (int)rs_ret(k);
	return REAL(pselect)(nfds, r, w, e, tmo, ss);
}

/* ---- the raw system calls (syscall(2): preload/syscall.c) ---------------- */

/* The kernel's own calls write back what is left of a timeout that was
 * not zero (the C library's ppoll and pselect pass a copy), counted from
 * the call's start (t0, CLOCK_MONOTONIC ns) to its end, 0 once past. */
static struct timespec time_left(struct timespec given, int64_t t0)
{
	int64_t el = rs_now_ns() - t0;
	given.tv_sec -= (time_t)(el / 1000000000);
	given.tv_nsec -= (long)(el % 1000000000);
	if (given.tv_nsec < 0) {
		given.tv_nsec += 1000000000;
		given.tv_sec--;
	}
	return given.tv_sec < 0 ? (struct timespec){ 0, 0 } : given;
}

/* After a wait the engine answered (the clock read at its start, t0):
 * the time left of a valid timeout that was not zero, written back, as
 * the kernel's call does.  (tmo is read only now: as in the engine's own
 * wait, not before an engine socket is known to be involved.) */
static void put_left(struct timespec *tmo, int64_t t0)
{
	if (tmo && rs_timeout_ns(tmo) != RS_TMO_INVALID && (tmo->tv_sec || tmo->tv_nsec))
		*tmo = time_left(*tmo, t0);
}

long rs_raw_ppoll(struct pollfd *fds, nfds_t nfds, struct timespec *tmo, const sigset_t *ss)
{
	count_pollfds(fds, nfds);
	if (!engine_on())
		return RS_PASS;
	urgent_interest(fds, nfds);
	int64_t t0 = tmo ? rs_now_ns() : 0;
	int handled;
	int r = rs_wait_poll(fds, nfds, NULL, -1, tmo, ss, &handled, NULL);
	if (!handled)
		return RS_PASS;
	put_left(tmo, t0);
	return rs_ret(r);
}

long rs_raw_pselect6(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timespec *tmo, const sigset_t *ss)
{
	int64_t t0 = tmo ? rs_now_ns() : 0;
	int k = select_engine(nfds, r, w, e, tmo, ss, NULL);
	if (k == (int)RS_PASS)
		return RS_PASS;
	put_left(tmo, t0);
	return rs_ret(k);
}

/* The kernel's select reads tv_usec as a long and adds whole seconds of
 * it, negative ones too, before it checks the sum ({2, -1000000} is one
 * second); past 146 years is as good as none; the time left is written
 * back in microseconds, truncated.  (The timeval is read before the set
 * is looked at, as the C library's select reads it: a bad pointer faults
 * where the kernel would say EFAULT.) */
long rs_raw_select(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv)
{
	struct timespec ts, *tsp = NULL;
	int64_t t0 = 0;
	if (tv) {
		long long sec = (long long)tv->tv_sec, us = (long long)tv->tv_usec;
		if ((us / 1000000 > 0 && sec > LLONG_MAX - us / 1000000) ||
		    (us / 1000000 < 0 && sec < LLONG_MIN - us / 1000000))
			return RS_PASS; /* (the kernel's answer to an overflow) */
		ts = (struct timespec){ (time_t)(sec + us / 1000000), (long)(us % 1000000 * 1000) };
		if (ts.tv_sec < 0 || ts.tv_nsec < 0)
			return RS_PASS; /* the kernel's EINVAL */
		t0 = rs_now_ns();
		if (ts.tv_sec < RS_TMO_MAX_SEC)
			tsp = &ts;
	}
	int k = select_engine(nfds, r, w, e, tsp, NULL, NULL);
	if (k == (int)RS_PASS)
		return RS_PASS;
	if (tv && (ts.tv_sec || ts.tv_nsec)) {
		struct timespec left = time_left(ts, t0);
		tv->tv_sec = left.tv_sec;
		tv->tv_usec = (suseconds_t)(left.tv_nsec / 1000);
	}
	return rs_ret(k);
}
