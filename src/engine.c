/* engine.c - the engine's lifecycle: start, the fork handlers, thread exit,
 * the flush of queued sends at exit, exec, spawn and a fatal signal, the
 * watchdog, refusing every socket, and close.
 *
 * It walks the rings (ring.c) and their sockets, and reaches each socket
 * through its kind's operations (sock.c): nothing below calls up into it
 * but through the hooks it installs at start (pthread_atfork, the thread
 * exit key, the drain thread's watchdog, the fatal-signal flush).
 */
#define _GNU_SOURCE 1 /* pthread_getattr_np */
#include <errno.h>
#ifdef __SANITIZE_ADDRESS__
#include <pthread.h>
#include <sanitizer/asan_interface.h>
#endif

#include "engine_int.h"
#include "sys.h"

static void ring_watchdog(void);
static void thread_exit(void *ring);
static void die_flush(void);
static void before_fork(void);
static void after_fork_parent(void);
static void after_fork_child(void);

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
	rs_esock_kind(SOCK_STREAM, &rs_tcp_ops);
	rs_esock_kind(SOCK_DGRAM, &rs_udp_ops);
	if (rs_ring_init(thread_exit, ring_watchdog) != 0)
		return;
	if (pthread_atfork(before_fork, after_fork_parent, after_fork_child) != 0)
		return;
	rs_sig_on_die(die_flush);
	rs_engine_on = 1;
}

/* ---- thread exit -------------------------------------------------------------- */

/* The thread is exiting: hand every socket over to pass-through and free
 * the ring.  Sends already accepted still go out (we wait for them). */
static int no_zc_holds(void *arg)
{
	return !((struct rs_ring *)arg)->zc_holds;
}

/* A thread cancelled in a blocking call of ours (asynchronous
 * cancellation: rs_blocking_syscall) was unwound past frames whose
 * redzones AddressSanitizer never cleared; thread_exit's calls reach that
 * depth of the stack again.  In AddressSanitizer builds the stack below
 * the caller is made clean first (__asan_handle_no_return cannot: it
 * writes there itself). */
#ifdef __SANITIZE_ADDRESS__
static __attribute__((noinline)) void asan_forget_unwound(void)
{
	pthread_attr_t a;
	void *lo;
	size_t size;
	if (pthread_getattr_np(pthread_self(), &a) != 0)
		return;
	int k = pthread_attr_getstack(&a, &lo, &size);
	pthread_attr_destroy(&a);
	char *top = __builtin_frame_address(0);
	if (k == 0 && top > (char *)lo && top <= (char *)lo + size)
		__asan_unpoison_memory_region(lo, (size_t)(top - (char *)lo));
}
#else
static void asan_forget_unwound(void)
{
}
#endif

static void thread_exit(void *arg)
{
	struct rs_ring *r = arg;
	if (!r || r != rs_ring_tls)
		return;
	asan_forget_unwound();
	rs_ring_lock(r);
	while (r->owned)
		rs_esock_ring_gone(r, r->owned);
	/* Zero-copy sends' chunks come back only with the kernel's
	 * notification (once the peer acknowledged the data): wait for them,
	 * as for sends a drain job still had. */
	if (rs_ring_wait(r, no_zc_holds, r, 10000) == -ETIME)
		rs_info("thread exit: zero-copy sends not acknowledged in 10 s: their memory is kept");
	rs_ring_teardown(r);
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
	if (rs_rings_trylock() != 0)
		return;
	struct rs_ring *all = rs_rings();
	for (struct rs_ring *r = all; r; r = r->all_next) {
		if (rs_fault(RS_FAULT_WATCHDOG) || rs_ring_trylock(r) != 0)
			continue; /* its owner is running engine code */
		if (!__atomic_load_n(&r->dead, __ATOMIC_ACQUIRE) && r->txq &&
		    r->prepare_seq == r->watch_seq) {
			rs_ring_reap(r);
			/* (a socket that cannot hand its rest over goes back on
			 * the list for its owner: walk the list as it was) */
			struct rs_esock *list = rs_ring_txq_take(r);
			while (list) {
				struct rs_esock *e = list;
				list = e->txq_next;
				e->ops->flush_queued(r, e);
			}
		}
		r->watch_seq = r->prepare_seq;
		rs_ring_unlock(r);
	}
	rs_rings_unlock();
	rs_publish_tick(); /* (a copy at most every RS_PUB_TICK_MS) */
}

