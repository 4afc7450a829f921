/* ring.c - per-thread io_uring: creation, locking, submission, completion
 * dispatch, progress at wait points, thread exit, fork.
 *
 * Each thread that serves a socket gets one ring, created on first use,
 * with SINGLE_ISSUER | DEFER_TASKRUN: completions are produced only while
 * the owning thread is inside io_uring_enter, so the owner batches them
 * and any thread holding the ring's lock sees a frozen ring.  The ring's
 * eventfd wakes an external wait (the application's epoll set, a poll)
 * when work arrives; it is muted while engine code runs, so the engine's
 * own submissions do not wake anyone.
 */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "engine_int.h"
#include "sys.h"

RS_TLS struct rs_ring *rs_ring_tls;
static RS_TLS int ring_failed;
static pthread_key_t exit_key;
static rs_lock all_lock = RS_LOCK_INIT;
static struct rs_ring *all_rings;

int rs_ring_init(void (*thread_exit)(void *), void (*watchdog)(void))
{
	rs_drain_set_watchdog(watchdog); /* (the thread starts when a send is queued) */
	return pthread_key_create(&exit_key, thread_exit) == 0 ? 0 : -EAGAIN;
}

static void ring_note_failure(int e)
{
	static atomic_int said;
	if (!atomic_exchange(&said, 1))
		rs_info("engine off for this thread: io_uring ring setup failed: %s", strerror(-e));
}

static void drains_ended(struct rs_ring *r);

static int ring_create(struct rs_ring *r)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
		  IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_SUBMIT_ALL | IORING_SETUP_CQSIZE;
	unsigned entries = (unsigned)rs_rt.cfg.v[RS_K_RING_ENTRIES];
	p.cq_entries = entries * 8;
	if (rs_fault(RS_FAULT_SETUP))
		return -ENOMEM;
	rs_fdseen_making(1); /* (foreign.c: not the program's ring) */
	int e = io_uring_queue_init_params(entries, &r->ring, &p);
	if (e < 0) {
		rs_fdseen_making(-1);
		return e;
	}
	(void)rs_fault(RS_FAULT_SETUP_SIGNAL);
	/* Ring memory is not inherited by fork children. */
	madvise(r->ring.sq.ring_ptr, r->ring.sq.ring_sz, MADV_DONTFORK);
	if (r->ring.cq.ring_ptr != r->ring.sq.ring_ptr)
		madvise(r->ring.cq.ring_ptr, r->ring.cq.ring_sz, MADV_DONTFORK);
	madvise(r->ring.sq.sqes, r->ring.sq.ring_entries * sizeof(struct io_uring_sqe), MADV_DONTFORK);
	r->reg_ring = io_uring_register_ring_fd(&r->ring) == 1;
	e = rs_fdguard_adopt(r->ring.ring_fd, &r->ring.ring_fd);
	rs_fdseen_making(-1);
	if (e < 0)
		goto fail_ring;
	e = rs_bufring_setup(r, p.features);
	if (e < 0)
		goto fail_ring;
	long efd = rs_syscall(SYS_eventfd2, 0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (efd < 0) {
		e = (int)efd;
		goto fail_buf;
	}
	r->evfd = (int)efd;
	e = rs_fdguard_adopt(r->evfd, &r->evfd);
	if (e < 0) {
		rs_sys_close(r->evfd);
		goto fail_buf;
	}
	e = io_uring_register_eventfd(&r->ring, r->evfd);
	if (e < 0)
		goto fail_evfd;
	io_uring_cq_eventfd_toggle(&r->ring, false);
	return 0;
fail_evfd:
	rs_fdguard_release(r->evfd);
fail_buf:
	rs_bufring_destroy(r);
fail_ring:
	rs_fdguard_release(r->ring.ring_fd);
	r->ring.ring_fd = -1;
	io_uring_queue_exit(&r->ring);
	return e;
}

