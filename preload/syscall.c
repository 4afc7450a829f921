/* syscall.c - syscall(2): calls the library would otherwise not see.
 *
 * A program may make a socket call through syscall() instead of its libc
 * wrapper (libuv sets up its io_uring that way; others read, poll or
 * epoll_ctl so).  The engine must see every call that reads, writes,
 * waits on or closes a socket it serves, or the program could wait on
 * data the engine has already taken from the kernel: those numbers go to
 * the library's own entry points, which behave as the libc calls do
 * (-1 and errno, like syscall()); the waits as the kernel's own calls,
 * which write back the time left where the C library's hide it, and
 * epoll_pwait2 where the C library has no wrapper.  io_uring_setup means the program will
 * reach sockets through a ring the engine cannot see into: every socket
 * leaves the engine first (passthrough uring).  Everything else goes to
 * the kernel unchanged.
 */
#include "preload.h"

#include <sys/ioctl.h>
#include <sys/syscall.h>

#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif

/* The kernel's pselect6 passes the signal mask with its size. */
struct rs_sigset_arg {
	const sigset_t *ss;
	size_t len;
};

static long routed(long nr, long a, long b, long c, long d, long e, long f, int *done)
{
	long r = RS_PASS; /* (the waits below: theirs, or the kernel's) */
	*done = 1;
	switch (nr) {
	case SYS_read:
		return read((int)a, (void *)b, (size_t)c);
	case SYS_write:
		return write((int)a, (const void *)b, (size_t)c);
	case SYS_readv:
		return readv((int)a, (const struct iovec *)b, (int)c);
	case SYS_writev:
		return writev((int)a, (const struct iovec *)b, (int)c);
	case SYS_recvfrom:
		return recvfrom((int)a, (void *)b, (size_t)c, (int)d, (struct sockaddr *)e, (socklen_t *)f);
	case SYS_sendto:
		return sendto((int)a, (const void *)b, (size_t)c, (int)d, (const struct sockaddr *)e, (socklen_t)f);
	case SYS_recvmsg:
		return recvmsg((int)a, (struct msghdr *)b, (int)c);
	case SYS_sendmsg:
		return sendmsg((int)a, (const struct msghdr *)b, (int)c);
	case SYS_recvmmsg:
		return recvmmsg((int)a, (struct mmsghdr *)b, (unsigned)c, (int)d, (struct timespec *)e);
	case SYS_sendmmsg:
		return sendmmsg((int)a, (struct mmsghdr *)b, (unsigned)c, (int)d);
	case SYS_shutdown:
		return shutdown((int)a, (int)b);
	case SYS_close:
		return close((int)a);
	case SYS_dup:
		return dup((int)a);
#ifdef SYS_dup2
	case SYS_dup2:
		return dup2((int)a, (int)b);
#endif
	case SYS_dup3:
		return dup3((int)a, (int)b, (int)c);
#ifdef RS_HAVE_CLOSE_RANGE
	case SYS_close_range:
		return close_range((unsigned)a, (unsigned)b, (int)c);
#endif
	case SYS_fcntl:
		return fcntl((int)a, (int)b, (void *)c);
	case SYS_ioctl:
		return ioctl((int)a, (RS_IOCTL_REQ)b, (void *)c);
	case SYS_setsockopt:
		return setsockopt((int)a, (int)b, (int)c, (const void *)d, (socklen_t)e);
	case SYS_getsockopt:
		return getsockopt((int)a, (int)b, (int)c, (void *)d, (socklen_t *)e);
	case SYS_connect:
		return connect((int)a, (const struct sockaddr *)b, (socklen_t)c);
#ifdef SYS_accept
	case SYS_accept:
		return accept((int)a, (struct sockaddr *)b, (socklen_t *)c);
#endif
	case SYS_accept4:
		return accept4((int)a, (struct sockaddr *)b, (socklen_t *)c, (int)d);
	case SYS_listen:
		return listen((int)a, (int)b);
	case SYS_socket:
		return socket((int)a, (int)b, (int)c);
	case SYS_epoll_ctl:
		return epoll_ctl((int)a, (int)b, (int)c, (struct epoll_event *)d);
#ifdef SYS_epoll_wait
	case SYS_epoll_wait:
		return epoll_wait((int)a, (struct epoll_event *)b, (int)c, (int)d);
#endif
	case SYS_epoll_pwait:
		if (e && f != 8)
			break; /* the kernel's EINVAL */
		return epoll_pwait((int)a, (struct epoll_event *)b, (int)c, (int)d, (const sigset_t *)e);
#ifdef SYS_poll
	case SYS_poll:
		return poll((struct pollfd *)a, (nfds_t)b, (int)c);
#endif
	case SYS_ppoll:
		if (d && e != 8)
			break;
		r = rs_raw_ppoll((struct pollfd *)a, (nfds_t)b, (struct timespec *)c, (const sigset_t *)d);
		break;
#ifdef SYS_select
	case SYS_select:
		r = rs_raw_select((int)a, (fd_set *)b, (fd_set *)c, (fd_set *)d, (struct timeval *)e);
		break;
#endif
	case SYS_pselect6: {
		const struct rs_sigset_arg *sa = (const struct rs_sigset_arg *)f;
		if (sa && sa->ss && sa->len != 8)
			break;
		r = rs_raw_pselect6((int)a, (fd_set *)b, (fd_set *)c, (fd_set *)d, (struct timespec *)e,
				    sa ? sa->ss : NULL);
		break;
	}
	case SYS_epoll_pwait2:
		if (e && f != 8)
			break;
		r = rs_raw_epoll_pwait2((int)a, (struct epoll_event *)b, (int)c, (const struct timespec *)d,
					(const sigset_t *)e);
		break;
	case SYS_exit_group:
		_exit((int)a);
	case SYS_io_uring_setup:
		if (rs_enter())
			rs_esock_refuse_all(RINGSOCK_PT_URING);
		break;
	}
	*done = r != RS_PASS;
	return r;
}

RS_EXPORT long syscall(long nr, ...)
{
	RS_SYSCALL_ARGS(nr, a);
	if (rs_ready() && !rs_rt.passthrough) {
		int done;
		long r = routed(nr, a[0], a[1], a[2], a[3], a[4], a[5], &done);
		if (done)
			return r;
	}
	return REAL(syscall)(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
