/* types.h - the engine's shared types, every field documented: what it
 * means, its unit, what guards it, and its invariant where it has one.
 * (The calls are in engine_int.h, one heading per file; the lock and
 * atomics helpers in locks.h.  Types private to a few files stay with
 * them: struct rs_tcp in tcp_int.h, struct rs_udp in udp_int.h, struct
 * rs_epreg and struct rs_ep in ep_int.h, struct rs_drain_job in drain.c.
 * What the whole library shares, the fd record struct rs_sock included,
 * is in internal.h.)
 *
 * Guards, as each field's comment gives them in brackets:
 *   [lock]     the ring's lock (rs_ring_lock) of the ring the field
 *              belongs to: for a socket, its owner's ring
 *   [ring/mu]  a socket's: its owner ring's lock while owner is set, the
 *              socket's own mutex (mu) once it is not
 *   [list]     the rings' list lock (ring.c all_lock, rs_rings_lock)
 *   [socks]    sock.c's socks_lock (the list of every engine socket)
 *   [owner]    touched only by the ring's owner thread
 *   [set]      written before the record is published (a ring: when its
 *              thread takes the record; a socket: before rs_esock_install)
 *              and only read after, without a lock
 *   [setup]    written when the thing is made or torn down (with the lock
 *              held, or before another thread can see it), only read
 *              otherwise
 *   [const]    part of a const object (a kind's table): never written
 *   [hint]     also read without the lock (RS_LOAD or an __atomic load), by
 *              code that checks again under the lock before it acts
 *   [atomic]   read and written with __atomic / RS_LOAD / RS_STORE only
 *   [caller]   a call's argument, on the calling thread's stack
 * Units: bytes, counts, ns (CLOCK_MONOTONIC) as each comment says; "ids"
 * are buffer ids of a buffer group (0 .. count-1).
 *
 * Lock order: a thread that holds one of these takes only locks further
 * down the list (skipping some is fine).  Checked against every
 * rs_mutex_lock, pthread_mutex_lock, rs_ring_lock and spin lock site of
 * src/ (debug builds assert that a ring's lock is held where it must be;
 * nothing checks the order itself).
 *   1. the rings' list lock (ring.c all_lock: rs_rings_lock, and a new
 *      thread claiming a dead ring's record, which it locks under it)
 *   2. a ring's lock (rs_ring_lock).  One ring's at a time, but for fork's
 *      prepare handler (every ring's, in list order) and the claim above.
 *   3. socks_lock (sock.c: every engine socket; taken to register a socket
 *      at arm and to free one, under its ring's lock or none; fork holds it)
 *   4. a socket's own mutex (struct rs_esock mu), under socks_lock (fork:
 *      each detached socket's, in turn), under the owner ring's lock (the
 *      socket leaves its ring: rs_esock_finalize_detach), or first.  For a
 *      detached socket it stands where the ring's lock does for the calls
 *      on it; it is released before socks_lock is taken to free the socket.
 *   5. the drain lock (drain.c dr.lock), under a socket's lock (a job
 *      started, told to shut down after its data, let go of).
 *   6. rs_ep_ctl_lock (epreg.c: registrations), under a socket's lock.
 *   7. an epoll set's lock (struct rs_ep lock: its ready list), under the
 *      ctl lock, or straight under a socket's lock (epreg.c sock_look) or
 *      this thread's ring's (ep.c collect).
 *   Leaf locks, taken under any of the above, holding nothing: frag.c's
 *   zc_orphans_lock (zero-copy holds of exited threads), route.c's
 *   cache_lock (the route per destination), foreign.c's scan_lock (the
 *   io_uring scan), stats.c's reg_lock (a spin flag: the threads' counters),
 *   sig.c's tab_lock (a spin word, every signal blocked: the handler
 *   table), and the spin words of what a fork left shared (struct
 *   rs_shared_rx lock in tcp_int.h, struct rs_uleft lock in udp_int.h).
 *   publish.c's pub_lock stands outside the order: it is only ever tried
 *   (never waited for), and under it the rings' list lock and each ring's
 *   are only tried (ring_held), so it cannot close a circle.  The drain
 *   thread's watchdog (engine.c ring_watchdog) only tries the list lock
 *   and each ring's too: fork holds them while it waits for that thread.
 *   Fork's nesting (engine.c before_fork): the list lock, every ring's
 *   lock in list order, socks_lock (with each detached socket's mutex in
 *   turn), the drain lock, rs_ep_ctl_lock, every epoll set's lock, then
 *   stats.c's reg_lock; all held across fork() and released (parent) or
 *   made new (child) after it.
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
 *
 * A socket's states (struct rs_esock: mode, then the passive flag and
 * closing; checked against sock.c, which makes every change, and the
 * hooks of tcp.c and udp.c):
 *
 *   (none) --the kind's arm: rs_esock_init, rs_esock_install--> ARMED
 *
 *   ARMED --detach (sock.c start_detach): another thread's call
 *           (rs_esock_enter), a dup or an fd passed (SCM_RIGHTS), an
 *           option the engine emulates (SIGIO, sendfile...), urgent data,
 *           an epoll set it cannot serve, a socket made blocking under
 *           RINGSOCK_BLOCKING=kernel, the program's own io_uring
 *           (rs_esock_refuse_all); or the owner thread's exit
 *           (rs_esock_ring_gone, unless closing)--> DETACHING
 *
 *   DETACHING --nothing in flight (the kind's detach_done), on the owner's
 *           ring: rs_esock_maybe_finish -> rs_esock_finalize_detach; at
 *           thread exit, rs_esock_ring_gone after the kind's ring_gone
 *           waited--> DETACHED (owner NULL: the socket's mutex guards it)
 *
 *   DETACHED --what the engine held is read or reported (the kind's
 *           holds_nothing, asked by rs_esock_maybe_passive after each read
 *           in tcp_recv.c and udp_recv.c)--> passive: mode stays
 *           DETACHED, the passive flag is set for good and the kernel
 *           serves the socket alone
 *
 *   fork child: ARMED or DETACHING --rs_esock_fork_child--> DETACHED at
 *           once (the parent's ring is not the child's; what the socket
 *           held was moved to memory both share before the fork)
 *
 *   close (rs_esock_close, the last descriptor: closing set, fd -1; the
 *           kind's close_own, close_unread, drop_held say what only it
 *           knows), in any state: the socket is freed (rs_esock_free) once
 *           nothing of it is in flight: at once when it has no owner; else
 *           on the owner's ring by rs_esock_maybe_finish (after each
 *           completion), or by rs_esock_ring_gone at thread exit.  A
 *           closing socket leaves its ring without a mode change (ARMED
 *           stays ARMED).
 *
 *   thread exit (engine.c thread_exit): rs_esock_ring_gone for each
 *           socket the ring owns, in list order: ARMED becomes DETACHING
 *           (unless closing), the kind's ring_gone waits (10 s), then
 *           DETACHED (rs_esock_finalize_detach) or, closing, freed.
 *
 *   Every change of state is made in sock.c: the mode, the passive flag
 *   and closing; the kinds supply hooks only (struct rs_kind_ops).
 *   Within ARMED, who reports the input is the kind's business (TCP: its
 *   multishot receive, or the kernel for a bulk reader, a socket on
 *   probation or one starved of buffers: kernel_input).  A socket never
 *   armed, or passive, is served by the kernel alone (pass-through, with
 *   the reason counted once).
 */
