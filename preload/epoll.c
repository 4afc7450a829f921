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
	if (fd >= 0 && rs_ready())
		rs_fd_forget(fd);
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
	rs_enter_fd(fd, RINGSOCK_FAM_EPOLL);
	return REAL(epoll_ctl)(epfd, op, fd, ev);
}

RS_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	count_plain();
	return REAL(epoll_wait)(epfd, ev, max, timeout);
}

RS_EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout, const sigset_t *ss)
{
	count_plain();
	return REAL(epoll_pwait)(epfd, ev, max, timeout, ss);
}

#ifdef RS_HAVE_EPOLL_PWAIT2
RS_EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *tmo,
			   const sigset_t *ss)
{
	count_plain();
	return REAL(epoll_pwait2)(epfd, ev, max, tmo, ss);
}
#endif
