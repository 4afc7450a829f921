/* engine_int.h - the engine's calls, one heading per file of src/, in the
 * layer order of src/README.md (top down): each file calls only the files
 * below it, and a lower one reaches a higher one only through a kind's
 * table (struct rs_kind_ops) or a hook engine.c installs.  The types and
 * every field's meaning and lock, the lock order and a socket's states:
 * types.h; the lock and atomics helpers: locks.h; the engine's lifecycle
 * calls: engine.h; what the whole library shares (the fd records,
 * counters, knobs, logging, process state): internal.h.  Private to a few
 * files: tcp_int.h (the TCP files), udp_int.h (the UDP files), ep_int.h
 * (ep.c, epctl.c, epreg.c).
 *
 * Conventions: functions return -errno (never write errno) and make their
 * system calls through sys.h; "lock held" or "r locked" is the ring's lock
 * (rs_ring_lock), "locked" a socket's (rs_esock_enter).
 */
#ifndef RS_ENGINE_INT_H
#define RS_ENGINE_INT_H

#include "types.h" /* first: its liburing.h must precede every libc header */
#include "api.h"   /* the calls preload/ makes: declared there, once */
#include "engine.h"
#include "locks.h"

/* ==== 2. start and lifecycle ============================================== */

/* ---- runtime.c: knobs, pass-through policy, the process hooks: internal.h */
/* ---- engine.c: the engine's lifecycle: engine.h ------------------------- */
/* ---- publish.c: the state `ringsock stat` reads: internal.h ------------- */

/* ==== 3. readiness and waiting ============================================ */

/* ---- epctl.c, ep.c: epoll_ctl and epoll_wait ------------------------------- */
/* (rs_ep_ctl, rs_ep_wait: api.h) */
void rs_ep_demote_nested(int epfd);       /* epfd watched from outside */

/* ---- wait.c: poll, ppoll, select, pselect: rs_wait_poll, api.h ----------- */

/* ---- kwatch.c: the kernel fds of poll/select sets, watched by the ring --- */
struct pollfd;
/* May the kernel entries of k[0..n) (fd < 0: not asked) be answered "not
 * ready" without asking the kernel (lock held, after progress)? */
int rs_kw_quiet(struct rs_ring *r, const struct pollfd *k, unsigned long n);
/* rs_kw_quiet one entry at a time: rs_kw_vouches (may the ring answer
 * for its kernel fds at all?), rs_kw_covers for each kernel fd, and
 * rs_kw_skipped when the kernel was not asked (lock held). */
int rs_kw_vouches(struct rs_ring *r);
int rs_kw_covers(struct rs_ring *r, int fd, unsigned events);
void rs_kw_skipped(struct rs_ring *r);
/* The kernel answered "none ready" for the kernel entries of k[0..n):
 * register them and arm the ring's poll of them (lock held). */
void rs_kw_learn(struct rs_ring *r, const struct pollfd *k, unsigned long n);
/* Drop the ring's private set (lock held; teardown, reset). */
void rs_kw_reset(struct rs_ring *r);
/* (rs_kw_fd_gone, rs_kw_range_gone: api.h) */

/* ==== 4. socket kinds ===================================================== */

/* ---- tcp.c: TCP policy and the kind's table (tcp_recv.c, tcp_send.c,
 * tcpq.c and the calls between them: tcp_int.h) ---------------------------- */
extern const struct rs_kind_ops rs_tcp_ops;

/* ---- block.c: blocking calls (every kind) ---------------------------------- */
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
/* (rs_iov_total: api.h) */
/* A blocking call's result: bytes done before an error or the end count. */
ssize_t rs_with_done(size_t done, ssize_t r);

/* ---- udp.c: UDP policy and the kind's table (udp_recv.c, udpq.c,
 * udp_send.c and the calls between them: udp_int.h) ------------------------- */
extern const struct rs_kind_ops rs_udp_ops;

/* ==== 5. socket core ====================================================== */

/* ---- sock.c: the socket core (struct rs_esock, its states, struct
 * rs_kind_ops: types.h) ---------------------------------------------------- */

/* Kinds are registered at start (engine.c): one per socket type. */
void rs_esock_kind(int type, const struct rs_kind_ops *ops);
int rs_esock_kind_known(int type); /* a kind serves sockets of this type */
const struct rs_kind_ops *rs_esock_kind_of(int type); /* NULL: none */

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
/* s's engine state locked, wherever it is served, without taking it over
 * (NULL: none). */
struct rs_esock *rs_esock_lock_sock(struct rs_sock *s);
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
/* (rs_esock_armed_on, rs_esock_passive and the hints preload/ reads,
 * rs_sock_served_here, rs_sock_armed, rs_sock_on_engine: api.h) */

