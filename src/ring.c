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

#include "engine.h"
#include "sys.h"

int rs_engine_on;
RS_TLS struct rs_ring *rs_ring_tls;
static RS_TLS int ring_failed;
static pthread_key_t exit_key;
static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rs_ring *all_rings;
static void ring_watchdog(void);

static void atfork_prepare(void)
{
	__atomic_add_fetch(&rs_fork_gen, 1, __ATOMIC_RELAXED);
	rs_engine_before_fork();
	rs_engine_fork_prepare_detached();
	rs_drain_before_fork();
	rs_stats_before_fork(); /* last: the drain thread may have been exiting */
}

static void atfork_parent(void)
{
	rs_stats_after_fork();
	rs_drain_after_fork(0);
	rs_engine_fork_release_detached(0);
	rs_engine_after_fork_parent();
}

static void atfork_child(void)
{
	/* also for forks made inside libc (daemon()), which do not go
	 * through our fork() */
	rs_vfork_pending = 0;
	rs_rt.pid = rs_sys_getpid();
	rs_lock_depth = 0; /* the locks fork held are new ones in the child */
	rs_stats_after_fork();
	rs_drain_after_fork(1);
	rs_engine_fork_release_detached(1);
	rs_engine_after_fork_child();
}

void rs_engine_init(void)
{
	unsigned off = (unsigned)rs_rt.cfg.v[RS_K_FEATURES_DISABLE];
	const unsigned needed = RS_FEAT_IO_URING | RS_FEAT_MSHOT_RECV | RS_FEAT_BUF_RING |
				RS_FEAT_SINGLE_ISSUER | RS_FEAT_DEFER_TASKRUN;
	if (off & needed) {
		rs_rt.pt_reason = RINGSOCK_PT_NO_IO_URING;
		rs_info("engine off: RINGSOCK_FEATURES_DISABLE removes a feature it needs");
		return;
	}
	long setup = rs_rt.cfg.v[RS_K_SETUP];
	if (setup == RS_SETUP_COOP || setup == RS_SETUP_PLAIN) {
		rs_rt.pt_reason = RINGSOCK_PT_NO_IO_URING;
		rs_info("engine off: RINGSOCK_SETUP=%s (the engine needs DEFER_TASKRUN)",
			setup == RS_SETUP_COOP ? "coop" : "plain");
		return;
	}
	if (pthread_key_create(&exit_key, rs_engine_thread_exit) != 0)
		return;
	if (pthread_atfork(atfork_prepare, atfork_parent, atfork_child) != 0)
		return;
	rs_engine_on = 1;
}

static void ring_note_failure(int e)
{
	static atomic_int said;
	if (!atomic_exchange(&said, 1))
		rs_info("engine off for this thread: io_uring ring setup failed: %s", strerror(-e));
}

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
	int e = io_uring_queue_init_params(entries, &r->ring, &p);
	if (e < 0)
		return e;
	/* Ring memory is not inherited by fork children. */
	madvise(r->ring.sq.ring_ptr, r->ring.sq.ring_sz, MADV_DONTFORK);
	if (r->ring.cq.ring_ptr != r->ring.sq.ring_ptr)
		madvise(r->ring.cq.ring_ptr, r->ring.cq.ring_sz, MADV_DONTFORK);
	madvise(r->ring.sq.sqes, r->ring.sq.ring_entries * sizeof(struct io_uring_sqe), MADV_DONTFORK);
	r->reg_ring = io_uring_register_ring_fd(&r->ring) == 1;
	e = rs_fdguard_adopt(r->ring.ring_fd, &r->ring.ring_fd);
	if (e < 0)
		goto fail_ring;
	e = rs_bufring_setup(r);
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

struct rs_ring *rs_ring_get(void)
{
	struct rs_ring *r = rs_ring_tls;
	if (rs_likely(r != NULL))
		return r;
	if (!rs_engine_on || ring_failed)
		return NULL;
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
		pthread_mutex_init(&r->lock, NULL);
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
	rs_drain_watch(ring_watchdog); /* it runs from now on */
	return r;
}

void rs_ring_lock(struct rs_ring *r)
{
	rs_mutex_lock(&r->lock);
}

void rs_ring_unlock(struct rs_ring *r)
{
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
	if (wait_nr == 0)
		e = io_uring_submit_and_get_events(&r->ring);
	else
		e = io_uring_submit_and_wait_timeout(&r->ring, &cqe, wait_nr, ts, (sigset_t *)ss);
	return e;
}

