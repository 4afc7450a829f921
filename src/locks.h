/* locks.h - the engine's locks and atomics helpers: the hint loads and
 * stores (RS_LOAD, RS_STORE), the engine's mutex calls (rs_mutex_*), which
 * count the engine locks a thread holds for sig.c, and the annotations
 * that let ThreadSanitizer see them.  Which lock guards what, and the
 * order they are taken in: types.h. */
#ifndef RS_LOCKS_H
#define RS_LOCKS_H

#include <pthread.h>
#include <stdint.h>

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
/* The engine's mutex: a futex word, 0 free, 1 held, 2 held with waiters
 * (the classic three-state lock).  Taken on every call the engine serves
 * (the socket's, the ring's, an epoll set's), where the C library's
 * pthread_mutex_t spent more instructions on its type and owner
 * bookkeeping than the work they guard (bench/callinstr.sh).  Not
 * recursive, no owner check, like PTHREAD_MUTEX_DEFAULT; after fork the
 * child sets its copies free again (rs_lock_init), as it did its
 * pthread mutexes. */
typedef struct {
	uint32_t v;
} rs_lock;
#define RS_LOCK_INIT { 0 }
static inline void rs_lock_init(rs_lock *m)
{
	__atomic_store_n(&m->v, 0, __ATOMIC_RELAXED);
}
void rs_lock_contended(rs_lock *m); /* (locks.c) wait for it, then hold it */
void rs_lock_wake(rs_lock *m);      /* (locks.c) wake one waiter */
static inline int rs_lock_try(rs_lock *m)
{
	uint32_t free_ = 0;
	return __atomic_compare_exchange_n(&m->v, &free_, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static inline void rs_mutex_lock(rs_lock *m)
{
	rs_nosig_enter();
	if (rs_unlikely(!rs_lock_try(m)))
		rs_lock_contended(m);
	rs_tsan_acquire(m);
}
static inline int rs_mutex_trylock(rs_lock *m)
{
	rs_nosig_enter();
	if (!rs_lock_try(m)) {
		rs_nosig_leave();
		return -1;
	}
	rs_tsan_acquire(m);
	return 0;
}
static inline void rs_mutex_unlock(rs_lock *m)
{
	rs_tsan_release(m);
	if (rs_unlikely(__atomic_exchange_n(&m->v, 0, __ATOMIC_RELEASE) == 2))
		rs_lock_wake(m);
	rs_nosig_leave();
}

#endif