/* The kind's readiness, with ERR for an error kept for the next call. */
unsigned rs_esock_readiness(struct rs_esock *e);
unsigned rs_esock_held_events(struct rs_esock *e); /* hint, no lock */
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
/* DETACHED -> passive once the kind holds nothing (locked). */
void rs_esock_maybe_passive(struct rs_esock *e);
/* The program closes fd (no lock held; engine.c rs_engine_before_close):
 * the last descriptor makes the socket closing, freed once nothing of it
 * is in flight.  Returns 0. */
int rs_esock_close(struct rs_sock *s, int fd);
/* Owner side: the socket leaves the engine for reason (counted), waits
 * until nothing of it is in flight (this thread's ring) or hands it to its
 * owner's (another thread's). */
void rs_esock_detach_self(struct rs_esock *e, int reason);
/* Another thread's ring (its lock held): its owner finishes the detach
 * next time it runs (woken through its eventfd). */
void rs_esock_detach_on(struct rs_ring *r, struct rs_esock *e);
/* Every socket armed on r leaves the engine (r's lock held). */
void rs_esock_leave_all(struct rs_ring *r, int reason);
/* (rs_esock_refuse_all: api.h) */
void rs_esock_fork_prepare_detached(void); /* socks lock held across fork */
void rs_esock_fork_release_detached(int child);

/* ---- sockcall.c: the program's calls through the kind's table ----------- */
/* (The calls of the preload layer on a record, and RS_PASS: api.h.) */
/* Bytes then an error: keep an asynchronous error for the next call. */
void rs_keep_error(struct rs_sock *s, size_t done, ssize_t r);
/* ... and take it (0: none). */
int rs_kept_error(struct rs_sock *s);

/* ---- selfconn.c: the process's connections with itself ------------------ */
/* (rs_sock_listening, rs_sock_to_self, rs_sock_connected_self: api.h)
 * rs_self_connect is set once it made one [hint, set only];
 * rs_sock_self_peer says whether fd's local or peer port is such a
 * connection's (two system calls: ask once per socket). */
extern int rs_self_connect;
int rs_sock_self_peer(int fd);

/* ---- epreg.c: what the epoll sets know of engine sockets -------------------
 * Called by the socket core and the kinds with the socket's lock held
 * (epreg.c takes its own locks below it). */
struct rs_epreg;
void rs_ep_sock_changed(struct rs_esock *e);  /* readiness may have changed */
void rs_ep_sock_input(struct rs_esock *e);    /* input arrived, nothing else */
void rs_ep_sock_received(struct rs_esock *e); /* a TCP receive's bytes */
void rs_ep_sock_end(struct rs_esock *e);      /* the engine's receive met the stream's end */
void rs_ep_sock_output(struct rs_esock *e);   /* room, with no send (SO_SNDBUF) */
void rs_ep_sock_armed(struct rs_esock *e);    /* registrations to engine mode */
void rs_ep_sock_detached(struct rs_esock *e); /* ... and back to the kernel */
/* Would rs_ep_sock_detached renew an edge-triggered or one-shot
 * registration (EPOLL_CTL_MOD polls anew: an edge the kernel path would
 * not make)?  The socket's lock held. */
int rs_ep_sock_detach_renews(struct rs_esock *e);
void rs_ep_sock_rx_direct(struct rs_esock *e); /* who reports input changed */
void rs_ep_sock_kfull(struct rs_esock *e);    /* output readiness from the kernel */
void rs_ep_sock_gone(struct rs_esock *e);     /* its last fd is being closed */
void rs_ep_forget_sock(struct rs_sock *s);    /* a record never armed is closed */
/* (rs_ep_known, rs_ep_close: api.h) */
/* fork: the registrations' locks held across it (after every ring's), new
 * in the child. */
void rs_ep_fork_prepare(void);
void rs_ep_fork_release(int child);

/* ==== 6. per-thread engine ================================================ */

/* ---- ring.c: the thread's io_uring ---------------------------------------- */
/* This thread's ring, created on first use; NULL if the engine is off or
 * the ring cannot be created (the reason is recorded once). */
struct rs_ring *rs_ring_get(void);
/* (rs_ring_tls, this thread's ring or NULL: api.h) */
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
/* (rs_ring_flush_tx, rs_ring_tx_queued, rs_ring_flush_own_tx: api.h) */
/* Like progress, then wait until cond(arg) or no more can happen soon
 * (timeout_ms < 0: no limit).  Returns 0, -ETIME or -EINTR. */
