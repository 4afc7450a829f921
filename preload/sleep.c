/* sleep.c - calls that put the thread to sleep without a descriptor:
 * nanosleep, clock_nanosleep, usleep, sleep, pause, sigsuspend,
 * sigwaitinfo, sigtimedwait, sched_yield.  Sends this thread queued go
 * out first, as before any call the kernel answers (rs_enter_fd): a paced
 * sender (send, sleep, send) has each datagram leave when it sends it,
 * not when the watchdog looks (engine.c).  Nothing else changes. */
#include "preload.h"

#include <sched.h>
#include <time.h>

/* (a handler that sleeps while its thread is inside the library: that
 * thread holds the ring; rs_enter says so and nothing is flushed) */
static inline void before_sleep(void)
{
	if (rs_ring_tx_queued() && rs_enter())
		rs_ring_flush_tx();
}

RS_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
	before_sleep();
	return REAL(nanosleep)(req, rem);
}

RS_EXPORT int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req, struct timespec *rem)
{
	before_sleep();
	return REAL(clock_nanosleep)(clk, flags, req, rem);
}

RS_EXPORT int usleep(useconds_t us)
{
	before_sleep();
	return REAL(usleep)(us);
}

RS_EXPORT unsigned int sleep(unsigned int secs)
{
	before_sleep();
	return REAL(sleep)(secs);
}

RS_EXPORT int pause(void)
{
	before_sleep();
	return REAL(pause)();
}

RS_EXPORT int sigsuspend(const sigset_t *mask)
{
	before_sleep();
	return REAL(sigsuspend)(mask);
}

RS_EXPORT int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	before_sleep();
	return REAL(sigwaitinfo)(set, info);
}

RS_EXPORT int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *tmo)
{
	before_sleep();
	return REAL(sigtimedwait)(set, info, tmo);
}

RS_EXPORT int sched_yield(void)
{
	before_sleep();
	return REAL(sched_yield)();
}