#ifndef RS_TYPES_H
#define RS_TYPES_H

#include <liburing.h> /* first (it defines _GNU_SOURCE: musl's cpu_set_t) */
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/uio.h>

#include "internal.h"
#include "locks.h" /* rs_lock */

/* Newer than Debian 12's headers. */
#ifndef IORING_SETUP_DEFER_TASKRUN
#define IORING_SETUP_DEFER_TASKRUN (1U << 13)
#endif
#ifndef IORING_SETUP_SINGLE_ISSUER
#define IORING_SETUP_SINGLE_ISSUER (1U << 12)
#endif

struct rs_ring;
struct rs_esock;
struct rs_ep;

/* ---- frag.c: send memory ------------------------------------------------ */

/* A chunk of send memory, carved into slices (one per queued send
 * segment) from the front.  A chunk belongs to one ring's pool and is
 * guarded by that ring's lock [lock] (a socket's cached chunk too: the
 * socket's lock is then that ring's).  A chunk is on its pool's free list
 * exactly when refs is 0.  A chunk a zero-copy hold keeps when its ring
 * goes is never freed (frag.c rs_frag_zc_orphan_all). */
struct rs_chunk {
	struct rs_chunk *next;  /* the pool's free list (while refs is 0) [lock] */
	uint32_t size, used;    /* size: bytes of data[] (the pool's chunk_size,
				 * or RS_FRAG_PAGE: a fallback chunk);
				 * used: bytes carved from its front (<= size; back
				 * to 0 when every slice of the current or cached
				 * chunk came back: reused in place) [lock] */
	uint32_t refs;          /* slices alive + one per zero-copy hold naming
				 * it + 1 while it is the pool's current chunk or
				 * a socket's cached chunk [lock] */
	uint32_t cached;        /* 1: a socket's RINGSOCK_TX_CACHE chunk (tcp.c
				 * struct rs_tcp txc) [lock] */
	char data[];            /* the slices (size bytes) [lock] */
};
/* A ring's send memory (struct rs_ring frag) [lock].  Invariants (the
 * unit test test_frag checks both): free_bytes is the sum of size over the
 * free list; live_chunks counts the chunks malloc'ed and not yet freed
 * (current, cached, on the free list, or holding slices alive). */
