/* engine.h - the io_uring engine's private types and interface: the
 * ring, buffers, frags, the drain thread, signals, the socket core, the
 * epoll layer and the lifecycle.  (internal.h below it is what the whole
 * library shares, the command's code included: counters, fd records,
 * logging, process state; tcp_int.h and ep_int.h are private to their
 * files.)
 *
 * Where things live: src/README.md (one line per file).
 *
 * Lock order (take them only in this order; debug builds assert that a
 * ring's lock is held where it must be):
 *   the rings' list lock (ring.c, rs_rings_lock)
 *     -> a ring's lock (rs_ring_lock; fork takes every ring's, in list order)
 *       -> socks_lock (sock.c: every engine socket, for fork)
 *         -> a detached socket's own mutex (rs_esock.mu)
 *       -> rs_ep_ctl_lock (epreg.c: registrations)
 *         -> an epoll set's lock (rs_ep.lock: its ready list; fork takes
 *            every set's, after the drain lock: the drain thread is
 *            stopped then)
 *       -> the drain lock (drain.c)
 *       -> zc_orphans_lock (frag.c: zero-copy holds of exited threads)
 *   Fork's nesting: every ring's lock, then socks_lock, then the drain
 *   lock, then rs_ep_ctl_lock and every set's lock (engine.c's handlers).
 *   Leaf locks, taken with any of the above held and holding nothing
 *   themselves: route.c's cache_lock (the route per destination),
 *   stats.c's reg_lock (the threads' counters), foreign.c's scan_lock
 *   (the io_uring scan; remade in a fork child).
 *   A detached socket's mutex stands where a ring's lock does for the
 *   calls on it (then rs_ep_ctl_lock, an ep lock); it is released before
 *   socks_lock is taken to free the socket.  Which lock guards each field:
 *   struct rs_ring and struct rs_esock below, struct rs_tcp in tcp_int.h,
 *   the epoll records in ep_int.h.
 *
 * Ownership (see ringsock(7), IMPLEMENTATION):
 *   - A socket is armed on the ring of the thread that first needs it
 *     (epoll_ctl, a receive, a send); that thread owns it.
 *   - All of an owned socket's engine state is guarded by its owner ring's
 *     lock.  The owner holds the lock only while running engine code and
 *     never while blocked for the application, so another thread always
 *     gets it in bounded time.
 *   - The ring uses DEFER_TASKRUN: nothing completes while its owner is
 *     outside io_uring_enter.  So a thread holding the lock sees a frozen
 *     ring: every completion is already in the CQ or not yet started.
 *   - A socket used by a thread other than its owner is detached: the
 *     other thread (holding the owner's lock) reaps the owner's CQ, writes
 *     out unsubmitted sends itself, and from then on the socket is served
 *     from its leftover receive queue and then the kernel.  The owner
 *     cancels the multishot receive the next time it runs engine code.
 */
#ifndef RS_ENGINE_H
#define RS_ENGINE_H

#include <liburing.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/uio.h>

#include "internal.h"

/* Newer than Debian 12's headers. */
#ifndef IORING_SETUP_DEFER_TASKRUN
#define IORING_SETUP_DEFER_TASKRUN (1U << 13)
#endif
#ifndef IORING_SETUP_SINGLE_ISSUER
#define IORING_SETUP_SINGLE_ISSUER (1U << 12)
#endif

/* Fields another thread may read without the socket's lock, as a hint it
 * re-checks (mode, rx_bytes, leftover): written and read with these. */
#define RS_LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define RS_STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

/* Engine mutexes.  Each thread counts the engine locks it holds: a fatal
 * signal that arrives while it holds one is acted on when the last one is
 * released (sig.c), so the flush of queued sends it triggers never meets
 * a lock of its own thread.  Under ThreadSanitizer the library runs inside
 * TSan's own interceptors (read, poll, send...), where TSan does not
 * record the mutex operations it intercepts; they are annotated so it
 * sees the ordering.  The same for atomics that publish data across
 * threads (drain.c). */
#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define rs_tsan_acquire(p) __tsan_acquire((void *)(p))
#define rs_tsan_release(p) __tsan_release((void *)(p))
#else
#define rs_tsan_acquire(p) ((void)0)
#define rs_tsan_release(p) ((void)0)
#endif
extern RS_TLS int rs_fatal_pending;  /* a fatal signal waits for them */
void rs_sig_fatal_deferred(void);
/* rs_lock_depth counts from before the lock is taken to after it is
 * released: a signal handler that runs meanwhile (even while the lock is
 * being acquired) sees it and leaves the engine alone (rs_ready). */
static inline void rs_mutex_lock(pthread_mutex_t *m)
{
	rs_lock_depth++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	pthread_mutex_lock(m);
	rs_tsan_acquire(m);
}
static inline int rs_mutex_trylock(pthread_mutex_t *m)
{
	rs_lock_depth++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (pthread_mutex_trylock(m) != 0) {
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (--rs_lock_depth == 0 && rs_unlikely(rs_fatal_pending))
			rs_sig_fatal_deferred();
		return -1;
	}
	rs_tsan_acquire(m);
	return 0;
}
static inline void rs_mutex_unlock(pthread_mutex_t *m)
{
	rs_tsan_release(m);
	pthread_mutex_unlock(m);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (--rs_lock_depth == 0 && rs_unlikely(rs_fatal_pending))
		rs_sig_fatal_deferred();
}

struct rs_ring;
struct rs_esock;
struct rs_ep;

/* Fault injection for the tests: a test library preloaded in front of
 * this one may define ringsock_test_fault(); at each site below the engine
 * asks it whether to fail the way the kernel can (tests/integration/
 * faults.c).  Without it the cost is one load and a branch not taken. */
enum {
	RS_FAULT_SETUP = 1,   /* a thread's ring: io_uring setup refused (ENOMEM) */
	RS_FAULT_ENTER,       /* io_uring_enter refused (EEXIST, as for a submitter
			       * that is not the ring's owner): nothing submitted */
	RS_FAULT_SHORT_SEND,  /* a send submitted with only its first few bytes */
	RS_FAULT_CANCEL,      /* a multishot receive cancelled as soon as armed */
	RS_FAULT_BUF_HOLD,    /* consumed buffers not given back yet (ENOBUFS) */
	RS_FAULT_NO_SQE,      /* the submission queue has no room */
	RS_FAULT_RX_NOMEM,    /* a socket's receive queue cannot grow (malloc) */
	RS_FAULT_STALE,       /* IORING_SQ_TASKRUN taken for stuck (ring.c
			       * ring_flags) whenever it is set */
};
__attribute__((weak, visibility("default"))) int ringsock_test_fault(int site);
static inline int rs_fault(int site)
{
	return rs_unlikely(ringsock_test_fault != NULL) && ringsock_test_fault(site);
}

