/* preload.h - what every trampoline file needs.
 *
 * A trampoline does only: lazy init, "is this fd ours?", count, call the
 * engine or the next symbol, and turn -errno into errno.
 */
#ifndef RS_PRELOAD_H
#define RS_PRELOAD_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../src/api.h"
#include "../src/internal.h"
#include "../src/sys.h"

#define RS_EXPORT __attribute__((visibility("default")))

/* Parameter types that differ between glibc and musl.  glibc's GNU mode
 * declares sockaddr parameters as transparent unions; definitions must
 * use the same type. */
#if defined(__GLIBC__) && defined(__USE_GNU) && !defined(__cplusplus) && __GNUC__ >= 3
#define RS_SA __SOCKADDR_ARG
#define RS_CSA __CONST_SOCKADDR_ARG
#define RS_SA_PTR(a) ((a).__sockaddr__)
#else
#define RS_SA struct sockaddr *
#define RS_CSA const struct sockaddr *
#define RS_SA_PTR(a) (a)
#endif

#ifdef __GLIBC__
#define RS_IOCTL_REQ unsigned long
#define RS_MMSG_FLAGS int
#define RS_OFF64 off64_t
#define RS_HAVE_EXECVPE 1
#if __GLIBC_PREREQ(2, 34)
#define RS_HAVE_CLOSE_RANGE 1
#define RS_HAVE_CLOSEFROM 1
#endif
#if __GLIBC_PREREQ(2, 35)
#define RS_HAVE_EPOLL_PWAIT2 1
#endif
#else /* musl */
#define RS_IOCTL_REQ int
#define RS_MMSG_FLAGS unsigned int
#define RS_OFF64 off_t
#define RS_HAVE_EXECVPE 1
#endif

#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

extern char **environ;

/* The next symbols.  Before resolution each points at a raw-syscall
 * fallback, so a call is always possible. */
struct rs_real {
#define RS_CALL(ret, name, params, args, fb) ret(*name) params;
#include "calls.def"
#undef RS_CALL
};
extern struct rs_real rs_real;
#define REAL(name) (__atomic_load_n(&rs_real.name, __ATOMIC_RELAXED))

/* Resolve the next symbols and initialise the runtime (idempotent,
 * recursion-safe). */
void rs_preload_init(void);