struct rs_frag_pool {
	struct rs_chunk *cur;   /* the chunk slices are carved from now (the pool
				 * holds one reference on it); NULL: none yet
				 * [lock] */
	struct rs_chunk *free;  /* chunks with no reference, reused before any
				 * malloc (singly linked through next) [lock] */
	size_t free_bytes;      /* bytes of the chunks on the free list; above
				 * RINGSOCK_RECLAIM_THRESHOLD, RINGSOCK_RECLAIM_CHUNK
				 * bytes of them go back to the OS (pool_trim)
				 * [lock] */
	size_t live_chunks;     /* chunks allocated and not freed (count) [lock] */
	uint32_t chunk_size;    /* bytes per chunk: 32768, or 4096 with
				 * RINGSOCK_HIGH_ORDER_ALLOC_DISABLE=1 [set at ring
				 * creation].  A chunk of RS_FRAG_PAGE bytes
				 * stands in for one the allocator refused (a
				 * slice of at most a page): it is current or
				 * holds slices, never on the free list (freed
				 * when it falls free) */
};
#define RS_FRAG_PAGE 4096u     /* bytes of an order-0 chunk (the fallback) */
/* The chunks a zero-copy send reads, held (one reference each) until the
 * kernel's notification that it no longer reads them: until then no slice
 * of them is carved again.  user_data RS_UD(hold, RS_UD_ZC); ring.c reaps
 * both completions (the send's own goes to e's kind as RS_UD_SEND).  The
 * hold is carved from the pool itself (a slice of chunk own).  It is on
 * its ring's zc_holds list while e or notif is set, then released
 * (rs_frag_zc_complete); when its ring goes first it moves to frag.c's
 * orphans for the life of the process.  [lock] (the ring's), but next once
 * orphaned: frag.c zc_orphans_lock. */
struct rs_frag_hold {
	struct rs_frag_hold *next, *prev; /* the ring's zc_holds (doubly linked)
				* [lock; zc_orphans_lock once orphaned] */
	struct rs_esock *e;    /* the sender, until the send's own completion;
				* NULL after it [lock] */
	struct rs_chunk *own;  /* the chunk the hold itself is carved from [set] */
	uint8_t notif;         /* 1: the kernel's notification is still to come
				* (0 too when the send's completion said none
				* follows: no IORING_CQE_F_MORE) [lock] */
	uint32_t n;            /* chunks held (count of chunk[]) [set] */
	struct rs_chunk *chunk[]; /* the chunks the send reads, one reference
				* each [set] */
};

/* ---- bufring.c: receive buffers ---------------------------------------- */

/* A provided-buffer group of a ring: the stream group (struct rs_ring buf,
 * RS_BGID_TCP, made with the ring) or the datagram group (ubuf,
 * RS_BGID_UDP, made at the ring's first UDP socket).  Buffer ids 0 ..
 * count-1 circulate; each is at every moment in exactly one of three
 * places: posted (in the kernel's ring, between its head and our tail),
 * pending (added after our tail, not yet published), or held (taken by a
 * completion: queued with a socket or being copied out).  So
 *   posted + pending + held == count
 * (posted = the tail less the kernel's head, which only the kernel knows:
 * the unit test test_bufring checks the sum, and each id once, against
 * IORING_REGISTER_PBUF_STATUS).  Guard: [lock]; the fields marked
 * [setup] are written when the group is made or destroyed (the stream
 * group before any other thread can see the ring; the datagram group
 * under the lock) and only read otherwise. */
struct rs_bufring {
	struct io_uring_buf_ring *br; /* the ring of buffer entries shared with the
				 * kernel (max entries); NULL: no group [setup] */
	char *mem;              /* the buffers: max * size bytes, id i at
				 * mem + i * size (rs_buf_addr) [setup] */
	unsigned count;         /* buffers in circulation (a power of 2, <=
				 * max); doubles when a receive finds none free
				 * (rs_bufring_grow), never shrinks [lock] */
	unsigned max, mask;     /* the ring's entries (a power of 2, <= 32768;
				 * mask = max - 1) [setup] */
	uint32_t size;          /* bytes per buffer (RINGSOCK_BUF_SIZE; the
				 * datagram group: 69632) [setup] */
	unsigned short bgid;    /* its group id, RS_BGID_* [setup] */
	unsigned pending;       /* buffers added to the ring, tail not advanced
				 * yet: published with the next flush (a batch
				 * of RINGSOCK_RECLAIM_BATCH, or before the ring
				 * enters the kernel) [lock] */
	unsigned held;          /* buffers handed out by completions and not put
				 * back (rs_bufring_put) [lock] */
	struct rs_bufovf *ovf;  /* one overflow slot per buffer id (max of them;
				 * tcpq.c rs_rxq_push); NULL for the datagram
				 * group [setup] */
	size_t map_len;         /* bytes of the one mapping that holds the entry
				 * ring, the overflow slots, the slot maps and the
				 * buffers [setup] */
	uint16_t *slot_bid;     /* the stream group's: the buffer each entry of
				 * the ring was last given, and ... [lock] */
	uint16_t *bid_slot;     /* ... the entry each buffer was last given to:
				 * a bundle's buffers follow its first in the
				 * ring (rs_buf_bundled); NULL for the datagram
				 * group [lock] */
	int bundle;             /* its receives may fill several buffers at once
				 * (IORING_RECVSEND_BUNDLE, 6.10+; tcp_recv.c) [lock] */
};
/* A received buffer queued through the overflow chain instead of the
 * socket's queue array (which could not grow): a buffer is in at most one
 * place, so a slot per buffer always suffices and queuing never fails.
 * Slot i belongs to whichever socket holds buffer i (tcp_int.h struct
 * rs_tcp ovf_head, ovf_tail) [lock]. */
