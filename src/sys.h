/* sys.h - raw system calls for the engine.
 *
 * The engine never goes through the interposed symbols and never writes
 * errno: these return the kernel's result, -errno on failure.
 */
#ifndef RS_SYS_H
#define RS_SYS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
static inline long rs_syscall6(long n, long a, long b, long c, long d, long e, long f)
{
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__)
static inline long rs_syscall6(long n, long a, long b, long c, long d, long e, long f)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;
	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	return x0;
}
#else
#include <dlfcn.h>
#include <errno.h>
/* libc's syscall(), never the library's own export of it (which routes
 * socket calls back into the trampolines): found past this object. */
static inline long rs_syscall6(long n, long a, long b, long c, long d, long e, long f)
{
	static long (*real_syscall)(long, ...);
	if (!real_syscall)
		real_syscall = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	int saved = errno;
	long r = real_syscall(n, a, b, c, d, e, f);
	if (r == -1) {
		r = -errno;
		errno = saved;
	}
	return r;
}
#endif

#define rs_syscall(n, ...) rs_syscall_n(n, __VA_ARGS__, 0, 0, 0, 0, 0, 0)
#define rs_syscall_n(n, a, b, c, d, e, f, ...) \
	rs_syscall6((n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))

static inline long rs_sys_write(int fd, const void *buf, size_t n)
{
	return rs_syscall(SYS_write, fd, buf, n);
}

static inline long rs_sys_close(int fd)
{
	return rs_syscall(SYS_close, fd);
}

static inline int rs_sys_getpid(void)
{
	return (int)rs_syscall(SYS_getpid, 0);
}

/* A stream socket's send or receive of iov (n buffers): sendto and
 * recvfrom for one buffer, which have no message header for the kernel to
 * copy in and check (the program's own write/read costs that much), else
 * sendmsg and recvmsg. */
static inline long rs_sys_sendv(int fd, const struct iovec *iov, int n, int flags)
{
	if (n == 1)
		return rs_syscall(SYS_sendto, fd, iov->iov_base, iov->iov_len, flags, 0, 0);
	struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)n };
	return rs_syscall(SYS_sendmsg, fd, &m, flags);
}

static inline long rs_sys_recvv(int fd, const struct iovec *iov, int n, int flags)
{
	if (n == 1)
		return rs_syscall(SYS_recvfrom, fd, iov->iov_base, iov->iov_len, flags, 0, 0);
	struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)n };
	return rs_syscall(SYS_recvmsg, fd, &m, flags);
}

/* A short nap (ns < 1 s) by the kernel directly: the library's own
 * nanosleep export would first flush the thread's queued sends
 * (preload/sleep.c), a side effect no back-off of the engine wants. */
static inline void rs_sys_nap(long ns)
{
	struct timespec ts = { 0, ns };
	rs_syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL);
}

/* CLOCK_MONOTONIC in nanoseconds (vDSO: no system call). */
static inline int64_t rs_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Timeouts are kept as nanoseconds, -1 for none, to the precision the
 * program gave (a select of 300 us must not sleep a millisecond).  From
 * a timespec (NULL: none): RS_TMO_INVALID where the kernel says EINVAL;
 * past 146 years, none (the kernel saturates it; so a deadline
 * CLOCK_MONOTONIC + timeout never overflows). */
#define RS_TMO_INVALID (-2)
#define RS_TMO_MAX_SEC (INT64_MAX / 1000000000 / 2)
static inline int64_t rs_timeout_ns(const struct timespec *t)
{
	if (!t)
		return -1;
	if (t->tv_sec < 0 || t->tv_nsec < 0 || t->tv_nsec >= 1000000000)
		return RS_TMO_INVALID;
	if (t->tv_sec >= RS_TMO_MAX_SEC)
		return -1;
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

/* A poll or epoll_wait timeout in milliseconds (negative: none). */
static inline int64_t rs_ms_ns(int ms)
{
	return ms < 0 ? -1 : (int64_t)ms * 1000000;
}

/* What a wait of timeout_ns may still sleep, for a round that would sleep
 * t_ns (> 0: the whole timeout; 0 or -1 pass unchanged).  The clock is
 * read when the call first sleeps (*deadline < 0: the deadline is set
 * then), not before: the first sleep asks the kernel for the program's
 * own timeout (whole milliseconds stay whole: epoll_pwait, not
 * epoll_pwait2), and a call that never sleeps reads no clock. */
static inline int64_t rs_wait_left(int64_t t_ns, int64_t timeout_ns, int64_t *deadline)
{
	if (t_ns <= 0)
		return t_ns;
	if (*deadline < 0) {
		*deadline = rs_now_ns() + timeout_ns;
		return t_ns;
	}
	int64_t left = *deadline - rs_now_ns();
	return left <= 0 ? 0 : left;
}

/* ns >= 0 as a timespec. */
static inline struct timespec rs_ns_timespec(int64_t ns)
{
	return (struct timespec){ (time_t)(ns / 1000000000), (long)(ns % 1000000000) };
}

#ifndef SYS_epoll_pwait2
#define SYS_epoll_pwait2 441 /* (5.11; the same number on every architecture) */
#endif

#endif