int rs_ring_wait(struct rs_ring *r, int (*cond)(void *), void *arg, int timeout_ms);
/* Dispatch what is already in the CQ (no syscall): any thread holding the
 * ring's lock may call it. */
int rs_ring_reap(struct rs_ring *r);
/* Does the owner need to enter the kernel to make progress? */
int rs_ring_has_work(struct rs_ring *r);
/* The ring's thread makes a wait call or waits (rs_ring_may_queue's round
 * ends: epoll_wait, poll, select, a blocking call's wait). */
static inline void rs_ring_round_end(struct rs_ring *r)
{
	if (r && RS_LOAD(r->round_sends))
		RS_STORE(r->round_sends, 0);
}
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
 * caller asks sig.c (rs_sig_take).  timeout_ns: -1 for none. */
int rs_ring_sleep(struct rs_ring *r, int64_t timeout_ns, const sigset_t *ss);
/* A wait that cannot see everything it waits for (a socket in hand-over,
 * a ring that may hide work) looks again after this long at most. */
#define RS_WAIT_SLICE_NS (10 * 1000000LL)
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

/* ---- ringlist.c: a ring's sockets and work lists --------------------------- */
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

/* ---- ringfile.c: the ring's registered files --------------------------------- */
/* The table is changed only by r's owner (SINGLE_ISSUER): mine says the
 * caller is (r == rs_ring_tls).  Before each send through the ring (lock
 * held): at e's RS_SLOT_AFTER'th, its armed number's slot, if the table
 * has room and the owner calls. */
void rs_ring_slot_take(struct rs_ring *r, struct rs_esock *e, int mine);
/* e leaves r (lock held, nothing of e in flight or prepared): its slot
 * goes, at once on the owner's thread, else at the owner's next round. */
void rs_ring_slot_drop(struct rs_ring *r, struct rs_esock *e, int mine);
void rs_ring_slots_sweep(struct rs_ring *r); /* the owner: clear those */
void rs_ring_slots_free(struct rs_ring *r);  /* the ring goes (or a fork child's) */
/* Name e's file in sqe: its slot when it has one, else its fd (as set). */
static inline void rs_ring_sqe_file(struct io_uring_sqe *sqe, const struct rs_esock *e)
{
	if (e->slot >= 0) {
		sqe->fd = e->slot;
		sqe->flags |= IOSQE_FIXED_FILE;
	}
}

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

/* ---- bufring.c: receive buffers ---------------------------------------- */
/* The stream group (features: the ring's io_uring_params.features). */
int rs_bufring_setup(struct rs_ring *r, unsigned features);
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
/* The k-th buffer of a bundle whose first is first (the stream group). */
unsigned rs_buf_bundled(const struct rs_bufring *b, unsigned first, unsigned k);
/* A consumed buffer goes back; it reaches the kernel with the batch. */
void rs_buf_release(struct rs_ring *r, unsigned bid);
/* A receive found no buffer free: double the buffers in circulation, up
 * to RINGSOCK_BUF_COUNT_MAX (lock held).  1 if it grew. */
int rs_buf_grow(struct rs_ring *r);
void rs_buf_flush(struct rs_ring *r); /* advance the tail for the batch */

/* ---- frag.c: send memory, zero-copy holds --------------------------------- */
/* Carve len bytes (len <= chunk size) from the pool; *chunk gets the
 * chunk to release.  When the allocator refuses a chunk, a slice of at
 * most RS_FRAG_PAGE bytes gets a page's chunk instead; NULL when out of
 * memory even so (or len is more than a page). */
char *rs_frag_alloc(struct rs_frag_pool *p, uint32_t len, struct rs_chunk **chunk);
/* The same from a socket's own cached chunk (*cache, created on first use);
 * NULL when it has no room left. */
char *rs_frag_alloc_cached(struct rs_frag_pool *p, struct rs_chunk **cache, uint32_t len,
			   struct rs_chunk **chunk);
void rs_frag_cache_drop(struct rs_frag_pool *p, struct rs_chunk *cache);
void rs_frag_release(struct rs_frag_pool *p, struct rs_chunk *c);
void rs_frag_pool_destroy(struct rs_frag_pool *p);
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

/* ---- drain.c: sends the kernel could not take at once ---------------------- */
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
void rs_drain_set_watchdog(void (*watchdog)(void)); /* the thread runs it every
						      * RS_WATCH_MS */
extern RS_HIDDEN int rs_drain_state; /* 1 running, 0 not started, -1 could not start */
static inline int rs_drain_running(void)
{
	return __atomic_load_n(&rs_drain_state, __ATOMIC_RELAXED) == 1;
}
int rs_drain_want(void);       /* start the thread if it is not running: 1 when it
				* runs (its watchdog flushes the sends of a thread
				* blocked where the library cannot see); without it,
				* no send is queued */