/* Turn an engine/raw result into the libc convention. */
static inline long rs_ret(long r)
{
	if (rs_unlikely(RS_LOAD(rs_pub_due)))
		rs_publish_due();
	if (rs_unlikely(r < 0 && r > -4096)) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* Count a call of family fam, on a tracked socket (ours) or not.  Calls on
 * other descriptors are counted only when a report was asked for: the
 * counter store costs measurably on every file read and write.  Every
 * 256th socket call of a family on a thread offers `ringsock stat` a copy
 * (publish.c: made when no drain thread makes them, at most every
 * RS_PUB_TICK_MS). */
static inline void rs_count_call(int ours, int fam)
{
	if (rs_unlikely(ours)) {
		rs_stat_add(RS_C_CALLS_SOCKET + fam, 1);
		if (rs_unlikely((rs_tstats_tls.c[RS_C_CALLS_SOCKET + fam] & 255) == 0))
			rs_publish_call();
	} else if (rs_rt.count_other)
		rs_stat_add(RS_C_CALLS_OTHER + fam, 1);
}

/* Common head of every fd trampoline: initialise if needed, count the call
 * in family fam, and return the fd's socket record (NULL: not ours, or
 * pass-through mode). */
static inline struct rs_sock *rs_enter_fd(int fd, int fam)
{
	if (rs_unlikely(!rs_ready())) {
		rs_preload_init();
		if (!rs_ready())
			return NULL;
	}
	if (rs_unlikely(rs_rt.passthrough))
		return NULL;
	struct rs_sock *s = rs_fd_peek(fd);
	rs_count_call(s != NULL, fam);
	/* A call that goes to the kernel (another descriptor, or a socket the
	 * engine does not serve) may block: sends this thread queued must not
	 * wait for its next wait point. */
	if (rs_unlikely(rs_ring_tx_queued()) && (!s || !rs_sock_served_here(s)))
		rs_ring_flush_tx();
	return s;
}

/* Head of a trampoline without one fd (poll sets, fork, exec): returns 1
 * when tracking is on. */
static inline int rs_enter(void)
{
	if (rs_unlikely(!rs_ready())) {
		rs_preload_init();
		if (!rs_ready())
			return 0;
	}
	return !rs_rt.passthrough;
}

/* The six arguments of syscall(2), each read as a long (as the C
 * library's own syscall() passes them on). */
#define RS_SYSCALL_ARGS(nr, a)                     \
	long a[6];                                 \
	do {                                       \
		va_list ap_;                       \
		va_start(ap_, nr);                 \
		for (int i_ = 0; i_ < 6; i_++)     \
			a[i_] = va_arg(ap_, long); \
		va_end(ap_);                       \
	} while (0)

/* syscall(2)'s waits (preload/syscall.c): as the kernel's own calls,
 * which write back the time left (poll.c) and have no wrapper everywhere
 * (epoll.c); -1 and errno, or RS_PASS for the kernel's call. */
long rs_raw_ppoll(struct pollfd *fds, nfds_t nfds, struct timespec *tmo, const sigset_t *ss);
long rs_raw_pselect6(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timespec *tmo, const sigset_t *ss);
long rs_raw_select(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv);
long rs_raw_epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *tmo, const sigset_t *ss);

/* Count bytes moved on a tracked socket. */
static inline void rs_count_bytes(struct rs_sock *s, int ctr, long r)
{
	if (s && r > 0)
		rs_stat_add(ctr, (uint64_t)r);
}

/* After a call returned a new fd: track it if it is an engine socket,
 * else drop any stale record under that number. */
void rs_new_fd(int fd, int domain, int type, int protocol);
void rs_new_sock_state(int fd, int nonblock, int conn_state);

/* The record of fd when the engine may serve it (a tracked stream socket
 * and the engine on), else NULL. */
static inline struct rs_sock *rs_engine_sock(struct rs_sock *s)
{
	return s && rs_engine_on && !s->no_engine ? s : NULL;
}

/* The same for a data call with these flags (the recv and send families,
 * read, write): NULL also for a socket the engine would pass the call
 * on for (rs_sock_kernel_calls), unless it asks about urgent data (the
 * engine counts that). */
static inline struct rs_sock *rs_engine_data(struct rs_sock *s, int flags)
{
	return rs_engine_sock(s) && ((flags & MSG_OOB) || !rs_sock_kernel_calls(s)) ? s : NULL;
}

/* The engine's send on s (name: a datagram's destination, NULL for
 * none): queued by the engine, -errno, or RS_PASS (the kernel's). */
static inline ssize_t rs_engine_send(struct rs_sock *s, int fd, const struct iovec *iov, int n, int flags,
				     const void *name, socklen_t namelen)
{
	struct rs_send m = { iov, n, flags, name, namelen, 0 };
	return rs_sock_send(s, fd, &m);
}

/* After the kernel's send on an engine socket (errno as the call left
 * it): what it proves about a destination, a full buffer. */
static inline void rs_after_send(struct rs_sock *s, int fd, ssize_t r, const void *name, socklen_t namelen)
{
	if (s && rs_engine_on && rs_sock_armed(s)) {
		int e = errno;
		rs_sock_after_send(s, fd, r, e, name, namelen);
		errno = e;
	}
}

/* Finish an engine call: count bytes, set errno. */
static inline ssize_t rs_engine_ret(struct rs_sock *s, int ctr, ssize_t r)
{
	rs_count_bytes(s, ctr, r);
	return rs_ret(r);
}

#endif
