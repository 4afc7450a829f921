/* drain.c - sends the kernel could not take at once.
 *
 * A socket's queued bytes normally leave in one nonblocking sendmsg from
 * its owner's ring.  When the kernel's send buffer is full, the rest can
 * only go as the peer reads, and the owner's ring cannot wait for that by
 * itself: with DEFER_TASKRUN it moves only while its thread is inside
 * io_uring_enter, and the thread may be blocked anywhere else, even in a
 * read of the very peer that waits for these bytes.
 *
 * So the rest is copied into a drain job for one process-wide drain
 * thread, which sleeps in its own ring and sends as room appears
 * (IORING_OP_SEND with MSG_WAITALL: the kernel polls and retries).  The
 * job holds the socket's file in a fixed-file slot of that ring, so it
 * survives close() and the reuse of the descriptor number; a shutdown
 * asked for meanwhile follows the data.  The socket takes no new bytes
 * until its job is done (EAGAIN, not writable); then the drain thread
 * posts a message to the owner's ring (IORING_OP_MSG_RING), which wakes
 * the owner wherever it waits for the engine.
 *
 * The thread starts, with every signal blocked, when the engine first
 * queues a send (engine_int.h rs_ring_may_queue: the third of a round, or
 * the second of the second round with two) or drains one
 * (rs_drain_want): a process that never does stays single-threaded.  Every
 * RS_WATCH_MS it also looks for rings whose owner left sends queued and
 * went to block where the library cannot see (the watchdog engine.c hands
 * it: the drain thread does not call up into the rings).  fork
 * waits (up to 10 s) for running jobs and stops the idle thread, not its
 * ring (see ring_setup); the child starts afresh.
 */
#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "engine_int.h"
#include "sys.h"

#define DRAIN_SLOTS 1024 /* at most; fewer under a low RLIMIT_NOFILE */
#define RS_WATCH_MS 50
#define DRAIN_ENTRIES 256
#define UD_WAKE 1ull  /* the eventfd read: new jobs */
#define UD_MSG 2ull   /* a message posted to an owner's ring */

struct rs_drain_job {
	struct rs_drain_job *next;    /* incoming list */
	struct rs_drain_job *all_prev, *all_next; /* running jobs */
	char *buf;
	size_t len, off;
	int slot;
	int shut;                     /* shutdown(how) + 1 after the data */
	int stage;                    /* 0 sending, 1 shutting down */
	int err;                      /* first error, positive errno */
	uint32_t done;                /* futex word */
	int refs;                     /* the socket's and the thread's */
	struct rs_ring *notify;       /* owner to tell when done */
};

static struct {
	rs_lock lock;                 /* everything below */
	pthread_t th;
	int stop;                     /* the thread is asked to end (fork) */
	int restart;                  /* stopped for fork: start again after */
	int ring_ok;                  /* the ring and eventfd exist (kept across
				       * the thread's stops, see ring_setup) */
	struct io_uring ring;
	int evfd;
	uint64_t evbuf;
	struct rs_drain_job *incoming;
	struct rs_drain_job *all;
	uint32_t running;             /* futex word: jobs not done */
	uint64_t slots[DRAIN_SLOTS / 64];
	int nslots;                   /* registered file slots (a multiple of 64) */
	void (*watchdog)(void);       /* run every RS_WATCH_MS (rs_drain_set_watchdog) */
} dr = { .lock = RS_LOCK_INIT, .evfd = -1 };
int rs_drain_state; /* 0 not started, 1 running, -1 failed [written under
		     * dr.lock; read atomically: rs_drain_running] */

static void futex_wake(uint32_t *w)
{
	rs_syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

/* Wait until *w != v or the deadline (ns, < 0: none).  0 or -ETIME. */
static int futex_wait_change(uint32_t *w, uint32_t v, int64_t deadline)
{
	while (__atomic_load_n(w, __ATOMIC_ACQUIRE) == v) {
		struct timespec ts, *tsp = NULL;
		if (deadline >= 0) {
			struct timespec now;
			clock_gettime(CLOCK_MONOTONIC, &now);
			int64_t left = deadline - ((int64_t)now.tv_sec * 1000000000 + now.tv_nsec);
			if (left <= 0)
				return -ETIME;
			ts.tv_sec = left / 1000000000;
			ts.tv_nsec = left % 1000000000;
			tsp = &ts;
		}
		rs_syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, v, tsp, NULL, 0);
	}
	return 0;
}