/* ---- fork ------------------------------------------------------------------ */

/* pthread_atfork handlers, so they also run for forks made inside libc
 * (daemon(), for one) that do not go through our fork(). */
static void before_fork(void)
{
	__atomic_add_fetch(&rs_fork_gen, 1, __ATOMIC_RELAXED);
	struct rs_ring *mine = rs_ring_tls;
	for (struct rs_ring *r = rs_rings_lock(); r; r = r->all_next) {
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
		for (struct rs_esock *e = r->owned; e; e = e->next)
			e->ops->fork_prepare(e);
	}
	/* The locks stay held across fork(): the child must not inherit a
	 * ring in the middle of an operation. */
	rs_esock_fork_prepare_detached();
	rs_drain_before_fork();
	rs_ep_fork_prepare(); /* (the drain thread, which could take them, is stopped) */
	rs_stats_before_fork(); /* last: the drain thread may have been exiting */
}

static void after_fork_parent(void)
{
	rs_stats_after_fork();
	rs_ep_fork_release(0);
	rs_drain_after_fork(0);
	rs_esock_fork_release_detached(0);
	for (struct rs_ring *r = rs_rings(); r; r = r->all_next)
		rs_ring_unlock(r);
	rs_rings_unlock();
}

static void after_fork_child(void)
{
	/* also for forks made inside libc (daemon()), which do not go
	 * through our fork() */
	rs_vfork_pending = 0;
	rs_rt.pid = rs_sys_getpid();
	rs_lock_depth = 0; /* the locks fork held are new ones in the child */
	rs_foreign_after_fork_child();
	rs_stats_after_fork();
	rs_ep_fork_release(1);
	rs_drain_after_fork(1);
	rs_esock_fork_release_detached(1);
	for (struct rs_ring *r = rs_rings(); r; r = r->all_next)
		if (!r->dead)
			while (r->owned)
				rs_esock_fork_child(r->owned);
	rs_rings_after_fork_child();
}

/* ---- flushing at exit, exec, spawn and a fatal signal ----------------------- */

static int tx_idle(void *arg)
{
	struct rs_ring *r = arg;
	for (struct rs_esock *e = r->owned; e; e = e->next)
		if (e->ops->tx_pending(e))
			return 0;
	return !r->txq;
}

/* Every ring's queued sends reach the kernel (or the drain thread); with
 * spawn, no receive of any ring reads ahead from now on.  Then what the
 * drain thread has: a peer that stopped reading gets 10 s in all. */
static void flush_rings(const char *why, int spawn)
{
	struct rs_ring *mine = rs_ring_tls;
	for (struct rs_ring *r = rs_rings_lock(); r; r = r->all_next) {
		if (!rs_ring_lock_live(r))
			continue;
		if (spawn)
			for (struct rs_esock *e = r->owned; e; e = e->next)
				e->ops->spawn_prepare(e);
		if (r == mine) {
			if (rs_ring_wait(r, tx_idle, r, 10000) == -ETIME)
				rs_warn("%s: sends to a peer that is not reading were still queued after 10 s", why);
		} else {
			rs_ring_reap(r);
			for (struct rs_esock *e = r->owned; e; e = e->next)
				e->ops->flush_direct(e);
		}
		rs_ring_unlock(r);
	}
	rs_rings_unlock();
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

/* A signal's default action is about to end the process (sig.c): what is
 * queued reaches the kernel first, as at exit.  Nothing may allocate or
 * free memory from here (the signal may have come in the middle of
 * malloc): received data is dropped, sends wait in the ring instead of
 * going to a new drain job, and memory is left for the exit to reclaim. */
static void die_flush(void)
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

/* ---- close ------------------------------------------------------------------ */

void rs_engine_before_close(struct rs_sock *s, int fd)
{
	if (rs_ep_known(fd))
		rs_ep_close(fd);
	if (!s)
		return;
	struct rs_esock *e = atomic_load(&s->eng);
	if (e)
		rs_esock_close(s, fd);
	else if (s->regs && atomic_load(&s->nfds) <= 1)
		rs_ep_forget_sock(s);
}