struct rs_bufovf {
	uint32_t len, off;      /* the buffer's received bytes, and how many of
				 * them were read already (bytes) [lock] */
	uint32_t next;          /* next buffer id + 1 in the socket's chain; 0:
				 * the end [lock] */
};
enum { RS_BGID_TCP, RS_BGID_UDP }; /* buffer group ids */

/* ---- ring.c, ringpoll.c, kwatch.c: the thread's ring --------------------- */

/* user_data of the ring's SQEs: pointer | op (low 3 bits). */
enum { RS_UD_RECV = 1, RS_UD_SEND = 2, RS_UD_CANCEL = 3, RS_UD_DRAIN = 4 /* a drain job ended */,
       RS_UD_POLL = 5 /* the wait's poll of an epoll set (sequence << 3) */,
       RS_UD_WAKE = 6 /* the poll of the ring's own eventfd (blocking calls) */,
       RS_UD_ZC = 7 /* a zero-copy send: pointer to its struct rs_frag_hold */ };
#define RS_UD(p, op) ((uint64_t)(uintptr_t)(p) | (op))
#define RS_UD_PTR(ud) ((void *)(uintptr_t)((ud) & ~7ull))
#define RS_UD_OP(ud) ((int)((ud) & 7))

/* The ring's one-shot poll slots (struct rs_ring poll): an epoll set a
 * wait in the ring watches (ep.c), the kernel fds of poll/select sets
 * (kwatch.c). */
enum { RS_POLL_EP, RS_POLL_KW, RS_POLL_SLOTS };
/* One slot's poll (ringpoll.c) [lock]: armed by the owner, marked fired by
 * whichever thread reaps its completion. */
struct rs_ring_poll {
	const void *key;        /* what is polled (ep.c: its struct rs_ep;
				 * kwatch.c: the ring's struct rs_kwatch),
				 * compared by address [lock] */
	uint64_t ud;            /* its user_data while armed ((sequence << 3) |
				 * RS_UD_POLL); 0 once cancelled [lock] */
	unsigned tail;          /* the SQ tail after its SQE (an SQ index,
				 * wrapping): submitted once the kernel's head has
				 * passed it [lock] */
	uint8_t armed;          /* 1 from arming until its completion is reaped
				 * (one-shot) or it is cancelled [lock] */
	uint64_t fired_clock;   /* rs_ready_clock when it fired; 0: armed, or
				 * not known [lock] */
	/* rs_ring_poll_arm_lazy's bookkeeping (the owner's calls): */
	uint8_t used;           /* the poll armed last has answered a call [lock] */
	uint8_t verdict_due;    /* armed since wasted was updated [lock] */
	uint8_t wasted;         /* polls in a row that fired before answering
				 * (count, 0..6) [lock] */
	unsigned backoff;       /* lazy arms to skip before arming again (count:
				 * 2^wasted, at most 64) [lock] */
};

/* The kernel fds of this thread's poll/select sets, registered in a
 * private epoll set that the ring polls (kwatch.c) [lock].  The
 * registrations are by fd number and hold only while gen equals kwatch.c's
 * kw_gen, which any thread bumps when a registered number is closed or
 * replaced. */
#define RS_KW_MAX 32
struct rs_kwatch {
	int epfd;               /* the private set, when have (an engine fd:
				 * fdguard.c may move it, as for evfd) [lock] */
	uint8_t have;           /* 1: the set exists [lock] */
	uint8_t no_set;         /* the set could not be made (or protected):
				 * never again [lock] */
	unsigned gen;           /* kw_gen when the set was made [lock] */
	unsigned skips;         /* calls answered without the kernel since its
				 * last look (count; the kernel is asked at least
				 * every 64) [lock] */
	unsigned n;             /* entries of reg[] in use (<= RS_KW_MAX) [lock] */
	struct {
		int fd;          /* a registered number, at most once in
				  * reg[0..n) [lock] */
		uint32_t events; /* EPOLL* (= POLL*) bits registered for it;
				  * RS_KW_NEVER: epoll refuses the fd [lock] */
	} reg[RS_KW_MAX];
};

/* A thread's engine: its ring, buffers, send memory and work lists.  A
 * record is never freed once on the rings' list: when its thread exits it
 * is marked dead (its ring torn down) and the next thread that needs a
 * ring takes it over, so other threads may still look at a dead one.
 * Fields from ring onward are reset for each new owner thread; the first
 * ones are kept. */
