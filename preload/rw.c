/* rw.c - read, write, readv, writev. */
#include "preload.h"

RS_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_RW);
	ssize_t r = REAL(read)(fd, buf, n);
	rs_count_bytes(s, RS_C_BYTES_RECEIVED, r);
	return r;
}

RS_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_RW);
	ssize_t r = REAL(write)(fd, buf, n);
	rs_count_bytes(s, RS_C_BYTES_SENT, r);
	return r;
}

RS_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_RW);
	ssize_t r = REAL(readv)(fd, iov, cnt);
	rs_count_bytes(s, RS_C_BYTES_RECEIVED, r);
	return r;
}

RS_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_RW);
	ssize_t r = REAL(writev)(fd, iov, cnt);
	rs_count_bytes(s, RS_C_BYTES_SENT, r);
	return r;
}