/* ---- frag.c: send memory ------------------------------------------------ */
struct rs_chunk {
	struct rs_chunk *next;  /* free list */
	uint32_t size, used;
	uint32_t refs;          /* slices alive + 1 while it is the current chunk
				 * or a socket's cached chunk */
	uint32_t cached;        /* a socket's RINGSOCK_TX_CACHE chunk */
	char data[];
};
struct rs_frag_pool {
	struct rs_chunk *cur;
	struct rs_chunk *free;
	size_t free_bytes;
	size_t live_chunks;
	uint32_t chunk_size;
};
/* Carve len bytes (len <= chunk size) from the pool; *chunk gets the
 * chunk to release.  NULL when out of memory. */
char *rs_frag_alloc(struct rs_frag_pool *p, uint32_t len, struct rs_chunk **chunk);
/* The same from a socket's own cached chunk (*cache, created on first use);
 * NULL when it has no room left. */
char *rs_frag_alloc_cached(struct rs_frag_pool *p, struct rs_chunk **cache, uint32_t len,
			   struct rs_chunk **chunk);
void rs_frag_cache_drop(struct rs_frag_pool *p, struct rs_chunk *cache);
void rs_frag_release(struct rs_frag_pool *p, struct rs_chunk *c);
void rs_frag_pool_destroy(struct rs_frag_pool *p);
/* The chunks a zero-copy send reads, held (one reference each) until the
 * kernel's notification that it no longer reads them: until then no slice
 * of them is carved again.  user_data RS_UD(hold, RS_UD_ZC); ring.c reaps
 * both completions (the send's own goes to e's kind as RS_UD_SEND). */
struct rs_frag_hold {
	struct rs_frag_hold *next, *prev; /* the ring's holds [lock] */
	struct rs_esock *e;    /* the sender, until the send's own completion */
	struct rs_chunk *own;  /* the chunk the hold itself is carved from */
	uint8_t notif;         /* the kernel's notification is still to come */
	uint32_t n;
	struct rs_chunk *chunk[];
};
/* A hold carved from the pool itself (no malloc: the send path may run in
 * a signal handler); NULL when out of memory. */
struct rs_frag_hold *rs_frag_hold_new(struct rs_frag_pool *p, struct rs_chunk *const *chunks, uint32_t n);
void rs_frag_hold_release(struct rs_frag_pool *p, struct rs_frag_hold *h);
/* A zero-copy send's hold, submitted on r; each of its two completions
 * (the send's result, the kernel's notification) as the reap finds it
 * (ring.c); a ring that goes keeps its holds not yet notified for the
 * life of the process (the kernel may still read their chunks). */
void rs_frag_zc_add(struct rs_ring *r, struct rs_frag_hold *h);
void rs_frag_zc_complete(struct rs_ring *r, struct rs_frag_hold *h, struct io_uring_cqe *c);
void rs_frag_zc_orphan_all(struct rs_ring *r);

/* ---- bufring.c: receive buffers ---------------------------------------- */
struct rs_bufring {
	struct io_uring_buf_ring *br;
	char *mem;
	unsigned count;         /* buffers in circulation (grows to max) */
	unsigned max, mask;     /* the ring's entries (mask = max - 1) */
	uint32_t size;
	unsigned short bgid;
	unsigned pending;       /* added to the ring, tail not advanced yet */
	unsigned held;          /* buffers handed out and not returned */
	struct rs_bufovf *ovf;  /* one overflow slot per buffer (tcpq.c rs_rxq_push) */
	size_t map_len;
};
/* A received buffer queued through the overflow chain instead of the
 * socket's queue array (which could not grow): a buffer is in at most one
 * place, so a slot per buffer always suffices and queuing never fails. */
struct rs_bufovf {
	uint32_t len, off;
	uint32_t next;          /* next buffer id + 1; 0: the end */
};
enum { RS_BGID_TCP, RS_BGID_UDP }; /* buffer group ids */
int rs_bufring_setup(struct rs_ring *r);   /* the stream group */
void rs_bufring_destroy(struct rs_ring *r); /* every group */
/* The datagram group, made on first use (lock held): 0 or -errno. */
int rs_ubuf_get(struct rs_ring *r);
/* Per group: buffer bid back (with the next flush), the tail advanced
 * for what is pending, the group doubled (1 if it grew). */
void rs_bufring_put(struct rs_ring *r, struct rs_bufring *b, unsigned bid);
void rs_bufring_flush(struct rs_bufring *b);
int rs_bufring_grow(struct rs_ring *r, struct rs_bufring *b);
static inline char *rs_buf_addr(struct rs_bufring *b, unsigned bid)
{
	return b->mem + (size_t)bid * b->size;
}
/* A consumed buffer goes back; it reaches the kernel with the batch. */
void rs_buf_release(struct rs_ring *r, unsigned bid);
/* A receive found no buffer free: double the buffers in circulation, up
 * to RINGSOCK_BUF_COUNT_MAX (lock held).  1 if it grew. */
int rs_buf_grow(struct rs_ring *r);
void rs_buf_flush(struct rs_ring *r); /* advance the tail for the batch */

/* ---- ring.c ------------------------------------------------------------- */
enum { RS_POLL_EP, RS_POLL_KW, RS_POLL_SLOTS };
/* Bumped by every push on an epoll set's ready list (epreg.c): what a
 * ready socket was before or after, such as an epoll set's poll firing
 * (rs_ring_poll.fired_clock).  [atomic; proc.c] */
extern uint64_t rs_ready_clock;
struct rs_ring_poll {
	const void *key;        /* what is polled */
	uint64_t ud;            /* its user_data while armed */
	unsigned tail;          /* the SQ tail after its SQE: submitted once
				 * the kernel's head has passed it */
	uint8_t armed;
	uint64_t fired_clock;   /* rs_ready_clock when it fired; 0: armed, or
				 * not known */
	/* rs_ring_poll_arm_lazy's bookkeeping: */
	uint8_t used;           /* the poll armed last has answered a call */
	uint8_t verdict_due;    /* armed since wasted was updated */
	uint8_t wasted;         /* polls in a row that fired before answering */
	unsigned backoff;       /* lazy arms to skip before arming again */
};

/* The kernel fds of this thread's poll/select sets, registered in a
 * private epoll set that the ring polls (kwatch.c) [lock]. */
#define RS_KW_MAX 32
struct rs_kwatch {
	int epfd;               /* the private set, when have */
	uint8_t have;
	uint8_t no_set;         /* the set could not be made (or protected): never again */
	unsigned gen;           /* rs_kw_gen when the registrations were made */
	unsigned skips;         /* calls answered without the kernel since its
				 * last look */
	unsigned n;
	struct {
		int fd;
		uint32_t events; /* RS_KW_NEVER: epoll refuses the fd */
	} reg[RS_KW_MAX];
};

/* A thread's engine.  Guards: [lock] the ring's lock (rs_ring_lock);
 * [list] the rings' list lock; [set] set when the owner thread takes the
 * record and read-only after; [owner] only the owner thread, which holds
 * the lock while it touches them. */