struct rs_ring {
	/* kept when a dead thread's ring record is reused: */
	rs_lock lock;           /* the ring's lock: guards every [lock] field
				 * here and the state of the sockets it owns
				 * [set: made with the record, new in a fork
				 * child] */
#ifdef RS_DEBUG
	uintptr_t lock_owner;   /* pthread_self() of the holder, 0: none (debug
				 * builds: rs_ring_held) [atomic, relaxed] */
#endif
	struct rs_ring *all_next; /* the process-wide list of rings: fork,
				 * exit, the watchdog [list] */
	/* reset for each new owner thread: */
	struct io_uring ring;   /* the io_uring [lock]: any thread holding the
				 * lock may prepare SQEs and reap CQEs; only the
				 * owner enters the kernel (SINGLE_ISSUER), and it
				 * may wait there without the lock (rs_ring_sleep).
				 * ring.ring_fd is an engine fd (fdguard.c) */
	int tid;                /* the owner's thread id (gettid) [set] */
	int evfd;               /* eventfd the ring signals, and other threads
				 * write to wake the owner (rs_ring_kick) [set;
				 * fdguard.c rewrites it, atomically, when the
				 * program dup2()s onto its number] */
	int dead;               /* 1: the owner thread exited (the ring is torn
				 * down; the record may be taken over) [written
				 * with the lock held, the list lock too to take a
				 * record over; read atomically, acquire] */
	struct rs_bufring buf;  /* receive buffers: the stream group [lock] */
	struct rs_bufring ubuf; /* datagram receive buffers, once a UDP socket
				 * is armed here (ubuf.br NULL before) [lock] */
	int ubuf_failed;        /* their setup failed: -errno, never tried again
				 * while the ring lives [lock] */
	struct rs_frag_pool frag; /* send memory [lock] */
	struct rs_frag_hold *zc_holds; /* zero-copy sends not yet released (both
				 * completions), doubly linked [lock] */
	/* Lists of struct rs_esock, through the rs_ring_* functions [lock];
	 * each socket at most once on each, and its on_* flag says whether it
	 * is (debug builds assert the flag when it is taken off): */
	struct rs_esock *owned;  /* sockets whose owner is this ring (doubly
				  * linked through prev, next) [lock] */
	struct rs_esock *txq;    /* sockets with sends to submit (txq_next) [lock;
				  * the owner looks without it (RS_LOAD)] */
	struct rs_esock *txheld; /* while ring_prepare submits: the txq sockets
				  * a wait call keeps queued (on_txq 2) [lock] */
	uint32_t hold_seq;       /* poll/select calls that looked for sends to
				  * keep (wait.c; count) [lock] */
	uint8_t holding;         /* 1: this round keeps the sends of sockets
				  * whose hold_seq is the ring's [lock] */
	uint8_t txq_held_only;   /* 1: every socket on txq is kept this round
				  * (a new one clears it) [lock] */
	struct rs_esock *rearm;  /* sockets whose multishot receive must restart
				  * (rearm_next) [lock] */
	struct rs_esock *detach; /* sockets other threads detached, or whose
				  * receive's cancel found no SQE (detach_next)
				  * [as txq] */
	struct rs_esock *draining; /* sockets with a drain job (drain_next) [lock] */
	struct rs_esock *udp_tx; /* the one datagram socket with datagrams
				  * queued (udp_send.c: one at a time, so they
				  * reach the kernel in the program's order);
				  * NULL: none [lock] */
	struct rs_ring_poll poll[RS_POLL_SLOTS]; /* one-shot polls through the
				  * ring, RS_POLL_EP and RS_POLL_KW [lock] */
	uint64_t poll_seq;      /* polls armed so far (count): the sequence in
				 * their user_data [lock] */
	uint8_t wake_armed;     /* a poll of evfd is in the ring (blocking calls) [lock] */
	uint8_t sleeping;       /* the owner waits in io_uring_enter without the
				 * lock (rs_ring_sleep), where its receives'
				 * task work runs [owner: set under the lock,
				 * cleared without it (release); atomic, a hint
				 * for other threads] */
	uint8_t reg_ring;       /* ring fd registered (enter_ring_fd is an index) [set] */
	uint8_t tr_stale;       /* IORING_SQ_TASKRUN stayed set through three
				 * enters that found no work (seen on 6.18):
				 * ignored until it clears; waits outside the
				 * ring are then sliced to 10 ms [lock; hint] */
	uint8_t tr_empty;       /* enters in a row that found nothing so (count;
				 * the third sets tr_stale) [lock] */
	unsigned polls_reaped;  /* one-shot poll completions reaped (count;
				 * rs_ring_progress: they are no socket's
				 * work) [lock] */
	unsigned sq_sends;      /* send SQEs not yet submitted (one CQE each;
				 * count) [lock] */
	unsigned sq_recvs;      /* receive SQEs not yet submitted (count): a wait
				 * submits them before it looks at readiness
				 * (ep.c engine_round) [lock] */
	unsigned nrecv;         /* owned sockets with a multishot receive in
				 * flight: those with recv_armed set (count)
				 * [lock] */
	int drain_ended;        /* 1: an RS_UD_DRAIN completion came: look at the
				 * draining list after the reap [lock] */
	unsigned nr_tx_sqes;    /* sends prepared since the last submit (count;
				 * tcp_flush.c submits at send_batch) [lock] */
	uint64_t prepare_seq;   /* rounds of engine work (count; the watchdog
				 * compares) [lock] */
	uint64_t watch_seq;     /* prepare_seq at the watchdog's last look [lock] */
	unsigned send_batch;    /* sends per submit (RINGSOCK_SEND_BATCH) [set] */
	/* Nothing to batch (ep.c rs_ep_wait): blocking epoll waits in a row
	 * that each returned one event (of more asked for), up to
	 * RS_ALONE_WAKES (64); alone once it got there, until a blocking wait
	 * returns more than one.  Its TCP sockets then read and send through
	 * the kernel (tcp_recv.c, RS_DIRECT_ALONE) [owner; alone an atomic
	 * hint for other threads] */
	unsigned lone_wakes;    /* count, 0..64 [owner] */
	uint8_t alone;          /* 1: lone_wakes reached 64 [owner writes
				 * (RS_STORE); hint] */
	uint8_t round_sends;    /* sends the engine would have queued since the
				 * ring last waited, before any drain thread
				 * (rs_ring_may_queue), 0..2 [RS_LOAD, RS_STORE] */
	uint8_t two_rounds;     /* 1: a round had two of them, all the
				 * kernel's [RS_LOAD, RS_STORE] */
#define RS_SLOT_AFTER 16 /* a socket's sends through the ring before it gets a slot */
#define RS_SLOT_GONE ((struct rs_esock *)1)
	/* The ring's registered files (ringfile.c): slot i holds the socket
	 * armed on fd i, given one after its RS_SLOT_AFTER'th send, so its
	 * io_uring operations skip the file lookup and reference count: */
	int nslots;             /* the file table's size; 0: not registered yet,
				 * -1: refused (never asked again) [lock] */
	struct rs_esock **slot_of; /* nslots entries: the socket holding each
				 * slot, RS_SLOT_GONE while its clearing waits
				 * for the owner, NULL: empty [lock] */
	unsigned slots_gone;    /* entries RS_SLOT_GONE (count) [lock] */
	struct rs_kwatch kw;    /* kwatch.c's record (last: cold) [lock] */
};