static int64_t deadline_after(int ms)
{
	if (ms < 0)
		return -1;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec + (int64_t)ms * 1000000;
}

static void job_put(struct rs_drain_job *j)
{
	rs_tsan_release(&j->refs);
	if (__atomic_sub_fetch(&j->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		rs_tsan_acquire(&j->refs);
		free(j->buf);
		free(j);
	}
}

/* ---- the drain thread ------------------------------------------------------ */

static void arm_wake(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&dr.ring);
	io_uring_prep_read(sqe, dr.evfd, &dr.evbuf, sizeof(dr.evbuf), 0);
	io_uring_sqe_set_data64(sqe, UD_WAKE);
}

static struct io_uring_sqe *get_sqe(void)
{
	struct io_uring_sqe *sqe;
	while (!(sqe = io_uring_get_sqe(&dr.ring)))
		io_uring_submit(&dr.ring);
	return sqe;
}

static void submit_send(struct rs_drain_job *j)
{
	struct io_uring_sqe *sqe = get_sqe();
	io_uring_prep_send(sqe, j->slot, j->buf + j->off, j->len - j->off, MSG_NOSIGNAL | MSG_WAITALL);
	sqe->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)j);
}

/* The job is over: free its slot, tell whoever waits. */
static void job_finish(struct rs_drain_job *j)
{
	int none = -1;
	io_uring_register_files_update(&dr.ring, (unsigned)j->slot, &none, 1);
	rs_mutex_lock(&dr.lock);
	dr.slots[j->slot / 64] &= ~(1ull << (j->slot % 64));
	if (j->all_prev)
		j->all_prev->all_next = j->all_next;
	else
		dr.all = j->all_next;
	if (j->all_next)
		j->all_next->all_prev = j->all_prev;
	rs_tsan_release(&j->done);
	__atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
	futex_wake(&j->done);
	if (j->notify) {
		/* A completion in the owner's ring wakes it in any engine wait.
		 * Submitted under the lock: the owner clears notify (under the
		 * lock) before its ring goes away. */
		struct io_uring_sqe *sqe = get_sqe();
		io_uring_prep_msg_ring(sqe, j->notify->ring.ring_fd, 0, RS_UD(NULL, RS_UD_DRAIN), 0);
		io_uring_sqe_set_data64(sqe, UD_MSG);
		io_uring_submit(&dr.ring);
	}
	__atomic_sub_fetch(&dr.running, 1, __ATOMIC_ACQ_REL);
	futex_wake(&dr.running);
	rs_mutex_unlock(&dr.lock);
	job_put(j);
}

static void job_sent(struct rs_drain_job *j, int res)
{
	if (j->stage == 1) { /* the shutdown after the data */
		job_finish(j);
		return;
	}
	if (res > 0) {
		j->off += (size_t)res;
		if (j->off < j->len) {
			submit_send(j); /* a kernel that does not retry partial sends */
			return;
		}
	} else if (res == -EINTR || res == -EAGAIN) {
		submit_send(j);
		return;
	} else if (res < 0) {
		j->err = -res;
	}
	rs_mutex_lock(&dr.lock);
	int shut = j->shut && !j->err;
	if (shut)
		j->stage = 1;
	rs_mutex_unlock(&dr.lock);
	if (!shut) {
		job_finish(j);
		return;
	}
	struct io_uring_sqe *sqe = get_sqe();
	io_uring_prep_shutdown(sqe, j->slot, j->shut - 1);
	sqe->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)j);
}

