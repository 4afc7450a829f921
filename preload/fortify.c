/* fortify.c - glibc's _FORTIFY_SOURCE entry points for the calls we
 * interpose.  A fortified program calls __recv_chk instead of recv; these
 * check the buffer size as glibc does and then take our normal path
 * (the library is linked with -Bsymbolic-functions, so the calls below
 * reach our own trampolines). */
#include "preload.h"

#ifdef __GLIBC__
extern void __chk_fail(void) __attribute__((noreturn));

RS_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	if (n > buflen)
		__chk_fail();
	return read(fd, buf, n);
}

RS_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
	if (n > buflen)
		__chk_fail();
	return recv(fd, buf, n, flags);
}

RS_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
				 RS_SA addr, socklen_t *len)
{
	if (n > buflen)
		__chk_fail();
	return recvfrom(fd, buf, n, flags, addr, len);
}

RS_EXPORT int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen)
{
	if (fdslen / sizeof(*fds) < nfds)
		__chk_fail();
	return poll(fds, nfds, timeout);
}

RS_EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t nfds, const struct timespec *tmo,
			  const sigset_t *ss, size_t fdslen)
{
	if (fdslen / sizeof(*fds) < nfds)
		__chk_fail();
	return ppoll(fds, nfds, tmo, ss);
}
#endif
