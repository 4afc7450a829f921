/* epoll.c - epoll_create, epoll_create1, epoll_ctl, epoll_wait,
 * epoll_pwait, epoll_pwait2.  The application's epoll fd stays a real
 * kernel epoll fd, so sharing, nesting and passing it keep working. */
#include "preload.h"

static void count_plain(void)
{
	if (rs_enter())
		rs_count_call(0, RINGSOCK_FAM_EPOLL);
}

static void forget_new(int fd)
{
	if (fd >= 0 && rs_ready()) {
		rs_fd_forget(fd);
		if (rs_engine_on)
			rs_ep_close(fd); /* a stale set under this number */
	}
}

RS_EXPORT int epoll_create(int size)
{
	count_plain();
	int fd = REAL(epoll_create)(size);
	forget_new(fd);
	return fd;
}

RS_EXPORT int epoll_create1(int flags)
{
	count_plain();
	int fd = REAL(epoll_create1)(flags);
	forget_new(fd);
	return fd;
}

RS_EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_EPOLL);
	if (rs_engine_on && rs_ready() && !rs_rt.passthrough) {
		if (rs_unlikely(ev && (ev->events & EPOLLPRI) && rs_engine_sock(s) &&
				(op == EPOLL_CTL_ADD || op == EPOLL_CTL_MOD))) {
			rs_sock_urgent(s, fd); /* urgent data asked about */
		}
		int r = rs_ep_ctl(epfd, op, fd, ev);
		if (r != (int)RS_PASS)
			return (int)rs_ret(r);
	}
	return REAL(epoll_ctl)(epfd, op, fd, ev);
}

/* The engine's wait when it has something to say about this set or this
 * thread's ring, else the plain call.  Returns RS_PASS for the latter. */
static int engine_wait(int epfd, struct epoll_event *ev, int max, int timeout, const struct timespec *tmo,
		       const sigset_t *ss)
{
	if (!rs_engine_on || !rs_ready() || rs_rt.passthrough)
		return (int)RS_PASS;
	return rs_ep_wait(epfd, ev, max, timeout, tmo, ss);
}

RS_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	count_plain();
	int r = engine_wait(epfd, ev, max, timeout, NULL, NULL);
	if (r != (int)RS_PASS)
		return (int)rs_ret(r);
	return REAL(epoll_wait)(epfd, ev, max, timeout);
}

RS_EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout, const sigset_t *ss)
{
	count_plain();
	int r = engine_wait(epfd, ev, max, timeout, NULL, ss);
	if (r != (int)RS_PASS)
		return (int)rs_ret(r);
	return REAL(epoll_pwait)(epfd, ev, max, timeout, ss);
}

#ifdef RS_HAVE_EPOLL_PWAIT2
RS_EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *tmo,
			   const sigset_t *ss)
{
	count_plain();
	int r = engine_wait(epfd, ev, max, -1, tmo, ss);
	if (r != (int)RS_PASS)
		return (int)rs_ret(r);
	return REAL(epoll_pwait2)(epfd, ev, max, tmo, ss);
}
#endif

/* syscall(SYS_epoll_pwait2) (preload/syscall.c; the C library may have no
 * wrapper: musl 1.2.3): the engine's wait, or RS_PASS for the kernel's. */
long rs_raw_epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *tmo, const sigset_t *ss)
{
	count_plain();
	int r = engine_wait(epfd, ev, max, -1, tmo, ss);
	return r == (int)RS_PASS ? RS_PASS : rs_ret(r);
}