struct io_uring_sqe *rs_ring_sqe(struct rs_ring *r)
{
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

int rs_ring_reap(struct rs_ring *r)
{
	struct io_uring_cqe *cqes[64];
	int total = 0;
	for (;;) {
		unsigned n = io_uring_peek_batch_cqe(&r->ring, cqes, 64);
		if (!n)
			break;
		for (unsigned i = 0; i < n; i++) {
			struct io_uring_cqe *c = cqes[i];
			void *p = RS_UD_PTR(c->user_data);
			int op = RS_UD_OP(c->user_data);
			if (op == RS_UD_POLL) {
				if (c->user_data == r->poll_ud)
					r->poll_armed = 0; /* fired (one-shot) */
			} else if (op == RS_UD_WAKE) {
				uint64_t v;
				r->wake_armed = 0;
				rs_syscall(SYS_read, r->evfd, &v, sizeof(v));
			} else if (p)
				rs_tcp_complete(r, p, op, c);
			else if (op == RS_UD_DRAIN)
				r->drain_ended = 1;
		}
		io_uring_cq_advance(&r->ring, n);
		total += (int)n;
	}
	if (r->drain_ended) {
		r->drain_ended = 0;
		rs_tcp_drains_ended(r);
	}
	return total;
}

/* The ring's kernel flags, with a stuck IORING_SQ_TASKRUN left out: the
 * kernel sets it when it queues task work for us and clears it when that
 * work runs, but it has been seen to stay set with nothing queued, and
 * taking it for work then spins a wait loop forever. */
static unsigned ring_flags(struct rs_ring *r)
{
	unsigned flags = IO_URING_READ_ONCE(*r->ring.sq.kflags);
	if (!(flags & IORING_SQ_TASKRUN))
		r->tr_stale = r->tr_empty = 0;
	else if (r->tr_stale)
		flags &= ~IORING_SQ_TASKRUN;
	return flags;
}

int rs_ring_has_completions(struct rs_ring *r)
{
	unsigned flags = ring_flags(r);
	return (flags & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)) || io_uring_cq_ready(&r->ring);
}

int rs_ring_has_input_work(struct rs_ring *r)
{
	return rs_ring_has_completions(r) || io_uring_sq_ready(&r->ring) || RS_LOAD(r->detach) ||
	       (r->rearm && r->buf.held < r->buf.count);
}

int rs_ring_has_work(struct rs_ring *r)
{
	unsigned flags = ring_flags(r);
	return (flags & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)) || io_uring_cq_ready(&r->ring) ||
	       io_uring_sq_ready(&r->ring) || RS_LOAD(r->txq) || RS_LOAD(r->detach) || r->buf.pending ||
	       (r->rearm && r->buf.held < r->buf.count);
}

/* Turn queued intentions into SQEs. */
static void ring_prepare(struct rs_ring *r)
{
	r->prepare_seq++;
	while (r->detach) {
		struct rs_tcp *t = r->detach;
		r->detach = t->detach_next;
		t->on_detach = 0;
		rs_tcp_process_detach(r, t);
	}
	while (r->txq) {
		struct rs_tcp *t = r->txq;
		r->txq = t->txq_next;
		t->on_txq = 0;
		rs_tcp_submit_tx(r, t);
	}
	/* One at a time from the list (a full SQ submits and reaps, and a
	 * completion may free a socket or queue it again), only while the
	 * buffer ring has buffers, and each socket at most once per round. */
	unsigned todo = 0;
	for (struct rs_tcp *t = r->rearm; t; t = t->rearm_next)
		todo++;
	while (r->rearm && todo-- && r->buf.held < r->buf.count) {
		struct rs_tcp *t = r->rearm;
		r->rearm = t->rearm_next;
		t->on_rearm = 0;
		rs_tcp_submit_recv(r, t);
	}
	rs_buf_flush(r);
	r->nr_tx_sqes = 0;
}