void rs_drain_stop(void);      /* exit, exec: end the thread once idle */

/* May this ring queue a send?  A queued send needs the drain thread (its
 * watchdog sends the queue of a thread that blocks where the library
 * cannot see), and a process without it keeps the kernel's and the C
 * library's single-thread paths (a system call on a descriptor takes no
 * file reference).  So until it runs, a send the engine would queue goes
 * to the kernel unless it is the third of its round (since the ring last
 * waited), or the second of the ring's second round with two: a round of
 * one send has nothing to merge (a ping-pong peer's, one request per
 * connection's), and one round of two (a length and then its message,
 * before a wait: iperf3's parameters on its control socket) is not worth
 * a thread for the whole run.  That send starts the thread
 * (rs_drain_want) and is queued.  Counted by rounds, never by time. */
static inline int rs_ring_may_queue(struct rs_ring *r)
{
	if (rs_likely(rs_drain_running()))
		return 1;
	uint8_t n = RS_LOAD(r->round_sends);
	if (n < 2) {
		RS_STORE(r->round_sends, (uint8_t)(n + 1));
		if (!n)
			return 0;
		if (!RS_LOAD(r->two_rounds)) {
			RS_STORE(r->two_rounds, 1);
			return 0;
		}
	}
	return rs_drain_want();
}
void rs_drain_before_fork(void);
void rs_drain_after_fork(int child);

/* ---- sig.c: wrapped signal handlers (rs_sig_fatal_deferred: locks.h) ------- */
#define RS_SIG_RESTART 1u /* a handler installed with SA_RESTART ran */
#define RS_SIG_INTR 2u    /* a handler without SA_RESTART ran */
/* (rs_sig_action, rs_sig_adopt, rs_sig_is_tramp, rs_sig_guard_all,
 * rs_sig_user_handler: api.h) */
/* A default action is about to end the process: fn (engine.c) sends what
 * is queued first.  While it runs rs_dying is set: no memory is allocated
 * or freed (the signal may have come in the middle of malloc). */
void rs_sig_on_die(void (*fn)(void));
void rs_sig_clear(void);     /* before a wait */
unsigned rs_sig_take(void);  /* after it: RS_SIG_* of handlers that ran */
int rs_sig_untracked_intr(void); /* a handler not wrapped lacks SA_RESTART */
int rs_sig_untracked_any(void);  /* a handler is installed not wrapped */
/* A blocking call's wait was interrupted (hits from rs_sig_take,
 * enter_eintr: io_uring_enter said EINTR, timed: the socket has a
 * timeout, or the call has moved bytes already, which it then returns):
 * must the call end (1) or go on waiting (0)? */
int rs_sig_interrupted(unsigned hits, int enter_eintr, int timed);

/* ==== 7. process-wide, below everything ================================== */

/* ---- proc.c: process state (rs_engine_on, rs_engine_refuse: engine.h; the
 * rest: internal.h) --------------------------------------------------------- */
/* Set while the flush before a fatal signal's default action runs (sig.c,
 * engine.c die_flush): no memory is allocated or freed. */
extern int rs_dying;
/* Bumped by every push on an epoll set's ready list (epreg.c): what a
 * ready socket was before or after, such as an epoll set's poll firing
 * (rs_ring_poll.fired_clock).  [atomic] */
extern uint64_t rs_ready_clock;

/* ---- fdtab.c, fdguard.c, stats.c, config.c, probe.c, foreign.c, log.c,
 * names.c, route.c: internal.h, config.h, names.h, route.h --------------------- */

/* ---- the tests' fault hook (defined by a test library, if any) ------------- */
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
	RS_FAULT_STUCK,       /* IORING_SQ_TASKRUN read as set when it is not
			       * (a flag the kernel left set: ring.c kflags) */
	RS_FAULT_SETUP_SIGNAL, /* a thread's ring half made (its io_uring open,
			       * not yet the engine's): the test library
			       * raises SIGALRM there, as a timer can */
	RS_FAULT_NO_DRAIN,    /* the drain thread cannot start (no thread) */
	RS_FAULT_WATCHDOG,    /* the watchdog finds every ring busy (its owner
			       * in engine code), so it sends nothing */
};
__attribute__((weak, visibility("default"))) int ringsock_test_fault(int site);
static inline int rs_fault(int site)
{
	return rs_unlikely(ringsock_test_fault != NULL) && ringsock_test_fault(site);
}

#endif
