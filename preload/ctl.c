/* ctl.c - fcntl, fcntl64, ioctl, getsockopt, setsockopt, getsockname,
 * getpeername. */
#include "preload.h"

static void *va_ptr(va_list ap)
{
	/* Like libc: every fcntl/ioctl argument travels as one word. */
	return va_arg(ap, void *);
}

static int fcntl_common(int fd, int cmd, void *arg, int use64)
{
	rs_enter_fd(fd, RINGSOCK_FAM_CTL);
	int r;
#ifdef __GLIBC__
	r = use64 ? REAL(fcntl64)(fd, cmd, arg) : REAL(fcntl)(fd, cmd, arg);
#else
	(void)use64;
	r = REAL(fcntl)(fd, cmd, arg);
#endif
	if (r >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && rs_ready())
		rs_fd_dup(fd, r);
	return r;
}

RS_EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_ptr(ap);
	va_end(ap);
	return fcntl_common(fd, cmd, arg, 0);
}

#ifdef __GLIBC__
RS_EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_ptr(ap);
	va_end(ap);
	return fcntl_common(fd, cmd, arg, 1);
}
#endif

RS_EXPORT int ioctl(int fd, RS_IOCTL_REQ req, ...)
{
	va_list ap;
	va_start(ap, req);
	void *arg = va_ptr(ap);
	va_end(ap);
	rs_enter_fd(fd, RINGSOCK_FAM_CTL);
	return REAL(ioctl)(fd, req, arg);
}

RS_EXPORT int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	rs_enter_fd(fd, RINGSOCK_FAM_CTL);
	return REAL(getsockopt)(fd, level, name, val, len);
}

RS_EXPORT int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	rs_enter_fd(fd, RINGSOCK_FAM_CTL);
	return REAL(setsockopt)(fd, level, name, val, len);
}

RS_EXPORT int getsockname(int fd, RS_SA addr, socklen_t *len)
{
	rs_enter_fd(fd, RINGSOCK_FAM_CTL);
	return REAL(getsockname)(fd, addr, len);
}

RS_EXPORT int getpeername(int fd, RS_SA addr, socklen_t *len)
{
	rs_enter_fd(fd, RINGSOCK_FAM_CTL);
	return REAL(getpeername)(fd, addr, len);
}