int rs_ring_progress(struct rs_ring *r)
{

	int handled = 0;
	for (int round = 0; round < 4; round++) {
		ring_prepare(r);
		unsigned flags = ring_flags(r);
		int entered = 0;
		if (io_uring_sq_ready(&r->ring) || (flags & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW))) {
			ring_enter(r, 0, NULL, NULL);
			entered = 1;
		}
		int n = rs_ring_reap(r);
		if (n)
			r->tr_empty = 0;
		else if (entered && (IO_URING_READ_ONCE(*r->ring.sq.kflags) & IORING_SQ_TASKRUN) &&
			 ++r->tr_empty >= 3)
			r->tr_stale = 1; /* three enters in a row found nothing */
		handled += n;
		if (!n && !r->txq && !r->detach && !(r->rearm && r->buf.held < r->buf.count))
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

void rs_ring_poll_arm(struct rs_ring *r, int fd, const void *key)
{
	if (r->poll_armed && r->poll_key == key)
		return;
	struct io_uring_sqe *sqe;
	if (r->poll_armed && (sqe = rs_ring_sqe(r)) != NULL) {
		/* another set (or a closed one's number reused): drop the old */
		io_uring_prep_cancel64(sqe, r->poll_ud, 0);
		io_uring_sqe_set_data64(sqe, 0);
	}
	r->poll_armed = 0;
	sqe = rs_ring_sqe(r);
	if (!sqe)
		return;
	io_uring_prep_poll_add(sqe, fd, POLLIN);
	r->poll_ud = (++r->poll_seq << 3) | RS_UD_POLL;
	io_uring_sqe_set_data64(sqe, r->poll_ud);
	r->poll_armed = 1;
	r->poll_key = key;
}

int rs_ring_poll_needed(struct rs_ring *r, const void *key)
{
	return r->poll_key != key || !r->poll_armed;
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
	if (io_uring_sq_ready(&r->ring))
		ring_enter(r, 0, NULL, NULL);
	rs_ring_reap(r);
}

#define RS_SLEEP_CAP_MS 50

int rs_ring_sleep(struct rs_ring *r, int timeout_ms, const sigset_t *ss)
{
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
	 * capped, so that race costs at most RS_SLEEP_CAP_MS, never a hang. */
	unsigned sends = r->sq_sends;
	unsigned want = io_uring_cq_ready(&r->ring) + sends + 1;
	r->sq_sends = 0;
	int capped = 0;
	if (sends && (timeout_ms < 0 || timeout_ms > RS_SLEEP_CAP_MS)) {
		timeout_ms = RS_SLEEP_CAP_MS;
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
	if (timeout_ms >= 0) {
		ts.tv_sec = timeout_ms / 1000;
		ts.tv_nsec = (long long)(timeout_ms % 1000) * 1000000;
		arg.ts = (uint64_t)(uintptr_t)&ts;
	}
	rs_ring_unlock(r);
	rs_stat_add(RS_C_URING_ENTERS, 1);
	long e = rs_blocking_syscall(SYS_io_uring_enter, fd, to_submit, want, flags, (long)&arg, sizeof(arg));
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

/* The thread is exiting: hand every socket over to pass-through and free
 * the ring.  Sends already accepted still go out (we wait for them). */
void rs_engine_thread_exit(void *arg)
{
	struct rs_ring *r = arg;
	if (!r || r != rs_ring_tls)
		return;
	rs_ring_lock(r);
	while (r->owned)
		rs_tcp_ring_gone(r, r->owned);
	rs_frag_pool_destroy(&r->frag);
	rs_bufring_destroy(r);
	/* The fd is closed once, here: io_uring_queue_exit would close the
	 * number again, which another thread may have been given meanwhile
	 * (the drain thread's ring, seen failing with EBADF). */
	rs_fdguard_release(r->ring.ring_fd);
	r->ring.ring_fd = -1;
	io_uring_queue_exit(&r->ring);
	rs_fdguard_release(r->evfd);
	rs_ring_tls = NULL;
	/* last: from here another thread may claim the record (under
	 * all_lock, not this lock) */
	__atomic_store_n(&r->dead, 1, __ATOMIC_RELEASE);
	rs_ring_unlock(r);
}

/* The drain thread calls this every RS_WATCH_MS.  A ring whose owner left
 * sends queued and has not run engine code since the last look is blocked
 * where the library cannot see (a condition variable, a sleep, a call it
 * does not interpose): its queued sends are written out for it, so a peer
 * waiting for them is never left waiting on that thread. */
static void ring_watchdog(void)
{
	/* never waits: fork holds these while it waits for the drain thread */
	if (rs_mutex_trylock(&all_lock) != 0)
		return;
	for (struct rs_ring *r = all_rings; r; r = r->all_next) {
		if (rs_mutex_trylock(&r->lock) != 0)
			continue; /* its owner is running engine code */
		if (!__atomic_load_n(&r->dead, __ATOMIC_ACQUIRE) && r->txq &&
		    r->prepare_seq == r->watch_seq) {
			rs_ring_reap(r);
			rs_tcp_flush_queued(r);
		}
		r->watch_seq = r->prepare_seq;
		rs_ring_unlock(r);
	}
	rs_mutex_unlock(&all_lock);
}

/* ---- fork, exec, exit ---------------------------------------------------- */

/* Lock r if its owner thread is alive (all_lock held).  Whether it is
 * alive is read under r's lock: a thread that exits tears its ring down
 * with the lock held and marks it dead last, so a ring seen alive before
 * the lock is taken may be gone once it is (rs_engine_thread_exit).  A
 * dead record cannot come back to life meanwhile: claiming one takes
 * all_lock. */
static int lock_live(struct rs_ring *r)
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

void rs_engine_before_fork(void)
{
	if (!rs_engine_on)
		return;
	struct rs_ring *mine = rs_ring_tls;
	rs_mutex_lock(&all_lock);
	for (struct rs_ring *r = all_rings; r; r = r->all_next) {
		/* Every ring's lock, a dead one's too: the child re-creates them
		 * all, and none may be in the middle of an unlock (an exiting
		 * thread releases its ring's after marking it dead). */
		rs_ring_lock(r);
		if (__atomic_load_n(&r->dead, __ATOMIC_ACQUIRE))
			continue;
		if (r == mine)
			rs_ring_progress(r);
		else
			rs_ring_reap(r);
		for (struct rs_tcp *t = r->owned; t; t = t->next)
			rs_tcp_fork_prepare(t);
	}
	/* The locks stay held across fork(): the child must not inherit a
	 * ring in the middle of an operation. */
}

void rs_engine_after_fork_parent(void)
{
	if (!rs_engine_on)
		return;
	for (struct rs_ring *r = all_rings; r; r = r->all_next)
		rs_ring_unlock(r);
	rs_mutex_unlock(&all_lock);
}

void rs_engine_after_fork_child(void)
{
	if (!rs_engine_on)
		return;
	pthread_mutex_init(&all_lock, NULL);
	for (struct rs_ring *r = all_rings; r; r = r->all_next) {
		if (r->dead) {
			pthread_mutex_init(&r->lock, NULL);
			continue;
		}
		/* The ring's memory was not inherited: forget it, close its fds. */
		while (r->owned)
			rs_tcp_fork_child(r->owned);
		r->txq = r->rearm = r->detach = NULL;
		rs_fdguard_release(r->ring.ring_fd);
		rs_fdguard_release(r->evfd);
		r->frag.cur = NULL;
		r->frag.free = NULL; /* heap memory: leaked in the child, small */
		r->dead = 1;
		pthread_mutex_init(&r->lock, NULL);
	}
	rs_ring_tls = NULL;
	ring_failed = 0;
}

static int tx_idle(void *arg)
{
	struct rs_ring *r = arg;
	for (struct rs_tcp *t = r->owned; t; t = t->next)
		if (t->tx_cnt || t->send_inflight)
			return 0;
	return !r->txq;
}

/* Every ring's queued sends reach the kernel (or the drain thread); with
 * spawn, no receive of any ring reads ahead from now on.  Then what the
 * drain thread has: a peer that stopped reading gets 10 s in all. */
static void flush_rings(const char *why, int spawn)
{
	struct rs_ring *mine = rs_ring_tls;
	rs_mutex_lock(&all_lock);
	for (struct rs_ring *r = all_rings; r; r = r->all_next) {
		if (!lock_live(r))
			continue;
		if (spawn)
			for (struct rs_tcp *t = r->owned; t; t = t->next)
				rs_tcp_spawn_prepare(t);
		if (r == mine) {
			if (rs_ring_wait(r, tx_idle, r, 10000) == -ETIME)
				rs_warn("%s: sends to a peer that is not reading were still queued after 10 s", why);
		} else {
			rs_ring_reap(r);
			for (struct rs_tcp *t = r->owned; t; t = t->next)
				rs_tcp_flush_direct(t);
		}
		rs_ring_unlock(r);
	}
	rs_mutex_unlock(&all_lock);
	if (rs_drain_wait_all(10000) < 0)
		rs_warn("%s: sends to a peer that is not reading were still draining after 10 s", why);
}

void rs_engine_flush_all(void)
{
	if (!rs_engine_on)
		return;
	/* Accepted data reaches the kernel before the process image goes. */
	flush_rings("exit", 0);
	rs_drain_stop(); /* idle now: nothing runs beside the exit handlers */
}

int rs_engine_refuse;

void rs_engine_refuse_all(int reason)
{
	if (!rs_engine_on)
		return;
	int expect = 0;
	if (!__atomic_compare_exchange_n(&rs_engine_refuse, &expect, reason, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return; /* done once */
	rs_info("the program set up an io_uring of its own: its sockets leave the engine");
	rs_mutex_lock(&all_lock);
	for (struct rs_ring *r = all_rings; r; r = r->all_next) {
		if (!lock_live(r))
			continue;
		rs_tcp_leave_all(r, reason);
		rs_ring_unlock(r);
	}
	rs_mutex_unlock(&all_lock);
}

int rs_dying;

/* A signal's default action is about to end the process (sig.c): what is
 * queued reaches the kernel first, as at exit.  Nothing may allocate or
 * free memory from here (the signal may have come in the middle of
 * malloc): received data is dropped, sends wait in the ring instead of
 * going to a new drain job, and memory is left for the exit to reclaim. */
void rs_engine_die_flush(void)
{
	if (!rs_engine_on || !rs_ready())
		return;
	__atomic_store_n(&rs_dying, 1, __ATOMIC_RELEASE);
	flush_rings("fatal signal", 0);
}

void rs_engine_before_spawn(void)
{
	if (rs_engine_on)
		flush_rings("spawn", 1);
}