struct rs_ring {
	/* kept when a dead thread's ring record is reused: */
	pthread_mutex_t lock;
#ifdef RS_DEBUG
	uintptr_t lock_owner;   /* pthread_self() of the holder, 0: none */
#endif
	struct rs_ring *all_next; /* process-wide list (fork, exit) [list] */
	/* reset for each new owner thread: */
	struct io_uring ring;   /* [lock]; submissions [owner] (SINGLE_ISSUER),
				 * reaping by any thread holding the lock */
	int tid;                /* the owner's [set] */
	int evfd;               /* eventfd signalled by the ring, for waiters [set] */
	int dead;               /* owner thread exited [lock to set; atomic reads] */
	struct rs_bufring buf;  /* receive buffers [lock] */
	struct rs_bufring ubuf; /* datagram receive buffers, once a UDP socket
				 * is armed here [lock] */
	int ubuf_failed;        /* their setup failed: -errno [lock] */
	struct rs_frag_pool frag; /* send memory [lock] */
	struct rs_frag_hold *zc_holds; /* zero-copy sends not yet notified [lock] */
	/* Lists of struct rs_esock, through the rs_ring_* functions below
	 * [lock]: */
	struct rs_esock *owned;  /* sockets armed here (doubly linked) */
	struct rs_esock *txq;    /* sockets with sends to submit [lock; the owner
				  * looks without it (RS_LOAD)] */
	struct rs_esock *rearm;  /* sockets whose multishot receive must restart */
	struct rs_esock *detach; /* sockets other threads detached [as txq] */
	struct rs_esock *draining; /* sockets with a drain job (drain_next) */
	struct rs_esock *udp_tx; /* the one datagram socket with datagrams
				  * queued (udp_send.c: one at a time, so they
				  * reach the kernel in the program's order) */
	/* one-shot polls through the ring [lock]: RS_POLL_EP, an epoll set
	 * (ep.c); RS_POLL_KW, the kernel fds of poll/select sets (kwatch.c) */
	struct rs_ring_poll poll[RS_POLL_SLOTS];
	uint64_t poll_seq;
	uint8_t wake_armed;     /* a poll of evfd is in the ring (blocking calls) [lock] */
	uint8_t sleeping;       /* the owner waits in io_uring_enter without the
				 * lock (rs_ring_sleep), where its receives'
				 * task work runs [set under the lock, cleared
				 * without it; a hint for other threads] */
	uint8_t reg_ring;       /* ring fd registered (enter_ring_fd is an index) [set] */
	uint8_t tr_stale;       /* IORING_SQ_TASKRUN stayed set through three
				 * enters that found no work (seen on 6.18):
				 * ignored until it clears; waits outside the
				 * ring are then sliced to 10 ms [lock; hint] */
	uint8_t tr_empty;       /* enters in a row that found nothing so [lock] */
	unsigned sq_sends;      /* send SQEs not yet submitted (one CQE each) [lock] */
	unsigned sq_recvs;      /* receive SQEs not yet submitted: a wait
				 * submits them before it looks at readiness
				 * (ep.c engine_round) [lock] */
	unsigned nrecv;         /* owned sockets with a multishot receive [lock] */
	int drain_ended;        /* a drain job ended: look at the list [lock] */
	unsigned nr_tx_sqes;    /* sends prepared since the last submit [lock] */
	uint64_t prepare_seq;   /* rounds of engine work (watchdog) [lock] */
	uint64_t watch_seq;     /* prepare_seq at the watchdog's last look [lock] */
	unsigned send_batch;    /* RINGSOCK_SEND_BATCH [set] */
	/* Nothing to batch (ep.c rs_ep_wait): blocking epoll waits in a row
	 * that each returned one event (of more asked for), up to
	 * RS_ALONE_WAKES; alone once it got there, until a blocking wait
	 * returns more than one.  Its TCP sockets then read and send through
	 * the kernel (tcp_recv.c, RS_DIRECT_ALONE) [owner; alone a hint for
	 * other threads] */
	unsigned lone_wakes;
	uint8_t alone;
	struct rs_kwatch kw;    /* kwatch.c's record (last: cold) [lock] */
};

/* This thread's ring, created on first use; NULL if the engine is off or
 * the ring cannot be created (the reason is recorded once). */
struct rs_ring *rs_ring_get(void);
extern RS_TLS struct rs_ring *rs_ring_tls;
/* Start (engine.c): thread_exit runs when a thread with a ring exits,
 * watchdog on the drain thread once a ring exists. */
int rs_ring_init(void (*thread_exit)(void *), void (*watchdog)(void));
void rs_ring_lock(struct rs_ring *r);
int rs_ring_trylock(struct rs_ring *r); /* 0: locked */
void rs_ring_unlock(struct rs_ring *r);
#ifdef RS_DEBUG
static inline int rs_ring_held(struct rs_ring *r) /* (debug builds) */
{
	return __atomic_load_n(&r->lock_owner, __ATOMIC_RELAXED) == (uintptr_t)pthread_self();
}
#endif
struct io_uring_sqe *rs_ring_sqe(struct rs_ring *r); /* submits when full */
/* Submit what is queued (sends, rearms, detaches) and run completions
 * without blocking; returns the number of completions handled. */
int rs_ring_progress(struct rs_ring *r);
/* This thread's queued sends go out now (before a call that may block). */
void rs_ring_flush_tx(void);
/* Has this thread queued sends its ring has not submitted? [hint] */
static inline int rs_ring_tx_queued(void)
{
	struct rs_ring *r = rs_ring_tls;
	return r && RS_LOAD(r->txq) != NULL;
}
/* The kernel answers next: what this thread queued goes first. */
static inline void rs_ring_flush_own_tx(void)
{
	if (rs_ring_tx_queued())
		rs_ring_flush_tx();
}
/* Like progress, then wait until cond(arg) or no more can happen soon
 * (timeout_ms < 0: no limit).  Returns 0, -ETIME or -EINTR. */
int rs_ring_wait(struct rs_ring *r, int (*cond)(void *), void *arg, int timeout_ms);
/* Dispatch what is already in the CQ (no syscall): any thread holding the
 * ring's lock may call it. */
int rs_ring_reap(struct rs_ring *r);
/* Does the owner need to enter the kernel to make progress? */
int rs_ring_has_work(struct rs_ring *r);
/* Could entering the ring bring input: completions, SQEs not submitted,
 * receives to restart, hand-overs (not queued sends alone)? */
int rs_ring_has_input_work(struct rs_ring *r);
/* A stuck-taken IORING_SQ_TASKRUN: enter once before sleeping outside the
 * ring or answering EAGAIN (r locked, its owner).  1: completions came. */