static void *drain_main(void *arg)
{
	(void)arg;
	/* Enter through a registered index (this thread's own), so the
	 * number of the ring's fd may change (fdguard) under it. */
	io_uring_register_ring_fd(&dr.ring);
	arm_wake();
	for (;;) {
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = { 0, RS_WATCH_MS * 1000000LL };
		int e = io_uring_submit_and_wait_timeout(&dr.ring, &cqe, 1, &ts, NULL);
		if (e == -ETIME) {
			void (*w)(void) = __atomic_load_n(&dr.watchdog, __ATOMIC_ACQUIRE);
			if (w)
				w();
			continue;
		}
		if (e < 0 && e != -EINTR && e != -EAGAIN && e != -EBUSY) {
			static int said;
			if (!said++)
				rs_warn("drain thread: io_uring_enter failed: %s", strerror(-e));
			rs_sys_nap(10 * 1000 * 1000);
		}
		while (io_uring_peek_cqe(&dr.ring, &cqe) == 0) {
			uint64_t ud = cqe->user_data;
			int res = cqe->res;
			io_uring_cqe_seen(&dr.ring, cqe);
			if (ud == UD_MSG)
				continue;
			if (ud == UD_WAKE) {
				rs_mutex_lock(&dr.lock);
				struct rs_drain_job *in = dr.incoming;
				dr.incoming = NULL;
				rs_mutex_unlock(&dr.lock);
				/* oldest first: sends on one socket never overlap, but
				 * keep the order anyway */
				struct rs_drain_job *rev = NULL;
				while (in) {
					struct rs_drain_job *n = in->next;
					in->next = rev;
					rev = in;
					in = n;
				}
				for (; rev; rev = rev->next)
					submit_send(rev);
				if (__atomic_load_n(&dr.stop, __ATOMIC_ACQUIRE)) {
					io_uring_unregister_ring_fd(&dr.ring);
					return NULL;
				}
				arm_wake();
				continue;
			}
			job_sent((struct rs_drain_job *)(uintptr_t)ud, res);
		}
	}
	return NULL;
}

/* The ring, made once by the first thread that needs the drain and kept
 * for the life of the process (a fork stops the thread, not the ring).
 * The kernel ties a ring to the task that made it: when the ring goes, it
 * tells that task with task work, which interrupts whatever blocking call
 * it is in (a recv with SO_RCVTIMEO then fails with EINTR for no signal
 * of the program's).  Lock held. */
static int ring_setup(void)
{
	if (dr.ring_ok)
		return 0;
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	rs_fdseen_making(1); /* (foreign.c: not the program's ring) */
	if (io_uring_queue_init_params(DRAIN_ENTRIES, &dr.ring, &p) < 0) {
		rs_fdseen_making(-1);
		return -1;
	}
	/* Like the owners' rings: a fork child must not keep this ring (and
	 * the sockets in its file table) alive. */
	madvise(dr.ring.sq.ring_ptr, dr.ring.sq.ring_sz, MADV_DONTFORK);
	if (dr.ring.cq.ring_ptr != dr.ring.sq.ring_ptr)
		madvise(dr.ring.cq.ring_ptr, dr.ring.cq.ring_sz, MADV_DONTFORK);
	madvise(dr.ring.sq.sqes, dr.ring.sq.ring_entries * sizeof(struct io_uring_sqe), MADV_DONTFORK);
	/* The kernel counts a file table against RLIMIT_NOFILE: take what the
	 * limit leaves room for (half of it, so the program keeps the rest),
	 * and less again if that is refused. */
	struct rlimit rl;
	unsigned long want = DRAIN_SLOTS;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur / 2 < want)
		want = rl.rlim_cur / 2;
	dr.nslots = 0;
	for (want &= ~63ul; want >= 64; want /= 2)
		if (io_uring_register_files_sparse(&dr.ring, (unsigned)want) == 0) {
			dr.nslots = (int)want;
			break;
		}
	/* With no slot (RLIMIT_NOFILE under 128) the thread still runs, for
	 * the watchdog: without it, sends queued by a thread that then blocks
	 * where the library cannot see (pthread_join, a futex) would wait for
	 * good.  Jobs then fail to start (rs_drain_start), and the rest of a
	 * send to a full socket waits for its thread's next call. */
	if (!dr.nslots)
		rs_info("the drain thread has no file slots (RLIMIT_NOFILE too low): sends to a full "
			"socket finish when their thread next waits for the engine");
	int adopted = rs_fdguard_adopt(dr.ring.ring_fd, &dr.ring.ring_fd);
	rs_fdseen_making(-1);
	if (adopted < 0)
		goto fail;
	dr.ring.enter_ring_fd = dr.ring.ring_fd; /* liburing enters through it */
	long efd = rs_syscall(SYS_eventfd2, 0, EFD_CLOEXEC);
	if (efd < 0)
		goto fail;
	dr.evfd = (int)efd;
	if (rs_fdguard_adopt(dr.evfd, &dr.evfd) < 0) {
		rs_sys_close(dr.evfd);
		dr.evfd = -1;
		goto fail;
	}
	dr.ring_ok = 1;
	return 0;