/* This thread's first ring (rs_ring_get). */
static struct rs_ring *ring_new(void)
{
	struct rs_ring *r;
	/* Reuse the record of a thread that has exited (rings are type-stable:
	 * other threads may still look at a dead one). */
	rs_mutex_lock(&all_lock);
	for (r = all_rings; r && !__atomic_load_n(&r->dead, __ATOMIC_ACQUIRE); r = r->all_next)
		;
	if (r) {
		/* Claimed, and locked until the new ring is in place: a walk
		 * over all rings (fork, exit, the watchdog) that sees it alive
		 * must not find it half built. */
		rs_ring_lock(r);
		__atomic_store_n(&r->dead, 0, __ATOMIC_RELEASE);
	}
	rs_mutex_unlock(&all_lock);
	int fresh = r == NULL;
	if (fresh) {
		r = calloc(1, sizeof(*r));
		if (!r) {
			ring_failed = 1;
			return NULL;
		}
		rs_lock_init(&r->lock);
	}
	memset(&r->ring, 0, sizeof(*r) - offsetof(struct rs_ring, ring));
	int e = ring_create(r);
	if (e < 0) {
		ring_failed = 1;
		ring_note_failure(e);
		if (fresh) {
			free(r);
		} else {
			__atomic_store_n(&r->dead, 1, __ATOMIC_RELEASE);
			rs_ring_unlock(r);
		}
		return NULL;
	}
	r->tid = (int)rs_syscall(SYS_gettid, 0);
	r->frag.chunk_size = rs_rt.cfg.v[RS_K_HIGH_ORDER_ALLOC_DISABLE] ? 4096 : 32768;
	r->send_batch = (unsigned)rs_rt.cfg.v[RS_K_SEND_BATCH];
	if (!fresh)
		rs_ring_unlock(r);
	if (fresh) {
		rs_mutex_lock(&all_lock);
		r->all_next = all_rings;
		all_rings = r;
		rs_mutex_unlock(&all_lock);
	}
	rs_ring_tls = r;
	pthread_setspecific(exit_key, r);
	rs_stat_add(RS_C_RINGS, 1);
	return r;
}

struct rs_ring *rs_ring_get(void)
{
	struct rs_ring *r = rs_ring_tls;
	if (rs_likely(r != NULL))
		return r;
	if (!rs_engine_on || ring_failed)
		return NULL;
	/* Made with no lock held: a signal handler that runs on this thread
	 * meanwhile must pass straight to the C library (rs_ready), not arm a
	 * socket on the half-made ring, nor wait for foreign.c's look at the
	 * ring being made, which could never end (seen: a timer's handler
	 * that sends, under RINGSOCK_ARM_AFTER=0, hung for good). */
	rs_nosig_enter();
	r = ring_new();
	rs_nosig_leave();
	return r;
}

#ifdef RS_DEBUG
#define set_owner(r, v) __atomic_store_n(&(r)->lock_owner, (v), __ATOMIC_RELAXED)
#else
#define set_owner(r, v) ((void)0)
#endif

void rs_ring_lock(struct rs_ring *r)
{
	rs_mutex_lock(&r->lock);
	set_owner(r, (uintptr_t)pthread_self());
}

int rs_ring_trylock(struct rs_ring *r)
{
	if (rs_mutex_trylock(&r->lock) != 0)
		return -1;
	set_owner(r, (uintptr_t)pthread_self());
	return 0;
}

void rs_ring_unlock(struct rs_ring *r)
{
	rs_assert(rs_ring_held(r));
	set_owner(r, 0);
	rs_mutex_unlock(&r->lock);
}

static int ring_enter(struct rs_ring *r, unsigned wait_nr, struct __kernel_timespec *ts,
		      const sigset_t *ss)
{
	struct io_uring_cqe *cqe;
	int e;
	if (rs_fault(RS_FAULT_ENTER))
		return -EEXIST; /* (callers look again later) */
	rs_stat_add(RS_C_URING_ENTERS, 1);
	if (rs_unlikely(IO_URING_READ_ONCE(*r->ring.sq.kflags) & IORING_SQ_CQ_OVERFLOW))
		rs_stat_add(RS_C_CQ_BACKLOGS, 1); /* (this enter flushes it) */
	r->sq_sends = 0; /* whatever is in the SQ goes now */
	r->sq_recvs = 0;
	if (wait_nr == 0)
		e = io_uring_submit_and_get_events(&r->ring);
	else
		e = io_uring_submit_and_wait_timeout(&r->ring, &cqe, wait_nr, ts, (sigset_t *)ss);
	return e;
}