int rs_ring_stale_look(struct rs_ring *r);
/* Has the kernel finished something for this ring (no system call)? */
int rs_ring_has_completions(struct rs_ring *r);
/* Sleep in the ring until something completes beyond what this call
 * submits itself, the timeout or a signal: 0, -ETIME or -EINTR (owner
 * only; called locked, returns unlocked).  What is queued (sends, rearms,
 * detaches) is submitted by the same io_uring_enter that waits, and the
 * lock is not held while it waits.  A signal handler that runs in a call
 * that submitted something is not reported as EINTR by the kernel: the
 * caller asks sig.c (rs_sig_take). */
int rs_ring_sleep(struct rs_ring *r, int timeout_ms, const sigset_t *ss);
/* A system call that blocks for the application, made a cancellation
 * point as libc's own would be (async cancellation only while it waits;
 * no lock may be held). */
long rs_blocking_syscall(long nr, long a, long b, long c, long d, long e, long f);
/* Bring completions up to date without submitting when that needs no
 * system call (lock held); 1 if it entered the kernel (and so submitted
 * everything queued). */
int rs_ring_catch_up(struct rs_ring *r);
/* Submit what is queued, entering the kernel only if there is something
 * (not to run pending completions), then reap (lock held). */
void rs_ring_submit(struct rs_ring *r);
/* A blocking call is about to sleep in the ring: the ring's eventfd (which
 * other threads write when they need the owner) is polled by the ring, so
 * the sleep ends when they do (lock held). */
void rs_ring_wake_arm(struct rs_ring *r);
/* Mask or unmask the ring's eventfd around engine code. */
void rs_ring_evfd_quiet(struct rs_ring *r, int quiet);
/* The ring's work lists (lock held; each socket at most once on each). */
void rs_ring_own(struct rs_ring *r, struct rs_esock *e);    /* armed here */
void rs_ring_disown(struct rs_ring *r, struct rs_esock *e); /* off owned */
void rs_ring_txq_add(struct rs_ring *r, struct rs_esock *e);   /* sends to submit */
void rs_ring_rearm_add(struct rs_ring *r, struct rs_esock *e); /* receive to restart */
void rs_ring_detach_add(struct rs_ring *r, struct rs_esock *e); /* a detach to finish */
void rs_ring_draining_add(struct rs_ring *r, struct rs_esock *e); /* e->drain set */
void rs_ring_draining_del(struct rs_ring *r, struct rs_esock *e); /* the job goes on alone */
void rs_ring_forget(struct rs_ring *r, struct rs_esock *e); /* off every work list */
/* The send list, emptied: the watchdog writes it out for a blocked owner. */
struct rs_esock *rs_ring_txq_take(struct rs_ring *r);
/* Wake r's owner (it may sleep in a wait with the ring's eventfd). */
void rs_ring_kick(struct rs_ring *r);
/* The process-wide list of rings (all_next), for the lifecycle code:
 * rs_rings_lock() guards it and returns its head (rs_rings(): the head,
 * the lock held already); rs_ring_lock_live(r) locks r if its owner
 * thread is alive (1), else leaves it unlocked (0). */
struct rs_ring *rs_rings_lock(void);
struct rs_ring *rs_rings(void);
void rs_rings_unlock(void);
int rs_rings_trylock(void);
int rs_ring_lock_live(struct rs_ring *r);
void rs_ring_teardown(struct rs_ring *r);  /* thread exit: no socket left */
void rs_rings_after_fork_child(void);      /* every ring is the parent's */

/* user_data: pointer | op (low 3 bits). */
enum { RS_UD_RECV = 1, RS_UD_SEND = 2, RS_UD_CANCEL = 3, RS_UD_DRAIN = 4 /* a drain job ended */,
       RS_UD_POLL = 5 /* the wait's poll of an epoll set (sequence << 3) */,
       RS_UD_WAKE = 6 /* the poll of the ring's own eventfd (blocking calls) */,
       RS_UD_ZC = 7 /* a zero-copy send: pointer to its struct rs_frag_hold */ };
#define RS_UD(p, op) ((uint64_t)(uintptr_t)(p) | (op))
#define RS_UD_PTR(ud) ((void *)(uintptr_t)((ud) & ~7ull))
#define RS_UD_OP(ud) ((int)((ud) & 7))

/* ---- ringpoll.c: one-shot polls through the ring ---------------------------- */
/* A one-shot poll for input on fd (an epoll set, known by key) through
 * slot's poll of the ring, unless one is armed for key already; an armed
 * poll of another key is cancelled (lock held). */
void rs_ring_poll_arm(struct rs_ring *r, int slot, int fd, const void *key);
/* Cancel slot's poll, if armed (lock held). */
void rs_ring_poll_cancel(struct rs_ring *r, int slot);
/* Must the kernel be asked about key's fd?  Not while its poll is armed
 * and has not fired (lock held). */
int rs_ring_poll_needed(struct rs_ring *r, int slot, const void *key);
/* The poll of key fired (and is not armed again): rs_ready_clock then,
 * else 0; once: the caller fetches what made it fire. */
uint64_t rs_ring_poll_take_fired(struct rs_ring *r, int slot, const void *key);
/* Is slot's poll of key armed, in the kernel's hands (submitted) and not
 * fired, with no completion waiting to be reaped (lock held)?  A yes
 * counts as the poll having answered a call. */
int rs_ring_poll_quiet(struct rs_ring *r, int slot, const void *key);
/* rs_ring_poll_arm for callers that arm on every look: a poll that keeps
 * firing before it answers anything (something in the set stays ready)
 * is armed again only after 2, 4, ... up to 64 such calls. */
void rs_ring_poll_arm_lazy(struct rs_ring *r, int slot, int fd, const void *key);

/* ---- drain.c ------------------------------------------------------------ */
struct rs_drain_job;
/* Send len bytes of buf (taken over, malloc'ed) on fd's socket from the
 * drain thread; notify's ring gets an RS_UD_DRAIN completion when done.
 * NULL if the job cannot be started (the caller must send it itself). */
struct rs_drain_job *rs_drain_start(int fd, char *buf, size_t len, struct rs_ring *notify);
int rs_drain_done(struct rs_drain_job *j);
int rs_drain_error(struct rs_drain_job *j);      /* once done: errno or 0 */
/* shutdown(how) after the job's data; 0 if the job is already over (the
 * caller calls shutdown itself). */
int rs_drain_shut_after(struct rs_drain_job *j, int how);
int rs_drain_wait(struct rs_drain_job *j, int timeout_ms); /* 0 or -ETIME */
void rs_drain_release(struct rs_drain_job *j);   /* the socket lets go of it */
void rs_drain_unnotify(struct rs_drain_job *j);  /* its owner ring goes away */
int rs_drain_wait_all(int timeout_ms);           /* 0 or -ETIME */
void rs_drain_watch(void (*watchdog)(void)); /* start the thread; it runs watchdog
					       * every RS_WATCH_MS */
void rs_drain_stop(void);      /* exit, exec: end the thread once idle */
void rs_drain_before_fork(void);
void rs_drain_after_fork(int child);

