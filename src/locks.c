/* locks.c - the engine mutex's slow paths (locks.h): the waits of a
 * contended lock and the wake-up at its release, on the lock's futex
 * word. */
#include <linux/futex.h>

#include "locks.h"
#include "sys.h"

void rs_lock_contended(rs_lock *m)
{
	/* Mark it contended (2) while taking it: whoever releases it then
	 * wakes a waiter.  A wake-up, a signal or a changed word: look
	 * again. */
	while (__atomic_exchange_n(&m->v, 2, __ATOMIC_ACQUIRE) != 0)
		rs_syscall(SYS_futex, &m->v, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
}

void rs_lock_wake(rs_lock *m)
{
	rs_syscall(SYS_futex, &m->v, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