/* ---- sock.c: the socket core ----------------------------------------------
 *
 * The engine's part of a socket, whatever its kind, is a struct rs_esock at
 * the head of the kind's own struct (rs_tcp in tcp_int.h, rs_udp in
 * udp_int.h).  The ring, the epoll and poll layers and the lifecycle code
 * know sockets only through it and through its kind's operations table;
 * adding a kind adds files and a table.  Its states are drawn at the top
 * of this file. */
enum rs_esock_mode {
	RS_ES_ARMED,     /* served by the owner's ring */
	RS_ES_DETACHING, /* leaving: the owner still has operations in flight */
	RS_ES_DETACHED,  /* what it held is served, then the kernel */
};

/* Where a receive puts the datagram's source address and what it says of
 * it [caller]. */
struct rs_dgram_from {
	void *name;          /* room for the source address (recvfrom's
			      * src_addr, msg_name) [caller] */
	socklen_t *namelen;  /* in: the room's bytes; out: the address's length
			      * (bytes, as the kernel's; may exceed the room)
			      * [caller] */
	int flags;           /* out: MSG_TRUNC when the datagram was cut to fit
			      * [caller] */
};
/* A send as the program made it (send, sendto, sendmsg, sendmmsg, write,
 * writev), for the kind to serve or to leave to the kernel [caller]. */
struct rs_send {
	const struct iovec *iov; /* the program's buffers [caller] */
	int n;               /* iov's count; -1: the kernel's call (more than
			      * IOV_MAX, or sendmmsg), after what is queued
			      * [caller] */
	int flags;           /* MSG_* [caller] */
	const void *name;    /* the destination given, or NULL [caller] */
	socklen_t namelen;   /* name's bytes [caller] */
	int control;         /* 1: the message carries ancillary data [caller] */
};
struct mmsghdr;
struct timespec;

struct rs_kind_ops;

/* An engine socket's core.  Guarded [ring/mu] unless a field says more;
 * "hint" fields are also read without the lock, by readiness code that
 * checks again under it.  Invariants: on r->owned exactly while owner is
 * r (debug builds assert it when it joins); on_txq, on_rearm, on_detach,
 * on_draining say whether it is on owner's list of that name;
 * ops_inflight >= recv_armed (for TCP, + send_inflight: tcpq.c
 * rs_tcpq_check asserts it in debug builds). */