struct io_uring_sqe *rs_ring_sqe(struct rs_ring *r)
{
	rs_assert(rs_ring_held(r));
	if (rs_fault(RS_FAULT_NO_SQE))
		return NULL;
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
	if (rs_unlikely(!sqe)) {
		rs_buf_flush(r);
		ring_enter(r, 0, NULL, NULL);
		rs_ring_reap(r);
		sqe = io_uring_get_sqe(&r->ring);
	}
	return sqe;
}

/* Up to max completions the CQ holds now, copied out and consumed.  Never
 * enters the kernel (liburing's peek does when task work is pending): a
 * reap handles what one enter produced, so a multishot receive on a
 * flooded socket takes no more than one enter's worth before its handler
 * has seen it (and could stop it), and a reap for another thread's ring
 * (which may not enter it: SINGLE_ISSUER) takes only what is there. */
static unsigned cq_take(struct io_uring *ring, struct io_uring_cqe *out, unsigned max)
{
	unsigned head = *ring->cq.khead;
	unsigned n = io_uring_smp_load_acquire(ring->cq.ktail) - head;
	if (n > max)
		n = max;
	for (unsigned i = 0; i < n; i++)
		out[i] = ring->cq.cqes[(head + i) & ring->cq.ring_mask];
	io_uring_cq_advance(ring, n);
	return n;
}

int rs_ring_reap(struct rs_ring *r)
{
	rs_assert(rs_ring_held(r));
	struct io_uring_cqe batch[64];
	int total = 0;
	for (;;) {
		/* Copied and consumed before any is handled: a handler that
		 * reaps again (rs_ring_sqe with a full SQ) then sees only newer
		 * completions, never these a second time. */
		unsigned n = cq_take(&r->ring, batch, 64);
		if (!n)
			break;
		for (unsigned i = 0; i < n; i++) {
			struct io_uring_cqe *c = &batch[i];
			void *p = RS_UD_PTR(c->user_data);
			int op = RS_UD_OP(c->user_data);
			if (op == RS_UD_POLL) {
				r->polls_reaped++;
				for (int k = 0; k < RS_POLL_SLOTS; k++)
					if (c->user_data == r->poll[k].ud) {
						r->poll[k].armed = 0; /* fired (one-shot) */
						r->poll[k].fired_clock = __atomic_load_n(&rs_ready_clock, __ATOMIC_RELAXED);
					}
			} else if (op == RS_UD_WAKE) {
				uint64_t v;
				r->wake_armed = 0;
				rs_syscall(SYS_read, r->evfd, &v, sizeof(v));
			} else if (op == RS_UD_ZC) {
				rs_frag_zc_complete(r, p, c);
			} else if (p) {
				struct rs_esock *e = p;
				e->ops->complete(r, e, op, c);
			}
			else if (op == RS_UD_DRAIN)
				r->drain_ended = 1;
		}
		total += (int)n;
	}
	if (r->drain_ended) {
		r->drain_ended = 0;
		drains_ended(r);
	}
	return total;
}

/* The ring's kernel flags as they are (and as a test's stuck flag). */
static unsigned kflags(struct rs_ring *r)
{
	unsigned f = IO_URING_READ_ONCE(*r->ring.sq.kflags);
	return rs_fault(RS_FAULT_STUCK) ? f | IORING_SQ_TASKRUN : f;
}

/* The ring's kernel flags, with a stuck IORING_SQ_TASKRUN left out: the
 * kernel sets it when it queues task work for us and clears it when that
 * work runs, but it has been seen to stay set with nothing queued, and
 * taking it for work then spins a wait loop forever.  (Work queued while
 * it is taken for stuck: rs_ring_stale_look.) */
