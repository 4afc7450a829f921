/* locks.h - the engine's locks and atomics helpers: the hint loads and
 * stores (RS_LOAD, RS_STORE), the engine's mutex calls (rs_mutex_*), which
 * count the engine locks a thread holds for sig.c, and the annotations
 * that let ThreadSanitizer see them.  Which lock guards what, and the
 * order they are taken in: types.h. */
#ifndef RS_LOCKS_H
#define RS_LOCKS_H

#include <pthread.h>

#include "internal.h" /* RS_TLS, rs_unlikely, rs_lock_depth */

/* Fields another thread may read without the socket's lock, as a hint it
 * re-checks (mode, rx_bytes, leftover: [hint] in types.h, tcp_int.h,
 * udp_int.h): written and read with these (relaxed). */
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
extern RS_TLS int rs_fatal_pending;  /* a fatal signal waits for them (sig.c) */
void rs_sig_fatal_deferred(void);    /* (sig.c) act on it now */
/* rs_lock_depth counts from before the lock is taken to after it is
 * released: a signal handler that runs meanwhile (even while the lock is
 * being acquired) sees it and leaves the engine alone (rs_ready).  The
 * same holds for engine work done without a lock that a handler's call
 * must not enter halfway (a thread's ring being made): rs_nosig_enter
 * and rs_nosig_leave around it. */
static inline void rs_nosig_enter(void)
{
	rs_lock_depth++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}
static inline void rs_nosig_leave(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (--rs_lock_depth == 0 && rs_unlikely(rs_fatal_pending))
		rs_sig_fatal_deferred();
}
static inline void rs_mutex_lock(pthread_mutex_t *m)
{
	rs_nosig_enter();
	pthread_mutex_lock(m);
	rs_tsan_acquire(m);
}
static inline int rs_mutex_trylock(pthread_mutex_t *m)
{
	rs_nosig_enter();
	if (pthread_mutex_trylock(m) != 0) {
		rs_nosig_leave();
		return -1;
	}
	rs_tsan_acquire(m);
	return 0;
}
static inline void rs_mutex_unlock(pthread_mutex_t *m)
{
	rs_tsan_release(m);
	pthread_mutex_unlock(m);
	rs_nosig_leave();
}

#endif