struct rs_esock {
	const struct rs_kind_ops *ops; /* its kind [set] */
	struct rs_sock *sock;    /* the fd record, one reference held (dropped
				  * by rs_esock_free) [set] */
	struct rs_ring *owner;   /* the ring that serves it [ring/mu, hint;
				  * stored with release, loaded with acquire]:
				  * NULL once detached and the owner has nothing
				  * of it in flight */
	struct rs_esock *prev, *next; /* owner->owned [ring] */
	struct rs_esock *all_prev, *all_next; /* every engine socket (sock.c,
				  * for fork) [socks] */
	/* the owner ring's work lists (ringlist.c) [ring]: */
	struct rs_esock *txq_next;    /* sends to submit [ring] */
	struct rs_esock *rearm_next;  /* a receive to start again [ring] */
	struct rs_esock *detach_next; /* another thread detached it [ring] */
	struct rs_esock *drain_next;  /* a drain job will end [ring] */
	struct rs_drain_job *drain;   /* the rest of a send the kernel could not
				       * take (drain.c): no new bytes until it is
				       * done; NULL: none [ring/mu] */
	rs_lock mu;              /* guards the state once owner is NULL (lock
				  * order: under socks_lock and a ring's lock)
				  * [set: made at arm, new in a fork child] */
	int fd;                  /* the descriptor the engine's own calls use:
				  * the one it was armed on (dups detach), the
				  * caller's latest once detached (rs_esock_enter);
				  * -1 once that number is closed [ring/mu] */
	int mode;                /* enum rs_esock_mode [ring/mu, hint] */
	uint8_t on_txq, on_rearm, on_detach, on_draining; /* list membership
				  * (1: on owner's list; on_txq 2: on its
				  * txheld, inside ring_prepare) [ring] */
	uint32_t hold_seq;       /* the owner's hold_seq when a poll/select
				  * kept its queued sends (wait.c) [ring] */
	uint8_t passive;         /* detached and drained: the kernel's alone
				  * (set by rs_esock_maybe_passive)
				  * [mu; hint (acquire); never cleared] */
	uint8_t closing;         /* fd closed (set by rs_esock_close); freed
				  * when nothing is in flight
				  * [ring/mu; never cleared] */
	uint8_t recv_armed;      /* a multishot receive is in flight [ring, hint] */
	uint8_t recv_cancel;     /* the receive's cancel is submitted [ring] */
	uint32_t ops_inflight;   /* completions the owner's ring still expects
				  * for it (receive, sends, cancels; count)
				  * [ring]: a closed socket is freed at 0 */
	uint8_t kfull;           /* the kernel's send buffer was full at the
				  * last direct send: writability is the
				  * kernel's [hint: readiness code clears it
				  * when the kernel reports room] */
	uint8_t k_hup;           /* the kernel reported ERR or HUP for it (a
				  * reset the engine's receive may not see):
				  * sends go to the kernel [hint, set only] */
	uint8_t ring_sends;      /* sends through the owner's ring, up to
				  * RS_SLOT_AFTER (count) [ring] */
	int slot;                /* its slot in the owner's file table
				  * (ringfile.c: the number it was armed on),
				  * -1: none; set while armed, gone when it
				  * leaves the ring [ring] */
};

/* A kind's operations: one table per kind (tcp.c rs_tcp_ops, udp.c
 * rs_udp_ops), registered at start (engine.c).  Every entry [const]: the
 * tables are const objects; what each comment gives is the lock held when
 * it is called.  The ring calls the first
 * group with the owner's lock held; the lifecycle code (engine.c) and the
 * core (sock.c) the rest, with the lock each says. */