/* ---- sig.c -------------------------------------------------------------- */
typedef int (*rs_sigaction_fn)(int, const struct sigaction *, struct sigaction *);
#define RS_SIG_RESTART 1u /* a handler installed with SA_RESTART ran */
#define RS_SIG_INTR 2u    /* a handler without SA_RESTART ran */
/* sigaction through real, the handler wrapped in the library's trampoline;
 * old reports the application's handler. */
int rs_sig_action(int sig, const struct sigaction *act, struct sigaction *old, rs_sigaction_fn real);
/* After signal(), sigset(), siginterrupt()...: wrap what is installed now. */
void rs_sig_adopt(int sig, rs_sigaction_fn real);
int rs_sig_is_tramp(const void *h); /* the trampoline or the fatal catcher */
/* The engine is on: a catcher stands in for every SIG_DFL whose default
 * ends the process, so queued sends go out first (see sig.c). */
void rs_sig_guard_all(rs_sigaction_fn real);
/* A default action is about to end the process: fn (engine.c) sends what
 * is queued first.  While it runs rs_dying is set: no memory is allocated
 * or freed (the signal may have come in the middle of malloc). */
void rs_sig_on_die(void (*fn)(void));
extern int rs_dying; /* (proc.c) */
void *rs_sig_user_handler(int sig);
void rs_sig_clear(void);     /* before a wait */
unsigned rs_sig_take(void);  /* after it: RS_SIG_* of handlers that ran */
int rs_sig_untracked_intr(void); /* a handler not wrapped lacks SA_RESTART */
int rs_sig_untracked_any(void);  /* a handler is installed not wrapped */
/* A blocking call's wait was interrupted (hits from rs_sig_take,
 * enter_eintr: io_uring_enter said EINTR, timed: the socket has a
 * timeout, or the call has moved bytes already, which it then returns):
 * must the call end (1) or go on waiting (0)? */
int rs_sig_interrupted(unsigned hits, int enter_eintr, int timed);

/* ---- sock.c: the socket core -------------------------------------------------
 *
 * The engine's part of a socket, whatever its kind, is a struct rs_esock at
 * the head of the kind's own struct (rs_tcp).  The ring, the epoll and poll
 * layers and the lifecycle code know sockets only through it and through
 * its kind's operations table; adding a kind adds files and a table.
 *
 * States (mode; one name each):
 *
 *   (none) --arm--> ARMED --another thread, dup, an option the engine
 *                     |       emulates, urgent data, the owner thread's
 *                     |       exit (rs_esock_ring_gone)...--> DETACHING
 *                     |                                            |
 *                     |     the owner cancels its receive, sends what
 *                     |     is queued; nothing left in flight (the
 *                     |     kind's detach_done: rs_esock_maybe_finish)
 *                     v                                            v
 *                  (close)                                     DETACHED
 *                                                                  |
 *                               what it held is read or reported   |
 *                                                                  v
 *                                                     passive (the kernel's)
 *
 *   In a fork child, ARMED and DETACHING become DETACHED at once
 *   (rs_esock_fork_child): the parent's ring is not the child's; what the
 *   socket held was moved to memory both share before the fork.  Every
 *   transition is made in sock.c; a kind's hooks say only what it alone
 *   knows.
 *
 *   Within ARMED, who reports the input is the kind's business (TCP: its
 *   multishot receive, or the kernel for a bulk reader, a socket on
 *   probation or one starved of buffers: kernel_input).  A socket never
 *   armed, or passive, is served by the kernel alone (pass-through, with
 *   the reason counted once).
 *
 * Locks ([x]: what guards a field): [ring] the owner ring's lock while
 * owner is set; [mu] the socket's own mutex once it is not; [socks] the
 * core's list lock; [set once] written before the socket is published.
 * Fields marked "hint" are also read without the lock (RS_LOAD), by
 * readiness code that checks again under it. */
enum rs_esock_mode {
	RS_ES_ARMED,     /* served by the owner's ring */
	RS_ES_DETACHING, /* leaving: the owner still has operations in flight */
	RS_ES_DETACHED,  /* what it held is served, then the kernel */
};

/* Where a receive puts the datagram's source address (name, *namelen: in
 * its room, out its length) and what it says of it (flags: MSG_TRUNC). */
struct rs_dgram_from {
	void *name;
	socklen_t *namelen;
	int flags;
};
/* A send as the program made it (send, sendto, sendmsg, sendmmsg, write,
 * writev), for the kind to serve or to leave to the kernel. */
struct rs_send {
	const struct iovec *iov;
	int n;               /* iov's count; -1: the kernel's call (more than
			      * IOV_MAX, or sendmmsg), after what is queued */
	int flags;           /* MSG_* */
	const void *name;    /* the destination given, or NULL */
	socklen_t namelen;
	int control;         /* the message carries ancillary data */
};
struct mmsghdr;
struct timespec;

struct rs_kind_ops;

struct rs_esock {
	const struct rs_kind_ops *ops; /* its kind [set once] */
	struct rs_sock *sock;    /* the record, one reference held [set once] */
	struct rs_ring *owner;   /* [ring/mu, hint] NULL once detached and the
				  * owner has nothing of it in flight */
	struct rs_esock *prev, *next; /* owner->owned [ring] */
	struct rs_esock *all_prev, *all_next; /* every engine socket [socks] */
	/* the owner ring's work lists (ring.c) [ring]: */
	struct rs_esock *txq_next;    /* sends to submit */
	struct rs_esock *rearm_next;  /* a receive to start again */
	struct rs_esock *detach_next; /* another thread detached it */
	struct rs_esock *drain_next;  /* a drain job will end */
	struct rs_drain_job *drain;   /* the rest of a send the kernel could not
				       * take: no new bytes until it is done */
	pthread_mutex_t mu;      /* guards the state once owner is NULL */
	int fd;                  /* the one descriptor (dups detach) [ring/mu] */
	int mode;                /* enum rs_esock_mode [ring/mu, hint] */
	uint8_t on_txq, on_rearm, on_detach, on_draining; /* list membership [ring] */
	uint8_t passive;         /* detached and drained: the kernel's alone
				  * [mu, hint; never cleared] */
	uint8_t closing;         /* fd closed; freed when nothing is in flight */
	uint8_t recv_armed;      /* a multishot receive is in flight [ring, hint] */
	uint8_t recv_cancel;     /* the receive's cancel is submitted [ring] */
	uint32_t ops_inflight;   /* completions the owner's ring still expects
				  * for it (receive, sends, cancels) [ring]:
				  * a closed socket is freed at 0 */
	uint8_t kfull;           /* the kernel's send buffer was full at the
				  * last direct send: writability is the
				  * kernel's [hint: readiness code clears it
				  * when the kernel reports room] */
	uint8_t k_hup;           /* the kernel reported ERR or HUP for it (a
				  * reset the engine's receive may not see):
				  * sends go to the kernel [hint, set only] */
};

/* A kind's operations.  The ring calls the first group with the owner's
 * lock held; the lifecycle code (engine.c) and the core the rest. */