fail:
	rs_fdguard_release(dr.ring.ring_fd); /* (closes it, adopted or not) */
	dr.ring.ring_fd = -1;
	io_uring_queue_exit(&dr.ring);
	return -1;
}

/* Lock held. */
static int start(void)
{
	if (rs_drain_state)
		return rs_drain_state;
	__atomic_store_n(&rs_drain_state, -1, __ATOMIC_RELAXED);
	if (ring_setup() < 0) {
		rs_info("the drain thread could not start (no io_uring, or no descriptor for its ring); "
			"sends are not queued, and the rest of a send to a full socket finishes when its "
			"thread next waits for the engine");
		return -1;
	}
	sigset_t all, old;
	sigfillset(&all);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	dr.stop = 0;
	int e = rs_fault(RS_FAULT_NO_DRAIN) ? EAGAIN : pthread_create(&dr.th, &attr, drain_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (e != 0) {
		rs_info("the drain thread could not start (no thread); sends are not queued, and the rest "
			"of a send to a full socket finishes when its thread next waits for the engine");
		return -1;
	}
	__atomic_store_n(&rs_drain_state, 1, __ATOMIC_RELAXED);
	return 1;
}

/* ---- the engine's side ------------------------------------------------------ */

void rs_drain_set_watchdog(void (*watchdog)(void))
{
	__atomic_store_n(&dr.watchdog, watchdog, __ATOMIC_RELEASE);
}

/* The thread starts when the engine first holds a send past the call that
 * made it (or first drains one): until then nothing needs its watchdog,
 * and a process without it stays single-threaded (the kernel's file
 * lookups without references, the C library's single-thread paths).  Not
 * from a signal handler (pthread_create is not async-signal-safe: the
 * callers send straight from there). */
int rs_drain_want(void)
{
	int st = __atomic_load_n(&rs_drain_state, __ATOMIC_RELAXED);
	if (rs_likely(st != 0))
		return st > 0;
	rs_mutex_lock(&dr.lock);
	st = start();
	rs_mutex_unlock(&dr.lock);
	return st > 0;
}

struct rs_drain_job *rs_drain_start(int fd, char *buf, size_t len, struct rs_ring *notify)
{
	struct rs_drain_job *j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	rs_mutex_lock(&dr.lock);
	if (start() < 0)
		goto fail;
	int slot = -1;
	for (int i = 0; i < dr.nslots / 64 && slot < 0; i++)
		if (~dr.slots[i])
			slot = i * 64 + __builtin_ctzll(~dr.slots[i]);
	if (slot < 0)
		goto fail;
	if (io_uring_register_files_update(&dr.ring, (unsigned)slot, &fd, 1) != 1)
		goto fail;
	dr.slots[slot / 64] |= 1ull << (slot % 64);
	j->buf = buf;
	j->len = len;
	j->slot = slot;
	j->refs = 2;
	j->notify = notify;
	j->next = dr.incoming;
	dr.incoming = j;
	j->all_next = dr.all;
	if (dr.all)
		dr.all->all_prev = j;
	dr.all = j;
	__atomic_add_fetch(&dr.running, 1, __ATOMIC_ACQ_REL);
	uint64_t one = 1;
	rs_sys_write(dr.evfd, &one, sizeof(one));
	rs_mutex_unlock(&dr.lock);
	rs_stat_add(RS_C_DRAINED, 1);
	return j;
fail:
	rs_mutex_unlock(&dr.lock);
	free(j);
	return NULL;
}

int rs_drain_done(struct rs_drain_job *j)
{
	if (!__atomic_load_n(&j->done, __ATOMIC_ACQUIRE))
		return 0;
	rs_tsan_acquire(&j->done);
	return 1;
}

int rs_drain_error(struct rs_drain_job *j)
{
	return rs_drain_done(j) ? j->err : 0;
}

int rs_drain_shut_after(struct rs_drain_job *j, int how)
{
	rs_mutex_lock(&dr.lock);
	int ok = !j->done && j->stage == 0;
	if (ok)
		j->shut = how + 1;
	rs_mutex_unlock(&dr.lock);
	return ok;
}

int rs_drain_wait(struct rs_drain_job *j, int timeout_ms)
{
	return futex_wait_change(&j->done, 0, deadline_after(timeout_ms));
}

void rs_drain_unnotify(struct rs_drain_job *j)
{
	rs_mutex_lock(&dr.lock);
	j->notify = NULL;
	rs_mutex_unlock(&dr.lock);
}

void rs_drain_release(struct rs_drain_job *j)
{
	rs_drain_unnotify(j);
	job_put(j);
}

int rs_drain_wait_all(int timeout_ms)
{
	int64_t deadline = deadline_after(timeout_ms);
	for (;;) {
		uint32_t n = __atomic_load_n(&dr.running, __ATOMIC_ACQUIRE);
		if (!n)
			return 0;
		if (futex_wait_change(&dr.running, n, deadline) < 0)
			return -ETIME;
	}
}

/* Stop the idle thread; its ring stays (lock not held). */
static void stop(void)
{
	rs_mutex_lock(&dr.lock);
	int running = rs_drain_state == 1 && !dr.running && !dr.incoming;
	if (running)
		__atomic_store_n(&dr.stop, 1, __ATOMIC_RELEASE);
	rs_mutex_unlock(&dr.lock);
	if (!running)
		return;
	uint64_t one = 1;
	rs_sys_write(dr.evfd, &one, sizeof(one));
	pthread_join(dr.th, NULL);
	/* (under the lock: another thread's rs_drain_want reads the state) */
	rs_mutex_lock(&dr.lock);
	__atomic_store_n(&rs_drain_state, 0, __ATOMIC_RELAXED);
	dr.restart = 1;
	rs_mutex_unlock(&dr.lock);
}

void rs_drain_stop(void)
{
	stop();
	dr.restart = 0;
}

/* Before fork: jobs finish first (up to 10 s).  An idle thread is stopped,
 * so a single-threaded program forks as a single-threaded process (the
 * parent starts it again after). */
void rs_drain_before_fork(void)
{
	if (rs_drain_wait_all(10000) < 0)
		rs_warn("fork: sends to a peer that is not reading were still draining after 10 s");
	stop();
	rs_mutex_lock(&dr.lock);
}

void rs_drain_after_fork(int child)
{
	if (!child) {
		if (dr.restart) {
			dr.restart = 0;
			start();
		}
		rs_mutex_unlock(&dr.lock);
		return;
	}
	dr.restart = 0;
	/* The thread is the parent's, and so are the jobs (their memory is
	 * left to the child; the sockets' records forget them). */
	if (dr.ring_ok) { /* the child's copies of the parent's */
		rs_fdguard_release(dr.evfd);
		rs_fdguard_release(dr.ring.ring_fd);
	}
	dr.ring_ok = 0;
	__atomic_store_n(&rs_drain_state, 0, __ATOMIC_RELAXED);
	dr.evfd = -1;
	dr.incoming = dr.all = NULL;
	dr.running = 0;
	memset(dr.slots, 0, sizeof(dr.slots));
	memset(&dr.ring, 0, sizeof(dr.ring));
	rs_lock_init(&dr.lock);
}