struct rs_kind_ops {
	const char *name;        /* "tcp", "udp" */
	int rx_group;            /* the buffer group its receives use (RS_BGID_*) */
	/* arm s (fd) on this thread's ring, locked; NULL: the kernel's */
	struct rs_esock *(*arm)(struct rs_sock *s, int fd);
	/* arm it when an epoll set registers it (not only at its first call)? */
	int (*arm_when_watched)(struct rs_sock *s);
	/* ring side (r locked): a completion (op RS_UD_*); the lists' work */
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
	/* DETACHING: nothing in flight the detach must wait for (locked) */
	int (*detach_done)(struct rs_esock *e);
	/* the socket leaves r (r locked): what of it the ring's memory holds
	 * (received buffers, a cached frag chunk) becomes its own or goes */
	void (*leave_ring)(struct rs_ring *r, struct rs_esock *e); /* NULL: none */
	void (*spawn_prepare)(struct rs_esock *e); /* another process may read it
						    * (its ring locked) */
	void (*fork_prepare)(struct rs_esock *e);  /* all ring locks held (and a
						    * detached socket's mutex) */
	/* in the fork child, after the core's reset: the kind's in-flight
	 * state and what belonged to the parent's ring */
	void (*fork_child)(struct rs_esock *e);
	int (*tx_pending)(struct rs_esock *e);     /* accepted sends not yet out
						    * (locked) */
	/* a poll/select that returns at once with e writable, asked for
	 * POLLOUT (r locked): may its queued sends wait for more (the program
	 * sent since its last wait, fewer than RINGSOCK_TX_MERGE bytes)?
	 * NULL: never */
	int (*tx_hold)(struct rs_esock *e);
	size_t (*flush_direct)(struct rs_esock *e); /* write them with system
						     * calls (locked): bytes */
	void (*sync_tx)(struct rs_esock *e);       /* before a call the kernel
						    * makes (locked) */
	/* close (sock.c rs_esock_close makes every change of state; these say
	 * what only the kind knows), e locked: */
	uint8_t close_waits_owner; /* 1: wait (up to 1 s) for another thread's
				    * ring sleeping with e's receive in flight,
				    * so the port is free when close returns */
	void (*close_flush)(struct rs_esock *e);   /* sends accepted before the
						    * close go; NULL: none */
	/* another descriptor stays open, this one (e->fd, DETACHED) goes: may
	 * e->fd be let go (no send still writes through it)? */
	int (*close_fd_free)(struct rs_esock *e);
	/* the last descriptor, on the owner's thread (r locked): sends go,
	 * the receive stops for good; wait until neither is in flight */
	void (*close_own)(struct rs_ring *r, struct rs_esock *e);
	/* the last descriptor (fd), before what is held is dropped: what
	 * unread input means to the peer (r: the owner's ring, another
	 * thread's or this one's, or NULL); NULL: nothing */
	void (*close_unread)(struct rs_ring *r, struct rs_esock *e, int fd);
	void (*drop_held)(struct rs_esock *e);     /* the input held for the
						    * program goes */
	/* DETACHED: nothing held for the program, nothing left to send (the
	 * core then sets passive, rs_esock_maybe_passive) */
	int (*holds_nothing)(struct rs_esock *e);
	void (*destroy)(struct rs_esock *e);       /* free the kind's memory
						    * (rs_esock_free) */
	/* readiness (ep.c, wait.c) */
	unsigned (*readiness)(struct rs_esock *e);  /* EPOLL* bits, locked */
	unsigned (*held_events)(struct rs_esock *e); /* hint: EPOLLIN for input,
						      * EPOLLERR for an error the
						      * engine holds (detached) */
	int (*kernel_input)(struct rs_esock *e);    /* hint: the kernel holds
						      * its input and reports it */
	/* on a socket that is not passive, locked (sockcall.c's rs_sock_* calls) */
	int (*fionread)(struct rs_esock *e, int *out); /* FIONREAD/SIOCINQ: 0 or -errno */
	int (*so_error)(struct rs_esock *e);        /* its pending error, taken (0: none) */
	size_t (*held)(struct rs_esock *e);         /* received bytes the engine holds */
	size_t (*tx_held)(struct rs_esock *e);      /* sent bytes not yet the kernel's */
	int (*shutdown)(struct rs_esock *e, int how); /* 0, -errno or RS_PASS */
	/* the SO_RCVLOWAT to give the kernel for the program's mark (the
	 * socket left the engine: what it holds counts); NULL: the mark */
	int (*kernel_lowat)(struct rs_esock *e, int lowat);
	/* SO_RCVLOWAT was just set (e locked, not passive): make the epoll
	 * edge the kernel's setsockopt makes, where the kernel cannot (NULL:
	 * none) */
	void (*lowat_set)(struct rs_esock *e);
	/* The program's calls, on a record not yet entered (sock.c's
	 * rs_sock_recv and the like): -errno, bytes, or RS_PASS (the kernel's
	 * call).  A NULL recvmmsg_call leaves the socket to the kernel for
	 * it; a NULL after_send or before_connect has nothing to do. */
	ssize_t (*recv_call)(struct rs_sock *s, int fd, const struct iovec *iov, int n, int flags,
			     struct rs_dgram_from *f); /* f: NULL, or the source's room */
	/* a send: the bytes taken (queued), -errno or RS_PASS */
	ssize_t (*send_call)(struct rs_sock *s, int fd, const struct rs_send *m);
	int (*recvmmsg_call)(struct rs_sock *s, int fd, struct mmsghdr *vec, unsigned vlen, int flags,
			     struct timespec *tmo); /* datagrams, -errno or RS_PASS */
	/* after the kernel's send (r, and errno as err) */
	void (*after_send)(struct rs_sock *s, int fd, ssize_t r, int err, const void *name, socklen_t namelen);
	void (*before_connect)(struct rs_sock *s, int fd); /* before the kernel's
							    * connect */
};

/* ---- block.c: blocking calls (every kind) ---------------------------------- */

/* A private copy of an iovec array that can be advanced past bytes done
 * (rs_iov_cur_skip) [caller].  Starts as { the caller's iov, its count,
 * NULL }; the first skip copies the array to the heap, which the caller
 * frees. */
struct iov_cur {
	struct iovec *v;        /* the first iovec not yet done (its base and
				 * length advanced past the bytes done) [caller] */
	int n;                  /* iovecs left from v (count) [caller] */
	struct iovec *heap;     /* the malloc'ed copy; NULL until the first skip
				 * [caller] */
};

#endif