struct rs_kind_ops {
	const char *name;
	int rx_group;            /* the buffer group its receives use (RS_BGID_*) */
	/* arm s (fd) on this thread's ring, locked; NULL: the kernel's */
	struct rs_esock *(*arm)(struct rs_sock *s, int fd);
	/* arm it when an epoll set registers it (not only at its first call)? */
	int (*arm_when_watched)(struct rs_sock *s);
	/* ring side */
	void (*complete)(struct rs_ring *r, struct rs_esock *e, int op, struct io_uring_cqe *c);
	void (*submit_recv)(struct rs_ring *r, struct rs_esock *e); /* off the rearm list */
	void (*submit_tx)(struct rs_ring *r, struct rs_esock *e);   /* off the send list */
	void (*process_detach)(struct rs_ring *r, struct rs_esock *e); /* off the detach list */
	void (*drain_ended)(struct rs_ring *r, struct rs_esock *e); /* its drain job is done */
	/* the watchdog (not the owner, r locked): queued sends out now */
	void (*flush_queued)(struct rs_ring *r, struct rs_esock *e);
	/* lifecycle: the core (sock.c) makes every state change and calls these
	 * for what only the kind knows */
	/* the owner's thread exits (r locked, the socket DETACHING unless
	 * closing): stop the receive, push out the sends, and wait (up to
	 * 10 s) until nothing of the socket is in flight */
	void (*ring_gone)(struct rs_ring *r, struct rs_esock *e);
	/* DETACHING: nothing in flight the detach must wait for */
	int (*detach_done)(struct rs_esock *e);
	/* the socket leaves r (r locked): what of it the ring's memory holds
	 * (received buffers, a cached frag chunk) becomes its own or goes */
	void (*leave_ring)(struct rs_ring *r, struct rs_esock *e); /* NULL: none */
	void (*spawn_prepare)(struct rs_esock *e); /* another process may read it */
	void (*fork_prepare)(struct rs_esock *e);  /* all ring locks held */
	/* in the fork child, after the core's reset: the kind's in-flight
	 * state and what belonged to the parent's ring */
	void (*fork_child)(struct rs_esock *e);
	int (*tx_pending)(struct rs_esock *e);     /* accepted sends not yet out */
	size_t (*flush_direct)(struct rs_esock *e); /* write them with system calls */
	void (*sync_tx)(struct rs_esock *e);       /* before a call the kernel makes */
	int (*close)(struct rs_sock *s, int fd);   /* before the real close */
	void (*destroy)(struct rs_esock *e);       /* free the kind's memory */
	/* readiness (ep.c, wait.c) */
	unsigned (*readiness)(struct rs_esock *e);  /* EPOLL* bits, locked */
	unsigned (*held_events)(struct rs_esock *e); /* hint: EPOLLIN for input,
						      * EPOLLERR for an error the
						      * engine holds (detached) */
	int (*kernel_input)(struct rs_esock *e);    /* hint: the kernel holds
						      * its input and reports it */
	/* on a socket that is not passive, locked (sock.c's rs_sock_* calls) */
	int (*fionread)(struct rs_esock *e, int *out); /* FIONREAD/SIOCINQ: 0 or -errno */
	int (*so_error)(struct rs_esock *e);        /* its pending error, taken (0: none) */
	size_t (*held)(struct rs_esock *e);         /* received bytes the engine holds */
	size_t (*tx_held)(struct rs_esock *e);      /* sent bytes not yet the kernel's */
	int (*shutdown)(struct rs_esock *e, int how); /* 0, -errno or RS_PASS */
	/* the SO_RCVLOWAT to give the kernel for the program's mark (the
	 * socket left the engine: what it holds counts); NULL: the mark */
	int (*kernel_lowat)(struct rs_esock *e, int lowat);
	/* The program's calls, on a record not yet entered (sock.c's
	 * rs_sock_recv and the like): -errno, bytes, or RS_PASS (the kernel's
	 * call).  A NULL recvmmsg_call leaves the socket to the kernel for
	 * it; a NULL after_send or before_connect has nothing to do. */
	ssize_t (*recv_call)(struct rs_sock *s, int fd, const struct iovec *iov, int n, int flags,
			     struct rs_dgram_from *f); /* f: NULL, or the source's room */
	ssize_t (*send_call)(struct rs_sock *s, int fd, const struct rs_send *m);
	int (*recvmmsg_call)(struct rs_sock *s, int fd, struct mmsghdr *vec, unsigned vlen, int flags,
			     struct timespec *tmo);
	/* after the kernel's send (r, and errno as err) */
	void (*after_send)(struct rs_sock *s, int fd, ssize_t r, int err, const void *name, socklen_t namelen);
	void (*before_connect)(struct rs_sock *s, int fd);
};

/* Kinds are registered at start (engine.c): one per socket type. */
void rs_esock_kind(int type, const struct rs_kind_ops *ops);
int rs_esock_kind_known(int type); /* a kind serves sockets of this type */

/* The socket's engine state with its lock held (release with
 * rs_esock_unlock), arming it on this thread's ring first if arm is set
 * and it can be; NULL: pass-through.  A socket owned by another thread is
 * detached on the way. */
struct rs_esock *rs_esock_enter(struct rs_sock *s, int fd, int arm);
/* The same for an epoll set that registers s: armed if its kind wants a
 * socket armed once a wait watches it (arm_when_watched). */
struct rs_esock *rs_esock_enter_watched(struct rs_sock *s, int fd);
/* The same, NULL too when the kernel serves it alone (passive). */
struct rs_esock *rs_esock_enter_served(struct rs_sock *s, int fd);
void rs_esock_unlock(struct rs_esock *e);
/* The ring whose lock the last enter took (NULL: e's own mutex). */
struct rs_ring *rs_esock_held_ring(void);
/* Hints for readiness code, read without the lock (what it acts on it
 * checks again under the lock): */
static inline int rs_esock_mode(struct rs_esock *e)
{
	return RS_LOAD(e->mode);
}
static inline struct rs_ring *rs_esock_owner(struct rs_esock *e)
{
	return RS_LOAD(e->owner);
}
/* Served by ring r (NULL: by any ring). */
static inline int rs_esock_armed_on(struct rs_esock *e, struct rs_ring *r)
{
	return RS_LOAD(e->mode) == RS_ES_ARMED && (!r || RS_LOAD(e->owner) == r);
}

/* Is s served by this thread's ring (armed here), rather than by the
 * kernel or another thread's ring? */
static inline int rs_sock_served_here(struct rs_sock *s)
{
	struct rs_esock *e = atomic_load_explicit(&s->eng, memory_order_acquire);
	return e && rs_ring_tls && rs_esock_armed_on(e, rs_ring_tls);
}