static inline __attribute__((always_inline)) unsigned ring_flags(struct rs_ring *r)
{
	unsigned flags = kflags(r);
	if (!(flags & IORING_SQ_TASKRUN))
		r->tr_stale = r->tr_empty = 0;
	else if (r->tr_stale || rs_fault(RS_FAULT_STALE)) {
		r->tr_stale = 1;
		flags &= ~IORING_SQ_TASKRUN;
	}
	return flags;
}

/* Task work a stuck-taken flag may hide (r locked, by its owner): once
 * the flag is taken for stuck, work queued since shows only as that same
 * flag (the kernel signals the eventfd for the first item of a batch, and
 * the flag stays set), so nothing would run it: a wait would sleep beside
 * datagrams the kernel holds for the ring, a nonblocking read would find
 * nothing (seen: dnsperf's receiving thread stalled with its sockets'
 * queues full).  Before such a sleep or EAGAIN one enter finds out; a
 * stuck flag costs that one enter, never a spin.  1: it brought
 * completions. */
int rs_ring_stale_look(struct rs_ring *r)
{
	rs_assert(rs_ring_held(r));
	if (!r->tr_stale || !(kflags(r) & IORING_SQ_TASKRUN))
		return 0;
	ring_enter(r, 0, NULL, NULL);
	return io_uring_cq_ready(&r->ring) != 0;
}

int rs_ring_has_completions(struct rs_ring *r)
{
	unsigned flags = ring_flags(r);
	return (flags & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)) || io_uring_cq_ready(&r->ring);
}

/* Can a receive on the rearm list start: is a buffer free in the group
 * its kind receives into?  (The list is short: sockets whose receive
 * ended for want of buffers or SQ room.) */
static int rearm_possible(struct rs_ring *r)
{
	for (struct rs_esock *e = r->rearm; e; e = e->rearm_next) {
		struct rs_bufring *g = e->ops->rx_group == RS_BGID_UDP ? &r->ubuf : &r->buf;
		if (g->held < g->count)
			return 1;
	}
	return 0;
}

int rs_ring_has_input_work(struct rs_ring *r)
{
	return rs_ring_has_completions(r) || io_uring_sq_ready(&r->ring) || RS_LOAD(r->detach) ||
	       (r->rearm && rearm_possible(r));
}

int rs_ring_has_work(struct rs_ring *r)
{
	unsigned flags = ring_flags(r);
	return (flags & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)) || io_uring_cq_ready(&r->ring) ||
	       io_uring_sq_ready(&r->ring) || RS_LOAD(r->txq) || RS_LOAD(r->detach) || r->buf.pending ||
	       (r->rearm && rearm_possible(r));
}

/* Turn queued intentions into SQEs. */
static void ring_prepare(struct rs_ring *r)
{
	rs_assert(rs_ring_held(r));
	r->prepare_seq++;
	if (r->slots_gone && r == rs_ring_tls)
		rs_ring_slots_sweep(r);
	while (r->detach) {
		struct rs_esock *e = r->detach;
		r->detach = e->detach_next;
		e->on_detach = 0;
		e->ops->process_detach(r, e);
	}
	while (r->txq) {
		struct rs_esock *e = r->txq;
		r->txq = e->txq_next;
		if (r->holding && e->hold_seq == r->hold_seq) {
			e->on_txq = 2; /* kept for this round (wait.c hold_sends) */
			e->txq_next = r->txheld;
			r->txheld = e;
			continue;
		}
		e->on_txq = 0;
		e->ops->submit_tx(r, e);
	}
	r->txq_held_only = r->txheld != NULL;
	while (r->txheld) {
		struct rs_esock *e = r->txheld;
		r->txheld = e->txq_next;
		e->on_txq = 1;
		e->txq_next = r->txq;
		RS_STORE(r->txq, e); /* (the owner looks without the lock) */
	}
	/* One at a time from the list (a full SQ submits and reaps, and a
	 * completion may free a socket or queue it again), only while the
	 * buffer ring has buffers, and each socket at most once per round. */
	unsigned todo = 0;
	for (struct rs_esock *e = r->rearm; e; e = e->rearm_next)
		todo++;
	struct rs_esock **pp = &r->rearm;
	while (*pp && todo--) {
		struct rs_esock *e = *pp;
		struct rs_bufring *g = e->ops->rx_group == RS_BGID_UDP ? &r->ubuf : &r->buf;
		if (g->held >= g->count) {
			pp = &e->rearm_next; /* (its group has no buffer free: later) */
			continue;
		}
		*pp = e->rearm_next;
		e->on_rearm = 0;
		e->ops->submit_recv(r, e);
		pp = &r->rearm; /* (submitting may have reaped and changed the list) */
	}
	rs_buf_flush(r);
	r->nr_tx_sqes = 0;
}

int rs_ring_progress(struct rs_ring *r)
{
	/* Nothing to submit, reap or run: only the mark that the owner
	 * passed here (the watchdog's, ring_prepare).  (Every wait and read
	 * answered from the engine comes here.) */
	if (!rs_ring_has_work(r) && !r->slots_gone) {
		r->prepare_seq++;
		r->nr_tx_sqes = 0;
		return 0;
	}
	int handled = 0;
	for (int round = 0; round < 4; round++) {
		ring_prepare(r);
		unsigned flags = ring_flags(r);
		int entered = 0;
		if (io_uring_sq_ready(&r->ring) || (flags & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW))) {
			ring_enter(r, 0, NULL, NULL);
			entered = 1;
		}
		unsigned polls = r->polls_reaped;
		int n = rs_ring_reap(r);
		/* Only the one-shot poll this very enter submitted may have
		 * completed (a wait arms one on a readable epoll set each
		 * round): no work that set the flag.  Counted as nothing, or a
		 * stuck flag spun such a wait for good (seen: an epoll server
		 * at 80% of a core, its sockets' requests unread). */
		if (n > (int)(r->polls_reaped - polls))
			r->tr_empty = 0;
		else if (entered && (kflags(r) & IORING_SQ_TASKRUN) &&
			 ++r->tr_empty >= 3)
			r->tr_stale = 1; /* three enters in a row found nothing */
		handled += n;
		if (!n && (!r->txq || r->txq_held_only) && !r->detach && !(r->rearm && rearm_possible(r)))
			break;
	}
	return handled;
}

void rs_ring_flush_tx(void)
{
	struct rs_ring *r = rs_ring_tls;
	if (!r)
		return;
	rs_ring_lock(r);
	rs_ring_progress(r);
	rs_ring_unlock(r);
}

int rs_ring_wait(struct rs_ring *r, int (*cond)(void *), void *arg, int timeout_ms)
{
	int64_t deadline = timeout_ms >= 0 ? rs_now_ns() + (int64_t)timeout_ms * 1000000 : 0;
	for (;;) {
		rs_ring_progress(r);
		if (cond(arg))
			return 0;
		struct __kernel_timespec ts, *tsp = NULL;
		if (timeout_ms >= 0) {
			int64_t left = deadline - rs_now_ns();
			if (left <= 0)
				return -ETIME;
			ts.tv_sec = left / 1000000000;
			ts.tv_nsec = left % 1000000000;
			tsp = &ts;
		}
		int e = ring_enter(r, 1, tsp, NULL);
		if (e == -EINTR)
			return -EINTR;
	}
}

long rs_blocking_syscall(long nr, long a, long b, long c, long d, long e, long f)
{
	int old;
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old);
	long r = rs_syscall(nr, a, b, c, d, e, f);
	pthread_setcanceltype(old, NULL);
	return r;
}

int rs_ring_catch_up(struct rs_ring *r)
{
	unsigned flags = ring_flags(r);
	if (flags & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)) {
		rs_ring_progress(r); /* completions wait for an enter anyway */
		return 1;
	}
	rs_ring_reap(r);
	return 0;
}