/* The kind's readiness, with ERR for an error kept for the next call. */
unsigned rs_esock_readiness(struct rs_esock *e);
unsigned rs_esock_held_events(struct rs_esock *e); /* hint, no lock */
static inline int rs_esock_passive(struct rs_esock *e)
{
	return __atomic_load_n(&e->passive, __ATOMIC_ACQUIRE);
}

/* Has s been armed (the engine may hold something of it)?  And is the
 * engine still part of its path (armed, not passive)?  [hints] */
static inline int rs_sock_armed(struct rs_sock *s)
{
	return atomic_load_explicit(&s->eng, memory_order_relaxed) != NULL;
}
static inline int rs_sock_on_engine(struct rs_sock *s)
{
	struct rs_esock *e = atomic_load_explicit(&s->eng, memory_order_acquire);
	return e && !rs_esock_passive(e);
}
/* The kernel reported revents for e: ERR or HUP is a reset or an end the
 * program has seen, so its next send must fail as the kernel's would. */
static inline void rs_esock_kernel_hup(struct rs_esock *e, unsigned revents)
{
	if ((revents & (EPOLLERR | EPOLLHUP)) && !RS_LOAD(e->k_hup))
		RS_STORE(e->k_hup, 1);
}
int rs_esock_writable(struct rs_esock *e); /* its EPOLLOUT, locks e */
/* Debug builds: e's lock is held by this thread (while it has an owner:
 * the owner ring's; a detached socket's mutex is not tracked). */
#define rs_assert_esock_locked(e) rs_assert(!RS_LOAD((e)->owner) || rs_ring_held(RS_LOAD((e)->owner)))
/* Field (0-based) of a /proc/sys file of numbers, or def if it cannot be
 * read or is below 4096. */
size_t rs_sysctl_field(const char *path, int field, size_t def);
/* What the kernel makes of SO_SNDBUF/SO_RCVBUF v: twice the value, and at
 * least its minimum (4608) when v is zero or negative. */
uint32_t rs_sockbuf_bytes(int v);
/* A kind's arm: e's core fields for socket s on fd (mode ARMED, a
 * reference to s taken); then, with r locked, rs_esock_install makes r
 * its owner and publishes it as s's engine state (0; e is on r's list,
 * counted, registered, r still locked) or gives up (-1: another thread
 * armed it first, or the engine refuses sockets now; r is unlocked, the
 * reference dropped, and the caller frees e). */
void rs_esock_init(struct rs_esock *e, const struct rs_kind_ops *ops, struct rs_sock *s, int fd);
/* calloc(size) (a kind's struct, the core's part first) initialised so,
 * for this thread's ring (*rp); NULL without a ring (passed through:
 * no_io_uring) or memory. */
void *rs_esock_new(struct rs_sock *s, int fd, const struct rs_kind_ops *ops, size_t size, struct rs_ring **rp);
int rs_esock_install(struct rs_ring *r, struct rs_esock *e);
void rs_esock_uninit(struct rs_esock *e); /* undo rs_esock_init (not installed) */
/* A blocking socket under RINGSOCK_BLOCKING=kernel: left to the kernel
 * for now (counted once; it may become nonblocking), 1. */
int rs_sock_blocking_kernel(struct rs_sock *s);
/* A new engine socket (arm, e locked): on the list fork walks. */
void rs_esock_register(struct rs_esock *e);
/* Off that list, the kind's memory (destroy) and the record's reference
 * released, e freed.  Not while the process is dying (no free()). */
void rs_esock_free(struct rs_esock *e);
/* The receive's bookkeeping, every kind's (r locked): sqe, prepared, is
 * the socket's multishot receive; the receive's cancel (once; with no
 * room in the SQ, the next round tries again). */
void rs_esock_recv_started(struct rs_ring *r, struct rs_esock *e, struct io_uring_sqe *sqe);
void rs_esock_cancel_recv(struct rs_ring *r, struct rs_esock *e);
/* The lifecycle's transitions (r: the owner's ring, locked): */
/* DETACHING -> DETACHED once the kind says nothing is in flight, and a
 * closed socket with nothing in flight freed: after every completion, a
 * detach request, a drain's end, a close. */
void rs_esock_maybe_finish(struct rs_ring *r, struct rs_esock *e);
/* DETACHING -> DETACHED now (the ring lets it go). */
void rs_esock_finalize_detach(struct rs_ring *r, struct rs_esock *e);
/* The owner thread exits (thread exit, engine.c). */
void rs_esock_ring_gone(struct rs_ring *r, struct rs_esock *e);
/* In a fork child: ARMED/DETACHING -> DETACHED, the parent's ring gone. */
void rs_esock_fork_child(struct rs_esock *e);
/* Owner side: the socket leaves the engine for reason (counted), waits
 * until nothing of it is in flight (this thread's ring) or hands it to its
 * owner's (another thread's). */
void rs_esock_detach_self(struct rs_esock *e, int reason);
/* Another thread's ring (its lock held): its owner finishes the detach
 * next time it runs (woken through its eventfd). */
void rs_esock_detach_on(struct rs_ring *r, struct rs_esock *e);
/* Every socket armed on r leaves the engine (r's lock held). */
void rs_esock_leave_all(struct rs_ring *r, int reason);
/* The program can reach its sockets in a way the engine cannot see (it set
 * up an io_uring of its own): every armed socket leaves the engine, and
 * none is armed from now on; reason is a RINGSOCK_PT_* value.  No ring
 * lock held. */
void rs_esock_refuse_all(int reason);
void rs_esock_fork_prepare_detached(void); /* socks lock held across fork */
void rs_esock_fork_release_detached(int child);

/* The calls of the preload layer on a record: */
/* Before a call that goes to the kernel on an engine socket (setsockopt,
 * ioctl, getsockopt, fcntl, shutdown, sendmsg with ancillary data...):
 * accepted bytes reach the kernel first; detach when the call changes
 * something the engine emulates (reason >= 0). */
void rs_sock_before_kernel(struct rs_sock *s, int fd, int detach_reason);
/* The program asks about urgent data (MSG_OOB, SO_OOBINLINE, SIOCATMARK,
 * POLLPRI, EPOLLPRI, exceptfds): a receive of ours would read past the
 * urgent mark, which only the kernel keeps, so the socket leaves the
 * engine (passthrough urgent); what it holds is read first. */
void rs_sock_urgent(struct rs_sock *s, int fd);
/* Connections the process has with itself: listen() and connect() tell.
 * rs_sock_to_self: does a connect to this address reach one of the
 * process's own listeners (by port)?  Then rs_sock_connected_self(fd)
 * after it; rs_self_connect is set from then on, and rs_sock_self_peer
 * says whether a socket's local or peer port is such a connection's (two
 * system calls: ask once per socket). */
extern int rs_self_connect; /* [hint, set only] */
void rs_sock_listening(struct rs_sock *s, int fd);
int rs_sock_to_self(struct rs_sock *s, const struct sockaddr *to, socklen_t len);
void rs_sock_connected_self(int fd);
int rs_sock_self_peer(int fd);