void rs_ring_submit(struct rs_ring *r)
{
	ring_prepare(r);
	if (io_uring_sq_ready(&r->ring) || (ring_flags(r) & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)))
		ring_enter(r, 0, NULL, NULL);
	rs_ring_reap(r);
}

#define RS_SLEEP_CAP_NS (50 * 1000000LL)

int rs_ring_sleep(struct rs_ring *r, int64_t timeout_ns, const sigset_t *ss)
{
	rs_ring_round_end(r);
	ring_prepare(r);
	/* Make the SQEs visible to the kernel here, under the lock: other
	 * threads holding it may prepare SQEs while we wait, and the wait
	 * itself touches no user-space ring state. */
	struct io_uring_sq *sq = &r->ring.sq;
	unsigned tail = sq->sqe_tail;
	if (sq->sqe_head != tail) {
		sq->sqe_head = tail;
		io_uring_smp_store_release(sq->ktail, tail);
	}
	unsigned to_submit = tail - io_uring_smp_load_acquire(sq->khead);
	/* Each send submitted completes at once (MSG_DONTWAIT) with one CQE:
	 * wait for one more than those.  (The caller saw an empty CQ.)  If
	 * another thread holding the lock reaps those CQEs before the kernel
	 * starts the wait, the count would be too high: the wait is then
	 * capped, so that race costs at most RS_SLEEP_CAP_NS, never a hang. */
	unsigned sends = r->sq_sends;
	unsigned want = io_uring_cq_ready(&r->ring) + sends + 1;
	r->sq_sends = 0;
	r->sq_recvs = 0;
	int capped = 0;
	if (sends && (timeout_ns < 0 || timeout_ns > RS_SLEEP_CAP_NS)) {
		timeout_ns = RS_SLEEP_CAP_NS;
		capped = 1;
	}
	int fd = r->reg_ring ? r->ring.enter_ring_fd : r->ring.ring_fd;
	unsigned flags = IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG |
			 (r->reg_ring ? IORING_ENTER_REGISTERED_RING : 0);
	struct __kernel_timespec ts;
	struct io_uring_getevents_arg arg;
	memset(&arg, 0, sizeof(arg));
	if (ss) {
		arg.sigmask = (uint64_t)(uintptr_t)ss;
		arg.sigmask_sz = 8;
	}
	if (timeout_ns >= 0) {
		ts.tv_sec = timeout_ns / 1000000000;
		ts.tv_nsec = timeout_ns % 1000000000;
		arg.ts = (uint64_t)(uintptr_t)&ts;
	}
	RS_STORE(r->sleeping, 1);
	rs_ring_unlock(r);
	rs_stat_add(RS_C_URING_ENTERS, 1);
	long e = rs_blocking_syscall(SYS_io_uring_enter, fd, to_submit, want, flags, (long)&arg, sizeof(arg));
	/* (release: a thread that sees it clear may reap what the enter
	 * completed; udp_recv.c owner_may_take) */
	__atomic_store_n(&r->sleeping, 0, __ATOMIC_RELEASE);
	if (e == -ETIME && capped)
		return 0; /* not the caller's timeout: it looks again */
	return e == -EINTR || e == -ETIME ? (int)e : 0;
}

void rs_ring_wake_arm(struct rs_ring *r)
{
	if (r->wake_armed)
		return;
	struct io_uring_sqe *sqe = rs_ring_sqe(r);
	if (!sqe)
		return;
	io_uring_prep_poll_add(sqe, r->evfd, POLLIN);
	io_uring_sqe_set_data64(sqe, RS_UD_WAKE);
	r->wake_armed = 1;
}

void rs_ring_evfd_quiet(struct rs_ring *r, int quiet)
{
	io_uring_cq_eventfd_toggle(&r->ring, !quiet);
	/* Unmuting is followed by a look at IORING_SQ_TASKRUN
	 * (rs_ring_has_work): the kernel sets that flag and then reads ours,
	 * so our store must be visible before our load, or both sides miss
	 * the other and the wait sleeps through arriving work. */
	if (!quiet)
		atomic_thread_fence(memory_order_seq_cst);
}

/* ---- the drain jobs that ended ------------------------------------------ */

/* A drain job has ended (an RS_UD_DRAIN completion): its socket hears of it. */
static void drains_ended(struct rs_ring *r)
{
	struct rs_esock **pp = &r->draining;
	while (*pp) {
		struct rs_esock *e = *pp;
		if (!rs_drain_done(e->drain)) {
			pp = &e->drain_next;
			continue;
		}
		*pp = e->drain_next;
		e->on_draining = 0;
		e->ops->drain_ended(r, e); /* (may free e) */
	}
}

/* ---- the list of rings ----------------------------------------------------- */

struct rs_ring *rs_rings_lock(void)
{
	rs_mutex_lock(&all_lock);
	return all_rings;
}

struct rs_ring *rs_rings(void)
{
	return all_rings;
}

int rs_rings_trylock(void)
{
	return rs_mutex_trylock(&all_lock);
}

void rs_rings_unlock(void)
{
	rs_mutex_unlock(&all_lock);
}

/* Lock r if its owner thread is alive (all_lock held).  Whether it is
 * alive is read under r's lock: a thread that exits tears its ring down
 * with the lock held and marks it dead last, so a ring seen alive before
 * the lock is taken may be gone once it is (rs_ring_teardown).  A dead
 * record cannot come back to life meanwhile: claiming one takes all_lock. */
int rs_ring_lock_live(struct rs_ring *r)
{
	if (__atomic_load_n(&r->dead, __ATOMIC_ACQUIRE))
		return 0;
	rs_ring_lock(r);
	if (__atomic_load_n(&r->dead, __ATOMIC_ACQUIRE)) {
		rs_ring_unlock(r);
		return 0;
	}
	return 1;
}

/* The owner thread exits and has no socket left (its lock held): free the
 * ring; the record stays for the next thread. */
void rs_ring_teardown(struct rs_ring *r)
{
	rs_frag_zc_orphan_all(r);
	rs_frag_pool_destroy(&r->frag);
	rs_bufring_destroy(r);
	/* The fd is closed once, here: io_uring_queue_exit would close the
	 * number again, which another thread may have been given meanwhile
	 * (the drain thread's ring, seen failing with EBADF). */
	rs_fdguard_release(r->ring.ring_fd);
	r->ring.ring_fd = -1;
	io_uring_queue_exit(&r->ring);
	rs_fdguard_release(r->evfd);
	if (r->kw.have)
		rs_fdguard_release(r->kw.epfd);
	r->kw.have = 0;
	rs_ring_slots_free(r); /* (the table went with the ring) */
	rs_ring_tls = NULL;
	/* last: from here another thread may claim the record (under
	 * all_lock, not this lock) */
	__atomic_store_n(&r->dead, 1, __ATOMIC_RELEASE);
}

/* In a fork child (every socket already given up by its kind): the rings'
 * memory was not inherited; forget it, close their fds, and make every
 * lock new. */
void rs_rings_after_fork_child(void)
{
	rs_lock_init(&all_lock);
	for (struct rs_ring *r = all_rings; r; r = r->all_next) {
		set_owner(r, 0);
		if (r->dead) {
			rs_lock_init(&r->lock);
			continue;
		}
		r->txq = r->rearm = r->detach = r->draining = NULL;
		rs_fdguard_release(r->ring.ring_fd);
		rs_fdguard_release(r->evfd);
		if (r->kw.have)
			rs_fdguard_release(r->kw.epfd);
		r->kw.have = 0;
		rs_ring_slots_free(r); /* (the parent's table) */
		r->frag.cur = NULL;
		r->frag.free = NULL; /* heap memory: leaked in the child, small */
		r->dead = 1;
		rs_lock_init(&r->lock);
	}
	rs_ring_tls = NULL;
	ring_failed = 0;
}