/* Whole calls for the preload layer: -errno, bytes, or RS_PASS when the
 * caller must make the ordinary call itself. */
#define RS_PASS (-100000L)

/* The program's calls on an engine socket, through its kind's table:
 * preload/ never asks which kind a socket is.  The kernel's call next
 * (RS_PASS) has this thread's queued sends go first. */
ssize_t rs_sock_recv(struct rs_sock *s, int fd, const struct iovec *iov, int n, int flags,
		     struct rs_dgram_from *f);
ssize_t rs_sock_send(struct rs_sock *s, int fd, const struct rs_send *m);
int rs_sock_recvmmsg(struct rs_sock *s, int fd, struct mmsghdr *vec, unsigned vlen, int flags,
		     struct timespec *tmo);
/* After the kernel's send on an engine socket (errno as err). */
void rs_sock_after_send(struct rs_sock *s, int fd, ssize_t r, int err, const void *name, socklen_t namelen);
void rs_sock_before_connect(struct rs_sock *s, int fd);
/* FIONREAD: 0 (*out set), -errno, or RS_PASS. */
int rs_sock_fionread(struct rs_sock *s, int fd, int *out);
/* Received bytes the engine holds (0 when passive or not armed). */
size_t rs_sock_held(struct rs_sock *s, int fd);
/* SO_ERROR: the error a call kept, else the one the engine saw first
 * (taken); 0: ask the kernel. */
int rs_sock_so_error(struct rs_sock *s, int fd);
/* shutdown: 0, -errno, or RS_PASS. */
int rs_sock_shutdown(struct rs_sock *s, int fd, int how);
/* SO_RCVLOWAT for the kernel, given the program's mark. */
int rs_sock_kernel_lowat(struct rs_sock *s, int lowat);
/* Bytes then an error: keep an asynchronous error for the next call. */
void rs_keep_error(struct rs_sock *s, size_t done, ssize_t r);
/* ... and take it (0: none). */
int rs_kept_error(struct rs_sock *s);

/* ---- tcp.c, tcp_recv.c, tcp_send.c: stream sockets (tcp_int.h inside) --- */
extern const struct rs_kind_ops rs_tcp_ops;

/* ---- udp.c, udp_recv.c, udpq.c, udp_send.c: datagram sockets (udp_int.h inside) */
extern const struct rs_kind_ops rs_udp_ops;

/* ---- block.c: blocking calls (every kind) ---------------------------------- */
/* A private copy of an iovec array that can be advanced past bytes done. */
struct iov_cur {
	struct iovec *v;
	int n;
	struct iovec *heap;
};
/* The deadline of a blocking call from SO_RCVTIMEO (rx) or SO_SNDTIMEO
 * (CLOCK_MONOTONIC ns; 0: none). */
int64_t rs_call_deadline(struct rs_sock *s, int fd, int rx);
/* After a wait: 0 to look again, -EAGAIN (timed out) or -EINTR. */
int rs_wait_result(int e, int64_t deadline, int partial);
/* Sleep in t's owner ring (this thread's) until something happens;
 * called locked, returns unlocked. */
int rs_block_in_ring(struct rs_esock *e, int64_t deadline, int partial);
/* Wait a little on fd (a socket in hand-over); no lock held. */
int rs_block_on_fd(int fd, short ev, int64_t deadline, int partial);
/* A blocking kernel call came back short for the ring's own task work. */
int rs_short_by_ring(int64_t deadline);
int rs_iov_cur_skip(struct iov_cur *c, const struct iovec *iov, int n, size_t k);
size_t rs_iov_total(const struct iovec *iov, int n);
/* A blocking call's result: bytes done before an error or the end count. */
ssize_t rs_with_done(size_t done, ssize_t r);

/* ---- epreg.c: what the epoll sets know of engine sockets -------------------
 * Called by the socket core and the kinds with the socket's lock held
 * (epreg.c takes its own locks below it). */
struct rs_epreg;
void rs_ep_sock_changed(struct rs_esock *e);  /* readiness may have changed */
void rs_ep_sock_input(struct rs_esock *e);    /* input arrived, nothing else */
void rs_ep_sock_armed(struct rs_esock *e);    /* registrations to engine mode */
void rs_ep_sock_detached(struct rs_esock *e); /* ... and back to the kernel */
void rs_ep_sock_rx_direct(struct rs_esock *e); /* who reports input changed */
void rs_ep_sock_kfull(struct rs_esock *e);    /* output readiness from the kernel */
void rs_ep_sock_gone(struct rs_esock *e);     /* its last fd is being closed */
void rs_ep_forget_sock(struct rs_sock *s);    /* a record never armed is closed */
int rs_ep_known(int epfd); /* has engine state */
void rs_ep_close(int epfd);
/* fork: the registrations' locks held across it (after every ring's), new
 * in the child. */
void rs_ep_fork_prepare(void);
void rs_ep_fork_release(int child);

/* ---- kwatch.c: the kernel fds of poll/select sets, watched by the ring --- */
struct pollfd;
/* May the kernel entries of k[0..n) (fd < 0: not asked) be answered "not
 * ready" without asking the kernel (lock held, after progress)? */
int rs_kw_quiet(struct rs_ring *r, const struct pollfd *k, unsigned long n);
/* The kernel answered "none ready" for the kernel entries of k[0..n):
 * register them and arm the ring's poll of them (lock held). */
void rs_kw_learn(struct rs_ring *r, const struct pollfd *k, unsigned long n);
/* Drop the ring's private set (lock held; teardown, reset). */
void rs_kw_reset(struct rs_ring *r);
/* fd (or a range) is closed or replaced: registrations by number are void. */
void rs_kw_fd_gone(int fd);
void rs_kw_range_gone(unsigned first, unsigned last);

/* ---- ep.c: epoll_ctl and epoll_wait ------------------------------------------ */
int rs_ep_ctl(int epfd, int op, int fd, struct epoll_event *ev);
int rs_ep_wait(int epfd, struct epoll_event *evs, int max, int timeout_ms,
	       const sigset_t *ss, const struct timespec *tmo);
void rs_ep_demote_nested(int epfd);       /* epfd watched from outside */

/* ---- wait.c -------------------------------------------------------------- */
struct pollfd;
int rs_wait_poll(struct pollfd *fds, unsigned long n, int timeout_ms, const struct timespec *tmo,
		 const sigset_t *ss, int *handled);

/* ---- engine.c: the engine's lifecycle ------------------------------------- */
extern int rs_engine_on;        /* the engine may arm sockets */
void rs_engine_init(void);      /* from rs_runtime_init */
void rs_engine_flush_all(void); /* exec and exit: queued sends reach the kernel */
void rs_engine_before_spawn(void); /* vfork, posix_spawn: the same, and no read-ahead */
extern int rs_engine_refuse; /* 0, or why no socket is armed any more */
/* close() (and dup2 over, close_range) of fd, before the real call. */
void rs_engine_before_close(struct rs_sock *s, int fd);

#endif
